//! Cluster history through the real server run in-process on a driven
//! clock: intervals written as changes are confirmed, what a restart in the middle
//! of an incident leaves, the availability endpoint, and its query validation;
//! the figures (answered from the history held in memory) against the pure
//! arithmetic over the table's rows, after a restart, live writes, a cluster's
//! key change and a trim.

use crate::harness::*;
use chrono::{DateTime, Duration as Span, TimeZone, Utc};
use serde_json::Value;
use std::time::{Duration, Instant};
use vrrp_monitor::clock::Clock;
use vrrp_monitor::clusters::history::{self, availability::availability};

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
    let (a, mut wa, b, mut wb) = server.two_agents(&admin);
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "MASTER")])),
            (&mut wb, &b, reading(&[("VI_1", "FAULT")])),
        ],
    );
    confirm(&clock, &mut wa, &mut wb, "MASTER", "FAULT");
    let opened = eventually("no incident before the restart", || {
        server.cluster_events(&admin).into_iter().next()
    });
    assert_eq!(opened["kind"], "vrrp.incident_opened");
    let incident = opened["correlationId"].as_str().unwrap().to_owned();

    let before = history(&server, &admin, t0 - Span::hours(1), clock.utc());
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
    // A window that ended in the past reads the same before and after a restart.
    let past = t0 + Span::seconds(30);
    let past_before = history(&server, &admin, t0 - Span::hours(1), past);
    let stopped_at = clock.utc();
    drop((wa, wb));
    let mut launch = server.stop_in_process();
    // A port of its own: the stopped server's socket may linger a moment.
    launch.port = free_port();

    // Ten minutes later it starts again; nothing knows what happened meanwhile.
    let restart = stopped_at + Span::minutes(10);
    let (server, clock) = launch.start_in_process_at(restart);
    let admin = server.admin();
    let past_after = history(&server, &admin, t0 - Span::hours(1), past);
    assert_eq!(
        past_after, past_before,
        "a past window reads the same after a restart"
    );
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
            clock.utc() + Span::seconds(1),
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
    server.send_in_order(&admin, vec![(&mut wb, &b, reading(&[("VI_1", "BACKUP")]))]);
    confirm(&clock, &mut wa, &mut wb, "MASTER", "BACKUP");
    eventually("the incident is not resolved", || {
        server
            .cluster_events(&admin)
            .iter()
            .any(|e| e["kind"] == "vrrp.incident_resolved")
            .then_some(())
    });
    let end = clock.utc() + Span::seconds(10);
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

