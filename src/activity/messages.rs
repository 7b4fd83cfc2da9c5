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

/// "a and b", "a, b and c".
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [rest @ .., last] => format!(
            "{} and {}",
            rest.iter()
                .map(|s| s.as_ref())
                .collect::<Vec<&str>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

/// A health in words, as the dashboard's badge says it ("split brain", not
/// the token `split-brain`).
fn health_words(health: &str) -> &str {
    match health {
        "split-brain" => "split brain",
        "no-master" => "no master",
        "vip-mismatch" => "address mismatch",
        "ok" => "OK",
        other => other,
    }
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

/// One cause of a FAULT in words, as keepalived reports it (a `FaultCause` of
/// the protocol, or a tracked item that is not ok): "track script chk_lab
/// failed", "tracked interface trk0 is down", "track file prio is at -254",
/// "track process nginx is not running", "sync group SG_1 is in FAULT".
pub fn cause_phrase(cause: &Value) -> String {
    let item = item_name(cause);
    let status = text(cause, &["status"]);
    let value = num(cause, &["value"]);
    // keepalived's own word, when it is not the one the sentence already says.
    let unless = |said: &[&str]| {
        status
            .filter(|s| !said.iter().any(|w| w.eq_ignore_ascii_case(s)))
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    };
    match text(cause, &["kind"]).unwrap_or_default() {
        "script" => format!("{item} failed{}", unless(&["BAD", "FAILED"])),
        "interface" => format!("{item} is down{}", unless(&["DOWN"])),
        "file" => match value {
            Some(v) => format!("{item} is at {v}"),
            None => format!("{item} failed{}", unless(&[])),
        },
        "process" => match value {
            None | Some(0) => format!("{item} is not running"),
            Some(1) => format!("{item} has 1 process running"),
            Some(n) => format!("{item} has {n} processes running"),
        },
        "syncGroup" => format!("{item} is in FAULT"),
        _ => format!("{item} failed{}", unless(&[])),
    }
}

/// A tracked item (or sync group) by its kind and name, as keepalived.conf
/// names it: "track script chk_lab", "tracked interface trk0".
fn item_name(item: &Value) -> String {
    let name = text(item, &["name"]).unwrap_or("?");
    match text(item, &["kind"]).unwrap_or_default() {
        "script" => format!("track script {name}"),
        "interface" => format!("tracked interface {name}"),
        "file" => format!("track file {name}"),
        "process" => format!("track process {name}"),
        "syncGroup" => format!("sync group {name}"),
        "" => format!("tracked item {name}"),
        other => format!("tracked {other} {name}"),
    }
}

/// The causes of a FAULT in words, joined ("a, b and c"); `None` when the list
/// is empty or absent: keepalived reported nothing the agent could name.
pub fn causes_text(causes: &Value) -> Option<String> {
    let phrases: Vec<String> = causes.as_array()?.iter().map(cause_phrase).collect();
    match phrases.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} and {last}", rest.join(", "))),
    }
}

/// What the dashboard shows beside a FAULT member: the causes, or that there
/// are none to tell.
pub fn fault_reason(causes: &Value) -> String {
    causes_text(causes).unwrap_or_else(|| NO_CAUSE.to_owned())
}

const NO_CAUSE: &str = "keepalived reports no cause";

