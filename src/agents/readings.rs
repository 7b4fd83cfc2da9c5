//! The last keepalived reading of every client.
//!
//! A reading is parsed once, at the socket, into the protocol's typed
//! [`Reading`] ([`parse`]: its shape checked, the state words this build knows
//! rewritten, unknown fields kept in its `extra` maps); it is stored as that
//! reading serialises, and parsed again when read out, so a stored reading from
//! another build reads the same way. Also keeps each client's last-known instances.
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
pub use vrrp_protocol::Reading;
use vrrp_protocol::{kind, VrrpInstance, VrrpState};

/// Why a reading was discarded: the first field of the wrong shape.
#[derive(Debug, PartialEq)]
pub struct Malformed(pub String);

/// The shape the spec requires before a reading is stored. The typed parse that
/// follows is lenient (a known field of the wrong type reads as absent, see
/// `vrrp_protocol`), so what makes a reading malformed is checked here, on the
/// parsed JSON, without copying it.
fn check_shape(obj: &Map<String, Value>) -> Result<(), Malformed> {
    if !obj.get("running").is_some_and(Value::is_boolean) {
        return Err(Malformed("running: not true or false".into()));
    }
    if !obj.get("collectedAt").is_some_and(Value::is_string) {
        return Err(Malformed("collectedAt: not a string".into()));
    }
    for list in ["instances", "syncGroups"] {
        let items = match obj.get(list) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(items)) => items,
            Some(_) => return Err(Malformed(format!("{list}: not a list"))),
        };
        for (i, item) in items.iter().enumerate() {
            let Some(item) = item.as_object() else {
                return Err(Malformed(format!("{list}[{i}]: not an object")));
            };
            if list != "instances" {
                continue;
            }
            if !item.get("name").is_some_and(Value::is_string) {
                return Err(Malformed(format!("{list}[{i}].name: not a string")));
            }
            if item.get("vips").is_some_and(|v| !v.is_array()) {
                return Err(Malformed(format!("{list}[{i}].vips: not a list")));
            }
            check_sizes(item, &format!("{list}[{i}]"))?;
        }
    }
    // The drain's reason and who: text an operator reads, bounded like the rest.
    match obj.get("drain") {
        None | Some(Value::Null) => {}
        Some(Value::Object(drain)) => check_sizes(drain, "drain")?,
        Some(_) => return Err(Malformed("drain: not an object".into())),
    }
    Ok(())
}

/// The longest text an instance's field may hold, in characters: keepalived's
/// names and addresses are far shorter; a megabyte of one is hostile or broken.
const MAX_FIELD_CHARS: usize = 1024;
/// The most entries an instance's list may hold (addresses, unicast peers).
const MAX_LIST_ENTRIES: usize = 4096;

