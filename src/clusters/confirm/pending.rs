//! A pending change: what the confirmed state would become if what is observed
//! now held (the target), and its life until it counts. It counts once every
//! live member has delivered a reading after the master-down interval since it
//! was first seen (`unreachable`: once it lasted 60 s), and is dropped when the
//! target changes or disappears before.

use super::state::{master_down_interval, read_at, Confirmed, FOLLOW_UP_MS, UNREACHABLE_SECS};
use crate::clusters::observe::{Finding, IncidentHealth, Observed, Roles};
use crate::clusters::readiness::Verdict;
use crate::clusters::{Cluster, Member};
use chrono::{DateTime, Duration, Utc};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the confirmed state would become if what is observed now held.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Target {
    pub(super) roles: Roles,
    pub(super) health: IncidentHealth,
    pub(super) findings: BTreeMap<String, Finding>,
    /// The readiness verdict (`None` until one is confirmed and while nothing can
    /// be said).
    pub(super) readiness: Option<Verdict>,
}

#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub(super) target: Target,
    pub(super) first_seen: DateTime<Utc>,
    pub(super) due: DateTime<Utc>,
    /// The look after the readings were asked for (set when they are asked for,
    /// once per pending change).
    follow_up: Option<DateTime<Utc>>,
    /// When this change needs another look even if nothing arrives: the end of
    /// the interval, then the follow-up; after that only a reading or a
    /// connection change can complete it, and each brings its own evaluation.
    pub(super) wake: Option<DateTime<Utc>>,
}

fn findings_map(findings: &[Finding]) -> BTreeMap<String, Finding> {
    findings.iter().map(|f| (f.identity(), f.clone())).collect()
}

pub(super) fn target_of(observed: &Observed, confirmed: &Confirmed, readiness: Verdict) -> Target {
    // Readiness is judged from live members: with none (unreachable) or an
    // offline member last reported MASTER (no statement), the confirmed verdict
    // stands rather than turning `unknown` beside the incident that says why.
    let readiness = match observed.health {
        IncidentHealth::NoStatement | IncidentHealth::Unreachable => {
            confirmed.readiness.as_ref().map(|r| r.verdict)
        }
        _ => Some(readiness),
    };
    // Where nothing can be said, the confirmed part is kept: the roles while no
    // member is live; both parts while an offline member last reported MASTER.
    if observed.health == IncidentHealth::NoStatement {
        return Target {
            roles: confirmed.roles.clone(),
            health: confirmed.health,
            findings: confirmed
                .incident
                .as_ref()
                .map(|i| i.findings.clone())
                .unwrap_or_default(),
            readiness,
        };
    }
    let roles = if observed.roles == Roles::Unknown {
        confirmed.roles.clone()
    } else {
        observed.roles.clone()
    };
    let findings = if observed.health == IncidentHealth::Ok {
        BTreeMap::new()
    } else {
        findings_map(&observed.findings)
    };
    Target {
        roles,
        health: observed.health,
        findings,
        readiness,
    }
}

pub(super) fn differs(target: &Target, confirmed: &Confirmed) -> bool {
    let confirmed_findings = confirmed
        .incident
        .as_ref()
        .map(|i| i.findings.keys().cloned().collect::<BTreeSet<_>>())
        .unwrap_or_default();
    target.roles != confirmed.roles
        || target.readiness != confirmed.readiness.as_ref().map(|r| r.verdict)
        || target.health != confirmed.health
        || (target.health != IncidentHealth::Ok
            && target.findings.keys().cloned().collect::<BTreeSet<_>>() != confirmed_findings)
}

/// What one look at a pending change found.
pub(super) enum Look {
    /// It counts now: make its events.
    Due(Pending),
    /// It waits (for the interval, or for readings).
    Waiting(Pending),
}

