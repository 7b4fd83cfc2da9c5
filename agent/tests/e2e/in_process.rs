//! What the in-process connection tests share: the agent's real connection thread
//! (inbound, dialling a server) and its real web server with the connection thread
//! (outbound, dialled on `/ws/agent`), both on a `ManualClock` with a stand-in for the
//! reader; a fake server that speaks the real protocol over a real socket (and can
//! misbehave as the real server cannot); and the reads of a test that plays the
//! server on a socket it dialled.

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
use vrrp_agent::reader::{KeepalivedStatus, ReaderMsg, ReadingNote, Trigger};
use vrrp_agent::registration::pin;
use vrrp_agent::registration::{PinBlock, RegShared};
use vrrp_agent::store::datadir::{DataDir, Identity};
use vrrp_agent::store::queue::Queue;
use vrrp_agent::web;
use vrrp_protocol::Reading;
use vrrp_test_support::{io_timed_out, ws_timed_out};

/// A stand-in for the reader thread: every trigger is answered at once with the
/// reading `next` gives.
pub fn reader(
    inbox: ConnInbox,
    mut next: impl FnMut() -> Arc<Reading> + Send + 'static,
) -> Trigger {
    let (tx, rx) = crossbeam_channel::unbounded::<ReaderMsg>();
    thread::spawn(move || {
        while let Ok(m) = rx.recv() {
            if let ReaderMsg::Read { source, .. } = m {
                inbox.note(ReadingNote {
                    reading: next(),
                    sources: vec![source],
                    actions: Vec::new(),
                });
            }
        }
    });
    Trigger::from_sender(tx)
}

