//! Silences (maintenance windows): while an event matches an active
//! silence it is still stored and broadcast (the activity list never lies) but
//! carries `data.silenced: {id, comment, until}` and is not offered to webhooks.
//!
//! [`Silences`] keeps every silence in memory (the sink asks it for each event)
//! and in the `silences` table. The `silences` thread ([`run_expiry`]) ends them
//! on the server's clock: it records `silence.expired`, and every incident still
//! open that the silence held back is delivered then, once, as a
//! `vrrp.incident_updated` noting the silence ended. Which incidents are open is
//! the cluster evaluator's knowledge, asked through [`OpenIncidents`] (so the
//! activity list does not depend on clusters).

pub mod matcher;
pub mod provisioned;
#[cfg(test)]
mod tests;

pub use matcher::{kind_matches, validate, Matcher, NewSilence};

use super::event::{Event, Recorder};
use crate::clock::{iso, SharedClock};
use crate::db::{Db, DbError};
use crate::lifecycle::Shutdown;
use chrono::{DateTime, Utc};
use parking_lot::RwLock;
use rusqlite::params;
use serde_json::{json, Value};
use std::sync::Arc;
use vrrp_protocol::ActivityLevel;

#[derive(Debug, Clone, PartialEq)]
pub struct Silence {
    pub id: String,
    pub matcher: Matcher,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub comment: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// `silence.expired` was recorded (and its open incidents delivered).
    pub expired: bool,
    /// The provisioning file that defines it and the name it has there; `None`
    /// when made through the API. A provisioned silence is changed only by its
    /// file ([`Silences::provision`]).
    pub provisioned: Option<FromFile>,
}

/// Where a provisioned silence comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct FromFile {
    /// The file's name (`maintenance.yaml`).
    pub file: String,
    /// Its key in the files: unique across them, its id derived from it.
    pub name: String,
}

impl Silence {
    pub fn is_active(&self, at: DateTime<Utc>) -> bool {
        self.starts_at <= at && at < self.ends_at
    }

    /// The API's Silence, with its status at `now`.
    pub fn view(&self, now: DateTime<Utc>) -> SilenceView {
        let status = if self.expired || now >= self.ends_at {
            "expired"
        } else if now < self.starts_at {
            "pending"
        } else {
            "active"
        };
        SilenceView {
            id: self.id.clone(),
            matcher: self.matcher.clone(),
            starts_at: self.starts_at,
            ends_at: self.ends_at,
            comment: self.comment.clone(),
            created_by: self.created_by.clone(),
            created_at: self.created_at,
            status,
            name: self.provisioned.as_ref().map(|p| p.name.clone()),
            provisioned_from: self.provisioned.as_ref().map(|p| p.file.clone()),
        }
    }

    /// `data.silenced` of a held-back event.
    fn mark(&self) -> Value {
        json!({ "id": self.id, "comment": self.comment, "until": iso(self.ends_at) })
    }
}

/// A silence as the API and `data.silence` show it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SilenceView {
    pub id: String,
    pub matcher: Matcher,
    #[serde(with = "crate::clock::iso_millis")]
    pub starts_at: DateTime<Utc>,
    #[serde(with = "crate::clock::iso_millis")]
    pub ends_at: DateTime<Utc>,
    pub comment: String,
    pub created_by: String,
    #[serde(with = "crate::clock::iso_millis")]
    pub created_at: DateTime<Utc>,
    pub status: &'static str,
    pub name: Option<String>,
    pub provisioned_from: Option<String>,
}

/// The incidents a silence held back that are still open, as the events to
/// deliver now. Implemented by the cluster side.
pub trait OpenIncidents: Send + Sync {
    fn still_open(
        &self,
        incident_ids: &[String],
        silence: &Value,
        now: DateTime<Utc>,
    ) -> Vec<Event>;
}

