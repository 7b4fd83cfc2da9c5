//! Cluster evaluation end to end with real keepalived: three hosts of
//! scripts/lab (h1 130, h2 120, h3 110; VI_1 = VRID 51, VI_2 = VRID 52),
//! one real agent per host, the real server in the lab's switch namespace.
//!
//! Scenarios, in order, on one lab, each checked for exactly the events it must make
//! (per cluster, nothing more):
//! 1. keepalived on the master is killed: one `vrrp.master_changed` naming h2 and h1
//!    as the previous master, and a `degraded` incident; started again, h1 takes over
//!    and the incident is resolved.
//! 2. h3 is cut off the VRRP network: `vrrp.split_brain` and an incident with reason
//!    `split-brain`; healed, the incident is resolved as `recovered`.
//! 3. The track script fails on h2 (FAULT): a `degraded` incident with a `fault`
//!    reason naming h2; fixed, it is resolved.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux, curl.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use vrrp_test_support::host_agent::*;
use vrrp_test_support::*;

/// The activity list, oldest first.
fn activity(server: &Server, admin: &str) -> Vec<Value> {
    let mut list = server
        .get(admin, "/api/v1/activity")
        .as_array()
        .unwrap()
        .clone();
    list.reverse();
    list
}

/// Server-made cluster events not in `before`, per VRID: their kinds in order.
fn cluster_events(server: &Server, admin: &str, before: &HashSet<String>) -> Vec<Value> {
    activity(server, admin)
        .into_iter()
        .filter(|e| {
            e["kind"].as_str().is_some_and(|k| k.starts_with("vrrp.")) && e["source"] == "server"
        })
        .filter(|e| !before.contains(e["id"].as_str().unwrap()))
        .collect()
}

fn kinds_by_vrid(events: &[Value]) -> BTreeMap<u64, Vec<String>> {
    let mut m: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for e in events {
        let vrid = e["data"]["cluster"]["vrid"].as_u64().unwrap();
        m.entry(vrid)
            .or_default()
            .push(e["kind"].as_str().unwrap().to_string());
    }
    for kinds in m.values_mut() {
        kinds.sort();
    }
    m
}

