//! This server's side: is the data directory's database empty enough to take an
//! import, and writing what the mapping returned in one transaction.
//!
//! The import is a separate process run while this server is stopped (as
//! `backup` is a separate process): after `Db::open` applied our migrations and
//! its writer thread ended, the rows go in through one read-write connection and
//! one transaction, so a failure leaves the database as the migrations made it.

use super::map::{Client, Credential, Event, Reading, Token, User, Webhook};
use crate::auth::sealed::SealKey;
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

/// What the target holds that an import would mix with.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub clients: i64,
    pub users: i64,
    pub webhooks: i64,
    /// One user, never changed since its creation: the first-run administrator.
    pub fresh_admin: Option<i64>,
}

impl Held {
    /// The sentence of a refusal, or `None` when the import may go ahead.
    pub fn refusal(&self) -> Option<String> {
        let admin_only = self.users == 0 || (self.users == 1 && self.fresh_admin.is_some());
        if self.clients == 0 && self.webhooks == 0 && admin_only {
            return None;
        }
        Some(format!(
            "it already holds {} clients, {} webhooks and {} users{}; import-kasm fills only a fresh installation",
            self.clients,
            self.webhooks,
            self.users,
            if self.users == 1 && self.fresh_admin.is_none() { " (the administrator was used or changed)" } else { "" }
        ))
    }
}

/// Looks at an existing database read-only; a missing file holds nothing.
pub fn held(db_file: &Path) -> Result<Held, rusqlite::Error> {
    if !db_file.exists() {
        return Ok(Held::default());
    }
    let c = super::source::open_read_only(db_file)?;
    let count = |table: &str| -> rusqlite::Result<i64> {
        let exists: i64 = c.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )?;
        if exists == 0 {
            return Ok(0);
        }
        c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
    };
    let mut held = Held {
        clients: count("clients")?,
        users: count("users")?,
        webhooks: count("webhooks")?,
        fresh_admin: None,
    };
    if held.users == 1 {
        // Never logged in to change anything: same times, first token version,
        // nothing marked seen.
        held.fresh_admin = c
            .query_row(
                "SELECT id FROM users WHERE created_at = updated_at AND token_version = 1
                   AND NOT EXISTS (SELECT 1 FROM activity_seen WHERE user_id = users.id)",
                [],
                |r| r.get(0),
            )
            .ok();
    }
    Ok(held)
}

/// Everything that comes over, mapped.
#[derive(Default)]
pub struct Import {
    pub clients: Vec<Client>,
    pub users: Vec<User>,
    pub tokens: Vec<Token>,
    pub readings: Vec<Reading>,
    pub events: Vec<Event>,
    pub seen: Vec<(String, i64)>,
    pub webhooks: Vec<Webhook>,
}

/// Writes the import in one transaction. The first-run administrator makes way
/// for the original's users (their ids are kept: seen marks refer to them).
pub fn write(
    db_file: &Path,
    import: &Import,
    ours: &SealKey,
    fresh_admin: Option<i64>,
    now: &str,
) -> rusqlite::Result<()> {
    let mut conn = Connection::open(db_file)?;
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;")?;
    let tx = conn.transaction()?;
    if let (Some(id), false) = (fresh_admin, import.users.is_empty()) {
        tx.execute("DELETE FROM users WHERE id = ?1", [id])?;
    }
    for u in &import.users {
        tx.execute(
            "INSERT INTO users (id, username, password_hash, auth_methods, token_version, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![u.id, u.username, u.password_hash, u.auth_methods, u.token_version, u.created_at, u.updated_at],
        )?;
    }
    for c in &import.clients {
        let (hash, sealed) = match &c.credential {
            Credential::Hash(h) => (Some(h.clone()), None),
            Credential::Plain(p) => (None, Some(ours.seal(p))),
            Credential::None => (None, None),
        };
        tx.execute(
            "INSERT INTO clients (id, hostname, display_name, site, connection_mode, auth_token_hash, auth_token_encrypted,
                 inbound_allowed_ip, inbound_last_ip, outbound_target_address, last_seen, version, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                c.id, c.hostname, c.display_name, c.site,
                if c.outbound { "outbound" } else { "inbound" },
                hash, sealed, c.inbound_allowed_ip, c.inbound_last_ip, c.outbound_target_address,
                c.last_seen, c.version, c.created_at, c.updated_at
            ],
        )?;
    }
    for r in &import.readings {
        tx.execute(
            "INSERT INTO keepalived_states (client_id, received_at, payload, last_known_instances) VALUES (?1, ?2, ?3, ?4)",
            params![r.client_id, r.received_at, r.payload, r.last_known_instances],
        )?;
    }
    for t in &import.tokens {
        tx.execute(
            "INSERT INTO registration_tokens (token_hash, created_at, expires_at, display_name, allowed_ip) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![t.token_hash, t.created_at, t.expires_at, t.display_name, t.allowed_ip],
        )?;
    }
    for e in &import.events {
        tx.execute(
            "INSERT INTO activity (id, occurred_at, received_at, source, client_id, kind, level, correlation_id, subject, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![e.id, e.occurred_at, e.received_at, e.source, e.client_id, e.kind, e.level, e.correlation_id, e.subject, e.data],
        )?;
    }
    for (activity_id, user_id) in &import.seen {
        tx.execute(
            "INSERT OR IGNORE INTO activity_seen (activity_id, user_id) VALUES (?1, ?2)",
            params![activity_id, user_id],
        )?;
    }
    for w in &import.webhooks {
        let s = &w.spec;
        tx.execute(
            "INSERT INTO webhooks (id, name, enabled, url, method, headers, body_template, min_level, kinds, timeout_ms,
                 last_status, last_error, last_attempt_at, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                w.id, s.name, s.enabled as i64, s.url, s.method, Value::Object(s.headers.clone()).to_string(),
                s.body_template, s.min_level, json!(s.kinds).to_string(), s.timeout_ms as i64,
                w.last_status, w.last_error, w.last_attempt_at, w.created_at, w.updated_at
            ],
        )?;
    }
    // One audit entry for the whole import, in its transaction: no secret,
    // only what came over.
    let summary = format!(
        "Imported from keepalived-status-monitor: {} users, {} clients, {} readings, {} registration tokens, {} events, {} webhooks",
        import.users.len(),
        import.clients.len(),
        import.readings.len(),
        import.tokens.len(),
        import.events.len(),
        import.webhooks.len()
    );
    tx.execute(
        "INSERT INTO audit_log (at, actor, via, source_ip, action, target, summary)
         VALUES (?1, 'vrrp-monitor import-kasm', 'cli', NULL, 'import.done', 'database', ?2)",
        params![now, summary],
    )?;
    tx.commit()
}
