//! The evaluator on a driven clock: hosts of one cluster whose states, readings
//! and connections a test moves, and the events each evaluation makes.

use super::*;
use crate::clock::iso;
use crate::clusters::{group, HostView};
use chrono::{Duration, TimeZone};
use serde_json::{json, Value};
use vrrp_protocol::ActivityLevel;

/// An instance as an agent would send it (the tests write it as JSON).
fn inst(v: serde_json::Value) -> vrrp_protocol::VrrpInstance {
    serde_json::from_value(v).expect("an instance")
}

struct Host {
    online: bool,
    reporting: bool,
    state: &'static str,
    vips: Vec<&'static str>,
    read_at: DateTime<Utc>,
    transition: DateTime<Utc>,
    /// The host's drain file holds a non-zero number.
    drained: bool,
}

/// Hosts of one cluster (VRID 51, 192.0.2.0/24, advert_int 1 s: interval 4 s)
/// on a clock the test moves.
struct Sim {
    evaluator: Evaluator,
    now: DateTime<Utc>,
    hosts: BTreeMap<&'static str, Host>,
}

impl Sim {
    fn new(hosts: &[(&'static str, &'static str)]) -> Sim {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap();
        let hosts = hosts
            .iter()
            .map(|(h, s)| {
                (
                    *h,
                    Host {
                        online: true,
                        reporting: true,
                        state: s,
                        vips: vec!["192.0.2.100/24"],
                        read_at: now,
                        transition: now,
                        drained: false,
                    },
                )
            })
            .collect();
        Sim {
            evaluator: Evaluator::default(),
            now,
            hosts,
        }
    }

    fn clusters(&self) -> Vec<Cluster> {
        let views: Vec<HostView> = self
            .hosts
            .iter()
            .enumerate()
            // A priority each: a tie would put every cluster at risk (readiness).
            .map(|(i, (h, s))| HostView {
                client_id: format!("id-{h}"),
                site: None,
                host: h.to_string(),
                online: s.online,
                readable: s.reporting,
                instances: vec![inst(json!({ "name": "VI_1", "vrid": 51, "state": s.state, "vips": s.vips, "advertInterval": 1,
                                       "priority": 200 - i, "lastTransition": iso(s.transition), "interface": "eth0" }))],
                read_at: Some(iso(s.read_at)),
                drain: Some(
                    serde_json::from_value(json!({ "drained": s.drained, "reason": null, "by": null, "since": null }))
                        .expect("a drain state"),
                ),
            })
            .collect();
        group(&views)
    }

    /// keepalived on `host` reports `state` (a reading arrives now).
    fn state(&mut self, host: &str, state: &'static str) {
        let now = self.now;
        let h = self.hosts.get_mut(host).unwrap();
        if h.state != state {
            h.transition = now;
        }
        h.state = state;
        h.read_at = now;
    }

    /// A host's first reading arrives now.
    fn join(&mut self, host: &'static str, state: &'static str) {
        let now = self.now;
        self.hosts.insert(
            host,
            Host {
                online: true,
                reporting: true,
                state,
                vips: vec!["192.0.2.100/24"],
                read_at: now,
                transition: now - Duration::seconds(30),
                drained: false,
            },
        );
    }

    /// Every connected host delivers a reading now.
    fn readings(&mut self) {
        let now = self.now;
        for h in self.hosts.values_mut().filter(|h| h.online) {
            h.read_at = now;
        }
    }

    fn at(&mut self, ms: i64) -> Outcome {
        self.now += Duration::milliseconds(ms);
        let clusters = self.clusters();
        self.evaluator.evaluate(&clusters, self.now)
    }

    /// After a change: the interval passes, every host delivers a fresh reading,
    /// and the evaluator looks again.
    fn settle(&mut self) -> Outcome {
        self.at(0);
        self.readings();
        self.at(4000);
        self.readings();
        self.at(1)
    }

    /// The cluster is seen for the first time and its first interval passes,
    /// quietly: what follows is a change of a known cluster.
    fn seen(&mut self) {
        assert!(self.at(0).events.is_empty());
        self.readings();
        assert!(self.at(4000).events.is_empty());
    }

    fn kinds(out: &Outcome) -> Vec<&str> {
        out.events.iter().map(|e| e.kind.as_str()).collect()
    }
}

