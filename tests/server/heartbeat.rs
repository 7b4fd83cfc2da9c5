//! The heartbeat against a real receiver on loopback: beats every
//! interval with the summary (on the server's driven clock, no sleeping for
//! intervals), none while the cluster thread is held by the test hook and again
//! after, and a failing URL shown through the settings API and logged once per
//! streak, with its secret path never in the log.

use crate::harness::{free_port, Auth, Launch, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the receiver took.
#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// A tiny HTTP receiver on loopback answering `status` to everything.
pub struct Receiver {
    pub port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
}

impl Receiver {
    pub fn start(status: u16) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits: Arc<Mutex<Vec<Hit>>> = Arc::default();
        let sink = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_owned();
                let path = parts.next().unwrap_or("").to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = header.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                sink.lock().unwrap().push(Hit {
                    method,
                    path,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                });
                let _ = reader.get_mut().write_all(
                    format!(
                        "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                );
            }
        });
        Receiver { port, hits }
    }

    pub fn count(&self) -> usize {
        self.hits.lock().unwrap().len()
    }

    /// Waits (real time, up to 10 s) until at least `n` requests arrived.
    pub fn wait_for(&self, n: usize) -> Vec<Hit> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.count() < n {
            assert!(
                Instant::now() < deadline,
                "expected {n} beats, got {}",
                self.count()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.hits.lock().unwrap().clone()
    }

    /// Asserts that no request arrives within `quiet` (real time).
    pub fn assert_quiet(&self, had: usize, quiet: Duration) {
        std::thread::sleep(quiet);
        assert_eq!(self.count(), had, "no beat expected");
    }
}

fn heartbeat_status(server: &Server, admin: &str) -> Value {
    let a = server.get("/api/v1/settings/heartbeat", Auth::Bearer(admin));
    assert_eq!(a.status, 200, "{:?}", a.body);
    a.body
}

#[test]
fn beats_every_interval_with_the_summary_and_stop_while_the_cluster_thread_is_stuck() {
    let receiver = Receiver::start(200);
    let launch = Launch::new().env("SVC_TEST_HOOKS", "1").config(&format!(
        "heartbeat:\n  url: 'http://127.0.0.1:{}/ping/s3cret-uuid'\n  interval_seconds: 60\n  method: POST\n",
        receiver.port
    ));
    let (server, clock) = launch.start_in_process();
    let admin = server.admin();

    // The first beat at start, with the summary.
    let hits = receiver.wait_for(1);
    assert_eq!(hits[0].method, "POST");
    assert_eq!(hits[0].path, "/ping/s3cret-uuid");
    let summary = &hits[0].body;
    assert_eq!(summary["status"], "ok", "{summary}");
    assert_eq!(summary["clusters"]["total"], 0);
    assert_eq!(summary["incidentsOpen"], 0);
    assert_eq!(summary["agents"], json!({"online": 0, "total": 0}));
    assert_eq!(summary["server"]["name"], "vrrp-monitor");
    assert!(summary["server"]["version"]
        .as_str()
        .is_some_and(|v| !v.is_empty()));

    // An agent registered: the next beats count it.
    let _agent = server.register_agent(&admin, "hb-host");
    // Half an interval: nothing; a whole one: the next beat.
    clock.advance(chrono::Duration::seconds(30));
    receiver.assert_quiet(1, Duration::from_millis(400));
    clock.advance(chrono::Duration::seconds(30));
    let hits = receiver.wait_for(2);
    assert_eq!(hits[1].body["agents"]["total"], 1, "{}", hits[1].body);
    clock.advance(chrono::Duration::seconds(60));
    receiver.wait_for(3);
    let status = heartbeat_status(&server, &admin);
    assert!(status["status"]["lastSuccess"].is_string(), "{status}");
    assert!(status["status"]["lastError"].is_null(), "{status}");
    let metrics = server.get("/metrics", Auth::None);
    assert!(
        metrics.body.as_str().is_some_and(|t| t
            .contains("\nvrrp_monitor_heartbeat_last_success_timestamp_seconds ")),
        "{:?}",
        metrics.body
    );

    // The cluster thread stuck: no beat for two intervals.
    let held = server.post(
        "/api/v1/test-hooks/cluster-eval/hold",
        Auth::Bearer(&admin),
        "{}",
    );
    assert_eq!(held.status, 200, "{:?}", held.body);
    for _ in 0..2 {
        clock.advance(chrono::Duration::seconds(60));
        receiver.assert_quiet(3, Duration::from_millis(700));
    }
    let status = heartbeat_status(&server, &admin);
    let error = status["status"]["lastError"].as_str().unwrap_or_default();
    assert!(error.contains("cluster thread"), "{status}");
    assert!(
        status["status"]["consecutiveFailures"]
            .as_u64()
            .unwrap_or(0)
            >= 1
    );

    // Released: the beat due now goes out, and the next one an interval later.
    let released = server.post(
        "/api/v1/test-hooks/cluster-eval/release",
        Auth::Bearer(&admin),
        "{}",
    );
    assert_eq!(released.body["released"], true);
    receiver.wait_for(4);
    clock.advance(chrono::Duration::seconds(60));
    receiver.wait_for(5);
    assert!(heartbeat_status(&server, &admin)["status"]["lastError"].is_null());
}

