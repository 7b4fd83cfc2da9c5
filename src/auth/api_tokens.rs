//! API tokens: long-lived credentials for scripts (Grafana, Terraform, cron),
//! each with a name, a role and an optional expiry.
//!
//! A token is `vmt_` and 40 hex digits (160 random bits), shown once when made;
//! only its SHA-256 is stored. It acts with the lesser of its own role and its
//! creator's current role, so demoting a user demotes their tokens, and
//! deleting the user deletes them.

use crate::auth::roles::Role;
use crate::clock::iso;
use crate::db::{Db, DbError};
use crate::secrets::{random_hex, sha256_hex};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

/// What every API token starts with: tells it from a session JWT in a Bearer
/// header, and lets secret scanners find a leaked one.
pub const PREFIX: &str = "vmt_";

/// How stale `last_used_at` may get before a use writes it again: a busy
/// scraper must not cost a database write per request.
const LAST_USED_GRANULARITY_SECS: i64 = 60;

/// A token as the API lists it (never the token itself).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApiToken {
    pub id: i64,
    pub name: String,
    pub role: Role,
    pub created_by: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub expires_at: Option<String>,
}

/// A token just made: the only time its value is known.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    #[serde(flatten)]
    pub listed: ApiToken,
    pub token: String,
}

/// Who a presented token acts for.
#[derive(Debug, Clone)]
pub struct TokenCaller {
    pub token_id: i64,
    pub name: String,
    pub creator_id: i64,
    pub creator_name: String,
    /// The lesser of the token's role and its creator's role now.
    pub role: Role,
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug)]
pub enum TokenError {
    NameTaken,
    NotFound,
    /// The requested role is above the creator's.
    AboveCreator {
        requested: Role,
        creator: Role,
    },
    Db(DbError),
}

impl From<DbError> for TokenError {
    fn from(e: DbError) -> Self {
        TokenError::Db(e)
    }
}

impl From<rusqlite::Error> for TokenError {
    fn from(e: rusqlite::Error) -> Self {
        TokenError::Db(DbError::Sqlite(e))
    }
}

/// Why a presented token is refused (all answer 401; the log says which).
#[derive(Debug, PartialEq)]
pub enum Refused {
    Unknown,
    Expired,
    /// Its creator no longer exists.
    Orphaned,
}

fn listed_from_row(r: &Row<'_>) -> rusqlite::Result<ApiToken> {
    Ok(ApiToken {
        id: r.get("id")?,
        name: r.get("name")?,
        role: Role::from_stored(&r.get::<_, String>("role")?),
        created_by: r.get("created_by_name")?,
        created_at: r.get("created_at")?,
        last_used_at: r.get("last_used_at")?,
        expires_at: r.get("expires_at")?,
    })
}

/// The token's role may not exceed its creator's: checked before anything is made.
pub fn check_ceiling(requested: Role, creator: Role) -> Result<(), TokenError> {
    if requested > creator {
        return Err(TokenError::AboveCreator { requested, creator });
    }
    Ok(())
}

pub struct NewToken {
    pub name: String,
    pub role: Role,
    pub expires_at: Option<DateTime<Utc>>,
    pub creator_id: i64,
    pub creator_name: String,
    pub creator_role: Role,
}

pub fn create(db: &Db, new: NewToken, now: DateTime<Utc>) -> Result<Created, TokenError> {
    check_ceiling(new.role, new.creator_role)?;
    let token = format!("{PREFIX}{}", random_hex(20));
    let hash = sha256_hex(&token);
    let created_at = iso(now);
    let expires_at = new.expires_at.map(iso);
    let listed = db.write(move |c| {
        let taken: bool = c.query_row(
            "SELECT EXISTS(SELECT 1 FROM api_tokens WHERE name = ?1)",
            [&new.name],
            |r| r.get(0),
        )?;
        if taken {
            return Err(TokenError::NameTaken);
        }
        c.execute(
            "INSERT INTO api_tokens (name, role, token_hash, created_by, created_by_name, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![new.name, new.role.as_str(), hash, new.creator_id, new.creator_name, created_at, expires_at],
        )?;
        Ok(ApiToken {
            id: c.last_insert_rowid(),
            name: new.name,
            role: new.role,
            created_by: new.creator_name,
            created_at,
            last_used_at: None,
            expires_at,
        })
    })?;
    Ok(Created { listed, token })
}

