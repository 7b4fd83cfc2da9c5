//! The drill itself, against a [`Probe`]: preflight, drain the master's host,
//! wait for a new master, undrain, wait for the cluster to settle, report.
//! No I/O here but through the probe, and time only from its clock.

use super::drill::{Drill, Status};
use crate::clusters::readiness::Verdict;
use crate::clusters::{Cluster, Member};
use chrono::{DateTime, Duration, Utc};
use vrrp_protocol::actions::{DRAIN, UNDRAIN};

/// What a drill needs from the world.
pub trait Probe {
    fn now(&self) -> DateTime<Utc>;
    /// The cluster as the stored readings show it now.
    fn cluster(&self, key: &str) -> Option<Cluster>;
    /// Drains or undrains a client's host; the agent's refusal otherwise.
    fn act(&self, client_id: &str, action: &str, reason: &str, by: &str) -> Result<(), String>;
    /// Waits a moment before looking again (a tenth of a second in the server).
    fn pause(&self);
    /// The drill moved on: store it, tell whoever watches.
    fn progress(&self, drill: &Drill);
}

/// How long a drill waits for each thing.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// For a new master after the drain (then the drain is rolled back).
    pub takeover: Duration,
    /// For the master to stay put after the undrain.
    pub settled_after: Duration,
    /// For the cluster to settle after the undrain, at most (beyond the old
    /// master's own `preempt_delay`).
    pub settle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            takeover: Duration::seconds(15),
            settled_after: Duration::seconds(5),
            settle: Duration::seconds(30),
        }
    }
}

/// Why a drill does not start, with what the preflight found.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub reason: String,
    pub findings: Vec<String>,
}

/// The live member in MASTER, when there is exactly one.
fn master_alone(cluster: &Cluster) -> Option<&Member> {
    let mut masters = cluster
        .members
        .iter()
        .filter(|m| m.live() && m.state() == "MASTER");
    let first = masters.next()?;
    masters.next().is_none().then_some(first)
}

/// Whether a drill may start on `cluster`; the master's client id and host.
pub fn preflight(cluster: &Cluster, force: bool) -> Result<(String, String), Refusal> {
    let findings: Vec<String> = cluster
        .readiness
        .findings
        .iter()
        .map(|f| f.message.clone())
        .collect();
    if cluster.readiness.verdict != Verdict::Ready && !force {
        return Err(Refusal {
            reason: format!(
                "readiness is {}, not ready: a failover may not work (force to drill anyway)",
                cluster.readiness.verdict.as_str()
            ),
            findings,
        });
    }
    let Some(master) = master_alone(cluster) else {
        return Err(Refusal {
            reason: "the cluster has no single live MASTER to drain".into(),
            findings,
        });
    };
    if master.drain.is_none() {
        return Err(Refusal {
            reason: format!(
                "{} takes no host actions: set actions.drainFile in its agent's config (see the host guide)",
                master.host
            ),
            findings,
        });
    }
    if master.drained() {
        return Err(Refusal {
            reason: format!("{} is drained already", master.host),
            findings,
        });
    }
    if !cluster
        .members
        .iter()
        .any(|m| m.live() && m.client_id != master.client_id && !m.drained())
    {
        return Err(Refusal {
            reason: "no other live, undrained member could take over".into(),
            findings,
        });
    }
    Ok((master.client_id.clone(), master.host.clone()))
}

fn transition(m: &Member) -> Option<DateTime<Utc>> {
    m.instance
        .last_transition
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn member<'a>(cluster: &'a Cluster, client_id: &str) -> Option<&'a Member> {
    cluster.members.iter().find(|m| m.client_id == client_id)
}

/// Waits until `done` says yes (its answer returned) or the deadline passes.
fn wait_for<T>(
    probe: &dyn Probe,
    key: &str,
    deadline: DateTime<Utc>,
    mut done: impl FnMut(&Cluster) -> Option<T>,
) -> Option<T> {
    loop {
        if let Some(found) = probe.cluster(key).as_ref().and_then(&mut done) {
            return Some(found);
        }
        if probe.now() >= deadline {
            return None;
        }
        probe.pause();
    }
}

