//! Time-driven behaviour of the sockets, with the server run in-process on a
//! clock the test moves: no test waits for a spec interval.

use crate::harness::*;
use chrono::Duration as Span;
use serde_json::json;
use std::time::Duration;

#[test]
fn an_agent_that_sends_no_auth_within_5_s_is_closed() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.agent_socket(&agent);
    clock.advance(Span::milliseconds(4900));
    assert!(
        ws.next(Duration::from_millis(1200)).is_none(),
        "still open just before 5 s"
    );
    clock.advance(Span::milliseconds(100));
    assert_eq!(
        ws.ending(),
        Ending::Close(4001, "Authentication timed out".into())
    );
    // One that does send AUTH in time stays.
    let mut ok = server.agent_socket(&agent);
    clock.advance(Span::seconds(4));
    ok.send("AUTH", json!({ "hostname": "h", "version": "1" }));
    ok.expect("AUTH_SUCCESS");
    clock.advance(Span::seconds(10));
    assert!(
        ok.next(Duration::from_millis(1200)).is_none(),
        "authenticated: no window any more"
    );
}

#[test]
fn sockets_that_answer_pings_stay_and_a_silent_one_is_terminated() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut agent_ws = server.connect_agent(&agent);
    let mut silent = server.dashboard(&admin);
    silent.expect("ACTIVITY_UPDATE");
    let mut alive = server.dashboard(&admin);
    alive.expect("ACTIVITY_UPDATE");
    // Three heartbeats: the ones that read (and so answer pings) stay.
    for _ in 0..3 {
        clock.advance(Span::seconds(30));
        // Reading lets tungstenite answer the ping with a pong.
        let _ = alive.next(Duration::from_millis(1200));
        let _ = agent_ws.next(Duration::from_millis(100));
    }
    // The dashboard that never read never answered: terminated without a close frame.
    assert_eq!(silent.ending(), Ending::Dropped);
    alive
        .ws
        .send(tungstenite::Message::Ping(Vec::new().into()))
        .unwrap();
    let online = server.get("/api/v1/clients", Auth::Cookie(&admin)).body[0]["status"].clone();
    assert_eq!(
        online, "online",
        "the agent that answered pings is still connected"
    );
}

