//! Why an instance is in FAULT, through the real binary and a fake
//! agent on the real protocol: the composed `vrrp.state_changed` and
//! `vrrp.track_changed` texts for each kind of cause, the incident's `fault`
//! reason as the agent's readings change, the cause in the cluster list, and
//! the webhook samples.

use crate::harness::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn vrrp_event(id: &str, kind: &str, level: &str, data: Value) -> Value {
    json!({ "id": id, "occurredAt": "2026-11-27T05:00:00.000Z", "kind": kind, "level": level,
            "correlationId": null,
            "subject": { "instanceName": "VI_1", "vrid": 51, "interface": "eth0" }, "data": data })
}

fn into_fault(id: &str, causes: Value) -> Value {
    vrrp_event(
        id,
        "vrrp.state_changed",
        "error",
        json!({ "from": "BACKUP", "to": "FAULT", "priority": 100, "effectivePriority": 100, "causes": causes }),
    )
}

#[test]
fn a_fault_event_names_each_kind_of_cause_and_a_track_change_its_own() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "h2");
    let mut ws = server.connect_agent(&agent);
    let cases = [
        (
            "f-script",
            json!([{ "kind": "script", "name": "chk_lab", "status": "BAD" }]),
            "h2 VI_1 is in FAULT: track script chk_lab failed.",
        ),
        (
            "f-interface",
            json!([{ "kind": "interface", "name": "trk0", "status": "DOWN" }]),
            "h2 VI_1 is in FAULT: tracked interface trk0 is down.",
        ),
        (
            "f-file",
            json!([{ "kind": "file", "name": "prio_file", "value": -254 }]),
            "h2 VI_1 is in FAULT: track file prio_file is at -254.",
        ),
        (
            "f-process",
            json!([{ "kind": "process", "name": "haproxy", "value": 0 }]),
            "h2 VI_1 is in FAULT: track process haproxy is not running.",
        ),
        (
            "f-group",
            json!([{ "kind": "syncGroup", "name": "SG_1", "status": "FAULT" }]),
            "h2 VI_1 is in FAULT: sync group SG_1 is in FAULT.",
        ),
        (
            "f-two",
            json!([{ "kind": "script", "name": "chk_lab", "status": "BAD" },
                   { "kind": "interface", "name": "trk0", "status": "DOWN" }]),
            "h2 VI_1 is in FAULT: track script chk_lab failed and tracked interface trk0 is down.",
        ),
        (
            "f-none",
            json!([]),
            "h2 VI_1 is in FAULT; keepalived reports no cause.",
        ),
    ];
    let mut events: Vec<Value> = cases
        .iter()
        .map(|(id, causes, _)| into_fault(id, causes.clone()))
        .collect();
    events.push(vrrp_event(
        "t-bad",
        "vrrp.track_changed",
        "warning",
        json!({ "kind": "script", "name": "chk_lab", "from": "GOOD", "to": "BAD", "ok": false }),
    ));
    events.push(vrrp_event(
        "t-good",
        "vrrp.track_changed",
        "info",
        json!({ "kind": "interface", "name": "trk0", "from": "DOWN", "to": "UP", "ok": true, "weight": -20 }),
    ));
    ws.send("ACTIVITY", json!({ "events": events }));
    ws.expect("ACTIVITY_ACK");

    let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let by_id = |id: &str| -> Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} not stored: {list}"))
            .clone()
    };
    for (id, causes, message) in &cases {
        let e = by_id(id);
        assert_eq!(e["message"], *message, "{id}");
        assert_eq!(
            e["detail"], "Changed from BACKUP to FAULT (VRID 51). Priority 100.",
            "{id}"
        );
        assert_eq!(e["data"]["causes"], *causes, "{id}: the data names them");
        assert_eq!(e["level"], "error");
    }
    let bad = by_id("t-bad");
    assert_eq!(bad["message"], "h2 VI_1: track script chk_lab failed.");
    assert_eq!(bad["detail"], "Was GOOD, now BAD.");
    assert_eq!(bad["level"], "warning");
    let good = by_id("t-good");
    assert_eq!(
        good["message"],
        "h2 VI_1: tracked interface trk0 recovered."
    );
    assert_eq!(good["level"], "info");
    assert!(good["detail"]
        .as_str()
        .unwrap()
        .contains("Weight -20: it moves the priority"));
    // The new kind is a kind like any other: filtered, and overridable.
    let only = server
        .get(
            "/api/v1/activity?kind=vrrp.track_changed",
            Auth::Cookie(&admin),
        )
        .body;
    assert_eq!(only.as_array().map(Vec::len), Some(2), "{only}");
}

/// A reading with `lb-b`'s VI_1 in FAULT for `tracked`, in sync group SG_1 in
/// `group` state.
fn fault_reading(tracked: Value, group: &str) -> Value {
    let mut r = reading(&[("VI_1", "FAULT")]);
    r["instances"][0]["tracked"] = tracked;
    r["instances"][0]["syncGroup"] = json!("SG_1");
    r["syncGroups"] = json!([{ "name": "SG_1", "state": group, "instances": ["VI_1"] }]);
    r
}

/// Waits for the evaluator's request on both sockets and answers with the
/// readings as they are now, so the pending change is confirmed.
fn answer_requests(wa: &mut Ws, a: &Value, wb: &mut Ws, b: &Value) {
    wa.expect("REQUEST_STATE_UPDATE");
    wb.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", a.clone());
    wb.send("KEEPALIVED_UPDATE", b.clone());
}

