//! Configuration as files: a webhook defined in `provisioning/webhooks.yaml`
//! sends; an edit and SIGHUP change it; the API refuses to; a file with a
//! syntax error is named with its line and the old configuration stays; a
//! SIGHUP with unchanged files changes nothing and leaves no audit entry.

use crate::harness::*;
use crate::webhooks::{event, Receiver};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn file(receiver: &Receiver, version: u32) -> String {
    format!(
        r#"# Provisioned by config management.
webhooks:
  - name: chat
    url: {}
    minLevel: info
    kinds: ["test.*"]
    bodyTemplate:
      version: {version}
      kind: "{{{{event.kind}}}}"
settings:
  notification_retention_days: 45
"#,
        receiver.url("/hook")
    )
}

fn provisioned_entries(server: &Server, admin: &str) -> usize {
    let page = server.get("/api/v1/audit?actor=provisioning", Auth::Cookie(admin));
    assert_eq!(page.status, 200, "{:?}", page.body);
    page.body["entries"].as_array().unwrap().len()
}

/// Waits until `check` holds of `GET path`.
fn wait_for(server: &Server, admin: &str, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let body = server.get(path, Auth::Cookie(admin)).body;
        if check(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{path}: {body}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn a_provisioned_webhook_sends_changes_on_sighup_and_refuses_the_api() {
    let receiver = Receiver::start(vec![Some(200)]);
    let launch = Launch::new();
    let dir = launch.data_dir().join("provisioning");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("webhooks.yaml");
    std::fs::write(&path, file(&receiver, 1)).unwrap();
    let server = launch.start();
    let admin = server.admin();

    // Read at start, marked as provisioned.
    let hooks = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
    assert_eq!(hooks.as_array().unwrap().len(), 1, "{hooks}");
    let hook = hooks[0].clone();
    assert_eq!(
        (&hook["name"], &hook["provisionedFrom"]),
        (&json!("chat"), &json!("webhooks.yaml"))
    );
    let id = hook["id"].as_str().unwrap().to_owned();
    let settings = server
        .get("/api/v1/settings/cleanup", Auth::Cookie(&admin))
        .body;
    assert_eq!(settings["notification_retention_days"], "45");
    let status = server
        .get("/api/v1/settings/provisioning", Auth::Cookie(&admin))
        .body;
    assert_eq!(status["ok"], true, "{status}");
    assert_eq!(status["lastTrigger"], "start");
    assert_eq!(status["files"], json!(["webhooks.yaml"]));
    assert_eq!(status["webhooks"][0]["id"], id.as_str());
    assert_eq!(
        status["settings"],
        json!({ "notification_retention_days": "webhooks.yaml" })
    );
    assert_eq!(
        provisioned_entries(&server, &admin),
        1,
        "the start applied it"
    );

    // It sends.
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("p1", "test.provisioned", "warning")] }),
    );
    ws.expect("ACTIVITY_ACK");
    let (_, url, _, body) = receiver.next(Duration::from_secs(5)).expect("a delivery");
    assert_eq!(url, "/hook");
    assert_eq!(body, json!({ "version": 1, "kind": "test.provisioned" }));

    // The API refuses to change it, or a provisioned setting.
    let refusal =
        "webhook \"chat\" is provisioned from webhooks.yaml; change the file and send SIGHUP";
    let put = server.put(
        &format!("/api/v1/webhooks/{id}"),
        Auth::Cookie(&admin),
        &json!({ "name": "chat", "url": "https://elsewhere.example/", "bodyTemplate": "{}" })
            .to_string(),
    );
    assert_eq!((put.status, put.error()), (409, refusal));
    let delete = server.delete(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin));
    assert_eq!((delete.status, delete.error()), (409, refusal));
    let put = server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        &json!({ "notification_retention_days": "10" }).to_string(),
    );
    assert_eq!(
        (put.status, put.error()),
        (
            409,
            "setting \"notification_retention_days\" is provisioned from webhooks.yaml; change the file and send SIGHUP"
        )
    );
    assert_eq!(
        server
            .put(
                "/api/v1/settings/cleanup",
                Auth::Cookie(&admin),
                &json!({ "token_retention_days": "10" }).to_string()
            )
            .status,
        200,
        "other keys stay the API's"
    );

    // An edit and SIGHUP change it, keeping its id.
    std::fs::write(&path, file(&receiver, 2)).unwrap();
    server.signal(libc::SIGHUP);
    let hooks = wait_for(&server, &admin, "/api/v1/webhooks", |b| {
        b[0]["bodyTemplate"]
            .as_str()
            .is_some_and(|t| t.contains('2'))
    });
    assert_eq!(hooks[0]["id"], id.as_str());
    assert!(hooks[0]["updatedAt"].is_string());
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("p2", "test.provisioned", "warning")] }),
    );
    ws.expect("ACTIVITY_ACK");
    let (_, _, _, body) = receiver.next(Duration::from_secs(5)).expect("a delivery");
    assert_eq!(body["version"], 2, "the new template");
    assert_eq!(provisioned_entries(&server, &admin), 2);
    let entry = &server
        .get("/api/v1/audit?actor=provisioning", Auth::Cookie(&admin))
        .body["entries"][0];
    assert_eq!(entry["via"], "cli");
    assert!(
        entry["summary"]
            .as_str()
            .unwrap()
            .contains("webhook \"chat\""),
        "{entry}"
    );

    // The same files again: nothing changes, no audit entry.
    server.signal(libc::SIGHUP);
    assert!(server.wait_log("nothing changed"), "{}", server.log_text());
    assert_eq!(provisioned_entries(&server, &admin), 2);
    let after = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
    assert_eq!(after[0]["updatedAt"], hooks[0]["updatedAt"]);

    // A syntax error: named with its line; the running configuration stays.
    std::fs::write(
        &path,
        "webhooks:\n  - name: chat\n   url: http://127.0.0.1:1/\n",
    )
    .unwrap();
    server.signal(libc::SIGHUP);
    assert!(
        server.wait_log("Provisioning files not applied: webhooks.yaml:3: "),
        "{}",
        server.log_text()
    );
    let status = wait_for(&server, &admin, "/api/v1/settings/provisioning", |s| {
        s["ok"] == false
    });
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .starts_with("webhooks.yaml:3: "),
        "{status}"
    );
    assert_eq!(status["lastTrigger"], "SIGHUP");
    assert_eq!(status["webhooks"][0]["id"], id.as_str(), "still in force");
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("p3", "test.provisioned", "warning")] }),
    );
    ws.expect("ACTIVITY_ACK");
    let (_, url, _, body) = receiver
        .next(Duration::from_secs(5))
        .expect("the old webhook still sends");
    assert_eq!((url.as_str(), body["version"].clone()), ("/hook", json!(2)));
    assert_eq!(provisioned_entries(&server, &admin), 2);
    assert_eq!(
        server
            .get("/api/v1/settings/cleanup", Auth::Cookie(&admin))
            .body["notification_retention_days"],
        "45"
    );
}
