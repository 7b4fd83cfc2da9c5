//! Slow and hostile clients (faults item 6), the cheap variants: idle
//! connections, a slowloris client and a dashboard socket that never reads do
//! not keep an agent's readings from the dashboards or `/api/health` from
//! answering; the slowloris is closed after the header timeout. The full-size
//! run (10,000 idle connections) is `scripts/bench-hostile.sh`. And running out
//! of descriptors for real (a server started with a low open-file limit) stops
//! accepting only for a while.

use crate::harness::{fatal_lines, parse_log, reading, Auth, Launch, Server, PING_REQUEST};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The header timeout in ARCHITECTURE.md (decisions): 10 s, checked every 100 ms.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

fn health_within(server: &Server, limit: Duration) -> Duration {
    let t = Instant::now();
    let answer = server.get("/api/health", Auth::None);
    let took = t.elapsed();
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert!(took < limit, "health took {took:?}");
    took
}

#[test]
fn idle_slow_and_deaf_clients_do_not_stop_agents_dashboards_or_health() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-hostile");
    let mut agent_ws = server.connect_agent(&agent);
    let mut dashboard = server.dashboard(&admin);

    // A dashboard that never reads, with a small receive buffer so that it
    // stops taking data soon.
    let deaf = server.dashboard(&admin);
    let _ =
        nix::sys::socket::setsockopt(deaf.ws.get_ref(), nix::sys::socket::sockopt::RcvBuf, &4096);
    let idle: Vec<TcpStream> = (0..500)
        .map(|_| TcpStream::connect(("127.0.0.1", server.port())).unwrap())
        .collect();
    // A slowloris: a request line, then one header byte at a time.
    let mut slow = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    slow.write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    let slow_since = Instant::now();

    let mut slowest = Duration::ZERO;
    let mut slow_closed_after = None;
    for round in 0..40 {
        // The agent's reading reaches the reading dashboard.
        let name = format!("VI_{round}");
        agent_ws.send("KEEPALIVED_UPDATE", reading(&[(name.as_str(), "MASTER")]));
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "round {round}: the reading did not reach the dashboard"
            );
            match dashboard.next(left) {
                Some(Ok(m))
                    if m["type"] == "KEEPALIVED_STATE_UPDATE" && m.to_string().contains(&name) =>
                {
                    break
                }
                Some(Ok(_)) | None => continue,
                Some(Err(e)) => panic!("the dashboard socket ended: {e:?}"),
            }
        }
        slowest = slowest.max(health_within(&server, Duration::from_secs(1)));
        if slow_closed_after.is_none() && (slow.write_all(b"a").is_err() || closed(&mut slow)) {
            slow_closed_after = Some(slow_since.elapsed());
        }
        if slow_closed_after.is_some() && round >= 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let after = slow_closed_after.expect("the slowloris connection was never closed");
    assert!(
        after >= HEADER_TIMEOUT - Duration::from_millis(500)
            && after < HEADER_TIMEOUT + Duration::from_secs(3),
        "slowloris closed after {after:?}"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "slowest health {slowest:?}"
    );
    drop(idle);
    drop(deaf);
}

/// The open-file limit (soft and hard) of the server in the test below: well
/// above what it needs idle (about 40), well below what the kept-alive
/// connections take (two descriptors each in tiny_http).
const LOW_LIMIT: u64 = 256;
const TOO_MANY: usize = 400;
const ACCEPT_FAILED: &str = "Accepting HTTP connections failed";

/// `GET /api/health` on a fresh connection, waiting at most `wait` for the answer.
fn health_status(port: u16, wait: Duration) -> Option<u16> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, wait).ok()?;
    s.set_read_timeout(Some(wait)).ok()?;
    s.write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn running_out_of_descriptors_stops_accepting_only_for_a_while() {
    let server = Launch::new().open_files(LOW_LIMIT).start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-descriptors");

    // More connections than the server has descriptors for, each with a
    // request it sent and does not read the answer to (one that sends nothing
    // stays with the kernel). The kernel completes them all (the backlog is
    // 4096); the server accepts until it has no descriptor left, and its accept
    // thread fails.
    let idle: Vec<TcpStream> = (0..TOO_MANY)
        .map(|_| {
            let mut c = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
            c.write_all(PING_REQUEST).unwrap();
            c
        })
        .collect();
    assert!(
        server.wait_log(ACCEPT_FAILED),
        "no accept failure logged; log:\n{}",
        server.log_text()
    );

    // The reaper closes the idle connections (near the descriptor limit at
    // once), the server accepts again, and health answers on a new connection
    // without the idle ones being closed by the client.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            alive(server.pid()),
            "the server exited; log:\n{}",
            server.log_text()
        );
        if health_status(server.port(), Duration::from_secs(2)) == Some(200) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "health never answered again; log:\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Agents and dashboards are served again.
    let mut dashboard = server.dashboard(&admin);
    let mut agent_ws = server.connect_agent(&agent);
    agent_ws.send("KEEPALIVED_UPDATE", reading(&[("VI_after", "MASTER")]));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the reading did not reach the dashboard");
        match dashboard.next(left) {
            Some(Ok(m))
                if m["type"] == "KEEPALIVED_STATE_UPDATE" && m.to_string().contains("VI_after") =>
            {
                break
            }
            Some(Ok(_)) | None => continue,
            Some(Err(e)) => panic!("the dashboard socket ended: {e:?}"),
        }
    }
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
    drop(idle);

    let lines = parse_log(&server.log_text());
    assert!(fatal_lines(&lines).is_empty(), "{:?}", fatal_lines(&lines));
    let warnings: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["msg"].as_str())
        .filter(|m| m.contains(ACCEPT_FAILED))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning per streak: {warnings:?}");
}

/// Whether the server closed the socket (a read now sees the end or an error).
fn closed(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 256];
    let gone = match s.read(&mut b) {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    s.set_nonblocking(false).unwrap();
    gone
}
