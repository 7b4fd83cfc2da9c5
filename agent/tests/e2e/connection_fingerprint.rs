//! The password fingerprint over real sockets, both directions: the connection thread
//! dials a fake server that speaks the real protocol (inbound), or the agent's web
//! server takes a socket the test dials as the server would (outbound), on a
//! `ManualClock`. A server whose AUTH_SUCCESS carries `fingerprintKey` gets each
//! reading with `authFingerprint` = `AuthPassword::fingerprint(key)` of the instance's
//! password; a server without a key (an older one) gets the same reading without it;
//! two servers get two fingerprints; the password itself reaches no server.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};
use vrrp_agent::clock::ManualClock;
use vrrp_agent::config::{self, Mode, Secret};
use vrrp_agent::connection::{self, ConnInbox, ConnState, ConnStatus, SharedConn, Target};
use vrrp_agent::reader::{KeepalivedStatus, ReaderMsg, ReadingNote, Trigger, TriggerSource};
use vrrp_agent::registration::{PinBlock, RegShared};
use vrrp_agent::store::datadir::{DataDir, Identity};
use vrrp_agent::store::queue::Queue;
use vrrp_agent::web;
use vrrp_protocol::{AuthPassword, Reading, VrrpInstance, VrrpState};

const PASSWORD: &str = "s3cr3t51";
const KEY_A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const KEY_B: &str = "ffeeddccbbaa99887766554433221100";

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn fingerprint(password: &str, key_hex: &str) -> String {
    AuthPassword::new(password).fingerprint(&bytes(key_hex))
}

/// A reading with a PASS instance (its password) and an instance without one.
fn reading(password: &str) -> Arc<Reading> {
    Arc::new(Reading {
        collected_at: "2026-11-21T00:00:00.000Z".into(),
        running: true,
        instances: vec![
            VrrpInstance {
                name: "VI_1".into(),
                state: VrrpState::Master,
                vrid: Some(51),
                auth_type: Some("pass".into()),
                auth_password: Some(AuthPassword::new(password)),
                ..Default::default()
            },
            VrrpInstance {
                name: "VI_2".into(),
                state: VrrpState::Master,
                vrid: Some(52),
                auth_type: Some("none".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    })
}

/// A stand-in for the reader: every trigger is answered with the current reading.
fn reader(inbox: ConnInbox, current: Arc<Mutex<Arc<Reading>>>) -> Trigger {
    let (tx, rx) = crossbeam_channel::unbounded::<ReaderMsg>();
    thread::spawn(move || {
        while let Ok(m) = rx.recv() {
            if let ReaderMsg::Read { source, .. } = m {
                inbox.note(ReadingNote {
                    reading: current.lock().clone(),
                    sources: vec![source],
                });
            }
        }
    });
    Trigger::from_sender(tx)
}

/// A server that upgrades, answers AUTH with AUTH_SUCCESS carrying `auth_success`, and
/// hands every message it receives to the test.
struct FakeServer {
    port: u16,
    seen: Receiver<Value>,
}

impl FakeServer {
    fn start(auth_success: Value) -> FakeServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (tx, seen) = crossbeam_channel::unbounded();
        thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                let (tx, payload) = (tx.clone(), auth_success.clone());
                thread::spawn(move || serve(s, payload, tx));
            }
        });
        FakeServer { port, seen }
    }
}

fn serve(s: TcpStream, auth_success: Value, tx: Sender<Value>) {
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut hs = tungstenite::accept(s);
    let mut ws = loop {
        match hs {
            Ok(ws) => break ws,
            Err(tungstenite::HandshakeError::Interrupted(mid)) => hs = mid.handshake(),
            Err(tungstenite::HandshakeError::Failure(_)) => return,
        }
    };
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["type"] == "AUTH" {
                    let answer = json!({"type": "AUTH_SUCCESS", "payload": auth_success});
                    ws.send(Message::text(answer.to_string())).unwrap();
                }
                if tx.send(v).is_err() {
                    return;
                }
            }
            Ok(Message::Close(_)) => return,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// The payload of the next message of `kind` within 10 s.
