//! The connection to the server: in inbound mode the `connection` thread dials
//! `/ws/agent` on the server, authenticates, runs a `Session`, and owns the one reconnect
//! timer; in outbound mode it runs the same `Session` on the socket the server dialled
//! (handed over authenticated by the web server as `ConnMsg::Accepted`).
//!
//! One thread, one socket, one timer: a manual connect (`POST /api/connect`) replaces a
//! queued attempt instead of adding one, callers arriving during a handshake wait for
//! that handshake, and since no second socket ever exists, no superseded socket can
//! schedule a reconnect. Nothing is dialled until both halves of the identity are known.
//! A newer server socket replaces the current one (closed with 4000).
//!
//! An agent registered with more than one server runs one such thread per
//! server slot (`connection` for the first, `connection-2`.. for the others), each with
//! its own socket, ladder and status, and its own position in the one activity queue
//! (keyed by the client id its server issued). `Slots` reaches them all: every reading
//! goes to each, so a server that is down holds no other back. Each connection keeps
//! the fingerprint key its server sent in AUTH_SUCCESS (`fingerprint`) for its
//! session only: a reading's password fingerprints are made per server, as the reading
//! goes out, and never stored. During a session the socket is non-blocking and the
//! thread sleeps in poll(2) on the socket and a wake pipe, so a reading (and its
//! events) goes out as soon as it exists.

pub mod dial;
pub mod fingerprint;
pub mod outbound;
pub mod session;

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use parking_lot::RwLock;
use serde_json::{json, Value};
use tungstenite::Message;

use crate::clock::SharedClock;
use crate::reader::{ReadingNote, Trigger};
pub use dial::Target;
use session::{Action, Ctx, QueueView, Session};
use vrrp_protocol::ladder::Ladder;
use vrrp_protocol::wake::{Waker, Wakeup};

/// The handshake (TCP, TLS, upgrade, AUTH → AUTH_SUCCESS) must finish within this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnState {
    #[default]
    Disconnected,
    Connecting,
    Connected,
}

impl ConnState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnState::Disconnected => "disconnected",
            ConnState::Connecting => "connecting",
            ConnState::Connected => "connected",
        }
    }
}

/// What the status routes show. Never holds a secret.
#[derive(Debug, Default, Clone)]
pub struct ConnStatus {
    pub state: ConnState,
    pub has_target: bool,
    pub attempts: u64,
    pub last_error: Option<String>,
    pub next_attempt: Option<Instant>,
    pub connected_since: Option<String>,
}

pub type SharedConn = Arc<RwLock<ConnStatus>>;

/// The answer to a `POST /api/connect`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectResult {
    pub connected: bool,
    pub error: Option<String>,
}

impl ConnectResult {
    pub fn to_json(&self) -> Value {
        json!({ "connected": self.connected, "error": self.error })
    }
}

pub enum ConnMsg {
    /// Connect now (or report the connection that exists); answered when the attempt ends.
    Connect(Sender<ConnectResult>),
    /// A registration stored an identity: dial it at once.
    SetTarget(Target),
    /// Outbound: the server dialled `/ws/agent` and the AUTH exchange is done; this
    /// socket replaces any current one.
    Accepted(Box<Incoming>),
    Stop,
}

/// A server socket from the web server, authenticated (AUTH sent, AUTH_SUCCESS read).
pub struct Incoming {
    pub ws: dial::Socket,
    pub peer: std::net::SocketAddr,
    /// The client id the server presented (checked): its queue position.
    pub client_id: String,
    /// The key of the server's AUTH_SUCCESS, if it sent one.
    pub fingerprint_key: Option<fingerprint::FingerprintKey>,
}

/// One connection thread's inbox and status.
#[derive(Clone)]
pub struct Slot {
    pub inbox: ConnInbox,
    pub status: SharedConn,
}

/// Every connection thread, by server slot (slot 0: the first server, identity.json).
#[derive(Clone)]
pub struct Slots(Arc<Vec<Slot>>);

impl Slots {
    pub fn new(slots: Vec<Slot>) -> Slots {
        Slots(Arc::new(slots))
    }