/// "h2 VI_1 is in FAULT: track script chk_lab failed." (`who` names the
/// instance or the host), or plainly that no cause is known.
pub fn in_fault(who: &str, causes: &Value) -> String {
    match causes_text(causes) {
        Some(t) => format!("{who} is in FAULT: {t}."),
        None => format!("{who} is in FAULT; {NO_CAUSE}."),
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
            if to == "FAULT" {
                // The cause is what an operator needs first: it leads, and the
                // transition moves to the detail.
                let who = host.map_or_else(
                    || {
                        text(subject, &["instanceName"])
                            .unwrap_or("An instance")
                            .to_owned()
                    },
                    |h| format!("{h} {}", text(subject, &["instanceName"]).unwrap_or("?")),
                );
                let vrid = num(subject, &["vrid"])
                    .map(|v| format!(" (VRID {v})"))
                    .unwrap_or_default();
                let moved = format!("Changed from {from} to FAULT{vrid}.");
                let detail = prio.map_or(moved.clone(), |p| format!("{moved} {p}"));
                return (in_fault(&who, &data["causes"]), Some(detail));
            }
            (format!("{instance}{on} changed from {from} to {to}."), prio)
        }
        "vrrp.track_changed" => {
            let who = match (host, text(subject, &["instanceName"])) {
                (Some(h), Some(i)) => format!("{h} {i}"),
                (Some(h), None) => h.to_owned(),
                (None, i) => i.unwrap_or("An instance").to_owned(),
            };
            let ok = data["ok"] == true;
            let what = if ok {
                format!("{} recovered", item_name(data))
            } else {
                cause_phrase(
                    &serde_json::json!({ "kind": data["kind"], "name": data["name"],
                    "status": data["to"], "value": data["value"] }),
                )
            };
            let mut detail = Vec::new();
            if let (Some(from), Some(to)) = (text(data, &["from"]), text(data, &["to"])) {
                detail.push(format!("Was {from}, now {to}."));
            }
            if let Some(w) = num(data, &["weight"]).filter(|w| *w != 0) {
                detail.push(format!(
                    "Weight {w}: it moves the priority rather than putting the instance in FAULT."
                ));
            }
            (
                format!("{who}: {what}."),
                (!detail.is_empty()).then(|| detail.join(" ")),
            )
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
        "cluster.drill_finished" => {
            let d = &data["drill"];
            let status = text(d, &["status"]).unwrap_or("finished");
            let old = text(d, &["oldMaster"]).unwrap_or("the master");
            let head = match status {
                "passed" => format!(
                    "Failover drill on {} passed: {} took over from {old}{}.",
                    cluster_name(data),
                    text(d, &["newMaster"]).unwrap_or("a backup"),
                    num(d, &["takeoverMs"]).map(|ms| format!(" in {ms} ms")).unwrap_or_default()
                ),
                "rolled_back" => format!(
                    "Failover drill on {} rolled back: no member took over from {old}; it was undrained at once.",
                    cluster_name(data)
                ),
                other => format!("Failover drill on {} {other}.", cluster_name(data)),
            };
            let findings: Vec<&str> = d["findings"]
                .as_array()
                .map_or_else(Vec::new, |f| f.iter().filter_map(Value::as_str).collect());
            (head, (!findings.is_empty()).then(|| findings.join(" ")))
        }
        "client.drained" => (
            format!(
                "{} was drained by {}: {}",
                host.unwrap_or("A host"),
                text(data, &["by"]).unwrap_or("someone"),
                text(data, &["reason"])
                    .filter(|r| !r.is_empty())
                    .unwrap_or("no reason given")
            ),
            Some(
                "keepalived lowers its priority through the drain file; a backup takes over."
                    .to_owned(),
            ),
        ),
        "client.undrained" => (
            format!(
                "{} was undrained by {}.",
                host.unwrap_or("A host"),
                text(data, &["by"]).unwrap_or("someone")
            ),
            Some("keepalived restores its priority; with preempt it takes MASTER back.".to_owned()),
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
            let planned = if data["planned"] == true {
                " Planned: a host was drained or undrained."
            } else {
                ""
            };
            (
                format!(
                    "{new} is now MASTER of {}{was}.{planned}",
                    cluster_name(data)
                ),
                None,
            )
        }
        "vrrp.split_brain" => {
            let masters: Vec<&str> = data["cluster"]["masters"]
                .as_array()
                .map_or_else(Vec::new, |m| m.iter().filter_map(Value::as_str).collect());
            (
                format!(
                    "Split brain in {}: {} are {} MASTER.",
                    cluster_name(data),
                    and_list(&masters),
                    if masters.len() == 2 { "both" } else { "all" }
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
        "cluster.readiness_changed" => {
            let verdict = |key: &str| match text(data, &[key]) {
                Some("ready") => "ready for a failover",
                Some("at_risk") => "at risk",
                Some("not_ready") => "not ready for a failover",
                _ => "of unknown readiness",
            };
            let messages: Vec<&str> = data["findings"].as_array().map_or_else(Vec::new, |f| {
                f.iter().filter_map(|f| f["message"].as_str()).collect()
            });
            let headline = match (text(data, &["after"]), messages.first()) {
                (Some("ready"), _) => format!(
                    "{} is ready for a failover again (was {}).",
                    cluster_name(data),
                    verdict("before")
                ),
                (_, Some(first)) => {
                    format!("{} is {}: {first}.", cluster_name(data), verdict("after"))
                }
                (_, None) => format!("{} is {}.", cluster_name(data), verdict("after")),
            };
            let rest: Vec<String> = messages.iter().skip(1).map(|m| format!("{m}.")).collect();
            (headline, (!rest.is_empty()).then(|| rest.join(" ")))
        }
        "vrrp.incident_opened" => (
            format!(
                "Incident opened for {}: {}.",
                cluster_name(data),
                health_words(text(data, &["incident", "health"]).unwrap_or("unhealthy"))
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
            let health = health_words(text(data, &["incident", "health"]).unwrap_or("unhealthy"));
            (
                format!("Incident for {} is now: {health}.", cluster_name(data)),
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
            &json!({ "from": "MASTER", "to": "BACKUP", "priority": 130, "effectivePriority": 0 }),
            Some("lb-1"),
        );
        assert_eq!(m, "VI_1 (VRID 51) on lb-1 changed from MASTER to BACKUP.");
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
            "Split brain in VRID 51 on site dc-1 (lb-1, lb-2): lb-1 and lb-2 are both MASTER."
        );
        assert_eq!(
            compose("vrrp.master_lost", &json!({}), &data, None).0,
            "No MASTER in VRID 51 on site dc-1 (lb-1, lb-2) (was lb-1)."
        );
    }

    #[test]
    fn host_lists_read_as_sentences() {
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
        assert_eq!(and_list::<&str>(&[]), "");
    }

    #[test]
    fn a_readiness_change_leads_with_the_verdict_and_its_first_finding() {
        let data = json!({ "cluster": cluster(), "before": "ready", "after": "not_ready",
            "findings": [
                { "check": "advert_interval_mismatch", "message": "lb-b advertises every 2 s, lb-a advertises every 1 s: a member with another interval discards the master's adverts" },
                { "check": "priority_tie", "message": "lb-a and lb-b have priority 100: a tie goes to the highest address, rarely what was meant" },
            ] });
        let (message, detail) = compose("cluster.readiness_changed", &json!({}), &data, None);
        assert!(message.starts_with("VRID 51"), "{message}");
        assert!(
            message.ends_with(" is not ready for a failover: lb-b advertises every 2 s, lb-a advertises every 1 s: a member with another interval discards the master's adverts."),
            "{message}"
        );
        assert_eq!(
            detail.as_deref(),
            Some("lb-a and lb-b have priority 100: a tie goes to the highest address, rarely what was meant.")
        );
        let back = json!({ "cluster": cluster(), "before": "not_ready", "after": "ready", "findings": [] });
        let (message, detail) = compose("cluster.readiness_changed", &json!({}), &back, None);
        assert!(
            message.ends_with(" is ready for a failover again (was not ready for a failover)."),
            "{message}"
        );
        assert_eq!(detail, None);
    }

    #[test]
    fn incidents_say_what_changed_and_how_long_they_lasted() {
        let opened = json!({ "cluster": cluster(), "incident": { "health": "split-brain", "reasons": [{ "type": "split-brain", "text": "lb-1 and lb-2 are both MASTER at once (split brain)." }] } });
        let (m, d) = compose("vrrp.incident_opened", &json!({}), &opened, None);
        assert_eq!(
            m,
            "Incident opened for VRID 51 on site dc-1 (lb-1, lb-2): split brain."
        );
        assert_eq!(
            d.as_deref(),
            Some("lb-1 and lb-2 are both MASTER at once (split brain).")
        );
        let updated = json!({ "cluster": cluster(), "incident": { "health": "degraded", "added": ["lb-3 is in FAULT."], "cleared": ["lb-1 and lb-2 are both MASTER at once (split brain)."] } });
        let (m, d) = compose("vrrp.incident_updated", &json!({}), &updated, None);
        assert_eq!(
            m,
            "Incident for VRID 51 on site dc-1 (lb-1, lb-2) is now: degraded."
        );
        assert_eq!(
            d.as_deref(),
            Some(
                "new: lb-3 is in FAULT.; gone: lb-1 and lb-2 are both MASTER at once (split brain)."
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

    #[test]
    fn a_fault_names_its_causes_as_keepalived_reports_them() {
        let subject = json!({ "instanceName": "VI_1", "vrid": 51, "interface": "eth0" });
        let fault = |causes: Value| {
            compose(
                "vrrp.state_changed",
                &subject,
                &json!({ "from": "BACKUP", "to": "FAULT", "priority": 100, "effectivePriority": 100, "causes": causes }),
                Some("h2"),
            )
        };
        let (m, d) = fault(json!([{ "kind": "script", "name": "chk_lab", "status": "BAD" }]));
        assert_eq!(m, "h2 VI_1 is in FAULT: track script chk_lab failed.");
        assert_eq!(
            d.as_deref(),
            Some("Changed from BACKUP to FAULT (VRID 51). Priority 100.")
        );
        assert_eq!(
            fault(json!([{ "kind": "interface", "name": "trk0", "status": "DOWN" }])).0,
            "h2 VI_1 is in FAULT: tracked interface trk0 is down."
        );
        assert_eq!(
            fault(json!([{ "kind": "file", "name": "prio", "value": -254 }])).0,
            "h2 VI_1 is in FAULT: track file prio is at -254."
        );
        assert_eq!(
            fault(json!([{ "kind": "process", "name": "nginx", "value": 0 }])).0,
            "h2 VI_1 is in FAULT: track process nginx is not running."
        );
        assert_eq!(
            fault(json!([{ "kind": "syncGroup", "name": "SG_1", "status": "FAULT" }])).0,
            "h2 VI_1 is in FAULT: sync group SG_1 is in FAULT."
        );
        assert_eq!(
            fault(json!([{ "kind": "script", "name": "a", "status": "INIT/FAILED" },
                         { "kind": "interface", "name": "trk0" },
                         { "kind": "process", "name": "p", "value": 3 }])).0,
            "h2 VI_1 is in FAULT: track script a failed (INIT/FAILED), tracked interface trk0 is down and track process p has 3 processes running."
        );
        assert_eq!(
            fault(json!([])).0,
            "h2 VI_1 is in FAULT; keepalived reports no cause."
        );
        assert_eq!(
            fault(Value::Null).0,
            "h2 VI_1 is in FAULT; keepalived reports no cause.",
            "an agent that sends no causes reads the same"
        );
        assert_eq!(
            compose(
                "vrrp.state_changed",
                &subject,
                &json!({ "from": "FAULT", "to": "BACKUP" }),
                Some("h2")
            )
            .0,
            "VI_1 (VRID 51) on h2 changed from FAULT to BACKUP.",
            "leaving FAULT reads as before"
        );
    }

    #[test]
    fn a_tracked_item_changing_says_what_and_how() {
        let subject = json!({ "instanceName": "VI_1", "vrid": 51, "interface": "eth0" });
        let (m, d) = compose(
            "vrrp.track_changed",
            &subject,
            &json!({ "kind": "script", "name": "chk_lab", "from": "GOOD", "to": "BAD", "ok": false }),
            Some("h2"),
        );
        assert_eq!(m, "h2 VI_1: track script chk_lab failed.");
        assert_eq!(d.as_deref(), Some("Was GOOD, now BAD."));
        let (m, d) = compose(
            "vrrp.track_changed",
            &subject,
            &json!({ "kind": "script", "name": "chk_lab", "from": "BAD", "to": "GOOD", "ok": true, "weight": -20 }),
            Some("h2"),
        );
        assert_eq!(m, "h2 VI_1: track script chk_lab recovered.");
        assert_eq!(
            d.as_deref(),
            Some("Was BAD, now GOOD. Weight -20: it moves the priority rather than putting the instance in FAULT.")
        );
        assert_eq!(
            compose(
                "vrrp.track_changed",
                &subject,
                &json!({ "kind": "interface", "name": "trk0", "from": "UP", "to": "DOWN", "ok": false }),
                Some("h1")
            )
            .0,
            "h1 VI_1: tracked interface trk0 is down."
        );
        assert_eq!(
            compose(
                "vrrp.track_changed",
                &subject,
                &json!({ "kind": "file", "name": "prio", "from": "0", "to": "-254", "value": -254, "ok": false }),
                None
            )
            .0,
            "VI_1: track file prio is at -254."
        );
    }
}