#[test]
fn a_healthy_cluster_seen_first_says_nothing() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    for _ in 0..10 {
        sim.readings();
        let out = sim.at(5000);
        assert!(out.events.is_empty() && out.requests.is_empty() && out.wake_at.is_none());
    }
}

#[test]
fn a_backup_reporting_before_its_master_is_no_failover() {
    let mut sim = Sim::new(&[("b", "BACKUP")]);
    assert!(sim.at(0).events.is_empty(), "first sighting");
    sim.join("a", "MASTER");
    let out = sim.at(1500);
    assert!(out.events.is_empty());
    sim.readings();
    for _ in 0..4 {
        let out = sim.at(3000);
        assert!(out.events.is_empty(), "{:?}", Sim::kinds(&out));
        sim.readings();
    }
    // The master is known from then on: a failover is reported with it.
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.events[0].data["previousMaster"], "a");
}

/// A change of a member already seen is reported even inside the
/// first master-down interval; only first reports are taken silently.
fn change_within_the_first_interval(changes: &[(&str, &'static str)]) -> Outcome {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    assert!(sim.at(0).events.is_empty(), "first sighting");
    sim.now += Duration::milliseconds(1000);
    for (host, state) in changes {
        sim.state(host, state);
    }
    let out = sim.settle();
    assert!(
        sim.at(10_000).events.is_empty() && sim.at(60_000).events.is_empty(),
        "reported once"
    );
    out
}

#[test]
fn a_failover_within_the_first_interval_is_reported_once() {
    let out = change_within_the_first_interval(&[("a", "BACKUP"), ("b", "MASTER")]);
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-b"));
    assert_eq!(out.events[0].data["previousMaster"], "a");
    assert_eq!(out.events[0].data["cluster"]["master"], "b");
}

#[test]
fn a_split_brain_within_the_first_interval_is_reported_once() {
    let out = change_within_the_first_interval(&[("b", "MASTER")]);
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.split_brain", "vrrp.incident_opened"]
    );
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-a"));
    assert_eq!(out.events[0].data["previousMaster"], "a");
    assert_eq!(
        out.events[1].data["incident"]["reasons"][0]["type"],
        "split-brain"
    );
}

#[test]
fn a_master_lost_within_the_first_interval_is_reported_once() {
    let out = change_within_the_first_interval(&[("a", "BACKUP")]);
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.master_lost", "vrrp.incident_opened"]
    );
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-a"));
    assert_eq!(out.events[0].data["previousMaster"], "a");
    assert_eq!(out.events[1].data["incident"]["health"], "no-master");
}

#[test]
fn a_master_whose_keepalived_stops_within_the_first_interval_is_lost() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    assert!(sim.at(0).events.is_empty());
    sim.now += Duration::milliseconds(500);
    sim.hosts.get_mut("a").unwrap().reporting = false;
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.master_lost", "vrrp.incident_opened"]
    );
    assert_eq!(out.events[0].data["previousMaster"], "a");
}

#[test]
fn a_newcomer_taking_over_from_a_master_seen_going_away_is_a_failover() {
    // a was seen as master; c's first report (MASTER) is taken silently, but
    // a stepping down is a change: from a to c.
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    assert!(sim.at(0).events.is_empty());
    sim.now += Duration::milliseconds(1000);
    sim.state("a", "BACKUP");
    sim.join("c", "MASTER");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-c"));
    assert_eq!(out.events[0].data["previousMaster"], "a");
}

#[test]
fn a_cluster_first_seen_in_split_brain_opens_its_incident_without_a_role_event() {
    // Rule 4: the roles it is first seen with are taken silently, the health
    // starts from ok; the second master's first report is part of that.
    let mut sim = Sim::new(&[("a", "MASTER")]);
    assert!(sim.at(0).events.is_empty());
    sim.join("b", "MASTER");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.incident_opened"]);
    assert_eq!(out.events[0].data["incident"]["health"], "split-brain");
}

