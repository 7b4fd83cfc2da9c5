//! Hostile input to the agent's local web server, over raw sockets
//! against the real `vrrp-agent`: upgrade requests that are no handshake, slow
//! bodies and heads without end freeze nothing; heads are capped at 16 KiB;
//! idle and slow connections are closed on the server's timeouts, a crowd of
//! idle ones sooner, by the server's reaper; every answer
//! says `Referrer-Policy: no-referrer`. The agent's stored state (its config
//! file) is unchanged after each.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vrrp_test_support::*;

/// The web server's timeouts (agent/src/web/mod.rs), the server's figures.
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

struct Agent {
    child: Child,
    port: u16,
}

impl Agent {
    fn start(dir: &Path) -> Agent {
        let proc_dir = dir.join("proc");
        fs::create_dir_all(proc_dir.join("1")).unwrap();
        fs::write(proc_dir.join("1/comm"), "init\n").unwrap();
        fs::write(dir.join("config.yaml"), "keepalived:\n  pollInterval: 1\n").unwrap();
        let log = dir.join("agent.log");
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_vrrp-agent"))
            .env_clear()
            .env("SVC_CLIENT_CONFIG", dir.join("config.yaml"))
            .env("SVC_CLIENT_DATA_DIR", dir.join("data"))
            .env("SVC_PROC_DIR", &proc_dir)
            .env("SVC_CLIENT_PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        wait_for("the web server", 20, || {
            fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("Web server listening")
                .then_some(())
        });
        Agent { child, port }
    }

    fn raw(&self, bytes: &[u8]) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(bytes).unwrap();
        s
    }

    /// The register page answers within `limit`.
    fn page_within(&self, limit: Duration) {
        let t = Instant::now();
        let (status, _, _) = request(
            "GET",
            &format!("http://127.0.0.1:{}/register", self.port),
            None,
            None,
        );
        assert_eq!(status, 200);
        assert!(t.elapsed() < limit, "the page took {:?}", t.elapsed());
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole answer on `s` (until the agent closes or `wait` passes).
fn answer(s: &mut TcpStream, wait: Duration) -> String {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if out.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// When the agent closed `s`, waiting at most `wait`.
fn closed_after(s: &mut TcpStream, since: Instant, wait: Duration) -> Option<Duration> {
    let mut buf = [0u8; 1024];
    while since.elapsed() < wait {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some(since.elapsed()),
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return Some(since.elapsed()),
        }
    }
    None
}

#[test]
fn upgrades_slow_bodies_and_big_heads_freeze_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = Agent::start(tmp.path());
    let config = fs::read_to_string(tmp.path().join("config.yaml")).unwrap();
    // Two per worker of each: on the old code four upgrade requests froze it.
    let mut upgrades: Vec<TcpStream> = (0..8)
        .map(|_| agent.raw(b"POST /api/register HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 50\r\n\r\n"))
        .collect();
    let _plain_upgrades: Vec<TcpStream> = (0..8)
        .map(|_| agent.raw(b"POST /api/register HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nContent-Length: 50\r\n\r\n"))
        .collect();
    let _slow: Vec<TcpStream> = (0..8)
        .map(|_| {
            agent.raw(
                b"POST /api/register HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{\"pin\"",
            )
        })
        .collect();
    agent.page_within(Duration::from_secs(1));
    for (i, u) in upgrades.iter_mut().enumerate() {
        let a = answer(u, Duration::from_secs(5));
        assert!(a.starts_with("HTTP/1.1 400"), "upgrade {i}: {a}");
    }
    let pad = "a".repeat(17 * 1024);
    let mut big = agent.raw(format!("GET /register HTTP/1.1\r\nX-Pad: {pad}\r\n\r\n").as_bytes());
    let a = answer(&mut big, Duration::from_secs(5));
    assert!(a.starts_with("HTTP/1.1 431"), "{a}");
    agent.page_within(Duration::from_secs(1));
    assert_eq!(
        fs::read_to_string(tmp.path().join("config.yaml")).unwrap(),
        config
    );
}

