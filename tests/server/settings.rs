//! Settings, level overrides and the cleanup schedulers over real HTTP.

use crate::harness::*;
use chrono::Duration as Span;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn activity_kinds(server: &Server, admin: &str) -> Vec<String> {
    let list = server.get("/api/v1/activity", Auth::Cookie(admin)).body;
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn settings_read_and_every_update_rule() {
    let server = Launch::new().config("# mine\nsettings:\n  # hand-added\n  my_note: hello\n  token_retention_days: '30' # a month\nsecurity:\n  hsts: false\n").start();
    let admin = server.admin();
    let a = server.get("/api/v1/settings/cleanup", Auth::Cookie(&admin));
    assert_eq!(a.status, 200);
    let expected = json!({
        "token_retention_days": "30", "token_cleanup_interval_hours": "24",
        "notification_retention_days": "90", "notification_retention_count": "500",
        "notification_cleanup_interval_hours": "24", "history_retention_days": "400",
        "activity_level_overrides": "", "my_note": "hello",
    });
    assert_eq!(a.body, expected);
    assert_eq!(
        server.get("/api/v1/settings/cleanup", Auth::None).status,
        401
    );

    let put = |body: Value| {
        server.put(
            "/api/v1/settings/cleanup",
            Auth::Cookie(&admin),
            &body.to_string(),
        )
    };
    for (body, error) in [
        (
            json!({ "security": { "hsts": true } }),
            "security: cannot be changed through the settings API",
        ),
        (
            json!({ "token_retention_days": -1 }),
            "token_retention_days: must be a non-negative whole number",
        ),
        (
            json!({ "notification_retention_count": "ten" }),
            "notification_retention_count: must be a non-negative whole number",
        ),
        (
            json!({ "notification_retention_days": 1.5 }),
            "notification_retention_days: must be a non-negative whole number",
        ),
        (
            json!({ "activity_level_overrides": "vrrp.incident_opened=none" }),
            "activity_level_overrides: vrrp.incident_opened cannot be set to none",
        ),
        (
            json!({ "activity_level_overrides": "vrrp.incident_resolved=none" }),
            "activity_level_overrides: vrrp.incident_resolved cannot be set to none",
        ),
        (
            json!({ "activity_level_overrides": "a=info,a=error" }),
            "activity_level_overrides: a is listed twice",
        ),
        (
            json!({ "activity_level_overrides": "a=loud" }),
            "activity_level_overrides: \"loud\" is not a level (trace, info, warning, error, none)",
        ),
    ] {
        let a = put(body.clone());
        assert_eq!((a.status, a.error()), (400, error), "{body}");
    }
    let a = put(json!({
        "token_retention_days": 7, "notification_retention_count": "12",
        "activity_level_overrides": "client.connected=none\nvrrp.state_changed=error",
        "future_knob": "as given",
    }));
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "success": true }))
    );
    let now = server
        .get("/api/v1/settings/cleanup", Auth::Cookie(&admin))
        .body;
    assert_eq!(now["token_retention_days"], "7");
    assert_eq!(now["notification_retention_count"], "12");
    assert_eq!(
        now["activity_level_overrides"],
        "client.connected=none,vrrp.state_changed=error"
    );
    assert_eq!(now["future_knob"], "as given");
    let file = std::fs::read_to_string(server.launch.config_path()).unwrap();
    assert!(
        file.contains("# mine") && file.contains("# hand-added"),
        "comments kept:\n{file}"
    );
    let doc: Value = serde_yaml_ng::from_str(&file).unwrap();
    assert_eq!(doc["settings"]["token_retention_days"], "7");
    assert_eq!(doc["settings"]["future_knob"], "as given");
    assert_eq!(doc["security"]["hsts"], false, "security untouched");
    // And they survive a restart.
    let (status, launch) = server.stop();
    assert!(status.success());
    let server = launch.start();
    let admin = server.admin();
    assert_eq!(
        server
            .get("/api/v1/settings/cleanup", Auth::Cookie(&admin))
            .body["token_retention_days"],
        "7"
    );
}

