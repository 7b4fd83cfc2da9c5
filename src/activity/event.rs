//! An activity event and what storing one takes: the [`Event`], the level
//! policy, the insert, the dashboard's texts, the cluster match, and the
//! [`Recorder`] trait through which a recorder reaches the sink.
//!
//! A leaf of `activity`: the sink, the silences and their matcher all build on
//! it, and it names none of them, so the sink can ask the silences about each
//! event while a silence records its own events through a `Recorder`.

use super::messages;
use crate::clock::iso;
use crate::db::{Db, DbError};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde_json::{Map, Value};
use vrrp_protocol::ActivityLevel;

/// Where events go to be stored, broadcast and offered to webhooks: the
/// `ActivitySink`, behind a trait so that the silences (which the sink asks
/// about every event) can record theirs without naming the sink.
pub trait Recorder: Send + Sync {
    /// As `ActivitySink::record`: false when storing failed.
    fn record(&self, events: Vec<Event>) -> bool;
}

/// An event ready to store.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub id: String,
    pub occurred_at: String,
    pub received_at: String,
    pub source: &'static str,
    pub client_id: Option<String>,
    pub kind: String,
    pub level: ActivityLevel,
    pub correlation_id: Option<String>,
    pub subject: Map<String, Value>,
    pub data: Map<String, Value>,
}

impl Event {
    /// An event the server originates now.
    pub fn server(
        kind: &str,
        level: ActivityLevel,
        client_id: Option<String>,
        data: Value,
        now: DateTime<Utc>,
    ) -> Event {
        Event {
            id: uuid::Uuid::new_v4().to_string(),
            occurred_at: iso(now),
            received_at: iso(now),
            source: "server",
            client_id,
            kind: kind.to_owned(),
            level,
            correlation_id: None,
            subject: Map::new(),
            data: match data {
                Value::Object(m) => m,
                _ => Map::new(),
            },
        }
    }

    /// The API's ActivityRecord of this event, its texts not yet composed.
    pub fn record(self, seen: bool) -> ActivityRecord {
        ActivityRecord {
            event: self,
            seen,
            texts: None,
        }
    }
}

/// The API's ActivityRecord: a stored event, whether the asking user has seen
/// it, and once [`with_texts`] ran, its sentence and detail. The texts are
/// composed once per record and shared: the dashboard and every webhook show
/// the same words.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ActivityRecord {
    #[serde(flatten)]
    pub event: Event,
    pub seen: bool,
    #[serde(flatten)]
    pub texts: Option<Texts>,
}

/// What an event says: its sentence, and the supporting detail if any.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Texts {
    pub message: String,
    pub detail: Option<String>,
}

impl ActivityRecord {
    /// The sentence, empty until [`with_texts`] ran.
    pub fn message(&self) -> &str {
        self.texts.as_ref().map_or("", |t| t.message.as_str())
    }

    pub fn detail(&self) -> Option<&str> {
        self.texts.as_ref().and_then(|t| t.detail.as_deref())
    }
}

/// Decides the stored level of a kind, or that it is not recorded at all.
pub trait LevelPolicy: Send + Sync {
    /// `None`: do not record this kind.
    fn level_for(&self, kind: &str, level: ActivityLevel) -> Option<ActivityLevel>;
}

/// Records every kind at the level it came with.
pub struct AsReported;

impl LevelPolicy for AsReported {
    fn level_for(&self, _kind: &str, level: ActivityLevel) -> Option<ActivityLevel> {
        Some(level)
    }
}

/// Stores the events whose ids are new, in one transaction; returns those stored now.
pub fn insert_new(db: &Db, events: Vec<Event>) -> Result<Vec<Event>, DbError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    db.write(move |c| {
        let mut stmt = c.prepare_cached(
            "INSERT INTO activity (id, occurred_at, received_at, source, client_id, kind, level, correlation_id, subject, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (id) DO NOTHING",
        )?;
        let mut stored = Vec::new();
        for e in events {
            let n = stmt.execute(params![
                e.id,
                e.occurred_at,
                e.received_at,
                e.source,
                e.client_id,
                e.kind,
                e.level.as_str(),
                e.correlation_id,
                Value::Object(e.subject.clone()).to_string(),
                Value::Object(e.data.clone()).to_string(),
            ])?;
            if n == 1 {
                stored.push(e);
            }
        }
        Ok(stored)
    })
}

/// Adds `message` and `detail`, composed by [`crate::messages::compose`], to
/// ActivityRecords bound for a dashboard, so the dashboard and webhooks say the
/// same thing. Host names are looked up once for the whole batch.
pub fn with_texts(db: &Db, records: &mut [ActivityRecord]) {
    // Read here rather than through `agents` (which records activity itself, so
    // importing it would close a circle); the name rule is the client's: its
    // display name, else its hostname. Only the batch's own clients are read:
    // reading every client for each event made a fleet's reconnect quadratic
    // (5,000 agents connecting read 25 million rows).
    let ids: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r.event.client_id.as_deref())
        .collect();
    let names: std::collections::HashMap<String, String> = if ids.is_empty() {
        Default::default()
    } else {
        db.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT COALESCE(NULLIF(display_name, ''), hostname, '') FROM clients WHERE id = ?1",
            )?;
            let mut names = std::collections::HashMap::new();
            for id in ids {
                if let Some(name) = stmt
                    .query_row([id], |r| r.get::<_, String>(0))
                    .optional()?
                {
                    names.insert(id.to_owned(), name);
                }
            }
            Ok::<_, DbError>(names)
        })
        .unwrap_or_else(|e| {
            log::warn!("Activity texts without host names: {e}");
            Default::default()
        })
    };
    for record in records {
        let e = &mut record.event;
        let host = e.client_id.as_deref().and_then(|id| names.get(id));
        // The composer reads `Value`s: the maps are moved in and back, not copied.
        let subject = Value::Object(std::mem::take(&mut e.subject));
        let data = Value::Object(std::mem::take(&mut e.data));
        let (message, detail) =
            messages::compose(&e.kind, &subject, &data, host.map(String::as_str));
        if let (Value::Object(subject), Value::Object(data)) = (subject, data) {
            (e.subject, e.data) = (subject, data);
        }
        record.texts = Some(Texts { message, detail });
    }
}

/// Whether a cluster event (its `data.cluster`) is about the cluster with this
/// key (`<site>|<vrid>|<network>`, as the cluster list names it).
pub fn is_about_cluster(data: &Map<String, Value>, key: &str) -> bool {
    // `site|vrid|network`, and for a unicast group `|unicast <address>` after it.
    let mut parts = key.splitn(4, '|');
    let (Some(site), Some(vrid), Some(network), group) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some(c) = data.get("cluster").filter(|c| c.is_object()) else {
        return false;
    };
    // Events carry their cluster's key; older ones only its parts.
    if let Some(own) = c["key"].as_str() {
        return own == key;
    }
    group.is_none()
        && c["site"].as_str().unwrap_or_default() == site
        && c["vrid"].as_i64().map(|v| v.to_string()).as_deref() == Some(vrid)
        && c["networks"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n.as_str() == Some(network)))
}
