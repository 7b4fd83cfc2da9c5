//! One sentence for every activity event: `event.message` (and a short
//! `event.detail`) for webhooks and the dashboard alike. Events carry facts;
//! wording is composed here from kind and data, and nowhere else.

use serde_json::Value;

fn text<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_str()
}

fn num(v: &Value, path: &[&str]) -> Option<i64> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_i64()
}

/// "VRID 51 on site dc-1 (lb-1, lb-2)": how cluster events name their cluster.
fn cluster_name(data: &Value) -> String {
    let c = &data["cluster"];
    let vrid = num(c, &["vrid"]).map_or("?".to_owned(), |v| v.to_string());
    let site = text(c, &["site"])
        .map(|s| format!(" on site {s}"))
        .unwrap_or_default();
    let hosts: Vec<&str> = c["members"].as_array().map_or_else(Vec::new, |m| {
        m.iter().filter_map(|m| m["host"].as_str()).collect()
    });
    let hosts = if hosts.is_empty() {
        String::new()
    } else {
        format!(" ({})", hosts.join(", "))
    };
    format!("VRID {vrid}{site}{hosts}")
}

/// "1 h 5 min", "42 s".
pub fn duration(secs: i64) -> String {
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, _) => format!("{m} min {s} s"),
        _ => format!("{h} h {m} min"),
    }
}

fn reasons(data: &Value) -> Option<String> {
    let texts: Vec<&str> = data["incident"]["reasons"]
        .as_array()?
        .iter()
        .filter_map(|r| r["text"].as_str())
        .collect();
    (!texts.is_empty()).then(|| texts.join(" "))
}

