//! Change detection: turns two readings into activity events.
//!
//! Pure: `detect(baseline, reading)` returns the events and the next baseline. The
//! baseline is what `keepalived-last.json` holds, so a restart compares with the reading
//! taken before it and a failover while the agent was away is still reported.
//!
//! Event ids are derived from the facts of the event (sha-256), not drawn at random: an
//! event re-derived after a crash (the agent died before its queue reached the disk)
//! carries the same id, and the server's insert-if-absent makes that a no-op.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use vrrp_protocol::{ActivityEvent, ActivityLevel, Reading, TrackedItem, VrrpInstance, VrrpState};

pub const STATE_CHANGED: &str = "vrrp.state_changed";
pub const TRACK_CHANGED: &str = "vrrp.track_changed";
pub const INSTANCE_ADDED: &str = "vrrp.instance_added";
pub const INSTANCE_REMOVED: &str = "vrrp.instance_removed";
pub const KEEPALIVED_STARTED: &str = "keepalived.started";
pub const KEEPALIVED_STOPPED: &str = "keepalived.stopped";
pub const KEEPALIVED_UNREADABLE: &str = "keepalived.unreadable";

/// What the next reading is compared with.
///
/// `reading` is the last reading that could be read (a running keepalived that answered,
/// or no keepalived at all); during an unreadable streak it stays, so the first good
/// reading after the streak is compared with the last good one. `unreadable` says a
/// streak is running, so `keepalived.unreadable` is reported once per streak.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Baseline {
    pub reading: Reading,
    pub unreadable: bool,
    /// keepalived's PID during the unreadable streak (it may differ from `reading.pid`).
    pub unreadable_pid: Option<u32>,
}

/// Level of a state change: `error` into FAULT, `warning` out of MASTER, else `info`.
pub fn state_change_level(from: VrrpState, to: VrrpState) -> ActivityLevel {
    if to == VrrpState::Fault {
        ActivityLevel::Error
    } else if from == VrrpState::Master {
        ActivityLevel::Warning
    } else {
        ActivityLevel::Info
    }
}

/// A UUID-shaped id from the event's identifying facts.
pub fn derive_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x80; // version 8: custom
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    uuid::Uuid::from_bytes(b).to_string()
}

fn subject_of(i: &VrrpInstance) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("instanceName".into(), json!(i.name));
    m.insert("vrid".into(), json!(i.vrid));
    m.insert("interface".into(), json!(i.interface));
    m
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn event(
    id: String,
    occurred_at: &str,
    kind: &str,
    level: ActivityLevel,
    subject: Map<String, Value>,
    data: Value,
) -> ActivityEvent {
    ActivityEvent {
        id,
        occurred_at: occurred_at.to_string(),
        kind: kind.to_string(),
        level,
        correlation_id: None,
        subject,
        data: obj(data),
    }
}

fn pid_str(p: Option<u32>) -> String {
    p.map_or_else(String::new, |p| p.to_string())
}

fn started(prev: &Reading, cur: &Reading) -> ActivityEvent {
    event(
        derive_id(&[KEEPALIVED_STARTED, &pid_str(cur.pid), &prev.collected_at]),
        &cur.collected_at,
        KEEPALIVED_STARTED,
        ActivityLevel::Info,
        Map::new(),
        json!({"pid": cur.pid, "version": cur.version}),
    )
}

fn stopped(prev: &Reading, cur: &Reading, pid: Option<u32>) -> ActivityEvent {
    event(
        derive_id(&[KEEPALIVED_STOPPED, &pid_str(pid), &prev.collected_at]),
        &cur.collected_at,
        KEEPALIVED_STOPPED,
        ActivityLevel::Warning,
        Map::new(),
        json!({"pid": pid, "version": prev.version}),
    )
}

/// What a tracked item's state is shown as: keepalived's word, or for a track file
/// (keepalived prints only its value) the value.
fn shown_state(t: &TrackedItem) -> Value {
    match (&t.status, t.value) {
        (Some(s), _) => json!(s),
        (None, Some(v)) => json!(v),
        (None, None) => Value::Null,
    }
}