#[test]
fn roles_taken_from_a_first_report_are_persisted() {
    // The thread persists what `changed` names: a restart right after the master's
    // first report must not forget it (else its next reading is a "failover" from
    // nobody).
    let mut sim = Sim::new(&[("b", "BACKUP")]);
    assert_eq!(sim.at(0).changed, ["|51|192.0.2.0/24"], "first sighting");
    sim.join("a", "MASTER");
    let out = sim.at(1500);
    assert_eq!(out.changed, ["|51|192.0.2.0/24"], "a's role was taken");
    let stored = sim
        .evaluator
        .confirmed("|51|192.0.2.0/24")
        .map(serde_json::to_string)
        .unwrap()
        .unwrap();
    sim.evaluator = Evaluator::restore([(
        "|51|192.0.2.0/24".to_owned(),
        serde_json::from_str::<Confirmed>(&stored).unwrap(),
    )]);
    sim.readings();
    for _ in 0..3 {
        let out = sim.at(3000);
        assert!(out.events.is_empty(), "{:?}", Sim::kinds(&out));
        sim.readings();
    }
    // A reading that changes nothing is not a change to persist.
    assert!(sim.at(10).changed.is_empty());
}

#[test]
fn a_master_arriving_after_the_first_interval_is_reported() {
    let mut sim = Sim::new(&[("b", "BACKUP")]);
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.incident_opened"],
        "a lone backup has no master, as far as anyone can tell"
    );
    sim.join("a", "MASTER");
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.master_changed", "vrrp.incident_resolved"]
    );
    assert_eq!(out.events[0].data["previousMaster"], Value::Null);
}

#[test]
fn a_failover_is_confirmed_after_the_interval_and_fresh_readings() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    let transition = sim.now;
    let out = sim.at(0);
    assert!(out.events.is_empty(), "pending first");
    assert_eq!(
        out.wake_at,
        Some(sim.now + Duration::seconds(4)),
        "master-down interval 3 x 1 s + 1 s"
    );
    // The interval passes without readings: both are asked, once.
    let out = sim.at(4000);
    assert!(out.events.is_empty());
    assert_eq!(out.requests, ["id-a", "id-b"]);
    assert_eq!(out.wake_at, Some(sim.now + Duration::milliseconds(250)));
    assert!(sim.at(100).requests.is_empty(), "once per pending change");
    // One reading is not enough; both are.
    sim.hosts.get_mut("a").unwrap().read_at = sim.now;
    assert!(sim.at(10).events.is_empty());
    sim.hosts.get_mut("b").unwrap().read_at = sim.now;
    let out = sim.at(10);
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    let e = &out.events[0];
    assert_eq!(e.client_id.as_deref(), Some("id-b"));
    assert_eq!(e.subject["instanceName"], "VI_1");
    assert_eq!(
        e.occurred_at,
        iso(transition),
        "keepalived's own transition time"
    );
    assert_eq!(e.data["previousMaster"], "a");
    assert_eq!(e.data["cluster"]["master"], "b");
    assert_eq!(e.data["cluster"]["members"].as_array().unwrap().len(), 2);
    assert_eq!(e.data["planned"], false, "nobody was drained");
    assert!(sim.at(5000).events.is_empty(), "reported once");
}

#[test]
fn after_the_follow_up_a_silent_agent_is_waited_for_without_wake_ups() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    sim.at(0);
    let out = sim.at(4000);
    assert_eq!(out.requests, ["id-a", "id-b"]);
    assert_eq!(out.wake_at, Some(sim.now + Duration::milliseconds(250)));
    let out = sim.at(250);
    assert!(out.events.is_empty());
    assert_eq!(out.wake_at, None, "the follow-up was the last look by time");
    assert_eq!(sim.evaluator.pending_keys(), ["|51|192.0.2.0/24"]);
    // The answers (or the agents' resends) complete it when they come.
    sim.now += Duration::seconds(20);
    sim.readings();
    let out = sim.at(0);
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.wake_at, None);
}

#[test]
fn the_master_down_interval_follows_the_longest_advert_int() {
    let cluster = |adverts: &[Value]| {
        let views: Vec<HostView> = adverts
            .iter()
            .enumerate()
            .map(|(i, a)| HostView {
                client_id: format!("id-{i}"),
                site: None,
                host: format!("h{i}"),
                online: true,
                readable: true,
                instances: vec![inst(json!({ "name": "VI_1", "vrid": 51, "state": "BACKUP",
                                       "vips": ["192.0.2.100/24"], "advertInterval": a }))],
                read_at: None,
                drain: None,
            })
            .collect();
        group(&views).remove(0)
    };
    let ms = |adverts: &[Value]| master_down_interval(&cluster(adverts)).num_milliseconds();
    assert_eq!(ms(&[json!(1), json!(1)]), 4000);
    assert_eq!(
        ms(&[json!(0.5), json!(0.5)]),
        2500,
        "sub-second VRRPv3 adverts"
    );
    assert_eq!(ms(&[json!(0.5), json!(2)]), 7000, "the slowest member");
    assert_eq!(ms(&[Value::Null, json!(-3)]), 4000, "keepalived's default");
    assert_eq!(ms(&[json!(1e9)]), 766_000, "keepalived's limit");
}

