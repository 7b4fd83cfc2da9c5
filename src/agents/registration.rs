//! Registration tokens and `POST /api/v1/register`: how an inbound agent gets its
//! identity.
//!
//! Only the SHA-256 of a registration token and of an agent's auth token is stored;
//! the raw values appear once, in the answer that issued them.

use crate::clock::iso;
use crate::config::values::canonical_ip;
use crate::db::{Db, DbError};
use crate::secrets::{random_hex, sha256_hex};
use chrono::{DateTime, Duration, Utc};
use ipnet::Ipv4Net;
use rusqlite::{params, OptionalExtension, Row};
use serde_json::{json, Value};
use std::net::IpAddr;

/// A registration token is valid this long.
pub const TOKEN_LIFETIME_MINUTES: i64 = 30;
pub const DISPLAY_NAME_MAX: usize = 100;

#[derive(Debug)]
pub enum RegistrationError {
    /// Unknown, used or expired token.
    Forbidden,
    NotFound,
    Db(DbError),
}

impl From<DbError> for RegistrationError {
    fn from(e: DbError) -> Self {
        RegistrationError::Db(e)
    }
}

impl From<rusqlite::Error> for RegistrationError {
    fn from(e: rusqlite::Error) -> Self {
        RegistrationError::Db(e.into())
    }
}

/// What `POST /api/v1/tokens` answers.
pub struct IssuedToken {
    pub token: String,
    pub expires_at: String,
    pub display_name: Option<String>,
    pub inbound_allowed_ip: Option<String>,
}

pub fn create_token(
    db: &Db,
    display_name: Option<String>,
    allowed: Option<Ipv4Net>,
    now: DateTime<Utc>,
) -> Result<IssuedToken, DbError> {
    let token = random_hex(16);
    let hash = sha256_hex(&token);
    let expires_at = iso(now + Duration::minutes(TOKEN_LIFETIME_MINUTES));
    let allowed = allowed.map(|n| ipv4_text(&n));
    let (created, exp, name, ip) = (
        iso(now),
        expires_at.clone(),
        display_name.clone(),
        allowed.clone(),
    );
    db.write(move |c| {
        c.execute(
            "INSERT INTO registration_tokens (token_hash, created_at, expires_at, display_name, allowed_ip)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![hash, created, exp, name, ip],
        )?;
        Ok::<_, DbError>(())
    })?;
    Ok(IssuedToken {
        token,
        expires_at,
        display_name,
        inbound_allowed_ip: allowed,
    })
}

/// An address written as the API shows it: a lone address without `/32`.
pub fn ipv4_text(net: &Ipv4Net) -> String {
    if net.prefix_len() == 32 {
        net.addr().to_string()
    } else {
        net.to_string()
    }
}

fn token_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    let hash: String = r.get("token_hash")?;
    let created: String = r.get("created_at")?;
    let expires: String = r.get("expires_at")?;
    let used: Option<String> = r.get("used_at")?;
    let name: Option<String> = r.get("display_name")?;
    let ip: Option<String> = r.get("allowed_ip")?;
    Ok(json!({
        "tokenHash": hash, "createdAt": created, "expiresAt": expires, "usedAt": used,
        "displayName": name, "inboundAllowedIp": ip,
        "token_hash": hash, "created_at": created, "expires_at": expires, "used_at": used,
        "display_name": name, "allowed_ip": ip,
    }))
}

/// Every token, used and expired included, newest first.
pub fn list_tokens(db: &Db) -> Result<Vec<Value>, DbError> {
    db.read(|c| {
        let mut stmt = c.prepare("SELECT * FROM registration_tokens ORDER BY created_at DESC")?;
        let rows = stmt
            .query_map([], token_json)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    })
}

pub fn delete_token(db: &Db, token_hash: String) -> Result<(), RegistrationError> {
    db.write(move |c| {
        match c.execute(
            "DELETE FROM registration_tokens WHERE token_hash = ?1",
            [token_hash],
        )? {
            0 => Err(RegistrationError::NotFound),
            _ => Ok(()),
        }
    })
}

/// What registration needs to know of a token.
struct TokenState {
    expires_at: String,
    used_at: Option<String>,
    display_name: Option<String>,
    allowed_ip: Option<String>,
}

/// The identity a registration issued.
pub struct Registered {
    pub client_id: String,
    pub auth_token: String,
    pub hostname: String,
    pub client_name: String,
}

/// Uses a valid token to create a new inbound client. Every call creates a new
/// client; the name and allowed address come from the token, else from the
/// reported hostname and the address the call came from.
pub fn register(
    db: &Db,
    token: &str,
    hostname: Option<String>,
    source: IpAddr,
    now: DateTime<Utc>,
) -> Result<Registered, RegistrationError> {
    let hash = sha256_hex(token);
    let hostname = hostname
        .filter(|h| !h.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let auth_token = random_hex(64);
    let auth_hash = sha256_hex(&auth_token);
    let client_id = uuid::Uuid::new_v4().to_string();
    let source = canonical_ip(source).to_string();
    let (now_iso, now_sql) = (iso(now), crate::clock::sql_timestamp(now));
    let id = client_id.clone();
    let host = hostname.clone();
    let client_name = db.write(move |c| {
        let row = c
            .query_row(
                "SELECT expires_at, used_at, display_name, allowed_ip FROM registration_tokens WHERE token_hash = ?1",
                [&hash],
                |r| Ok(TokenState { expires_at: r.get(0)?, used_at: r.get(1)?, display_name: r.get(2)?, allowed_ip: r.get(3)? }),
            )
            .optional()?;
        let Some(TokenState { expires_at, used_at, display_name, allowed_ip }) = row else {
            return Err(RegistrationError::Forbidden);
        };
        if used_at.is_some() || expires_at <= now_iso {
            return Err(RegistrationError::Forbidden);
        }
        c.execute("UPDATE registration_tokens SET used_at = ?2 WHERE token_hash = ?1", params![hash, now_iso])?;
        let name = display_name.unwrap_or_else(|| host.clone());
        c.execute(
            "INSERT INTO clients (id, hostname, display_name, connection_mode, auth_token_hash, inbound_allowed_ip, created_at, updated_at)
             VALUES (?1, ?2, ?3, 'inbound', ?4, ?5, ?6, ?6)",
            params![id, host, name, auth_hash, allowed_ip.unwrap_or(source), now_sql],
        )?;
        Ok(name)
    })?;
    Ok(Registered {
        client_id,
        auth_token,
        hostname,
        client_name,
    })
}
