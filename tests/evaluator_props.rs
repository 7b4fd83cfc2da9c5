//! Property test of the cluster evaluator: random sequences of
//! readings, connections, disconnections, keepalived stops, moves between two
//! networks, departures of two to four hosts and server restarts, on a clock the
//! test moves, with the evaluator's promises checked after every evaluation and,
//! at the end, once everything has had time to settle.
//!
//! The evaluator is pure (clusters and a time in, events out), so the test drives
//! it the way the `cluster-eval` thread does: an evaluation after every reading
//! or connection change and one at every wake-up it asks for, the grouping kept
//! while no host changes. A failing case is shrunk by proptest to a minimal
//! sequence of steps, printed as `ops = [...]`.
//!
//! Readings that arrive together are evaluated together, as the thread batches
//! them (`Op::Burst`), under the thread's own rule ([`ReadingBatch`]): a host's
//! second reading is never merged with its first while that may be a first
//! report. A second property runs
//! cases inside a new cluster's first master-down interval: first
//! readings, then changes, bursts and restarts a few milliseconds to a second
//! apart, as the real clock times them.
//!
//! `PROPTEST_CASES` sets the number of cases (10,000 by default).

use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestCaseError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use vrrp_monitor::activity::Event;
use vrrp_monitor::clock::iso;
use vrrp_monitor::clusters::confirm::{Confirmed, Evaluator};
use vrrp_monitor::clusters::observe::{observe, IncidentHealth, Roles};
use vrrp_monitor::clusters::thread::ReadingBatch;
use vrrp_monitor::clusters::{group, patch_member, rejudge, Cluster, HostView};

/// Every host carries VRID 51 with advert_int 1 s (a master-down interval of
/// 4 s), on one of two networks: at most two clusters.
const INTERVAL_MS: i64 = 4000;
const NETWORKS: [(&str, &str, &str); 2] = [
    ("192.0.2.0/24", "192.0.2.100/24", "192.0.2.101/24"),
    ("198.51.100.0/24", "198.51.100.100/24", "198.51.100.101/24"),
];
const HOSTS: [&str; 4] = ["a", "b", "c", "d"];
const ROLE_KINDS: [&str; 3] = [
    "vrrp.master_changed",
    "vrrp.split_brain",
    "vrrp.master_lost",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Master,
    Backup,
    Fault,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Master => "MASTER",
            State::Backup => "BACKUP",
            State::Fault => "FAULT",
        }
    }
}

/// One thing that happens; the host is an index below the case's host count.
/// Steps that cannot happen (a reading from a disconnected agent) do nothing.
#[derive(Debug, Clone)]
enum Op {
    /// keepalived on the host reports this state (its first reading if the host
    /// is not there yet).
    Report(usize, State),
    /// An unchanged reading arrives.
    Reading(usize),
    Disconnect(usize),
    /// The agent connects; its reading comes as a later step.
    Connect(usize),
    /// keepalived stops (the reading says not running; the last state stays).
    Stop(usize),
    /// The host carries one more virtual address than the others (or not).
    Vips(usize, bool),
    /// The host's instance moves to the other network (another cluster).
    Move(usize),
    /// The client is deleted: the host leaves. It may come back as a new client.
    Leave(usize),
    /// Every agent asked for a reading answers.
    Answer,
    /// Time passes (milliseconds); the evaluator is woken when it asked to be.
    Advance(i64),
    /// The server restarts: the evaluator resumes from the persisted states.
    Restart,
    /// Reports and readings that reach the evaluator together (one batch).
    Burst(Vec<Op>),
}

#[derive(Debug, Clone)]
struct Host {
    client_id: String,
    online: bool,
    running: bool,
    state: State,
    network: usize,
    extra_vip: bool,
    read_at: DateTime<Utc>,
    transition: DateTime<Utc>,
    /// The state of its first report since the last evaluation: what the
    /// evaluator must see of it, were this its first report into a cluster.
    unseen: Option<State>,
}

/// What the test knows of one cluster since it was (last) first seen.
#[derive(Debug, Default)]
struct Incarnation {
    /// The end of the first master-down interval (none after a restart).
    window_until: Option<DateTime<Utc>>,
    /// Members that were live at an evaluation since the first sighting.
    ever_live: BTreeSet<String>,
    /// The last host that was confirmed master alone: (client id, host).
    last_sole: Option<(String, String)>,
    /// Incidents opened and not resolved: correlation id, and the health and
    /// number of reasons its last event carried.
    open: BTreeMap<String, (String, usize)>,
}

/// The part of a confirmed state the checks look at.
struct Snapshot {
    roles: Roles,
    health: IncidentHealth,
    incident: Option<String>,
}

impl Snapshot {
    fn of(c: &Confirmed) -> Snapshot {
        Snapshot {
            roles: c.roles.clone(),
            health: c.health,
            incident: c.incident.as_ref().map(|i| i.id.clone()),
        }
    }
}

