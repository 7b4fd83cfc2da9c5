//! `/api/v1/webhooks` over real HTTP.

use crate::harness::*;
use serde_json::json;

#[test]
fn webhook_definitions_with_defaults_refusals_and_order() {
    let server = Server::start();
    let admin = server.admin();
    let post = |body: serde_json::Value| {
        server.post("/api/v1/webhooks", Auth::Cookie(&admin), &body.to_string())
    };
    assert_eq!(
        server.post("/api/v1/webhooks", Auth::None, "{}").status,
        401
    );
    let a = post(
        json!({ "name": "zulu paging", "url": "https://events.example/v2/enqueue", "bodyTemplate": "{\"summary\": \"{{event.message}}\"}" }),
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    let zulu = a.body.clone();
    assert_eq!(zulu["method"], "POST");
    assert_eq!(zulu["minLevel"], "warning");
    assert_eq!(zulu["timeoutMs"], 10000);
    assert_eq!(
        (
            zulu["enabled"].as_bool(),
            zulu["kinds"].clone(),
            zulu["headers"].clone()
        ),
        (Some(true), json!([]), json!({}))
    );
    assert!(
        zulu["lastStatus"].is_null()
            && zulu["lastError"].is_null()
            && zulu["lastAttemptAt"].is_null()
    );
    assert_eq!(
        zulu["bodyTemplate"], "{\"summary\": \"{{event.message}}\"}",
        "stored as written"
    );
    let a = post(
        json!({ "name": "alpha chat", "url": "https://chat.example/hook", "method": "PUT", "headers": { "X-Token": "s3cret", "X-Host": "{{client.hostname}}" },
                         "bodyTemplate": "{}", "minLevel": "info", "kinds": ["vrrp.*"], "timeoutMs": 2000, "enabled": false }),
    );
    assert_eq!(a.status, 201);
    assert_eq!(
        a.body["headers"]["X-Token"], "s3cret",
        "headers are returned in the clear"
    );
    let list = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha chat", "zulu paging"], "ordered by name");

    for (body, error) in [
        (json!({ "url": "https://h", "bodyTemplate": "{}" }), "name: is required"),
        (json!({ "name": "x", "url": "mailto:ops@example", "bodyTemplate": "{}" }), "url: must start with http:// or https://"),
        (json!({ "name": "x", "url": "https://h", "bodyTemplate": "{}", "timeoutMs": 500 }), "timeoutMs: must be a whole number from 1000 to 60000"),
        (json!({ "name": "x", "url": "https://h", "bodyTemplate": "{not json" }), "bodyTemplate: $: not valid JSON: key must be a string at line 1 column 2"),
        (json!({ "name": "x", "url": "https://h", "bodyTemplate": "{\"hosts\": {\"$map\": \"event.data.cluster.members\", \"each(m)\": \"{{n.host}}\"}}" }),
         "bodyTemplate: hosts.$map.each(m): \"n\" is not event, client, webhook, readiness or a $map variable in scope"),
    ] {
        let a = post(body.clone());
        assert_eq!((a.status, a.error()), (400, error), "{body}");
    }

    let id = zulu["id"].as_str().unwrap();
    let a = server.put(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin), &json!({ "name": "zulu paging", "url": "https://events.example/v2/enqueue", "bodyTemplate": "{}" }).to_string());
    assert_eq!(a.status, 200);
    assert_eq!(
        a.body["bodyTemplate"], "{}",
        "the whole configuration is replaced"
    );
    assert!(a.body["updatedAt"].is_string());
    assert_eq!(
        server
            .put(
                "/api/v1/webhooks/nope",
                Auth::Cookie(&admin),
                &json!({ "name": "n", "url": "https://h", "bodyTemplate": "{}" }).to_string()
            )
            .status,
        404
    );
    let a = server.delete(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin));
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "success": true }))
    );
    assert_eq!(
        server
            .delete(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin))
            .status,
        404
    );
    assert_eq!(
        server
            .get("/api/v1/webhooks", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

use std::sync::mpsc;
use std::time::{Duration, Instant};

pub(crate) use vrrp_test_support::receiver::Receiver;

pub(crate) fn create_hook(server: &Server, admin: &str, body: serde_json::Value) -> String {
    let a = server.post("/api/v1/webhooks", Auth::Cookie(admin), &body.to_string());
    assert_eq!(a.status, 201, "{:?}", a.body);
    a.body["id"].as_str().unwrap().to_owned()
}

pub(crate) fn event(id: &str, kind: &str, level: &str) -> serde_json::Value {
    json!({ "id": id, "occurredAt": chrono::Utc::now().to_rfc3339(), "kind": kind, "level": level, "subject": { "instanceName": "VI_1", "vrid": 51 }, "data": { "from": "MASTER", "to": "BACKUP" } })
}

#[test]
fn deliveries_are_filtered_rendered_and_in_order() {
    let receiver = Receiver::start(vec![Some(200)]);
    let server = Server::start();
    let admin = server.admin();
    create_hook(
        &server,
        &admin,
        json!({
            "name": "chat", "url": receiver.url("/hook/{{client.hostname}}"), "minLevel": "info", "kinds": ["test.*"],
            "headers": { "X-Host": "{{client.hostname}}", "Content-Type": "text/plain" },
            "bodyTemplate": r#"{"text": "{{event.message}}", "kind": "{{event.kind}}", "n": "{{event.subject.vrid}}", "by": "{{webhook.name}}"}"#,
        }),
    );
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    ws.send("ACTIVITY", json!({ "events": [event("a", "test.first", "info"), event("b", "other.kind", "error"), event("c", "test.quiet", "trace")] }));
    ws.expect("ACTIVITY_ACK");
    let (method, url, headers, body) = receiver.next(Duration::from_secs(5)).expect("a delivery");
    assert_eq!((method.as_str(), url.as_str()), ("POST", "/hook/lb-1"));
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-host").as_deref(), Some("lb-1"));
    assert_eq!(
        header("content-type").as_deref(),
        Some("application/json"),
        "always JSON"
    );
    assert_eq!(body["kind"], "test.first");
    assert_eq!(body["n"], 51, "a whole placeholder keeps its type");
    assert_eq!(body["by"], "chat");
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("test.first on lb-1"),
        "{}",
        body["text"]
    );
    assert!(
        receiver.next(Duration::from_millis(500)).is_none(),
        "other kinds and lower levels are not sent"
    );

    let burst: Vec<_> = (0..20)
        .map(|i| event(&format!("e{i}"), "test.burst", "warning"))
        .collect();
    ws.send("ACTIVITY", json!({ "events": burst }));
    ws.expect("ACTIVITY_ACK");
    let order: Vec<String> = (0..20)
        .map(|_| {
            receiver.next(Duration::from_secs(5)).unwrap().3["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(order.len(), 20);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let hook = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body[0].clone();
        if hook["lastStatus"] == 200 {
            assert!(hook["lastError"].is_null() && hook["lastAttemptAt"].is_string());
            break;
        }
        assert!(Instant::now() < deadline, "{hook}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let kinds: Vec<String> = server
        .get("/api/v1/activity", Auth::Cookie(&admin))
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        kinds.iter().all(|k| !k.contains("webhook")),
        "outcomes never reach the activity list"
    );
}

#[test]
fn failed_deliveries_are_retried_after_1_and_5_seconds_of_the_server_clock() {
    let receiver = Receiver::start(vec![Some(500), Some(429), Some(200)]);
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    // Only this test's kind: deliveries to one webhook are in order, so another
    // event waiting out its retries would hold ours back.
    create_hook(
        &server,
        &admin,
        json!({ "name": "pager", "url": receiver.url("/"), "minLevel": "trace", "kinds": ["test.*"], "bodyTemplate": "{}" }),
    );
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("r1", "test.retry", "error")] }),
    );
    ws.expect("ACTIVITY_ACK");
    let first = receiver
        .next(Duration::from_secs(5))
        .expect("first attempt (500)");
    assert_eq!(first.0, "POST");
    assert!(
        receiver.next(Duration::from_millis(600)).is_none(),
        "no retry before a second of server time"
    );
    clock.advance(chrono::Duration::seconds(1));
    assert!(
        receiver.next(Duration::from_secs(3)).is_some(),
        "second attempt after 1 s (429)"
    );
    clock.advance(chrono::Duration::seconds(4));
    assert!(
        receiver.next(Duration::from_millis(600)).is_none(),
        "the last retry waits 5 s"
    );
    clock.advance(chrono::Duration::seconds(1));
    assert!(
        receiver.next(Duration::from_secs(3)).is_some(),
        "third attempt after 5 s (200)"
    );
    clock.advance(chrono::Duration::seconds(30));
    assert!(
        receiver.next(Duration::from_millis(600)).is_none(),
        "two retries at most"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body[0]["lastStatus"] != 200 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_dead_webhook_delays_no_other() {
    let dead = Receiver::start(vec![None]);
    let alive = Receiver::start(vec![Some(204)]);
    let server = Server::start();
    let admin = server.admin();
    create_hook(
        &server,
        &admin,
        json!({ "name": "dead", "url": dead.url("/"), "minLevel": "trace", "kinds": ["test.*"], "timeoutMs": 60000, "bodyTemplate": "{}" }),
    );
    create_hook(
        &server,
        &admin,
        json!({ "name": "alive", "url": alive.url("/"), "minLevel": "trace", "kinds": ["test.*"], "bodyTemplate": "{\"id\": \"{{event.id}}\"}" }),
    );
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    for i in 0..5 {
        ws.send(
            "ACTIVITY",
            json!({ "events": [event(&format!("d{i}"), "test.x", "info")] }),
        );
        ws.expect("ACTIVITY_ACK");
        let got = alive
            .next(Duration::from_secs(2))
            .expect("the healthy webhook is not held up");
        assert_eq!(got.3["id"], format!("d{i}"));
    }
    assert!(
        dead.next(Duration::from_millis(100)).is_some(),
        "the dead one got its first request and hangs"
    );
}

#[test]
fn the_test_endpoint_sends_the_sample_once_and_records_nothing() {
    let refusing = Receiver::start(vec![Some(503)]);
    let server = Server::start();
    let admin = server.admin();
    let body = json!({ "name": "pager", "url": refusing.url("/enqueue"), "kinds": ["vrrp.incident_*"],
                       "bodyTemplate": r#"{"summary": "{{event.message}}", "dedup_key": "{{event.correlationId}}", "action": {"$if": "event.kind == 'vrrp.incident_resolved'", "then": "resolve", "else": "trigger"}}"# });
    let a = server.post(
        "/api/v1/webhooks/test",
        Auth::Cookie(&admin),
        &body.to_string(),
    );
    assert_eq!(a.status, 200, "a refusing target is still 200");
    assert_eq!(
        (a.body["ok"].as_bool(), a.body["status"].as_u64()),
        (Some(false), Some(503))
    );
    assert_eq!(a.body["error"], "answered 503");
    assert_eq!(a.body["body"]["action"], "trigger");
    assert_eq!(a.body["body"]["dedup_key"], "sample-incident");
    assert!(a.body["body"]["summary"]
        .as_str()
        .unwrap()
        .starts_with("Incident opened for VRID 51 on site dc-1"));
    assert_eq!(
        a.body["response"].as_str().unwrap().chars().count(),
        500,
        "the first 500 characters of the answer"
    );
    assert!(refusing.next(Duration::from_secs(1)).is_some());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        refusing.next(Duration::from_millis(100)).is_none(),
        "sent once, no retries"
    );
    assert_eq!(
        server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body,
        json!([]),
        "nothing saved"
    );
    // No matching kind: vrrp.state_changed.
    let a = server.post("/api/v1/webhooks/test", Auth::Cookie(&admin), &json!({ "name": "x", "url": refusing.url("/"), "bodyTemplate": "{\"k\": \"{{event.kind}}\"}" }).to_string());
    assert_eq!(a.body["body"]["k"], "vrrp.state_changed");
    // Nothing answering at all.
    let port = free_port();
    let a = server.post(
        "/api/v1/webhooks/test",
        Auth::Cookie(&admin),
        &json!({ "name": "x", "url": format!("http://127.0.0.1:{port}/"), "bodyTemplate": "{}" })
            .to_string(),
    );
    assert_eq!(
        (a.status, a.body["ok"].as_bool(), a.body["status"].clone()),
        (200, Some(false), serde_json::Value::Null)
    );
    assert!(a.body["error"].is_string());
    assert_eq!(
        server
            .post(
                "/api/v1/webhooks/test",
                Auth::Cookie(&admin),
                r#"{"name": "x"}"#
            )
            .status,
        400,
        "an invalid webhook"
    );
}

#[test]
fn beyond_100_waiting_new_events_are_dropped_for_that_webhook_only() {
    let hanging = Receiver::start(vec![None]);
    let healthy = Receiver::start(vec![Some(200)]);
    let server = Server::start();
    let admin = server.admin();
    create_hook(
        &server,
        &admin,
        json!({ "name": "stuck", "url": hanging.url("/"), "minLevel": "trace", "kinds": ["test.*"], "timeoutMs": 60000, "bodyTemplate": "{}" }),
    );
    create_hook(
        &server,
        &admin,
        json!({ "name": "fine", "url": healthy.url("/"), "minLevel": "trace", "kinds": ["other.*"], "bodyTemplate": "{\"id\": \"{{event.id}}\"}" }),
    );
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    // The first delivery hangs; 100 wait behind it; the next 50 are dropped for it.
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("first", "test.x", "info")] }),
    );
    ws.expect("ACTIVITY_ACK");
    assert!(
        hanging.next(Duration::from_secs(5)).is_some(),
        "the first delivery is in flight and hangs"
    );
    let batch: Vec<_> = (0..150)
        .map(|i| event(&format!("w{i:03}"), "test.x", "info"))
        .collect();
    ws.send("ACTIVITY", json!({ "events": batch }));
    ws.expect("ACTIVITY_ACK");
    let dropped = || {
        server
            .log_text()
            .matches("Webhook \\\"stuck\\\": 100 deliveries waiting")
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while dropped() < 50 {
        assert!(
            Instant::now() < deadline,
            "{} dropped, expected 50",
            dropped()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The other webhook is not held up by the stuck one.
    for i in 0..5 {
        ws.send(
            "ACTIVITY",
            json!({ "events": [event(&format!("o{i}"), "other.y", "info")] }),
        );
        ws.expect("ACTIVITY_ACK");
        assert_eq!(
            healthy.next(Duration::from_secs(2)).expect("delivered").3["id"],
            format!("o{i}")
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(dropped(), 50, "exactly the events beyond 100 waiting");
}

/// Waits until the named webhook's `lastError` is set and returns it with `lastStatus`.
fn last_outcome(server: &Server, admin: &str, name: &str) -> (serde_json::Value, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let hooks = server.get("/api/v1/webhooks", Auth::Cookie(admin)).body;
        let hook = hooks
            .as_array()
            .and_then(|a| a.iter().find(|h| h["name"] == name))
            .cloned()
            .unwrap_or_default();
        if let Some(error) = hook["lastError"].as_str() {
            return (hook["lastStatus"].clone(), error.to_owned());
        }
        assert!(Instant::now() < deadline, "{name} recorded no outcome");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_timeout_and_a_closed_connection_are_failures_that_are_retried() {
    // A receiver that reads the request and closes the connection without answering.
    let closer = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closer_url = format!("http://{}/", closer.local_addr().unwrap());
    let (accepted_tx, accepted) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in closer.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut &stream, &mut buf);
            drop(stream);
            if accepted_tx.send(()).is_err() {
                return;
            }
        }
    });
    let hanging = Receiver::start(vec![None]);
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    create_hook(
        &server,
        &admin,
        json!({ "name": "closer", "url": closer_url, "minLevel": "trace", "kinds": ["test.*"], "bodyTemplate": "{}" }),
    );
    create_hook(
        &server,
        &admin,
        json!({ "name": "slow", "url": hanging.url("/"), "minLevel": "trace", "kinds": ["test.*"], "timeoutMs": 1000, "bodyTemplate": "{}" }),
    );
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("f1", "test.fail", "error")] }),
    );
    ws.expect("ACTIVITY_ACK");
    accepted
        .recv_timeout(Duration::from_secs(5))
        .expect("first attempt reaches the closing receiver");
    assert!(hanging.next(Duration::from_secs(5)).is_some());
    assert!(
        accepted.recv_timeout(Duration::from_millis(300)).is_err(),
        "no retry before a second of server time"
    );
    // Each retry is due on the server clock; the 1 s wait for the slow one's answer
    // is its own socket timeout, which no clock can drive.
    for (advance, which) in [(1, "first retry"), (5, "second retry")] {
        clock.advance(chrono::Duration::seconds(advance));
        accepted
            .recv_timeout(Duration::from_secs(4))
            .unwrap_or_else(|_| panic!("the closed connection gets its {which}"));
        assert!(
            hanging.next(Duration::from_secs(4)).is_some(),
            "the timeout gets its {which}"
        );
    }
    // After the two retries the failure is stored (spec: Webhook delivery).
    let (status, error) = last_outcome(&server, &admin, "closer");
    assert_eq!(status, serde_json::Value::Null, "nothing answered");
    assert!(!error.is_empty());
    let (status, error) = last_outcome(&server, &admin, "slow");
    assert_eq!(status, serde_json::Value::Null, "nothing answered");
    assert!(
        error.to_ascii_lowercase().contains("timeout") || error.contains("timed out"),
        "{error}"
    );
    clock.advance(chrono::Duration::seconds(30));
    assert!(
        accepted.recv_timeout(Duration::from_millis(500)).is_err(),
        "two retries at most"
    );
}

