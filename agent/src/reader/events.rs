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
use vrrp_protocol::{ActivityEvent, ActivityLevel, Reading, VrrpInstance, VrrpState};

pub const STATE_CHANGED: &str = "vrrp.state_changed";
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

/// Compares instances of two readings of the same running keepalived.
fn instance_events(prev: &Reading, cur: &Reading, out: &mut Vec<ActivityEvent>) {
    for c in &cur.instances {
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
                    json!({
                        "from": p.state,
                        "to": c.state,
                        "priority": c.priority,
                        "effectivePriority": c.effective_priority,
                        "previousPriority": p.priority,
                        "previousEffectivePriority": p.effective_priority,
                    }),
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
}