/// The newest incident event of `kind`, waiting up to 10 s for it.
fn incident_event(server: &Server, admin: &str, kind: &str, skip: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found: Vec<Value> = server
            .cluster_events(admin)
            .into_iter()
            .filter(|e| e["kind"] == kind)
            .collect();
        if found.len() > skip {
            return found[0].clone();
        }
        assert!(Instant::now() < deadline, "no {kind} #{}", skip + 1);
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn fault_reason(event: &Value) -> Value {
    event["data"]["incident"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "fault")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn the_incidents_fault_reason_names_the_cause_as_it_changes() {
    let server = Server::start();
    let admin = server.admin();
    let (a, mut wa, b, mut wb) = server.two_agents(&admin);
    let master = reading(&[("VI_1", "MASTER")]);
    let script_and_link = fault_reading(
        json!([{ "kind": "script", "name": "chk_lab", "status": "BAD", "ok": false },
               { "kind": "interface", "name": "trk0", "status": "DOWN", "ok": false },
               { "kind": "file", "name": "weighted", "value": -5, "weight": 1, "ok": false }]),
        "FAULT",
    );
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, master.clone()),
            (&mut wb, &b, script_and_link.clone()),
        ],
    );
    // The cluster list says why at once (no confirmation needed for a state).
    let clusters = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
        .body;
    let member = clusters[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["clientId"] == b.id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(
        member["instance"]["faultReason"],
        "track script chk_lab failed and tracked interface trk0 is down"
    );
    answer_requests(&mut wa, &master, &mut wb, &script_and_link);
    let opened = incident_event(&server, &admin, "vrrp.incident_opened", 0);
    let reason = fault_reason(&opened);
    assert_eq!(
        reason["text"],
        "lb-b is in FAULT: track script chk_lab failed and tracked interface trk0 is down.",
        "the weighted file only lowers the priority: {opened}"
    );
    assert_eq!(reason["host"], "lb-b");
    assert_eq!(
        reason["causes"],
        json!([{ "kind": "script", "name": "chk_lab", "status": "BAD" },
               { "kind": "interface", "name": "trk0", "status": "DOWN" }])
    );
    assert!(opened["detail"]
        .as_str()
        .unwrap()
        .contains("track script chk_lab failed"));
    let in_data = opened["data"]["cluster"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["host"] == "lb-b")
        .cloned()
        .unwrap();
    assert_eq!(
        in_data["faultReason"], "track script chk_lab failed and tracked interface trk0 is down",
        "webhook templates can show it beside the member"
    );

    // Its own trackers recover, the group keeps it in FAULT: a new finding.
    let through_group = fault_reading(
        json!([{ "kind": "script", "name": "chk_lab", "status": "GOOD", "ok": true }]),
        "FAULT",
    );
    wb.send("KEEPALIVED_UPDATE", through_group.clone());
    answer_requests(&mut wa, &master, &mut wb, &through_group);
    let updated = incident_event(&server, &admin, "vrrp.incident_updated", 0);
    assert_eq!(
        updated["data"]["incident"]["added"],
        json!(["lb-b is in FAULT: sync group SG_1 is in FAULT."])
    );
    assert_eq!(
        updated["data"]["incident"]["cleared"],
        json!([
            "lb-b is in FAULT: track script chk_lab failed and tracked interface trk0 is down."
        ])
    );

    // Nothing reportable: said plainly.
    let no_cause = fault_reading(json!([]), "BACKUP");
    wb.send("KEEPALIVED_UPDATE", no_cause.clone());
    answer_requests(&mut wa, &master, &mut wb, &no_cause);
    let updated = incident_event(&server, &admin, "vrrp.incident_updated", 1);
    assert_eq!(
        fault_reason(&updated)["text"],
        "lb-b is in FAULT; keepalived reports no cause."
    );
}

#[test]
fn the_webhook_samples_show_the_cause() {
    let server = Server::start();
    let admin = server.admin();
    // Nothing listens there: the answer still carries what was sent.
    let url = format!("http://127.0.0.1:{}/", free_port());
    let sent = server.post(
        "/api/v1/webhooks/test",
        Auth::Cookie(&admin),
        &json!({ "name": "x", "url": url,
                 "bodyTemplate": r#"{"m": "{{event.message}}", "causes": "{{event.data.causes}}"}"# })
        .to_string(),
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(
        sent.body["body"]["m"],
        "VI_1 is in FAULT: track script chk_haproxy failed."
    );
    assert_eq!(sent.body["body"]["causes"][0]["name"], "chk_haproxy");

    // The ready-made Slack template, previewed on the incident update sample.
    let templates = server
        .get("/api/v1/webhooks/templates", Auth::Cookie(&admin))
        .body;
    let slack = templates
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "slack")
        .cloned()
        .unwrap();
    let mut hook = slack["webhook"].clone();
    hook["sampleKind"] = json!("vrrp.incident_updated");
    let p = server.post(
        "/api/v1/webhooks/preview",
        Auth::Cookie(&admin),
        &hook.to_string(),
    );
    assert_eq!(p.body["ok"], true, "{}", p.body);
    let rendered = p.body["body"].to_string();
    assert!(
        rendered.contains("*lb-2*: FAULT: track script chk_haproxy failed"),
        "{rendered}"
    );
    assert!(
        rendered.contains("new: lb-2 is in FAULT: track script chk_haproxy failed."),
        "the detail names the finding: {rendered}"
    );
    // The new kind has a sample of its own.
    let t = server.post(
        "/api/v1/webhooks/preview",
        Auth::Cookie(&admin),
        &json!({ "url": "https://x.invalid/", "bodyTemplate": "{}", "sampleKind": "vrrp.track_changed" })
            .to_string(),
    );
    assert_eq!(t.body["message"], "VI_1: track script chk_haproxy failed.");
}
