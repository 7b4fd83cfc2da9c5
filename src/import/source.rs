//! Reading the original's database: read-only, in one read transaction, so a
//! server still running beside the import is neither disturbed nor half-read.
//!
//! The file is opened with `SQLITE_OPEN_READ_ONLY` (see `open_read_only` for
//! the running and the stopped original).

use super::map::{Event, KasmClient, KasmReading, KasmToken, KasmUser, KasmWebhook};
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags, Row};
use std::path::Path;

/// The migrations of keepalived-status-monitor 1.0, as its `umzug_migrations`
/// table records them.
pub const KASM_1_0_MIGRATIONS: [&str; 12] = [
    "00_initial",
    "01_keepalived_state",
    "02_client_site",
    "03_scheduler_state",
    "04_registration_token_hash",
    "05_activity_seen",
    "06_scheduler_next_run",
    "07_keepalived_last_instances",
    "08_webhooks",
    "09_vrrp_cluster",
    "10_user_token_version",
    "11_protect_agent_tokens",
];

#[derive(Debug)]
pub enum SourceError {
    /// SQLite cannot open or read the file.
    Unreadable(String),
    /// A SQLite file, but not the original's (or not its 1.0 schema).
    Foreign(String),
}

/// Everything the import takes, as the original stores it.
#[derive(Default)]
pub struct Rows {
    pub clients: Vec<KasmClient>,
    pub users: Vec<KasmUser>,
    pub tokens: Vec<KasmToken>,
    pub readings: Vec<KasmReading>,
    /// Events with their raw subject and data columns.
    pub events: Vec<(Event, Option<String>, Option<String>)>,
    pub seen: Vec<(String, i64)>,
    pub webhooks: Vec<KasmWebhook>,
    /// Confirmed cluster states, counted only: they are not imported.
    pub cluster_states: i64,
}

/// Opens a SQLite file read-only without leaving anything beside it. With a
/// `-wal` file present a server may be running: SQLite's ordinary read-only
/// reader sees its last commits (its `-shm` exists already). Without one, no
/// WAL-mode server runs on the file (SQLite keeps the `-wal` while any
/// connection is open), so it is read as `immutable`: no locks, and no `-shm`
/// or `-wal` created beside the file of a stopped server.
pub fn open_read_only(path: &Path) -> Result<Connection, rusqlite::Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let wal = format!("{}-wal", path.display());
    let conn = if Path::new(&wal).exists() {
        Connection::open_with_flags(path, flags)?
    } else {
        let mut url = url_path(path);
        url.push_str("?immutable=1");
        Connection::open_with_flags(url, flags | OpenFlags::SQLITE_OPEN_URI)?
    };
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

