//! Session tokens: signed JWTs carrying the user's token version (`tv`).
//!
//! Expiry is checked against the server's [`Clock`](crate::clock::Clock), not the
//! JWT library's own clock, so tests can drive it.

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    /// User id.
    pub sub: i64,
    pub username: String,
    /// Token version of the user when the token was issued; absent on tokens issued
    /// before the claim existed, which are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tv: Option<i64>,
    pub iat: i64,
    pub exp: i64,
    /// The session began with a single sign-on login (the audit log's `via`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oidc: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    Malformed,
    Expired,
    /// Issued longer ago than the configured lifetime (e.g. after it was shortened).
    TooOld,
    NoTokenVersion,
}

pub struct SessionKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    pub lifetime: Duration,
}

impl SessionKeys {
    pub fn new(secret: &str, lifetime: Duration) -> Self {
        SessionKeys {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            lifetime,
        }
    }

    /// Issues a token for a user; returns it with its expiry.
    pub fn issue(
        &self,
        user_id: i64,
        username: &str,
        tv: i64,
        oidc: bool,
        now: DateTime<Utc>,
    ) -> (String, DateTime<Utc>) {
        let exp = now + chrono::Duration::seconds(self.lifetime.as_secs() as i64);
        let claims = Claims {
            sub: user_id,
            username: username.to_owned(),
            tv: Some(tv),
            iat: now.timestamp(),
            exp: exp.timestamp(),
            oidc,
        };
        // HS256 over our own claims cannot fail to encode.
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 encoding of plain claims");
        (token, exp)
    }

    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Claims, SessionError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map_err(|_| SessionError::Malformed)?;
        let claims = data.claims;
        let now = now.timestamp();
        if claims.exp <= now {
            return Err(SessionError::Expired);
        }
        if claims.iat + self.lifetime.as_secs() as i64 <= now {
            return Err(SessionError::TooOld);
        }
        if claims.tv.is_none() {
            return Err(SessionError::NoTokenVersion);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 21, 0, 0, 0).unwrap() + chrono::Duration::seconds(secs)
    }

    #[test]
    fn issued_token_verifies_until_it_expires() {
        let keys = SessionKeys::new("secret", Duration::from_secs(3600));
        let (token, exp) = keys.issue(7, "alice", 3, false, at(0));
        assert_eq!(exp, at(3600));
        let claims = keys.verify(&token, at(3599)).unwrap();
        assert_eq!((claims.sub, claims.tv), (7, Some(3)));
        assert_eq!(keys.verify(&token, at(3600)), Err(SessionError::Expired));
    }

    #[test]
    fn a_token_older_than_a_shortened_lifetime_is_refused() {
        let long = SessionKeys::new("secret", Duration::from_secs(86_400));
        let (token, _) = long.issue(1, "a", 1, false, at(0));
        let short = SessionKeys::new("secret", Duration::from_secs(600));
        assert_eq!(short.verify(&token, at(601)), Err(SessionError::TooOld));
        assert!(short.verify(&token, at(599)).is_ok());
    }

    #[test]
    fn other_secret_and_missing_tv_are_refused() {
        let keys = SessionKeys::new("secret", Duration::from_secs(3600));
        let (token, _) =
            SessionKeys::new("other", Duration::from_secs(3600)).issue(1, "a", 1, false, at(0));
        assert_eq!(keys.verify(&token, at(1)), Err(SessionError::Malformed));
        let legacy = Claims {
            sub: 1,
            username: "a".into(),
            tv: None,
            iat: at(0).timestamp(),
            exp: at(100).timestamp(),
            oidc: false,
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &legacy,
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap();
        assert_eq!(
            keys.verify(&token, at(1)),
            Err(SessionError::NoTokenVersion)
        );
        assert_eq!(keys.verify("garbage", at(1)), Err(SessionError::Malformed));
    }
}