fn parse_time(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// Every silence, in memory and in the `silences` table.
pub struct Silences {
    db: Arc<Db>,
    list: RwLock<Vec<Silence>>,
}

impl Silences {
    pub fn load(db: Arc<Db>) -> Result<Silences, DbError> {
        let list = db.read(|c| {
            let mut stmt = c.prepare(
                "SELECT id, cluster_key, client_id, kind, starts_at, ends_at, comment, created_by, created_at, expired,
                        provisioned_from, provisioned_name
                 FROM silences ORDER BY created_at",
            )?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(Silence {
                        id: r.get(0)?,
                        matcher: Matcher {
                            cluster_key: r.get(1)?,
                            client_id: r.get(2)?,
                            kind: r.get(3)?,
                        },
                        starts_at: parse_time(&r.get::<_, String>(4)?),
                        ends_at: parse_time(&r.get::<_, String>(5)?),
                        comment: r.get(6)?,
                        created_by: r.get(7)?,
                        created_at: parse_time(&r.get::<_, String>(8)?),
                        expired: r.get::<_, i64>(9)? != 0,
                        provisioned: match (r.get(10)?, r.get(11)?) {
                            (Some(file), Some(name)) => Some(FromFile { file, name }),
                            _ => None,
                        },
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, DbError>(rows)
        })?;
        Ok(Silences {
            db,
            list: RwLock::new(list),
        })
    }

    /// Marks the events an active silence covers at their receipt; says which
    /// are held back from the webhooks.
    pub fn apply(&self, events: &mut [Event]) {
        let list = self.list.read();
        if list.is_empty() {
            return;
        }
        for e in events {
            let at = parse_time(&e.received_at);
            if let Some(s) = list
                .iter()
                .find(|s| !s.expired && s.is_active(at) && s.matcher.matches(e))
            {
                e.data.insert("silenced".into(), s.mark());
            }
        }
    }

    /// Newest first.
    pub fn list(&self, now: DateTime<Utc>) -> Vec<SilenceView> {
        let list = self.list.read();
        list.iter().rev().map(|s| s.view(now)).collect()
    }

    /// Stores a new silence and records `silence.created`.
    pub fn create(
        &self,
        new: NewSilence,
        created_by: &str,
        now: DateTime<Utc>,
        sink: &dyn Recorder,
    ) -> Result<SilenceView, DbError> {
        let s = Silence {
            id: uuid::Uuid::new_v4().to_string(),
            matcher: new.matcher,
            starts_at: new.starts_at,
            ends_at: new.ends_at,
            comment: new.comment,
            created_by: created_by.to_owned(),
            created_at: now,
            expired: false,
            provisioned: None,
        };
        let row = s.clone();
        self.db.write(move |c| {
            c.execute(
                "INSERT INTO silences (id, cluster_key, client_id, kind, starts_at, ends_at, comment, created_by, created_at, expired)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0)",
                params![row.id, row.matcher.cluster_key, row.matcher.client_id, row.matcher.kind,
                    iso(row.starts_at), iso(row.ends_at), row.comment, row.created_by, iso(row.created_at)],
            )?;
            Ok::<_, DbError>(())
        })?;
        let view = s.view(now);
        self.list.write().push(s.clone());
        sink.record(vec![silence_event("silence.created", &s, now)]);
        Ok(view)
    }

    /// The silence of this id, if any.
    pub fn get(&self, id: &str) -> Option<Silence> {
        self.list.read().iter().find(|s| s.id == id).cloned()
    }

    /// Ends a silence now (`DELETE`): the `silences` thread expires it at its
    /// next look. False when there is no such silence or it already ended.
    pub fn end_now(&self, id: &str, now: DateTime<Utc>) -> Result<bool, DbError> {
        let mut list = self.list.write();
        // A provisioned silence is its file's to end.
        let Some(s) = list
            .iter_mut()
            .find(|s| s.id == id && s.provisioned.is_none())
        else {
            return Ok(false);
        };
        if s.expired || s.ends_at <= now {
            return Ok(false);
        }
        s.ends_at = now;
        s.starts_at = s.starts_at.min(now);
        let (id, starts, ends) = (s.id.clone(), iso(s.starts_at), iso(now));
        self.db.write(move |c| {
            c.execute(
                "UPDATE silences SET starts_at = ?2, ends_at = ?3 WHERE id = ?1",
                params![id, starts, ends],
            )?;
            Ok::<_, DbError>(())
        })?;
        Ok(true)
    }

    /// Silences that ended and were not yet expired.
    fn due(&self, now: DateTime<Utc>) -> Vec<Silence> {
        self.list
            .read()
            .iter()
            .filter(|s| !s.expired && s.ends_at <= now)
            .cloned()
            .collect()
    }

    fn mark_expired(&self, id: &str) -> Result<(), DbError> {
        if let Some(s) = self.list.write().iter_mut().find(|s| s.id == id) {
            s.expired = true;
        }
        let id = id.to_owned();
        self.db.write(move |c| {
            c.execute("UPDATE silences SET expired = 1 WHERE id = ?1", [id])?;
            Ok::<_, DbError>(())
        })
    }

    /// The incidents whose events this silence held back.
    fn held_incidents(&self, s: &Silence) -> Result<Vec<String>, DbError> {
        let (id, since) = (s.id.clone(), iso(s.starts_at));
        self.db.read(move |c| {
            let mut stmt = c.prepare(
                "SELECT DISTINCT correlation_id FROM activity
                 WHERE received_at >= ?2 AND kind LIKE 'vrrp.incident_%' AND correlation_id IS NOT NULL
                   AND json_extract(data, '$.silenced.id') = ?1",
            )?;
            let ids = stmt
                .query_map(params![id, since], |r| r.get(0))?
                .collect::<Result<Vec<String>, _>>()?;
            Ok(ids)
        })
    }
}

fn silence_event(kind: &str, s: &Silence, now: DateTime<Utc>) -> Event {
    let mut e = Event::server(
        kind,
        ActivityLevel::Info,
        s.matcher.client_id.clone(),
        json!({ "silence": s.view(now) }),
        now,
    );
    e.correlation_id = Some(s.id.clone());
    e
}

/// What the `silences` thread uses.
pub struct Handles {
    pub silences: Arc<Silences>,
    pub clock: SharedClock,
    pub activity: Arc<dyn Recorder>,
    pub incidents: Arc<dyn OpenIncidents>,
}

/// The `silences` thread: ends silences on the server's clock (looking at least
/// every 500 ms, so a driven clock is noticed).
pub fn run_expiry(h: Handles, shutdown: Shutdown) {
    while !shutdown.is_set() {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = h.clock.utc();
        for s in h.silences.due(now) {
            expire(&h, &s, now);
        }
    }
}

fn expire(h: &Handles, s: &Silence, now: DateTime<Utc>) {
    // Which incidents were held back is read before the expiry is noted: a
    // failure here leaves the silence to be expired at the next look.
    let held = match h.silences.held_incidents(s) {
        Ok(ids) => ids,
        Err(e) => {
            log::error!("Cannot read what silence {} held back: {e}", s.id);
            return;
        }
    };
    if let Err(e) = h.silences.mark_expired(&s.id) {
        log::error!("Cannot note that silence {} ended: {e}", s.id);
        return;
    }
    let mut ended = s.clone();
    ended.expired = true;
    let mut events = vec![silence_event("silence.expired", &ended, now)];
    if !held.is_empty() {
        let note = json!({ "id": s.id, "comment": s.comment, "endedAt": iso(s.ends_at.min(now)) });
        events.extend(h.incidents.still_open(&held, &note, now));
    }
    log::info!(
        "Silence {} ended ({} open incidents delivered)",
        s.id,
        events.len() - 1
    );
    h.activity.record(events);
}
