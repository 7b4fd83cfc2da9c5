//! A drill against a model of two keepalived hosts on a manual clock: each
//! look at the cluster moves time by 100 ms; the model hands MASTER over a
//! moment after a drain and (with preempt) back after the undrain.

use super::*;
use crate::clock::iso;
use crate::clusters::{group, HostView};
use chrono::TimeZone;
use parking_lot::Mutex;
use serde_json::json;

struct Host {
    id: &'static str,
    state: &'static str,
    transition: DateTime<Utc>,
    drained: bool,
    priority: u32,
}

struct World {
    now: DateTime<Utc>,
    hosts: Vec<Host>,
    /// (when, host index, new state): keepalived's reactions, still to come.
    due: Vec<(DateTime<Utc>, usize, &'static str)>,
    /// How keepalived reacts: the backup takes over this long after a drain
    /// (`None`: never), and the old master comes back this long after the
    /// undrain (`None`: no preempt).
    takeover_after: Option<Duration>,
    return_after: Option<Duration>,
    actions: Vec<(String, String)>,
    saved: usize,
}

struct Fake(Mutex<World>);

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap()
}

impl Fake {
    fn new(takeover_after: Option<i64>, return_after: Option<i64>) -> Fake {
        let host = |id, state, priority| Host {
            id,
            state,
            transition: t0() - Duration::hours(1),
            drained: false,
            priority,
        };
        Fake(Mutex::new(World {
            now: t0(),
            hosts: vec![host("a", "MASTER", 200), host("b", "BACKUP", 100)],
            due: Vec::new(),
            takeover_after: takeover_after.map(Duration::milliseconds),
            return_after: return_after.map(Duration::milliseconds),
            actions: Vec::new(),
            saved: 0,
        }))
    }
}

impl Probe for Fake {
    fn now(&self) -> DateTime<Utc> {
        self.0.lock().now
    }

    fn cluster(&self, _key: &str) -> Option<Cluster> {
        let mut w = self.0.lock();
        let now = w.now;
        let (ready, waiting): (Vec<_>, Vec<_>) = w.due.drain(..).partition(|(at, _, _)| *at <= now);
        w.due = waiting;
        for (at, i, state) in ready {
            w.hosts[i].state = state;
            w.hosts[i].transition = at;
        }
        let views: Vec<HostView> = w
            .hosts
            .iter()
            .map(|h| HostView {
                client_id: h.id.into(),
                site: None,
                host: h.id.into(),
                online: true,
                readable: true,
                instances: vec![serde_json::from_value(json!({
                    "name": "VI_1", "vrid": 51, "state": h.state, "vips": ["192.0.2.100/24"],
                    "priority": h.priority, "lastTransition": iso(h.transition), "preempt": true,
                }))
                .unwrap()],
                read_at: Some(iso(now)),
                drain: Some(
                    serde_json::from_value(
                        json!({ "drained": h.drained, "reason": null, "by": null, "since": null }),
                    )
                    .unwrap(),
                ),
            })
            .collect();
        group(&views).into_iter().next()
    }

    fn act(&self, client_id: &str, action: &str, _reason: &str, _by: &str) -> Result<(), String> {
        let mut w = self.0.lock();
        w.actions.push((client_id.into(), action.into()));
        let now = w.now;
        let drain = action == DRAIN;
        w.hosts[0].drained = drain;
        if drain {
            if let Some(after) = w.takeover_after {
                w.due.push((now + after, 0, "BACKUP"));
                w.due
                    .push((now + after + Duration::milliseconds(3), 1, "MASTER"));
            }
        } else if let Some(after) = w.return_after {
            if w.hosts[1].state == "MASTER" || !w.due.is_empty() {
                w.due.push((now + after, 1, "BACKUP"));
                w.due
                    .push((now + after + Duration::milliseconds(2), 0, "MASTER"));
            }
        }
        Ok(())
    }

    fn pause(&self) {
        self.0.lock().now += Duration::milliseconds(100);
    }

    fn progress(&self, _drill: &Drill) {
        self.0.lock().saved += 1;
    }
}

fn drill() -> Drill {
    Drill::new(
        "0123456789abcdef".into(),
        "|51|192.0.2.0/24".into(),
        "otto".into(),
        "quarterly".into(),
        true,
        t0(),
    )
}

fn start(fake: &Fake) -> Drill {
    let cluster = fake.cluster("").unwrap();
    let old = preflight(&cluster, true).unwrap();
    assert_eq!(old, ("a".to_owned(), "a".to_owned()));
    let mut d = drill();
    run(&mut d, old, fake, Limits::default());
    d
}

#[test]
fn a_drill_measures_the_takeover_and_the_way_back() {
    let fake = Fake::new(Some(850), Some(1200));
    let d = start(&fake);
    assert_eq!(d.status, Status::Passed, "{d:#?}");
    assert_eq!(
        d.takeover_ms,
        Some(3),
        "from a leaving MASTER to b entering it"
    );
    assert_eq!(
        d.return_ms,
        Some(1202),
        "the undrain to a entering MASTER again"
    );
    assert_eq!(
        (d.old_master.as_deref(), d.new_master.as_deref()),
        (Some("a"), Some("b"))
    );
    let w = fake.0.lock();
    assert_eq!(
        w.actions,
        [
            ("a".to_owned(), DRAIN.to_owned()),
            ("a".to_owned(), UNDRAIN.to_owned())
        ]
    );
    assert!(w.saved >= 4, "progress told as it went");
    assert_eq!(w.hosts[0].state, "MASTER");
}

#[test]
fn no_new_master_in_time_rolls_the_drain_back_at_once() {
    let fake = Fake::new(None, None);
    let d = start(&fake);
    assert_eq!(d.status, Status::RolledBack, "{d:#?}");
    assert_eq!(d.new_master, None);
    let w = fake.0.lock();
    assert_eq!(w.actions.last().map(|a| a.1.as_str()), Some(UNDRAIN));
    assert!(!w.hosts[0].drained, "undrained");
    // Within the takeover limit (15 s) and a look of 100 ms.
    assert!(
        w.now - t0() <= Duration::milliseconds(15_100),
        "{}",
        w.now - t0()
    );
}

#[test]
fn without_preempt_the_new_master_stays_and_the_drill_says_so() {
    let fake = Fake::new(Some(500), None);
    let d = start(&fake);
    assert_eq!(d.status, Status::Passed, "{d:#?}");
    assert_eq!(d.return_ms, None);
    assert!(
        d.findings.iter().any(|f| f.contains("b stays MASTER")),
        "{:?}",
        d.findings
    );
}

#[test]
fn the_preflight_refuses_what_cannot_be_drilled() {
    let fake = Fake::new(Some(500), None);
    let mut cluster = fake.cluster("").unwrap();
    cluster.readiness.verdict = crate::clusters::readiness::Verdict::AtRisk;
    let refused = preflight(&cluster, false).unwrap_err();
    assert!(
        refused.reason.starts_with("readiness is at_risk"),
        "{refused:?}"
    );
    assert!(preflight(&cluster, true).is_ok(), "force drills anyway");
    for m in &mut cluster.members {
        m.drain = None;
    }
    let refused = preflight(&cluster, true).unwrap_err();
    assert!(refused.reason.contains("actions.drainFile"), "{refused:?}");
    let mut cluster = fake.cluster("").unwrap();
    cluster.members[1].online = false;
    let refused = preflight(&cluster, true).unwrap_err();
    assert_eq!(
        refused.reason,
        "no other live, undrained member could take over"
    );
}
