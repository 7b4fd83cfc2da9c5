//! The activity list: what happened, on which host, when.
//!
//! Agents report what happens on their host; the server records connection
//! changes, registrations and (later) cluster events. Each event is stored once
//! (its id is the key); seen state is per user. [`LevelPolicy`] is the hook where
//! the `activity_level_overrides` setting will change or drop kinds.

pub mod event;
pub mod messages;
pub mod silences;
pub mod sink;

pub use event::{
    insert_new, is_about_cluster, with_texts, ActivityRecord, AsReported, Event, LevelPolicy,
    Recorder, Texts,
};
pub use sink::{ActivitySink, StoredEvents};

use crate::clock::iso;
use crate::db::{Db, DbError};
use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::Deserialize;
use serde_json::{Map, Value};
use vrrp_protocol::{ActivityEvent, ActivityLevel};

/// What one entry of an agent's batch turned out to be.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Event(Box<Event>),
    /// Does not parse but names its id: acknowledged, never stored.
    Refused {
        id: String,
        why: String,
    },
    /// Does not parse and has no id: dropped.
    Dropped {
        why: String,
    },
}

/// Parses an ACTIVITY payload. `None` when the envelope itself does not parse (no
/// `events` list): the batch is dropped without ack, so the agent offers it again.
/// Each entry is read on its own into `vrrp_protocol::ActivityEvent`, the type
/// the agent writes, so that one entry that does not parse is refused alone.
pub fn parse_batch(payload: &Value, client_id: &str, now: DateTime<Utc>) -> Option<Vec<Incoming>> {
    #[derive(serde::Deserialize)]
    struct Entries {
        events: Vec<Value>,
    }
    let Entries { events } = Entries::deserialize(payload).ok()?;
    Some(
        events
            .into_iter()
            .map(|e| parse_event(e, client_id, now))
            .collect(),
    )
}

fn parse_event(v: Value, client_id: &str, now: DateTime<Utc>) -> Incoming {
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let refuse = |why: String| match &id {
        Some(id) => Incoming::Refused {
            id: id.clone(),
            why,
        },
        None => Incoming::Dropped { why },
    };
    if !v.is_object() {
        return refuse("not an object".into());
    }
    // The protocol type lets every field be absent (and reads an unknown level
    // as info); what the server needs of an event is checked after.
    let e: ActivityEvent = match serde_json::from_value(v) {
        Ok(e) => e,
        Err(err) => return refuse(err.to_string()),
    };
    if e.id.is_empty() {
        return refuse("id: missing".into());
    }
    let occurred_at = match DateTime::parse_from_rfc3339(&e.occurred_at) {
        Ok(t) => iso(t.with_timezone(&Utc)),
        Err(_) => return refuse("occurredAt: not an ISO 8601 timestamp".into()),
    };
    if e.kind.is_empty() {
        return refuse("kind: missing".into());
    }
    let ActivityEvent {
        id,
        kind,
        level,
        correlation_id,
        subject,
        data,
        ..
    } = e;
    Incoming::Event(Box::new(Event {
        id,
        occurred_at,
        received_at: iso(now),
        source: "agent",
        client_id: Some(client_id.to_owned()),
        kind,
        level,
        correlation_id,
        subject,
        data,
    }))
}

/// The activity list, newest first by occurredAt, with `user_id`'s seen state.
pub fn list(db: &Db, user_id: i64) -> Result<Vec<ActivityRecord>, DbError> {
    list_page(db, user_id, &Page::default(), |_| true)
}

