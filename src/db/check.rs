//! The look at an existing database file before the server opens it for writing.
//!
//! Opening read-write is not harmless: SQLite would replay a journal, switch the
//! file to WAL and our migrations would add tables to whatever the file holds. So a
//! file that is corrupt, belongs to another program or was written by a newer
//! vrrp-monitor is refused here, through a read-only connection, and left exactly
//! as it was for the operator to look at.

use rusqlite::{Connection, OpenFlags};
use std::path::Path;

use super::migrations::APPLICATION_ID;

/// Why an existing file is not opened.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// SQLite cannot read it as a database, or its integrity check fails.
    Corrupt(String),
    /// A SQLite database, but not ours.
    Foreign(String),
    /// Ours, with migrations this binary does not know.
    Newer { version: i64, known: i64 },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Corrupt(why) => write!(
                f,
                "the file is damaged ({why}). It was left untouched. Restore a backup \
                 (`vrrp-monitor backup` copies) in its place, or move it away to start \
                 with an empty database"
            ),
            Refusal::Foreign(what) => write!(
                f,
                "the file is not a vrrp-monitor database ({what}). It was left untouched. \
                 Set SVC_SERVER_DATA_DIR to a directory of its own, or move the file away"
            ),
            Refusal::Newer { version, known } => write!(
                f,
                "the file was written by a newer vrrp-monitor (schema version {version}, \
                 this binary knows up to {known}). It was left untouched. Run that newer \
                 version, or restore a backup taken with this one"
            ),
        }
    }
}

/// Checks the file at `path` if it exists and holds anything; a missing or empty
/// file is a new database and passes.
pub fn existing_file(path: &Path, known_version: i64) -> Result<(), Refusal> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => {}
        _ => return Ok(()),
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Refusal::Corrupt(e.to_string()))?;
    let corrupt = |e: rusqlite::Error| Refusal::Corrupt(e.to_string());
    let application_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(corrupt)?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(corrupt)?;
    if tables.is_empty() && application_id == 0 {
        return Ok(());
    }
    if application_id != APPLICATION_ID && !is_ours_before_the_id(&conn, &tables) {
        let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
        let what = if application_id != 0 {
            format!("application id {application_id:#x}")
        } else {
            format!("it holds tables {}", shown.join(", "))
        };
        return Err(Refusal::Foreign(what));
    }
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(corrupt)?;
    if check != "ok" {
        return Err(Refusal::Corrupt(format!("integrity check: {check}")));
    }
    let version: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )
        .map_err(corrupt)?;
    if version > known_version {
        return Err(Refusal::Newer {
            version,
            known: known_version,
        });
    }
    Ok(())
}

/// Databases created before the application id was set are recognised by their
/// first migration's name.
fn is_ours_before_the_id(conn: &Connection, tables: &[String]) -> bool {
    tables.iter().any(|t| t == "schema_migrations")
        && conn
            .query_row(
                "SELECT name FROM schema_migrations WHERE version = 1",
                [],
                |r| r.get::<_, String>(0),
            )
            .map(|name| name == super::migrations::MIGRATIONS[0].1)
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.db");
        (dir, path)
    }

    #[test]
    fn missing_and_empty_files_are_new_databases() {
        let (_d, path) = temp();
        assert_eq!(existing_file(&path, 5), Ok(()));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(existing_file(&path, 5), Ok(()));
    }

    #[test]
    fn random_bytes_are_corrupt() {
        let (_d, path) = temp();
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        assert!(matches!(existing_file(&path, 5), Err(Refusal::Corrupt(_))));
    }

    #[test]
    fn another_programs_database_is_foreign() {
        let (_d, path) = temp();
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE moz_places (id INTEGER)")
            .unwrap();
        drop(c);
        let err = existing_file(&path, 5).unwrap_err();
        assert_eq!(err, Refusal::Foreign("it holds tables moz_places".into()));
        assert!(err.to_string().contains("left untouched"));
    }

    #[test]
    fn ours_passes_and_a_newer_schema_is_refused() {
        let (_d, path) = temp();
        let mut c = Connection::open(&path).unwrap();
        super::super::migrations::apply(&mut c, "t").unwrap();
        let known = super::super::migrations::MIGRATIONS.len() as i64;
        drop(c);
        assert_eq!(existing_file(&path, known), Ok(()));
        // A database from before the mark is still recognised as ours.
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "application_id", 0).unwrap();
        drop(c);
        assert_eq!(existing_file(&path, known), Ok(()));
        assert_eq!(
            existing_file(&path, known - 1),
            Err(Refusal::Newer {
                version: known,
                known: known - 1
            })
        );
    }
}
