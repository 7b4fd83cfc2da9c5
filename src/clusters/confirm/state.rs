//! What every part of the evaluator shares: the confirmed state (and its
//! incident), the timing rules, and how an event of a confirmed change is made.
//!
//! A leaf of `confirm`: `pending`, `events`, `incidents` and the evaluator in
//! `mod.rs` build on it and it names none of them, so the evaluator's files
//! form no import circle.

use crate::activity::Event;
use crate::clock::iso;
use crate::clusters::observe::{Finding, IncidentHealth, Roles};
use crate::clusters::readiness::{self, Verdict};
use crate::clusters::{Cluster, Member};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
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
    /// The readiness verdict as last confirmed, with the findings it had then;
    /// `None` until the first one is confirmed.
    pub readiness: Option<ConfirmedReadiness>,
}

/// A confirmed readiness verdict and its findings (the `before` of the next
/// `cluster.readiness_changed`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfirmedReadiness {
    pub verdict: Verdict,
    pub findings: Vec<readiness::Finding>,
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
                "openedAt": crate::clock::iso(i.opened_at),
                "findings": i.findings.values().map(Finding::to_json).collect::<Vec<_>>(),
            })),
            "cluster": self.cluster,
            "readiness": self.readiness,
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
            // Rows from before readiness existed have none: the first verdict
            // is then confirmed as at a first sighting.
            readiness: serde_json::from_value(v["readiness"].clone())
                .ok()
                .flatten(),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    pub id: String,
    pub history: Vec<String>,
    pub opened_at: DateTime<Utc>,
    /// The findings of the last event, by identity, with their reasons.
    pub findings: BTreeMap<String, Finding>,
}

/// The master-down interval of a cluster: 3 x advert_int + 1 s, with the longest
/// advert_int among its members (hosts configured apart wait for the slowest);
/// keepalived's default of 1 s when no member reports one.
pub fn master_down_interval(cluster: &Cluster) -> Duration {
    let advert = cluster
        .members
        .iter()
        .filter_map(|m| m.instance.advert_interval)
        .filter(|a| a.is_finite() && *a > 0.0)
        .fold(None, |longest: Option<f64>, a| {
            Some(longest.map_or(a, |l| l.max(a)))
        })
        .unwrap_or(1.0)
        // keepalived accepts at most 255 s.
        .min(255.0);
    Duration::milliseconds((3.0 * advert * 1000.0).round() as i64 + 1000)
}

pub(super) fn read_at(m: &Member) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(m.read_at.as_deref()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub(super) fn event(
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
        subject.insert("vrid".into(), json!(m.instance.vrid));
        subject.insert("interface".into(), json!(m.instance.interface));
        e.subject = subject;
    }
    e
}

pub(super) fn instance_name(m: &Member) -> String {
    m.instance.name.clone()
}