#[test]
fn a_failover_between_two_real_agents_is_confirmed_and_reported_once() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let (a, mut wa, b, mut wb) = server.two_agents(&admin);
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "MASTER")])),
            (&mut wb, &b, reading(&[("VI_1", "BACKUP")])),
        ],
    );
    // First sighting: silent, however long we wait.
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(30));
    std::thread::sleep(Duration::from_millis(700));
    assert!(server.cluster_events(&admin).is_empty());

    // The failover: pending until the interval passed and both delivered a reading.
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "BACKUP")])),
            (&mut wb, &b, reading(&[("VI_1", "MASTER")])),
        ],
    );
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        server.cluster_events(&admin).is_empty(),
        "not before the master-down interval"
    );
    clock.advance(Span::seconds(4));
    // The server asks both agents for a fresh reading...
    assert_eq!(wa.expect("REQUEST_STATE_UPDATE"), serde_json::json!({}));
    assert_eq!(wb.expect("REQUEST_STATE_UPDATE"), serde_json::json!({}));
    // ...and their answers confirm the change.
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let events = loop {
        let events = server.cluster_events(&admin);
        if !events.is_empty() {
            break events;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no cluster event; clusters: {}; activity: {}",
            server
                .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
                .body,
            server.get("/api/v1/activity", Auth::Cookie(&admin)).body
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(700));
    let events_after = server.cluster_events(&admin);
    assert_eq!(events_after.len(), 1, "exactly one event: {events_after:?}");
    let e = &events[0];
    assert_eq!(e["kind"], "vrrp.master_changed");
    assert_eq!(e["clientId"], b.id.as_str());
    assert_eq!(e["source"], "server");
    assert_eq!(e["data"]["previousMaster"], "lb-a");
    assert_eq!(e["data"]["cluster"]["master"], "lb-b");
    assert_eq!(e["data"]["cluster"]["vrid"], 51);

    // A split brain opens an incident.
    server.send_in_order(&admin, vec![(&mut wa, &a, reading(&[("VI_1", "MASTER")]))]);
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let kinds: Vec<String> = server
            .cluster_events(&admin)
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_owned())
            .collect();
        if kinds.contains(&"vrrp.incident_opened".to_owned()) {
            assert!(kinds.contains(&"vrrp.split_brain".to_owned()), "{kinds:?}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no incident: {kinds:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn after_a_restart_nothing_is_evaluated_until_the_agents_are_back_and_nothing_repeats() {
    let launch = Launch::new();
    let port = launch.port;
    let (server, clock) = launch.start_in_process();
    let admin = server.admin();
    let (a, mut wa, b, mut wb) = server.two_agents(&admin);
    // A single-host fault: an incident opens before the restart.
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "MASTER")])),
            (&mut wb, &b, reading(&[("VI_1", "FAULT")])),
        ],
    );
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "FAULT")]));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.cluster_events(&admin).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no incident before the restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        server.cluster_events(&admin)[0]["kind"],
        "vrrp.incident_opened"
    );
    drop((wa, wb));
    let mut launch = server.stop_in_process();
    launch.port = port;

    // Restarted: only a comes back, with b's fault healed meanwhile.
    let (server, clock) = launch.start_in_process();
    let admin = server.admin();
    let mut wa = server.connect_agent(&a);
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(30));
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        server.cluster_events(&admin).len(),
        1,
        "the start-up guard holds evaluation while b is away"
    );
    wa.assert_no("REQUEST_STATE_UPDATE", Duration::from_millis(1200));
    // b returns: evaluation starts; the open incident is not opened again...
    let mut wb = server.connect_agent(&b);
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        server.cluster_events(&admin).len(),
        1,
        "nothing repeated after the restart"
    );
    // ...and the recovery that happened while the server was down is still reported.
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let events = server.cluster_events(&admin);
        if events.len() == 2 {
            assert_eq!(events[0]["kind"], "vrrp.incident_resolved");
            assert_eq!(events[0]["data"]["incident"]["resolution"], "recovered");
            assert_eq!(
                events[0]["correlationId"], events[1]["correlationId"],
                "the incident from before the restart"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{events:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn deleting_the_client_of_an_incident_resolves_it_as_removed() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let a = server.register_agent(&admin, "lb-a");
    let mut wa = server.connect_agent(&a);
    // A cluster of one host: degraded, so an incident opens.
    server.send_in_order(&admin, vec![(&mut wa, &a, reading(&[("VI_1", "MASTER")]))]);
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.cluster_events(&admin).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no incident");
        std::thread::sleep(Duration::from_millis(50));
    }
    let opened = server.cluster_events(&admin)[0].clone();
    assert_eq!(
        opened["data"]["incident"]["reasons"][0]["type"],
        "single-member"
    );
    // The dashboard's open incidents: from the evaluator's state, not from the
    // newest incident events (older incidents' events, newer than this one's, are
    // not open and stay out).
    server.sql(
        "INSERT INTO activity (id, occurred_at, received_at, source, kind, level, correlation_id, data)
         VALUES ('old-open', '2099-01-01T00:00:00.000Z', '2099-01-01T00:00:00.000Z', 'server', 'vrrp.incident_opened', 'warning', 'closed-long-ago', '{}'),
                ('old-done', '2099-01-01T00:01:00.000Z', '2099-01-01T00:01:00.000Z', 'server', 'vrrp.incident_resolved', 'info', 'closed-long-ago', '{}')",
    );
    let open = server.get("/api/v1/activity?openIncidents=true", Auth::Cookie(&admin));
    assert_eq!(open.status, 200, "{}", open.body);
    let open = open.body.as_array().unwrap().clone();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["id"], opened["id"]);
    assert!(open[0]["message"].as_str().is_some_and(|m| !m.is_empty()));
    let refused = server.get("/api/v1/activity?openIncidents=yes", Auth::Cookie(&admin));
    assert_eq!(refused.status, 400);
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("openIncidents"),
        "{}",
        refused.body
    );
    assert_eq!(
        server
            .delete(&format!("/api/v1/clients/{}", a.id), Auth::Cookie(&admin))
            .status,
        200
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let events = server.cluster_events(&admin);
        if let Some(resolved) = events.iter().find(|e| {
            e["kind"] == "vrrp.incident_resolved" && e["correlationId"] == opened["correlationId"]
        }) {
            assert_eq!(resolved["data"]["incident"]["resolution"], "removed");
            assert!(resolved["data"]["incident"]["health"].is_null());
            assert_eq!(resolved["correlationId"], opened["correlationId"]);
            assert_eq!(
                resolved["data"]["cluster"]["vrid"], 51,
                "the cluster as last confirmed"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{events:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Resolved: none open.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let open = server.get("/api/v1/activity?openIncidents=true", Auth::Cookie(&admin));
        if open.body == serde_json::json!([]) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still open: {}",
            open.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