#[test]
fn idle_and_slow_connections_are_closed_on_the_servers_timeouts() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = Agent::start(tmp.path());
    let since = Instant::now();
    let mut idle = TcpStream::connect(("127.0.0.1", agent.port)).unwrap();
    let mut slow = agent.raw(b"GET /register HTTP/1.1\r\nX-Slow: ");
    let dripper = {
        let mut s = slow.try_clone().unwrap();
        std::thread::spawn(move || {
            // One byte every half second: never a stall, never a whole head.
            while s.write_all(b"a").is_ok() && since.elapsed() < HEADER_TIMEOUT * 2 {
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };
    let wait = HEADER_TIMEOUT + Duration::from_secs(5);
    let idle_after = closed_after(&mut idle, since, wait).expect("the idle connection stayed open");
    let slow_after = closed_after(&mut slow, since, wait).expect("the slow head was never cut");
    assert!(
        idle_after >= IDLE_TIMEOUT - Duration::from_millis(500)
            && idle_after < IDLE_TIMEOUT + Duration::from_secs(2),
        "idle closed after {idle_after:?}"
    );
    assert!(
        slow_after >= HEADER_TIMEOUT - Duration::from_millis(500)
            && slow_after < HEADER_TIMEOUT + Duration::from_secs(2),
        "slow head closed after {slow_after:?}"
    );
    let _ = dripper.join();
    agent.page_within(Duration::from_secs(1));
}

/// The agent's web server keeps connections the server's way (tiny_http's
/// register and `http-reaper`, one policy): while more than 512 connections
/// are idle at once, those quiet for a second are closed, long before the 5 s
/// read timeout that alone bounded them before; the crowd is thinned to at
/// most 512.
#[test]
fn a_crowd_of_idle_keep_alive_connections_is_thinned_at_once() {
    const CROWD: usize = 700;
    const PRESSURE_ABOVE: usize = 512;
    let tmp = tempfile::tempdir().unwrap();
    let agent = Agent::start(tmp.path());
    let mut crowd: Vec<TcpStream> = (0..CROWD)
        .map(|_| agent.raw(b"GET /api/status/auth HTTP/1.1\r\nHost: x\r\n\r\n"))
        .collect();
    for s in &mut crowd {
        let a = answer(s, Duration::from_secs(10));
        assert!(a.starts_with("HTTP/1.1 "), "no answer: {a:?}");
    }
    let since = Instant::now();
    let soon = IDLE_TIMEOUT - Duration::from_secs(2);
    let mut open = CROWD;
    while since.elapsed() < soon && open > PRESSURE_ABOVE {
        open = crowd
            .iter_mut()
            .filter_map(|s| (!closed_now(s)).then_some(()))
            .count();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        open <= PRESSURE_ABOVE,
        "{open} of {CROWD} idle connections still open after {:?}",
        since.elapsed()
    );
    agent.page_within(Duration::from_secs(1));
    let config = fs::read_to_string(tmp.path().join("config.yaml")).unwrap();
    assert_eq!(config, "keepalived:\n  pollInterval: 1\n");
}

/// Whether the peer has closed `s` (reads what is left of an answer first).
fn closed_now(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    s.set_nonblocking(false).unwrap();
    closed
}

#[test]
fn every_answer_says_no_referrer() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = Agent::start(tmp.path());
    for path in ["/register", "/nothing-here", "/api/status/auth"] {
        let mut s = agent
            .raw(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        let a = answer(&mut s, Duration::from_secs(5)).to_ascii_lowercase();
        assert!(
            a.contains("\r\nreferrer-policy: no-referrer\r\n"),
            "{path}: {a}"
        );
    }
    // What tiny_http answers itself: a request line it cannot read, a version
    // above 1.1.
    for (request, status) in [
        ("NONSENSE\r\n\r\n", "400"),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", "505"),
    ] {
        let mut s = agent.raw(request.as_bytes());
        let a = answer(&mut s, Duration::from_secs(5)).to_ascii_lowercase();
        assert!(a.starts_with(&format!("http/1.1 {status}")), "{a}");
        assert!(
            a.contains("\r\nreferrer-policy: no-referrer\r\n"),
            "{status}: {a}"
        );
    }
}
