//! The cluster evaluator: turns what is observed into confirmed changes and the
//! events they make (issue 6's state machine), without I/O.
//!
//! [`Evaluator::evaluate`] takes the clusters as they are now and the time, and
//! returns the events to record, the agents to ask for a fresh reading, and when
//! to look again. A difference from the confirmed state is first pending; it is
//! confirmed once every live member has delivered a reading after the master-down
//! interval (3 x advert_int + 1 s) since it was first seen (`unreachable` after
//! 60 s), and dropped without report if it disappears before.

use crate::activity::Event;
use crate::clock::iso;
use crate::clusters::observe::{observe, Finding, IncidentHealth, Observed, Roles};
use crate::clusters::{Cluster, Member};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use vrrp_protocol::ActivityLevel;

/// `unreachable` has no agent to deliver a reading; it counts once it lasted this long.
pub const UNREACHABLE_SECS: i64 = 60;
/// Margin after the interval before looking again for the readings asked for.
pub const FOLLOW_UP_MS: i64 = 250;

/// The confirmed part of a cluster's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmed {
    pub roles: Roles,
    /// The last host that was master alone: (client id, host).
    pub master_alone: Option<(String, String)>,
    /// Incident health as confirmed (`ok` when none is open).
    pub health: IncidentHealth,
    pub incident: Option<Incident>,
    /// `data.cluster` as last confirmed (for a resolution by removal).
    pub cluster: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    pub id: String,
    pub history: Vec<String>,
    pub opened_at: DateTime<Utc>,
    /// The findings of the last event, by identity, with their reasons.
    pub findings: BTreeMap<String, Finding>,
}

/// What the confirmed state would become if what is observed now held.
#[derive(Debug, Clone, PartialEq)]
struct Target {
    roles: Roles,
    health: IncidentHealth,
    findings: BTreeMap<String, Finding>,
}

#[derive(Debug, Clone)]
struct Pending {
    target: Target,
    first_seen: DateTime<Utc>,
    due: DateTime<Utc>,
    /// The look after the readings were asked for (set when they are asked for,
    /// once per pending change).
    follow_up: Option<DateTime<Utc>>,
    /// When this change needs another look even if nothing arrives: the end of
    /// the interval, then the follow-up; after that only a reading or a
    /// connection change can complete it, and each brings its own evaluation.
    wake: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
struct Tracked {
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

impl Confirmed {
    /// The persisted form.
    pub fn to_json(&self) -> Value {
        json!({
            "roles": self.roles.to_json(),
            "masterAlone": self.master_alone.as_ref().map(|(id, host)| json!([id, host])),
            "health": self.health.as_str(),
            "incident": self.incident.as_ref().map(|i| json!({
                "id": i.id,
                "history": i.history,
                "openedAt": iso(i.opened_at),
                "findings": i.findings.values().map(Finding::to_json).collect::<Vec<_>>(),
            })),
            "cluster": self.cluster,
        })
    }