/// Runs a drill whose preflight passed: `old` is the master's (client id, host).
pub fn run(drill: &mut Drill, old: (String, String), probe: &dyn Probe, limits: Limits) {
    let (old_id, old_host) = old;
    let key = drill.cluster.clone();
    let reason = format!("failover drill {}: {}", &drill.id[..8], drill.reason);
    drill.old_master = Some(old_host.clone());
    drill.step(probe.now(), format!("Draining {old_host}, the master"));
    probe.progress(drill);
    if let Err(e) = probe.act(&old_id, DRAIN, &reason, &drill.by) {
        drill
            .findings
            .push(format!("{old_host} could not be drained: {e}"));
        drill.finish(Status::Failed, probe.now());
        probe.progress(drill);
        return;
    }
    let drained_at = probe.now();
    drill.step(
        drained_at,
        format!("{old_host} drained; waiting for a new master"),
    );
    probe.progress(drill);

    // A new master alone, holding its addresses, and the old one out of MASTER.
    let taken = wait_for(probe, &key, drained_at + limits.takeover, |c| {
        let new =
            master_alone(c).filter(|m| m.client_id != old_id && !m.instance.vips.is_empty())?;
        let old = member(c, &old_id).filter(|m| m.state() != "MASTER")?;
        Some((
            new.client_id.clone(),
            new.host.clone(),
            transition(old),
            transition(new),
        ))
    });
    let Some((_, new_host, left, entered)) = taken else {
        drill.step(
            probe.now(),
            format!(
                "No new master within {} s: undraining {old_host} at once",
                limits.takeover.num_seconds()
            ),
        );
        let undone = probe.act(&old_id, UNDRAIN, &reason, &drill.by);
        if let Err(e) = undone {
            drill.findings.push(format!(
                "{old_host} could not be undrained: {e}; undrain it by hand"
            ));
        }
        drill.findings.push(format!(
            "No member took over within {} s of the drain",
            limits.takeover.num_seconds()
        ));
        drill.finish(Status::RolledBack, probe.now());
        probe.progress(drill);
        return;
    };
    drill.new_master = Some(new_host.clone());
    drill.takeover_ms = match (left, entered) {
        (Some(l), Some(e)) => Some((e - l).num_milliseconds()),
        _ => {
            drill
                .findings
                .push("keepalived's transition times are missing: no takeover time".into());
            None
        }
    };
    drill.step(
        probe.now(),
        match drill.takeover_ms {
            Some(ms) => format!(
                "{new_host} is MASTER, {ms} ms after {old_host} left it; undraining {old_host}"
            ),
            None => format!("{new_host} is MASTER; undraining {old_host}"),
        },
    );
    probe.progress(drill);
    if let Err(e) = probe.act(&old_id, UNDRAIN, &reason, &drill.by) {
        drill.findings.push(format!(
            "{old_host} could not be undrained: {e}; it stays drained until undrained by hand"
        ));
        drill.finish(Status::Failed, probe.now());
        probe.progress(drill);
        return;
    }
    let undrained_at = probe.now();
    drill.step(
        undrained_at,
        format!("{old_host} undrained; waiting for the cluster to settle"),
    );
    probe.progress(drill);

    // Settled: one master, the same for `settled_after`. With preempt on the old
    // master, its own delay is waited for on top.
    let preempt_delay = probe
        .cluster(&key)
        .as_ref()
        .and_then(|c| member(c, &old_id).and_then(|m| m.instance.preempt_delay))
        .map_or(Duration::zero(), |s| {
            Duration::milliseconds((s * 1000.0) as i64)
        });
    let deadline = undrained_at + limits.settle + preempt_delay;
    let mut last: Option<(String, DateTime<Utc>)> = None;
    let settled = wait_for(probe, &key, deadline, |c| {
        let now = probe.now();
        let Some(m) = master_alone(c) else {
            last = None;
            return None;
        };
        match &last {
            Some((id, since)) if *id == m.client_id => {
                let back = m.client_id == old_id;
                // Back on the old master: settled at once; else wait and see
                // whether preempt moves it.
                (back || now - *since >= limits.settled_after + preempt_delay)
                    .then(|| (m.client_id.clone(), m.host.clone(), transition(m)))
            }
            _ => {
                last = Some((m.client_id.clone(), now));
                None
            }
        }
    });
    let Some((final_id, final_host, final_entered)) = settled else {
        drill.findings.push(format!(
            "The cluster did not settle on one master within {} s of the undrain",
            (deadline - undrained_at).num_seconds()
        ));
        drill.finish(Status::Failed, probe.now());
        probe.progress(drill);
        return;
    };
    if final_id == old_id {
        // From the undrain (the agent's answer, on our clock) to keepalived on
        // the old master entering MASTER again (its own clock): the preempt,
        // its delay included. Not the two hosts' transitions, as for the
        // takeover: on preempt the old master enters MASTER a few ms *before*
        // the other leaves it.
        drill.return_ms = final_entered.map(|e| (e - undrained_at).num_milliseconds());
        drill.step(
            probe.now(),
            format!("Preempt gave MASTER back to {final_host}"),
        );
    } else {
        drill.step(
            probe.now(),
            format!("{final_host} stays MASTER (no preempt)"),
        );
        drill.findings.push(format!(
            "{old_host} did not take MASTER back after the undrain (preempt off or delayed): {final_host} stays MASTER"
        ));
    }
    drill.finish(Status::Passed, probe.now());
    probe.progress(drill);
}

#[cfg(test)]
mod tests;