#[test]
fn a_member_that_stops_being_live_owes_no_reading() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP"), ("c", "BACKUP")]);
    sim.seen();
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    sim.at(0);
    let out = sim.at(4000);
    assert_eq!(out.requests, ["id-a", "id-b", "id-c"]);
    sim.hosts.get_mut("a").unwrap().read_at = sim.now;
    sim.hosts.get_mut("b").unwrap().read_at = sim.now;
    assert!(sim.at(10).events.is_empty(), "c still owes its reading");
    // c's agent goes away before it answered: nothing is waited for any more.
    sim.hosts.get_mut("c").unwrap().online = false;
    let out = sim.at(10);
    assert_eq!(Sim::kinds(&out), ["vrrp.master_changed"]);
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-b"));
}

/// A graceful stop of the master: keepalived gives up the role at once,
/// the backup takes over, and only about a second later, when keepalived has
/// exited, does the old master's agent report it stopped. The interval counts from
/// the takeover, not from that late report.
#[test]
fn a_stopped_master_reporting_late_does_not_restart_the_interval() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.state("b", "MASTER"); // b's takeover; a's last reading still says MASTER
    let takeover = sim.now;
    assert!(sim.at(0).events.is_empty(), "split brain pending");
    sim.now += Duration::milliseconds(470);
    sim.hosts.get_mut("a").unwrap().reporting = false; // keepalived on a exited
    sim.hosts.get_mut("a").unwrap().read_at = sim.now;
    let out = sim.at(0);
    assert!(out.events.is_empty());
    assert_eq!(
        out.wake_at,
        Some(takeover + Duration::seconds(4)),
        "still due one interval after the takeover"
    );
    let out = sim.at(4000 - 470);
    assert_eq!(out.requests, ["id-b"], "a is not live: it owes nothing");
    sim.hosts.get_mut("b").unwrap().read_at = sim.now;
    let out = sim.at(10);
    // b alone is master now: nothing could take over from it (readiness).
    assert_eq!(
        Sim::kinds(&out),
        [
            "vrrp.master_changed",
            "vrrp.incident_opened",
            "cluster.readiness_changed"
        ]
    );
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-b"));
    assert_eq!(out.events[0].data["previousMaster"], "a");
    assert!(sim.at(5000).events.is_empty(), "reported once");
}

/// The clock is kept only for masters that stopped being live: a master that
/// turns BACKUP while live is a VRRP transition, with an interval of its own.
#[test]
fn a_master_yielding_while_live_restarts_the_interval() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP"), ("c", "BACKUP")]);
    sim.seen();
    sim.state("b", "MASTER");
    sim.state("c", "MASTER");
    sim.at(0);
    sim.now += Duration::seconds(2);
    sim.state("c", "BACKUP"); // c yields, still live
    let out = sim.at(0);
    assert_eq!(
        out.wake_at,
        Some(sim.now + Duration::seconds(4)),
        "a new interval from c's transition"
    );
}

#[test]
fn a_reading_of_the_millisecond_the_interval_ends_counts() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.now += Duration::nanoseconds(123_456);
    sim.seen();
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    sim.at(0);
    sim.now += Duration::seconds(4);
    // Stored receive times have milliseconds only.
    for h in sim.hosts.values_mut() {
        h.read_at = chrono::SubsecRound::trunc_subsecs(sim.now, 3);
    }
    assert_eq!(Sim::kinds(&sim.at(0)), ["vrrp.master_changed"]);
}

#[test]
fn a_flap_shorter_than_the_interval_reports_nothing() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.state("a", "BACKUP");
    sim.state("b", "MASTER");
    assert!(sim.at(0).events.is_empty());
    sim.state("a", "MASTER");
    sim.state("b", "BACKUP");
    let out = sim.at(2000);
    assert!(
        out.events.is_empty() && out.wake_at.is_none(),
        "the change disappeared before confirmation"
    );
    sim.readings();
    assert!(sim.at(5000).events.is_empty());
}