struct World {
    evaluator: Evaluator,
    now: DateTime<Utc>,
    hosts: BTreeMap<usize, Host>,
    generation: usize,
    asked: BTreeSet<String>,
    /// When each agent was last asked for a reading (survives no restart).
    last_asked: BTreeMap<String, DateTime<Utc>>,
    wake: Option<DateTime<Utc>>,
    /// The grouping, kept between evaluations (as the thread keeps it): built
    /// anew when a host's place in it changes, else patched.
    grouped: Option<Vec<Cluster>>,
    /// Hosts whose members need patching.
    dirty: BTreeSet<usize>,
    /// The grouping was built anew since the last evaluation: evaluate all.
    regrouped: bool,
    /// Clusters patched since the last evaluation.
    touched: BTreeSet<String>,
    /// The confirmed states as the thread persists them: those the evaluator
    /// says changed, less those it says are gone.
    stored: BTreeMap<String, String>,
    event_ids: BTreeSet<String>,
    closed: BTreeSet<String>,
    clusters: BTreeMap<String, Incarnation>,
    evaluations: usize,
    /// Every event made, in order.
    made: Vec<Event>,
}

fn view_of(i: usize, h: &Host) -> HostView {
    let (_, vip, extra) = NETWORKS[h.network];
    let vips = if h.extra_vip {
        vec![vip, extra]
    } else {
        vec![vip]
    };
    HostView {
        client_id: h.client_id.clone(),
        site: None,
        host: HOSTS[i].to_owned(),
        online: h.online,
        readable: h.running,
        instances: vec![serde_json::from_value(json!({
            "name": "VI_1", "vrid": 51, "state": h.state.as_str(), "vips": vips,
            // A priority each, as configured pairs have: a tie would be a
            // readiness finding (priority_tie) and events of its own.
            "advertInterval": 1, "priority": 200 - i, "interface": "eth0",
            "lastTransition": iso(h.transition),
        }))
        .expect("an instance")],
        read_at: Some(iso(h.read_at)),
        drain: None,
    }
}

fn key_of(network: &str) -> String {
    format!("|51|{network}")
}

fn kinds(events: &[&Event]) -> Vec<String> {
    events.iter().map(|e| e.kind.clone()).collect()
}

impl World {
    fn new() -> World {
        World {
            evaluator: Evaluator::default(),
            now: Utc.with_ymd_and_hms(2026, 11, 25, 4, 0, 0).unwrap(),
            hosts: BTreeMap::new(),
            generation: 0,
            asked: BTreeSet::new(),
            last_asked: BTreeMap::new(),
            wake: None,
            grouped: None,
            dirty: BTreeSet::new(),
            regrouped: false,
            touched: BTreeSet::new(),
            stored: BTreeMap::new(),
            event_ids: BTreeSet::new(),
            closed: BTreeSet::new(),
            clusters: BTreeMap::new(),
            evaluations: 0,
            made: Vec::new(),
        }
    }

    /// The grouping: built anew after a host came, left or moved; else the
    /// changed hosts' members patched, as the `cluster-eval` thread does.
    fn grouping(&mut self) {
        let Some(grouped) = &mut self.grouped else {
            let views: Vec<HostView> = self.hosts.keys().map(|&i| self.view(i)).collect();
            self.grouped = Some(group(&views));
            self.dirty.clear();
            self.regrouped = true;
            return;
        };
        for i in std::mem::take(&mut self.dirty) {
            let Some(h) = self.hosts.get(&i) else {
                continue;
            };
            let view = view_of(i, h);
            for cluster in grouped.iter_mut() {
                let mut touched = false;
                for m in cluster
                    .members
                    .iter_mut()
                    .filter(|m| m.client_id == view.client_id)
                {
                    patch_member(m, &view);
                    touched = true;
                }
                if touched {
                    rejudge(cluster);
                    self.touched.insert(cluster.key.clone());
                }
            }
        }
    }

    fn view(&self, i: usize) -> HostView {
        view_of(i, &self.hosts[&i])
    }