/// A slice of the activity list (the dashboard pages it; the spec's
/// unparameterised `GET /api/v1/activity` is `Page::default()`).
#[derive(Debug, Default, Clone)]
pub struct Page {
    /// At most this many records.
    pub limit: Option<usize>,
    /// Only records after this one in the list's order (older); an unknown id
    /// gives an empty page.
    pub before: Option<String>,
    /// Only these levels (empty: all).
    pub levels: Vec<ActivityLevel>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<String>,
    /// Only the events of these correlation ids (incidents), when not empty.
    pub correlation_ids: Vec<String>,
    /// Only records the user has not seen.
    pub unseen: bool,
    /// Only records that occurred at or after this ISO 8601 time.
    pub since: Option<String>,
    /// Only cluster events that may be about the cluster with this key, found
    /// through `activity_clusters`; [`is_about_cluster`] still has the last word.
    pub cluster: Option<String>,
}

impl Page {
    /// The WHERE conditions of the page (after `WHERE 1`) and their arguments;
    /// `?1` is the user, `a` the activity row, `s` its seen row.
    fn sql_filter(&self, user_id: i64) -> (String, Vec<rusqlite::types::Value>) {
        let mut sql = String::new();
        let mut args: Vec<rusqlite::types::Value> = vec![user_id.into()];
        let mut any_of = |sql: &mut String, column: &str, values: Vec<String>| {
            if values.is_empty() {
                return;
            }
            let mut marks = Vec::new();
            for v in values {
                args.push(v.into());
                marks.push(format!("?{}", args.len()));
            }
            sql.push_str(&format!(" AND {column} IN ({})", marks.join(",")));
        };
        any_of(
            &mut sql,
            "a.level",
            self.levels.iter().map(|l| l.as_str().to_owned()).collect(),
        );
        any_of(&mut sql, "a.kind", self.kinds.clone());
        any_of(&mut sql, "a.correlation_id", self.correlation_ids.clone());
        if let Some(before) = &self.before {
            args.push(before.clone().into());
            sql.push_str(&format!(
                " AND (a.occurred_at, a.received_at, a.id) <
                 (SELECT occurred_at, received_at, id FROM activity WHERE id = ?{})",
                args.len()
            ));
        }
        if let Some(since) = &self.since {
            args.push(since.clone().into());
            sql.push_str(&format!(" AND a.occurred_at >= ?{}", args.len()));
        }
        if self.unseen {
            sql.push_str(" AND s.user_id IS NULL");
        }
        if let Some(key) = &self.cluster {
            // The index knows site, VRID and network; a unicast group's key has
            // more after them, which `is_about_cluster` checks on each record.
            let mut parts = key.splitn(4, '|');
            match (
                parts.next(),
                parts.next().map(str::parse::<i64>),
                parts.next(),
            ) {
                (Some(site), Some(Ok(vrid)), Some(network)) => {
                    args.push(site.to_owned().into());
                    args.push(vrid.into());
                    args.push(network.to_owned().into());
                    let n = args.len();
                    sql.push_str(&format!(
                        " AND a.id IN (SELECT activity_id FROM activity_clusters
                           WHERE site = ?{} AND vrid = ?{} AND network = ?{n})",
                        n - 2,
                        n - 1
                    ));
                }
                // No cluster has such a key, so no event is about it.
                _ => sql.push_str(" AND 0"),
            }
        }
        (sql, args)
    }
}

/// How many records `page` matches (its `limit` aside): the dashboard's unseen
/// counter asks this instead of fetching the records.
pub fn count(db: &Db, user_id: i64, page: &Page) -> Result<i64, DbError> {
    db.read(|c| {
        let (filter, args) = page.sql_filter(user_id);
        let sql = format!(
            "SELECT COUNT(*) FROM activity a
             LEFT JOIN activity_seen s ON s.activity_id = a.id AND s.user_id = ?1 WHERE 1{filter}"
        );
        Ok(c.query_row(&sql, rusqlite::params_from_iter(args), |r| r.get(0))?)
    })
}