#[test]
fn test_hooks_are_off_by_default() {
    let (server, _clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let a = server.post(
        "/api/v1/test-hooks/cluster-eval/hold",
        Auth::Bearer(&admin),
        "{}",
    );
    assert_eq!(a.status, 404);
}

#[test]
fn a_failing_url_is_shown_and_logged_once_per_streak() {
    let good = Receiver::start(204);
    let closed = free_port();
    let failing = format!("http://127.0.0.1:{closed}/api/push/T0kenSecret?status=up");
    let server = Launch::new()
        .config(&format!(
            "heartbeat:\n  url: '{failing}'\n  interval_seconds: 3600\n  method: GET\n"
        ))
        .start();
    let admin = server.admin();
    let failed_line = "Heartbeat to http://127.0.0.1:";
    assert!(server.wait_log(failed_line), "{}", server.log_text());

    // Two more beats (a saved block beats at once), both failing.
    for _ in 0..2 {
        let a = server.put(
            "/api/v1/settings/heartbeat",
            Auth::Bearer(&admin),
            &json!({ "url": failing }).to_string(),
        );
        assert_eq!(a.status, 200, "{:?}", a.body);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let s = heartbeat_status(&server, &admin);
        if s["status"]["consecutiveFailures"].as_u64().unwrap_or(0) >= 3 {
            break s;
        }
        assert!(Instant::now() < deadline, "{s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status["method"], "GET");
    assert!(status["status"]["lastError"].is_string(), "{status}");
    assert!(status["status"]["lastSuccess"].is_null());
    let log = server.log_text();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(failed_line) && l.contains("failed"))
        .collect();
    assert_eq!(lines.len(), 1, "one line per streak:\n{}", lines.join("\n"));

    // A good URL ends the streak; failing again is a new one, logged again.
    let good_url = format!("http://127.0.0.1:{}/hc/another-secret", good.port);
    let a = server.put(
        "/api/v1/settings/heartbeat",
        Auth::Bearer(&admin),
        &json!({ "url": good_url }).to_string(),
    );
    assert_eq!(a.status, 200);
    let hits = good.wait_for(1);
    assert_eq!(hits[0].method, "GET");
    assert!(server.wait_log("succeeds again"));
    server.put(
        "/api/v1/settings/heartbeat",
        Auth::Bearer(&admin),
        &json!({ "url": failing }).to_string(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .log_text()
        .lines()
        .filter(|l| l.contains(failed_line) && l.contains("failed"))
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "{}", server.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = server.log_text();
    assert!(!log.contains("T0kenSecret"), "the token reached the log");
    assert!(!log.contains("another-secret"), "the token reached the log");

    // Refused values name their field; the file keeps the block.
    let bad = server.put(
        "/api/v1/settings/heartbeat",
        Auth::Bearer(&admin),
        r#"{"interval_seconds": 5}"#,
    );
    assert_eq!(bad.status, 400);
    assert!(bad.error().contains("interval_seconds"), "{:?}", bad.body);
    let text = std::fs::read_to_string(server.launch.config_path()).unwrap();
    assert!(text.contains("T0kenSecret"), "{text}");
}
