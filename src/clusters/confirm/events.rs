//! The events of a confirmed change: role events (`vrrp.master_changed`,
//! `vrrp.split_brain`, `vrrp.master_lost`) first, then the incident's, then
//! `cluster.readiness_changed`, all with the same `data.cluster`; and the
//! `data.cluster` and subject they carry.

use super::incidents;
use super::pending::Pending;
use super::state::{event, instance_name, Confirmed, ConfirmedReadiness};
use crate::activity::Event;
use crate::clusters::observe::Roles;
use crate::clusters::{Cluster, Member};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use vrrp_protocol::ActivityLevel;

/// `data.cluster`: the same in every event of a change.
pub fn cluster_data(cluster: &Cluster) -> Value {
    let live_masters: Vec<&Member> = cluster
        .members
        .iter()
        .filter(|m| m.live() && m.state() == "MASTER")
        .collect();
    json!({
        "key": cluster.key,
        "site": cluster.site,
        "vrid": cluster.vrid,
        "networks": cluster.networks,
        "vips": cluster.vips,
        "health": cluster.health.as_str(),
        "master": if live_masters.len() == 1 { json!(live_masters[0].host) } else { Value::Null },
        "masters": live_masters.iter().map(|m| m.host.clone()).collect::<Vec<_>>(),
        "members": cluster.members.iter().map(|m| json!({
            "host": m.host,
            "clientId": m.client_id,
            "instanceName": instance_name(m),
            "state": m.state(),
            "priority": m.instance.priority,
            "effectivePriority": m.instance.effective_priority,
            "online": m.online,
            "reporting": m.reporting,
            "readAt": m.read_at,
            "vips": m.instance.vips,
            // Why a member is in FAULT, in words (null otherwise).
            "faultReason": m.instance.fault_reason,
            // Drained members are a planned absence: who, why, since when.
            "drain": m.drain,
        })).collect::<Vec<_>>(),
    })
}

/// Makes every event of a confirmed change, role events first, and moves the
/// confirmed state on.
pub(super) fn confirm(
    confirmed: &mut Confirmed,
    pending: &Pending,
    cluster: &Cluster,
    now: DateTime<Utc>,
    planned: bool,
    events: &mut Vec<Event>,
) {
    let data_cluster = cluster_data(cluster);
    let member = |id: &str| cluster.members.iter().find(|m| m.client_id == id);
    let previous_master = confirmed
        .master_alone
        .as_ref()
        .map(|(_, host)| host.clone());
    let target = &pending.target;

    if target.roles != confirmed.roles {
        // `planned`: a member is drained, or was drained or undrained moments
        // ago (a drain or a drill): a pager template can skip the change.
        let role_data = json!({
            "cluster": data_cluster,
            "previousMaster": previous_master,
            "planned": planned,
        });
        match &target.roles {
            Roles::One(id) => {
                let m = member(id);
                let was_other = !matches!(&confirmed.roles, Roles::One(prev) if prev == id);
                if was_other {
                    // For a new master, keepalived's own last transition.
                    let at = m
                        .and_then(|m| m.instance.last_transition.as_deref())
                        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                        .map_or(pending.first_seen, |t| t.with_timezone(&Utc));
                    events.push(event(
                        "vrrp.master_changed",
                        ActivityLevel::Info,
                        m,
                        at,
                        now,
                        role_data,
                        None,
                    ));
                }
                confirmed.master_alone = m.map(|m| (id.clone(), m.host.clone()));
            }
            Roles::Several(ids) => {
                let first = ids
                    .iter()
                    .filter_map(|id| member(id))
                    .min_by(|a, b| a.host.cmp(&b.host));
                events.push(event(
                    "vrrp.split_brain",
                    ActivityLevel::Info,
                    first,
                    pending.first_seen,
                    now,
                    role_data,
                    None,
                ));
            }
            Roles::None => {
                let previous = confirmed
                    .master_alone
                    .as_ref()
                    .and_then(|(id, _)| member(id));
                events.push(event(
                    "vrrp.master_lost",
                    ActivityLevel::Info,
                    previous,
                    pending.first_seen,
                    now,
                    role_data,
                    None,
                ));
            }
            Roles::Unknown => {}
        }
        confirmed.roles = target.roles.clone();
    }

    incidents::confirm_health(confirmed, pending, cluster, &data_cluster, now, events);
    confirm_readiness(confirmed, pending, cluster, &data_cluster, now, events);
    confirmed.cluster = data_cluster;
}

/// A confirmed change of the readiness verdict: one `cluster.readiness_changed`,
/// a warning when it got worse, info when better. The first verdict of a
/// cluster (a first sighting, or the first after an upgrade) is taken silently
/// when it is good and reported when it is not: a cluster that cannot fail
/// over is news whenever it is first seen.
fn confirm_readiness(
    confirmed: &mut Confirmed,
    pending: &Pending,
    cluster: &Cluster,
    data_cluster: &Value,
    now: DateTime<Utc>,
    events: &mut Vec<Event>,
) {
    let Some(verdict) = pending.target.readiness else {
        return;
    };
    let before = confirmed.readiness.take();
    if before.as_ref().map(|b| b.verdict) == Some(verdict) {
        confirmed.readiness = before;
        return;
    }
    // The findings of this very evaluation: the target was judged from it.
    let after = ConfirmedReadiness {
        verdict,
        findings: if cluster.readiness.verdict == verdict {
            cluster.readiness.findings.clone()
        } else {
            Vec::new()
        },
    };
    let worse = before
        .as_ref()
        .map_or(verdict.rank() > 0, |b| verdict.rank() > b.verdict.rank());
    if before.is_some() || worse {
        events.push(event(
            "cluster.readiness_changed",
            if worse {
                ActivityLevel::Warning
            } else {
                ActivityLevel::Info
            },
            None,
            pending.first_seen,
            now,
            json!({
                "cluster": data_cluster,
                "before": before.as_ref().map(|b| b.verdict),
                "after": verdict,
                "findings": after.findings,
                "previousFindings": before.as_ref().map(|b| &b.findings),
            }),
            None,
        ));
    }
    confirmed.readiness = Some(after);
}