#[test]
fn an_offline_master_makes_no_statement() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.hosts.get_mut("a").unwrap().online = false;
    for _ in 0..5 {
        sim.readings();
        let out = sim.at(10_000);
        assert!(
            out.events.is_empty() && out.wake_at.is_none(),
            "{:?}",
            Sim::kinds(&out)
        );
    }
}

#[test]
fn split_brain_opens_an_incident_and_healing_resolves_it() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.state("b", "MASTER");
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.split_brain", "vrrp.incident_opened"],
        "role events first"
    );
    assert_eq!(out.events[0].data["previousMaster"], "a");
    assert_eq!(
        out.events[0].data["cluster"], out.events[1].data["cluster"],
        "the same data.cluster"
    );
    let incident = &out.events[1].data["incident"];
    assert_eq!(
        (
            incident["health"].as_str(),
            incident["previousHealth"].as_str()
        ),
        (Some("split-brain"), Some("ok"))
    );
    assert_eq!(incident["reasons"][0]["type"], "split-brain");
    assert_eq!(incident["reasons"][0]["hosts"], json!(["a", "b"]));
    assert_eq!(incident["history"], json!(["split-brain"]));
    let id = incident["id"].as_str().unwrap().to_owned();
    assert_eq!(out.events[1].correlation_id.as_deref(), Some(id.as_str()));
    assert_eq!(out.events[1].level, ActivityLevel::Warning);

    sim.state("b", "BACKUP");
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.master_changed", "vrrp.incident_resolved"],
        "a master alone after a split brain is a change"
    );
    let r = &out.events[1].data["incident"];
    assert_eq!(
        (
            r["resolution"].as_str(),
            r["health"].as_str(),
            r["id"].as_str()
        ),
        (Some("recovered"), Some("ok"), Some(id.as_str()))
    );
    assert_eq!(r["reasons"], json!([]));
    assert_eq!(r["durationSeconds"], 8);
    assert_eq!(out.events[1].level, ActivityLevel::Info);
}

#[test]
fn a_second_host_in_fault_updates_the_incident_with_what_was_added() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP"), ("c", "BACKUP")]);
    sim.seen();
    sim.state("b", "FAULT");
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.incident_opened"]);
    assert_eq!(out.events[0].data["incident"]["health"], "degraded");
    assert_eq!(
        out.events[0].client_id.as_deref(),
        Some("id-a"),
        "an incident names the master"
    );
    sim.state("c", "FAULT");
    let out = sim.settle();
    // With both backups in FAULT no backup is ready: the readiness worsens.
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.incident_updated", "cluster.readiness_changed"]
    );
    assert_eq!(out.events[1].level, ActivityLevel::Warning);
    assert_eq!(out.events[1].data["before"], "ready");
    assert_eq!(out.events[1].data["after"], "not_ready");
    assert_eq!(
        out.events[1].data["findings"][0]["check"],
        "no_ready_backup"
    );
    let i = &out.events[0].data["incident"];
    assert_eq!(
        (i["health"].as_str(), i["previousHealth"].as_str()),
        (Some("degraded"), Some("degraded"))
    );
    assert_eq!(
        i["added"],
        json!(["c is in FAULT; keepalived reports no cause."])
    );
    assert_eq!(i["cleared"], json!([]));
    assert_eq!(i["reasons"].as_array().unwrap().len(), 2);
    assert_eq!(
        i["history"],
        json!(["degraded"]),
        "the health did not change"
    );
    let id = out.events[0].correlation_id.clone();
    // b recovers: what was cleared is reported, c's FAULT still holds.
    sim.state("b", "BACKUP");
    let out = sim.settle();
    // b is a ready backup again: the readiness recovers (info).
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.incident_updated", "cluster.readiness_changed"]
    );
    assert_eq!(out.events[1].level, ActivityLevel::Info);
    assert_eq!(out.events[1].data["after"], "ready");
    let i = &out.events[0].data["incident"];
    assert_eq!(i["added"], json!([]));
    assert_eq!(
        i["cleared"],
        json!(["b is in FAULT; keepalived reports no cause."])
    );
    assert_eq!(i["reasons"].as_array().unwrap().len(), 1);
    assert_eq!(out.events[0].correlation_id, id, "the same incident");
    // A member's last state changing while keepalived is silent there is not a
    // new finding: c stops reporting (a new finding), then its last state moves.
    sim.hosts.get_mut("c").unwrap().reporting = false;
    let out = sim.settle();
    assert_eq!(Sim::kinds(&out), ["vrrp.incident_updated"]);
    sim.state("c", "BACKUP");
    assert!(sim.settle().events.is_empty(), "no new finding");
}

