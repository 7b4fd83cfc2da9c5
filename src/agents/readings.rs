//! The last keepalived reading of every client.
//!
//! A reading is stored as received (unknown fields kept) after [`normalise`]
//! checked its shape and rewrote the state words this build knows; it is
//! normalised again when read out, so a stored reading from another build reads
//! the same way. Also keeps each client's last-known instances.
//!
//! [`Latest`] mirrors the table in memory as the API shows it: the lists (states,
//! clusters, the dashboard's first snapshot) are served from there instead of
//! parsing every stored reading per request.

use crate::activity::messages::fault_reason;
use crate::db::{Db, DbError};
use parking_lot::RwLock;
use rusqlite::{params, OptionalExtension};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use vrrp_protocol::{SyncGroup, VrrpInstance, VrrpState};

/// Why a reading was discarded.
#[derive(Debug, PartialEq)]
pub struct Malformed(pub String);

fn state_word(v: &Value) -> Value {
    let state = match v {
        Value::String(s) => VrrpState::from_word(s),
        Value::Number(n) => n.as_i64().map_or(VrrpState::Unknown, VrrpState::from_code),
        _ => VrrpState::Unknown,
    };
    Value::String(state.as_str().to_owned())
}

fn normalise_instance(v: &mut Value, at: &str) -> Result<(), Malformed> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| Malformed(format!("{at}: not an object")))?;
    if !obj.get("name").is_some_and(Value::is_string) {
        return Err(Malformed(format!("{at}.name: not a string")));
    }
    let state = obj.get("state").map_or(Value::Null, state_word);
    obj.insert(
        "state".into(),
        if state.is_null() {
            Value::String("UNKNOWN".into())
        } else {
            state
        },
    );
    if let Some(w) = obj.get_mut("wantedState") {
        if !w.is_null() {
            *w = state_word(w);
        }
    }
    if let Some(vips) = obj.get("vips") {
        if !vips.is_array() {
            return Err(Malformed(format!("{at}.vips: not a list")));
        }
    } else {
        obj.insert("vips".into(), Value::Array(Vec::new()));
    }
    Ok(())
}

/// Checks a reading's shape and rewrites its state words; unknown fields stay.
/// Fields only the server sets are dropped from what an agent sent. Takes the
/// reading by value: it is rewritten in place, never copied.
pub fn normalise(payload: Value) -> Result<Map<String, Value>, Malformed> {
    let Value::Object(mut obj) = payload else {
        return Err(Malformed("not an object".into()));
    };
    for server_field in ["clientId", "receivedAt", "lastKnownInstances"] {
        obj.remove(server_field);
    }
    if !obj.get("running").is_some_and(Value::is_boolean) {
        return Err(Malformed("running: not true or false".into()));
    }
    if !obj.get("collectedAt").is_some_and(Value::is_string) {
        return Err(Malformed("collectedAt: not a string".into()));
    }
    for list in ["instances", "syncGroups"] {
        match obj.get_mut(list) {
            None | Some(Value::Null) => {
                obj.insert(list.into(), Value::Array(Vec::new()));
            }
            Some(Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let at = format!("{list}[{i}]");
                    if list == "instances" {
                        normalise_instance(item, &at)?;
                    } else {
                        let g = item
                            .as_object_mut()
                            .ok_or_else(|| Malformed(format!("{at}: not an object")))?;
                        let state = g
                            .get("state")
                            .map_or(Value::String("UNKNOWN".into()), state_word);
                        g.insert("state".into(), state);
                    }
                }
            }
            Some(_) => return Err(Malformed(format!("{list}: not a list"))),
        }
    }
    for optional in ["pid", "version", "source", "error"] {
        obj.entry(optional).or_insert(Value::Null);
    }
    add_fault_causes(&mut obj);
    Ok(obj)
}

