//! Silences through the real server run in-process on a driven clock,
//! with a real webhook receiver: events held back while a silence is active, the
//! one delivery of an incident still open when it ends, and the API's rules.

use crate::harness::*;
use crate::webhooks::{create_hook, Receiver};
use chrono::Duration as Span;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use vrrp_monitor::clock::Clock;

const KEY: &str = "|51|192.0.2.0/24";

fn activity(server: &Server, admin: &str, kind: &str) -> Vec<Value> {
    server
        .get("/api/v1/activity", Auth::Cookie(admin))
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

fn wait_for(server: &Server, admin: &str, kind: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(e) = activity(server, admin, kind).into_iter().next() {
            return e;
        }
        assert!(Instant::now() < deadline, "no {kind}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[test]
fn a_silence_holds_webhooks_back_and_an_open_incident_is_delivered_once_when_it_ends() {
    let receiver = Receiver::start(vec![Some(200)]);
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    create_hook(
        &server,
        &admin,
        json!({ "name": "pager", "url": receiver.url("/hook"), "minLevel": "info", "kinds": ["vrrp.*"],
                "bodyTemplate": r#"{"kind": "{{event.kind}}", "text": "{{event.message}}", "detail": "{{event.detail}}"}"# }),
    );
    let created = server.post(
        "/api/v1/silences",
        Auth::Cookie(&admin),
        &json!({ "matcher": { "clusterKey": KEY }, "endsAt": iso(clock.utc() + Span::hours(1)), "comment": "kernel update" })
            .to_string(),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let silence = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(created.body["status"], "active");
    assert_eq!(created.body["createdBy"], "admin");
    let noted = wait_for(&server, &admin, "silence.created");
    assert_eq!(noted["level"], "info");
    assert_eq!(noted["source"], "server");
    assert!(
        noted["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Silence for cluster {KEY} until")),
        "{noted}"
    );
    assert_eq!(noted["detail"], "kernel update");

    // A cluster of one host: degraded, an incident opens during the silence.
    let a = server.register_agent(&admin, "lb-a");
    let mut wa = server.connect_agent(&a);
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    std::thread::sleep(Duration::from_millis(600));
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let opened = wait_for(&server, &admin, "vrrp.incident_opened");
    assert_eq!(
        opened["data"]["silenced"]["id"],
        silence.as_str(),
        "stored, marked"
    );
    assert_eq!(opened["data"]["silenced"]["comment"], "kernel update");
    assert!(
        receiver.next(Duration::from_millis(1500)).is_none(),
        "held back"
    );

    // The silence ends with the incident still open: delivered then, once.
    clock.advance(Span::hours(1));
    let (_, _, _, body) = receiver
        .next(Duration::from_secs(5))
        .expect("the open incident is delivered when the silence ends");
    assert_eq!(body["kind"], "vrrp.incident_updated");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("still open when the silence \"kernel update\" ended"),
        "{body}"
    );
    let expired = wait_for(&server, &admin, "silence.expired");
    assert_eq!(expired["correlationId"], silence.as_str());
    let updated = wait_for(&server, &admin, "vrrp.incident_updated");
    assert_eq!(updated["correlationId"], opened["correlationId"]);
    assert_eq!(updated["data"]["silenceEnded"]["id"], silence.as_str());
    assert!(updated["data"].get("silenced").is_none());
    clock.advance(Span::minutes(5));
    assert!(
        receiver.next(Duration::from_millis(1500)).is_none(),
        "only once"
    );
    assert_eq!(activity(&server, &admin, "silence.expired").len(), 1);
    let list = server.get("/api/v1/silences", Auth::Cookie(&admin)).body;
    assert_eq!(list[0]["id"], silence.as_str());
    assert_eq!(list[0]["status"], "expired");
}

#[test]
fn silences_are_validated_listed_and_ended_early() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let post =
        |body: Value| server.post("/api/v1/silences", Auth::Cookie(&admin), &body.to_string());
    let in_hours = |h: i64| iso(clock.utc() + Span::hours(h));
    for (body, error) in [
        (
            json!({ "endsAt": in_hours(1), "comment": "x" }),
            "matcher: is required",
        ),
        (
            json!({ "matcher": { "kind": 5 }, "endsAt": in_hours(1), "comment": "x" }),
            "matcher.kind: must be a string",
        ),
        (
            json!({ "matcher": { "kind": "vrrp.*" }, "comment": "x" }),
            "endsAt: is required",
        ),
        (
            json!({ "matcher": { "kind": "vrrp.*" }, "endsAt": in_hours(1) }),
            "comment: is required",
        ),
        (
            json!({ "matcher": { "kind": "vrrp.*" }, "endsAt": in_hours(24 * 8), "comment": "x" }),
            "endsAt: must be at most 7 days after startsAt",
        ),
    ] {
        let a = post(body);
        assert_eq!(a.status, 400);
        assert_eq!(a.body["error"], error);
    }
    let a = post(
        json!({ "matcher": { "kind": "keepalived.*" }, "endsAt": in_hours(4), "comment": "upgrade" }),
    );
    assert_eq!(a.status, 201);
    let id = a.body["id"].as_str().unwrap().to_owned();
    assert_eq!(server.get("/api/v1/silences", Auth::None).status, 401);
    assert_eq!(
        server.get("/api/v1/silences", Auth::Cookie(&admin)).body[0]["status"],
        "active"
    );
    // An agent's keepalived.stopped is silenced; another kind is not.
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    let now = iso(clock.utc());
    ws.send("ACTIVITY", json!({ "events": [
        { "id": "e1", "occurredAt": now, "kind": "keepalived.stopped", "level": "warning", "subject": {}, "data": {} },
        { "id": "e2", "occurredAt": now, "kind": "vrrp.state_changed", "level": "info", "subject": {}, "data": {} },
    ] }));
    ws.expect("ACTIVITY_ACK");
    let stopped = wait_for(&server, &admin, "keepalived.stopped");
    assert_eq!(stopped["data"]["silenced"]["id"], id.as_str());
    assert!(wait_for(&server, &admin, "vrrp.state_changed")["data"]
        .get("silenced")
        .is_none());

    let path = format!("/api/v1/silences/{id}");
    assert_eq!(server.delete(&path, Auth::Cookie(&admin)).status, 200);
    wait_for(&server, &admin, "silence.expired");
    assert_eq!(
        server.delete(&path, Auth::Cookie(&admin)).status,
        404,
        "already ended"
    );
    assert_eq!(
        server.get("/api/v1/silences", Auth::Cookie(&admin)).body[0]["status"],
        "expired"
    );
}
