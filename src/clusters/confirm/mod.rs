//! The cluster evaluator: turns what is observed into confirmed changes and the
//! events they make (the spec's state machine), without I/O.
//!
//! [`Evaluator::evaluate`] takes the clusters as they are now and the time, and
//! returns the events to record, the agents to ask for a fresh reading, and when
//! to look again. A difference from the confirmed state is first pending; it is
//! confirmed once every live member has delivered a reading after the master-down
//! interval (3 x advert_int + 1 s) since it was first seen (`unreachable` after
//! 60 s), and dropped without report if it disappears before.
//!
//! - `pending`: what a change is (the target), and its pending life until it
//!   counts: interval, readings owed, requests, wake-ups.
//! - `events`: the events of a confirmed change, role events first.
//! - `incidents`: the incident bookkeeping of a confirmed change (opened,
//!   updated, resolved).
//! - `tests`: the state machine on a driven clock.

use crate::activity::Event;
use crate::clusters::observe::{observe, IncidentHealth, Roles};
use crate::clusters::Cluster;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod events;
mod incidents;
mod pending;
mod state;
#[cfg(test)]
mod tests;

pub use events::cluster_data;
pub use incidents::silence_ended;
use pending::{differs, target_of, Look, Pending};
pub use state::{
    master_down_interval, Confirmed, ConfirmedReadiness, Incident, FOLLOW_UP_MS, UNREACHABLE_SECS,
};

/// How long after a member was drained or undrained a change of master is
/// still taken as its consequence (planned): keepalived hands over within a few
/// advert intervals; preempt may wait `preempt_delay` (at most 1,000 s, rarely
/// more than a minute).
pub const PLANNED_WINDOW_SECS: i64 = 120;

#[derive(Debug, Clone)]
struct Tracked {
    /// Members drained at the last evaluation, and when that set last moved:
    /// a master change while a member is drained, or soon after one was
    /// drained or undrained, is planned (kept in memory only: after a restart
    /// a drained member still makes it planned).
    drained: BTreeSet<String>,
    drain_moved_at: Option<DateTime<Utc>>,
    confirmed: Confirmed,
    pending: Option<Pending>,
    /// While the cluster is still being seen for the first time: its members'
    /// first reports contribute their roles silently.
    settling: Option<Settling>,
}

/// The first master-down interval of a newly seen cluster (rule 4, held while
/// its hosts' first readings come in).
#[derive(Debug, Clone)]
struct Settling {
    until: DateTime<Utc>,
    /// Members whose role has been taken into the confirmed roles (each was live
    /// here at least once): any later report of theirs is a change like any other.
    seen: BTreeSet<String>,
}

/// What one evaluation asks of the thread around it.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Clusters whose confirmed state changed (to persist).
    pub changed: Vec<String>,
    /// Clusters that are gone (to forget).
    pub removed: Vec<String>,
    /// Per cluster whose change was confirmed now: when it was first seen (where
    /// its history interval starts).
    pub since: HashMap<String, DateTime<Utc>>,
    pub events: Vec<Event>,
    /// Agents to send REQUEST_STATE_UPDATE.
    pub requests: Vec<String>,
    /// When to evaluate again even if nothing arrives.
    pub wake_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Default)]
pub struct Evaluator {
    clusters: BTreeMap<String, Tracked>,
    last_request: HashMap<String, DateTime<Utc>>,
}

/// The (client id, host) of the one master, if there is exactly one.
fn master_of(roles: &Roles, cluster: &Cluster) -> Option<(String, String)> {
    match roles {
        Roles::One(id) => cluster
            .members
            .iter()
            .find(|m| &m.client_id == id)
            .map(|m| (id.clone(), m.host.clone())),
        _ => None,
    }
}