/// [`list`] narrowed by `page`, and by `keep` for what SQL cannot judge (text
/// composed from the record, the cluster it names). `keep` sees the record
/// without its `seen` flag's influence on order.
pub fn list_page(
    db: &Db,
    user_id: i64,
    page: &Page,
    mut keep: impl FnMut(&ActivityRecord) -> bool,
) -> Result<Vec<ActivityRecord>, DbError> {
    db.read(|c| {
        let (filter, args) = page.sql_filter(user_id);
        let mut sql = format!(
            "SELECT a.*, s.user_id IS NOT NULL AS seen FROM activity a
             LEFT JOIN activity_seen s ON s.activity_id = a.id AND s.user_id = ?1 WHERE 1{filter}"
        );
        sql.push_str(" ORDER BY a.occurred_at DESC, a.received_at DESC, a.id DESC");
        let mut stmt = c.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            let obj = |col: &str| -> rusqlite::Result<Map<String, Value>> {
                let text: String = r.get(col)?;
                Ok(serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default())
            };
            let level: String = r.get("level")?;
            let source: String = r.get("source")?;
            let e = Event {
                id: r.get("id")?,
                occurred_at: r.get("occurred_at")?,
                received_at: r.get("received_at")?,
                source: if source == "server" {
                    "server"
                } else {
                    "agent"
                },
                client_id: r.get("client_id")?,
                kind: r.get("kind")?,
                level: serde_json::from_value(Value::String(level)).unwrap_or_default(),
                correlation_id: r.get("correlation_id")?,
                subject: obj("subject")?,
                data: obj("data")?,
            };
            Ok(e.record(r.get("seen")?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let record = row?;
            if keep(&record) {
                out.push(record);
                if page.limit.is_some_and(|n| out.len() >= n) {
                    break;
                }
            }
        }
        Ok(out)
    })
}

/// Marks events seen for a user; returns the ids that turned seen now (unknown and
/// already-seen ids are skipped).
pub fn mark_seen(db: &Db, user_id: i64, ids: Vec<String>) -> Result<Vec<String>, DbError> {
    db.write(move |c| {
        let mut stmt = c.prepare_cached(
            "INSERT INTO activity_seen (activity_id, user_id) SELECT id, ?2 FROM activity WHERE id = ?1
             ON CONFLICT DO NOTHING",
        )?;
        let mut turned = Vec::new();
        for id in ids {
            if stmt.execute(params![id, user_id])? == 1 {
                turned.push(id);
            }
        }
        Ok(turned)
    })
}

pub fn delete_all(db: &Db) -> Result<(), DbError> {
    db.write(|c| {
        c.execute("DELETE FROM activity", [])?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap()
    }

    #[test]
    fn envelope_and_events_are_parsed_apart() {
        assert!(parse_batch(&json!({"evts": []}), "c", now()).is_none());
        assert!(parse_batch(&json!({"events": {}}), "c", now()).is_none());
        let parsed = parse_batch(
            &json!({"events": [
                {"id": "a", "occurredAt": "2026-11-21T08:00:00+01:00", "kind": "vrrp.state_changed", "level": "loud",
                 "subject": {"instanceName": "VI_1"}, "data": {"to": "FAULT"}, "source": "server", "clientId": "forged"},
                {"id": "b", "occurredAt": "yesterday", "kind": "x"},
                {"occurredAt": "2026-11-21T08:00:00Z", "kind": "x"},
                {"id": "c", "occurredAt": "2026-11-21T08:00:00Z", "kind": "x", "data": [1]},
                "not an object"
            ]}),
            "client-1",
            now(),
        )
        .unwrap();
        let Incoming::Event(e) = &parsed[0] else {
            panic!("{:?}", parsed[0])
        };
        assert_eq!(
            e.occurred_at, "2026-11-21T07:00:00.000Z",
            "normalised to UTC so the list orders by time"
        );
        assert_eq!(e.level, ActivityLevel::Info, "unknown level reads as info");
        assert_eq!(
            (e.source, e.client_id.as_deref()),
            ("agent", Some("client-1")),
            "taken from the connection"
        );
        assert_eq!(e.subject["instanceName"], "VI_1");
        assert!(matches!(&parsed[1], Incoming::Refused { id, .. } if id == "b"));
        assert!(matches!(&parsed[2], Incoming::Dropped { .. }));
        assert!(matches!(&parsed[3], Incoming::Refused { id, .. } if id == "c"));
        assert!(matches!(&parsed[4], Incoming::Dropped { .. }));
    }

    #[test]
    fn a_cluster_event_is_about_the_cluster_its_key_names() {
        let data = |record: &Value| record["data"].as_object().cloned().unwrap();
        let record = json!({ "data": { "cluster": { "site": "dc-1", "vrid": 51,
            "networks": ["10.0.0.0/24", "10.0.1.0/24"] } } });
        assert!(is_about_cluster(&data(&record), "dc-1|51|10.0.1.0/24"));
        assert!(!is_about_cluster(&data(&record), "dc-2|51|10.0.1.0/24"));
        assert!(!is_about_cluster(&data(&record), "dc-1|52|10.0.1.0/24"));
        assert!(!is_about_cluster(&data(&record), "dc-1|51|10.0.2.0/24"));
        assert!(!is_about_cluster(&data(&record), "not a key"));
        // No site is the empty site; events without a cluster are about none.
        let siteless = json!({ "data": { "cluster": { "site": null, "vrid": 7, "networks": ["192.0.2.0/24"] } } });
        assert!(is_about_cluster(&data(&siteless), "|7|192.0.2.0/24"));
        assert!(!is_about_cluster(
            &data(&json!({ "data": {} })),
            "|7|192.0.2.0/24"
        ));
        // Two unicast groups on one VRID and network: events name their own key.
        let group = |src: &str| {
            json!({ "data": { "cluster": { "key": format!("|51|192.0.2.0/24|unicast {src}"),
                "site": null, "vrid": 51, "networks": ["192.0.2.0/24"] } } })
        };
        let (a, b) = (group("192.0.2.11"), group("192.0.2.13"));
        assert!(is_about_cluster(
            &data(&a),
            "|51|192.0.2.0/24|unicast 192.0.2.11"
        ));
        assert!(!is_about_cluster(
            &data(&b),
            "|51|192.0.2.0/24|unicast 192.0.2.11"
        ));
        assert!(
            !is_about_cluster(&data(&a), "|51|192.0.2.0/24"),
            "another cluster's key"
        );
        // An event from before keys were recorded is about no unicast group.
        assert!(!is_about_cluster(
            &data(&siteless),
            "|7|192.0.2.0/24|unicast 192.0.2.11"
        ));
    }

    #[test]
    fn texts_name_each_records_own_host_and_leave_unknown_ones_unnamed() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _writer) = Db::open(&dir.path().join("a.db"), "now").unwrap();
        db.write(|c| {
            c.execute_batch(
                "INSERT INTO clients (id, connection_mode, created_at, hostname, display_name)
                   VALUES ('c1', 'inbound', 'now', 'lb-1.example', 'edge A'),
                          ('c2', 'inbound', 'now', 'lb-2.example', ''),
                          ('c3', 'inbound', 'now', 'lb-3.example', NULL)",
            )?;
            Ok::<_, DbError>(())
        })
        .unwrap();
        let record = |client: Option<&str>| {
            let mut e = Event::server(
                "keepalived.started",
                ActivityLevel::Info,
                None,
                json!({}),
                Utc::now(),
            );
            e.client_id = client.map(str::to_owned);
            e.record(false)
        };
        let mut records = vec![
            record(Some("c1")),
            record(Some("c2")),
            record(Some("c1")),
            record(Some("gone")),
            record(None),
        ];
        with_texts(&db, &mut records);
        let messages: Vec<&str> = records.iter().map(ActivityRecord::message).collect();
        assert_eq!(messages[0], "keepalived started on edge A.");
        assert_eq!(
            messages[1], "keepalived started on lb-2.example.",
            "an empty display name falls back to the hostname"
        );
        assert_eq!(messages[2], messages[0]);
        assert_eq!(messages[3], "keepalived started.");
        assert_eq!(messages[4], "keepalived started.");
    }
}