fn next_of(seen: &Receiver<Value>, kind: &str) -> Value {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(v) = seen.recv_timeout(Duration::from_millis(100)) {
            if v["type"] == kind {
                return v["payload"].clone();
            }
        }
    }
    panic!("no {kind}");
}

/// No message of `kind` for a while (real time; the driven clock stands still).
fn none_of(seen: &Receiver<Value>, kind: &str) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(300) {
        if let Ok(v) = seen.recv_timeout(Duration::from_millis(50)) {
            assert_ne!(v["type"], kind, "unexpected {v}");
        }
    }
}

/// One inbound connection thread dialling `port`, its readings from `current`.
struct Inbound {
    inbox: ConnInbox,
    status: SharedConn,
    handle: Option<connection::ConnHandle>,
}

impl Drop for Inbound {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }
}

impl Inbound {
    fn start(port: u16, client_id: &str, current: Arc<Mutex<Arc<Reading>>>) -> Inbound {
        let clock = ManualClock::new();
        let status: SharedConn = Arc::new(RwLock::new(ConnStatus::default()));
        let (inbox, rx) = connection::inbox().unwrap();
        let trigger = reader(inbox.clone(), current);
        let handle = connection::spawn(
            connection::Deps {
                target: Some(Target {
                    base_url: format!("http://127.0.0.1:{port}"),
                    client_id: client_id.into(),
                    token: Secret::new("tok-secret-123".into()),
                    allow_self_signed: false,
                }),
                hostname: "fp-host".into(),
                version: "9.9.9-test".into(),
                clock,
                jitter: Box::new(|| 0.5),
                queue: Arc::new(Mutex::new(Queue::default())),
                trigger,
                status: status.clone(),
            },
            inbox.clone(),
            rx,
        )
        .unwrap();
        Inbound {
            inbox,
            status,
            handle: Some(handle),
        }
    }

    fn wait_connected(&self) {
        let t0 = Instant::now();
        while self.status.read().state != ConnState::Connected {
            assert!(t0.elapsed() < Duration::from_secs(10), "never connected");
            thread::sleep(Duration::from_millis(5));
        }
    }
}

fn fingerprint_of(update: &Value, instance: usize) -> Option<&str> {
    update["instances"][instance]
        .get("authFingerprint")
        .and_then(Value::as_str)
}