/// The first reports of members not seen before add their roles to the
/// confirmed ones, without a report, as if they had been there when the cluster
/// was first seen: a MASTER joins the confirmed masters, anything else adds no
/// master (and makes "nobody live" into "nobody MASTER"). Only the newcomers'
/// roles move: what members already seen report is compared as usual.
/// Says whether the confirmed state moved (it is then to be persisted like any
/// confirmed change, or a restart would forget the roles taken).
fn take_first_reports(
    confirmed: &mut Confirmed,
    seen: &mut BTreeSet<String>,
    cluster: &Cluster,
) -> bool {
    let before = confirmed.roles.clone();
    for m in cluster.members.iter().filter(|m| m.live()) {
        if !seen.insert(m.client_id.clone()) {
            continue;
        }
        let mut masters: Vec<String> = match &confirmed.roles {
            Roles::Unknown | Roles::None => Vec::new(),
            Roles::One(id) => vec![id.clone()],
            Roles::Several(ids) => ids.clone(),
        };
        if m.state() == "MASTER" && !masters.contains(&m.client_id) {
            masters.push(m.client_id.clone());
        }
        masters.sort();
        confirmed.roles = match masters.len() {
            0 => Roles::None,
            1 => Roles::One(masters.remove(0)),
            _ => Roles::Several(masters),
        };
    }
    if confirmed.roles == before {
        return false;
    }
    if let Some(master) = master_of(&confirmed.roles, cluster) {
        confirmed.master_alone = Some(master);
    }
    confirmed.cluster = cluster_data(cluster);
    true
}

impl Evaluator {
    /// An evaluator that resumes from persisted confirmed states.
    pub fn restore(states: impl IntoIterator<Item = (String, Confirmed)>) -> Evaluator {
        Evaluator {
            clusters: states
                .into_iter()
                .map(|(k, confirmed)| {
                    (
                        k,
                        Tracked {
                            confirmed,
                            pending: None,
                            settling: None,
                            drained: BTreeSet::new(),
                            drain_moved_at: None,
                        },
                    )
                })
                .collect(),
            last_request: HashMap::new(),
        }
    }

