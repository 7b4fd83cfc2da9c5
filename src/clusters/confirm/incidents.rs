//! Incident bookkeeping: an incident opens when a confirmed health turns from
//! `ok` into another, is updated while the health or its findings change, and is
//! resolved when the health is `ok` again or the cluster is gone. Its events
//! share its id as `correlationId`.

use super::pending::Pending;
use super::state::{event, Confirmed, Incident};
use crate::activity::Event;
use crate::clock::iso;
use crate::clusters::observe::{Finding, IncidentHealth, Reason};
use crate::clusters::{Cluster, Member};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use vrrp_protocol::ActivityLevel;

/// The `incident` object every incident event carries; events add their own fields.
fn incident_json(
    incident: &Incident,
    health: Value,
    previous: IncidentHealth,
    reasons: &[Reason],
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

pub(super) fn resolved(
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

/// The incident part of a confirmed change: opens, updates or resolves the
/// cluster's incident as the confirmed health and findings move to the target's.
pub(super) fn confirm_health(
    confirmed: &mut Confirmed,
    pending: &Pending,
    cluster: &Cluster,
    data_cluster: &Value,
    now: DateTime<Utc>,
    events: &mut Vec<Event>,
) {
    let target = &pending.target;
    // For an incident: the master, else a live member.
    let subject = cluster
        .members
        .iter()
        .find(|m| m.live() && m.state() == "MASTER")
        .or_else(|| cluster.members.iter().find(|m| m.live()));
    let reasons: Vec<Reason> = target.findings.values().map(Finding::reason).collect();
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
                data_cluster,
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
}

/// An incident still open when a silence that held back its events ended: one
/// `vrrp.incident_updated` with the incident as confirmed now, noting the end in
/// `data.silenceEnded`, so a webhook receiver learns of it.
pub fn silence_ended(confirmed: &Confirmed, silence: &Value, now: DateTime<Utc>) -> Option<Event> {
    let incident = confirmed.incident.as_ref()?;
    let reasons: Vec<Reason> = incident.findings.values().map(Finding::reason).collect();
    let mut fields = incident_json(
        incident,
        json!(confirmed.health.as_str()),
        confirmed.health,
        &reasons,
        now,
    );
    fields.insert("added".into(), json!([]));
    fields.insert("cleared".into(), json!([]));
    let mut e = event(
        "vrrp.incident_updated",
        ActivityLevel::Warning,
        None,
        now,
        now,
        json!({ "cluster": confirmed.cluster, "incident": fields, "silenceEnded": silence }),
        Some(incident.id.clone()),
    );
    // The subject host as for any incident event: the master, else a member.
    let members = confirmed.cluster["members"].as_array();
    e.client_id = members
        .and_then(|ms| {
            ms.iter()
                .find(|m| m["state"] == "MASTER" && m["online"] == true)
                .or_else(|| ms.first())
        })
        .and_then(|m| m["clientId"].as_str().map(str::to_owned));
    Some(e)
}
