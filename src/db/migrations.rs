//! Numbered schema migrations from `sql/`, applied in order at start.
//!
//! Each migration runs inside its own transaction together with the row that
//! records it, so a failed one leaves the database as it was.

use rusqlite::{params, Connection};

/// `PRAGMA application_id` of our databases ("VRMN"), stamped by every start's
/// migrations, so `file(1)` and the start-up check can tell them from other
/// SQLite files.
pub const APPLICATION_ID: i32 = 0x5652_4d4e;

/// Every file of `sql/`, in order. A test checks that none is missing here.
pub const MIGRATIONS: &[(u32, &str, &str)] = &[
    (
        1,
        "0001_users.sql",
        include_str!("../../sql/0001_users.sql"),
    ),
    (
        2,
        "0002_agents.sql",
        include_str!("../../sql/0002_agents.sql"),
    ),
    (
        3,
        "0003_schedulers.sql",
        include_str!("../../sql/0003_schedulers.sql"),
    ),
    (
        4,
        "0004_cluster_states.sql",
        include_str!("../../sql/0004_cluster_states.sql"),
    ),
    (
        5,
        "0005_webhooks.sql",
        include_str!("../../sql/0005_webhooks.sql"),
    ),
    (
        6,
        "0006_cluster_history.sql",
        include_str!("../../sql/0006_cluster_history.sql"),
    ),
    (
        7,
        "0007_silences.sql",
        include_str!("../../sql/0007_silences.sql"),
    ),
    (
        8,
        "0008_activity_indexes.sql",
        include_str!("../../sql/0008_activity_indexes.sql"),
    ),
    (
        9,
        "0009_roles_tokens_audit.sql",
        include_str!("../../sql/0009_roles_tokens_audit.sql"),
    ),
    (
        10,
        "0010_drills.sql",
        include_str!("../../sql/0010_drills.sql"),
    ),
    (
        11,
        "0011_provisioning.sql",
        include_str!("../../sql/0011_provisioning.sql"),
    ),
];

#[derive(Debug)]
pub struct MigrationError {
    pub name: &'static str,
    pub source: rusqlite::Error,
}

impl std::fmt::Display for MigrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "migration {} failed: {}", self.name, self.source)
    }
}

impl std::error::Error for MigrationError {}

/// Applies the migrations not yet recorded; returns the names applied now.
pub fn apply(conn: &mut Connection, now: &str) -> Result<Vec<&'static str>, MigrationError> {
    let wrap = |name| move |source| MigrationError { name, source };
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
         )",
    )
    .map_err(wrap("schema_migrations"))?;
    let mut applied = Vec::new();
    for &(version, name, sql) in MIGRATIONS {
        let done: bool = conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM schema_migrations WHERE version = ?1)",
                [version],
                |r| r.get(0),
            )
            .map_err(wrap(name))?;
        if done {
            continue;
        }
        let tx = conn.transaction().map_err(wrap(name))?;
        tx.execute_batch(sql).map_err(wrap(name))?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            params![version, name, now],
        )
        .map_err(wrap(name))?;
        tx.commit().map_err(wrap(name))?;
        applied.push(name);
    }
    // Marks the file as ours for the start-up check (and `file(1)`); databases made
    // before the mark get it here.
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(wrap("application_id"))?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sql_file_is_listed_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sql");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let listed: Vec<&str> = MIGRATIONS.iter().map(|m| m.1).collect();
        assert_eq!(files, listed);
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.0 as usize, i + 1, "versions are 1, 2, 3...");
            assert!(m.1.starts_with(&format!("{:04}_", m.0)));
        }
    }

    #[test]
    fn applying_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().unwrap();
        let first = apply(&mut conn, "t").unwrap();
        assert_eq!(first.len(), MIGRATIONS.len());
        assert!(apply(&mut conn, "t").unwrap().is_empty());
    }

    #[test]
    fn a_failing_migration_leaves_nothing_behind() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE users (x)").unwrap();
        let err = apply(&mut conn, "t").unwrap_err();
        assert_eq!(err.name, "0001_users.sql");
        let recorded: i64 = conn
            .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
            .unwrap();
        assert_eq!(recorded, 0);
    }
}