    /// Evaluates only these clusters (a host's fresh reading touches only its own);
    /// a cluster missing here is not taken as gone.
    pub fn evaluate_some<'a>(
        &mut self,
        clusters: impl IntoIterator<Item = &'a Cluster>,
        now: DateTime<Utc>,
    ) -> Outcome {
        let now = chrono::SubsecRound::trunc_subsecs(now, 3);
        let mut out = Outcome::default();
        for cluster in clusters {
            self.evaluate_one(cluster, now, &mut out);
        }
        out.wake_at = self.next_wake();
        out
    }

    /// The earliest moment a pending change needs another look.
    pub fn next_wake(&self) -> Option<DateTime<Utc>> {
        self.clusters
            .values()
            .filter_map(|t| t.pending.as_ref().and_then(|p| p.wake))
            .min()
    }

    /// Whether some cluster is in its first master-down interval, where a
    /// member's first report is taken silently (the thread then evaluates a
    /// host's readings one by one, see `thread::ReadingBatch`).
    pub fn in_first_window(&self, now: DateTime<Utc>) -> bool {
        self.clusters
            .values()
            .any(|t| t.settling.as_ref().is_some_and(|s| now < s.until))
    }

    /// Clusters with a change pending.
    pub fn pending_keys(&self) -> Vec<String> {
        self.clusters
            .iter()
            .filter(|(_, t)| t.pending.is_some())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Every cluster seen, with its confirmed state.
    pub fn all_confirmed(&self) -> impl Iterator<Item = (&String, &Confirmed)> {
        self.clusters.iter().map(|(k, t)| (k, &t.confirmed))
    }

    /// The confirmed state of a cluster, if it was seen.
    pub fn confirmed(&self, key: &str) -> Option<&Confirmed> {
        self.clusters.get(key).map(|t| &t.confirmed)
    }

    /// Evaluates every cluster as it is now.
    pub fn evaluate(&mut self, clusters: &[Cluster], now: DateTime<Utc>) -> Outcome {
        // Readings carry their time in milliseconds; so does every time here, or a
        // reading of the very millisecond an interval ends would read as before it.
        let now = chrono::SubsecRound::trunc_subsecs(now, 3);
        let mut out = Outcome::default();
        let present: BTreeSet<&str> = clusters.iter().map(|c| c.key.as_str()).collect();
        // A cluster that is gone with an incident open: resolved by removal.
        let gone: Vec<String> = self
            .clusters
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        for key in gone {
            out.removed.push(key.clone());
            if let Some(tracked) = self.clusters.remove(&key) {
                if let Some(incident) = tracked.confirmed.incident {
                    out.events.push(incidents::resolved(
                        &tracked.confirmed.cluster,
                        &incident,
                        None,
                        "removed",
                        tracked.confirmed.health,
                        now,
                        None,
                    ));
                }
            }
        }
        for cluster in clusters {
            self.evaluate_one(cluster, now, &mut out);
        }
        out.wake_at = self.next_wake();
        out
    }

    fn evaluate_one(&mut self, cluster: &Cluster, now: DateTime<Utc>, out: &mut Outcome) {
        let observed = observe(cluster);
        if !self.clusters.contains_key(&cluster.key) {
            out.changed.push(cluster.key.clone());
        }
        let tracked = self.clusters.entry(cluster.key.clone()).or_insert_with(|| {
            // First sighting: nothing is confirmed yet; the roles come from the
            // members' first reports below and the health starts from ok, so an
            // unhealthy cluster still opens an incident.
            Tracked {
                confirmed: Confirmed {
                    roles: Roles::Unknown,
                    master_alone: None,
                    health: IncidentHealth::Ok,
                    incident: None,
                    cluster: cluster_data(cluster),
                    readiness: None,
                },
                pending: None,
                drained: BTreeSet::new(),
                drain_moved_at: None,
                settling: Some(Settling {
                    until: now + master_down_interval(cluster),
                    seen: BTreeSet::new(),
                }),
            }
        });
        // Hosts rarely report in the same instant: a backup whose first reading
        // comes before its master's would otherwise make the master's arrival a
        // failover. For one master-down interval a member's first report is taken
        // silently, as at the first sighting; a member already seen changing its
        // role is a change like any other.
        if let Some(settling) = &mut tracked.settling {
            if now < settling.until {
                let moved = take_first_reports(&mut tracked.confirmed, &mut settling.seen, cluster);
                if moved && !out.changed.contains(&cluster.key) {
                    out.changed.push(cluster.key.clone());
                }
            } else {
                tracked.settling = None;
            }
        }
        // A good verdict where none or another good one was confirmed (a first
        // sighting, the first since readiness existed, `unknown` becoming `ready`
        // as members report) is taken silently, as first roles are: nothing got
        // worse or better for an operator. A bad one goes the way of any change,
        // so that it is confirmed and reported.
        let good_before = tracked
            .confirmed
            .readiness
            .as_ref()
            .is_none_or(|r| r.verdict.rank() == 0);
        if good_before
            && cluster.readiness.verdict.rank() == 0
            && tracked.confirmed.readiness.as_ref().map(|r| r.verdict)
                != Some(cluster.readiness.verdict)
            && !matches!(
                observed.health,
                IncidentHealth::NoStatement | IncidentHealth::Unreachable
            )
        {
            tracked.confirmed.readiness = Some(ConfirmedReadiness {
                verdict: cluster.readiness.verdict,
                findings: cluster.readiness.findings.clone(),
            });
            if !out.changed.contains(&cluster.key) {
                out.changed.push(cluster.key.clone());
            }
        }
        let drained: BTreeSet<String> = cluster
            .members
            .iter()
            .filter(|m| m.drained())
            .map(|m| m.client_id.clone())
            .collect();
        if drained != tracked.drained {
            tracked.drained = drained;
            tracked.drain_moved_at = Some(now);
        }
        let planned = !tracked.drained.is_empty()
            || tracked
                .drain_moved_at
                .is_some_and(|at| (now - at).num_seconds() < PLANNED_WINDOW_SECS);
        let target = target_of(&observed, &tracked.confirmed, cluster.readiness.verdict);
        if !differs(&target, &tracked.confirmed) {
            tracked.pending = None;
            return;
        }
        match pending::look(
            tracked.pending.take(),
            target,
            cluster,
            now,
            &mut self.last_request,
            &mut out.requests,
        ) {
            Look::Due(pending) => {
                out.since.insert(cluster.key.clone(), pending.first_seen);
                events::confirm(
                    &mut tracked.confirmed,
                    &pending,
                    cluster,
                    now,
                    planned,
                    &mut out.events,
                );
                out.changed.push(cluster.key.clone());
            }
            Look::Waiting(pending) => tracked.pending = Some(pending),
        }
    }
}