#[test]
fn an_unreadable_override_stops_the_start() {
    let (status, lines) = Launch::new()
        .config("settings:\n  activity_level_overrides: 'vrrp.incident_opened=none'\n")
        .run_to_exit();
    assert_eq!(status.code(), Some(1));
    let fatal = fatal_lines(&lines);
    assert_eq!(fatal.len(), 1);
    assert!(
        fatal[0].contains("settings.activity_level_overrides"),
        "{}",
        fatal[0]
    );
}

#[test]
fn level_overrides_apply_at_ingest_and_leave_stored_events_alone() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    let mut ws = server.connect_agent(&agent);
    ws.send("ACTIVITY", json!({ "events": [{ "id": "before", "occurredAt": "2026-11-21T08:00:00.000Z", "kind": "vrrp.state_changed", "level": "info" }] }));
    ws.expect("ACTIVITY_ACK");
    let a = server.put("/api/v1/settings/cleanup", Auth::Cookie(&admin), r#"{"activity_level_overrides": "vrrp.state_changed=error, keepalived.stopped=none, client.connected=none"}"#);
    assert_eq!(a.status, 200);
    ws.send("ACTIVITY", json!({ "events": [
        { "id": "after", "occurredAt": "2026-11-21T08:01:00.000Z", "kind": "vrrp.state_changed", "level": "info" },
        { "id": "dropped", "occurredAt": "2026-11-21T08:02:00.000Z", "kind": "keepalived.stopped", "level": "warning" }
    ]}));
    let mut ack: Vec<String> = ws.expect("ACTIVITY_ACK")["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    ack.sort();
    assert_eq!(
        ack,
        ["after", "dropped"],
        "a dropped kind is still acknowledged"
    );
    let appended = loop {
        let a = dash.expect("ACTIVITY_APPENDED");
        if a[0]["id"] == "after" {
            break a;
        }
    };
    assert_eq!(
        appended.as_array().unwrap().len(),
        1,
        "nothing broadcast for the dropped kind"
    );
    assert_eq!(appended[0]["level"], "error");
    // A server event set to none: a reconnect records no client.connected.
    drop(ws);
    let _again = server.connect_agent(&agent);
    std::thread::sleep(Duration::from_millis(300));
    let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let level_of = |id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .map(|e| e["level"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        level_of("before").as_deref(),
        Some("info"),
        "stored events keep their level"
    );
    assert_eq!(level_of("after").as_deref(), Some("error"));
    assert_eq!(level_of("dropped"), None);
    let kinds = activity_kinds(&server, &admin);
    assert_eq!(
        kinds.iter().filter(|k| *k == "client.connected").count(),
        1,
        "only the one before the override: {kinds:?}"
    );
}

#[test]
fn token_cleanup_removes_tokens_invalid_longer_than_the_retention() {
    let server = Server::start();
    let admin = server.admin();
    for _ in 0..4 {
        server.post("/api/v1/tokens", Auth::Cookie(&admin), "{}");
    }
    // Two long invalid (used 40 days ago, expired 40 days ago), one just used, one valid.
    server.sql(
        "UPDATE registration_tokens SET used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-40 days') WHERE rowid = 1;
         UPDATE registration_tokens SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-40 days') WHERE rowid = 2;
         UPDATE registration_tokens SET used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 minute') WHERE rowid = 3;",
    );
    let a = server.post(
        "/api/v1/settings/cleanup/invalid-tokens",
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "success": true, "removed": 2 }))
    );
    assert_eq!(
        server
            .get("/api/v1/tokens", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len(),
        2
    );
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"token_retention_days": 0}"#,
    );
    let a = server.post(
        "/api/v1/settings/cleanup/invalid-tokens",
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(a.body["removed"], 1, "0 removes the used one at once");
    assert_eq!(
        server
            .get("/api/v1/tokens", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len(),
        1,
        "the valid token stays"
    );
    let status = server
        .get("/api/v1/settings/scheduler-status", Auth::Cookie(&admin))
        .body;
    let tokens = &status["schedulers"]["token-cleanup"];
    assert_eq!(tokens["isRunning"], false);
    assert!(tokens["nextRun"].is_string());
    let last = &tokens["lastRun"];
    assert_eq!(
        (last["trigger"].as_str(), last["status"].as_str()),
        (Some("manual"), Some("success"))
    );
    assert_eq!(last["result"], json!({ "removed": 1 }));
    assert!(
        last["startedAt"].is_string() && last["finishedAt"].is_string() && last["error"].is_null()
    );
    assert!(status["schedulers"]["notification-cleanup"]["lastRun"].is_null());
}

#[test]
fn activity_cleanup_keeps_exactly_the_newest_n() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    // 20 events, 100 to 81 days old, and 3 from today.
    let mut events: Vec<Value> = (0..20)
        .map(|i| json!({ "id": format!("old-{i:02}"), "occurredAt": (chrono::Utc::now() - chrono::Duration::days(100 - i)).to_rfc3339(), "kind": "k" }))
        .collect();
    events.extend((0..3).map(|i| json!({ "id": format!("new-{i}"), "occurredAt": chrono::Utc::now().to_rfc3339(), "kind": "k" })));
    ws.send("ACTIVITY", json!({ "events": events }));
    ws.expect("ACTIVITY_ACK");
    let ids = |server: &Server| -> Vec<String> {
        let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .filter(|i| i.starts_with("old") || i.starts_with("new"))
            .collect()
    };
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"notification_retention_days": "90", "notification_retention_count": "0"}"#,
    );
    let a = server.post(
        "/api/v1/settings/cleanup/notifications",
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(
        a.body["removed"], 11,
        "events older than 90 days (100..90) go: {:?}",
        a.body
    );
    // 0 days means 90 days, not forever.
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"notification_retention_days": 0}"#,
    );
    assert_eq!(
        server
            .post(
                "/api/v1/settings/cleanup/notifications",
                Auth::Cookie(&admin),
                ""
            )
            .body["removed"],
        0
    );
    // One day, but the 8 newest always stay.
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"notification_retention_days": 1, "notification_retention_count": 8}"#,
    );
    server.post(
        "/api/v1/settings/cleanup/notifications",
        Auth::Cookie(&admin),
        "",
    );
    // Within a day: the registration, the connection and the 3 new events; the 8
    // newest in all are those 5 and the 3 newest old ones.
    let left = ids(&server);
    let old: Vec<&String> = left.iter().filter(|i| i.starts_with("old")).collect();
    assert_eq!(old, ["old-19", "old-18", "old-17"], "{left:?}");
    assert_eq!(left.iter().filter(|i| i.starts_with("new")).count(), 3);
    assert_eq!(
        activity_kinds(&server, &admin).len(),
        8,
        "exactly the newest 8 remain"
    );
}