/// `vrrp.track_changed` for each item tracked in both readings whose state changed
/// (turned bad or good, or keepalived's word for it changed). Items that come or go
/// with a configuration change report nothing: the instance did not change state.
fn track_events(
    p: &VrrpInstance,
    c: &VrrpInstance,
    prev: &Reading,
    cur: &Reading,
) -> Vec<ActivityEvent> {
    let mut out = Vec::new();
    for t in &c.tracked {
        let Some(was) = p
            .tracked
            .iter()
            .find(|w| w.kind == t.kind && w.name == t.name)
        else {
            continue;
        };
        // A track file's value that moves without turning it bad or good changes the
        // priority, not its state; a status that appears or goes (a text dump missed
        // in JSON mode) is no change either.
        let reworded = was.status.is_some() && t.status.is_some() && was.status != t.status;
        if was.ok == t.ok && !reworded {
            continue;
        }
        let (from, to) = (shown_state(was), shown_state(t));
        let mut data = json!({
            "kind": t.kind.as_str(),
            "name": t.name,
            "from": from,
            "to": to,
            "ok": t.ok,
        });
        if let Some(v) = t.value {
            data["value"] = json!(v);
        }
        if let Some(w) = t.weight {
            data["weight"] = json!(w);
        }
        out.push(event(
            derive_id(&[
                TRACK_CHANGED,
                &c.name,
                t.kind.as_str(),
                &t.name,
                &from.to_string(),
                &to.to_string(),
                &prev.collected_at,
            ]),
            &cur.collected_at,
            TRACK_CHANGED,
            if t.ok {
                ActivityLevel::Info
            } else {
                ActivityLevel::Warning
            },
            subject_of(c),
            data,
        ));
    }
    out
}

/// Compares instances of two readings of the same running keepalived. A tracked item's
/// change comes before the state change it caused.
fn instance_events(prev: &Reading, cur: &Reading, out: &mut Vec<ActivityEvent>) {
    for c in &cur.instances {
        if let Some(p) = prev.instances.iter().find(|p| p.name == c.name) {
            out.extend(track_events(p, c, prev, cur));
        }
        match prev.instances.iter().find(|p| p.name == c.name) {
            Some(p) if p.state != c.state => {
                let at = c
                    .last_transition
                    .clone()
                    .unwrap_or_else(|| cur.collected_at.clone());
                let at_key = c
                    .last_transition
                    .clone()
                    .unwrap_or_else(|| prev.collected_at.clone());
                out.push(event(
                    derive_id(&[
                        STATE_CHANGED,
                        &c.name,
                        p.state.as_str(),
                        c.state.as_str(),
                        &at_key,
                    ]),
                    &at,
                    STATE_CHANGED,
                    state_change_level(p.state, c.state),
                    subject_of(c),
                    {
                        let mut data = json!({
                            "from": p.state,
                            "to": c.state,
                            "priority": c.priority,
                            "effectivePriority": c.effective_priority,
                            "previousPriority": p.priority,
                            "previousEffectivePriority": p.effective_priority,
                        });
                        // Why, as far as the reading tells; the server words it.
                        if c.state == VrrpState::Fault {
                            data["causes"] = json!(c.fault_causes(&cur.sync_groups));
                        }
                        data
                    },
                ));
            }
            Some(_) => {}
            None => out.push(event(
                derive_id(&[
                    INSTANCE_ADDED,
                    &c.name,
                    c.last_transition.as_deref().unwrap_or(""),
                    &prev.collected_at,
                ]),
                &cur.collected_at,
                INSTANCE_ADDED,
                ActivityLevel::Info,
                subject_of(c),
                json!({"state": c.state}),
            )),
        }
    }
    for p in &prev.instances {
        if !cur.instances.iter().any(|c| c.name == p.name) {
            out.push(event(
                derive_id(&[
                    INSTANCE_REMOVED,
                    &p.name,
                    p.last_transition.as_deref().unwrap_or(""),
                    &prev.collected_at,
                ]),
                &cur.collected_at,
                INSTANCE_REMOVED,
                ActivityLevel::Info,
                subject_of(p),
                json!({"state": p.state}),
            ));
        }
    }
}

