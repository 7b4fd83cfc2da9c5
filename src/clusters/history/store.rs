//! The `cluster_history` table: carrying out a [`Book`](super::Book)'s writes
//! (on the writer, inside the `cluster-eval` thread's transaction), the
//! start-up close and the periodic touch of open intervals, reading a window
//! back, and trimming by `history_retention_days`.

use super::{HistoryHealth, Interval, Masters, Write};
use crate::db::{Db, DbError};
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
/// it ends there. Returns how many were closed.
pub fn close_all_open(db: &Db) -> Result<usize, DbError> {
    db.write(|c| {
        Ok::<_, DbError>(c.execute("UPDATE cluster_history SET open = 0 WHERE open = 1", [])?)
    })
}

/// Moves the open intervals' ends to now: they are known to hold until then.
pub fn touch(db: &Db, now_ms: i64) -> Result<(), DbError> {
    db.write(move |c| {
        c.execute(
            "UPDATE cluster_history SET to_ms = ?1 WHERE open = 1 AND to_ms < ?1",
            [now_ms],
        )?;
        Ok::<_, DbError>(())
    })
}

/// Shares the masters and incident ids between rows that repeat them, and
/// parses each distinct masters text once.
#[derive(Default)]
struct Interner {
    masters: HashMap<String, Arc<Masters>>,
    incidents: HashMap<String, Arc<str>>,
}

impl Interner {
    fn masters(&mut self, text: &str) -> Arc<Masters> {
        if let Some(m) = self.masters.get(text) {
            return m.clone();
        }
        let m = Arc::new(Masters::from_text(text));
        self.masters.insert(text.to_owned(), m.clone());
        m
    }

    fn incident(&mut self, id: &str) -> Arc<str> {
        if let Some(i) = self.incidents.get(id) {
            return i.clone();
        }
        let i: Arc<str> = Arc::from(id);
        self.incidents.insert(id.to_owned(), i.clone());
        i
    }
}

fn text(v: ValueRef<'_>) -> &str {
    v.as_str().unwrap_or_default()
}

/// Reads the intervals overlapping `[from_ms, to_ms)`, of one key or of all,
/// grouped by key, each key's sorted by start. An open interval ends now.
pub fn read(
    db: &Db,
    key: Option<&str>,
    from_ms: i64,
    to_ms: i64,
    now_ms: i64,
) -> Result<Vec<(String, Vec<Interval>)>, DbError> {
    db.read(|c| {
        // Scanning in primary-key order gives keys and starts sorted, without a sort.
        let sql =
            "SELECT key, from_ms, to_ms, open, masters, health, incident_id FROM cluster_history
                   WHERE (?1 IS NULL OR key = ?1) AND from_ms < ?3 AND (to_ms > ?2 OR open = 1)
                   ORDER BY key, from_ms";
        let mut stmt = c.prepare_cached(sql)?;
        let mut rows = stmt.query(params![key, from_ms, to_ms])?;
        let mut out: Vec<(String, Vec<Interval>)> = Vec::new();
        let mut interner = Interner::default();
        while let Some(r) = rows.next()? {
            let row_key = text(r.get_ref(0)?);
            let open = r.get::<_, i64>(3)? != 0;
            let stored_to: i64 = r.get(2)?;
            let interval = Interval {
                from_ms: r.get(1)?,
                to_ms: if open {
                    now_ms.max(stored_to)
                } else {
                    stored_to
                },
                open,
                masters: interner.masters(text(r.get_ref(4)?)),
                health: HistoryHealth::parse(text(r.get_ref(5)?)).unwrap_or(HistoryHealth::Ok),
                incident: match r.get_ref(6)? {
                    ValueRef::Text(t) => {
                        Some(interner.incident(std::str::from_utf8(t).unwrap_or_default()))
                    }
                    _ => None,
                },
            };
            match out.last_mut() {
                Some((k, list)) if k == row_key => list.push(interval),
                _ => out.push((row_key.to_owned(), vec![interval])),
            }
        }
        Ok(out)
    })
}

/// Removes closed intervals that ended before `cutoff_ms`, in batches.
pub fn trim(db: &Db, cutoff_ms: i64) -> Result<u64, DbError> {
    let mut removed = 0;
    loop {
        let n = db.write(move |c| {
            Ok::<_, DbError>(c.execute(
                "DELETE FROM cluster_history WHERE (key, from_ms) IN (
                     SELECT key, from_ms FROM cluster_history WHERE to_ms < ?1 AND open = 0 LIMIT ?2)",
                params![cutoff_ms, TRIM_BATCH],
            )? as u64)
        })?;
        removed += n;
        if n < TRIM_BATCH as u64 {
            return Ok(removed);
        }
    }
}
