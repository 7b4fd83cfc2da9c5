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
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use vrrp_protocol::ActivityLevel;

/// `unreachable` has no agent to deliver a reading; it counts once it lasted this long.
pub const UNREACHABLE_SECS: i64 = 60;
/// Margin after the interval before looking again for the readings asked for.
pub const FOLLOW_UP_MS: i64 = 250;

/// The confirmed part of a cluster's state, persisted as JSON in
/// `cluster_states` so that a restart goes on where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Confirmed {
    pub roles: Roles,
    /// The last host that was master alone: (client id, host).
    #[serde(default)]
    pub master_alone: Option<(String, String)>,
    /// Incident health as confirmed (`ok` when none is open).
    pub health: IncidentHealth,
    #[serde(default)]
    pub incident: Option<Incident>,
    /// `data.cluster` as last confirmed (for a resolution by removal).
    #[serde(default)]
    pub cluster: Value,
    /// The readiness verdict as last confirmed, with the findings it had then;
    /// `None` until the first one is confirmed. Rows from before readiness
    /// existed have none (or one that no longer reads): the first verdict is then
    /// confirmed as at a first sighting.
    #[serde(default, deserialize_with = "lenient")]
    pub readiness: Option<ConfirmedReadiness>,
}

/// A confirmed readiness verdict and its findings (the `before` of the next
/// `cluster.readiness_changed`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfirmedReadiness {
    pub verdict: Verdict,
    pub findings: Vec<readiness::Finding>,
}

/// `None` for a value that does not read as a `T`, instead of failing the whole.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incident {
    pub id: String,
    pub history: Vec<String>,
    #[serde(with = "crate::clock::iso_millis")]
    pub opened_at: DateTime<Utc>,
    /// The findings of the last event, by identity, with their reasons;
    /// persisted as the list of reasons.
    #[serde(with = "reasons")]
    pub findings: BTreeMap<String, Finding>,
}

/// [`Incident::findings`] as the list `data.incident.reasons[]` carries; a
/// reason of a kind this build does not know is left out.
mod reasons {
    use super::{BTreeMap, Finding, Value};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        findings: &BTreeMap<String, Finding>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(findings.values().map(Finding::reason))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Finding>, D::Error> {
        Ok(Vec::<Value>::deserialize(d)?
            .into_iter()
            .filter_map(|v| serde_json::from_value::<Finding>(v).ok())
            .map(|f| (f.identity(), f))
            .collect())
    }
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