#[test]
fn each_server_gets_its_own_fingerprint_and_an_older_server_none() {
    let current = Arc::new(Mutex::new(reading(PASSWORD)));
    let a =
        FakeServer::start(json!({"clientId": "ca", "lastSyncTime": null, "fingerprintKey": KEY_A}));
    let b =
        FakeServer::start(json!({"clientId": "cb", "lastSyncTime": null, "fingerprintKey": KEY_B}));
    // An older server: AUTH_SUCCESS as it always was.
    let old = FakeServer::start(json!({"clientId": "co", "lastSyncTime": null}));
    // A server whose key is not hex: as an older one.
    let odd = FakeServer::start(
        json!({"clientId": "cx", "lastSyncTime": null, "fingerprintKey": "not hex"}),
    );
    let conns: Vec<Inbound> = [(&a, "ca"), (&b, "cb"), (&old, "co"), (&odd, "cx")]
        .iter()
        .map(|(s, id)| Inbound::start(s.port, id, current.clone()))
        .collect();
    for c in &conns {
        c.wait_connected();
    }
    let ua = next_of(&a.seen, "KEEPALIVED_UPDATE");
    let ub = next_of(&b.seen, "KEEPALIVED_UPDATE");
    let uo = next_of(&old.seen, "KEEPALIVED_UPDATE");
    let ux = next_of(&odd.seen, "KEEPALIVED_UPDATE");
    assert_eq!(
        fingerprint_of(&ua, 0),
        Some(fingerprint(PASSWORD, KEY_A).as_str())
    );
    assert_eq!(
        fingerprint_of(&ub, 0),
        Some(fingerprint(PASSWORD, KEY_B).as_str())
    );
    assert_ne!(fingerprint_of(&ua, 0), fingerprint_of(&ub, 0));
    // No password, no fingerprint; no key, no fingerprint.
    assert_eq!(fingerprint_of(&ua, 1), None);
    assert_eq!(fingerprint_of(&uo, 0), None);
    assert_eq!(fingerprint_of(&ux, 0), None);
    // Nothing else differs: the reading is the one reading, the fingerprint is per
    // connection.
    let mut stripped = ua.clone();
    stripped["instances"][0]
        .as_object_mut()
        .unwrap()
        .remove("authFingerprint");
    assert_eq!(stripped, uo);
    assert_eq!(uo, ux);
    assert_eq!(ua["instances"][0]["authType"], "pass");
    assert!(current.lock().instances[0].auth_fingerprint.is_none());
    for u in [&ua, &ub, &uo, &ux] {
        assert!(!u.to_string().contains(PASSWORD), "{u}");
    }

    // The password changes and nothing else: every server gets the reading again, with
    // the fingerprint of the new password under its own key.
    let changed = reading("n3w-pass");
    *current.lock() = changed.clone();
    for c in &conns {
        c.inbox.note(ReadingNote {
            reading: changed.clone(),
            sources: vec![TriggerSource::Poll],
        });
    }
    let ua2 = next_of(&a.seen, "KEEPALIVED_UPDATE");
    assert_eq!(
        fingerprint_of(&ua2, 0),
        Some(fingerprint("n3w-pass", KEY_A).as_str())
    );
    let ub2 = next_of(&b.seen, "KEEPALIVED_UPDATE");
    assert_eq!(
        fingerprint_of(&ub2, 0),
        Some(fingerprint("n3w-pass", KEY_B).as_str())
    );
    // A server without a key sees the same changed reading: the change is in the
    // reading, not in the fingerprint.
    let uo2 = next_of(&old.seen, "KEEPALIVED_UPDATE");
    assert_eq!(uo2, uo);
    // The same reading once more: unchanged, so not sent before its 30 s.
    for c in &conns {
        c.inbox.note(ReadingNote {
            reading: changed.clone(),
            sources: vec![TriggerSource::Poll],
        });
    }
    none_of(&a.seen, "KEEPALIVED_UPDATE");
}

const TOKEN: &str = "fingerprint-outbound-token-0123456789";

/// Outbound: the agent's web server (its `/ws/agent`) and its connection thread.
struct Outbound {
    port: u16,
    status: SharedConn,
    web: Option<web::WebHandle>,
    conn: Option<connection::ConnHandle>,
    _dir: tempfile::TempDir,
}

impl Drop for Outbound {
    fn drop(&mut self) {
        if let Some(w) = self.web.take() {
            w.stop();
        }
        if let Some(c) = self.conn.take() {
            c.stop();
        }
    }
}