fn ids(server: &Server, admin: &str) -> HashSet<String> {
    activity(server, admin)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

/// Both clusters healthy with `master` as their one master, every member live.
fn wait_healthy(server: &Server, admin: &str, master: &str, what: &str) {
    wait_for(what, 60, || {
        let list = server.get(admin, "/api/v1/keepalived/clusters");
        let list = list.as_array()?;
        let ok = list.len() == 2
            && list.iter().all(|c| {
                c["health"] == "ok"
                    && c["members"].as_array().is_some_and(|m| {
                        m.len() == 3
                            && m.iter().all(|m| {
                                (m["instance"]["state"] == "MASTER") == (m["clientId"] == master)
                            })
                    })
            });
        ok.then_some(())
    });
}

/// Waits until both clusters (VRIDs 51 and 52) have new events of every kind in
/// `needed`; returns the new events. Events arriving later still are caught by the
/// final count over every scenario's window.
fn new_events(
    server: &Server,
    admin: &str,
    before: &HashSet<String>,
    what: &str,
    needed: &[&str],
) -> Vec<Value> {
    wait_for(what, 60, || {
        let events = cluster_events(server, admin, before);
        let kinds = kinds_by_vrid(&events);
        let done = [51, 52].iter().all(|vrid| {
            needed.iter().all(|n| {
                kinds
                    .get(vrid)
                    .is_some_and(|k| k.iter().any(|have| have == n))
            })
        });
        done.then_some(events)
    })
}

/// Real time passing with nothing done: the server and keepalived run on their own
/// clocks here. Used twice: for the clusters' first master-down interval (4 s) to
/// end before the first failover, and before the final count, so that an event
/// confirmed late has had the interval and its margin to arrive.
fn quiet_window() {
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn expect_kinds(events: &[Value], want: &[&str], scenario: &str) {
    let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    want.sort();
    let got = kinds_by_vrid(events);
    for vrid in [51, 52] {
        assert_eq!(
            got.get(&vrid),
            Some(&want),
            "{scenario}: the events of VRID {vrid}: {events:#?}"
        );
    }
}

fn of_kind<'a>(events: &'a [Value], kind: &str, vrid: u64) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind && e["data"]["cluster"]["vrid"] == vrid)
        .unwrap_or_else(|| panic!("no {kind} for VRID {vrid}"))
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn failover_split_brain_and_fault_are_reported_exactly_once() {
    let (lab, mut server) = lab_with_server(3, "vcl");
    server.start();
    let admin = server.admin();

    let mut agents: Vec<HostAgent> = ["h1", "h2", "h3"]
        .iter()
        .map(|h| HostAgent::new(&lab, h))
        .collect();
    for a in &mut agents {
        a.start(&lab);
    }
    // Registered together, so the clusters are first seen with all three hosts.
    let ids_by_host: HashMap<String, String> = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .iter()
            .map(|a| {
                let (lab, server, admin) = (&lab, &server, &admin);
                s.spawn(move || (a.host.clone(), register(lab, server, admin, a)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let id = |h: &str| ids_by_host[h].clone();
    let clients = server.get(&admin, "/api/v1/clients");
    let name = |h: &str| -> String {
        clients
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id(h).as_str())
            .and_then(|c| {
                c["displayName"]
                    .as_str()
                    .filter(|n| !n.is_empty())
                    .or(c["hostname"].as_str())
            })
            .unwrap()
            .to_string()
    };
    wait_healthy(
        &server,
        &admin,
        &id("h1"),
        "two healthy clusters, h1 master",
    );
    quiet_window();
    let start = cluster_events(&server, &admin, &HashSet::new());
    assert!(
        start.iter().all(|e| e["kind"] != "vrrp.master_changed"),
        "hosts reporting for the first time are no failover: {start:#?}"
    );
    // Each scenario's window: the events stored from its start to the next one's.
    let mut windows: Vec<(&str, HashSet<String>, &[&str])> = Vec::new();

    // --- 1. keepalived on the master dies; h2 takes over.
    let before = ids(&server, &admin);
    lab.run(&["failover", "h1", "--kill"]);
    lab.wait_state("h2", "VI_1", "MASTER");
    let events = new_events(
        &server,
        &admin,
        &before,
        "master_changed and degraded",
        &["vrrp.master_changed", "vrrp.incident_opened"],
    );
    expect_kinds(
        &events,
        &["vrrp.incident_opened", "vrrp.master_changed"],
        "master killed",
    );
    windows.push((
        "master killed",
        before.clone(),
        &["vrrp.incident_opened", "vrrp.master_changed"],
    ));
    for vrid in [51, 52] {
        let changed = of_kind(&events, "vrrp.master_changed", vrid);
        assert_eq!(changed["clientId"], id("h2").as_str(), "{changed}");
        assert_eq!(changed["data"]["cluster"]["master"], name("h2").as_str());
        assert_eq!(changed["data"]["previousMaster"], name("h1").as_str());
        let opened = of_kind(&events, "vrrp.incident_opened", vrid);
        assert_eq!(opened["data"]["incident"]["health"], "degraded", "{opened}");
        let reasons = opened["data"]["incident"]["reasons"].as_array().unwrap();
        assert!(
            reasons
                .iter()
                .any(|r| r["type"] == "not-reporting" && r["host"] == name("h1").as_str()),
            "{opened}"
        );
        assert_eq!(opened["correlationId"], opened["data"]["incident"]["id"]);
    }
    let before = ids(&server, &admin);
    lab.run(&["start", "h1"]);
    wait_healthy(&server, &admin, &id("h1"), "h1 master again");
    let events = new_events(
        &server,
        &admin,
        &before,
        "h1 back, resolved",
        &["vrrp.incident_resolved"],
    );
    expect_kinds(
        &events,
        &["vrrp.incident_resolved", "vrrp.master_changed"],
        "h1 started again",
    );
    windows.push((
        "h1 started again",
        before.clone(),
        &["vrrp.incident_resolved", "vrrp.master_changed"],
    ));
    for vrid in [51, 52] {
        let changed = of_kind(&events, "vrrp.master_changed", vrid);
        assert_eq!(changed["data"]["previousMaster"], name("h2").as_str());
        let resolved = of_kind(&events, "vrrp.incident_resolved", vrid);
        assert_eq!(
            resolved["data"]["incident"]["resolution"], "recovered",
            "{resolved}"
        );
    }

    // --- 2. h3 cut off the VRRP network: split brain; healed: recovered.
    let before = ids(&server, &admin);
    lab.run(&["partition", "h3"]);
    lab.wait_state("h3", "VI_1", "MASTER");
    let events = new_events(
        &server,
        &admin,
        &before,
        "split brain",
        &["vrrp.incident_opened"],
    );
    expect_kinds(
        &events,
        &["vrrp.incident_opened", "vrrp.split_brain"],
        "partition",
    );
    windows.push((
        "partition",
        before.clone(),
        &["vrrp.incident_opened", "vrrp.split_brain"],
    ));
    let mut correlation = HashMap::new();
    for vrid in [51, 52] {
        let split = of_kind(&events, "vrrp.split_brain", vrid);
        let mut masters: Vec<&str> = split["data"]["cluster"]["masters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        masters.sort();
        let mut want = vec![name("h1"), name("h3")];
        want.sort();
        assert_eq!(masters, want, "{split}");
        let opened = of_kind(&events, "vrrp.incident_opened", vrid);
        assert_eq!(opened["data"]["incident"]["health"], "split-brain");
        let reason = &opened["data"]["incident"]["reasons"][0];
        assert_eq!(reason["type"], "split-brain", "{opened}");
        assert!(reason["text"].as_str().is_some_and(|t| !t.is_empty()));
        correlation.insert(vrid, opened["correlationId"].clone());
    }
    let before = ids(&server, &admin);
    lab.run(&["heal", "h3"]);
    lab.wait_state("h3", "VI_1", "BACKUP");
    wait_healthy(&server, &admin, &id("h1"), "healed");
    let events = new_events(
        &server,
        &admin,
        &before,
        "resolved",
        &["vrrp.incident_resolved"],
    );
    expect_kinds(
        &events,
        &["vrrp.incident_resolved", "vrrp.master_changed"],
        "heal",
    );
    windows.push((
        "heal",
        before.clone(),
        &["vrrp.incident_resolved", "vrrp.master_changed"],
    ));
    for vrid in [51, 52] {
        let resolved = of_kind(&events, "vrrp.incident_resolved", vrid);
        assert_eq!(
            resolved["data"]["incident"]["resolution"], "recovered",
            "{resolved}"
        );
        assert_eq!(resolved["correlationId"], correlation[&vrid]);
        assert_eq!(
            resolved["data"]["incident"]["reasons"],
            serde_json::json!([])
        );
        let changed = of_kind(&events, "vrrp.master_changed", vrid);
        assert_eq!(changed["clientId"], id("h1").as_str());
    }

    // --- 3. The track script fails on h2: FAULT, a degraded incident.
    let before = ids(&server, &admin);
    lab.run(&["fault", "h2", "script"]);
    lab.wait_state("h2", "VI_1", "FAULT");
    let events = new_events(
        &server,
        &admin,
        &before,
        "degraded by FAULT",
        &["vrrp.incident_opened"],
    );
    expect_kinds(&events, &["vrrp.incident_opened"], "fault");
    windows.push(("fault", before.clone(), &["vrrp.incident_opened"]));
    for vrid in [51, 52] {
        let opened = of_kind(&events, "vrrp.incident_opened", vrid);
        assert_eq!(opened["data"]["incident"]["health"], "degraded", "{opened}");
        assert_eq!(
            opened["clientId"],
            id("h1").as_str(),
            "named after the master"
        );
        let reasons = opened["data"]["incident"]["reasons"].as_array().unwrap();
        assert_eq!(reasons.len(), 1, "{opened}");
        assert_eq!(reasons[0]["type"], "fault");
        assert_eq!(reasons[0]["host"], name("h2").as_str());
    }
    let before = ids(&server, &admin);
    lab.run(&["unfault", "h2"]);
    wait_healthy(&server, &admin, &id("h1"), "h2 out of FAULT");
    let events = new_events(
        &server,
        &admin,
        &before,
        "fault resolved",
        &["vrrp.incident_resolved"],
    );
    expect_kinds(&events, &["vrrp.incident_resolved"], "unfault");
    windows.push(("unfault", before.clone(), &["vrrp.incident_resolved"]));

    // Exactly once: every window holds its events and nothing more, late ones included.
    quiet_window();
    let mut after: Option<HashSet<String>> = None;
    for (scenario, before, want) in windows.iter().rev() {
        let events: Vec<Value> = cluster_events(&server, &admin, before)
            .into_iter()
            .filter(|e| {
                after
                    .as_ref()
                    .is_none_or(|a| a.contains(e["id"].as_str().unwrap()))
            })
            .collect();
        expect_kinds(&events, want, scenario);
        after = Some(before.clone());
    }

    for a in &mut agents {
        a.kill(nix::sys::signal::Signal::SIGTERM);
    }
    server.stop();
    let log = server.log_text();
    assert!(
        !log.contains("panicked"),
        "the server log shows a panic: {log}"
    );
}