/// The sentence and the supporting detail of an event. `host` names the client
/// the event is about (display name, else hostname), if any.
pub fn compose(
    kind: &str,
    subject: &Value,
    data: &Value,
    host: Option<&str>,
) -> (String, Option<String>) {
    let on = host.map(|h| format!(" on {h}")).unwrap_or_default();
    let instance = text(subject, &["instanceName"]).map_or_else(String::new, |i| {
        let vrid = num(subject, &["vrid"])
            .map(|v| format!(" (VRID {v})"))
            .unwrap_or_default();
        format!("{i}{vrid}")
    });
    match kind {
        "vrrp.state_changed" => {
            let (from, to) = (
                text(data, &["from"]).unwrap_or("?"),
                text(data, &["to"]).unwrap_or("?"),
            );
            let prio = match (num(data, &["priority"]), num(data, &["effectivePriority"])) {
                (Some(p), Some(e)) if p != e => Some(format!("Priority {p}, effective {e}.")),
                (Some(p), _) => Some(format!("Priority {p}.")),
                _ => None,
            };
            (format!("{instance}{on} changed from {from} to {to}."), prio)
        }
        "vrrp.instance_added" => (
            format!(
                "{instance} appeared{on} in state {}.",
                text(data, &["state"]).unwrap_or("?")
            ),
            None,
        ),
        "vrrp.instance_removed" => (
            format!(
                "{instance} is gone{on} (last state {}).",
                text(data, &["state"]).unwrap_or("?")
            ),
            None,
        ),
        "keepalived.started" => (
            format!("keepalived started{on}."),
            text(data, &["version"])
                .map(|v| format!("Version {v}, PID {}.", num(data, &["pid"]).unwrap_or(0))),
        ),
        "keepalived.stopped" => (format!("keepalived stopped{on}."), None),
        "keepalived.unreadable" => (
            format!("keepalived{on} cannot be read."),
            text(data, &["error"]).map(str::to_owned),
        ),
        "client.connected" => (
            format!(
                "{} connected.",
                text(data, &["clientName"]).or(host).unwrap_or("An agent")
            ),
            text(data, &["version"]).map(|v| {
                format!(
                    "Agent version {v}, {} mode.",
                    text(data, &["connectionMode"]).unwrap_or("inbound")
                )
            }),
        ),
        "client.disconnected" => (
            format!(
                "{} disconnected.",
                text(data, &["clientName"]).or(host).unwrap_or("An agent")
            ),
            None,
        ),
        "client.registered" => (
            format!(
                "{} registered.",
                text(data, &["clientName"])
                    .or(host)
                    .unwrap_or("A new agent")
            ),
            text(data, &["hostname"]).map(|h| format!("Host name {h}.")),
        ),
        "scheduler.failed" => (
            format!(
                "The {} run ({}) failed.",
                text(data, &["scheduler"]).unwrap_or("scheduler"),
                text(data, &["trigger"]).unwrap_or("schedule")
            ),
            text(data, &["error"]).map(str::to_owned),
        ),
        "vrrp.master_changed" => {
            let new = text(data, &["cluster", "master"]).unwrap_or("another host");
            let was = text(data, &["previousMaster"])
                .map(|p| format!(" (was {p})"))
                .unwrap_or_default();
            (
                format!("{new} is now MASTER of {}{was}.", cluster_name(data)),
                None,
            )
        }
        "vrrp.split_brain" => {
            let masters: Vec<&str> = data["cluster"]["masters"]
                .as_array()
                .map_or_else(Vec::new, |m| m.iter().filter_map(Value::as_str).collect());
            (
                format!(
                    "Split brain in {}: {} are all MASTER.",
                    cluster_name(data),
                    masters.join(" and ")
                ),
                None,
            )
        }
        "vrrp.master_lost" => {
            let was = text(data, &["previousMaster"])
                .map(|p| format!(" (was {p})"))
                .unwrap_or_default();
            (format!("No MASTER in {}{was}.", cluster_name(data)), None)
        }
        "vrrp.incident_opened" => (
            format!(
                "Incident opened for {}: {}.",
                cluster_name(data),
                text(data, &["incident", "health"]).unwrap_or("unhealthy")
            ),
            reasons(data),
        ),
        "vrrp.incident_updated" => {
            let list = |key: &str| -> Vec<String> {
                data["incident"][key].as_array().map_or_else(Vec::new, |a| {
                    a.iter()
                        .filter_map(|t| t.as_str().map(str::to_owned))
                        .collect()
                })
            };
            let (added, cleared) = (list("added"), list("cleared"));
            let mut changes = Vec::new();
            if !added.is_empty() {
                changes.push(format!("new: {}", added.join(" ")));
            }
            if !cleared.is_empty() {
                changes.push(format!("gone: {}", cleared.join(" ")));
            }
            if data["silenceEnded"].is_object() {
                changes.push(format!(
                    "still open when the silence \"{}\" ended",
                    text(data, &["silenceEnded", "comment"]).unwrap_or_default()
                ));
            }
            let health = text(data, &["incident", "health"]).unwrap_or("unhealthy");
            (
                format!("Incident for {} is {health}.", cluster_name(data)),
                (!changes.is_empty()).then(|| changes.join("; ")),
            )
        }
        "vrrp.incident_resolved" => {
            let lasted = num(data, &["incident", "durationSeconds"])
                .map(duration)
                .unwrap_or_else(|| "?".into());
            let how = if text(data, &["incident", "resolution"]) == Some("removed") {
                "the cluster no longer exists"
            } else {
                "it recovered"
            };
            (
                format!(
                    "Incident for {} resolved after {lasted}: {how}.",
                    cluster_name(data)
                ),
                None,
            )
        }
        "silence.created" | "silence.expired" => {
            let what = silence_scope(data, host);
            let message = if kind == "silence.created" {
                format!(
                    "Silence for {what} until {}, by {}.",
                    text(data, &["silence", "endsAt"]).unwrap_or("?"),
                    text(data, &["silence", "createdBy"]).unwrap_or("?")
                )
            } else {
                format!("Silence for {what} ended.")
            };
            (
                message,
                text(data, &["silence", "comment"]).map(str::to_owned),
            )
        }
        other => (format!("{other}{on}."), None),
    }
}

