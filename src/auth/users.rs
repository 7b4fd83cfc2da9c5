//! Operators: the user list, its rules, and the first-run administrator.
//!
//! Password hashes and token versions never leave this module except to the
//! authentication code; [`User`] is what the API may show.

use crate::auth::password;
use crate::db::{Db, DbError};
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

/// A user as the API shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct User {
    pub id: i64,
    pub username: String,
    pub auth_methods: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A user with what only authentication may see.
#[derive(Debug, Clone)]
pub struct UserRecord {
    pub id: i64,
    pub username: String,
    pub auth_methods: AuthMethods,
    pub password_hash: Option<String>,
    pub token_version: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethods {
    Local,
    Oidc,
    LocalAndOidc,
}

impl AuthMethods {
    /// The API's spellings: `local`, `oidc`, `local,oidc`.
    pub fn parse(s: &str) -> Option<AuthMethods> {
        match s {
            "local" => Some(AuthMethods::Local),
            "oidc" => Some(AuthMethods::Oidc),
            "local,oidc" => Some(AuthMethods::LocalAndOidc),
            _ => None,
        }
    }

    /// Reads a stored value; an unreadable one falls back to local only.
    fn from_stored(s: &str) -> AuthMethods {
        match s {
            "oidc" => AuthMethods::Oidc,
            "local,oidc" | "oidc,local" => AuthMethods::LocalAndOidc,
            _ => AuthMethods::Local,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethods::Local => "local",
            AuthMethods::Oidc => "oidc",
            AuthMethods::LocalAndOidc => "local,oidc",
        }
    }

    pub fn has_local(self) -> bool {
        matches!(self, AuthMethods::Local | AuthMethods::LocalAndOidc)
    }

    pub fn has_oidc(self) -> bool {
        matches!(self, AuthMethods::Oidc | AuthMethods::LocalAndOidc)
    }
}

#[derive(Debug)]
pub enum UserError {
    NotFound,
    UsernameTaken,
    /// A rule about a combination of fields, with the text for the 400 answer.
    Rule(&'static str),
    Hash(password::HashError),
    Db(DbError),
}

impl From<DbError> for UserError {
    fn from(e: DbError) -> Self {
        UserError::Db(e)
    }
}

impl From<rusqlite::Error> for UserError {
    fn from(e: rusqlite::Error) -> Self {
        UserError::Db(DbError::Sqlite(e))
    }
}

pub const PASSWORD_FOR_NON_LOCAL: &str =
    "Password can only be set for users with local authentication";
pub const LOCAL_NEEDS_PASSWORD: &str = "A password is required for local authentication";
pub const CANNOT_DELETE_YOURSELF: &str = "Cannot delete yourself";
pub const CANNOT_DELETE_LAST: &str = "Cannot delete the last user";

const COLUMNS: &str = "id, username, auth_methods, created_at, updated_at";

fn user_from_row(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get("id")?,
        username: r.get("username")?,
        auth_methods: r.get("auth_methods")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
    })
}

fn record_from_row(r: &Row<'_>) -> rusqlite::Result<UserRecord> {
    Ok(UserRecord {
        id: r.get("id")?,
        username: r.get("username")?,
        auth_methods: AuthMethods::from_stored(&r.get::<_, String>("auth_methods")?),
        password_hash: r.get("password_hash")?,
        token_version: r.get("token_version")?,
    })
}

