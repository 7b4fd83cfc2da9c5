//! Who is calling: password checks, session tokens, cookies, the login limit,
//! and OIDC login against an identity provider (`oidc`).
//!
//! [`authenticate`] turns a presented credential into a [`Session`]: a session
//! JWT (cookie or bearer), refused when its `tv` no longer matches the user's
//! stored token version (revocation), or an API token ([`api_tokens`]).

pub mod api_tokens;
pub mod cookies;
pub mod oidc;
pub mod password;
pub mod rate_limit;
pub mod roles;
pub mod sealed;
pub mod session;
pub mod users;

use crate::audit::Via;
use crate::db::{Db, DbError};
use chrono::{DateTime, TimeZone, Utc};
pub use roles::Role;
use session::{SessionError, SessionKeys};

/// An authenticated caller: a logged-in user, or a script with an API token.
#[derive(Debug, Clone)]
pub struct Session {
    /// The user; for an API token, the user who made it (whose seen-marks it shares).
    pub user_id: i64,
    pub username: String,
    /// What may be done: the user's role, or for a token the lesser of its own
    /// role and its creator's.
    pub role: Role,
    pub via: Via,
    /// The name the audit log gives the caller: the user name, or the token's name.
    pub actor: String,
    /// `None` for an API token without expiry.
    pub expires_at: Option<DateTime<Utc>>,
    /// The API token's id when the caller presented one.
    pub api_token: Option<i64>,
}

impl Session {
    /// The caller as the audit log records it.
    pub fn audit_actor(&self, source_ip: std::net::IpAddr) -> crate::audit::Actor {
        crate::audit::Actor {
            name: self.actor.clone(),
            via: self.via,
            source_ip: Some(source_ip.to_string()),
        }
    }
}

#[derive(Debug)]
pub enum AuthFailure {
    NoToken,
    Invalid(SessionError),
    /// An API token that is unknown (or revoked), expired, or orphaned.
    Token(api_tokens::Refused),
    /// The user was deleted.
    UnknownUser,
    /// The user's token version moved on (password or methods changed).
    Revoked,
    Db(DbError),
}

impl From<DbError> for AuthFailure {
    fn from(e: DbError) -> Self {
        AuthFailure::Db(e)
    }
}

pub fn authenticate(
    db: &Db,
    keys: &SessionKeys,
    token: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Session, AuthFailure> {
    let token = token
        .filter(|t| !t.is_empty())
        .ok_or(AuthFailure::NoToken)?;
    if api_tokens::looks_like_token(token) {
        let caller = api_tokens::authenticate(db, token, now)?.map_err(AuthFailure::Token)?;
        return Ok(Session {
            user_id: caller.creator_id,
            username: caller.creator_name,
            role: caller.role,
            via: Via::Token,
            actor: caller.name,
            expires_at: caller.expires_at,
            api_token: Some(caller.token_id),
        });
    }
    let claims = keys.verify(token, now).map_err(AuthFailure::Invalid)?;
    let user = users::find_by_id(db, claims.sub)?.ok_or(AuthFailure::UnknownUser)?;
    if Some(user.token_version) != claims.tv {
        return Err(AuthFailure::Revoked);
    }
    Ok(Session {
        user_id: user.id,
        actor: user.username.clone(),
        username: user.username,
        role: user.role,
        via: if claims.oidc { Via::Oidc } else { Via::Session },
        expires_at: Some(Utc.timestamp_opt(claims.exp, 0).single().unwrap_or(now)),
        api_token: None,
    })
}
