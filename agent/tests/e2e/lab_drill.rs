//! Drains and a failover drill end to end: two hosts of scripts/lab (h1 120, h2
//! 110) with the host guide's `track_file` lines on h1, the real agents on both
//! (h1's with `actions.drainFile`), the real server in the lab's switch namespace,
//! asked by an operator.
//!
//! Draining h1 makes h2 MASTER within 5 s; h1 shows drained and BACKUP, never
//! FAULT; the `vrrp.master_changed` says planned. Undraining lets preempt move
//! MASTER back. Then a drill passes, and its `takeoverMs` is within 100 ms of what
//! keepalived's own notify scripts logged on the two hosts.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux, curl.

use std::fs;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vrrp_test_support::host_agent::*;
use vrrp_test_support::*;

use crate::lab_drain::guide_drain_on_h1;

fn call(
    server: &Server,
    who: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let (s, _, b) = request(
        method,
        &format!("{}{path}", server.local_url()),
        Some(who),
        body,
    );
    (s, b)
}

fn cluster51(server: &Server, who: &str) -> Option<Value> {
    server
        .get(who, "/api/v1/keepalived/clusters")
        .as_array()?
        .iter()
        .find(|c| c["vrid"] == 51)
        .cloned()
}

fn member<'a>(cluster: &'a Value, host_id: &str) -> &'a Value {
    cluster["members"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["clientId"] == host_id))
        .unwrap_or(&Value::Null)
}

/// A member's VRRP state (the API nests it in the member's instance).
fn state<'a>(cluster: &'a Value, host_id: &str) -> &'a Value {
    &member(cluster, host_id)["instance"]["state"]
}

fn master_changes(server: &Server, who: &str) -> Vec<Value> {
    let list = server.get(who, "/api/v1/activity?kind=vrrp.master_changed");
    let items = list.get("items").unwrap_or(&list).clone();
    items.as_array().cloned().unwrap_or_default()
}

