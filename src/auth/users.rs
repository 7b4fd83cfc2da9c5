//! Operators: the user list, its rules, and the first-run administrator.
//!
//! Password hashes and token versions never leave this module except to the
//! authentication code; [`User`] is what the API may show.

use crate::auth::password;
use crate::auth::roles::Role;
use crate::db::{Db, DbError};
use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

/// A user as the API shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct User {
    pub id: i64,
    pub username: String,
    pub auth_methods: String,
    pub role: Role,
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
    pub role: Role,
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
pub const CANNOT_DEMOTE_LAST_ADMIN: &str = "Cannot demote the last administrator";
pub const CANNOT_DELETE_LAST_ADMIN: &str = "Cannot delete the last administrator";

const COLUMNS: &str = "id, username, auth_methods, role, created_at, updated_at";

fn user_from_row(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get("id")?,
        username: r.get("username")?,
        auth_methods: r.get("auth_methods")?,
        role: Role::from_stored(&r.get::<_, String>("role")?),
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
        role: Role::from_stored(&r.get::<_, String>("role")?),
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
    pub role: Role,
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
            "INSERT INTO users (username, password_hash, auth_methods, role, token_version, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)",
            params![new.username, hash, new.auth_methods.as_str(), new.role.as_str(), now],
        )?;
        Ok(c.last_insert_rowid())
    })
}

pub struct UserUpdate {
    pub password: Option<String>,
    /// `None` (or an empty string in the request) leaves the methods unchanged.
    pub auth_methods: Option<AuthMethods>,
    /// `None` leaves the role unchanged.
    pub role: Option<Role>,
}

/// What an update did; `new_token_version` is set when sessions were revoked.
pub struct Updated {
    pub new_token_version: Option<i64>,
    pub username: String,
    /// The role before and after, when it changed.
    pub role_change: Option<(Role, Role)>,
}

/// Administrators other than `id` (the one being demoted or deleted).
fn other_admins(c: &rusqlite::Connection, id: i64) -> rusqlite::Result<i64> {
    c.query_row(
        "SELECT COUNT(*) FROM users WHERE role = 'admin' AND id != ?1",
        [id],
        |r| r.get(0),
    )
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
        let Some((tv, stored_role)) = c
            .query_row(
                "SELECT token_version, role FROM users WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        Role::from_stored(&r.get::<_, String>(1)?),
                    ))
                },
            )
            .optional()?
        else {
            return Err(UserError::NotFound);
        };
        let role = change.role.unwrap_or(stored_role);
        // Counted in the writer, so two demotions at once cannot both pass.
        if stored_role == Role::Admin && role != Role::Admin && other_admins(c, id)? == 0 {
            return Err(UserError::Rule(CANNOT_DEMOTE_LAST_ADMIN));
        }
        // A new role ends the user's sessions too: open dashboards learn it at once.
        let revoke = hash.is_some() || methods_changed || role != stored_role;
        let new_tv = if revoke { tv + 1 } else { tv };
        c.execute(
            "UPDATE users SET password_hash = COALESCE(?2, password_hash), auth_methods = ?3,
                 token_version = ?4, updated_at = ?5, role = ?6 WHERE id = ?1",
            params![id, hash, methods.as_str(), new_tv, now, role.as_str()],
        )?;
        Ok(Updated {
            new_token_version: revoke.then_some(new_tv),
            username: current.username,
            role_change: (role != stored_role).then_some((stored_role, role)),
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
        let role: String =
            c.query_row("SELECT role FROM users WHERE id = ?1", [id], |r| r.get(0))?;
        if Role::from_stored(&role) == Role::Admin && other_admins(c, id)? == 0 {
            return Err(UserError::Rule(CANNOT_DELETE_LAST_ADMIN));
        }
        c.execute("DELETE FROM users WHERE id = ?1", [id])?;
        // A deleted user's API tokens die with it: nobody would answer for them.
        c.execute("DELETE FROM api_tokens WHERE created_by = ?1", [id])?;
        Ok(())
    })
}

/// Sets the role an identity provider gives a user at login (`oidc.role_claim`).
/// Returns the change, if any; the last administrator is kept (and the refusal
/// returned) rather than locking everyone out. Sessions are not revoked: the
/// session being issued carries the new role.
pub fn set_role_from_provider(
    db: &Db,
    id: i64,
    role: Role,
    now: String,
) -> Result<Option<(Role, Role)>, UserError> {
    db.write(move |c| {
        let stored: String = c
            .query_row("SELECT role FROM users WHERE id = ?1", [id], |r| r.get(0))
            .optional()?
            .ok_or(UserError::NotFound)?;
        let stored = Role::from_stored(&stored);
        if stored == role {
            return Ok(None);
        }
        if stored == Role::Admin && other_admins(c, id)? == 0 {
            return Err(UserError::Rule(CANNOT_DEMOTE_LAST_ADMIN));
        }
        c.execute(
            "UPDATE users SET role = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, role.as_str(), now],
        )?;
        Ok(Some((stored, role)))
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
            role: Role::Admin,
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
            role: Role::Admin,
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
    fn the_last_administrator_can_be_neither_demoted_nor_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _writer) = Db::open(&dir.path().join("u.db"), "now").unwrap();
        let new = |name: &str, role| NewUser {
            username: name.into(),
            password: Some("pw".into()),
            auth_methods: AuthMethods::Local,
            role,
        };
        let admin = create(&db, new("admin", Role::Admin), "now".into()).unwrap();
        let viewer = create(&db, new("viewer", Role::Viewer), "now".into()).unwrap();
        let demote = |_id: i64, role| UserUpdate {
            password: None,
            auth_methods: None,
            role: Some(role),
        };
        assert!(matches!(
            update(&db, admin, demote(admin, Role::Operator), "now".into()),
            Err(UserError::Rule(CANNOT_DEMOTE_LAST_ADMIN))
        ));
        assert!(matches!(
            delete(&db, admin, viewer),
            Err(UserError::Rule(CANNOT_DELETE_LAST_ADMIN))
        ));
        assert!(matches!(
            set_role_from_provider(&db, admin, Role::Viewer, "now".into()),
            Err(UserError::Rule(CANNOT_DEMOTE_LAST_ADMIN))
        ));
        // With a second administrator both work, and a new role revokes sessions.
        let promoted = update(&db, viewer, demote(viewer, Role::Admin), "now".into()).unwrap();
        assert_eq!(promoted.role_change, Some((Role::Viewer, Role::Admin)));
        assert!(promoted.new_token_version.is_some());
        assert!(update(&db, admin, demote(admin, Role::Operator), "now".into()).is_ok());
        assert_eq!(
            find_by_id(&db, admin).unwrap().unwrap().role,
            Role::Operator
        );
        assert!(delete(&db, admin, viewer).is_ok());
    }

    #[test]
    fn generated_passwords_are_long_and_differ() {
        let a = generate_password();
        assert_eq!(a.len(), 20);
        assert_ne!(a, generate_password());
    }
}