impl Outbound {
    fn start(current: Arc<Mutex<Arc<Reading>>>) -> Outbound {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let env = [
            ("SVC_CLIENT_PORT".to_string(), port.to_string()),
            (
                "SVC_CLIENT_DATA_DIR".to_string(),
                dir.path().join("data").display().to_string(),
            ),
        ]
        .into_iter()
        .collect();
        let cfg = Arc::new(config::load(&env, None, dir.path()).unwrap().config);
        let data = DataDir::open(&cfg.data_dir).unwrap();
        let clock = ManualClock::new();
        let (inbox, rx) = connection::inbox().unwrap();
        let trigger = reader(inbox.clone(), current);
        let status: SharedConn = Arc::new(RwLock::new(ConnStatus::default()));
        let reg = Arc::new(RegShared::new(
            None,
            false,
            Some(Identity {
                client_id: "c1".into(),
                auth_token: TOKEN.into(),
            }),
            None,
            None,
            PinBlock {
                scheme: "http",
                port,
                outbound_hint: true,
            },
        ));
        let web = web::start(
            web::WebState {
                routes: web::Routes {
                    status_page: false,
                    register_page: false,
                    register_configured: false,
                    notify: false,
                    health: false,
                    outbound: true,
                },
                config: cfg,
                mode: Mode::derive(true, false),
                status: Arc::new(RwLock::new(KeepalivedStatus::default())),
                trigger: trigger.clone(),
                reg,
                conns: connection::Slots::one(inbox.clone(), status.clone()),
                dir: data,
                hostname: "fp-host".into(),
                version: "9.9.9-test".into(),
                clock: clock.clone(),
                queue: vrrp_agent::store::queue::ActivityQueue::new(
                    Queue::default(),
                    vrrp_agent::store::persist::channel().0,
                ),
                save_status: Arc::new(Mutex::new(None)),
            },
            &web::Bind::LoopbackOnly(port),
            None,
        )
        .unwrap_or_else(|_| panic!("web server did not start"))
        .unwrap();
        let conn = connection::spawn(
            connection::Deps {
                target: None,
                hostname: "fp-host".into(),
                version: "9.9.9-test".into(),
                clock,
                jitter: Box::new(|| 0.0),
                queue: Arc::new(Mutex::new(Queue::default())),
                trigger,
                status: status.clone(),
            },
            inbox,
            rx,
        )
        .unwrap();
        Outbound {
            port,
            status,
            web: Some(web),
            conn: Some(conn),
            _dir: dir,
        }
    }

    /// Dials `/ws/agent` as the server does, answers AUTH with `auth_success`, and
    /// gives the first KEEPALIVED_UPDATE.
    fn session(&self, auth_success: Value) -> (WebSocket<TcpStream>, Value) {
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let url = format!(
            "ws://127.0.0.1:{}/ws/agent?clientId=c1&token={TOKEN}",
            self.port
        );
        let mut hs = tungstenite::client::client(url, tcp);
        let mut ws = loop {
            match hs {
                Ok((ws, _)) => break ws,
                Err(tungstenite::HandshakeError::Interrupted(mid)) => hs = mid.handshake(),
                Err(e) => panic!("handshake: {e}"),
            }
        };
        let t0 = Instant::now();
        let mut update = None;
        while update.is_none() {
            assert!(t0.elapsed() < Duration::from_secs(10), "no reading");
            match ws.read() {
                Ok(Message::Text(t)) => {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    if v["type"] == "AUTH" {
                        let answer = json!({"type": "AUTH_SUCCESS", "payload": auth_success});
                        ws.send(Message::text(answer.to_string())).unwrap();
                    }
                    if v["type"] == "KEEPALIVED_UPDATE" {
                        update = Some(v["payload"].clone());
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("socket failed: {e}"),
            }
        }
        let t0 = Instant::now();
        while self.status.read().state != ConnState::Connected {
            assert!(t0.elapsed() < Duration::from_secs(10), "never connected");
            thread::sleep(Duration::from_millis(5));
        }
        (ws, update.unwrap_or_default())
    }
}

#[test]
fn outbound_the_server_that_dialled_gets_the_fingerprint_under_its_key() {
    let current = Arc::new(Mutex::new(reading(PASSWORD)));
    let agent = Outbound::start(current);
    let (mut ws, keyed) = agent.session(json!({"clientId": "c1", "fingerprintKey": KEY_A}));
    assert_eq!(
        fingerprint_of(&keyed, 0),
        Some(fingerprint(PASSWORD, KEY_A).as_str())
    );
    assert_eq!(fingerprint_of(&keyed, 1), None);
    assert!(!keyed.to_string().contains(PASSWORD));
    let _ = ws.close(None);
    // The server dials again, now as an older server: the next session has no key.
    let (_ws, plain) = agent.session(json!({"clientId": "c1"}));
    assert_eq!(fingerprint_of(&plain, 0), None);
    let mut stripped = keyed;
    stripped["instances"][0]
        .as_object_mut()
        .unwrap()
        .remove("authFingerprint");
    assert_eq!(stripped, plain);
}
