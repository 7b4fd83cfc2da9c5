//! Cluster history (issue 20) through the real server run in-process on a driven
//! clock: intervals written as changes are confirmed, what a restart in the middle
//! of an incident leaves, the availability endpoint, and its query validation.

use crate::harness::*;
use chrono::{DateTime, Duration as Span, Utc};
use serde_json::Value;
use std::time::{Duration, Instant};
use vrrp_monitor::clock::Clock;

fn cluster_events(server: &Server, admin: &str) -> Vec<Value> {
    let list = server.get("/api/v1/activity", Auth::Cookie(admin)).body;
    list.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"].as_str().unwrap().starts_with("vrrp."))
        .cloned()
        .collect()
}

/// Each reading waits for its broadcast before the next (the evaluator sees them
/// in this order).
fn send_in_order(server: &Server, admin: &str, sends: Vec<(&mut Ws, &Agent, Value)>) {
    let mut dash = server.dashboard(admin);
    dash.expect("ACTIVITY_UPDATE");
    for (ws, agent, reading) in sends {
        ws.send("KEEPALIVED_UPDATE", reading);
        while dash.expect("KEEPALIVED_STATE_UPDATE")["clientId"] != agent.id.as_str() {}
    }
}

const KEY: &str = "|51|192.0.2.0/24";

fn history(server: &Server, admin: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Value> {
    let a = server.get(
        &format!(
            "/api/v1/keepalived/clusters/history?key={}&from={}&to={}",
            KEY.replace('|', "%7C").replace('/', "%2F"),
            iso(from),
            iso(to)
        ),
        Auth::Cookie(admin),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["intervals"].as_array().unwrap().clone()
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        .replace('+', "%2B")
}

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc)
}

/// Waits until `check` holds, up to 5 s of real time.
fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = check() {
            return t;
        }
        if Instant::now() >= deadline {
            panic!("{what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Confirms a change: the interval passes, both agents answer the request.
fn confirm(clock: &vrrp_monitor::clock::ManualClock, wa: &mut Ws, wb: &mut Ws, a: &str, b: &str) {
    std::thread::sleep(Duration::from_millis(600));
    clock.advance(Span::seconds(4));
    wa.expect("REQUEST_STATE_UPDATE");
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", a)]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", b)]));
}

