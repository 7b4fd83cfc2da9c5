//! Who is calling: password checks, session tokens, cookies, the login limit,
//! and OIDC login against an identity provider (`oidc`).
//!
//! [`authenticate`] turns a presented token into a [`Session`], refusing tokens
//! whose `tv` no longer matches the user's stored token version (revocation).

pub mod cookies;
pub mod oidc;
pub mod password;
pub mod rate_limit;
pub mod sealed;
pub mod session;
pub mod users;

use crate::db::{Db, DbError};
use chrono::{DateTime, TimeZone, Utc};
use session::{SessionError, SessionKeys};

/// A caller with a valid session.
#[derive(Debug, Clone)]
pub struct Session {
    pub user_id: i64,
    pub username: String,
    pub token_version: i64,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug)]
pub enum AuthFailure {
    NoToken,
    Invalid(SessionError),
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
    let claims = keys.verify(token, now).map_err(AuthFailure::Invalid)?;
    let user = users::find_by_id(db, claims.sub)?.ok_or(AuthFailure::UnknownUser)?;
    if Some(user.token_version) != claims.tv {
        return Err(AuthFailure::Revoked);
    }
    Ok(Session {
        user_id: user.id,
        username: user.username,
        token_version: user.token_version,
        expires_at: Utc.timestamp_opt(claims.exp, 0).single().unwrap_or(now),
    })
}
