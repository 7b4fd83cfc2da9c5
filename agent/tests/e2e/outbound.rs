//! Outbound mode with the real `vrrp-agent` binary: the test plays the server, dialling
//! `/ws/register` and `/ws/agent` on the agent's own web server over real WebSockets
//! (plain, and wss against the `tls` block with the self-signed fixture certificate).
//! keepalived is absent (an empty process table), so readings say `running: false`.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use crate::agent_process::Agent;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    vrrp_test_support::wait_for(what, 15, f)
}

/// Plain TCP or a TLS client (rustls, any certificate accepted: the fixture is
/// self-signed, as the server's `allow_self_signed_agent_certificates` would allow).
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(b),
            Conn::Tls(s) => s.read(b),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(b),
            Conn::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

type Ws = WebSocket<Conn>;

/// Dials the agent as the server would; waits for the web server to listen first.
fn dial(port: u16, path: &str, tls: bool) -> Result<Ws, String> {
    let tcp = wait_for("the agent's port", || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let scheme = if tls { "wss" } else { "ws" };
    let url = format!("{scheme}://localhost:{port}{path}");
    let stream = if tls {
        let cfg = vrrp_dial::tls_config(true).unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(cfg, name).unwrap();
        Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
    } else {
        Conn::Plain(tcp)
    };
    tungstenite::client::client(url, stream)
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

fn send(ws: &mut Ws, kind: &str, payload: Value) {
    ws.send(Message::text(
        json!({ "type": kind, "payload": payload }).to_string(),
    ))
    .unwrap();
}

/// The next message (type, payload), or the close (code, reason) as `Err`.
fn next(ws: &mut Ws) -> Result<(String, Value), (u16, String)> {
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                return Ok((
                    v["type"].as_str().unwrap().to_string(),
                    v["payload"].clone(),
                ));
            }
            Ok(Message::Close(Some(f))) => return Err((u16::from(f.code), f.reason.to_string())),
            Ok(Message::Close(None)) => return Err((1005, String::new())),
            Ok(_) => {}
            Err(e) => panic!("socket failed before a message or close: {e}"),
        }
    }
}

fn expect_close(ws: &mut Ws, code: u16, reason: &str) {
    match next(ws) {
        Err((c, r)) => assert_eq!((c, r.as_str()), (code, reason)),
        Ok(m) => panic!("expected close {code} {reason:?}, got {m:?}"),
    }
}

fn registration(secret: &str, client_id: &str, token: &str) -> Value {
    json!({ "secret": secret, "clientId": client_id, "authToken": token })
}

/// The timer is off in effect (one reading an hour), so every KEEPALIVED_UPDATE a test
/// sees answers the connection or a REQUEST_STATE_UPDATE (an unchanged reading is not
/// sent again before 30 s).
const OUTBOUND: &str = "keepalived:\n  pollInterval: 3600\n";
const TOKEN: &str = "4f2c0e7b9a1d4c6e8f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e";

