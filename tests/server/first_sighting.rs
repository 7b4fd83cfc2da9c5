//! Issue 13 through the real server: a cluster's roles are taken silently only
//! as its members first report; a change of a member already seen, even within
//! the first master-down interval, is reported once. The server runs in-process
//! on a clock the test moves; the agents speak the real WebSocket protocol.

use crate::harness::*;
use chrono::Duration as Span;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Waits until at least `count` cluster events are stored, then a little longer
/// for any that should not come, and hands back all of them.
fn wait_for_events(server: &Server, admin: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.cluster_events(admin).len() < count {
        assert!(
            Instant::now() < deadline,
            "fewer than {count} cluster events: {:?}",
            server.cluster_events(admin)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    server.cluster_events(admin)
}

fn sorted_kinds(events: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = events
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect();
    kinds.sort();
    kinds
}

/// lb-a MASTER and lb-b BACKUP report (the cluster is first seen), then, with the
/// clock not moved (well inside the first master-down interval of 4 s), they
/// report `a_then` and `b_then`. The interval passes, both answer the server's
/// request for a reading, and the clock runs on for a minute. Hands back every
/// cluster event stored, the two agents' ids.
fn change_within_the_first_interval(
    a_then: &str,
    b_then: &str,
    expected: usize,
) -> (Vec<Value>, Agent, Agent) {
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
    clock.advance(Span::milliseconds(1500));
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", a_then)])),
            (&mut wb, &b, reading(&[("VI_1", b_then)])),
        ],
    );
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        server.cluster_events(&admin).is_empty(),
        "pending until the master-down interval passed"
    );
    clock.advance(Span::seconds(4));
    assert_eq!(wa.expect("REQUEST_STATE_UPDATE"), serde_json::json!({}));
    assert_eq!(wb.expect("REQUEST_STATE_UPDATE"), serde_json::json!({}));
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", a_then)]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", b_then)]));
    let events = wait_for_events(&server, &admin, expected);
    // Reported once: a minute more, with readings, adds nothing.
    clock.advance(Span::seconds(30));
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", a_then)]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", b_then)]));
    clock.advance(Span::seconds(30));
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        server.cluster_events(&admin),
        events,
        "nothing reported twice"
    );
    (events, a, b)
}

#[test]
fn a_failover_right_after_the_first_sighting_is_reported_once() {
    let (events, _, b) = change_within_the_first_interval("BACKUP", "MASTER", 1);
    assert_eq!(sorted_kinds(&events), ["vrrp.master_changed"]);
    let e = &events[0];
    assert_eq!(e["clientId"], b.id.as_str());
    assert_eq!(e["data"]["previousMaster"], "lb-a");
    assert_eq!(e["data"]["cluster"]["master"], "lb-b");
}

#[test]
fn a_split_brain_right_after_the_first_sighting_is_reported_once() {
    let (events, a, _) = change_within_the_first_interval("MASTER", "MASTER", 2);
    assert_eq!(
        sorted_kinds(&events),
        ["vrrp.incident_opened", "vrrp.split_brain"]
    );
    let split = events
        .iter()
        .find(|e| e["kind"] == "vrrp.split_brain")
        .unwrap();
    assert_eq!(split["clientId"], a.id.as_str(), "the first master by host");
    assert_eq!(split["data"]["previousMaster"], "lb-a");
    assert_eq!(
        split["data"]["cluster"]["masters"],
        serde_json::json!(["lb-a", "lb-b"])
    );
    let opened = events
        .iter()
        .find(|e| e["kind"] == "vrrp.incident_opened")
        .unwrap();
    assert_eq!(opened["data"]["incident"]["health"], "split-brain");
    assert_eq!(opened["data"]["cluster"], split["data"]["cluster"]);
}

#[test]
fn a_master_lost_right_after_the_first_sighting_is_reported_once() {
    let (events, a, _) = change_within_the_first_interval("BACKUP", "BACKUP", 2);
    assert_eq!(
        sorted_kinds(&events),
        ["vrrp.incident_opened", "vrrp.master_lost"]
    );
    let lost = events
        .iter()
        .find(|e| e["kind"] == "vrrp.master_lost")
        .unwrap();
    assert_eq!(lost["clientId"], a.id.as_str(), "the previous master");
    assert_eq!(lost["data"]["previousMaster"], "lb-a");
    let opened = events
        .iter()
        .find(|e| e["kind"] == "vrrp.incident_opened")
        .unwrap();
    assert_eq!(opened["data"]["incident"]["health"], "no-master");
}

#[test]
fn a_backup_reporting_before_its_master_is_still_no_failover() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let (a, mut wa, b, mut wb) = server.two_agents(&admin);
    server.send_in_order(&admin, vec![(&mut wb, &b, reading(&[("VI_1", "BACKUP")]))]);
    clock.advance(Span::milliseconds(1500));
    server.send_in_order(&admin, vec![(&mut wa, &a, reading(&[("VI_1", "MASTER")]))]);
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(30));
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        server.cluster_events(&admin).is_empty(),
        "{:?}",
        server.cluster_events(&admin)
    );
    wb.assert_no("REQUEST_STATE_UPDATE", Duration::from_millis(300));
    // lb-a was taken as the master: a failover now names it.
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "BACKUP")])),
            (&mut wb, &b, reading(&[("VI_1", "MASTER")])),
        ],
    );
    std::thread::sleep(Duration::from_millis(700));
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wb.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "BACKUP")]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let events = wait_for_events(&server, &admin, 1);
    assert_eq!(sorted_kinds(&events), ["vrrp.master_changed"]);
    assert_eq!(events[0]["data"]["previousMaster"], "lb-a");
}