/// Whether `after` differs from the pending `before` only in masters that stopped
/// being live, the others staying master: then the change keeps its clock. A
/// keepalived stopped gracefully hands its role over at once (priority 0) but takes
/// about a second to exit, and only then can its agent say so; until then its last
/// reading still says MASTER. The remaining master has held the role since the
/// change was first seen, and a member that is not live has nothing to settle (rule
/// 2: it owes no reading), so restarting the interval would only delay the report
/// by that second. A master that turns BACKUP while live is a VRRP transition and
/// restarts the interval as any change does.
pub(super) fn masters_only_departed(before: &Target, after: &Target, cluster: &Cluster) -> bool {
    let masters = |roles: &Roles| -> Vec<String> {
        match roles {
            Roles::One(m) => vec![m.clone()],
            Roles::Several(ms) => ms.clone(),
            Roles::Unknown | Roles::None => Vec::new(),
        }
    };
    let (was, now) = (masters(&before.roles), masters(&after.roles));
    let departed_only = |gone: &String| {
        !cluster
            .members
            .iter()
            .any(|m| &m.client_id == gone && m.live())
    };
    // Only an observed split brain: a target whose roles were kept from the
    // confirmed state (nobody live, no statement) names no master seen live.
    before.health == IncidentHealth::SplitBrain
        && !matches!(
            after.health,
            IncidentHealth::Unreachable | IncidentHealth::NoStatement
        )
        && !now.is_empty()
        && now.len() < was.len()
        && now.iter().all(|m| was.contains(m))
        && was.iter().filter(|m| !now.contains(m)).all(departed_only)
}

/// One look at a cluster whose target differs from its confirmed state: the
/// change pending before (kept if it is still the same change), asks the agents
/// still owing a reading once the interval is over (at most once per client per
/// second across clusters), and says when to look again.
pub(super) fn look(
    previous: Option<Pending>,
    target: Target,
    cluster: &Cluster,
    now: DateTime<Utc>,
    last_request: &mut HashMap<String, DateTime<Utc>>,
    requests: &mut Vec<String>,
) -> Look {
    let interval = if target.health == IncidentHealth::Unreachable {
        Duration::seconds(UNREACHABLE_SECS)
    } else {
        master_down_interval(cluster)
    };
    let pending = match previous {
        Some(p) if p.target == target => p,
        Some(p) if masters_only_departed(&p.target, &target, cluster) => Pending { target, ..p },
        _ => Pending {
            target,
            first_seen: now,
            due: now + interval,
            follow_up: None,
            wake: Some(now + interval),
        },
    };
    let live: Vec<&Member> = cluster.members.iter().filter(|m| m.live()).collect();
    let owing: Vec<&Member> = live
        .iter()
        .copied()
        .filter(|m| read_at(m).is_none_or(|t| t < pending.due))
        .collect();
    let confirmed_now = now >= pending.due
        && (pending.target.health == IncidentHealth::Unreachable || owing.is_empty());
    if confirmed_now {
        return Look::Due(pending);
    }
    let mut pending = pending;
    if now >= pending.due && pending.follow_up.is_none() {
        let planned = pending.due + Duration::milliseconds(FOLLOW_UP_MS);
        pending.follow_up = Some(if planned > now {
            planned
        } else {
            now + Duration::milliseconds(FOLLOW_UP_MS)
        });
        for m in owing {
            let recent = last_request
                .get(&m.client_id)
                .is_some_and(|t| now - *t < Duration::seconds(1));
            if !recent && !requests.contains(&m.client_id) {
                last_request.insert(m.client_id.clone(), now);
                requests.push(m.client_id.clone());
            }
        }
    }
    // Nothing but time can move a change before its interval ends or its
    // follow-up; after the follow-up only readings and connection changes
    // can, and those are evaluated as they come: looking again every few
    // hundred ms while an agent stays silent would only burn CPU.
    pending.wake = if now < pending.due {
        Some(pending.due)
    } else {
        pending.follow_up.filter(|f| *f > now)
    };
    Look::Waiting(pending)
}