#[test]
fn a_failed_run_is_recorded_as_scheduler_failed() {
    let server = Server::start();
    let admin = server.admin();
    server.sql("DROP TABLE registration_tokens");
    let a = server.post(
        "/api/v1/settings/cleanup/invalid-tokens",
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(a.status, 500);
    let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let failed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "scheduler.failed")
        .expect("scheduler.failed recorded")
        .clone();
    assert_eq!(
        (failed["level"].as_str(), failed["source"].as_str()),
        (Some("error"), Some("server"))
    );
    assert!(failed["clientId"].is_null());
    assert_eq!(
        (
            failed["data"]["scheduler"].as_str(),
            failed["data"]["trigger"].as_str()
        ),
        (Some("token-cleanup"), Some("manual"))
    );
    assert!(failed["data"]["error"]
        .as_str()
        .unwrap()
        .contains("registration_tokens"));
    let last = server
        .get("/api/v1/settings/scheduler-status", Auth::Cookie(&admin))
        .body["schedulers"]["token-cleanup"]["lastRun"]
        .clone();
    assert_eq!(last["status"], "failed");
    assert!(last["error"].is_string());
}

#[test]
fn schedulers_run_on_a_driven_clock_and_announce_every_change() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"token_cleanup_interval_hours": 1}"#,
    );
    let timer = loop {
        let u = dash.expect("SCHEDULER_STATUS_UPDATE");
        if u["scheduler"] == "token-cleanup" {
            break u;
        }
    };
    let next =
        chrono::DateTime::parse_from_rfc3339(timer["status"]["nextRun"].as_str().unwrap()).unwrap();
    let in_secs =
        (next.with_timezone(&chrono::Utc) - vrrp_monitor::clock::Clock::utc(&clock)).num_seconds();
    assert!(
        (3590..=3600).contains(&in_secs),
        "a timer one hour out: {in_secs}"
    );
    clock.advance(Span::minutes(59));
    assert!(
        dash.next(Duration::from_millis(1200)).is_none(),
        "nothing before the hour"
    );
    clock.advance(Span::minutes(1));
    let started = dash.expect("SCHEDULER_STATUS_UPDATE");
    assert_eq!(
        (
            started["scheduler"].as_str(),
            started["status"]["isRunning"].as_bool()
        ),
        (Some("token-cleanup"), Some(true))
    );
    let ended = dash.expect("SCHEDULER_STATUS_UPDATE");
    assert_eq!(ended["status"]["isRunning"], false);
    assert_eq!(ended["status"]["lastRun"]["trigger"], "schedule");
    assert_eq!(ended["status"]["lastRun"]["status"], "success");
    let rearmed = dash.expect("SCHEDULER_STATUS_UPDATE");
    assert!(
        rearmed["status"]["nextRun"].is_string(),
        "the next hour is planned"
    );
    // 0 switches it off.
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"token_cleanup_interval_hours": "0"}"#,
    );
    let off = loop {
        let u = dash.expect("SCHEDULER_STATUS_UPDATE");
        if u["scheduler"] == "token-cleanup" {
            break u;
        }
    };
    assert!(off["status"]["nextRun"].is_null());
    clock.advance(Span::hours(5));
    dash.assert_no("SCHEDULER_STATUS_UPDATE", Duration::from_millis(1200));
}