    pub fn from_json(v: &Value) -> Option<Confirmed> {
        let incident = match &v["incident"] {
            Value::Null => None,
            i => Some(Incident {
                id: i["id"].as_str()?.to_owned(),
                history: i["history"]
                    .as_array()?
                    .iter()
                    .filter_map(|h| h.as_str().map(str::to_owned))
                    .collect(),
                opened_at: DateTime::parse_from_rfc3339(i["openedAt"].as_str()?)
                    .ok()?
                    .with_timezone(&Utc),
                findings: i["findings"]
                    .as_array()?
                    .iter()
                    .filter_map(Finding::from_json)
                    .map(|f| (f.identity(), f))
                    .collect(),
            }),
        };
        Some(Confirmed {
            roles: Roles::from_json(&v["roles"])?,
            master_alone: v["masterAlone"].as_array().and_then(|a| {
                Some((
                    a.first()?.as_str()?.to_owned(),
                    a.get(1)?.as_str()?.to_owned(),
                ))
            }),
            health: IncidentHealth::parse(v["health"].as_str()?)?,
            incident,
            cluster: v["cluster"].clone(),
        })
    }
}

/// What one evaluation asks of the thread around it.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Clusters whose confirmed state changed (to persist).
    pub changed: Vec<String>,
    /// Clusters that are gone (to forget).
    pub removed: Vec<String>,
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

/// The master-down interval of a cluster: 3 x advert_int + 1 s, with the longest
/// advert_int among its members (hosts configured apart wait for the slowest);
/// keepalived's default of 1 s when no member reports one.
pub fn master_down_interval(cluster: &Cluster) -> Duration {
    let advert = cluster
        .members
        .iter()
        .filter_map(|m| m.instance.get("advertInterval").and_then(Value::as_f64))
        .filter(|a| a.is_finite() && *a > 0.0)
        .fold(None, |longest: Option<f64>, a| {
            Some(longest.map_or(a, |l| l.max(a)))
        })
        .unwrap_or(1.0)
        // keepalived accepts at most 255 s.
        .min(255.0);
    Duration::milliseconds((3.0 * advert * 1000.0).round() as i64 + 1000)
}

fn read_at(m: &Member) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(m.read_at.as_deref()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn instance_name(m: &Member) -> String {
    m.instance
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `data.cluster`: the same in every event of a change.
pub fn cluster_data(cluster: &Cluster) -> Value {
    let live_masters: Vec<&Member> = cluster
        .members
        .iter()
        .filter(|m| m.live() && m.state() == "MASTER")
        .collect();
    json!({
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
            "priority": m.instance.get("priority").cloned().unwrap_or(Value::Null),
            "effectivePriority": m.instance.get("effectivePriority").cloned().unwrap_or(Value::Null),
            "online": m.online,
            "reporting": m.reporting,
            "readAt": m.read_at,
            "vips": m.instance.get("vips").cloned().unwrap_or(json!([])),
        })).collect::<Vec<_>>(),
    })
}

fn findings_map(findings: &[Finding]) -> BTreeMap<String, Finding> {
    findings.iter().map(|f| (f.identity(), f.clone())).collect()
}

fn target_of(observed: &Observed, confirmed: &Confirmed) -> Target {
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
    }
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
fn take_first_reports(confirmed: &mut Confirmed, seen: &mut BTreeSet<String>, cluster: &Cluster) {
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
        return;
    }
    if let Some(master) = master_of(&confirmed.roles, cluster) {
        confirmed.master_alone = Some(master);
    }
    confirmed.cluster = cluster_data(cluster);
}