/// Waits (real time, at most 10 s) until the connection's state is `s`.
pub fn wait_state(status: &SharedConn, s: ConnState) -> ConnStatus {
    let t0 = Instant::now();
    loop {
        let st = status.read().clone();
        if st.state == s {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "never {s:?}: {st:?}"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// Where an inbound connection dials: `base_url` as `client_id` with the token
/// `tok-secret-123`.
pub fn target(base_url: &str, client_id: &str, allow_self_signed: bool) -> Target {
    Target {
        base_url: base_url.to_string(),
        client_id: client_id.into(),
        token: Secret::new("tok-secret-123".into()),
        allow_self_signed,
    }
}

/// Inbound: one connection thread dialling its target.
pub struct Inbound {
    pub clock: Arc<ManualClock>,
    pub inbox: ConnInbox,
    pub status: SharedConn,
    pub queue: Arc<Mutex<Queue>>,
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
    /// The connection thread on the driven `clock` with a fixed jitter of 0.5 (1.5 s),
    /// `queue` as its activity queue, and a stand-in reader answering every trigger
    /// with `readings()`.
    pub fn start(
        clock: Arc<ManualClock>,
        target: Target,
        hostname: &str,
        queue: Queue,
        readings: impl FnMut() -> Arc<Reading> + Send + 'static,
    ) -> Inbound {
        let queue = Arc::new(Mutex::new(queue));
        let status: SharedConn = Arc::new(RwLock::new(ConnStatus::default()));
        let (inbox, rx) = connection::inbox().unwrap();
        let trigger = reader(inbox.clone(), readings);
        let handle = connection::spawn(
            connection::Deps {
                target: Some(target),
                hostname: hostname.into(),
                version: "9.9.9-test".into(),
                clock: clock.clone(),
                jitter: Box::new(|| 0.5),
                queue: queue.clone(),
                trigger,
                status: status.clone(),
            },
            inbox.clone(),
            rx,
        )
        .unwrap();
        Inbound {
            clock,
            inbox,
            status,
            queue,
            handle: Some(handle),
        }
    }

    pub fn wait_state(&self, s: ConnState) -> ConnStatus {
        wait_state(&self.status, s)
    }
}

/// Outbound: the agent's web server (outbound routes only, on a free port) and its
/// connection thread, on one driven clock.
pub struct Outbound {
    pub port: u16,
    pub clock: Arc<ManualClock>,
    pub status: SharedConn,
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
    /// Registered as `identity` (or waiting for registration with a fresh PIN without
    /// one), introducing itself as `hostname`; a stand-in reader answers every trigger
    /// with `readings()`.
    pub fn start(
        hostname: &str,
        identity: Option<Identity>,
        readings: impl FnMut() -> Arc<Reading> + Send + 'static,
    ) -> Outbound {
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
        let clock = std::sync::Arc::new(ManualClock::starting_now());
        let (inbox, rx) = connection::inbox().unwrap();
        let trigger = reader(inbox.clone(), readings);
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
                hostname: hostname.into(),
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
                hostname: hostname.into(),
                version: "9.9.9-test".into(),
                clock: clock.clone(),
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
            clock,
            status,
            web: Some(web),
            conn: Some(conn),
            _dir: dir,
        }
    }

    /// Dials `path` on the agent's web server as the server does.
    pub fn dial(&self, path: &str) -> WebSocket<TcpStream> {
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

    pub fn wait_state(&self, s: ConnState) -> ConnStatus {
        wait_state(&self.status, s)
    }
}

/// What a socket the test dialled brought.
#[derive(Debug, PartialEq)]
pub enum Got {
    Msg(String, Value),
    Close(u16, String),
    Nothing,
}

/// What arrives within `within` of real time.
pub fn next(ws: &mut WebSocket<TcpStream>, within: Duration) -> Got {
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
            Err(e) if ws_timed_out(&e) => {}
            Err(e) => panic!("socket failed: {e}"),
        }
    }
    Got::Nothing
}

pub fn send(ws: &mut WebSocket<TcpStream>, kind: &str, payload: Value) {
    ws.send(Message::text(
        json!({ "type": kind, "payload": payload }).to_string(),
    ))
    .unwrap();
}

#[derive(Clone, Copy, PartialEq)]
pub enum FakeMode {
    /// Accepts TCP and never answers the upgrade.
    Silent,
    /// Upgrades, answers AUTH with AUTH_SUCCESS, never pings on its own.
    Auth,
}

/// What the fake server saw, in order.
#[derive(Debug)]
pub enum Seen {
    Accepted,
    Uri(String),
    Msg(Value),
    Pong,
}

/// A server for the inbound connection thread to dial.
pub struct FakeServer {
    pub port: u16,
    seen: Receiver<Seen>,
    /// Seen while waiting for a pong, handed out by `next` first.
    kept: Mutex<std::collections::VecDeque<Seen>>,
    /// Frames to send on the current connection.
    out: Arc<Mutex<Option<Sender<Message>>>>,
}

impl FakeServer {
    pub fn start(mode: FakeMode) -> FakeServer {
        FakeServer::start_with(mode, None)
    }

    /// With `tls`, every connection is a TLS server (rustls) before the upgrade.
    pub fn start_with(mode: FakeMode, tls: Option<Arc<rustls::ServerConfig>>) -> FakeServer {
        FakeServer::spawn("127.0.0.1", mode, tls, FakeServer::auth_success())
    }

    /// Answers AUTH with an AUTH_SUCCESS whose payload is `auth_success`.
    pub fn answering(auth_success: Value) -> FakeServer {
        FakeServer::spawn("127.0.0.1", FakeMode::Auth, None, auth_success)
    }

    /// Listens on `address` (a free port of it) rather than loopback: a lab host
    /// reaches the switch namespace's 203.0.113.254.
    pub fn start_on(address: &str, mode: FakeMode) -> FakeServer {
        FakeServer::spawn(address, mode, None, FakeServer::auth_success())
    }

    fn auth_success() -> Value {
        json!({"clientId": "c1", "lastSyncTime": null})
    }

    fn spawn(
        address: &str,
        mode: FakeMode,
        tls: Option<Arc<rustls::ServerConfig>>,
        auth_success: Value,
    ) -> FakeServer {
        let l = TcpListener::bind((address, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(mode));
        let (tx, seen) = crossbeam_channel::unbounded();
        let out = Arc::new(Mutex::new(None));
        let (m, o) = (mode.clone(), out.clone());
        thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                let _ = tx.send(Seen::Accepted);
                let (mode, tx, o) = (*m.lock(), tx.clone(), o.clone());
                let auth_success = auth_success.clone();
                s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                match &tls {
                    None => {
                        thread::spawn(move || serve(s, mode, auth_success, tx, o));
                    }
                    Some(cfg) => {
                        let conn = rustls::ServerConnection::new(cfg.clone()).unwrap();
                        let s = rustls::StreamOwned::new(conn, s);
                        thread::spawn(move || serve(s, mode, auth_success, tx, o));
                    }
                }
            }
        });
        FakeServer {
            port,
            seen,
            kept: Mutex::default(),
            out,
        }
    }

    pub fn next(&self, within: Duration) -> Option<Seen> {
        if let Some(s) = self.kept.lock().pop_front() {
            return Some(s);
        }
        self.seen.recv_timeout(within).ok()
    }

    /// The payload of the next event that is a message of `kind` (within 10 s).
    pub fn msg(&self, kind: &str) -> Value {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            match self.next(Duration::from_millis(100)) {
                Some(Seen::Msg(v)) if v["type"] == kind => return v["payload"].clone(),
                Some(other) => {
                    eprintln!("fake server, skipped while waiting for {kind}: {other:?}")
                }
                None => {}
            }
        }
        panic!("no {kind} at the fake server");
    }

    /// No message of `kind` for a while (real time; the driven clock stands still).
    pub fn expect_no_msg(&self, kind: &str) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(300) {
            if let Some(Seen::Msg(v)) = self.next(Duration::from_millis(50)) {
                assert_ne!(v["type"], kind, "unexpected {v}");
            }
        }
    }

    pub fn expect_accept(&self) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Some(Seen::Accepted) = self.next(Duration::from_millis(100)) {
                return;
            }
        }
        panic!("the agent did not dial");
    }

    /// Nothing dialled for a while (real time, far below any spec interval).
    pub fn expect_no_accept(&self) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(300) {
            if let Some(Seen::Accepted) = self.next(Duration::from_millis(50)) {
                panic!("the agent dialled too early");
            }
        }
    }

    /// A ping frame, and its pong back (so the agent has seen it at the current time).
    pub fn ping(&self) {
        self.send(Message::Ping(vec![1].into()));
        let t0 = Instant::now();
        loop {
            // Only the channel: what arrives meanwhile is kept for later.
            match self.seen.recv_timeout(Duration::from_millis(100)) {
                Ok(Seen::Pong) => return,
                Ok(other) => self.kept.lock().push_back(other),
                Err(_) => {}
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no pong");
        }
    }

    pub fn send(&self, m: Message) {
        self.out.lock().as_ref().unwrap().send(m).unwrap();
    }
}