#[test]
fn a_run_cut_by_kill_9_shows_as_interrupted_after_restart() {
    let server = Server::start();
    let admin = server.admin();
    // Enough old activity that a cleanup takes a while.
    server.sql(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000)
         INSERT INTO activity (id, occurred_at, received_at, source, kind, level) SELECT 'e' || i, '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', 'agent', 'k', 'info' FROM n;",
    );
    server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"notification_retention_count": 0}"#,
    );
    let port = server.port();
    let token = admin.clone();
    std::thread::spawn(move || {
        let agent = http_agent();
        let _ = agent
            .post(format!(
                "http://127.0.0.1:{port}/api/v1/settings/cleanup/notifications"
            ))
            .header("cookie", format!("svc_session={token}"))
            .send("");
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = server
            .get("/api/v1/settings/scheduler-status", Auth::Cookie(&admin))
            .body;
        if s["schedulers"]["notification-cleanup"]["isRunning"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let launch = server.kill9();
    let server = launch.start();
    let admin = server.admin();
    let last = server
        .get("/api/v1/settings/scheduler-status", Auth::Cookie(&admin))
        .body["schedulers"]["notification-cleanup"]["lastRun"]
        .clone();
    assert_eq!(last["status"], "interrupted", "{last}");
    assert_eq!(last["trigger"], "manual");
    assert!(last["startedAt"].is_string());
    assert!(
        last.get("finishedAt").is_none() && last.get("result").is_none(),
        "{last}"
    );
}
