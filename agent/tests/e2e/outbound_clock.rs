//! Outbound mode's timing on a driven clock: the agent's real web server and real
//! connection thread run in-process on a `ManualClock`, and the test dials them over
//! real WebSockets as the server would. Nothing here sleeps for a spec interval: the
//! clock is advanced and the threads notice on their next short tick.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};
use vrrp_agent::clock::ManualClock;
use vrrp_agent::config::{self, Mode};
use vrrp_agent::connection::outbound;
use vrrp_agent::connection::{self, ConnState, ConnStatus, SharedConn};
use vrrp_agent::reader::{KeepalivedStatus, ReaderMsg, ReadingNote, Trigger};
use vrrp_agent::registration::pin;
use vrrp_agent::registration::{PinBlock, RegShared};
use vrrp_agent::store::datadir::{DataDir, Identity};
use vrrp_agent::store::queue::Queue;
use vrrp_agent::web;
use vrrp_protocol::Reading;

const TOKEN: &str = "driven-clock-token-0123456789abcdef";

struct Rig {
    port: u16,
    clock: Arc<ManualClock>,
    status: SharedConn,
    web: Option<web::WebHandle>,
    conn: Option<connection::ConnHandle>,
    _dir: tempfile::TempDir,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(w) = self.web.take() {
            w.stop();
        }
        if let Some(c) = self.conn.take() {
            c.stop();
        }
    }
}

impl Rig {
    /// The web server (outbound routes only) and the connection thread on one driven
    /// clock; a stand-in reader answers every trigger with a reading at once.
    fn start(identity: Option<Identity>) -> Rig {
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
        let (ttx, trx) = crossbeam_channel::unbounded::<ReaderMsg>();
        let notes = inbox.clone();
        let stamp = Arc::new(Mutex::new(0u64));
        thread::spawn(move || {
            while let Ok(m) = trx.recv() {
                if let ReaderMsg::Read { source, .. } = m {
                    let n = {
                        let mut s = stamp.lock();
                        *s += 1;
                        *s
                    };
                    notes.note(ReadingNote {
                        reading: Arc::new(Reading {
                            collected_at: format!("reading-{n}"),
                            ..Default::default()
                        }),
                        sources: vec![source],
                    });
                }
            }
        });
        let trigger = Trigger::from_sender(ttx);
        let status: SharedConn = Arc::new(RwLock::new(ConnStatus::default()));
        let mode = Mode::derive(identity.is_some(), false);
        let reg = Arc::new(RegShared::new(
            identity
                .is_none()
                .then(|| pin::Pin::generate(&mut rand::thread_rng())),
            false,
            identity,
            None,
            None,
            PinBlock {
                scheme: "http",
                port,
                outbound_hint: true,
            },
        ));
        let routes = web::Routes {
            status_page: false,
            register_page: false,
            register_configured: false,
            notify: false,
            health: false,
            outbound: true,
        };
        let web = web::start(
            web::WebState {
                routes,
                config: cfg,
                mode,
                status: Arc::new(RwLock::new(KeepalivedStatus::default())),
                trigger: trigger.clone(),
                reg,
                conns: connection::Slots::one(inbox.clone(), status.clone()),
                dir: data,
                hostname: "clock-host".into(),
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
                hostname: "clock-host".into(),
                version: "9.9.9-test".into(),
                clock: clock.clone(),
                jitter: Box::new(|| 0.0),
                queue: Arc::new(parking_lot::Mutex::new(Queue::default())),
                trigger,
                status: status.clone(),
            },
            inbox,
            rx,
        )
        .unwrap();
        Rig {
            port,
            clock,
            status,
            web: Some(web),
            conn: Some(conn),
            _dir: dir,
        }
    }

    fn dial(&self, path: &str) -> WebSocket<TcpStream> {
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        // Short reads, so the test can tell "nothing yet" from "closed".
        tcp.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let url = format!("ws://127.0.0.1:{}{path}", self.port);
        let mut hs = tungstenite::client::client(url, tcp);
        loop {
            match hs {
                Ok((ws, _)) => return ws,
                Err(tungstenite::HandshakeError::Interrupted(mid)) => hs = mid.handshake(),
                Err(e) => panic!("handshake: {e}"),
            }
        }
    }

    fn wait_state(&self, s: ConnState) {
        let t0 = Instant::now();
        while self.status.read().state != s {
            assert!(t0.elapsed() < Duration::from_secs(10), "never {s:?}");
            thread::sleep(Duration::from_millis(5));
        }
    }
}

#[derive(Debug, PartialEq)]
enum Got {
    Msg(String, Value),
    Close(u16, String),
    Nothing,
}

