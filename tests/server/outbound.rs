//! Outbound mode from the server's side: the API's rules, the `dial:<client>`
//! thread's ladder on a driven clock, reconnect, a changed address, deletion,
//! and a token sealed under another `secretKey`. The agent's side is a plain
//! listening socket here (a host whose agent does not answer the WebSocket);
//! registration against the real agent is in the agent's tests.

use crate::harness::{Auth, Launch};
use chrono::Duration as ChronoDuration;
use serde_json::json;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use vrrp_monitor::agents::clients::{self, NewOutbound};
use vrrp_monitor::auth::sealed::SealKey;
use vrrp_monitor::db::Db;

const SECRET_KEY: &str = "test-secret-key-for-outbound-tokens-0123456789";
const TOKEN: &str = "the-outbound-auth-token";

fn config_text(secret_key: &str) -> String {
    format!(
        "jwtSecret: '{}'\nsecretKey: '{secret_key}'\n",
        "a".repeat(64)
    )
}

/// Stores an outbound client before the server starts, its token sealed with
/// `sealed_with`.
fn store_outbound(launch: &Launch, id: &str, port: u16, sealed_with: &str) {
    let path = launch.data_dir().join("vrrp-monitor.db");
    let now = chrono::Utc::now();
    let (db, writer) = Db::open(&path, &vrrp_monitor::clock::iso(now)).unwrap();
    let new = NewOutbound {
        id: id.into(),
        hostname: "lb-dmz-1".into(),
        target: format!("127.0.0.1:{port}"),
        sealed_token: SealKey::from_secret_key(sealed_with).seal(TOKEN),
    };
    clients::create_outbound(&db, new, now).unwrap();
    drop(db);
    writer.join().unwrap();
}

/// A host where the agent would listen: counts the server's dials.
struct FakeHost {
    listener: TcpListener,
}

impl FakeHost {
    fn new() -> FakeHost {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        FakeHost { listener }
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().unwrap().port()
    }

    /// The request line of the next dial within `within`, the connection then
    /// dropped (the handshake fails, as with a host whose agent is broken).
    fn next_dial(&self, within: Duration) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => return Some(request_line(stream)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("accept: {e}"),
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn request_line(mut stream: TcpStream) -> String {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let mut got = Vec::new();
    while !got.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    text.lines().next().unwrap_or_default().to_owned()
}

/// Real time the server gets to act on a clock step (it looks every 100 ms).
const ACT: Duration = Duration::from_millis(1500);
/// How long "nothing happens" is watched.
const QUIET: Duration = Duration::from_millis(400);

#[test]
fn the_dial_thread_walks_its_ladder_on_the_server_clock() {
    let host = FakeHost::new();
    let launch = Launch::new().config(&config_text(SECRET_KEY));
    store_outbound(&launch, "c-out-1", host.port(), SECRET_KEY);
    let (server, clock) = launch.start_in_process();

    let first = host.next_dial(ACT).expect("dialled at start");
    assert_eq!(
        first,
        format!("GET /ws/agent?clientId=c-out-1&token={TOKEN} HTTP/1.1"),
        "both halves of the identity, the token decrypted"
    );
    // 5, 10, 30, then every 60 s after the first failure.
    for step in [5, 10, 30, 60, 60] {
        clock.advance(ChronoDuration::milliseconds(step * 1000 - 200));
        assert!(
            host.next_dial(QUIET).is_none(),
            "no dial before the {step} s step"
        );
        clock.advance(ChronoDuration::milliseconds(200));
        assert!(host.next_dial(ACT).is_some(), "a dial at the {step} s step");
    }

    // Reconnect: at once, without the clock moving.
    let admin = server.admin();
    let a = server.post(
        "/api/v1/clients/c-out-1/reconnect",
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "status": "reconnecting" }))
    );
    assert!(host.next_dial(ACT).is_some(), "reconnect dials at once");
    // That dial failed too: the ladder restarts only once a socket opens, so
    // the next is still a minute away.
    clock.advance(ChronoDuration::milliseconds(59_800));
    assert!(host.next_dial(QUIET).is_none());

    // A changed address: dialled at once, the old one no more.
    let moved = FakeHost::new();
    let a = server.put(
        "/api/v1/clients/c-out-1",
        Auth::Cookie(&admin),
        &json!({ "outboundTargetAddress": format!("127.0.0.1:{}", moved.port()) }).to_string(),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert!(moved.next_dial(ACT).is_some(), "the new address at once");
    let listed = server.get("/api/v1/clients", Auth::Cookie(&admin));
    assert_eq!(
        listed.body[0]["outboundTargetAddress"],
        format!("127.0.0.1:{}", moved.port())
    );

    // Deleted: never dialled again.
    let a = server.delete("/api/v1/clients/c-out-1", Auth::Cookie(&admin));
    assert_eq!(a.status, 200);
    clock.advance(ChronoDuration::seconds(120));
    assert!(
        moved.next_dial(QUIET).is_none(),
        "a deleted client is not dialled"
    );
    assert!(host.next_dial(Duration::from_millis(50)).is_none());
}