fn differs(target: &Target, confirmed: &Confirmed) -> bool {
    let confirmed_findings = confirmed
        .incident
        .as_ref()
        .map(|i| i.findings.keys().cloned().collect::<BTreeSet<_>>())
        .unwrap_or_default();
    target.roles != confirmed.roles
        || target.health != confirmed.health
        || (target.health != IncidentHealth::Ok
            && target.findings.keys().cloned().collect::<BTreeSet<_>>() != confirmed_findings)
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
                        },
                    )
                })
                .collect(),
            last_request: HashMap::new(),
        }
    }

    /// Evaluates only these clusters (a host's fresh reading touches only its own);
    /// a cluster missing here is not taken as gone.
    pub fn evaluate_some(&mut self, clusters: &[Cluster], now: DateTime<Utc>) -> Outcome {
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

    /// Clusters with a change pending.
    pub fn pending_keys(&self) -> Vec<String> {
        self.clusters
            .iter()
            .filter(|(_, t)| t.pending.is_some())
            .map(|(k, _)| k.clone())
            .collect()
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
                    out.events.push(resolved(
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
                },
                pending: None,
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
        // role is a change like any other (issue 13).
        if let Some(settling) = &mut tracked.settling {
            if now < settling.until {
                take_first_reports(&mut tracked.confirmed, &mut settling.seen, cluster);
            } else {
                tracked.settling = None;
            }
        }
        let target = target_of(&observed, &tracked.confirmed);
        if !differs(&target, &tracked.confirmed) {
            tracked.pending = None;
            return;
        }
        let interval = if target.health == IncidentHealth::Unreachable {
            Duration::seconds(UNREACHABLE_SECS)
        } else {
            master_down_interval(cluster)
        };
        let pending = match tracked.pending.take() {
            Some(p) if p.target == target => p,
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
            confirm(
                &mut tracked.confirmed,
                &pending,
                cluster,
                now,
                &mut out.events,
            );
            out.changed.push(cluster.key.clone());
            return;
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
                let recent = self
                    .last_request
                    .get(&m.client_id)
                    .is_some_and(|t| now - *t < Duration::seconds(1));
                if !recent && !out.requests.contains(&m.client_id) {
                    self.last_request.insert(m.client_id.clone(), now);
                    out.requests.push(m.client_id.clone());
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
        tracked.pending = Some(pending);
    }
}

fn event(
    kind: &str,
    level: ActivityLevel,
    subject_member: Option<&Member>,
    occurred_at: DateTime<Utc>,
    now: DateTime<Utc>,
    data: Value,
    correlation: Option<String>,
) -> Event {
    let mut e = Event::server(
        kind,
        level,
        subject_member.map(|m| m.client_id.clone()),
        data,
        now,
    );
    e.occurred_at = iso(occurred_at);
    e.correlation_id = correlation;
    if let Some(m) = subject_member {
        let mut subject = Map::new();
        subject.insert("instanceName".into(), json!(instance_name(m)));
        subject.insert(
            "vrid".into(),
            m.instance.get("vrid").cloned().unwrap_or(Value::Null),
        );
        subject.insert(
            "interface".into(),
            m.instance.get("interface").cloned().unwrap_or(Value::Null),
        );
        e.subject = subject;
    }
    e
}

/// The `incident` object every incident event carries; events add their own fields.
fn incident_json(
    incident: &Incident,
    health: Value,
    previous: IncidentHealth,
    reasons: &[Value],
    now: DateTime<Utc>,
) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("id".into(), json!(incident.id));
    o.insert("health".into(), health);
    o.insert("previousHealth".into(), json!(previous.as_str()));
    o.insert("reasons".into(), json!(reasons));
    o.insert("history".into(), json!(incident.history));
    o.insert("openedAt".into(), json!(iso(incident.opened_at)));
    o.insert("confirmedAt".into(), json!(iso(now)));
    o
}

fn resolved(
    cluster: &Value,
    incident: &Incident,
    subject: Option<&Member>,
    resolution: &str,
    previous: IncidentHealth,
    now: DateTime<Utc>,
    first_seen: Option<DateTime<Utc>>,
) -> Event {
    let health = if resolution == "recovered" {
        json!("ok")
    } else {
        Value::Null
    };
    let mut fields = incident_json(incident, health, previous, &[], now);
    fields.insert("resolvedAt".into(), json!(iso(now)));
    fields.insert(
        "durationSeconds".into(),
        json!((now - incident.opened_at).num_seconds()),
    );
    fields.insert("resolution".into(), json!(resolution));
    let data = json!({ "cluster": cluster, "incident": fields });
    event(
        "vrrp.incident_resolved",
        ActivityLevel::Info,
        subject,
        first_seen.unwrap_or(now),
        now,
        data,
        Some(incident.id.clone()),
    )
}

/// Makes every event of a confirmed change, role events first, and moves the
/// confirmed state on.
fn confirm(
    confirmed: &mut Confirmed,
    pending: &Pending,
    cluster: &Cluster,
    now: DateTime<Utc>,
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
        let role_data = json!({ "cluster": data_cluster, "previousMaster": previous_master });
        match &target.roles {
            Roles::One(id) => {
                let m = member(id);
                let was_other = !matches!(&confirmed.roles, Roles::One(prev) if prev == id);
                if was_other {
                    // For a new master, keepalived's own last transition.
                    let at = m
                        .and_then(|m| m.instance.get("lastTransition").and_then(Value::as_str))
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

    // For an incident: the master, else a live member.
    let subject = cluster
        .members
        .iter()
        .find(|m| m.live() && m.state() == "MASTER")
        .or_else(|| cluster.members.iter().find(|m| m.live()));
    let reasons: Vec<Value> = target.findings.values().map(Finding::to_json).collect();
    let previous = confirmed.health;
    // An incident opened or updated: a warning, named as above, at first sight.
    let incident_event = |kind: &str, fields: Map<String, Value>, id: &str| {
        event(
            kind,
            ActivityLevel::Warning,
            subject,
            pending.first_seen,
            now,
            json!({ "cluster": data_cluster, "incident": fields }),
            Some(id.to_owned()),
        )
    };
    match (confirmed.incident.take(), target.health) {
        (None, IncidentHealth::Ok) => {}
        (None, health) => {
            let incident = Incident {
                id: uuid::Uuid::new_v4().to_string(),
                history: vec![health.as_str().unwrap_or_default().to_owned()],
                opened_at: pending.first_seen,
                findings: target.findings.clone(),
            };
            let fields = incident_json(&incident, json!(health.as_str()), previous, &reasons, now);
            events.push(incident_event("vrrp.incident_opened", fields, &incident.id));
            confirmed.incident = Some(incident);
        }
        (Some(incident), IncidentHealth::Ok) => {
            events.push(resolved(
                &data_cluster,
                &incident,
                subject,
                "recovered",
                previous,
                now,
                Some(pending.first_seen),
            ));
        }
        (Some(mut incident), health) => {
            let added: Vec<String> = target
                .findings
                .iter()
                .filter(|(k, _)| !incident.findings.contains_key(*k))
                .map(|(_, f)| f.text())
                .collect();
            let cleared: Vec<String> = incident
                .findings
                .iter()
                .filter(|(k, _)| !target.findings.contains_key(*k))
                .map(|(_, f)| f.text())
                .collect();
            if health != previous || !added.is_empty() || !cleared.is_empty() {
                if health != previous {
                    incident
                        .history
                        .push(health.as_str().unwrap_or_default().to_owned());
                }
                incident.findings = target.findings.clone();
                let mut fields =
                    incident_json(&incident, json!(health.as_str()), previous, &reasons, now);
                fields.insert("added".into(), json!(added));
                fields.insert("cleared".into(), json!(cleared));
                events.push(incident_event(
                    "vrrp.incident_updated",
                    fields,
                    &incident.id,
                ));
            }
            confirmed.incident = Some(incident);
        }
    }
    confirmed.health = target.health;
    confirmed.cluster = data_cluster;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clusters::{group, HostView};
    use chrono::TimeZone;

    struct Host {
        online: bool,
        reporting: bool,
        state: &'static str,
        vips: Vec<&'static str>,
        read_at: DateTime<Utc>,
        transition: DateTime<Utc>,
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
                .map(|(h, s)| HostView {
                    client_id: format!("id-{h}"),
                    site: None,
                    host: h.to_string(),
                    online: s.online,
                    readable: s.reporting,
                    instances: vec![json!({ "name": "VI_1", "vrid": 51, "state": s.state, "vips": s.vips, "advertInterval": 1,
                                           "priority": 100, "lastTransition": iso(s.transition), "interface": "eth0" })],
                    read_at: Some(iso(s.read_at)),
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

    /// Issue 13: a change of a member already seen is reported even inside the
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
                    instances: vec![json!({ "name": "VI_1", "vrid": 51, "state": "BACKUP",
                                           "vips": ["192.0.2.100/24"], "advertInterval": a })],
                    read_at: None,
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
        assert_eq!(Sim::kinds(&out), ["vrrp.incident_updated"]);
        let i = &out.events[0].data["incident"];
        assert_eq!(
            (i["health"].as_str(), i["previousHealth"].as_str()),
            (Some("degraded"), Some("degraded"))
        );
        assert_eq!(i["added"], json!(["c is in FAULT."]));
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
        assert_eq!(Sim::kinds(&out), ["vrrp.incident_updated"]);
        let i = &out.events[0].data["incident"];
        assert_eq!(i["added"], json!([]));
        assert_eq!(i["cleared"], json!(["b is in FAULT."]));
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
        let stored: Vec<(String, Value)> = sim
            .evaluator
            .clusters
            .iter()
            .map(|(k, t)| (k.clone(), t.confirmed.to_json()))
            .collect();
        let restored = stored.iter().map(|(k, v)| {
            (
                k.clone(),
                Confirmed::from_json(v).expect("persisted state reads back"),
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
        assert_eq!(Sim::kinds(&out), ["vrrp.incident_updated"]);
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
            ["vrrp.incident_opened"],
            "first seen unhealthy (one host) still opens an incident"
        );
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

    #[test]
    fn an_agent_owing_readings_to_two_clusters_is_asked_once() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap();
        let view = |h: &str, s1: &str, s2: &str| HostView {
            client_id: format!("id-{h}"),
            site: None,
            host: h.into(),
            online: true,
            readable: true,
            instances: vec![
                json!({ "name": "VI_1", "vrid": 51, "state": s1, "vips": ["192.0.2.100/24"] }),
                json!({ "name": "VI_2", "vrid": 52, "state": s2, "vips": ["198.51.100.100/24"] }),
            ],
            read_at: Some(iso(t0)),
        };
        let mut ev = Evaluator::default();
        let known = group(&[view("a", "MASTER", "MASTER"), view("b", "BACKUP", "BACKUP")]);
        ev.evaluate(&known, t0 - Duration::seconds(5));
        ev.evaluate(&known, t0);
        // VI_1 fails over, VI_2 half a second later; nobody sends a reading.
        let first = group(&[view("a", "BACKUP", "MASTER"), view("b", "MASTER", "BACKUP")]);
        assert!(ev.evaluate(&first, t0).requests.is_empty());
        let both = group(&[view("a", "BACKUP", "BACKUP"), view("b", "MASTER", "MASTER")]);
        assert!(ev
            .evaluate(&both, t0 + Duration::milliseconds(500))
            .requests
            .is_empty());
        let out = ev.evaluate(&both, t0 + Duration::seconds(4));
        assert_eq!(out.requests, ["id-a", "id-b"], "VI_1's interval is over");
        let out = ev.evaluate(&both, t0 + Duration::milliseconds(4500));
        assert!(
            out.requests.is_empty(),
            "VI_2's interval is over too, but both were asked 0.5 s ago"
        );
        assert!(
            ev.evaluate(&both, t0 + Duration::seconds(6))
                .requests
                .is_empty(),
            "once per pending change"
        );
    }
}