    /// A host that is there and connected, for a reading to come from.
    fn reporting_host(&mut self, i: usize) -> Option<&mut Host> {
        self.hosts.get_mut(&i).filter(|h| h.online)
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Advance(ms) => self.advance(*ms),
            Op::Restart => self.restart(),
            Op::Burst(ops) => self.burst(ops),
            op => {
                self.change(op);
                self.evaluate()
            }
        }
    }

    /// Reports and readings taken in as the thread takes in one batch: a
    /// reading of a host already in the batch is evaluated apart, after the rest.
    fn burst(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        let mut batch = ReadingBatch::default();
        for op in ops {
            if let Op::Report(i, _) | Op::Reading(i) = *op {
                if let Some(h) = self.hosts.get(&i) {
                    // The thread's rule, with what it knows: whether the grouping
                    // is to be built anew, and whether a cluster is settling.
                    let regrouping = self.grouped.is_none();
                    let first_window = self.evaluator.in_first_window(self.now);
                    if batch.evaluate_before(&h.client_id, regrouping, || first_window) {
                        self.evaluate()?;
                        batch.clear();
                    }
                }
            }
            self.change(op);
            if let Op::Report(i, _) | Op::Reading(i) = *op {
                if let Some(h) = self.hosts.get(&i) {
                    batch.note(&h.client_id);
                }
            }
        }
        self.evaluate()
    }

    /// What one step changes, before any evaluation.
    fn change(&mut self, op: &Op) {
        let now = self.now;
        match *op {
            Op::Report(i, state) => {
                if let Some(h) = self.hosts.get_mut(&i) {
                    if h.online {
                        if h.state != state || !h.running {
                            h.transition = now;
                        }
                        h.unseen.get_or_insert(state);
                        h.state = state;
                        h.running = true;
                        h.read_at = now;
                    }
                } else {
                    self.generation += 1;
                    let host = Host {
                        client_id: format!("id-{}-{}", HOSTS[i], self.generation),
                        online: true,
                        running: true,
                        state,
                        network: 0,
                        extra_vip: false,
                        read_at: now,
                        transition: now - Duration::seconds(30),
                        unseen: Some(state),
                    };
                    self.hosts.insert(i, host);
                    self.grouped = None;
                }
            }
            Op::Reading(i) => {
                if let Some(h) = self.reporting_host(i) {
                    h.read_at = now;
                }
            }
            Op::Disconnect(i) => {
                if let Some(h) = self.hosts.get_mut(&i) {
                    h.online = false;
                }
            }
            Op::Connect(i) => {
                if let Some(h) = self.hosts.get_mut(&i) {
                    h.online = true;
                }
            }
            Op::Stop(i) => {
                if let Some(h) = self.reporting_host(i) {
                    h.running = false;
                    h.read_at = now;
                }
            }
            Op::Vips(i, extra) => {
                if let Some(h) = self.reporting_host(i) {
                    h.extra_vip = extra;
                    h.read_at = now;
                }
            }
            Op::Move(i) => {
                if let Some(h) = self.reporting_host(i) {
                    h.network = 1 - h.network;
                    h.read_at = now;
                    self.grouped = None;
                }
            }
            Op::Leave(i) => {
                self.hosts.remove(&i);
                self.grouped = None;
            }
            Op::Answer => {
                let asked = std::mem::take(&mut self.asked);
                for (i, h) in self.hosts.iter_mut() {
                    if asked.contains(&h.client_id) && h.online {
                        h.read_at = now;
                        self.dirty.insert(*i);
                    }
                }
            }
            Op::Advance(_) | Op::Restart | Op::Burst(_) => {}
        }
        if let Op::Report(i, _)
        | Op::Reading(i)
        | Op::Disconnect(i)
        | Op::Connect(i)
        | Op::Stop(i)
        | Op::Vips(i, _) = *op
        {
            self.dirty.insert(i);
        }
    }

    /// Moves the clock on, evaluating at every wake-up asked for on the way.
    fn advance(&mut self, ms: i64) -> Result<(), TestCaseError> {
        let until = self.now + Duration::milliseconds(ms);
        let mut wake_ups = 0;
        while let Some(wake) = self.wake.filter(|w| *w <= until) {
            wake_ups += 1;
            prop_assert!(wake_ups < 100, "the evaluator keeps asking to be woken");
            self.now = self.now.max(wake);
            self.evaluate()?;
            prop_assert!(
                self.wake.is_none_or(|w| w > self.now),
                "a wake-up asked for the past: {:?} at {}",
                self.wake,
                self.now
            );
        }
        self.now = until;
        self.evaluate()
    }

    /// The persisted states read back into a new evaluator; nothing else survives.
    fn restart(&mut self) -> Result<(), TestCaseError> {
        let mut states = Vec::new();
        for (key, stored) in &self.stored {
            let Ok(back) = serde_json::from_str::<Confirmed>(stored) else {
                return Err(TestCaseError::fail(format!(
                    "the stored state of {key} does not read back"
                )));
            };
            states.push((key.clone(), back));
        }
        // What is stored is what was confirmed: a restart neither reports a
        // cluster anew nor misses a change.
        for key in self.clusters.keys() {
            let stored = states.iter().find(|(k, _)| k == key).map(|(_, c)| c);
            prop_assert_eq!(stored, self.evaluator.confirmed(key), "persisted {}", key);
        }
        self.evaluator = Evaluator::restore(states);
        self.asked.clear();
        self.last_asked.clear();
        self.wake = None;
        // The thread builds its grouping anew at start and evaluates everything.
        self.grouped = None;
        for inc in self.clusters.values_mut() {
            // Restored clusters are no longer being seen for the first time.
            inc.window_until = None;
        }
        self.evaluate()
    }

    /// One evaluation, as the thread makes it, and every promise checked on it.
    fn evaluate(&mut self) -> Result<(), TestCaseError> {
        self.grouping();
        // Taken out for the evaluation (the checks need `self`), put back after.
        let clusters = self.grouped.take().unwrap_or_default();
        let result = self.evaluate_with(&clusters);
        self.grouped = Some(clusters);
        for h in self.hosts.values_mut() {
            h.unseen = None;
        }
        result
    }

    /// Like the thread: every cluster after the grouping was built anew (that is
    /// when one can be gone), else only those patched or with a change pending.
    fn evaluate_with(&mut self, clusters: &[Cluster]) -> Result<(), TestCaseError> {
        let touched = std::mem::take(&mut self.touched);
        let subset: Option<Vec<Cluster>> = (!std::mem::take(&mut self.regrouped)).then(|| {
            let pending: BTreeSet<String> = self.evaluator.pending_keys().into_iter().collect();
            clusters
                .iter()
                .filter(|c| touched.contains(&c.key) || pending.contains(&c.key))
                .cloned()
                .collect()
        });
        let keys: BTreeSet<String> = match &subset {
            Some(subset) => subset.iter().map(|c| c.key.clone()).collect(),
            None => clusters
                .iter()
                .map(|c| c.key.clone())
                .chain(self.clusters.keys().cloned())
                .collect(),
        };
        let before: BTreeMap<String, Snapshot> = keys
            .iter()
            .filter_map(|k| Some((k.clone(), Snapshot::of(self.evaluator.confirmed(k)?))))
            .collect();
        let out = match &subset {
            Some(subset) => self.evaluator.evaluate_some(subset, self.now),
            None => self.evaluator.evaluate(clusters, self.now),
        };
        self.evaluations += 1;
        self.made.extend(out.events.iter().cloned());
        for key in &out.changed {
            if let Some(c) = self.evaluator.confirmed(key) {
                let text = serde_json::to_string(c).expect("a confirmed state serialises");
                self.stored.insert(key.clone(), text);
            }
        }
        for key in &out.removed {
            self.stored.remove(key);
        }
        self.wake = out.wake_at;
        // REQUEST_STATE_UPDATE: to connected members with keepalived reporting,
        // each at most once a second.
        for id in &out.requests {
            prop_assert!(
                clusters
                    .iter()
                    .flat_map(|c| &c.members)
                    .any(|m| &m.client_id == id && m.live()),
                "{id} asked for a reading, not a live member"
            );
            if let Some(last) = self.last_asked.insert(id.clone(), self.now) {
                prop_assert!(
                    self.now - last >= Duration::seconds(1),
                    "{id} asked twice within a second"
                );
            }
        }
        self.asked.extend(out.requests.iter().cloned());
        let mut by_cluster: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
        for e in &out.events {
            prop_assert!(
                self.event_ids.insert(e.id.clone()),
                "two events share the id {}",
                e.id
            );
            let key = e.data["cluster"]["networks"][0]
                .as_str()
                .map(key_of)
                .unwrap_or_default();
            prop_assert!(keys.contains(&key), "an event of no cluster: {:?}", e.data);
            by_cluster.entry(key).or_default().push(e);
        }
        for key in keys {
            let events = by_cluster.remove(&key).unwrap_or_default();
            let after = self.evaluator.confirmed(&key).map(Snapshot::of);
            match clusters.iter().find(|c| c.key == key) {
                Some(cluster) => {
                    let Some(after) = after else {
                        return Err(TestCaseError::fail(format!("{key} present has no state")));
                    };
                    self.check_present(cluster, before.get(&key), &after, &events)?;
                }
                None => self.check_gone(&key, before.get(&key), after, &events)?,
            }
        }
        Ok(())
    }

    fn check_gone(
        &mut self,
        key: &str,
        before: Option<&Snapshot>,
        after: Option<Snapshot>,
        events: &[&Event],
    ) -> Result<(), TestCaseError> {
        prop_assert!(after.is_none(), "{key} is gone but keeps its state");
        match before.and_then(|b| b.incident.as_ref()) {
            Some(id) => {
                prop_assert_eq!(kinds(events), ["vrrp.incident_resolved"]);
                prop_assert_eq!(&events[0].data["incident"]["resolution"], "removed");
                prop_assert_eq!(events[0].correlation_id.as_ref(), Some(id));
            }
            None => prop_assert!(events.is_empty(), "{:?}", kinds(events)),
        }
        let mut inc = self.clusters.remove(key).unwrap_or_default();
        self.incident_events(&mut inc, events)?;
        prop_assert!(
            inc.open.is_empty(),
            "incidents left open on {key}, gone: {:?}",
            inc.open
        );
        Ok(())
    }

    fn check_present(
        &mut self,
        cluster: &Cluster,
        before: Option<&Snapshot>,
        after: &Snapshot,
        events: &[&Event],
    ) -> Result<(), TestCaseError> {
        let mut inc = self.clusters.remove(&cluster.key).unwrap_or_default();
        if before.is_none() {
            inc = Incarnation {
                window_until: Some(self.now + Duration::milliseconds(INTERVAL_MS)),
                ..Incarnation::default()
            };
        }
        let result = self.check_present_in(&mut inc, cluster, before, after, events);
        self.clusters.insert(cluster.key.clone(), inc);
        result
    }

    fn check_present_in(
        &mut self,
        inc: &mut Incarnation,
        cluster: &Cluster,
        before: Option<&Snapshot>,
        after: &Snapshot,
        events: &[&Event],
    ) -> Result<(), TestCaseError> {
        let in_window = inc.window_until.is_some_and(|u| self.now < u);
        let live: Vec<_> = cluster.members.iter().filter(|m| m.live()).collect();
        let newcomers: Vec<_> = live
            .iter()
            .filter(|m| !inc.ever_live.contains(&m.client_id))
            .collect();
        let roles_before = before.map_or(Roles::Unknown, |b| b.roles.clone());
        let is_role = |e: &&&Event| ROLE_KINDS.contains(&e.kind.as_str());
        let role_events: Vec<&&Event> = events.iter().filter(is_role).collect();
        prop_assert!(role_events.len() <= 1, "{:?}", kinds(events));
        // Role events first; one change, one picture of the cluster.
        let first_other = events.iter().position(|e| !is_role(&e));
        if let Some(i) = first_other {
            prop_assert!(
                !events[i..].iter().any(|e| is_role(&e)),
                "role events first: {:?}",
                kinds(events)
            );
        }
        for e in events {
            prop_assert_eq!(&e.data["cluster"], &events[0].data["cluster"]);
        }

        if after.roles == roles_before {
            prop_assert!(
                role_events.is_empty(),
                "a role event without a change of the confirmed roles ({:?}): {:?}",
                after.roles,
                kinds(events)
            );
        } else if role_events.is_empty() {
            // Only the roles a cluster is first seen with are taken silently: the
            // first reports of members not seen before, within the first interval.
            prop_assert!(
                in_window && !newcomers.is_empty(),
                "the confirmed roles moved from {:?} to {:?} without a report",
                roles_before,
                after.roles
            );
            let mut masters: BTreeSet<String> = match &roles_before {
                Roles::One(id) => [id.clone()].into(),
                Roles::Several(ids) => ids.iter().cloned().collect(),
                _ => BTreeSet::new(),
            };
            // Each newcomer's first report, not a later reading of the same
            // batch (That one is a change to report).
            let first_report = |m: &vrrp_monitor::clusters::Member| {
                self.hosts
                    .values()
                    .find(|h| h.client_id == m.client_id)
                    .and_then(|h| h.unseen)
                    .map_or_else(|| m.state().to_owned(), |s| s.as_str().to_owned())
            };
            masters.extend(
                newcomers
                    .iter()
                    .filter(|m| first_report(m) == "MASTER")
                    .map(|m| m.client_id.clone()),
            );
            let expected = match masters.len() {
                0 => Roles::None,
                1 => Roles::One(masters.into_iter().next().unwrap_or_default()),
                _ => Roles::Several(masters.into_iter().collect()),
            };
            prop_assert_eq!(
                &after.roles,
                &expected,
                "silently taken roles are the newcomers' first reports added to those confirmed"
            );
        } else {
            let e = role_events[0];
            let host_of = |id: &str| {
                cluster
                    .members
                    .iter()
                    .find(|m| m.client_id == id)
                    .map(|m| m.host.clone())
            };
            match &after.roles {
                Roles::One(id) => {
                    prop_assert_eq!(e.kind.as_str(), "vrrp.master_changed");
                    prop_assert_eq!(e.client_id.as_deref(), Some(id.as_str()));
                    prop_assert_eq!(
                        e.data["cluster"]["master"].as_str().map(str::to_owned),
                        host_of(id)
                    );
                }
                Roles::Several(ids) => {
                    prop_assert_eq!(e.kind.as_str(), "vrrp.split_brain");
                    let first = ids
                        .iter()
                        .filter_map(|id| host_of(id).map(|h| (h, id.clone())))
                        .min();
                    prop_assert_eq!(
                        e.client_id.as_deref(),
                        first.as_ref().map(|(_, id)| id.as_str())
                    );
                }
                Roles::None => {
                    prop_assert_eq!(e.kind.as_str(), "vrrp.master_lost");
                    let previous = inc
                        .last_sole
                        .as_ref()
                        .filter(|(id, _)| host_of(id).is_some())
                        .map(|(id, _)| id.as_str());
                    prop_assert_eq!(e.client_id.as_deref(), previous);
                }
                Roles::Unknown => {
                    return Err(TestCaseError::fail(format!(
                        "a role event ({}) into unknown roles",
                        e.kind
                    )))
                }
            }
            // previousMaster: the last host that was master alone before.
            let previous = inc.last_sole.as_ref().map(|(_, h)| h.as_str());
            prop_assert_eq!(
                e.data["previousMaster"].as_str(),
                previous,
                "previousMaster of {}",
                e.kind
            );
        }

        // The events of one confirmation agree: a split brain the roles changed
        // into is reported as one besides the incident it opens or updates.
        let split_reason = events.iter().any(|e| {
            (e.kind == "vrrp.incident_opened" || e.kind == "vrrp.incident_updated")
                && e.data["incident"]["reasons"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r["type"] == "split-brain"))
        });
        if split_reason && after.roles != roles_before && matches!(after.roles, Roles::Several(_)) {
            prop_assert!(
                events.iter().any(|e| e.kind == "vrrp.split_brain"),
                "a split brain in the incident, none among the role events: {:?}",
                kinds(events)
            );
        }

        self.incident_events(inc, events)?;
        // No incident stays open on a cluster whose confirmed health is ok, and
        // an unhealthy confirmed health has its incident.
        prop_assert_eq!(
            after.health == IncidentHealth::Ok,
            after.incident.is_none(),
            "confirmed health {:?} with incident {:?}",
            after.health,
            &after.incident
        );
        let open: Vec<&String> = inc.open.keys().collect();
        prop_assert_eq!(
            open,
            after.incident.iter().collect::<Vec<_>>(),
            "open incidents"
        );
        prop_assert!(after.health != IncidentHealth::NoStatement);

        inc.ever_live
            .extend(live.iter().map(|m| m.client_id.clone()));
        if let Roles::One(id) = &after.roles {
            if let Some(m) = cluster.members.iter().find(|m| &m.client_id == id) {
                inc.last_sole = Some((id.clone(), m.host.clone()));
            }
        }
        Ok(())
    }

    /// Every incident_updated and _resolved follows an incident_opened of the same
    /// correlation id, and nothing follows a resolution.
    fn incident_events(
        &mut self,
        inc: &mut Incarnation,
        events: &[&Event],
    ) -> Result<(), TestCaseError> {
        for e in events {
            if !e.kind.starts_with("vrrp.incident_") {
                continue;
            }
            let Some(id) = e.correlation_id.clone() else {
                return Err(TestCaseError::fail(format!(
                    "{} without correlationId",
                    e.kind
                )));
            };
            prop_assert_eq!(e.data["incident"]["id"].as_str(), Some(id.as_str()));
            prop_assert!(
                !self.closed.contains(&id),
                "{} after the resolution",
                e.kind
            );
            let i = &e.data["incident"];
            let health = i["health"].as_str().map(str::to_owned);
            let reasons = i["reasons"].as_array().map_or(0, Vec::len);
            let texts = |key: &str| -> Vec<String> {
                i[key].as_array().map_or_else(Vec::new, |a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect()
                })
            };
            let previous = i["previousHealth"].as_str().unwrap_or_default().to_owned();
            if e.kind != "vrrp.incident_resolved" {
                prop_assert!(reasons > 0, "{} without a reason", e.kind);
                prop_assert_eq!(
                    i["history"]
                        .as_array()
                        .and_then(|h| h.last())
                        .and_then(Value::as_str),
                    health.as_deref(),
                    "the history ends with the health"
                );
            }
            match e.kind.as_str() {
                "vrrp.incident_opened" => {
                    prop_assert!(
                        inc.open.is_empty(),
                        "a second incident opened while {:?} is open",
                        inc.open
                    );
                    prop_assert_eq!(previous, "ok");
                    inc.open.insert(id, (health.unwrap_or_default(), reasons));
                }
                "vrrp.incident_updated" => {
                    let Some((last_health, last_reasons)) = inc.open.get_mut(&id) else {
                        return Err(TestCaseError::fail(format!("update of {id}, not opened")));
                    };
                    let (added, cleared) = (texts("added"), texts("cleared"));
                    prop_assert_eq!(&previous, &*last_health, "previousHealth");
                    let health = health.unwrap_or_default();
                    prop_assert!(
                        health != previous || !added.is_empty() || !cleared.is_empty(),
                        "an update that changes nothing"
                    );
                    prop_assert_eq!(
                        reasons + cleared.len(),
                        *last_reasons + added.len(),
                        "reasons = before - cleared + added: {:?}",
                        i
                    );
                    *last_health = health;
                    *last_reasons = reasons;
                }
                "vrrp.incident_resolved" => {
                    let Some((last_health, _)) = inc.open.remove(&id) else {
                        return Err(TestCaseError::fail(format!(
                            "resolution of {id}, not opened"
                        )));
                    };
                    prop_assert_eq!(&previous, &last_health, "previousHealth");
                    prop_assert_eq!(reasons, 0, "a resolution has no reasons");
                    match i["resolution"].as_str() {
                        Some("recovered") => prop_assert_eq!(health.as_deref(), Some("ok")),
                        Some("removed") => prop_assert_eq!(health, None),
                        other => return Err(TestCaseError::fail(format!("resolution {other:?}"))),
                    }
                    self.closed.insert(id);
                }
                other => return Err(TestCaseError::fail(format!("unknown kind {other}"))),
            }
        }
        Ok(())
    }

    /// Every agent delivers readings and time passes until nothing is pending:
    /// then the confirmed state is what is observed, and nothing more is said.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..2 {
            for (i, h) in self.hosts.iter_mut().filter(|(_, h)| h.online) {
                h.read_at = self.now;
                self.dirty.insert(*i);
            }
            self.evaluate()?;
            self.advance(INTERVAL_MS + 250)?;
            self.apply(&Op::Answer)?;
        }
        // An unreachable cluster counts after 60 s.
        self.advance(61_000)?;
        prop_assert!(
            self.evaluator.pending_keys().is_empty(),
            "still pending after settling: {:?}",
            self.evaluator.pending_keys()
        );
        self.grouping();
        // The patched grouping is the one grouping would build anew.
        let by_key = |clusters: &[Cluster]| -> BTreeMap<String, Cluster> {
            clusters
                .iter()
                .map(|c| (c.key.clone(), c.clone()))
                .collect()
        };
        let fresh: Vec<HostView> = self.hosts.keys().map(|&i| self.view(i)).collect();
        prop_assert_eq!(
            by_key(self.grouped.as_deref().unwrap_or_default()),
            by_key(&group(&fresh))
        );
        for cluster in self.grouped.iter().flatten() {
            let observed = observe(cluster);
            let Some(confirmed) = self.evaluator.confirmed(&cluster.key) else {
                return Err(TestCaseError::fail("no state"));
            };
            if observed.health != IncidentHealth::NoStatement {
                prop_assert_eq!(confirmed.health, observed.health);
                if observed.roles != Roles::Unknown {
                    prop_assert_eq!(&confirmed.roles, &observed.roles);
                }
            }
        }
        let events_before = self.event_ids.len();
        self.apply(&Op::Answer)?;
        self.advance(30_000)?;
        prop_assert_eq!(self.event_ids.len(), events_before, "reported again");
        Ok(())
    }
}