#[test]
fn a_restart_in_the_middle_of_an_incident_leaves_an_honest_gap() {
    let launch = Launch::new();
    // Whole milliseconds, as the history stores them.
    let t0 = chrono::SubsecRound::trunc_subsecs(Utc::now(), 3);
    let (server, clock) = launch.start_in_process_at(t0);
    let admin = server.admin();
    let a = server.register_agent(&admin, "lb-a");
    let b = server.register_agent(&admin, "lb-b");
    let mut wa = server.connect_agent(&a);
    let mut wb = server.connect_agent(&b);
    send_in_order(
        &server,
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "MASTER")])),
            (&mut wb, &b, reading(&[("VI_1", "FAULT")])),
        ],
    );
    confirm(&clock, &mut wa, &mut wb, "MASTER", "FAULT");
    let opened = eventually("no incident before the restart", || {
        cluster_events(&server, &admin).into_iter().next()
    });
    assert_eq!(opened["kind"], "vrrp.incident_opened");
    let incident = opened["correlationId"].as_str().unwrap().to_owned();

    let before = history(&server, &admin, t0 - Span::hours(1), clock.now());
    assert_eq!(
        before.len(),
        1,
        "the degraded time since the first sighting: {before:?}"
    );
    assert_eq!(before[0]["health"], "degraded");
    assert_eq!(before[0]["master"], "lb-a");
    assert_eq!(before[0]["incidentId"], incident.as_str());
    assert_eq!(before[0]["open"], true);
    assert!(time(&before[0]["from"]) <= t0 + Span::seconds(1));

    // A minute passes (the open interval's end is noted as it goes), then the
    // server stops.
    clock.advance(Span::seconds(61));
    std::thread::sleep(Duration::from_millis(1200));
    let stopped_at = clock.now();
    drop((wa, wb));
    let mut launch = server.stop_in_process();
    // A port of its own: the stopped server's socket may linger a moment.
    launch.port = free_port();

    // Ten minutes later it starts again; nothing knows what happened meanwhile.
    let restart = stopped_at + Span::minutes(10);
    let (server, clock) = launch.start_in_process_at(restart);
    let admin = server.admin();
    let after_stop = history(&server, &admin, t0 - Span::hours(1), restart);
    assert_eq!(after_stop.len(), 1, "{after_stop:?}");
    assert_eq!(
        after_stop[0]["open"], false,
        "closed where last seen holding"
    );
    let last_seen = time(&after_stop[0]["to"]);
    assert!(
        last_seen >= t0 + Span::seconds(30) && last_seen <= stopped_at,
        "ends between the last touch and the stop: {last_seen} (stop {stopped_at})"
    );

    // The agents return, b still in FAULT: the incident goes on, from the moment
    // evaluation resumed, under the same id.
    let mut wa = server.connect_agent(&a);
    let mut wb = server.connect_agent(&b);
    wa.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    wb.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "FAULT")]));
    let resumed = eventually("the history does not resume", || {
        let h = history(
            &server,
            &admin,
            t0 - Span::hours(1),
            clock.now() + Span::seconds(1),
        );
        if h.len() != 2 {
            eprintln!("history so far: {h:?}");
        }
        (h.len() == 2).then_some(h)
    });
    assert_eq!(resumed[1]["incidentId"], incident.as_str());
    assert_eq!(resumed[1]["health"], "degraded");
    assert_eq!(resumed[1]["open"], true);
    assert!(
        time(&resumed[1]["from"]) >= restart,
        "the gap stays unobserved"
    );

    // Twenty seconds later b recovers: the incident resolves, the next interval
    // is healthy.
    clock.advance(Span::seconds(20));
    send_in_order(
        &server,
        &admin,
        vec![(&mut wb, &b, reading(&[("VI_1", "BACKUP")]))],
    );
    confirm(&clock, &mut wa, &mut wb, "MASTER", "BACKUP");
    eventually("the incident is not resolved", || {
        cluster_events(&server, &admin)
            .iter()
            .any(|e| e["kind"] == "vrrp.incident_resolved")
            .then_some(())
    });
    let end = clock.now() + Span::seconds(10);
    clock.advance(Span::seconds(10));
    let h = history(&server, &admin, t0 - Span::hours(1), end);
    assert_eq!(h.len(), 3, "{h:?}");
    assert_eq!(h[2]["health"], "ok");
    assert!(h[2]["incidentId"].is_null());
    assert_eq!(h[1]["open"], false);
    assert_eq!(h[1]["to"], h[2]["from"]);

    // Availability over the same window: one incident spanning the restart, the
    // ten minutes away unobserved.
    let answer = server.get(
        &format!(
            "/api/v1/keepalived/clusters/availability?from={}&to={}",
            iso(t0),
            iso(end)
        ),
        Auth::Cookie(&admin),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let c = answer.body["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == KEY)
        .expect("the cluster")
        .clone();
    assert_eq!(c["incidents"]["count"], 1);
    let unobserved = c["unobservedSeconds"].as_f64().unwrap();
    assert!(unobserved >= 600.0, "{c}");
    let incident_secs = c["incidents"]["totalSeconds"].as_f64().unwrap();
    let resolved_at = time(&h[1]["to"]);
    let expected = (resolved_at - time(&h[0]["from"])).num_milliseconds() as f64 / 1000.0;
    assert!(
        (incident_secs - expected).abs() < 0.01,
        "{incident_secs} vs {expected}"
    );
    assert_eq!(c["masterChanges"], 0, "lb-a was master throughout");
    assert!(c["seconds"]["ok"].as_f64().unwrap() > 0.0);
    let observed = c["observedSeconds"].as_f64().unwrap();
    assert!((observed + unobserved - (end - t0).num_milliseconds() as f64 / 1000.0).abs() < 0.01);
}

#[test]
fn history_queries_are_validated_naming_the_parameter() {
    let server = Launch::new().start();
    let admin = server.admin();
    for (path, error) in [
        ("/api/v1/keepalived/clusters/history", "key: is required"),
        ("/api/v1/keepalived/clusters/history?key=", "key: must not be empty"),
        (
            "/api/v1/keepalived/clusters/history?key=x&from=yesterday",
            "from: must be an ISO 8601 timestamp",
        ),
        (
            "/api/v1/keepalived/clusters/availability?to=2026-13-01T00:00:00Z",
            "to: must be an ISO 8601 timestamp",
        ),
        (
            "/api/v1/keepalived/clusters/availability?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z",
            "to: must be after from",
        ),
    ] {
        let a = server.get(path, Auth::Cookie(&admin));
        assert_eq!(a.status, 400, "{path}");
        assert_eq!(a.body["error"], error, "{path}");
    }
    assert_eq!(
        server
            .get("/api/v1/keepalived/clusters/availability", Auth::None)
            .status,
        401
    );
    let empty = server.get(
        "/api/v1/keepalived/clusters/availability",
        Auth::Cookie(&admin),
    );
    assert_eq!(empty.status, 200);
    assert_eq!(empty.body["clusters"], serde_json::json!([]));
}
