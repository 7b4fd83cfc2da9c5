//! Webhooks defined by provisioning files: brought in line with the files in
//! one write. Each one's id is derived from its name (`db::stable_id`), so
//! applying the same files twice changes nothing, and a webhook keeps its id
//! (and its last delivery's outcome) while its file changes it. Webhooks made
//! through the API (`provisioned_from` NULL) are never touched here.

use super::store::{from_row, Webhook, WebhookSpec};
use crate::clock::iso;
use crate::db::{stable_id, Db, DbError};
use chrono::{DateTime, Utc};
use rusqlite::params;
use serde_json::{json, Value};

/// A webhook as a file defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// The file's name (`webhooks.yaml`).
    pub file: String,
    pub spec: WebhookSpec,
}

/// The id a provisioned webhook of this name has.
pub fn id_for(name: &str) -> String {
    stable_id("webhook", name)
}

/// Creates, changes and removes provisioned webhooks so that they are exactly
/// `wanted`; returns one sentence per change (none when all were in line).
pub fn sync(db: &Db, wanted: Vec<Wanted>, now: DateTime<Utc>) -> Result<Vec<String>, DbError> {
    let at = iso(now);
    db.write(move |c| {
        let existing: Vec<Webhook> = {
            let mut stmt =
                c.prepare("SELECT * FROM webhooks WHERE provisioned_from IS NOT NULL")?;
            let rows = stmt
                .query_map([], from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            rows
        };
        let mut changes = Vec::new();
        let mut kept = Vec::new();
        for w in &wanted {
            let id = id_for(&w.spec.name);
            let s = &w.spec;
            let columns = (
                Value::Object(s.headers.clone()).to_string(),
                json!(s.kinds).to_string(),
            );
            match existing.iter().find(|e| e.id == id) {
                None => {
                    c.execute(
                        "INSERT INTO webhooks (id, name, enabled, url, method, headers, body_template, min_level, kinds, timeout_ms, created_at, provisioned_from)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                        params![id, s.name, s.enabled as i64, s.url, s.method, columns.0, s.body_template, s.min_level, columns.1, s.timeout_ms as i64, at, w.file],
                    )?;
                    changes.push(format!("webhook {} created from {}", s.described(), w.file));
                }
                Some(e) if e.spec == *s && e.provisioned_from.as_deref() == Some(w.file.as_str()) => {}
                Some(_) => {
                    c.execute(
                        "UPDATE webhooks SET name = ?2, enabled = ?3, url = ?4, method = ?5, headers = ?6, body_template = ?7,
                             min_level = ?8, kinds = ?9, timeout_ms = ?10, updated_at = ?11, provisioned_from = ?12
                         WHERE id = ?1",
                        params![id, s.name, s.enabled as i64, s.url, s.method, columns.0, s.body_template, s.min_level, columns.1, s.timeout_ms as i64, at, w.file],
                    )?;
                    changes.push(format!("webhook {} changed by {}", s.described(), w.file));
                }
            }
            kept.push(id);
        }
        for e in existing.iter().filter(|e| !kept.contains(&e.id)) {
            c.execute("DELETE FROM webhooks WHERE id = ?1", [&e.id])?;
            changes.push(format!(
                "webhook \"{}\" removed (no longer in {})",
                e.spec.name.escape_debug(),
                e.provisioned_from.as_deref().unwrap_or("its file")
            ));
        }
        Ok::<_, DbError>(changes)
    })
}