fn state() -> impl Strategy<Value = State> {
    prop_oneof![Just(State::Master), Just(State::Backup), Just(State::Fault)]
}

fn op(hosts: usize) -> impl Strategy<Value = Op> {
    let host = 0..hosts;
    prop_oneof![
        8 => (host.clone(), state()).prop_map(|(h, s)| Op::Report(h, s)),
        2 => host.clone().prop_map(Op::Reading),
        2 => host.clone().prop_map(Op::Disconnect),
        2 => host.clone().prop_map(Op::Connect),
        1 => host.clone().prop_map(Op::Stop),
        1 => (host.clone(), any::<bool>()).prop_map(|(h, e)| Op::Vips(h, e)),
        1 => host.clone().prop_map(Op::Move),
        1 => host.prop_map(Op::Leave),
        2 => Just(Op::Answer),
        1 => Just(Op::Restart),
        1 => burst(hosts),
        6 => prop_oneof![
            Just(1i64), Just(250), Just(1000), Just(2500), Just(3999), Just(4000),
            Just(4250), Just(10_000), Just(61_000),
        ]
        .prop_map(Op::Advance),
    ]
}

/// Two to four reports or readings that reach the evaluator in one batch.
fn burst(hosts: usize) -> impl Strategy<Value = Op> {
    let report = prop_oneof![
        3 => (0..hosts, state()).prop_map(|(h, s)| Op::Report(h, s)),
        1 => (0..hosts).prop_map(Op::Reading),
    ];
    proptest::collection::vec(report, 2..5).prop_map(Op::Burst)
}