#[allow(clippy::result_large_err)] // tungstenite's callback signature
fn serve<S: std::io::Read + std::io::Write>(
    s: S,
    mode: FakeMode,
    auth_success: Value,
    tx: Sender<Seen>,
    out: Arc<Mutex<Option<Sender<Message>>>>,
) {
    if mode == FakeMode::Silent {
        // Hold the socket open without a word until the agent gives up.
        let mut buf = [0u8; 1024];
        let mut s = s;
        loop {
            match s.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if io_timed_out(&e) => {}
                Err(_) => return,
            }
        }
    }
    let uri = Arc::new(Mutex::new(String::new()));
    let u = uri.clone();
    let cb = move |req: &tungstenite::handshake::server::Request,
                   resp: tungstenite::handshake::server::Response| {
        *u.lock() = req.uri().to_string();
        Ok(resp)
    };
    let mut hs = tungstenite::accept_hdr(s, cb);
    let mut ws = loop {
        match hs {
            Ok(ws) => break ws,
            Err(tungstenite::HandshakeError::Interrupted(mid)) => hs = mid.handshake(),
            Err(tungstenite::HandshakeError::Failure(_)) => return,
        }
    };
    let _ = tx.send(Seen::Uri(uri.lock().clone()));
    let (otx, orx) = crossbeam_channel::unbounded();
    *out.lock() = Some(otx);
    loop {
        for m in orx.try_iter() {
            if ws.send(m).is_err() {
                return;
            }
        }
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["type"] == "AUTH" {
                    let answer = json!({"type": "AUTH_SUCCESS", "payload": auth_success});
                    ws.send(Message::text(answer.to_string())).unwrap();
                }
                let _ = tx.send(Seen::Msg(v));
            }
            Ok(Message::Pong(_)) => {
                let _ = tx.send(Seen::Pong);
            }
            Ok(Message::Close(_)) => return,
            Ok(_) => {}
            Err(e) if ws_timed_out(&e) => {}
            Err(_) => return,
        }
    }
}