/// Bounds on what one instance can make the server hold and compare: every
/// text field, and every list of texts with its entries. A reading beyond them
/// is refused whole (the stored one stays), with the field and the limit.
fn check_sizes(item: &Map<String, Value>, at: &str) -> Result<(), Malformed> {
    for (key, value) in item {
        match value {
            Value::String(text) if text.chars().count() > MAX_FIELD_CHARS => {
                return Err(Malformed(format!(
                    "{at}.{key}: {} characters, at most {MAX_FIELD_CHARS}",
                    text.chars().count()
                )));
            }
            Value::Array(entries) if entries.iter().all(Value::is_string) => {
                if entries.len() > MAX_LIST_ENTRIES {
                    return Err(Malformed(format!(
                        "{at}.{key}: {} entries, at most {MAX_LIST_ENTRIES}",
                        entries.len()
                    )));
                }
                if let Some((j, long)) = entries.iter().enumerate().find_map(|(j, e)| {
                    e.as_str()
                        .filter(|t| t.chars().count() > MAX_FIELD_CHARS)
                        .map(|t| (j, t.chars().count()))
                }) {
                    return Err(Malformed(format!(
                        "{at}.{key}[{j}]: {long} characters, at most {MAX_FIELD_CHARS}"
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Parses an agent's reading once, at the socket: checks its shape, types it
/// (state words this build knows, unknown fields kept in the `extra` maps) and
/// adds the server's fault causes. Fields only the server sets are dropped from
/// what an agent sent. Takes the JSON by value: it is moved, never copied.
pub fn parse(payload: Value) -> Result<Reading, Malformed> {
    let Value::Object(obj) = payload else {
        return Err(Malformed("not an object".into()));
    };
    check_shape(&obj)?;
    let mut reading: Reading =
        serde_json::from_value(Value::Object(obj)).map_err(|e| Malformed(e.to_string()))?;
    reading.client_id = None;
    reading.received_at = None;
    reading.last_known_instances = None;
    add_fault_causes(&mut reading);
    Ok(reading)
}

/// Gives every FAULT instance `faultCauses` (the protocol's [`vrrp_protocol::FaultCause`]s:
/// failing unweighted tracked items, else its sync group in FAULT) and
/// `faultReason` (them in words, or that keepalived reports none), so the
/// evaluator's incident reasons, the cluster list and the dashboard all say
/// why from one rule. Server fields: whatever an agent put there is replaced.
fn add_fault_causes(reading: &mut Reading) {
    let Reading {
        instances,
        sync_groups,
        ..
    } = reading;
    for inst in instances.iter_mut() {
        inst.fault_causes = None;
        inst.fault_reason = None;
        if inst.state != VrrpState::Fault {
            continue;
        }
        let causes = inst.fault_causes(sync_groups);
        let words = serde_json::to_value(&causes).unwrap_or_else(|_| Value::Array(Vec::new()));
        inst.fault_reason = Some(fault_reason(&words));
        inst.fault_causes = Some(causes);
    }
}

/// The last-known instances after `reading`: its own when it has any (counters
/// left out); the previous ones while keepalived is stopped or unreadable; none
/// when a running, readable keepalived reports none.
pub fn next_last_known(
    reading: &Reading,
    previous: Option<Vec<VrrpInstance>>,
) -> Option<Vec<VrrpInstance>> {
    if !reading.instances.is_empty() {
        let without_counters = reading
            .instances
            .iter()
            .map(|i| VrrpInstance {
                stats: None,
                ..i.clone()
            })
            .collect();
        return Some(without_counters);
    }
    if reading.readable() {
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
) -> Option<Reading> {
    let stored: Value = serde_json::from_str(payload).ok()?;
    let reading = match parse(stored) {
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
    by_client: HashMap<String, (u64, Arc<Reading>)>,
    deleted: HashSet<String>,
}

impl Latest {
    /// The mirror of what the database holds now.
    pub fn load(db: &Db) -> Result<Latest, DbError> {
        let latest = Latest::default();
        {
            let mut inner = latest.inner.write();
            for reading in list(db)? {
                if let Some(id) = reading.client_id.clone() {
                    inner.by_client.insert(id, (0, Arc::new(reading)));
                }
            }
        }
        Ok(latest)
    }

    /// Every reading, ordered by client id.
    pub fn list(&self) -> Vec<Arc<Reading>> {
        let inner = self.inner.read();
        let mut ids: Vec<&String> = inner.by_client.keys().collect();
        ids.sort();
        ids.into_iter()
            .map(|id| inner.by_client[id].1.clone())
            .collect()
    }

    pub fn get(&self, client_id: &str) -> Option<Arc<Reading>> {
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

    /// Stores a parsed reading as the client's one reading; returns it as the
    /// API shows it. `None` when the client no longer exists.
    ///
    /// Every reading of the fleet passes the one writer thread, so only what
    /// needs the database happens there: the JSON is written, and the API's
    /// value built, on the caller's thread.
    pub fn store(
        &self,
        db: &Db,
        client_id: String,
        reading: Reading,
        received_at: String,
    ) -> Result<Option<Arc<Reading>>, DbError> {
        Ok(self
            .store_with_update(db, client_id, reading, received_at)?
            .map(|(reading, _)| reading))
    }

    /// As [`Latest::store`], with the reading's KEEPALIVED_STATE_UPDATE for
    /// the dashboards, made from the JSON written for the row rather than by
    /// writing the whole reading a second time.
    pub fn store_with_update(
        &self,
        db: &Db,
        client_id: String,
        reading: Reading,
        received_at: String,
    ) -> Result<Option<Stored>, DbError> {
        let sequence = self.sequence.clone();
        let payload = serde_json::to_string(&reading).unwrap_or_default();
        // The row's JSON is the API's but for the server's fields.
        let agents_fields_only = reading.client_id.is_none()
            && reading.received_at.is_none()
            && reading.last_known_instances.is_none();
        // Known without the stored row unless keepalived is down or unreadable.
        let last_known = match next_last_known(&reading, None) {
            Some(own) => Known::Now(
                serde_json::to_string(&vrrp_protocol::instances_without_counters(&own)).ok(),
            ),
            None if reading.readable() => Known::Now(None),
            None => Known::Previous,
        };
        let row = (client_id.clone(), received_at.clone());
        let stored = db.write(move |c| {
            let stored = store_row(c, &row.0, &row.1, &payload, last_known)?;
            Ok::<_, DbError>(
                stored.map(|k| (sequence.fetch_add(1, Ordering::Relaxed) + 1, k, payload)),
            )
        })?;
        let Some((seq, last_known, payload)) = stored else {
            return Ok(None);
        };
        let reading = Arc::new(api_value(client_id, received_at, reading, last_known));
        self.put(seq, reading.clone());
        let spliced = (agents_fields_only && reading.last_known_instances.is_none())
            .then(|| {
                update_message(
                    &payload,
                    reading.client_id.as_deref()?,
                    reading.received_at.as_deref()?,
                )
            })
            .flatten();
        let message = match spliced {
            Some(text) => text.into(),
            None => crate::live::envelope_of(kind::KEEPALIVED_STATE_UPDATE, &*reading),
        };
        Ok(Some((reading, message)))
    }

    /// Takes a committed reading unless a later write or the client's deletion
    /// got there first.
    fn put(&self, seq: u64, reading: Arc<Reading>) {
        let Some(id) = reading.client_id.as_deref() else {
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

/// A stored reading's KEEPALIVED_STATE_UPDATE from `payload`, the JSON of
/// the reading without the server's fields: the API's value writes `clientId`
/// and `receivedAt` first, then the same fields in the same order, as long as
/// it has no `lastKnownInstances` (the caller's to check). The text is the one
/// the envelope of the whole reading would be.
fn update_message(payload: &str, client_id: &str, received_at: &str) -> Option<String> {
    let rest = payload.strip_prefix('{')?;
    if !rest.starts_with('"') {
        return None;
    }
    let kind = serde_json::to_string(kind::KEEPALIVED_STATE_UPDATE).ok()?;
    let id = serde_json::to_string(client_id).ok()?;
    let at = serde_json::to_string(received_at).ok()?;
    let mut text = String::with_capacity(payload.len() + kind.len() + id.len() + at.len() + 48);
    for part in [
        r#"{"type":"#,
        &kind,
        r#","payload":{"clientId":"#,
        &id,
        r#","receivedAt":"#,
        &at,
        ",",
        rest,
        "}",
    ] {
        text.push_str(part);
    }
    Some(text)
}

/// A stored reading as the API shows it, and its KEEPALIVED_STATE_UPDATE.
pub type Stored = (Arc<Reading>, Arc<str>);

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

/// The API's KeepalivedState of a parsed reading and its last-known instances:
/// the server's fields set (they serialise first and last, as the API has them).
fn api_value(
    client_id: String,
    received_at: String,
    mut reading: Reading,
    last_known: Option<String>,
) -> Reading {
    if reading.instances.is_empty() && !reading.readable() {
        reading.last_known_instances =
            last_known.and_then(|k| serde_json::from_str::<Vec<VrrpInstance>>(&k).ok());
    }
    reading.client_id = Some(client_id);
    reading.received_at = Some(received_at);
    reading
}

/// Every stored reading, read out of the table (the mirror's start).
fn list(db: &Db) -> Result<Vec<Reading>, DbError> {
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
    fn parse_keeps_unknown_fields_and_fixes_states() {
        let r = parse(json!({
            "clientId": "forged", "collectedAt": "t", "running": true, "futureField": {"a": 1},
            "instances": [{"name": "VI_1", "state": "BECOMING_MASTER", "wantedState": 2, "vrid": 51, "newThing": true}],
            "syncGroups": [{"name": "SG", "state": "master", "instances": ["VI_1"]}]
        }))
        .unwrap();
        assert!(r.client_id.is_none(), "server fields are the server's");
        let r = serde_json::to_value(&r).unwrap();
        assert!(r.get("clientId").is_none());
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
        let r = parse(json!({
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
        let r = serde_json::to_value(&r).unwrap();
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
    fn oversized_fields_and_lists_are_refused_with_the_field_and_the_limit() {
        let reading = |inst: Value| json!({ "running": true, "collectedAt": "2026-11-29T10:00:00.000Z", "instances": [inst] });
        let peers: Vec<String> = (0..10_000)
            .map(|i| format!("10.0.{}.{}", i / 256, i % 256))
            .collect();
        let err = parse(reading(json!({ "name": "VI_1", "unicastPeers": peers }))).unwrap_err();
        assert_eq!(
            err.0,
            "instances[0].unicastPeers: 10000 entries, at most 4096"
        );
        let err = parse(reading(
            json!({ "name": "VI_1", "masterRouter": "x".repeat(1 << 20) }),
        ))
        .unwrap_err();
        assert_eq!(
            err.0,
            "instances[0].masterRouter: 1048576 characters, at most 1024"
        );
        let err = parse(reading(
            json!({ "name": "VI_1", "vips": ["192.0.2.1/24", "y".repeat(2000)] }),
        ))
        .unwrap_err();
        assert_eq!(err.0, "instances[0].vips[1]: 2000 characters, at most 1024");
        let ok = parse(reading(
            json!({ "name": "VI_1", "unicastPeers": ["192.0.2.12"], "sourceAddress": "192.0.2.11" }),
        ));
        assert!(ok.is_ok(), "{ok:?}");
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
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn last_known_instances_rules() {
        let with = parse(json!({"collectedAt": "t", "running": true, "instances": [{"name": "VI_1", "state": "MASTER", "stats": {"x": 1}}]})).unwrap();
        let known = next_last_known(&with, None).unwrap();
        assert_eq!(known[0].name, "VI_1");
        assert!(known[0].stats.is_none(), "counters are left out");
        let json = vrrp_protocol::instances_without_counters(&known);
        assert!(json[0].get("stats").is_none(), "counters are left out");
        let stopped = parse(json!({"collectedAt": "t", "running": false})).unwrap();
        assert_eq!(
            next_last_known(&stopped, Some(known.clone())),
            Some(known.clone())
        );
        let unreadable =
            parse(json!({"collectedAt": "t", "running": true, "error": "no CAP_KILL"})).unwrap();
        assert_eq!(
            next_last_known(&unreadable, Some(known.clone())),
            Some(known.clone())
        );
        let empty = parse(json!({"collectedAt": "t", "running": true})).unwrap();
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

    fn reading(collected: &str) -> Reading {
        parse(json!({ "running": true, "collectedAt": collected })).unwrap()
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
        assert_eq!(stored.collected_at, "t1");
        assert_eq!(latest.get("c1").unwrap().received_at.as_deref(), Some("r1"));
        assert!(latest
            .store(&db, "gone".into(), reading("t1"), "r1".into())
            .unwrap()
            .is_none());
        assert_eq!(latest.list().len(), 1);
        let reloaded = Latest::load(&db).unwrap();
        assert_eq!(reloaded.get("c1"), latest.get("c1"));
    }

    #[test]
    fn a_newer_agents_fields_survive_storage_the_mirror_and_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_client(dir.path(), "c1");
        let latest = Latest::load(&db).unwrap();
        let sent = json!({
            "collectedAt": "t", "running": true, "pid": 7, "version": "2.3.1", "source": "data",
            "error": null, "futureTop": {"a": [1, null]},
            "instances": [{"name": "VI_1", "state": "MASTER", "vrid": 51, "vips": ["192.0.2.1/24"],
                           "futureInstance": "x",
                           "tracked": [{"kind": "script", "name": "chk", "ok": true, "futureItem": 2}]}],
            "syncGroups": [{"name": "SG", "state": "MASTER", "instances": ["VI_1"], "futureGroup": true}]
        });
        let check = |r: &Reading| {
            let v = serde_json::to_value(r).unwrap();
            assert_eq!(v["futureTop"], json!({"a": [1, null]}));
            assert_eq!(v["instances"][0]["futureInstance"], "x");
            assert_eq!(v["instances"][0]["tracked"][0]["futureItem"], 2);
            assert_eq!(v["syncGroups"][0]["futureGroup"], true);
            assert_eq!(v["clientId"], "c1");
        };
        let stored = latest
            .store(&db, "c1".into(), parse(sent).unwrap(), "r1".into())
            .unwrap()
            .unwrap();
        check(&stored);
        let payload: String = db
            .read(|c| {
                c.query_row("SELECT payload FROM keepalived_states", [], |r| r.get(0))
                    .map_err(DbError::from)
            })
            .unwrap();
        let payload: Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(payload["futureTop"], json!({"a": [1, null]}));
        assert!(
            payload.get("clientId").is_none(),
            "the row holds the agent's reading"
        );
        check(&Latest::load(&db).unwrap().get("c1").unwrap());
    }

    #[test]
    fn the_update_message_is_the_envelope_of_the_stored_reading() {
        let dir = tempfile::tempdir().unwrap();
        let db = db_with_client(dir.path(), "c\"1");
        let latest = Latest::load(&db).unwrap();
        let readings = [
            json!({ "running": true, "collectedAt": "t1" }),
            json!({ "collectedAt": "t2", "running": true, "pid": 7, "futureTop": {"a": [1, null]},
                    "drain": {"drained": true, "reason": "x\u{e9}\"y"},
                    "instances": [{"name": "VI_1", "state": "FAULT", "vrid": 51, "vips": ["192.0.2.1/24"],
                                   "stats": {"x": 1}, "futureInstance": "x"}],
                    "syncGroups": [{"name": "SG", "state": "MASTER", "instances": ["VI_1"]}] }),
            // Stopped: the last-known instances go in, so the message is written whole.
            json!({ "running": false, "collectedAt": "t3" }),
            json!({ "running": true, "collectedAt": "t4", "error": "no CAP_KILL" }),
        ];
        for (i, sent) in readings.into_iter().enumerate() {
            let (stored, message) = latest
                .store_with_update(&db, "c\"1".into(), parse(sent).unwrap(), format!("r{i}"))
                .unwrap()
                .unwrap();
            assert_eq!(
                &*message,
                &*crate::live::envelope_of(kind::KEEPALIVED_STATE_UPDATE, &*stored),
                "reading {i}"
            );
        }
        assert!(latest.get("c\"1").unwrap().last_known_instances.is_some());
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
            Arc::new(Reading {
                client_id: Some("c1".into()),
                collected_at: "t1".into(),
                ..Default::default()
            }),
        );
        assert_eq!(latest.get("c1").unwrap().collected_at, "t2");
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