/// Inside a new cluster's first master-down interval: each host's first
/// reading (one by one or together), then changes, bursts, connection changes
/// and restarts between 1 ms and 1.5 s apart, as the real clock times them.
fn first_interval_ops() -> impl Strategy<Value = Vec<Op>> {
    (2usize..=4).prop_flat_map(|hosts| {
        let first = move || (0..hosts, state()).prop_map(|(h, s)| Op::Report(h, s));
        let firsts = prop_oneof![
            proptest::collection::vec(first(), hosts..=hosts + 1),
            proptest::collection::vec(first(), hosts..=hosts + 1).prop_map(|f| vec![Op::Burst(f)]),
        ];
        let host = 0..hosts;
        let then = prop_oneof![
            6 => (host.clone(), state()).prop_map(|(h, s)| Op::Report(h, s)),
            2 => host.clone().prop_map(Op::Reading),
            4 => burst(hosts),
            1 => host.clone().prop_map(Op::Disconnect),
            1 => host.clone().prop_map(Op::Connect),
            1 => host.prop_map(Op::Stop),
            2 => Just(Op::Answer),
            2 => Just(Op::Restart),
            6 => prop_oneof![
                Just(1i64), Just(5), Just(20), Just(100), Just(250), Just(500),
                Just(1000), Just(1500),
            ]
            .prop_map(Op::Advance),
        ];
        (firsts, proptest::collection::vec(then, 1..16))
            .prop_map(|(firsts, then)| firsts.into_iter().chain(then).collect())
    })
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    (2usize..=4).prop_flat_map(|hosts| proptest::collection::vec(op(hosts), 1..40))
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(10_000)
}