pub fn list(db: &Db) -> Result<Vec<ApiToken>, DbError> {
    db.read(|c| {
        let mut stmt = c.prepare("SELECT * FROM api_tokens ORDER BY id")?;
        let rows = stmt
            .query_map([], listed_from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    })
}

/// Revokes a token: it is gone, so its next use is 401. Returns its name.
pub fn delete(db: &Db, id: i64) -> Result<String, TokenError> {
    db.write(move |c| {
        let name: Option<String> = c
            .query_row("SELECT name FROM api_tokens WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        let name = name.ok_or(TokenError::NotFound)?;
        c.execute("DELETE FROM api_tokens WHERE id = ?1", [id])?;
        Ok(name)
    })
}

/// Checks a presented token at `now` and notes its use.
pub fn authenticate(
    db: &Db,
    presented: &str,
    now: DateTime<Utc>,
) -> Result<Result<TokenCaller, Refused>, DbError> {
    let hash = sha256_hex(presented);
    type Found = (i64, String, String, i64, Option<String>, Option<String>);
    let found: Option<(Found, Option<(String, String)>)> = db.read(|c| {
        let token = c
            .query_row(
                "SELECT id, name, role, created_by, last_used_at, expires_at
                 FROM api_tokens WHERE token_hash = ?1",
                [&hash],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()?;
        let Some(token) = token else {
            return Ok::<_, DbError>(None);
        };
        let creator = c
            .query_row(
                "SELECT username, role FROM users WHERE id = ?1",
                [token.3],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(Some((token, creator)))
    })?;
    let Some(((id, name, role, creator_id, last_used, expires), creator)) = found else {
        return Ok(Err(Refused::Unknown));
    };
    let expires_at = expires.as_deref().and_then(parse_time);
    // An expiry we cannot read is treated as passed, never as "no expiry".
    if expires.is_some() && expires_at.is_none_or(|e| e <= now) {
        return Ok(Err(Refused::Expired));
    }
    let Some((creator_name, creator_role)) = creator else {
        return Ok(Err(Refused::Orphaned));
    };
    let stale = last_used
        .as_deref()
        .and_then(parse_time)
        .is_none_or(|t| (now - t).num_seconds() >= LAST_USED_GRANULARITY_SECS);
    if stale {
        let at = iso(now);
        db.write(move |c| {
            c.execute(
                "UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1",
                params![id, at],
            )?;
            Ok::<_, DbError>(())
        })?;
    }
    Ok(Ok(TokenCaller {
        token_id: id,
        name,
        creator_id,
        creator_name,
        role: Role::from_stored(&role).min(Role::from_stored(&creator_role)),
        expires_at,
    }))
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Whether a string looks like one of our API tokens (for refusing one that
/// was put in a URL).
pub fn looks_like_token(s: &str) -> bool {
    s.starts_with(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::users::{self, AuthMethods, NewUser};
    use chrono::TimeZone;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 0, 0, 0).unwrap() + chrono::Duration::seconds(secs)
    }

    fn setup() -> (tempfile::TempDir, Db, std::thread::JoinHandle<()>, i64) {
        let dir = tempfile::tempdir().unwrap();
        let (db, writer) = Db::open(&dir.path().join("t.db"), "now").unwrap();
        let id = users::create(
            &db,
            NewUser {
                username: "alice".into(),
                password: Some("pw".into()),
                auth_methods: AuthMethods::Local,
                role: Role::Operator,
            },
            "now".into(),
        )
        .unwrap();
        (dir, db, writer, id)
    }

    fn new(name: &str, role: Role, creator: i64, expires: Option<DateTime<Utc>>) -> NewToken {
        NewToken {
            name: name.into(),
            role,
            expires_at: expires,
            creator_id: creator,
            creator_name: "alice".into(),
            creator_role: Role::Operator,
        }
    }

    #[test]
    fn a_token_is_shown_once_stored_hashed_and_acts_until_it_expires() {
        let (_dir, db, _w, alice) = setup();
        let made = create(
            &db,
            new("grafana", Role::Viewer, alice, Some(at(100))),
            at(0),
        )
        .unwrap();
        assert!(made.token.starts_with(PREFIX) && made.token.len() == 44);
        let stored: String = db
            .read(|c| {
                Ok::<_, DbError>(
                    c.query_row("SELECT token_hash FROM api_tokens", [], |r| r.get(0))?,
                )
            })
            .unwrap();
        assert_eq!(stored, sha256_hex(&made.token));
        let caller = authenticate(&db, &made.token, at(10)).unwrap().unwrap();
        assert_eq!(
            (caller.role, caller.creator_name.as_str()),
            (Role::Viewer, "alice")
        );
        assert_eq!(
            list(&db).unwrap()[0].last_used_at.as_deref(),
            Some(&*iso(at(10)))
        );
        assert_eq!(
            authenticate(&db, &made.token, at(100))
                .unwrap()
                .unwrap_err(),
            Refused::Expired
        );
        assert_eq!(
            authenticate(&db, "vmt_00", at(10)).unwrap().unwrap_err(),
            Refused::Unknown
        );
        assert!(matches!(
            create(&db, new("grafana", Role::Viewer, alice, None), at(0)),
            Err(TokenError::NameTaken)
        ));
        delete(&db, made.listed.id).unwrap();
        assert_eq!(
            authenticate(&db, &made.token, at(10)).unwrap().unwrap_err(),
            Refused::Unknown
        );
    }

    #[test]
    fn a_token_never_acts_above_its_creator() {
        let (_dir, db, _w, alice) = setup();
        assert!(matches!(
            create(&db, new("too-high", Role::Admin, alice, None), at(0)),
            Err(TokenError::AboveCreator { .. })
        ));
        // Made while alice was an operator; she is a viewer now: so is the token.
        let made = create(&db, new("ops", Role::Operator, alice, None), at(0)).unwrap();
        db.write(move |c| {
            c.execute("UPDATE users SET role = 'viewer' WHERE id = ?1", [alice])?;
            Ok::<_, DbError>(())
        })
        .unwrap();
        let caller = authenticate(&db, &made.token, at(1)).unwrap().unwrap();
        assert_eq!(caller.role, Role::Viewer);
    }
}