#[test]
fn a_restart_in_the_middle_of_an_incident_repeats_nothing_and_misses_nothing() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP"), ("c", "BACKUP")]);
    sim.seen();
    sim.state("b", "FAULT");
    assert_eq!(Sim::kinds(&sim.settle()), ["vrrp.incident_opened"]);
    // Persist, "restart": a new evaluator from the stored states.
    let stored: Vec<(String, String)> = sim
        .evaluator
        .clusters
        .iter()
        .map(|(k, t)| (k.clone(), serde_json::to_string(&t.confirmed).unwrap()))
        .collect();
    let restored = stored.iter().map(|(k, v)| {
        (
            k.clone(),
            serde_json::from_str::<Confirmed>(v).expect("persisted state reads back"),
        )
    });
    let before = sim
        .evaluator
        .confirmed("|51|192.0.2.0/24")
        .cloned()
        .unwrap();
    sim.evaluator = Evaluator::restore(restored);
    assert_eq!(sim.evaluator.confirmed("|51|192.0.2.0/24"), Some(&before));
    // Nothing repeated...
    sim.readings();
    assert!(sim.at(5000).events.is_empty());
    // ...and a change after the restart is reported, in the same incident.
    sim.state("c", "FAULT");
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.incident_updated", "cluster.readiness_changed"],
        "the confirmed verdict (ready) was kept across the restart"
    );
    assert_eq!(
        out.events[0].correlation_id,
        before.incident.as_ref().map(|i| i.id.clone())
    );
}

#[test]
fn a_cluster_that_disappears_with_an_incident_open_is_resolved_as_removed() {
    let mut sim = Sim::new(&[("a", "MASTER")]);
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.incident_opened", "cluster.readiness_changed"],
        "first seen unhealthy (one host) still opens an incident, and is not ready"
    );
    assert_eq!(out.events[1].data["before"], Value::Null);
    assert_eq!(
        out.events[0].data["incident"]["reasons"][0]["type"],
        "single-member"
    );
    let out = sim.evaluator.evaluate(&[], sim.now + Duration::seconds(1));
    assert_eq!(Sim::kinds(&out), ["vrrp.incident_resolved"]);
    let i = &out.events[0].data["incident"];
    assert_eq!(
        (i["resolution"].as_str(), i["health"].clone()),
        (Some("removed"), Value::Null)
    );
    assert_eq!(
        out.events[0].data["cluster"]["vrid"], 51,
        "the cluster as last confirmed"
    );
}

#[test]
fn unreachable_counts_after_60_s_and_keeps_the_roles() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    for h in sim.hosts.values_mut() {
        h.online = false;
    }
    let out = sim.at(0);
    assert!(out.events.is_empty());
    assert_eq!(out.wake_at, Some(sim.now + Duration::seconds(60)));
    assert!(sim.at(59_000).events.is_empty());
    let out = sim.at(1000);
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.incident_opened"],
        "no role event: nothing can be said of the roles"
    );
    assert_eq!(
        out.events[0].data["incident"]["reasons"][0]["hosts"],
        json!(["a", "b"])
    );
    assert_eq!(
        sim.evaluator.confirmed("|51|192.0.2.0/24").unwrap().roles,
        Roles::One("id-a".into())
    );
}

#[test]
fn master_lost_names_the_previous_master() {
    let mut sim = Sim::new(&[("a", "MASTER"), ("b", "BACKUP")]);
    sim.seen();
    sim.state("a", "BACKUP");
    let out = sim.settle();
    assert_eq!(
        Sim::kinds(&out),
        ["vrrp.master_lost", "vrrp.incident_opened"]
    );
    assert_eq!(out.events[0].client_id.as_deref(), Some("id-a"));
    assert_eq!(out.events[0].data["previousMaster"], "a");
    assert_eq!(out.events[1].data["incident"]["health"], "no-master");
}

mod planned;
mod requests;
mod stored;
