//! The HTTP layer: public routes, 404s, headers, body limits, idle connections,
//! thread names and the stop signal.

use crate::harness::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn health_ping_and_unknown_paths() {
    let server = Server::start();
    let a = server.get("/api/health", Auth::None);
    assert_eq!((a.status, a.body.clone()), (200, json!({ "status": "ok" })));
    assert!(a
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let a = server.get("/api/v1/ping", Auth::None);
    assert_eq!((a.status, a.body.clone()), (200, json!({ "status": "ok" })));
    for path in ["/api/nothing", "/api/v1/nothing", "/api/v2/users", "/api"] {
        let a = server.get(path, Auth::None);
        assert_eq!(a.status, 404, "{path}");
        assert!(a.body["error"].is_string(), "{path}: {:?}", a.body);
    }
    let a = server.request("PATCH", "/api/v1/users", Auth::None, &[], None);
    assert_eq!(a.status, 404);
    assert!(
        a.header("strict-transport-security").is_none(),
        "HSTS is off by default"
    );
}

#[test]
fn health_answers_503_when_the_database_cannot_be_queried() {
    let server = Server::start();
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
    // The database disappears under the running server (a lost mount, a wrong rm).
    let dir = server.launch.data_dir();
    let gone = dir.join("moved-away");
    std::fs::create_dir(&gone).unwrap();
    for name in [
        "vrrp-monitor.db",
        "vrrp-monitor.db-wal",
        "vrrp-monitor.db-shm",
    ] {
        let _ = std::fs::rename(dir.join(name), gone.join(name));
    }
    let a = server.get("/api/health", Auth::None);
    assert_eq!(
        (a.status, a.body.clone()),
        (503, json!({ "status": "error" }))
    );
    assert_eq!(
        server.get("/api/v1/ping", Auth::None).status,
        200,
        "ping checks nothing else"
    );
}

#[test]
fn hsts_when_configured() {
    let server = Launch::new().config("security:\n  hsts: true\n").start();
    let a = server.get("/api/v1/ping", Auth::None);
    assert!(a
        .header("strict-transport-security")
        .unwrap()
        .contains("max-age="));
}

#[test]
fn an_oversized_body_is_refused() {
    let server = Server::start();
    let big = format!("{{\"username\": \"{}\"}}", "x".repeat(1024 * 1024 + 10));
    // The body is left unread: the answer says the connection ends, and the
    // server reads on until the client has sent it (no reset, no broken pipe).
    let a = server.post("/api/login", Auth::None, &big);
    assert_eq!(a.status, 413);
    assert_eq!(a.header("connection"), Some("close"));
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
}

#[test]
fn threads_are_named_after_their_job() {
    let server = Server::start();
    let expected = [
        "sqlite-writer",
        "http-worker-0",
        "http-worker-7",
        "http-reaper",
        "http-accept",
        "http-conn",
        "signals",
    ];
    // A thread takes its name as it starts: wait until the last one has.
    let deadline = Instant::now() + Duration::from_secs(5);
    let names = loop {
        let names = server.thread_names();
        let settled = expected.iter().all(|e| names.iter().any(|n| n == e))
            && names.iter().filter(|n| *n == "vrrp-monitor").count() == 1;
        if settled || Instant::now() >= deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for expected in expected {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert_eq!(
        names.iter().filter(|n| *n == "http-accept").count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "vrrp-monitor").count(),
        1,
        "only the main thread keeps the binary's name: {names:?}"
    );
}

/// Sends one request on a connection and reads the answer's status line.
fn ask(conn: &mut TcpStream) -> String {
    conn.write_all(PING_REQUEST).unwrap();
    let mut buf = [0u8; 512];
    let n = conn.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_burst_of_new_connections_is_not_starved_by_idle_keep_alive_ones() {
    let server = Server::start();
    for round in 0..4 {
        // tiny_http's parked pool threads count as free until they wake, so a burst
        // larger than the parked threads leaves connections queued with no thread,
        // behind keep-alive connections that stay open (5 s).
        std::thread::sleep(Duration::from_millis(300));
        let started = Instant::now();
        let burst: Vec<_> = (0..12)
            .map(|_| {
                let port = server.port();
                std::thread::spawn(move || {
                    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let line = ask(&mut c);
                    (line, c, started.elapsed())
                })
            })
            .collect();
        // Every connection stays open (a browser keeps them alive) until all answered.
        let answers: Vec<_> = burst.into_iter().map(|b| b.join().unwrap()).collect();
        let slowest = answers.iter().map(|a| a.2).max().unwrap();
        for (line, _, _) in &answers {
            assert!(line.starts_with("HTTP/1.1 200"), "round {round}: {line:?}");
        }
        assert!(
            slowest < Duration::from_millis(2500),
            "round {round}: slowest answer after {slowest:?}"
        );
    }
}

fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        // A reset is closed too; a timeout means the connection is still open.
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn idle_keep_alive_connections_are_closed() {
    let server = Server::start();
    let mut conn = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    conn.write_all(PING_REQUEST).unwrap();
    let mut buf = [0u8; 1024];
    let n = conn.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Kept alive for now...
    std::thread::sleep(Duration::from_millis(500));
    assert!(!closed_by_server(&mut conn), "closed too early");
    // ...and closed once it has been quiet for the keep-alive timeout (5 s).
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let n = conn.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "server closed the idle connection");
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn thousands_of_idle_connections_cannot_exhaust_the_server() {
    let server = Server::start();
    let health_is_quick = || {
        let t = Instant::now();
        assert_eq!(server.get("/api/health", Auth::None).status, 200);
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "health took {:?}",
            t.elapsed()
        );
    };
    let before = server.descriptors();
    // Connections that never send a byte stay with the kernel until they do
    // (TCP_DEFER_ACCEPT): no descriptor or thread of the server's. They are held
    // to the end, so that none ends during the test.
    let silent: Vec<TcpStream> = (0..2000)
        .map(|_| TcpStream::connect(("127.0.0.1", server.port())).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    health_is_quick();
    let with_silent = server.descriptors();
    assert!(
        with_silent < before + 32,
        "{before} descriptors before, {with_silent} with 2000 silent connections"
    );

    // Connections kept alive after a request are the server's: under pressure
    // the idle ones go within about a second.
    let mut idle: Vec<TcpStream> = (0..2000)
        .map(|_| {
            let mut c = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let line = ask(&mut c);
            assert!(line.starts_with("HTTP/1.1 200"), "{line:?}");
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2500));
    health_is_quick();
    // Idle connections are closed until no more than the pressure threshold (512) remain.
    let closed = idle.iter_mut().map(closed_by_server).filter(|c| *c).count();
    assert!(
        closed >= 2000 - 512,
        "only {closed} of 2000 idle connections were closed"
    );
    // tiny_http parks a finished connection thread for 5 s before it exits.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let threads = server.thread_names().len();
        if threads < 512 + 64 {
            break;
        }
        assert!(Instant::now() < deadline, "{threads} threads left");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(silent);
}

#[test]
fn stop_signal_exits_zero_and_a_second_changes_nothing() {
    let server = Server::start();
    let _idle = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    let mut server = server;
    server.signal(15);
    server.signal(2);
    let t = Instant::now();
    let status = server.wait_exit(Duration::from_secs(7));
    assert_eq!(status.code(), Some(0));
    assert!(t.elapsed() < Duration::from_secs(6));
    let log = server.log_text();
    assert!(log.contains("shutting down"));
    assert!(log.contains("already shutting down"));
}

/// Runs `cmd`, waiting for its exit at most `limit` (then it is killed): a child
/// whose fatal path is broken would otherwise never end. (exit code, stderr)
fn output_within(mut cmd: std::process::Command, limit: Duration) -> (Option<i32>, String) {
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        code,
        std::fs::read_to_string(err.path()).unwrap_or_default(),
    )
}

/// The real panic policy, in a child process: this test binary run again with only
/// this test and `VRRP_PANIC_CHILD` set, which installs the server's panic hook and
/// panics outside any request.
#[test]
fn an_uncontained_panic_is_logged_fatal_and_exits_1_after_250_ms() {
    if std::env::var("VRRP_PANIC_CHILD").is_ok() {
        vrrp_monitor::logging::init(
            vrrp_monitor::config::LogFormat::Json,
            vrrp_monitor::config::LogLevel::Info,
        );
        vrrp_monitor::lifecycle::install_panic_hook();
        let _ = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(|| panic!("a broken invariant"))
            .unwrap()
            .join();
        // The hook ends the process; the parent's deadline catches one that does not.
        loop {
            std::thread::park();
        }
    }
    let started = Instant::now();
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "http::an_uncontained_panic_is_logged_fatal_and_exits_1_after_250_ms",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("VRRP_PANIC_CHILD", "1");
    let (code, stderr) = output_within(cmd, Duration::from_secs(10));
    let elapsed = started.elapsed();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        elapsed >= Duration::from_millis(250),
        "exited after {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(8), "exited after {elapsed:?}");
    let fatal: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("\"level\":\"fatal\""))
        .collect();
    assert_eq!(fatal.len(), 1, "{stderr}");
    assert!(
        fatal[0].contains("Uncaught panic in thread sqlite-writer")
            && fatal[0].contains("a broken invariant"),
        "{}",
        fatal[0]
    );
}