/// The notify script's lines for VI_1 on `host`: (time, state).
fn notify_log(lab: &vrrp_test_support::lab::Lab, host: &str) -> Vec<(f64, String)> {
    let text =
        fs::read_to_string(lab.state.join(host).join("run/lab/notify.log")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            match parts.as_slice() {
                [t, "INSTANCE", "VI_1", state, ..] => Some((t.parse().ok()?, state.to_string())),
                _ => None,
            }
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn drains_and_a_drill_through_the_server_with_real_keepalived() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Lab);
    let (lab, mut server) = lab_with_server(2, "vdl");
    lab.wait_state("h1", "VI_1", "MASTER");
    let drain_file = guide_drain_on_h1(&lab);

    server.start();
    let admin = server.admin();
    let (s, b) = call(
        &server,
        &admin,
        "POST",
        "/api/v1/users",
        Some(&json!({ "username": "otto", "password": "otto-password-1", "role": "operator" })),
    );
    assert_eq!(s, 201, "{b}");
    let otto = server.login("otto", "otto-password-1");

    let mut h1 = HostAgent::new(&lab, "h1");
    fs::write(
        h1.dir.join("config.yaml"),
        format!("{CONFIG}actions:\n  drainFile: {}\n", drain_file.display()),
    )
    .unwrap();
    let mut h2 = HostAgent::new(&lab, "h2");
    h1.start(&lab);
    h2.start(&lab);
    let h1_id = register(&lab, &server, &admin, &h1);
    let h2_id = register(&lab, &server, &admin, &h2);
    wait_for("both members, h1 MASTER with its drain state", 30, || {
        let c = cluster51(&server, &otto)?;
        (state(&c, &h1_id) == "MASTER"
            && member(&c, &h1_id)["drain"]["drained"] == false
            && state(&c, &h2_id) == "BACKUP")
            .then_some(())
    });

    // Past the cluster's first interval (its members' first reports are taken
    // silently): ready, as a drill needs.
    wait_for("the cluster ready", 30, || {
        (cluster51(&server, &otto)?["readiness"]["verdict"] == "ready").then_some(())
    });

    // Drain h1 as the operator: h2 is MASTER within 5 s, h1 drained and BACKUP.
    let asked = Instant::now();
    let (s, b) = call(
        &server,
        &otto,
        "POST",
        &format!("/api/v1/clients/{h1_id}/drain"),
        Some(&json!({ "reason": "kernel update" })),
    );
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["drain"]["drained"], true);
    assert_eq!(b["drain"]["by"], "otto");
    let c = wait_for("h2 MASTER, h1 drained BACKUP", 5, || {
        let c = cluster51(&server, &otto)?;
        (state(&c, &h2_id) == "MASTER" && state(&c, &h1_id) == "BACKUP").then_some(c)
    });
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    eprintln!(
        "drain: h2 MASTER and h1 drained BACKUP in the cluster list {} ms after the request",
        took.as_millis()
    );
    let m1 = member(&c, &h1_id);
    assert_eq!(
        (
            m1["drain"]["drained"].as_bool(),
            m1["drain"]["reason"].as_str()
        ),
        (Some(true), Some("kernel update"))
    );
    assert_eq!(m1["instance"]["state"], "BACKUP", "drained, not FAULT");
    let planned = wait_for("the planned master_changed", 15, || {
        master_changes(&server, &otto).into_iter().find(|e| {
            e["data"]["cluster"]["master"]
                .as_str()
                .is_some_and(|m| m.ends_with("-h2"))
        })
    });
    assert_eq!(planned["data"]["planned"], true, "{planned}");
    assert!(
        planned["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Planned"),
        "{planned}"
    );

    // Undrain: preempt gives MASTER back to h1.
    let (s, b) = call(
        &server,
        &otto,
        "DELETE",
        &format!("/api/v1/clients/{h1_id}/drain"),
        None,
    );
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["drain"]["drained"], false);
    wait_for("h1 MASTER again", 15, || {
        let c = cluster51(&server, &otto)?;
        (state(&c, &h1_id) == "MASTER" && member(&c, &h1_id)["drain"]["drained"] == false)
            .then_some(())
    });

    // A drill: ready, so no force needed.
    let key = cluster51(&server, &otto).unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for("the cluster ready", 30, || {
        (cluster51(&server, &otto)?["readiness"]["verdict"] == "ready").then_some(())
    });
    let (s, b) = call(
        &server,
        &otto,
        "POST",
        &format!(
            "/api/v1/clusters/{}/drills",
            vrrp_test_support::percent_encode(&key)
        ),
        Some(&json!({ "reason": "quarterly" })),
    );
    assert_eq!(s, 201, "{b}");
    let id = b["id"].as_str().unwrap().to_owned();
    let drill = wait_for("the drill's end", 60, || {
        let d = server.get(&otto, &format!("/api/v1/drills/{id}"));
        (d["status"] != "running").then_some(d)
    });
    assert_eq!(drill["status"], "passed", "{drill:#}");
    assert!(
        drill["oldMaster"]
            .as_str()
            .is_some_and(|m| m.ends_with("-h1")),
        "{drill:#}"
    );
    assert!(
        drill["newMaster"]
            .as_str()
            .is_some_and(|m| m.ends_with("-h2")),
        "{drill:#}"
    );
    let takeover = drill["takeoverMs"].as_i64().expect("takeoverMs");
    assert!(
        drill["returnMs"].is_i64(),
        "preempt took it back: {drill:#}"
    );
    // keepalived's own notify lines: h1 leaving MASTER, then h2 entering it.
    let started: f64 = chrono::DateTime::parse_from_rfc3339(drill["startedAt"].as_str().unwrap())
        .unwrap()
        .timestamp_millis() as f64
        / 1000.0;
    let left = notify_log(&lab, "h1")
        .into_iter()
        .find(|(t, s)| *t >= started && s == "BACKUP")
        .expect("h1's notify: BACKUP after the drill's drain");
    let entered = notify_log(&lab, "h2")
        .into_iter()
        .find(|(t, s)| *t >= started && s == "MASTER")
        .expect("h2's notify: MASTER after the drill's drain");
    let by_notify = ((entered.0 - left.0) * 1000.0).round() as i64;
    assert!(
        (takeover - by_notify).abs() <= 100,
        "takeoverMs {takeover} against the notify logs' {by_notify} ms"
    );
    eprintln!(
        "drill: takeoverMs {takeover}, notify logs {by_notify} ms, returnMs {}",
        drill["returnMs"]
    );
    let finished = wait_for("cluster.drill_finished", 15, || {
        let list = server.get(&otto, "/api/v1/activity?kind=cluster.drill_finished");
        let items = list.get("items").unwrap_or(&list).clone();
        items.as_array()?.first().cloned()
    });
    assert_eq!(finished["level"], "info", "{finished}");
    drop(h1);
    drop(h2);
}