/// What arrives within `within` of real time.
fn next(ws: &mut WebSocket<TcpStream>, within: Duration) -> Got {
    let t0 = Instant::now();
    while t0.elapsed() < within {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                return Got::Msg(v["type"].as_str().unwrap().into(), v["payload"].clone());
            }
            Ok(Message::Close(Some(f))) => return Got::Close(f.code.into(), f.reason.to_string()),
            Ok(Message::Close(None)) => return Got::Close(1005, String::new()),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("socket failed: {e}"),
        }
    }
    Got::Nothing
}

fn send(ws: &mut WebSocket<TcpStream>, kind: &str, payload: Value) {
    ws.send(Message::text(
        json!({ "type": kind, "payload": payload }).to_string(),
    ))
    .unwrap();
}

#[test]
fn registration_times_out_after_10_s_of_the_agents_clock() {
    let rig = Rig::start(None);
    // The timeout starts before the upgrade is answered, so advancing right after the
    // dial counts in full.
    let mut ws = rig.dial("/ws/register");
    // Real time passes, the driven clock does not: nothing happens.
    assert_eq!(next(&mut ws, Duration::from_millis(300)), Got::Nothing);
    rig.clock
        .advance(outbound::REGISTRATION_TIMEOUT - Duration::from_millis(100));
    assert_eq!(next(&mut ws, Duration::from_millis(300)), Got::Nothing);
    rig.clock.advance(Duration::from_millis(100));
    assert_eq!(
        next(&mut ws, Duration::from_secs(5)),
        Got::Close(4001, "Registration timed out".into())
    );
    assert_eq!(outbound::REGISTRATION_TIMEOUT, Duration::from_secs(10));
}

#[test]
fn server_session_needs_auth_success_in_5_s_then_runs_with_the_ping_deadline() {
    let rig = Rig::start(Some(Identity {
        client_id: "c1".into(),
        auth_token: TOKEN.into(),
    }));
    let path = format!("/ws/agent?clientId=c1&token={TOKEN}");

    // AUTH goes out first; without AUTH_SUCCESS within 5 s the socket is closed and
    // no session starts.
    let mut ws = rig.dial(&path);
    let Got::Msg(k, auth) = next(&mut ws, Duration::from_secs(5)) else {
        panic!("no AUTH")
    };
    assert_eq!(k, "AUTH");
    assert_eq!(
        auth,
        json!({ "hostname": "clock-host", "version": "9.9.9-test", "capabilities": ["vrrp"] })
    );
    rig.clock.advance(Duration::from_millis(4900));
    assert_eq!(next(&mut ws, Duration::from_millis(300)), Got::Nothing);
    rig.clock.advance(Duration::from_millis(100));
    assert!(matches!(
        next(&mut ws, Duration::from_secs(5)),
        Got::Close(1000, _)
    ));
    assert_eq!(rig.status.read().state, ConnState::Disconnected);

    // With AUTH_SUCCESS the connection thread runs the session: a reading at once,
    // another on REQUEST_STATE_UPDATE.
    let mut ws = rig.dial(&path);
    assert!(matches!(next(&mut ws, Duration::from_secs(5)), Got::Msg(k, _) if k == "AUTH"));
    send(&mut ws, "AUTH_SUCCESS", json!({ "clientId": "c1" }));
    let Got::Msg(k, r1) = next(&mut ws, Duration::from_secs(5)) else {
        panic!("no reading")
    };
    assert_eq!(k, "KEEPALIVED_UPDATE");
    rig.wait_state(ConnState::Connected);
    send(&mut ws, "REQUEST_STATE_UPDATE", json!({}));
    let Got::Msg(k, r2) = next(&mut ws, Duration::from_secs(5)) else {
        panic!("no second reading")
    };
    assert_eq!(k, "KEEPALIVED_UPDATE");
    assert_ne!(r1["collectedAt"], r2["collectedAt"]);

    // No ping within 35 s of the agent's clock: the agent ends the session.
    rig.clock.advance(Duration::from_secs(20));
    ws.send(Message::Ping(Vec::new().into())).unwrap();
    // The pong says the agent took the ping at 20 s of its clock.
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(5), "no pong");
        match ws.read() {
            Ok(Message::Pong(_)) => break,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("socket failed: {e}"),
        }
    }
    rig.clock.advance(Duration::from_secs(20));
    // The ping at 20 s keeps it alive past 35 s ...
    loop {
        match next(&mut ws, Duration::from_millis(300)) {
            Got::Msg(k, _) => assert_eq!(k, "KEEPALIVED_UPDATE"),
            Got::Nothing => break,
            Got::Close(c, r) => panic!("closed early: {c} {r}"),
        }
    }
    // ... until 35 s after it.
    rig.clock.advance(Duration::from_secs(15));
    loop {
        match next(&mut ws, Duration::from_secs(5)) {
            Got::Msg(k, _) => assert_eq!(k, "KEEPALIVED_UPDATE"),
            Got::Close(..) => break,
            Got::Nothing => panic!("not closed after 35 s without a ping"),
        }
    }
    rig.wait_state(ConnState::Disconnected);
}