/// Compares a new reading with the baseline. `None` (a new agent, or a lost last-reading
/// file) reports nothing and starts from this reading.
pub fn detect(base: Option<&Baseline>, cur: &Reading) -> (Vec<ActivityEvent>, Baseline) {
    let mut out = Vec::new();
    let Some(base) = base else {
        return (out, fresh_baseline(cur));
    };
    let prev = &base.reading;
    // PID of the keepalived the baseline last saw running (during an unreadable streak
    // the streak's PID is the newer fact).
    let prev_pid = if base.unreadable {
        base.unreadable_pid
    } else {
        prev.pid
    };
    let prev_running = prev.running || base.unreadable;

    if !cur.running {
        if prev_running {
            out.push(stopped(prev, cur, prev_pid));
        }
        // A stop reports no removed instances.
        return (out, fresh_baseline(cur));
    }

    let same_process = prev_running && prev_pid == cur.pid;
    if !same_process {
        if prev_running {
            out.push(stopped(prev, cur, prev_pid));
        }
        out.push(started(prev, cur));
    }

    if cur.error.is_some() {
        if !(base.unreadable && same_process) {
            out.push(event(
                derive_id(&[KEEPALIVED_UNREADABLE, &pid_str(cur.pid), &prev.collected_at]),
                &cur.collected_at,
                KEEPALIVED_UNREADABLE,
                ActivityLevel::Error,
                Map::new(),
                json!({"error": cur.error}),
            ));
        }
        // Keep the last good reading of this process to compare the next good one with.
        let reading = if same_process && prev.readable() {
            prev.clone()
        } else {
            cur.clone()
        };
        return (
            out,
            Baseline {
                reading,
                unreadable: true,
                unreadable_pid: cur.pid,
            },
        );
    }

    if same_process && prev.readable() {
        instance_events(prev, cur, &mut out);
    }
    (out, fresh_baseline(cur))
}