#[test]
fn pin_rotation_registration_and_the_session_the_server_dials() {
    let a = Agent::start(OUTBOUND, &[]);
    let block = a.wait_log("Setup PIN: ");
    assert!(
        block.contains(&format!("http://<this host>:{}", a.port)),
        "{block}"
    );
    let first = a.pins()[0].clone();

    // Five wrong PINs: each is a REGISTRATION_FAILURE and 4003 `Invalid secret`; the
    // fifth replaces the PIN, and the new one is logged.
    for _ in 0..5 {
        let mut ws = dial(a.port, "/ws/register", false).unwrap();
        send(
            &mut ws,
            "REGISTRATION_REQUEST",
            registration("AAAA-AAAA", "c-1", TOKEN),
        );
        assert_eq!(
            next(&mut ws).unwrap(),
            (
                "REGISTRATION_FAILURE".to_string(),
                json!({ "error": "Invalid secret" })
            )
        );
        expect_close(&mut ws, 4003, "Invalid secret");
    }
    let pins = wait_for("a new PIN", || {
        let p = a.pins();
        (p.len() >= 2).then_some(p)
    });
    let new = pins.last().unwrap().clone();
    assert_ne!(new, first);
    // The old PIN is no longer good.
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    send(
        &mut ws,
        "REGISTRATION_REQUEST",
        registration(&first, "c-1", TOKEN),
    );
    assert_eq!(next(&mut ws).unwrap().0, "REGISTRATION_FAILURE");
    expect_close(&mut ws, 4003, "Invalid secret");
    assert!(!a.identity().exists());

    // A malformed request is refused without costing anything.
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    send(&mut ws, "REGISTRATION_REQUEST", json!({ "secret": new }));
    let (k, p) = next(&mut ws).unwrap();
    assert_eq!(
        (k.as_str(), p["error"].as_str()),
        (
            "REGISTRATION_FAILURE",
            Some("payload.clientId: is required")
        )
    );
    expect_close(&mut ws, 1008, "Invalid registration request");

    // The current PIN (lower case, no hyphen: neither matters) registers.
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    let typed = new.replace('-', "").to_lowercase();
    send(
        &mut ws,
        "REGISTRATION_REQUEST",
        registration(&typed, "c-1", TOKEN),
    );
    let (k, p) = next(&mut ws).unwrap();
    assert_eq!(k, "REGISTRATION_SUCCESS");
    assert!(p["hostname"].as_str().is_some_and(|h| !h.is_empty()), "{p}");
    expect_close(&mut ws, 1000, "");
    let stored: Value = serde_json::from_slice(&fs::read(a.identity()).unwrap()).unwrap();
    assert_eq!(stored, json!({ "clientId": "c-1", "authToken": TOKEN }));
    assert_eq!(
        fs::metadata(a.identity()).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Registered: every later caller is refused, whatever it carries.
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    expect_close(&mut ws, 4003, "Already registered");

    // `/ws/agent`: either half wrong (or missing) is 4001 `Unauthorized`.
    for q in [
        format!("clientId=c-2&token={TOKEN}"),
        "clientId=c-1&token=wrong".to_string(),
        format!("token={TOKEN}"),
        String::new(),
    ] {
        let mut ws = dial(a.port, &format!("/ws/agent?{q}"), false).unwrap();
        expect_close(&mut ws, 4001, "Unauthorized");
    }

    // Both halves right: AUTH comes first, the session starts at AUTH_SUCCESS with a
    // reading, and REQUEST_STATE_UPDATE is answered with another.
    let path = format!("/ws/agent?clientId=c-1&token={TOKEN}");
    let mut ws = dial(a.port, &path, false).unwrap();
    let (k, auth) = next(&mut ws).unwrap();
    assert_eq!(k, "AUTH");
    assert_eq!(auth["capabilities"], json!(["vrrp"]));
    assert!(auth["hostname"].is_string() && auth["version"].is_string());
    send(
        &mut ws,
        "AUTH_SUCCESS",
        json!({ "clientId": "c-1", "lastSyncTime": null }),
    );
    let (k, reading) = next(&mut ws).unwrap();
    assert_eq!(k, "KEEPALIVED_UPDATE");
    assert_eq!(reading["running"], json!(false));
    send(&mut ws, "REQUEST_STATE_UPDATE", json!({}));
    let (k, again) = next(&mut ws).unwrap();
    assert_eq!(k, "KEEPALIVED_UPDATE");
    assert_eq!(again["running"], json!(false));
    // A protocol ping is answered with a pong.
    ws.send(Message::Ping(b"p".to_vec().into())).unwrap();
    let pong = loop {
        match ws.read().unwrap() {
            Message::Pong(p) => break p,
            Message::Text(_) => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(&pong[..], b"p");

    // A second server socket replaces the first (4000), and carries on.
    let mut ws2 = dial(a.port, &path, false).unwrap();
    assert_eq!(next(&mut ws2).unwrap().0, "AUTH");
    send(&mut ws2, "AUTH_SUCCESS", json!({}));
    assert_eq!(next(&mut ws2).unwrap().0, "KEEPALIVED_UPDATE");
    loop {
        match next(&mut ws) {
            Ok((k, _)) => assert_eq!(k, "KEEPALIVED_UPDATE"),
            Err(close) => {
                assert_eq!(close, (4000, "Replaced by new connection".to_string()));
                break;
            }
        }
    }
    let status: Value = ureq::get(format!("http://127.0.0.1:{}/api/status/connection", a.port))
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();
    assert_eq!(status["connected"], json!(true), "{status}");

    let log = a.log();
    assert!(!log.contains(TOKEN), "the auth token reached the log");
    assert!(log.contains("Agent mode: unregistered"));
}

#[test]
fn allowed_networks_close_both_routes_with_access_denied() {
    let a = Agent::start(
        &format!("{OUTBOUND}allowedNetworks: [10.0.0.0/8, 192.168.7.1]\n"),
        &[],
    );
    a.wait_log("Setup PIN: ");
    let pin = a.pins()[0].clone();
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    expect_close(&mut ws, 4003, "Access denied");
    let mut ws = dial(
        a.port,
        &format!("/ws/agent?clientId=c&token={TOKEN}"),
        false,
    )
    .unwrap();
    expect_close(&mut ws, 4003, "Access denied");
    let log = a.wait_log("refused: not in allowedNetworks");
    assert!(log.contains("127.0.0.1"), "the peer is named: {log}");
    // The refusal did not count as a PIN attempt and registered nothing.
    assert_eq!(a.pins(), [pin]);
    assert!(!a.identity().exists());
    // The local web UI is not restricted by it.
    let status = ureq::get(format!("http://127.0.0.1:{}/api/status/auth", a.port))
        .call()
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 200);
}

#[test]
fn registration_secret_replaces_the_pin_and_is_dropped_after_use() {
    let secret = "outbound-secret-5f1e9c";
    let a = Agent::start(OUTBOUND, &[("SVC_REGISTRATION_SECRET", secret)]);
    // The register page is on, so a PIN exists too; `/ws/register` takes the secret.
    a.wait_log("Setup PIN: ");
    let pin = a.pins()[0].clone();
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    send(
        &mut ws,
        "REGISTRATION_REQUEST",
        registration(&pin, "c-9", TOKEN),
    );
    assert_eq!(next(&mut ws).unwrap().0, "REGISTRATION_FAILURE");
    expect_close(&mut ws, 4003, "Invalid secret");
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    send(
        &mut ws,
        "REGISTRATION_REQUEST",
        registration(secret, "c-9", TOKEN),
    );
    assert_eq!(next(&mut ws).unwrap().0, "REGISTRATION_SUCCESS");
    expect_close(&mut ws, 1000, "");
    let log = a.wait_log("remove SVC_REGISTRATION_SECRET");
    assert!(!log.contains(secret), "the secret reached the log");
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    expect_close(&mut ws, 4003, "Already registered");
}

#[test]
fn registration_secret_variables_stop_the_start_when_unusable() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty");
    fs::write(&empty, "\n").unwrap();
    let empty = empty.to_str().unwrap();
    let missing = d.path().join("missing");
    let missing = missing.to_str().unwrap();
    for (env, needle) in [
        (
            vec![
                ("SVC_REGISTRATION_SECRET", "x"),
                ("SVC_REGISTRATION_SECRET_FILE", empty),
            ],
            "both set",
        ),
        (
            vec![("SVC_REGISTRATION_SECRET_FILE", empty)],
            "SVC_REGISTRATION_SECRET_FILE",
        ),
        (
            vec![("SVC_REGISTRATION_SECRET_FILE", missing)],
            "SVC_REGISTRATION_SECRET_FILE",
        ),
    ] {
        let (code, log) = Agent::start(OUTBOUND, &env).exit();
        assert_eq!(code, Some(1), "{log}");
        let line = log.lines().find(|l| l.contains(needle));
        assert!(line.is_some(), "{needle}: {log}");
        assert!(!log.contains("listening"), "{log}");
    }
    // From a file: the secret is read, trimmed, and accepted.
    let file = d.path().join("secret");
    fs::write(&file, "from-a-file-secret\n").unwrap();
    let a = Agent::start(
        OUTBOUND,
        &[("SVC_REGISTRATION_SECRET_FILE", file.to_str().unwrap())],
    );
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    send(
        &mut ws,
        "REGISTRATION_REQUEST",
        registration("from-a-file-secret", "c-3", TOKEN),
    );
    assert_eq!(next(&mut ws).unwrap().0, "REGISTRATION_SUCCESS");
}

fn tls_config_text(key: &Path) -> String {
    format!(
        "{OUTBOUND}tls:\n  cert: {FIXTURES}/localhost.cert.pem\n  key: {}\n",
        key.display()
    )
}

#[test]
fn tls_agent_speaks_wss_only() {
    let key = Path::new(FIXTURES).join("localhost.key.pem");
    let a = Agent::start(&tls_config_text(&key), &[]);
    let block = a.wait_log("Setup PIN: ");
    assert!(
        block.contains(&format!("https://<this host>:{}", a.port)),
        "{block}"
    );
    assert!(
        block.contains("Web server listening on https://"),
        "{block}"
    );
    // Plain ws against the TLS agent fails; the agent keeps serving.
    assert!(dial(a.port, "/ws/register", false).is_err());
    let pin = a.pins()[0].clone();
    let mut ws = dial(a.port, "/ws/register", true).unwrap();
    send(
        &mut ws,
        "REGISTRATION_REQUEST",
        registration(&pin, "c-tls", TOKEN),
    );
    assert_eq!(next(&mut ws).unwrap().0, "REGISTRATION_SUCCESS");
    expect_close(&mut ws, 1000, "");
    let mut ws = dial(
        a.port,
        &format!("/ws/agent?clientId=c-tls&token={TOKEN}"),
        true,
    )
    .unwrap();
    assert_eq!(next(&mut ws).unwrap().0, "AUTH");
    send(&mut ws, "AUTH_SUCCESS", json!({}));
    assert_eq!(next(&mut ws).unwrap().0, "KEEPALIVED_UPDATE");
    send(&mut ws, "REQUEST_STATE_UPDATE", json!({}));
    assert_eq!(next(&mut ws).unwrap().0, "KEEPALIVED_UPDATE");
    // Plain HTTP gets nothing from it either.
    assert!(
        ureq::get(format!("http://127.0.0.1:{}/api/status/auth", a.port))
            .call()
            .is_err()
    );
}

/// The TLS handshake runs on the connection's own thread (rustls), not on
/// the listener's accept thread: a peer that opens TCP and says nothing does not hold
/// up the next client.
#[test]
fn tls_silent_peer_does_not_stall_the_listener() {
    let key = Path::new(FIXTURES).join("localhost.key.pem");
    let a = Agent::start(&tls_config_text(&key), &[]);
    a.wait_log("Setup PIN: ");
    let silent: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", a.port)).unwrap())
        .collect();
    let t0 = std::time::Instant::now();
    let ws = dial(a.port, "/ws/register", true);
    assert!(ws.is_ok(), "wss beside silent peers: {:?}", ws.err());
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    drop(silent);
    // The key file's contents never reach the log.
    let pem = fs::read_to_string(&key).unwrap();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(!a.log().contains(body.get(..24).unwrap()), "key in the log");
}

#[test]
fn tls_block_that_cannot_be_used_ends_the_start() {
    let d = tempfile::tempdir().unwrap();
    // Unreadable: a directory where the key should be (the tests run as root, so file
    // modes would not stop a read).
    let (code, log) = Agent::start(&tls_config_text(d.path()), &[]).exit();
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("tls.key"), "{log}");
    assert!(!log.contains("Web server listening"), "{log}");
    // Readable but not a key.
    let bad = d.path().join("bad.key.pem");
    fs::write(
        &bad,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let (code, log) = Agent::start(&tls_config_text(&bad), &[]).exit();
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("tls"), "{log}");
    assert!(!log.contains("Web server listening"), "{log}");
}

#[test]
fn stopping_does_not_wait_for_a_registration_in_progress() {
    let mut a = Agent::start(OUTBOUND, &[]);
    let mut ws = dial(a.port, "/ws/register", false).unwrap();
    let pid = nix::unistd::Pid::from_raw(a.child.as_ref().unwrap().id() as i32);
    let t0 = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    expect_close(&mut ws, 1001, "Agent stopping");
    let mut child = a.child.take().unwrap();
    let status = wait_for("the agent to exit", || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(0));
    // Far below the 10 s the registration would otherwise have been waited for.
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}
