//! The `drills` table: every drill asked for, its report as JSON.

use super::drill::{Drill, Status};
use crate::db::{Db, DbError};
use rusqlite::{params, OptionalExtension};

/// Writes a drill (new, or its latest state).
pub fn save(db: &Db, drill: &Drill) -> Result<(), DbError> {
    let body = serde_json::to_string(drill).unwrap_or_else(|_| "{}".into());
    let (id, key, status, started) = (
        drill.id.clone(),
        drill.cluster.clone(),
        drill.status.as_str(),
        drill.started_at.clone(),
    );
    db.write(move |c| {
        c.execute(
            "INSERT INTO drills (id, cluster_key, status, started_at, body) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, body = excluded.body",
            params![id, key, status, started, body],
        )?;
        Ok(())
    })
}

fn parse(body: String) -> Option<Drill> {
    serde_json::from_str(&body).ok()
}

pub fn get(db: &Db, id: &str) -> Result<Option<Drill>, DbError> {
    let body: Option<String> = db.read(|c| {
        Ok::<_, DbError>(
            c.query_row("SELECT body FROM drills WHERE id = ?1", [id], |r| r.get(0))
                .optional()?,
        )
    })?;
    Ok(body.and_then(parse))
}

/// The newest `limit` drills, of one cluster when `cluster` is given.
pub fn list(db: &Db, cluster: Option<&str>, limit: usize) -> Result<Vec<Drill>, DbError> {
    let bodies: Vec<String> = db.read(|c| {
        let mut stmt = c.prepare(
            "SELECT body FROM drills WHERE (?1 IS NULL OR cluster_key = ?1)
             ORDER BY started_at DESC, id LIMIT ?2",
        )?;
        let rows = stmt
            .query_map(params![cluster, limit as i64], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, DbError>(rows)
    })?;
    Ok(bodies.into_iter().filter_map(parse).collect())
}

/// Drills a stopped server left running: failed, with what to check. Returns them.
pub fn interrupted(db: &Db, at: chrono::DateTime<chrono::Utc>) -> Result<Vec<Drill>, DbError> {
    let mut cut = Vec::new();
    for mut drill in list(db, None, 10_000)?
        .into_iter()
        .filter(|d| d.status == Status::Running)
    {
        drill.findings.push(format!(
            "The server stopped during the drill: check that {} is undrained",
            drill.old_master.as_deref().unwrap_or("the old master")
        ));
        drill.finish(Status::Failed, at);
        save(db, &drill)?;
        cut.push(drill);
    }
    Ok(cut)
}