pub fn list(db: &Db) -> Result<Vec<User>, DbError> {
    db.read(|c| {
        let mut stmt = c.prepare(&format!("SELECT {COLUMNS} FROM users ORDER BY id"))?;
        let rows = stmt
            .query_map([], user_from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    })
}

pub fn find_by_id(db: &Db, id: i64) -> Result<Option<UserRecord>, DbError> {
    db.read(|c| {
        Ok(
            c.query_row("SELECT * FROM users WHERE id = ?1", [id], record_from_row)
                .optional()?,
        )
    })
}

pub fn find_by_username(db: &Db, username: &str) -> Result<Option<UserRecord>, DbError> {
    db.read(|c| {
        Ok(c.query_row(
            "SELECT * FROM users WHERE username = ?1",
            [username],
            record_from_row,
        )
        .optional()?)
    })
}

pub struct NewUser {
    pub username: String,
    pub password: Option<String>,
    pub auth_methods: AuthMethods,
}

pub fn create(db: &Db, new: NewUser, now: String) -> Result<i64, UserError> {
    if new.auth_methods.has_local() && new.password.is_none() {
        return Err(UserError::Rule(LOCAL_NEEDS_PASSWORD));
    }
    if !new.auth_methods.has_local() && new.password.is_some() {
        return Err(UserError::Rule(PASSWORD_FOR_NON_LOCAL));
    }
    // Hash outside the writer thread: it is the slow part and the writer serves everyone.
    let hash = new
        .password
        .as_deref()
        .map(password::hash)
        .transpose()
        .map_err(UserError::Hash)?;
    db.write(move |c| {
        let taken: bool = c.query_row("SELECT EXISTS(SELECT 1 FROM users WHERE username = ?1)", [&new.username], |r| r.get(0))?;
        if taken {
            return Err(UserError::UsernameTaken);
        }
        c.execute(
            "INSERT INTO users (username, password_hash, auth_methods, token_version, created_at, updated_at)
             VALUES (?1, ?2, ?3, 1, ?4, ?4)",
            params![new.username, hash, new.auth_methods.as_str(), now],
        )?;
        Ok(c.last_insert_rowid())
    })
}

pub struct UserUpdate {
    pub password: Option<String>,
    /// `None` (or an empty string in the request) leaves the methods unchanged.
    pub auth_methods: Option<AuthMethods>,
}

/// What an update did; `new_token_version` is set when sessions were revoked.
pub struct Updated {
    pub new_token_version: Option<i64>,
    pub username: String,
}

pub fn update(db: &Db, id: i64, change: UserUpdate, now: String) -> Result<Updated, UserError> {
    let current = find_by_id(db, id)?.ok_or(UserError::NotFound)?;
    let methods = change.auth_methods.unwrap_or(current.auth_methods);
    if change.password.is_some() && !methods.has_local() {
        return Err(UserError::Rule(PASSWORD_FOR_NON_LOCAL));
    }
    if methods.has_local() && change.password.is_none() && current.password_hash.is_none() {
        return Err(UserError::Rule(LOCAL_NEEDS_PASSWORD));
    }
    let hash = change
        .password
        .as_deref()
        .map(password::hash)
        .transpose()
        .map_err(UserError::Hash)?;
    let methods_changed = methods != current.auth_methods;
    db.write(move |c| {
        let Some(tv) = c
            .query_row("SELECT token_version FROM users WHERE id = ?1", [id], |r| {
                r.get::<_, i64>(0)
            })
            .optional()?
        else {
            return Err(UserError::NotFound);
        };
        let revoke = hash.is_some() || methods_changed;
        let new_tv = if revoke { tv + 1 } else { tv };
        c.execute(
            "UPDATE users SET password_hash = COALESCE(?2, password_hash), auth_methods = ?3,
                 token_version = ?4, updated_at = ?5 WHERE id = ?1",
            params![id, hash, methods.as_str(), new_tv, now],
        )?;
        Ok(Updated {
            new_token_version: revoke.then_some(new_tv),
            username: current.username,
        })
    })
}

pub fn delete(db: &Db, id: i64, acting_user: i64) -> Result<(), UserError> {
    if id == acting_user {
        return Err(UserError::Rule(CANNOT_DELETE_YOURSELF));
    }
    db.write(move |c| {
        let exists: bool = c.query_row(
            "SELECT EXISTS(SELECT 1 FROM users WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?;
        if !exists {
            return Err(UserError::NotFound);
        }
        let count: i64 = c.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?;
        if count <= 1 {
            return Err(UserError::Rule(CANNOT_DELETE_LAST));
        }
        c.execute("DELETE FROM users WHERE id = ?1", [id])?;
        Ok(())
    })
}

/// What the first-run bootstrap did.
pub enum Bootstrap {
    /// Users exist; nothing was done.
    NotNeeded,
    /// The administrator was created with the password from the environment.
    Created { username: String },
    /// The administrator was created with a generated password, to be shown once.
    CreatedWithGenerated { username: String, password: String },
}

/// Replaces an imported (bcrypt) hash with the Argon2id hash of the password
/// that just verified against it. Only while the stored hash is still `old`, so
/// a password changed meanwhile is not overwritten; sessions stay valid (the
/// password is the same), so `token_version` is left alone.
pub fn upgrade_hash(db: &Db, id: i64, old: String, new: String) -> Result<bool, DbError> {
    db.write(move |c| {
        Ok::<_, DbError>(
            c.execute(
                "UPDATE users SET password_hash = ?3 WHERE id = ?1 AND password_hash = ?2",
                params![id, old, new],
            )? == 1,
        )
    })
}

/// Creates the administrator when no user exists.
pub fn bootstrap_admin(
    db: &Db,
    username: &str,
    password: Option<&str>,
    now: String,
) -> Result<Bootstrap, UserError> {
    let count: i64 = db
        .read(|c| Ok::<_, DbError>(c.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?))?;
    if count > 0 {
        return Ok(Bootstrap::NotNeeded);
    }
    let (password, generated) = match password {
        Some(p) => (p.to_owned(), false),
        None => (generate_password(), true),
    };
    create(
        db,
        NewUser {
            username: username.to_owned(),
            password: Some(password.clone()),
            auth_methods: AuthMethods::Local,
        },
        now,
    )?;
    Ok(if generated {
        Bootstrap::CreatedWithGenerated {
            username: username.to_owned(),
            password,
        }
    } else {
        Bootstrap::Created {
            username: username.to_owned(),
        }
    })
}

/// 20 characters from an alphabet without look-alikes (about 110 bits).
fn generate_password() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789";
    let mut rng = rand::thread_rng();
    (0..20)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_methods_spellings() {
        assert_eq!(
            AuthMethods::parse("local,oidc"),
            Some(AuthMethods::LocalAndOidc)
        );
        assert_eq!(AuthMethods::parse("oidc,local"), None);
        assert_eq!(AuthMethods::parse("LOCAL"), None);
        assert!(AuthMethods::LocalAndOidc.has_local() && !AuthMethods::Oidc.has_local());
    }

    #[test]
    fn the_last_user_cannot_be_deleted_and_nobody_deletes_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _writer) = Db::open(&dir.path().join("u.db"), "now").unwrap();
        let new = |name: &str| NewUser {
            username: name.into(),
            password: Some("pw".into()),
            auth_methods: AuthMethods::Local,
        };
        let a = create(&db, new("a"), "now".into()).unwrap();
        assert!(matches!(
            delete(&db, a, a),
            Err(UserError::Rule(CANNOT_DELETE_YOURSELF))
        ));
        // Only reachable when the acting user is gone already (e.g. deleted meanwhile).
        assert!(matches!(
            delete(&db, a, 999),
            Err(UserError::Rule(CANNOT_DELETE_LAST))
        ));
        let b = create(&db, new("b"), "now".into()).unwrap();
        assert!(delete(&db, a, b).is_ok());
        assert!(matches!(delete(&db, a, b), Err(UserError::NotFound)));
        assert!(matches!(
            create(&db, new("b"), "now".into()),
            Err(UserError::UsernameTaken)
        ));
    }

    #[test]
    fn generated_passwords_are_long_and_differ() {
        let a = generate_password();
        assert_eq!(a.len(), 20);
        assert_ne!(a, generate_password());
    }
}