/// `file:` URI of a path: `%`, `?` and `#` escaped, as SQLite's URI rules need.
fn url_path(path: &Path) -> String {
    let mut out = String::from("file:");
    for ch in path.display().to_string().chars() {
        match ch {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Reads every row the import needs, or says why it cannot.
pub fn read(path: &Path) -> Result<Rows, SourceError> {
    if !path.is_file() {
        return Err(SourceError::Unreadable("there is no such file".into()));
    }
    let mut conn = open_read_only(path).map_err(|e| SourceError::Unreadable(e.to_string()))?;
    let tx = conn
        .transaction()
        .map_err(|e| SourceError::Unreadable(e.to_string()))?;
    check_schema(&tx)?;
    read_rows(&tx)
        .map_err(|e| SourceError::Foreign(format!("its tables do not read as 1.0's: {e}")))
}

fn check_schema(c: &Connection) -> Result<(), SourceError> {
    let has_table: bool = c
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'umzug_migrations'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| SourceError::Unreadable(e.to_string()))?
        == 1;
    if !has_table {
        return Err(SourceError::Foreign(
            "it has no umzug_migrations table".into(),
        ));
    }
    let mut stmt = c
        .prepare("SELECT name FROM umzug_migrations")
        .map_err(|e| SourceError::Foreign(e.to_string()))?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| SourceError::Foreign(e.to_string()))?;
    if let Some(missing) = KASM_1_0_MIGRATIONS
        .iter()
        .find(|m| !names.iter().any(|n| n == *m))
    {
        return Err(SourceError::Foreign(format!(
            "its migration {missing} was not applied (only the 1.0 schema is supported: start the original 1.0 on it once)"
        )));
    }
    if let Some(extra) = names
        .iter()
        .find(|n| !KASM_1_0_MIGRATIONS.contains(&n.as_str()))
    {
        return Err(SourceError::Foreign(format!(
            "it carries migration {extra}, which 1.0 does not have (a newer version is not supported)"
        )));
    }
    Ok(())
}

/// A column as text, whatever SQLite stored (DATETIME columns may hold numbers).
fn text(r: &Row<'_>, col: &str) -> rusqlite::Result<Option<String>> {
    Ok(match r.get::<_, Sql>(col)? {
        Sql::Null => None,
        Sql::Integer(i) => Some(i.to_string()),
        Sql::Real(f) => Some(f.to_string()),
        Sql::Text(s) => Some(s),
        Sql::Blob(b) => Some(String::from_utf8_lossy(&b).into_owned()),
    })
}

fn all<T>(
    c: &Connection,
    sql: &str,
    f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut stmt = c.prepare(sql)?;
    let rows = stmt.query_map([], f)?;
    rows.collect()
}

fn read_rows(c: &Connection) -> rusqlite::Result<Rows> {
    let clients = all(c, "SELECT * FROM clients ORDER BY created_at, id", |r| {
        Ok(KasmClient {
            id: r.get("id")?,
            hostname: text(r, "hostname")?,
            display_name: text(r, "display_name")?,
            site: text(r, "site")?,
            connection_mode: text(r, "connection_mode")?,
            auth_token: text(r, "auth_token")?,
            inbound_allowed_ip: text(r, "inbound_allowed_ip")?,
            inbound_last_ip: text(r, "inbound_last_ip")?,
            outbound_target_address: text(r, "outbound_target_address")?,
            version: text(r, "version")?,
            last_seen: text(r, "last_seen")?,
            created_at: text(r, "created_at")?,
            updated_at: text(r, "updated_at")?,
        })
    })?;
    let users = all(c, "SELECT * FROM users ORDER BY id", |r| {
        Ok((
            r.get("id")?,
            text(r, "username")?,
            text(r, "password_hash")?,
            text(r, "auth_methods")?,
            r.get("token_version")?,
            text(r, "created_at")?,
            text(r, "updated_at")?,
        ))
    })?;
    let tokens = all(
        c,
        "SELECT * FROM registration_tokens ORDER BY created_at",
        |r| {
            Ok((
                r.get("token_hash")?,
                text(r, "created_at")?,
                text(r, "expires_at")?,
                text(r, "used_at")?,
                text(r, "display_name")?,
                text(r, "allowed_ip")?,
            ))
        },
    )?;
    let readings = all(
        c,
        "SELECT * FROM keepalived_state ORDER BY client_id",
        |r| {
            Ok((
                r.get("client_id")?,
                r.get("status")?,
                r.get("received_at")?,
                text(r, "last_instances")?,
            ))
        },
    )?;
    let events = all(c, "SELECT * FROM activity ORDER BY occurred_at, id", |r| {
        Ok((
            Event {
                id: r.get("id")?,
                occurred_at: r.get("occurred_at")?,
                received_at: r.get("received_at")?,
                source: r.get("source")?,
                client_id: text(r, "client_id")?,
                kind: r.get("kind")?,
                level: r.get("level")?,
                correlation_id: text(r, "correlation_id")?,
                subject: String::new(),
                data: String::new(),
            },
            text(r, "subject")?,
            text(r, "data")?,
        ))
    })?;
    let seen = all(c, "SELECT activity_id, user_id FROM activity_seen", |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    let webhooks = all(c, "SELECT * FROM webhooks ORDER BY created_at, id", |r| {
        Ok(KasmWebhook {
            id: r.get("id")?,
            name: r.get("name")?,
            enabled: r.get("enabled")?,
            url: r.get("url")?,
            method: r.get("method")?,
            headers: r.get("headers")?,
            body_template: r.get("body_template")?,
            min_level: r.get("min_level")?,
            kinds: r.get("kinds")?,
            timeout_ms: r.get("timeout_ms")?,
            last_status: r.get("last_status")?,
            last_error: text(r, "last_error")?,
            last_attempt_at: text(r, "last_attempt_at")?,
            created_at: r.get("created_at")?,
            updated_at: text(r, "updated_at")?,
        })
    })?;
    let cluster_states = c.query_row("SELECT COUNT(*) FROM vrrp_cluster", [], |r| r.get(0))?;
    Ok(Rows {
        clients,
        users,
        tokens,
        readings,
        events,
        seen,
        webhooks,
        cluster_states,
    })
}
