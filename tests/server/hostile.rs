//! Slow and hostile clients (issue 19, faults item 6), the cheap variants: idle
//! connections, a slowloris client and a dashboard socket that never reads do
//! not keep an agent's readings from the dashboards or `/api/health` from
//! answering; the slowloris is closed after the header timeout. The full-size
//! run (10,000 idle connections) is `scripts/bench-hostile.sh`.

use crate::harness::{reading, Auth, Server};
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