    /// A one-server agent.
    pub fn one(inbox: ConnInbox, status: SharedConn) -> Slots {
        Slots::new(vec![Slot { inbox, status }])
    }

    pub fn get(&self, slot: usize) -> Option<&Slot> {
        self.0.get(slot)
    }

    pub fn first(&self) -> &Slot {
        // `Slots` is never built empty (lifecycle makes at least one).
        &self.0[0]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.0.iter()
    }

    /// The reader's observer: every reading goes to every server's connection.
    pub fn note(&self, n: ReadingNote) {
        for s in self.0.iter() {
            s.inbox.note(n.clone());
        }
    }

    /// `POST /api/connect` for every server the agent dials: asked at once, answered
    /// together; connected when all are, the first error otherwise.
    pub fn connect(&self, timeout: Duration) -> ConnectResult {
        let waits: Vec<_> = self
            .0
            .iter()
            .filter(|s| s.status.read().has_target)
            .map(|s| {
                let (tx, rx) = crossbeam_channel::bounded(1);
                s.inbox.send(ConnMsg::Connect(tx));
                rx
            })
            .collect();
        let deadline = Instant::now() + timeout;
        let mut out = ConnectResult {
            connected: !waits.is_empty(),
            error: None,
        };
        for rx in waits {
            let r = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or(ConnectResult {
                    connected: false,
                    error: Some("no answer from the connection in time".into()),
                });
            out.connected &= r.connected;
            if out.error.is_none() {
                out.error = r.error;
            }
        }
        out
    }
}

/// Closes a socket with a code and text (best effort; the peer may be gone).
pub fn close_with(ws: &mut dial::Socket, code: u16, reason: &str) {
    let _ = ws.close(Some(tungstenite::protocol::CloseFrame {
        code: tungstenite::protocol::frame::coding::CloseCode::from(code),
        reason: reason.to_string().into(),
    }));
    let _ = ws.flush();
}

/// How other parts reach the connection thread.
#[derive(Clone)]
pub struct ConnInbox {
    tx: Sender<ConnMsg>,
    notes: Sender<ReadingNote>,
    waker: Waker,
}

impl ConnInbox {
    pub fn send(&self, m: ConnMsg) {
        let _ = self.tx.send(m);
        self.waker.wake();
    }

    /// The reader's observer: every reading goes to the connection.
    pub fn note(&self, n: ReadingNote) {
        let _ = self.notes.send(n);
        self.waker.wake();
    }

    /// `POST /api/connect`: waits for the attempt (a handshake is at most 5 s).
    pub fn connect(&self, timeout: Duration) -> ConnectResult {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(ConnMsg::Connect(tx));
        rx.recv_timeout(timeout).unwrap_or(ConnectResult {
            connected: false,
            error: Some("no answer from the connection in time".into()),
        })
    }
}

/// Everything the thread needs.
pub struct Deps {
    pub target: Option<Target>,
    pub hostname: String,
    pub version: String,
    pub clock: SharedClock,
    /// Jitter fraction in [0, 1) for the ladder.
    pub jitter: Box<dyn FnMut() -> f64 + Send>,
    pub queue: Arc<dyn QueueView + Send + Sync>,
    pub trigger: Trigger,
    pub status: SharedConn,
}

pub struct ConnHandle {
    pub inbox: ConnInbox,
    thread: thread::JoinHandle<()>,
}

impl ConnHandle {
    pub fn stop(self) {
        self.inbox.send(ConnMsg::Stop);
        let _ = self.thread.join();
    }
}

/// Creates the inbox first (the reader and the web server need it before the thread runs).
pub fn inbox() -> io::Result<(ConnInbox, Inbox)> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (ntx, nrx) = crossbeam_channel::unbounded();
    let (waker, wake) = vrrp_protocol::wake::pair()?;
    Ok((
        ConnInbox {
            tx,
            notes: ntx,
            waker,
        },
        Inbox {
            rx,
            notes: nrx,
            wake,
        },
    ))
}

/// The receiving side, moved into the thread.
pub struct Inbox {
    rx: Receiver<ConnMsg>,
    notes: Receiver<ReadingNote>,
    wake: Wakeup,
}

impl Inbox {
    fn drain_wake(&self) {
        self.wake.clear();
    }
}

