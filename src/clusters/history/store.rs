//! The `cluster_history` table: carrying out a [`Book`](super::Book)'s writes
//! (on the writer, inside the `cluster-eval` thread's transaction), the
//! start-up close and the periodic touch of open intervals, reading the table
//! into the [`Mirror`] at start, and trimming by `history_retention_days`.
//! Every change to the table reaches the mirror on the writer thread once its
//! transaction committed ([`Db::write_then`]).

use super::mirror::Mirror;
use super::{HistoryHealth, Interval, Write};
use crate::db::{Db, DbError};
use parking_lot::RwLock;
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection};
use std::collections::HashMap;
use std::sync::Arc;

/// Rows removed per writer job when trimming (as the activity cleanup: ingest
/// never waits long behind one job).
const TRIM_BATCH: i64 = 2_000;

/// Carries out writes on the writer's connection. `now_ms` is the open
/// interval's "known to hold until".
pub fn apply(c: &Connection, writes: &[Write], now_ms: i64) -> Result<(), DbError> {
    for w in writes {
        match w {
            Write::Close { key, at_ms } => {
                c.prepare_cached(
                    "UPDATE cluster_history SET to_ms = ?2, open = 0 WHERE key = ?1 AND open = 1",
                )?
                .execute(params![key, at_ms])?;
            }
            Write::Open {
                key,
                from_ms,
                shape,
            } => {
                c.prepare_cached(
                    "INSERT INTO cluster_history (key, from_ms, to_ms, open, masters, health, incident_id)
                     VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6)
                     ON CONFLICT (key, from_ms) DO UPDATE SET to_ms = ?3, open = 1, masters = ?4,
                         health = ?5, incident_id = ?6",
                )?
                .execute(params![
                    key,
                    from_ms,
                    now_ms.max(*from_ms),
                    shape.masters.to_text(),
                    shape.health.as_str(),
                    shape.incident
                ])?;
            }
        }
    }
    Ok(())
}

/// At start: every interval still open was last known to hold at its `to_ms`;
/// it ends there. Returns how many were closed. Runs before [`load`].
pub fn close_all_open(db: &Db) -> Result<usize, DbError> {
    db.write(|c| {
        Ok::<_, DbError>(c.execute("UPDATE cluster_history SET open = 0 WHERE open = 1", [])?)
    })
}

/// Moves the open intervals' ends to now: they are known to hold until then.
pub fn touch(db: &Db, mirror: &SharedMirror, now_ms: i64) -> Result<(), DbError> {
    let mirror = mirror.clone();
    db.write_then(
        move |c| {
            c.execute(
                "UPDATE cluster_history SET to_ms = ?1 WHERE open = 1 AND to_ms < ?1",
                [now_ms],
            )?;
            Ok::<_, DbError>(())
        },
        move |_| mirror.write().touch(now_ms),
    )
}

/// The history held in memory, as the server shares it: changed on the writer
/// thread after each commit, read by the HTTP workers.
pub type SharedMirror = Arc<RwLock<Mirror>>;

/// Reads the whole table into the mirror (at start, after [`close_all_open`]).
/// It runs as a writer job and the mirror is installed when it commits, so
/// every later change to the table reaches the mirror after it, in order.
/// Returns how many intervals were read.
pub fn load(db: &Db, mirror: &SharedMirror) -> Result<usize, DbError> {
    let shared = mirror.clone();
    db.write_then(
        |c| {
            let mut stmt = c.prepare(
                "SELECT key, from_ms, to_ms, open, masters, health, incident_id FROM cluster_history
                 ORDER BY key, from_ms",
            )?;
            let mut rows = stmt.query([])?;
            let mut mirror = Mirror::default();
            // Incident ids shared between the rows that repeat them, while reading.
            let mut incidents: HashMap<String, Arc<str>> = HashMap::new();
            let mut last_key = String::new();
            while let Some(r) = rows.next()? {
                let key = text(r.get_ref(0)?);
                if key != last_key {
                    // Each key's incidents are its own: keep the map small.
                    incidents.clear();
                    key.clone_into(&mut last_key);
                }
                let incident = match r.get_ref(6)? {
                    ValueRef::Text(t) => {
                        let id = std::str::from_utf8(t).unwrap_or_default();
                        Some(match incidents.get(id) {
                            Some(shared) => shared.clone(),
                            None => {
                                let shared: Arc<str> = Arc::from(id);
                                incidents.insert(id.to_owned(), shared.clone());
                                shared
                            }
                        })
                    }
                    _ => None,
                };
                let interval = Interval {
                    from_ms: r.get(1)?,
                    to_ms: r.get(2)?,
                    open: r.get::<_, i64>(3)? != 0,
                    masters: mirror.masters(text(r.get_ref(4)?)),
                    health: HistoryHealth::parse(text(r.get_ref(5)?)).unwrap_or(HistoryHealth::Ok),
                    incident,
                };
                mirror.insert(&last_key, interval);
            }
            mirror.shrink();
            Ok::<_, DbError>(Some(mirror))
        },
        move |loaded| {
            if let Some(m) = loaded.take() {
                *shared.write() = m;
            }
        },
    )?;
    let n = mirror.read().len();
    Ok(n)
}

fn text(v: ValueRef<'_>) -> &str {
    v.as_str().unwrap_or_default()
}

/// Removes closed intervals that ended before `cutoff_ms`, in batches (the
/// mirror loses the same rows as each batch commits).
pub fn trim(db: &Db, mirror: &SharedMirror, cutoff_ms: i64) -> Result<u64, DbError> {
    let mut removed = 0;
    loop {
        let mirror = mirror.clone();
        let deleted = db.write_then(
            move |c| {
                let mut stmt = c.prepare_cached(
                    "DELETE FROM cluster_history WHERE (key, from_ms) IN (
                         SELECT key, from_ms FROM cluster_history WHERE to_ms < ?1 AND open = 0 LIMIT ?2)
                     RETURNING key, from_ms",
                )?;
                let rows = stmt
                    .query_map(params![cutoff_ms, TRIM_BATCH], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok::<_, DbError>(rows)
            },
            move |deleted| mirror.write().remove(deleted),
        )?;
        let n = deleted.len() as u64;
        removed += n;
        if n < TRIM_BATCH as u64 {
            return Ok(removed);
        }
    }
}