/// What a silence covers, in words: every matcher it has.
fn silence_scope(data: &Value, host: Option<&str>) -> String {
    let m = &data["silence"]["matcher"];
    let mut parts = Vec::new();
    if let Some(key) = m["clusterKey"].as_str() {
        parts.push(format!("cluster {key}"));
    }
    if let Some(id) = m["clientId"].as_str() {
        parts.push(format!("host {}", host.unwrap_or(id)));
    }
    if let Some(kind) = m["kind"].as_str() {
        parts.push(format!("events {kind}"));
    }
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster() -> Value {
        json!({ "vrid": 51, "site": "dc-1", "master": "lb-2", "masters": ["lb-1", "lb-2"], "members": [{ "host": "lb-1" }, { "host": "lb-2" }] })
    }

    #[test]
    fn agent_events() {
        let subject = json!({ "instanceName": "VI_1", "vrid": 51, "interface": "eth0" });
        let (m, d) = compose(
            "vrrp.state_changed",
            &subject,
            &json!({ "from": "MASTER", "to": "FAULT", "priority": 130, "effectivePriority": 0 }),
            Some("lb-1"),
        );
        assert_eq!(m, "VI_1 (VRID 51) on lb-1 changed from MASTER to FAULT.");
        assert_eq!(d.as_deref(), Some("Priority 130, effective 0."));
        assert_eq!(
            compose("keepalived.stopped", &json!({}), &json!({}), Some("lb-1")).0,
            "keepalived stopped on lb-1."
        );
        assert_eq!(
            compose(
                "keepalived.unreadable",
                &json!({}),
                &json!({ "error": "no CAP_KILL" }),
                Some("h")
            )
            .1
            .as_deref(),
            Some("no CAP_KILL")
        );
        assert_eq!(
            compose(
                "vrrp.instance_added",
                &subject,
                &json!({ "state": "BACKUP" }),
                Some("h")
            )
            .0,
            "VI_1 (VRID 51) appeared on h in state BACKUP."
        );
        assert_eq!(
            compose("some.future_kind", &json!({}), &json!({}), Some("h")).0,
            "some.future_kind on h.",
            "an unknown kind still reads"
        );
    }

    #[test]
    fn server_events() {
        assert_eq!(
            compose(
                "client.connected",
                &json!({}),
                &json!({ "clientName": "edge", "version": "1.2", "connectionMode": "inbound" }),
                None
            )
            .0,
            "edge connected."
        );
        assert_eq!(
            compose(
                "scheduler.failed",
                &json!({}),
                &json!({ "scheduler": "token-cleanup", "trigger": "manual", "error": "disk full" }),
                None
            ),
            (
                "The token-cleanup run (manual) failed.".to_owned(),
                Some("disk full".to_owned())
            )
        );
    }

    #[test]
    fn cluster_events_name_the_vrid_the_site_and_the_hosts() {
        let data = json!({ "cluster": cluster(), "previousMaster": "lb-1" });
        assert_eq!(
            compose("vrrp.master_changed", &json!({}), &data, None).0,
            "lb-2 is now MASTER of VRID 51 on site dc-1 (lb-1, lb-2) (was lb-1)."
        );
        assert_eq!(
            compose("vrrp.split_brain", &json!({}), &data, None).0,
            "Split brain in VRID 51 on site dc-1 (lb-1, lb-2): lb-1 and lb-2 are all MASTER."
        );
        assert_eq!(
            compose("vrrp.master_lost", &json!({}), &data, None).0,
            "No MASTER in VRID 51 on site dc-1 (lb-1, lb-2) (was lb-1)."
        );
    }

    #[test]
    fn incidents_say_what_changed_and_how_long_they_lasted() {
        let opened = json!({ "cluster": cluster(), "incident": { "health": "split-brain", "reasons": [{ "type": "split-brain", "text": "lb-1 and lb-2 are all MASTER at once (split brain)." }] } });
        let (m, d) = compose("vrrp.incident_opened", &json!({}), &opened, None);
        assert_eq!(
            m,
            "Incident opened for VRID 51 on site dc-1 (lb-1, lb-2): split-brain."
        );
        assert_eq!(
            d.as_deref(),
            Some("lb-1 and lb-2 are all MASTER at once (split brain).")
        );
        let updated = json!({ "cluster": cluster(), "incident": { "health": "degraded", "added": ["lb-3 is in FAULT."], "cleared": ["lb-1 and lb-2 are all MASTER at once (split brain)."] } });
        let (m, d) = compose("vrrp.incident_updated", &json!({}), &updated, None);
        assert_eq!(
            m,
            "Incident for VRID 51 on site dc-1 (lb-1, lb-2) is degraded."
        );
        assert_eq!(
            d.as_deref(),
            Some(
                "new: lb-3 is in FAULT.; gone: lb-1 and lb-2 are all MASTER at once (split brain)."
            )
        );
        let resolved = json!({ "cluster": cluster(), "incident": { "durationSeconds": 3905, "resolution": "recovered" } });
        assert_eq!(compose("vrrp.incident_resolved", &json!({}), &resolved, None).0, "Incident for VRID 51 on site dc-1 (lb-1, lb-2) resolved after 1 h 5 min: it recovered.");
        let removed = json!({ "cluster": cluster(), "incident": { "durationSeconds": 42, "resolution": "removed" } });
        assert!(
            compose("vrrp.incident_resolved", &json!({}), &removed, None)
                .0
                .ends_with("after 42 s: the cluster no longer exists.")
        );
    }
}