pub fn spawn(deps: Deps, inbox: ConnInbox, rx: Inbox) -> io::Result<ConnHandle> {
    spawn_slot(0, deps, inbox, rx)
}

/// The thread of one server slot: `connection` for the first (its name from before agents
/// had several servers), `connection-<n>` for server n.
pub fn spawn_slot(slot: usize, deps: Deps, inbox: ConnInbox, rx: Inbox) -> io::Result<ConnHandle> {
    let name = if slot == 0 {
        "connection".to_string()
    } else {
        format!("connection-{}", slot + 1)
    };
    let guard_name = name.clone();
    let thread = thread::Builder::new()
        .name(name)
        .spawn(move || crate::fatal::guard(&guard_name, || Conn::new(deps).run(rx)))?;
    Ok(ConnHandle { inbox, thread })
}

enum End {
    Stop,
    Closed(String),
    /// A newer server socket took over (outbound).
    Replaced(Box<Incoming>),
}

struct Conn {
    d: Deps,
    ladder: Ladder,
    waiters: Vec<Sender<ConnectResult>>,
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

impl Conn {
    fn new(d: Deps) -> Conn {
        Conn {
            d,
            ladder: Ladder::default(),
            waiters: Vec::new(),
        }
    }

    fn answer(&mut self, r: ConnectResult) {
        for w in self.waiters.drain(..) {
            let _ = w.send(r.clone());
        }
    }

    fn set_state(&self, state: ConnState, next: Option<Instant>, err: Option<String>) {
        let mut st = self.d.status.write();
        st.state = state;
        st.next_attempt = next;
        st.has_target = self.d.target.is_some();
        if err.is_some() {
            st.last_error = err;
        }
        st.connected_since = (state == ConnState::Connected).then(|| {
            self.d
                .clock
                .utc()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        });
    }