/// Gives every FAULT instance `faultCauses` (the protocol's [`vrrp_protocol::FaultCause`]s:
/// failing unweighted tracked items, else its sync group in FAULT) and
/// `faultReason` (them in words, or that keepalived reports none), so the
/// evaluator's incident reasons, the cluster list and the dashboard all say
/// why from one rule. Server fields: whatever an agent put there is replaced.
/// Only FAULT instances are parsed, so the common reading costs nothing more.
fn add_fault_causes(reading: &mut Map<String, Value>) {
    let groups: Vec<SyncGroup> = reading
        .get("syncGroups")
        .and_then(Value::as_array)
        .map(|gs| {
            gs.iter()
                .filter_map(|g| serde_json::from_value(g.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    let Some(Value::Array(instances)) = reading.get_mut("instances") else {
        return;
    };
    for inst in instances.iter_mut() {
        let Some(obj) = inst.as_object_mut() else {
            continue;
        };
        obj.remove("faultCauses");
        obj.remove("faultReason");
        if obj.get("state").and_then(Value::as_str) != Some("FAULT") {
            continue;
        }
        // An instance of another shape still reads; it just has no cause to tell.
        let causes = serde_json::from_value::<VrrpInstance>(Value::Object(obj.clone()))
            .map(|i| i.fault_causes(&groups))
            .unwrap_or_default();
        let causes = serde_json::to_value(causes).unwrap_or_else(|_| Value::Array(Vec::new()));
        obj.insert("faultReason".into(), Value::String(fault_reason(&causes)));
        obj.insert("faultCauses".into(), causes);
    }
}

fn instances(reading: &Map<String, Value>) -> &[Value] {
    reading
        .get("instances")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// keepalived ran and could be read (running, no error).
fn readable(reading: &Map<String, Value>) -> bool {
    reading.get("running") == Some(&Value::Bool(true))
        && reading.get("error").is_none_or(Value::is_null)
}

/// The last-known instances after `reading`: its own when it has any (counters
/// left out); the previous ones while keepalived is stopped or unreadable; none
/// when a running, readable keepalived reports none.
pub fn next_last_known(reading: &Map<String, Value>, previous: Option<Value>) -> Option<Value> {
    let current = instances(reading);
    if !current.is_empty() {
        let without_counters = current
            .iter()
            .map(|i| {
                let mut i = i.clone();
                if let Some(o) = i.as_object_mut() {
                    o.remove("stats");
                }
                i
            })
            .collect();
        return Some(Value::Array(without_counters));
    }
    if readable(reading) {
        None
    } else {
        previous
    }
}

/// The API's KeepalivedState of a stored row.
fn read_out(
    client_id: String,
    received_at: String,
    payload: &str,
    last_known: Option<String>,
) -> Option<Value> {
    let stored: Value = serde_json::from_str(payload).ok()?;
    let reading = match normalise(stored) {
        Ok(r) => r,
        Err(e) => {
            log::error!(
                "The stored reading of client {client_id} does not parse ({}); it is left out",
                e.0
            );
            return None;
        }
    };
    Some(api_value(client_id, received_at, reading, last_known))
}

/// Every stored reading as the API shows it, in memory: what the table holds once
/// a write committed (read-your-writes for whoever stored it).
///
/// Writes commit in the writer thread's order, but callers update the mirror from
/// their own threads: each write takes a sequence number inside the writer, and
/// an older one never replaces a newer one. A deleted client's reading is gone
/// for good, even if its last store lands in the mirror after the deletion.
#[derive(Default)]
pub struct Latest {
    sequence: Arc<AtomicU64>,
    inner: RwLock<Mirror>,
}

#[derive(Default)]
struct Mirror {
    by_client: HashMap<String, (u64, Arc<Value>)>,
    deleted: HashSet<String>,
}

impl Latest {
    /// The mirror of what the database holds now.
    pub fn load(db: &Db) -> Result<Latest, DbError> {
        let latest = Latest::default();
        {
            let mut inner = latest.inner.write();
            for reading in list(db)? {
                if let Some(id) = reading.get("clientId").and_then(Value::as_str) {
                    inner
                        .by_client
                        .insert(id.to_owned(), (0, Arc::new(reading)));
                }
            }
        }
        Ok(latest)
    }

    /// Every reading, ordered by client id.
    pub fn list(&self) -> Vec<Arc<Value>> {
        let inner = self.inner.read();
        let mut ids: Vec<&String> = inner.by_client.keys().collect();
        ids.sort();
        ids.into_iter()
            .map(|id| inner.by_client[id].1.clone())
            .collect()
    }

    pub fn get(&self, client_id: &str) -> Option<Arc<Value>> {
        self.inner
            .read()
            .by_client
            .get(client_id)
            .map(|(_, r)| r.clone())
    }

    /// After the client's deletion committed.
    pub fn forget(&self, client_id: &str) {
        let mut inner = self.inner.write();
        inner.by_client.remove(client_id);
        inner.deleted.insert(client_id.to_owned());
    }

    /// Stores a normalised reading as the client's one reading; returns it as the
    /// API shows it. `None` when the client no longer exists.
    ///
    /// Every reading of the fleet passes the one writer thread, so only what
    /// needs the database happens there: the JSON is written, and the API's
    /// value built, on the caller's thread.
    pub fn store(
        &self,
        db: &Db,
        client_id: String,
        reading: Map<String, Value>,
        received_at: String,
    ) -> Result<Option<Arc<Value>>, DbError> {
        let sequence = self.sequence.clone();
        let payload = serde_json::to_string(&reading).unwrap_or_default();
        // Known without the stored row unless keepalived is down or unreadable.
        let last_known = match next_last_known(&reading, None) {
            Some(own) => Known::Now(Some(own.to_string())),
            None if readable(&reading) => Known::Now(None),
            None => Known::Previous,
        };
        let row = (client_id.clone(), received_at.clone());
        let stored = db.write(move |c| {
            let stored = store_row(c, &row.0, &row.1, &payload, last_known)?;
            Ok::<_, DbError>(stored.map(|k| (sequence.fetch_add(1, Ordering::Relaxed) + 1, k)))
        })?;
        let Some((seq, last_known)) = stored else {
            return Ok(None);
        };
        let reading = Arc::new(api_value(client_id, received_at, reading, last_known));
        self.put(seq, reading.clone());
        Ok(Some(reading))
    }

    /// Takes a committed reading unless a later write or the client's deletion
    /// got there first.
    fn put(&self, seq: u64, reading: Arc<Value>) {
        let Some(id) = reading.get("clientId").and_then(Value::as_str) else {
            return;
        };
        let mut inner = self.inner.write();
        let newer = inner.by_client.get(id).is_some_and(|(s, _)| *s > seq);
        if !newer && !inner.deleted.contains(id) {
            inner
                .by_client
                .insert(id.to_owned(), (seq, reading.clone()));
        }
    }
}

/// The last-known instances a reading leaves behind.
enum Known {
    /// Decided by the reading itself (JSON, or none).
    Now(Option<String>),
    /// The previous ones stay (keepalived is down or unreadable).
    Previous,
}

/// Stores a reading's row; returns the last-known instances stored with it, or
/// `None` when the client no longer exists. Statements are cached: this runs
/// for every reading of the fleet on the writer thread.
fn store_row(
    c: &rusqlite::Connection,
    client_id: &str,
    received_at: &str,
    payload: &str,
    known: Known,
) -> Result<Option<Option<String>>, DbError> {
    let exists: bool = c
        .prepare_cached("SELECT EXISTS(SELECT 1 FROM clients WHERE id = ?1)")?
        .query_row([client_id], |r| r.get(0))?;
    if !exists {
        return Ok(None);
    }
    let last_known = match known {
        Known::Now(k) => k,
        Known::Previous => c
            .prepare_cached(
                "SELECT last_known_instances FROM keepalived_states WHERE client_id = ?1",
            )?
            .query_row([client_id], |r| r.get(0))
            .optional()?
            .flatten(),
    };
    c.prepare_cached(
        "INSERT INTO keepalived_states (client_id, received_at, payload, last_known_instances) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (client_id) DO UPDATE SET received_at = ?2, payload = ?3, last_known_instances = ?4",
    )?
    .execute(params![client_id, received_at, payload, last_known])?;
    Ok(Some(last_known))
}

/// The API's KeepalivedState of a normalised reading and its last-known instances.
fn api_value(
    client_id: String,
    received_at: String,
    mut reading: Map<String, Value>,
    last_known: Option<String>,
) -> Value {
    if instances(&reading).is_empty() && !readable(&reading) {
        if let Some(known) = last_known.and_then(|k| serde_json::from_str::<Value>(&k).ok()) {
            reading.insert("lastKnownInstances".into(), known);
        }
    }
    let mut out = Map::new();
    out.insert("clientId".into(), Value::String(client_id));
    out.insert("receivedAt".into(), Value::String(received_at));
    out.extend(reading);
    Value::Object(out)
}

/// Every stored reading, read out of the table (the mirror's start).
fn list(db: &Db) -> Result<Vec<Value>, DbError> {
    db.read(|c| {
        let mut stmt = c.prepare("SELECT client_id, received_at, payload, last_known_instances FROM keepalived_states ORDER BY client_id")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?, r.get(3)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows.into_iter().filter_map(|(id, at, p, lk)| read_out(id, at, &p, lk)).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalise_keeps_unknown_fields_and_fixes_states() {
        let r = normalise(json!({
            "clientId": "forged", "collectedAt": "t", "running": true, "futureField": {"a": 1},
            "instances": [{"name": "VI_1", "state": "BECOMING_MASTER", "wantedState": 2, "vrid": 51, "newThing": true}],
            "syncGroups": [{"name": "SG", "state": "master", "instances": ["VI_1"]}]
        }))
        .unwrap();
        assert!(
            r.get("clientId").is_none(),
            "server fields are the server's"
        );
        assert_eq!(r["futureField"], json!({"a": 1}));
        assert_eq!(r["instances"][0]["state"], "UNKNOWN");
        assert_eq!(r["instances"][0]["wantedState"], "MASTER");
        assert_eq!(r["instances"][0]["newThing"], true);
        assert_eq!(r["instances"][0]["vips"], json!([]));
        assert_eq!(r["syncGroups"][0]["state"], "MASTER");
        assert_eq!(r["pid"], Value::Null);
    }

    #[test]
    fn a_fault_instance_gets_its_causes_from_one_rule() {
        let r = normalise(json!({
            "collectedAt": "t", "running": true,
            "instances": [
                {"name": "VI_1", "state": "FAULT", "faultReason": "forged",
                 "tracked": [{"kind": "script", "name": "chk_lab", "status": "BAD", "ok": false},
                             {"kind": "file", "name": "w", "value": -9, "weight": 1, "ok": false}]},
                {"name": "VI_2", "state": "FAULT", "syncGroup": "SG_1"},
                {"name": "VI_3", "state": "FAULT"},
                {"name": "VI_4", "state": "BACKUP", "faultCauses": ["forged"]}
            ],
            "syncGroups": [{"name": "SG_1", "state": "FAULT", "instances": ["VI_1", "VI_2"]}]
        }))
        .unwrap();
        let i = |n: usize| &r["instances"][n];
        assert_eq!(
            i(0)["faultCauses"],
            json!([{"kind": "script", "name": "chk_lab", "status": "BAD"}]),
            "the weighted file only moves the priority"
        );
        assert_eq!(i(0)["faultReason"], "track script chk_lab failed");
        assert_eq!(i(1)["faultReason"], "sync group SG_1 is in FAULT");
        assert_eq!(i(2)["faultCauses"], json!([]));
        assert_eq!(i(2)["faultReason"], "keepalived reports no cause");
        assert!(
            i(3).get("faultCauses").is_none() && i(3).get("faultReason").is_none(),
            "server fields are the server's, and only a FAULT has causes"
        );
    }

    #[test]
    fn malformed_readings_are_refused() {
        for bad in [
            json!([1]),
            json!({"collectedAt": "t"}),
            json!({"collectedAt": "t", "running": "yes"}),
            json!({"running": true}),
            json!({"collectedAt": "t", "running": true, "instances": {}}),
            json!({"collectedAt": "t", "running": true, "instances": [{"state": "MASTER"}]}),
            json!({"collectedAt": "t", "running": true, "instances": [{"name": "x", "vips": "1.2.3.4"}]}),
        ] {
            assert!(normalise(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn last_known_instances_rules() {
        let with = normalise(json!({"collectedAt": "t", "running": true, "instances": [{"name": "VI_1", "state": "MASTER", "stats": {"x": 1}}]})).unwrap();
        let known = next_last_known(&with, None).unwrap();
        assert_eq!(known[0]["name"], "VI_1");
        assert!(known[0].get("stats").is_none(), "counters are left out");
        let stopped = normalise(json!({"collectedAt": "t", "running": false})).unwrap();
        assert_eq!(
            next_last_known(&stopped, Some(known.clone())),
            Some(known.clone())
        );
        let unreadable =
            normalise(json!({"collectedAt": "t", "running": true, "error": "no CAP_KILL"}))
                .unwrap();
        assert_eq!(
            next_last_known(&unreadable, Some(known.clone())),
            Some(known.clone())
        );
        let empty = normalise(json!({"collectedAt": "t", "running": true})).unwrap();
        assert_eq!(next_last_known(&empty, Some(known)), None);
    }

    fn db_with_client(dir: &std::path::Path, id: &str) -> Db {
        let (db, _writer) = Db::open(&dir.join("r.db"), "now").unwrap();
        let id = id.to_owned();
        db.write(move |c| {
            c.execute(
                "INSERT INTO clients (id, connection_mode, created_at) VALUES (?1, 'inbound', 'now')",
                [id],
            )?;
            Ok::<_, DbError>(())
        })
        .unwrap();
        db
    }

    fn reading(collected: &str) -> Map<String, Value> {
        normalise(json!({ "running": true, "collectedAt": collected })).unwrap()
    }

    #[test]
    fn the_mirror_holds_what_was_stored_and_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_client(dir.path(), "c1");
        let latest = Latest::load(&db).unwrap();
        assert!(latest.get("c1").is_none());
        let stored = latest
            .store(&db, "c1".into(), reading("t1"), "r1".into())
            .unwrap()
            .unwrap();
        assert_eq!(stored["collectedAt"], "t1");
        assert_eq!(latest.get("c1").unwrap()["receivedAt"], "r1");
        assert!(latest
            .store(&db, "gone".into(), reading("t1"), "r1".into())
            .unwrap()
            .is_none());
        assert_eq!(latest.list().len(), 1);
        let reloaded = Latest::load(&db).unwrap();
        assert_eq!(reloaded.get("c1"), latest.get("c1"));
    }

    #[test]
    fn an_older_write_never_replaces_a_newer_one_and_a_deleted_client_stays_gone() {
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_client(dir.path(), "c1");
        let latest = Latest::load(&db).unwrap();
        latest
            .store(&db, "c1".into(), reading("t2"), "r2".into())
            .unwrap();
        // A write that committed earlier but reaches the mirror late.
        latest.put(
            0,
            Arc::new(json!({ "clientId": "c1", "collectedAt": "t1" })),
        );
        assert_eq!(latest.get("c1").unwrap()["collectedAt"], "t2");
        latest.forget("c1");
        latest
            .store(&db, "c1".into(), reading("t3"), "r3".into())
            .unwrap();
        assert!(
            latest.get("c1").is_none(),
            "a deleted client's reading is gone"
        );
    }
}