#[test]
fn a_token_sealed_under_another_secret_key_is_not_dialled() {
    let host = FakeHost::new();
    let launch = Launch::new().config(&config_text(SECRET_KEY));
    store_outbound(
        &launch,
        "c-out-2",
        host.port(),
        "the secretKey of another installation",
    );
    let server = launch.start();
    assert!(
        server.wait_log("does not decrypt with this secretKey"),
        "one line says why: {}",
        server.log_text()
    );
    assert!(host.next_dial(Duration::from_millis(800)).is_none());
    let log = server.log_text();
    assert_eq!(
        log.matches("does not decrypt with this secretKey").count(),
        1,
        "logged once, not retried"
    );
    assert!(!log.contains(TOKEN));
}

#[test]
fn outbound_create_and_reconnect_refuse_bad_input_before_dialling() {
    let server = Launch::new().start();
    let admin = server.admin();
    let create = |body: serde_json::Value| {
        server.post(
            "/api/v1/clients/outbound",
            Auth::Cookie(&admin),
            &body.to_string(),
        )
    };
    for (body, error) in [
        (
            json!({ "registrationSecret": "K7QM-3XRD" }),
            "outboundTargetAddress: is required",
        ),
        (
            json!({ "outboundTargetAddress": "", "registrationSecret": "x" }),
            "outboundTargetAddress: must not be empty",
        ),
        (
            json!({ "outboundTargetAddress": "  ", "registrationSecret": "x" }),
            "outboundTargetAddress: must not be empty",
        ),
        (
            json!({ "outboundTargetAddress": "lb1", "registrationSecret": "" }),
            "registrationSecret: must not be empty",
        ),
        (
            json!({ "outboundTargetAddress": "lb1" }),
            "registrationSecret: is required",
        ),
        (
            json!({ "outboundTargetAddress": "https://lb1", "registrationSecret": "x" }),
            "outboundTargetAddress: only ws:// and wss:// addresses can be dialled",
        ),
        (
            json!({ "outboundTargetAddress": "lb1:3011/ws", "registrationSecret": "x" }),
            "outboundTargetAddress: must be host or host:port, without a path or query",
        ),
        (
            json!({ "outboundTargetAddress": "u:p@lb1", "registrationSecret": "x" }),
            "outboundTargetAddress: must not hold credentials",
        ),
    ] {
        let a = create(body.clone());
        assert_eq!((a.status, a.error()), (400, error), "{body}");
    }

    // Nothing listening: 503 with the underlying error, at once.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let a = create(
        json!({ "outboundTargetAddress": format!("127.0.0.1:{closed}"), "registrationSecret": "K7QM-3XRD" }),
    );
    assert_eq!(a.status, 503);
    assert!(
        a.error()
            .starts_with("Could not establish connection to client. ")
            && a.error().contains(&format!("127.0.0.1:{closed}")),
        "{}",
        a.error()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        server.get("/api/v1/clients", Auth::Cookie(&admin)).body,
        json!([]),
        "nothing stored"
    );

    // Reconnect: 404 unknown, 400 for an inbound client.
    let a = server.post("/api/v1/clients/nope/reconnect", Auth::Cookie(&admin), "");
    assert_eq!((a.status, a.error()), (404, "Client not found"));
    let inbound = server.register_agent(&admin, "lb-in");
    let a = server.post(
        &format!("/api/v1/clients/{}/reconnect", inbound.id),
        Auth::Cookie(&admin),
        "",
    );
    assert_eq!(
        (a.status, a.error()),
        (400, "Client is not an outbound client")
    );
}