/// Every row of the table by key, as the old handler read them (open ones end
/// now): what the figures must be computed from.
fn table(launch: &Launch, now_ms: i64) -> Vec<(String, Vec<history::Interval>)> {
    let conn = rusqlite::Connection::open(launch.data_dir().join("vrrp-monitor.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT key, from_ms, to_ms, open, masters, health, incident_id FROM cluster_history ORDER BY key, from_ms")
        .unwrap();
    let mut out: Vec<(String, Vec<history::Interval>)> = Vec::new();
    let rows = stmt
        .query_map([], |r| {
            let open = r.get::<_, i64>(3)? != 0;
            let to: i64 = r.get(2)?;
            Ok((
                r.get::<_, String>(0)?,
                history::Interval {
                    from_ms: r.get(1)?,
                    to_ms: if open { now_ms.max(to) } else { to },
                    open,
                    masters: std::sync::Arc::new(history::Masters::from_text(
                        &r.get::<_, String>(4)?,
                    )),
                    health: history::HistoryHealth::parse(&r.get::<_, String>(5)?).unwrap(),
                    incident: r.get::<_, Option<String>>(6)?.map(|s| s.as_str().into()),
                },
            ))
        })
        .unwrap();
    for row in rows {
        let (key, interval) = row.unwrap();
        match out.last_mut() {
            Some((k, list)) if *k == key => list.push(interval),
            _ => out.push((key, vec![interval])),
        }
    }
    out
}

/// The answer the figures must be: the pure arithmetic over each cluster's whole
/// history in the table, for every cluster with an interval in the window.
fn expected(rows: &[(String, Vec<history::Interval>)], from: i64, to: i64, now: i64) -> Value {
    let listed = |list: &[history::Interval]| {
        list.iter()
            .any(|i| i.from_ms < to && (i.to_ms > from || i.open))
    };
    let answer = Value::Array(
        rows.iter()
            .filter(|(_, list)| listed(list))
            .map(|(key, list)| {
                serde_json::to_value(
                    availability(list, from, to.min(now.max(from))).view(key.to_string()),
                )
                .unwrap()
            })
            .collect(),
    );
    // Through the same text and parser as the server's answer (serde_json reads
    // the last digit of a float as it may).
    serde_json::from_str(&answer.to_string()).unwrap()
}

fn figures(server: &Server, admin: &str, from: i64, to: i64) -> Value {
    let t = |ms: i64| iso(Utc.timestamp_millis_opt(ms).unwrap());
    let a = server.get(
        &format!(
            "/api/v1/keepalived/clusters/availability?from={}&to={}",
            t(from),
            t(to)
        ),
        Auth::Cookie(admin),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["clusters"].clone()
}

/// Ten days of three clusters, from a small random walk: master changes on UTC
/// midnights and inside days, incidents across midnight with a restart gap
/// inside, time nobody watched, intervals of no length; the last one open (the
/// server stopped while it held).
fn seed(launch: &Launch, base: i64) -> i64 {
    const HOUR: i64 = 3_600_000;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: i64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as i64
    };
    let conn = rusqlite::Connection::open(launch.data_dir().join("vrrp-monitor.db")).unwrap();
    let end = base + 10 * DAY_MS;
    for k in 0..3 {
        let key = format!("dc-{k}|{}|10.{k}.0.0/24", 10 + k);
        let hosts = [
            format!("[[\"id-{k}-a\",\"lb-{k}-a\"]]"),
            format!("[[\"id-{k}-b\",\"lb-{k}-b\"]]"),
        ];
        let both = format!("[[\"id-{k}-a\",\"lb-{k}-a\"],[\"id-{k}-b\",\"lb-{k}-b\"]]");
        let (mut t, mut master, mut n) = (base + next(6 * HOUR), 0usize, 0);
        let put = |from: i64, to: i64, masters: &str, health: &str, incident: Option<String>| {
            conn.execute(
                "INSERT INTO cluster_history (key, from_ms, to_ms, open, masters, health, incident_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![key, from, to, (to >= end) as i64, masters, health, incident],
            )
            .unwrap();
        };
        while t < end {
            n += 1;
            let midnight = (t / DAY_MS + 1) * DAY_MS;
            match next(5) {
                // Master until midnight, the other one from midnight.
                0 => {
                    let to = midnight.min(end);
                    put(t, to, &hosts[master], "ok", None);
                    master = 1 - master;
                    t = to;
                }
                // An incident from late evening past midnight, the server away inside it.
                1 => {
                    let id = format!("inc-{k}-{n}");
                    let (a, b) = (midnight - next(3 * HOUR) - 1, midnight + next(3 * HOUR));
                    put(t, a, &hosts[master], "ok", None);
                    put(a, b.min(end), "[]", "no-master", Some(id.clone()));
                    let resumed = b + 1 + next(HOUR);
                    if resumed + HOUR < end {
                        put(resumed, resumed + HOUR, &both, "split-brain", Some(id));
                        t = resumed + HOUR;
                        master = 1 - master;
                    } else {
                        t = end;
                    }
                }
                // A change inside the day, sometimes of no length first.
                2 => {
                    let to = (t + 1 + next(20 * HOUR)).min(end);
                    if next(2) == 0 {
                        put(t, t, "[]", "unreachable", None);
                        t += 1;
                    }
                    put(
                        t,
                        to.max(t),
                        &hosts[master],
                        "degraded",
                        Some(format!("inc-{k}-{n}")),
                    );
                    t = to.max(t);
                }
                // Time nobody watched.
                3 => t += 1 + next(2 * HOUR),
                _ => {
                    let to = (t + 1 + next(30 * HOUR)).min(end);
                    master = 1 - master;
                    put(t, to, &hosts[master], "ok", None);
                    t = to;
                }
            }
        }
        // The last one holds until the stop.
        put(t, end, &hosts[master], "ok", None);
    }
    end
}

const DAY_MS: i64 = 86_400_000;

#[test]
fn the_figures_are_the_arithmetic_over_the_stored_history_across_restart_writes_and_trim() {
    let base = (Utc::now().timestamp_millis() / DAY_MS - 12) * DAY_MS;
    let launch = Launch::new();
    let (server, _) = launch.start_in_process_at(Utc.timestamp_millis_opt(base).unwrap());
    let mut launch = server.stop_in_process();
    let stopped = seed(&launch, base);
    // Started again ten minutes after the last interval was seen holding: the
    // restart rule closes it there.
    let now = stopped + 600_000;
    launch.port = free_port();
    let (server, clock) = launch.start_in_process_at(Utc.timestamp_millis_opt(now).unwrap());
    let admin = server.admin();
    let rows = table(&server.launch, now);
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter().all(|(_, l)| l.iter().all(|i| !i.open)),
        "closed at start"
    );
    assert!(rows.iter().map(|(_, l)| l.len()).sum::<usize>() > 30);
    let mut windows = vec![(base, now), (base - DAY_MS, now + DAY_MS)];
    for d in 0..11 {
        let midnight = base + d * DAY_MS;
        windows.push((midnight, midnight + DAY_MS));
        windows.push((midnight + DAY_MS / 2, midnight + 2 * DAY_MS + 1));
        windows.push((midnight - 1, midnight + 3 * DAY_MS));
    }
    // Windows on the seams themselves.
    for (_, list) in &rows {
        for i in list.iter().step_by(3) {
            windows.push((i.from_ms, i.to_ms.max(i.from_ms + 1)));
            windows.push((i.from_ms + 1, i.to_ms + DAY_MS));
            windows.push((i.to_ms, i.to_ms + 7 * DAY_MS));
        }
    }
    let check = |server: &Server, rows: &[(String, Vec<history::Interval>)], now: i64| {
        for &(from, to) in &windows {
            assert_eq!(
                figures(server, &admin, from, to),
                expected(rows, from, to, now),
                "window {from}..{to}"
            );
        }
    };
    check(&server, &rows, now);
    // One cluster's figures alone, and where its stored history begins.
    let (key0, list0) = &rows[1];
    let enc = key0.replace('|', "%7C").replace('/', "%2F");
    let t = |ms: i64| iso(Utc.timestamp_millis_opt(ms).unwrap());
    let one = server.get(
        &format!(
            "/api/v1/keepalived/clusters/availability?key={enc}&from={}&to={}",
            t(base),
            t(now)
        ),
        Auth::Cookie(&admin),
    );
    assert_eq!(
        one.body["clusters"],
        Value::Array(vec![expected(&rows, base, now, now)[1].clone()])
    );
    let h = server.get(
        &format!(
            "/api/v1/keepalived/clusters/history?key={enc}&from={}&to={}",
            t(now - DAY_MS),
            t(now)
        ),
        Auth::Cookie(&admin),
    );
    assert_eq!(
        h.body["recordedSince"],
        iso(Utc.timestamp_millis_opt(list0[0].from_ms).unwrap()).replace("%2B", "+")
    );
    let seeded = figures(&server, &admin, base, now);
    assert!(
        seeded
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["masterChanges"].as_u64() > Some(2)
                && c["incidents"]["count"].as_u64() > Some(2)
                && c["unobservedSeconds"].as_f64() > Some(600.0)),
        "{seeded}"
    );

    // A live cluster: its open interval is written and held as it goes.
    let (a, mut wa, b, mut wb) = server.two_agents(&admin);
    server.send_in_order(
        &admin,
        vec![
            (&mut wa, &a, reading(&[("VI_1", "MASTER")])),
            (&mut wb, &b, reading(&[("VI_1", "BACKUP")])),
        ],
    );
    let live = eventually("the live cluster has no history", || {
        let now = clock.utc().timestamp_millis();
        let rows = table(&server.launch, now);
        (rows.len() == 4).then_some(rows)
    });
    let now = clock.utc().timestamp_millis();
    assert!(live.iter().any(|(k, l)| k == KEY && l.last().unwrap().open));
    check(&server, &live, now);

    // The pair moves to another site: a new key and a history of its own; the
    // old key's interval ends and stays readable under it.
    for agent in [&a, &b] {
        let put = server.put(
            &format!("/api/v1/clients/{}", agent.id),
            Auth::Cookie(&admin),
            r#"{"site": "dc-9"}"#,
        );
        assert_eq!(put.status, 200, "{}", put.body);
    }
    let moved = eventually("the moved pair has no history of its own", || {
        let now = clock.utc().timestamp_millis();
        let rows = table(&server.launch, now);
        let last_open = |key: &str| {
            rows.iter()
                .find(|(k, _)| k == key)
                .map(|(_, l)| l.last().unwrap().open)
        };
        (last_open(KEY) == Some(false) && last_open("dc-9|51|192.0.2.0/24") == Some(true))
            .then_some(rows)
    });
    let now = clock.utc().timestamp_millis();
    check(&server, &moved, now);

    // Retention of three days: the older intervals go from the table and from
    // the figures alike.
    let put = server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"history_retention_days": 3}"#,
    );
    assert_eq!(put.status, 200, "{}", put.body);
    let run = server.post(
        "/api/v1/settings/cleanup/notifications",
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(run.status, 200, "{}", run.body);
    let trimmed = table(&server.launch, now);
    let count = |rows: &[(String, Vec<history::Interval>)]| {
        rows.iter().map(|(_, l)| l.len()).sum::<usize>()
    };
    assert!(
        count(&trimmed) < count(&live) / 2,
        "{} of {}",
        count(&trimmed),
        count(&live)
    );
    check(&server, &trimmed, now);
    drop((wa, wb));
}