/// One case: the steps, each evaluated and checked, then everything settles.
fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut world = World::new();
    for op in ops {
        world.apply(op)?;
    }
    world.settle()?;
    prop_assert!(world.evaluations > ops.len());
    Ok(())
}

proptest! {
    // The cases are run by two tests of half the count each, so that the test
    // harness runs them on two cores: 10,000 cases of a debug build in well
    // under a minute of wall time.
    #![proptest_config(ProptestConfig {
        cases: cases().div_ceil(2),
        // ChaCha, the default, costs a sixth of the run in a debug build.
        rng_algorithm: RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_evaluator_keeps_its_promises(ops in ops()) {
        run(&ops)?;
    }

    #[test]
    fn the_evaluator_keeps_its_promises_too(ops in ops()) {
        run(&ops)?;
    }

    #[test]
    fn the_evaluator_keeps_its_promises_in_the_first_interval(ops in first_interval_ops()) {
        run(&ops)?;
    }
}

/// The property test's checks can fail: a cluster whose master fails over
/// within its first interval is expected to report, and does.
#[test]
fn the_checks_see_a_failover() {
    let mut world = World::new();
    let steps = [
        Op::Report(0, State::Master),
        Op::Report(1, State::Backup),
        Op::Advance(1000),
        Op::Report(0, State::Backup),
        Op::Report(1, State::Master),
    ];
    for op in &steps {
        world.apply(op).unwrap();
    }
    world.settle().unwrap();
    assert_eq!(world.event_ids.len(), 1, "one master_changed");
    let inc = &world.clusters[&key_of(NETWORKS[0].0)];
    assert_eq!(inc.last_sole.as_ref().map(|(_, h)| h.as_str()), Some("b"));
}