#[test]
fn the_template_language_page_is_served_for_the_dashboard_to_link() {
    let server = Server::start();
    let page = server.get("/docs/webhook-templates", Auth::None);
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/markdown; charset=utf-8")
    );
    let text = page.body.as_str().expect("a text page");
    for directive in ["$if", "$map", "$join", "$$", "date("] {
        assert!(text.contains(directive), "the page documents {directive}");
    }
}

/// The editor's live preview (an extension beyond the spec, ARCHITECTURE.md):
/// renders the sample of the chosen kind with the real engine, refuses with the
/// save's own text, sends nothing and needs a session.
#[test]
fn the_preview_renders_a_sample_with_the_real_engine_and_locates_errors() {
    let server = Server::start();
    let admin = server.admin();
    let template = r#"{"text": "{{event.message}}", "kind": "{{event.kind | upper}}", "hook": "{{webhook.name}}"}"#;
    let body = json!({ "url": "https://example.invalid/{{event.kind}}", "bodyTemplate": template,
                       "sampleKind": "vrrp.incident_opened" });
    let a = server.post(
        "/api/v1/webhooks/preview",
        Auth::Cookie(&admin),
        &body.to_string(),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["ok"], true);
    assert_eq!(a.body["kind"], "vrrp.incident_opened");
    assert_eq!(a.body["body"]["kind"], "VRRP.INCIDENT_OPENED");
    assert_eq!(a.body["body"]["hook"], "(unnamed)", "a blank name previews");
    assert_eq!(a.body["body"]["text"], a.body["message"]);
    assert!(a.body["message"]
        .as_str()
        .unwrap()
        .starts_with("Incident opened for VRID 51 on site dc-1"));
    assert_eq!(
        a.body["url"],
        "https://example.invalid/vrrp.incident_opened"
    );
    assert!(a.body["kinds"]
        .as_array()
        .unwrap()
        .contains(&json!("keepalived.stopped")));

    // A broken template: the same text a save answers with its 400.
    let broken = json!({ "name": "x", "url": "https://example.invalid/",
                         "bodyTemplate": r#"{"text": "{{event.message | nosuch}}"}"# });
    let saved = server.post(
        "/api/v1/webhooks",
        Auth::Cookie(&admin),
        &broken.to_string(),
    );
    assert_eq!(saved.status, 400);
    let p = server.post(
        "/api/v1/webhooks/preview",
        Auth::Cookie(&admin),
        &broken.to_string(),
    );
    assert_eq!(p.status, 200);
    assert_eq!(p.body["ok"], false);
    assert_eq!(p.body["field"], "bodyTemplate");
    assert_eq!(p.body["error"].as_str(), Some(saved.error()));
    assert!(
        saved.error().starts_with("bodyTemplate: text:"),
        "{}",
        saved.error()
    );

    // An unknown sample kind and a body that is no object are the caller's errors.
    let p = server.post(
        "/api/v1/webhooks/preview",
        Auth::Cookie(&admin),
        &json!({ "url": "https://x.invalid/", "bodyTemplate": "{}", "sampleKind": "nope" })
            .to_string(),
    );
    assert_eq!(p.status, 400);
    assert!(p
        .error()
        .starts_with("sampleKind: must be one of vrrp.state_changed"));
    assert_eq!(
        server
            .post("/api/v1/webhooks/preview", Auth::None, "{}")
            .status,
        401
    );
    assert_eq!(
        server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body,
        json!([]),
        "nothing saved"
    );
}
