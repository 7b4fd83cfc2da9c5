//! Every thread of a busy server (an agent, a dashboard, a webhook that
//! delivered) bears a name from ARCHITECTURE.md's thread map, and the map's
//! threads for those parts are all there.

use crate::harness::Server;
use crate::webhooks::{create_hook, event, Receiver};
use serde_json::json;
use std::time::{Duration, Instant};

/// Linux keeps 15 bytes of a thread's name (`/proc/<pid>/task/<tid>/comm`).
const COMM_LEN: usize = 15;

/// The first column's names in the "Threads and channels" table.
fn thread_map() -> Vec<String> {
    let doc = include_str!("../../ARCHITECTURE.md");
    let section = doc
        .split("## Threads and channels")
        .nth(1)
        .expect("ARCHITECTURE.md has a Threads and channels section");
    let mut names = Vec::new();
    for row in section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
    {
        // The names, not the remarks in parentheses after them.
        let cell = row.split('|').nth(1).unwrap_or("");
        let first = cell.split('(').next().unwrap_or("");
        names.extend(first.split('`').skip(1).step_by(2).map(str::to_owned));
    }
    names
}

/// Does a thread name (as /proc shows it) fit a map entry? `<…>` stands for
/// anything, `0..7` for a number in that range; both cut to 15 bytes.
fn fits(entry: &str, comm: &str) -> bool {
    let cut = |s: &str| s.chars().take(COMM_LEN).collect::<String>();
    if let Some((prefix, _)) = entry.split_once('<') {
        return comm.starts_with(&cut(prefix)) && comm.len() > prefix.len().min(COMM_LEN - 1);
    }
    if let Some((head, range)) = entry.rsplit_once('-') {
        if let Some((lo, hi)) = range.split_once("..") {
            let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
            return comm
                .strip_prefix(&format!("{head}-"))
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| (lo..=hi).contains(&n));
        }
    }
    comm == cut(entry)
}

#[test]
fn the_thread_map_matches_fit_as_intended() {
    assert!(fits("ws-agent:<id>", "ws-agent:1a2b3c"));
    assert!(!fits("ws-agent:<id>", "ws-agent:"));
    assert!(fits("http-worker-0..7", "http-worker-7"));
    assert!(!fits("http-worker-0..7", "http-worker-8"));
    assert!(fits("sched:notification-cleanup", "sched:notificat"));
    assert!(!fits("main", "mainly"));
}

#[test]
fn every_thread_of_a_busy_server_is_in_the_thread_map() {
    let map = thread_map();
    for expected in [
        "vrrp-monitor",
        "dial:<client>",
        "sqlite-writer",
        "cluster-eval",
        "webhook:<id>",
        "ws-dash:<user id>",
    ] {
        assert!(
            map.iter().any(|m| m == expected),
            "{expected} missing from the map: {map:?}"
        );
    }

    let receiver = Receiver::start(vec![Some(200)]);
    let server = Server::start();
    let admin = server.admin();
    create_hook(
        &server,
        &admin,
        json!({ "name": "chat", "url": receiver.url("/hook"), "minLevel": "info", "kinds": ["test.*"], "bodyTemplate": r#"{"text": "{{event.message}}"}"# }),
    );
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    let mut dashboard = server.dashboard(&admin);
    dashboard.expect("ACTIVITY_UPDATE");
    ws.send(
        "ACTIVITY",
        json!({ "events": [event("a", "test.first", "info")] }),
    );
    ws.expect("ACTIVITY_ACK");
    receiver.next(Duration::from_secs(5)).expect("a delivery");

    // The thread names settle once the reaper named tiny_http's threads (250 ms tick).
    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut names, mut strangers);
    loop {
        names = server.thread_names();
        strangers = names
            .iter()
            .filter(|n| !map.iter().any(|m| fits(m, n)))
            .cloned()
            .collect::<Vec<_>>();
        if strangers.is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        strangers.is_empty(),
        "threads not in ARCHITECTURE.md's map: {strangers:?} (all: {names:?})"
    );
    // And the parts this test exercised each run on their mapped thread.
    for part in [
        "sqlite-writer",
        "cluster-eval",
        "clients-feed",
        "http-accept",
        "http-reaper",
        "signals",
    ] {
        assert!(
            names.iter().any(|n| n == part),
            "no {part} thread: {names:?}"
        );
    }
    assert!(
        names.iter().any(|n| n.starts_with("ws-agent:")),
        "{names:?}"
    );
    // Named by ids, never by user text: no name, no user name.
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("webhook:") && !n.contains("chat")),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("ws-dash:") && !n.contains("admin")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("http-worker-")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "sched:token-cle"), "{names:?}");

    // The delivery is counted for /metrics once the webhook thread has the
    // receiver's answer (just after the receiver saw the request).
    let counted = r#"vrrp_webhook_deliveries_total{webhook="chat",outcome="delivered"} 1"#;
    let deadline = Instant::now() + Duration::from_secs(5);
    let text = loop {
        let text = server
            .http
            .get(&server.url("/metrics"))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        if text.contains(counted) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(text.contains(counted), "{text}");
}

/// Upstream tiny_http parks one of its threads per upgraded socket until that
/// socket ends. Our copy hands each WebSocket over at the upgrade
/// (`Request::upgrade_detached`), so a fleet's sockets cost one thread each, not
/// two; and the sockets still work both ways afterwards.
#[test]
fn an_open_websocket_holds_no_http_thread() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut dashboards: Vec<_> = (0..24).map(|_| server.dashboard(&admin)).collect();
    let mut agent_ws = server.connect_agent(&agent);
    // tiny_http's own threads: its accept thread and the connection threads it
    // spawned (`http-conn`). Its pool keeps four idle and
    // lets the others go after 5 s.
    let tiny_http_threads = || {
        server
            .thread_names()
            .iter()
            .filter(|n| n.starts_with("http-conn") || n.starts_with("http-accept"))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while tiny_http_threads() > 5 {
        assert!(
            Instant::now() < deadline,
            "25 open WebSockets still hold {} of tiny_http's threads: {:?}",
            tiny_http_threads(),
            server.thread_names()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    agent_ws.send(
        "KEEPALIVED_UPDATE",
        crate::harness::reading(&[("VI_1", "MASTER")]),
    );
    for dash in &mut dashboards {
        let state = dash.expect("KEEPALIVED_STATE_UPDATE");
        assert_eq!(state["clientId"], agent.id.as_str());
    }
}