    fn run(mut self, inbox: Inbox) {
        // Connect at start when the identity is complete.
        let mut next = self.d.target.as_ref().map(|_| self.d.clock.now());
        self.set_state(ConnState::Disconnected, next, None);
        loop {
            let now = self.d.clock.now();
            if let (Some(at), Some(target)) = (next, self.d.target.clone()) {
                if now >= at {
                    match self.attempt(&target, &inbox) {
                        Some(End::Stop) => return,
                        Some(End::Closed(why)) => {
                            log::warn!("Connection to the server lost: {why}");
                        }
                        Some(End::Replaced(_)) | None => {}
                    }
                    let d = self.ladder.next_delay((self.d.jitter)());
                    let at = self.d.clock.now() + d;
                    next = Some(at);
                    self.set_state(ConnState::Disconnected, next, None);
                    log::info!("Next connection attempt in {:.1} s", d.as_secs_f64());
                    continue;
                }
            }
            let want = next.map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(now)
            });
            let wait = self.d.clock.wait_hint(want);
            // Readings arrive while disconnected too: waking for them keeps their channel
            // empty instead of holding an hour of readings.
            let msg = crossbeam_channel::select! {
                recv(inbox.rx) -> m => m.map_err(|_| ()),
                recv(inbox.notes) -> _ => Err(()),
                default(wait) => Err(()),
            };
            inbox.drain_wake();
            // Readings while disconnected are not sent: connecting takes a fresh one.
            while inbox.notes.try_recv().is_ok() {}
            match msg {
                Ok(ConnMsg::Stop) => return,
                Ok(ConnMsg::Connect(reply)) => {
                    if self.d.target.is_none() {
                        let _ = reply.send(ConnectResult {
                            connected: false,
                            error: Some("not registered with a server".into()),
                        });
                    } else {
                        // Replaces the queued attempt: the one timer now says "now".
                        self.waiters.push(reply);
                        next = Some(self.d.clock.now());
                    }
                }
                Ok(ConnMsg::SetTarget(t)) => {
                    self.d.target = Some(t);
                    self.ladder.reset();
                    next = Some(self.d.clock.now());
                }
                Ok(ConnMsg::Accepted(inc)) => {
                    if let End::Stop = self.serve_incoming(inc, &inbox) {
                        return;
                    }
                }
                Err(_) => {}
            }
        }
    }

    /// One attempt and, if it authenticates, the session. `None`: the attempt failed.
    fn attempt(&mut self, target: &Target, inbox: &Inbox) -> Option<End> {
        let (endpoint, _) = match dial::agent_endpoint(&target.base_url) {
            Ok(e) => e,
            Err(e) => {
                log::error!("{e}");
                self.answer(ConnectResult {
                    connected: false,
                    error: Some(e),
                });
                return None;
            }
        };
        let shown = dial::masked_url(&endpoint, target);
        {
            let mut st = self.d.status.write();
            st.attempts += 1;
        }
        self.set_state(ConnState::Connecting, None, None);
        log::info!("Connecting to {shown}");
        let clock = self.d.clock.clone();
        let deadline = clock.now() + HANDSHAKE_TIMEOUT;
        let tick = clock.wait_hint(Duration::from_millis(50));
        let mut stop = false;
        let mut new_target = None;
        let waiters = &mut self.waiters;
        let result = dial::connect(
            target,
            &self.d.hostname,
            &self.d.version,
            clock.as_ref(),
            deadline,
            tick,
            &mut || {
                for m in inbox.rx.try_iter() {
                    match m {
                        ConnMsg::Connect(r) => waiters.push(r),
                        ConnMsg::SetTarget(t) => new_target = Some(t),
                        // The web server refuses `/ws/agent` once a serverUrl is known;
                        // a socket that got past that while dialling is not kept.
                        ConnMsg::Accepted(mut inc) => {
                            close_with(&mut inc.ws, 4001, "Unauthorized");
                        }
                        ConnMsg::Stop => {
                            stop = true;
                            return Some(dial::Abort::Stop);
                        }
                    }
                }
                None
            },
        );
        if let Some(t) = new_target {
            self.d.target = Some(t);
        }
        if stop {
            self.answer(ConnectResult {
                connected: false,
                error: Some("agent stopping".into()),
            });
            return Some(End::Stop);
        }
        let (ws, fingerprint_key) = match result {
            Ok(ok) => ok,
            Err(e) => {
                log::warn!("Connection to {shown} failed: {e}");
                self.set_state(ConnState::Disconnected, None, Some(e.clone()));
                self.answer(ConnectResult {
                    connected: false,
                    error: Some(e),
                });
                return None;
            }
        };
        self.ladder.reset();
        self.set_state(ConnState::Connected, None, None);
        log::info!("Connected and authenticated to {shown}");
        self.answer(ConnectResult {
            connected: true,
            error: None,
        });
        let end = self.session(ws, inbox, &target.client_id, fingerprint_key);
        if let End::Closed(why) = &end {
            self.set_state(ConnState::Disconnected, None, Some(why.clone()));
        }
        // An inbound session is never replaced by a server socket (see above).
        if let End::Replaced(mut inc) = end {
            close_with(&mut inc.ws, 4001, "Unauthorized");
            return Some(End::Closed("replaced".into()));
        }
        Some(end)
    }

    /// Outbound: runs sessions on server sockets until one ends without a successor.
    /// The server owns the ladder, so nothing is scheduled afterwards.
    fn serve_incoming(&mut self, mut inc: Box<Incoming>, inbox: &Inbox) -> End {
        loop {
            let peer = inc.peer;
            self.set_state(ConnState::Connected, None, None);
            log::info!("Server session from {peer} started");
            let client_id = inc.client_id.clone();
            match self.session(inc.ws, inbox, &client_id, inc.fingerprint_key) {
                End::Replaced(next) => {
                    log::info!(
                        "Server session from {peer} replaced by a new one from {}",
                        next.peer
                    );
                    inc = next;
                }
                End::Closed(why) => {
                    log::warn!("Server session from {peer} ended: {why}");
                    self.set_state(ConnState::Disconnected, None, Some(why.clone()));
                    return End::Closed(why);
                }
                End::Stop => return End::Stop,
            }
        }
    }

    fn execute(&self, ws: &mut dial::Socket, actions: Vec<Action>) -> Result<(), String> {
        for a in actions {
            match a {
                Action::Send(text) => match ws.send(Message::text(text)) {
                    Ok(()) => {}
                    Err(tungstenite::Error::Io(e)) if would_block(&e) => {}
                    Err(e) => return Err(format!("send failed: {e}")),
                },
                Action::Read(src) => self.d.trigger.fire(src),
                Action::Host { token, request } => self.d.trigger.act(token, request),
                Action::Close(why) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    return Err(why);
                }
            }
        }
        Ok(())
    }

    fn session(
        &mut self,
        mut ws: dial::Socket,
        inbox: &Inbox,
        server: &str,
        fingerprint_key: Option<fingerprint::FingerprintKey>,
    ) -> End {
        if let Err(e) = ws.get_ref().tcp().set_nonblocking(true) {
            return End::Closed(format!("socket setup: {e}"));
        }
        while inbox.notes.try_recv().is_ok() {}
        let clock = self.d.clock.clone();
        let queue = self.d.queue.clone();
        let ctx = |c: &SharedClock| Ctx {
            now: c.now(),
            utc: c.utc(),
            queue: queue.as_ref(),
            server,
        };
        let (mut s, actions) = Session::start_keyed(&ctx(&clock), fingerprint_key);
        if let Err(e) = self.execute(&mut ws, actions) {
            return End::Closed(e);
        }
        loop {
            inbox.drain_wake();
            for m in inbox.rx.try_iter() {
                match m {
                    ConnMsg::Stop => {
                        let _ = ws.close(None);
                        let _ = ws.flush();
                        return End::Stop;
                    }
                    ConnMsg::Connect(r) => {
                        let _ = r.send(ConnectResult {
                            connected: true,
                            error: None,
                        });
                    }
                    // Applies to the next dial; the socket in use stays the only one.
                    ConnMsg::SetTarget(t) => self.d.target = Some(t),
                    ConnMsg::Accepted(next) => {
                        close_with(&mut ws, outbound::REPLACED.code, outbound::REPLACED.reason);
                        return End::Replaced(next);
                    }
                }
            }
            for n in inbox.notes.try_iter() {
                // A host action's answer goes just before the reading that shows it.
                let mut a = s.on_action_results(&n.actions);
                a.extend(s.on_reading(&n.reading, &n.sources, &ctx(&clock)));
                if let Err(e) = self.execute(&mut ws, a) {
                    return End::Closed(e);
                }
            }
            // Read everything that is there (TLS may hold decrypted bytes the socket no
            // longer shows), then sleep in poll(2).
            loop {
                match ws.read() {
                    Ok(Message::Text(t)) => {
                        let a = s.on_text(&t, &ctx(&clock));
                        if let Err(e) = self.execute(&mut ws, a) {
                            return End::Closed(e);
                        }
                    }
                    Ok(Message::Ping(_)) => s.on_ping(clock.now()),
                    Ok(Message::Close(f)) => {
                        let _ = ws.flush();
                        return End::Closed(match f {
                            Some(f) => {
                                format!("closed by the server: {} {}", u16::from(f.code), f.reason)
                            }
                            None => "closed by the server".into(),
                        });
                    }
                    Ok(_) => {}
                    Err(tungstenite::Error::Io(e)) if would_block(&e) => break,
                    Err(e) => return End::Closed(e.to_string()),
                }
            }
            let mut pending_write = false;
            match ws.flush() {
                Ok(()) => {}
                Err(tungstenite::Error::Io(e)) if would_block(&e) => pending_write = true,
                Err(e) => return End::Closed(e.to_string()),
            }
            let a = s.on_tick(&ctx(&clock));
            if let Err(e) = self.execute(&mut ws, a) {
                return End::Closed(e);
            }
            let want = s.next_deadline().saturating_duration_since(clock.now());
            let wait = clock.wait_hint(want).max(Duration::from_millis(1));
            let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
            let flags = if pending_write {
                PollFlags::POLLIN | PollFlags::POLLOUT
            } else {
                PollFlags::POLLIN
            };
            let tcp = ws.get_ref().tcp();
            let mut fds = [
                PollFd::new(tcp.as_fd(), flags),
                PollFd::new(inbox.wake.fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return End::Closed(format!("poll failed: {e}")),
            }
        }
    }
}