/// First-window scenarios: lb-a ("a") reports MASTER and lb-b ("b") BACKUP, each
/// its first reading, and what follows comes in the same batch or a moment
/// later. Runs the steps, lets everything settle, and hands back the events as
/// (kind, master, previousMaster).
fn scenario(steps: &[Op]) -> Vec<(String, Value, Value)> {
    let mut world = World::new();
    for op in steps {
        world.apply(op).unwrap();
    }
    world.settle().unwrap();
    world
        .made
        .iter()
        .map(|e| {
            (
                e.kind.clone(),
                e.data
                    .get("cluster")
                    .map_or(Value::Null, |c| c["master"].clone()),
                e.data.get("previousMaster").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn first_pair_then(then: &[Op]) -> Vec<Op> {
    let mut burst = vec![Op::Report(0, State::Master), Op::Report(1, State::Backup)];
    burst.extend(then.iter().cloned());
    vec![Op::Burst(burst)]
}

#[test]
fn a_failover_in_the_first_batch_is_reported() {
    let events = scenario(&first_pair_then(&[
        Op::Report(0, State::Backup),
        Op::Report(1, State::Master),
    ]));
    assert_eq!(
        events,
        [("vrrp.master_changed".to_owned(), json!("b"), json!("a"))]
    );
}

#[test]
fn a_split_brain_in_the_first_batch_is_reported_and_healed() {
    let mut steps = first_pair_then(&[Op::Report(1, State::Master)]);
    steps.push(Op::Advance(10_000));
    steps.push(Op::Answer);
    steps.push(Op::Report(1, State::Backup));
    let kinds: Vec<String> = scenario(&steps).into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(
        kinds,
        [
            "vrrp.split_brain",
            "vrrp.incident_opened",
            "vrrp.master_changed",
            "vrrp.incident_resolved"
        ]
    );
}

#[test]
fn a_flap_in_the_first_batch_is_not_reported() {
    let mut steps = first_pair_then(&[Op::Report(1, State::Master)]);
    steps.push(Op::Advance(1000));
    steps.push(Op::Report(1, State::Backup));
    assert_eq!(scenario(&steps), []);
}

#[test]
fn roles_taken_in_the_first_batch_survive_a_restart() {
    let mut steps = first_pair_then(&[]);
    steps.extend([
        Op::Restart,
        Op::Report(1, State::Master),
        Op::Report(0, State::Backup),
    ]);
    assert_eq!(
        scenario(&steps),
        [("vrrp.master_changed".to_owned(), json!("b"), json!("a"))]
    );
}