fn fresh_baseline(cur: &Reading) -> Baseline {
    Baseline {
        reading: cur.clone(),
        unreadable: cur.running && cur.error.is_some(),
        unreadable_pid: if cur.error.is_some() { cur.pid } else { None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vrrp_protocol::TrackedKind;

    fn inst(name: &str, state: VrrpState, t: &str) -> VrrpInstance {
        VrrpInstance {
            name: name.into(),
            state,
            vrid: Some(51),
            interface: Some("eth0".into()),
            priority: Some(130),
            effective_priority: Some(130),
            last_transition: Some(t.into()),
            ..Default::default()
        }
    }

    fn reading(at: &str, pid: Option<u32>, instances: Vec<VrrpInstance>) -> Reading {
        Reading {
            collected_at: at.into(),
            running: pid.is_some(),
            pid,
            instances,
            ..Default::default()
        }
    }

    fn kinds(ev: &[ActivityEvent]) -> Vec<&str> {
        ev.iter().map(|e| e.kind.as_str()).collect()
    }

    #[test]
    fn first_reading_reports_nothing() {
        let r = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (ev, base) = detect(None, &r);
        assert!(ev.is_empty());
        assert_eq!(base.reading, r);
    }

    #[test]
    fn state_change_levels_and_occurred_at() {
        assert_eq!(
            state_change_level(VrrpState::Backup, VrrpState::Fault),
            ActivityLevel::Error
        );
        assert_eq!(
            state_change_level(VrrpState::Master, VrrpState::Fault),
            ActivityLevel::Error
        );
        assert_eq!(
            state_change_level(VrrpState::Master, VrrpState::Backup),
            ActivityLevel::Warning
        );
        assert_eq!(
            state_change_level(VrrpState::Backup, VrrpState::Master),
            ActivityLevel::Info
        );

        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let b = reading("t2", Some(10), vec![inst("VI_1", VrrpState::Backup, "tb")]);
        let (ev, _) = detect(Some(&base), &b);
        assert_eq!(kinds(&ev), [STATE_CHANGED]);
        assert_eq!(ev[0].occurred_at, "tb");
        assert_eq!(ev[0].level, ActivityLevel::Warning);
        assert_eq!(ev[0].data["from"], "MASTER");
        assert_eq!(ev[0].data["to"], "BACKUP");
        assert_eq!(ev[0].data["priority"], 130);
        assert_eq!(ev[0].subject["instanceName"], "VI_1");
        assert_eq!(ev[0].subject["vrid"], 51);
    }

    #[test]
    fn ids_are_stable_across_rederivation() {
        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let b1 = reading("t2", Some(10), vec![inst("VI_1", VrrpState::Fault, "tb")]);
        let b2 = reading("t3", Some(10), vec![inst("VI_1", VrrpState::Fault, "tb")]);
        let (e1, _) = detect(Some(&base), &b1);
        let (e2, _) = detect(Some(&base), &b2);
        assert_eq!(e1[0].id, e2[0].id);
        // A later, different transition gets another id.
        let b3 = reading("t4", Some(10), vec![inst("VI_1", VrrpState::Fault, "tc")]);
        let (e3, _) = detect(Some(&base), &b3);
        assert_ne!(e1[0].id, e3[0].id);
    }

    #[test]
    fn added_and_removed() {
        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let b = reading("t2", Some(10), vec![inst("VI_2", VrrpState::Backup, "b")]);
        let (ev, _) = detect(Some(&base), &b);
        assert_eq!(kinds(&ev), [INSTANCE_ADDED, INSTANCE_REMOVED]);
        assert_eq!(ev[0].data["state"], "BACKUP");
        assert_eq!(ev[1].subject["instanceName"], "VI_1");
    }

    #[test]
    fn stop_reports_no_removed_and_start_no_added() {
        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let stopped = reading("t2", None, vec![]);
        let (ev, base) = detect(Some(&base), &stopped);
        assert_eq!(kinds(&ev), [KEEPALIVED_STOPPED]);
        assert_eq!(ev[0].level, ActivityLevel::Warning);
        assert_eq!(ev[0].data["pid"], 10);
        let again = reading("t3", Some(11), vec![inst("VI_1", VrrpState::Backup, "c")]);
        let (ev, _) = detect(Some(&base), &again);
        assert_eq!(kinds(&ev), [KEEPALIVED_STARTED]);
        assert_eq!(ev[0].data["pid"], 11);
    }

    #[test]
    fn pid_change_is_stop_then_start() {
        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let b = reading("t2", Some(12), vec![inst("VI_1", VrrpState::Backup, "b")]);
        let (ev, _) = detect(Some(&base), &b);
        assert_eq!(kinds(&ev), [KEEPALIVED_STOPPED, KEEPALIVED_STARTED]);
    }

    #[test]
    fn unreadable_once_per_streak_then_compares_with_last_good() {
        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let mut bad = reading("t2", Some(10), vec![]);
        bad.error = Some("dump never arrived".into());
        let (ev, base) = detect(Some(&base), &bad);
        assert_eq!(kinds(&ev), [KEEPALIVED_UNREADABLE]);
        assert_eq!(ev[0].level, ActivityLevel::Error);
        bad.collected_at = "t3".into();
        let (ev, base) = detect(Some(&base), &bad);
        assert!(
            ev.is_empty(),
            "second unreadable reading of a streak: {ev:?}"
        );
        let good = reading("t4", Some(10), vec![inst("VI_1", VrrpState::Fault, "f")]);
        let (ev, base) = detect(Some(&base), &good);
        assert_eq!(kinds(&ev), [STATE_CHANGED]);
        // A new streak reports again.
        let (ev, _) = detect(Some(&base), &bad);
        assert_eq!(kinds(&ev), [KEEPALIVED_UNREADABLE]);
    }

    #[test]
    fn unchanged_reading_reports_nothing() {
        let a = reading("t1", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        let (_, base) = detect(None, &a);
        let b = reading("t2", Some(10), vec![inst("VI_1", VrrpState::Master, "a")]);
        assert!(detect(Some(&base), &b).0.is_empty());
        let none1 = reading("t1", None, vec![]);
        let (_, base) = detect(None, &none1);
        assert!(detect(Some(&base), &reading("t2", None, vec![]))
            .0
            .is_empty());
    }

    fn item(kind: TrackedKind, name: &str, status: Option<&str>, ok: bool) -> TrackedItem {
        TrackedItem {
            kind,
            name: name.into(),
            status: status.map(str::to_string),
            weight: Some(0),
            ok,
            ..Default::default()
        }
    }

    fn with(mut i: VrrpInstance, tracked: Vec<TrackedItem>) -> VrrpInstance {
        i.tracked = tracked;
        i
    }

    #[test]
    fn a_failing_script_is_reported_before_the_fault_it_causes_and_named_in_it() {
        let good = item(TrackedKind::Script, "chk_lab", Some("GOOD"), true);
        let bad = item(TrackedKind::Script, "chk_lab", Some("BAD"), false);
        let a = reading(
            "t1",
            Some(10),
            vec![with(
                inst("VI_1", VrrpState::Backup, "a"),
                vec![good.clone()],
            )],
        );
        let (_, base) = detect(None, &a);
        let b = reading(
            "t2",
            Some(10),
            vec![with(inst("VI_1", VrrpState::Fault, "f"), vec![bad.clone()])],
        );
        let (ev, base) = detect(Some(&base), &b);
        assert_eq!(kinds(&ev), [TRACK_CHANGED, STATE_CHANGED]);
        assert_eq!(ev[0].level, ActivityLevel::Warning);
        assert_eq!(ev[0].subject["instanceName"], "VI_1");
        assert_eq!(ev[0].subject["vrid"], 51);
        assert_eq!(ev[0].subject["interface"], "eth0");
        assert_eq!(ev[0].occurred_at, "t2");
        assert_eq!(
            Value::Object(ev[0].data.clone()),
            json!({"kind": "script", "name": "chk_lab", "from": "GOOD", "to": "BAD",
                   "ok": false, "weight": 0})
        );
        assert_eq!(ev[1].level, ActivityLevel::Error);
        assert_eq!(
            ev[1].data["causes"],
            json!([{"kind": "script", "name": "chk_lab", "status": "BAD"}])
        );

        // Recovery: the script first, at info; leaving FAULT carries no causes.
        let c = reading(
            "t3",
            Some(10),
            vec![with(inst("VI_1", VrrpState::Backup, "g"), vec![good])],
        );
        let (ev, _) = detect(Some(&base), &c);
        assert_eq!(kinds(&ev), [TRACK_CHANGED, STATE_CHANGED]);
        assert_eq!(ev[0].level, ActivityLevel::Info);
        assert_eq!(
            (&ev[0].data["from"], &ev[0].data["to"]),
            (&json!("BAD"), &json!("GOOD"))
        );
        assert_eq!(ev[0].data["ok"], true);
        assert!(ev[1].data.get("causes").is_none(), "{:?}", ev[1].data);
    }

    #[test]
    fn track_event_ids_are_stable_and_distinct() {
        let a = reading(
            "t1",
            Some(10),
            vec![with(
                inst("VI_1", VrrpState::Master, "a"),
                vec![item(TrackedKind::Interface, "trk0", Some("UP"), true)],
            )],
        );
        let (_, base) = detect(None, &a);
        let down = |at: &str| {
            reading(
                at,
                Some(10),
                vec![with(
                    inst("VI_1", VrrpState::Master, "a"),
                    vec![item(TrackedKind::Interface, "trk0", Some("DOWN"), false)],
                )],
            )
        };
        let (e1, next) = detect(Some(&base), &down("t2"));
        // Re-derived after a crash (a later reading of the same change): same id.
        let (e2, _) = detect(Some(&base), &down("t9"));
        assert_eq!(kinds(&e1), [TRACK_CHANGED]);
        assert_eq!(e1[0].id, e2[0].id);
        // Back up, then down again later: other ids.
        let up = reading("t3", Some(10), a.instances.clone());
        let (e3, next) = detect(Some(&next), &up);
        let (e4, _) = detect(Some(&next), &down("t4"));
        assert_ne!(e1[0].id, e3[0].id);
        assert_ne!(e1[0].id, e4[0].id);
        assert_ne!(e3[0].id, e4[0].id);
    }

    #[test]
    fn what_is_not_a_change_of_state_reports_nothing() {
        let file = |value: i64, ok: bool| TrackedItem {
            kind: TrackedKind::File,
            name: "tf".into(),
            value: Some(value),
            weight: Some(-10),
            ok,
            ..Default::default()
        };
        let at = |t: &str, tracked: Vec<TrackedItem>| {
            reading(
                t,
                Some(10),
                vec![with(inst("VI_1", VrrpState::Master, "a"), tracked)],
            )
        };
        let (_, base) = detect(None, &at("t1", vec![file(1, true)]));
        // A weighted file's value moves: the priority changes, not its state.
        let (ev, base) = detect(Some(&base), &at("t2", vec![file(2, true)]));
        assert!(ev.is_empty(), "{ev:?}");
        // An item that comes or goes with a reload, or a status that appears.
        let script = item(TrackedKind::Script, "s", None, true);
        let (ev, base) = detect(Some(&base), &at("t3", vec![file(2, true), script]));
        assert!(ev.is_empty(), "{ev:?}");
        let seen = item(TrackedKind::Script, "s", Some("GOOD"), true);
        let (ev, base) = detect(Some(&base), &at("t4", vec![file(2, true), seen]));
        assert!(ev.is_empty(), "{ev:?}");
        // Below -253: the file turns bad; its value is shown as its state.
        let (ev, _) = detect(Some(&base), &at("t5", vec![file(30, false)]));
        assert_eq!(kinds(&ev), [TRACK_CHANGED]);
        assert_eq!(
            Value::Object(ev[0].data.clone()),
            json!({"kind": "file", "name": "tf", "from": 2, "to": 30, "ok": false,
                   "value": 30, "weight": -10})
        );
    }

    /// Real keepalived 2.2.7 dumps of h2: trk0 down puts VI_1 in FAULT; in a sync
    /// group the other instance follows with the group as its cause.
    #[test]
    fn real_dumps_give_track_changed_and_causes() {
        use crate::keepalived::parse::parse_data;
        let dump = |text: &str, at: &str| {
            let d = parse_data(text).unwrap();
            Reading {
                collected_at: at.into(),
                running: true,
                pid: Some(7),
                instances: d.instances,
                sync_groups: d.sync_groups,
                ..Default::default()
            }
        };
        let before = dump(
            include_str!("../../tests/fixtures/2.2.7/backup.keepalived.data"),
            "t1",
        );
        let after = dump(
            include_str!(
                "../../tests/fixtures/2.2.7/fault-track-interface-VI_1_backup-VI_2.keepalived.data"
            ),
            "t2",
        );
        let (_, base) = detect(None, &before);
        let (ev, _) = detect(Some(&base), &after);
        assert_eq!(kinds(&ev), [TRACK_CHANGED, STATE_CHANGED]);
        assert_eq!(ev[0].data["name"], "trk0");
        assert_eq!(ev[0].data["kind"], "interface");
        assert_eq!(
            (&ev[0].data["from"], &ev[0].data["to"]),
            (&json!("UP"), &json!("DOWN"))
        );
        assert_eq!(ev[1].data["to"], "FAULT");
        assert_eq!(
            ev[1].data["causes"],
            json!([{"kind": "interface", "name": "trk0", "status": "DOWN"}])
        );

        let before = dump(
            include_str!("../../tests/fixtures/2.2.7/syncgroup-master.keepalived.data"),
            "t1",
        );
        let after = dump(
            include_str!("../../tests/fixtures/2.2.7/syncgroup-fault.keepalived.data"),
            "t2",
        );
        let (_, base) = detect(None, &before);
        let (ev, _) = detect(Some(&base), &after);
        assert_eq!(kinds(&ev), [TRACK_CHANGED, STATE_CHANGED, STATE_CHANGED]);
        assert_eq!(ev[1].subject["instanceName"], "VI_1");
        assert_eq!(ev[2].subject["instanceName"], "VI_2");
        assert_eq!(
            ev[2].data["causes"],
            json!([{"kind": "syncGroup", "name": "SG_1", "status": "FAULT"}])
        );
        // A FAULT with nothing reportable still carries the (empty) list.
        let mut no_cause = after.clone();
        no_cause.sync_groups.clear();
        let (ev, _) = detect(Some(&base), &no_cause);
        assert_eq!(ev[2].data["causes"], json!([]));
    }
}
