//! Outbound mode: the server dials agents.
//!
//! [`Dialer`] owns one `dial:<client>` thread per outbound client. The thread
//! owns that client's socket and reconnect ladder (`agents::outbound`): it
//! dials `/ws/agent` with both halves of the identity, runs the same session as
//! an inbound agent (`agent_socket::serve_session`), and after a failure or the end
//! of a session waits its step of the ladder on the server's clock. A reconnect
//! order (the API's reconnect, a changed address) closes the open socket and
//! dials at once; deleting the client ends the thread.
//!
//! [`Dialer::register`] is the create flow: `/ws/register` with the PIN or
//! secret, a fresh token and client id, then the first `/ws/agent` session; the
//! client is stored only once that session's AUTH arrived.

use super::agent_socket::{self, First};
use crate::agents::clients::{self, ClientRecord, NewOutbound};
use crate::agents::outbound::{
    self, dial_error, failure_reason, reconnect_delay, RegistrationEnd, Target, DIAL_TIMEOUT_SECS,
};
use crate::agents::session::{self, Auth, SessionHandles};
use crate::auth::sealed::SealKey;
use crate::clock::SharedClock;
use crate::config::values::canonical_ip;
use crate::db::DbError;
use crate::http::transport::ws::{self, Stream, WsSocket};
use crate::lifecycle::Shutdown;
use crate::live::{self, envelope, Outbox, ToSocket};
use crate::secrets::random_hex;
use chrono::{DateTime, Utc};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::{Message, WebSocket};
use vrrp_protocol::{close, kind, ActivityLevel, Refusal};

/// Longest wait of a dial thread between looks at the clock and its orders.
const WAIT_STEP: Duration = Duration::from_millis(100);
/// Code and reason the server closes with when it redials on purpose.
const REDIAL: Refusal = Refusal::new(close::NORMAL, "Reconnecting");

/// What the dial threads share.
#[derive(Clone)]
pub struct DialHandles {
    pub session: SessionHandles,
    pub clock: SharedClock,
    /// `None` while `secretKey` could not be persisted: no registration then.
    pub seal_key: Option<SealKey>,
    /// `security.allow_self_signed_agent_certificates`, decided per dial.
    pub allow_self_signed: bool,
    pub shutdown: Shutdown,
}

enum Order {
    /// Close the open socket (if any) and dial at once.
    DialNow,
    /// The client is gone: end the thread.
    Stop,
}

struct Control {
    orders: Sender<Order>,
    /// The queue of the socket open now, to close it.
    current: Arc<Mutex<Option<Outbox<ToSocket>>>>,
}

/// The `dial:<client>` threads.
pub struct Dialer {
    handles: DialHandles,
    controls: Mutex<HashMap<String, Control>>,
}

/// Why a registration did not produce a client: the 503's reason.
#[derive(Debug)]
pub enum RegisterError {
    /// `secretKey` could not be written back: nothing may be sealed.
    NoSealKey,
    /// The agent's answer, in the operator's words.
    Agent(String),
    Db(DbError),
}

impl Dialer {
    pub fn new(handles: DialHandles) -> Dialer {
        Dialer {
            handles,
            controls: Mutex::new(HashMap::new()),
        }
    }

    /// Starts a thread for every stored outbound client (at start).
    pub fn start_all(&self) -> Result<usize, String> {
        let all = clients::list(&self.handles.session.db).map_err(|e| e.to_string())?;
        let outbound: Vec<ClientRecord> = all
            .into_iter()
            .filter(|c| c.mode == clients::Mode::Outbound)
            .collect();
        for client in &outbound {
            self.spawn(client, None)
                .map_err(|e| format!("cannot start the dial thread of {}: {e}", client.id))?;
        }
        Ok(outbound.len())
    }

    fn spawn(&self, client: &ClientRecord, first: Option<(WsSocket, Auth)>) -> std::io::Result<()> {
        let (orders, inbox) = crossbeam_channel::unbounded();
        let current = Arc::new(Mutex::new(None));
        let thread = DialThread {
            handles: self.handles.clone(),
            id: client.id.clone(),
            orders: inbox,
            current: current.clone(),
        };
        std::thread::Builder::new()
            .name(format!(
                "dial:{}",
                client.id.chars().take(8).collect::<String>()
            ))
            .stack_size(256 * 1024)
            .spawn(move || {
                let id = thread.id.clone();
                if crate::lifecycle::contain_panics(move || thread.run(first)).is_none() {
                    log::error!("The dial thread of {id} ended in a panic");
                }
            })?;
        if let Some(old) = self
            .controls
            .lock()
            .insert(client.id.clone(), Control { orders, current })
        {
            let _ = old.orders.send(Order::Stop);
        }
        Ok(())
    }

    /// `POST .../reconnect` and a changed address: close the open socket, drop
    /// the pending step, dial at once. False: no dial thread for this client.
    pub fn redial(&self, id: &str) -> bool {
        let controls = self.controls.lock();
        let Some(control) = controls.get(id) else {
            return false;
        };
        let _ = control.orders.send(Order::DialNow);
        if let Some(outbox) = control.current.lock().as_ref() {
            let _ = outbox.send(ToSocket::Close(REDIAL.code, REDIAL.reason));
        }
        true
    }

    /// The client was deleted: close with 4000 `Client deleted`, end the ladder.
    pub fn remove(&self, id: &str) {
        if let Some(control) = self.controls.lock().remove(id) {
            let _ = control.orders.send(Order::Stop);
            if let Some(outbox) = control.current.lock().as_ref() {
                let deleted = crate::agents::registry::DELETED;
                let _ = outbox.send(ToSocket::Close(deleted.code, deleted.reason));
            }
        }
    }

    /// The create flow. Returns the stored client.
    pub fn register(
        &self,
        target: &Target,
        secret: &str,
        hostname: &str,
    ) -> Result<ClientRecord, RegisterError> {
        let Some(key) = self.handles.seal_key.clone() else {
            return Err(RegisterError::NoSealKey);
        };
        let id = uuid::Uuid::new_v4().to_string();
        let token = random_hex(64);
        let allow = self.handles.allow_self_signed;
        let end = register_at(target, secret, &id, &token, allow);
        if !matches!(end, RegistrationEnd::Registered { .. }) {
            return Err(RegisterError::Agent(failure_reason(&end)));
        }
        let (mut socket, peer) = dial_agent(target, &id, &token, allow)
            .map_err(|e| RegisterError::Agent(outbound::auth_failed_reason(&e)))?;
        let auth = match first_auth(&mut socket, &self.handles.clock) {
            Ok(auth) => auth,
            Err(e) => {
                socket.close(4001, "Authentication failed");
                return Err(RegisterError::Agent(outbound::auth_failed_reason(&e)));
            }
        };
        let new = NewOutbound {
            id: id.clone(),
            hostname: hostname.to_owned(),
            target: target.stored(),
            sealed_token: key.seal(&token),
        };
        let record =
            clients::create_outbound(&self.handles.session.db, new, self.handles.clock.utc())
                .map_err(RegisterError::Db)?;
        log::info!(
            "Outbound agent {} registered at {} ({})",
            record.id,
            target.stored(),
            peer
        );
        let data = json!({ "hostname": record.hostname, "clientName": record.name() });
        self.handles
            .session
            .activity
            .record(vec![crate::activity::Event::server(
                "client.registered",
                ActivityLevel::Info,
                Some(record.id.clone()),
                data,
                self.handles.clock.utc(),
            )]);
        self.handles.session.clients_changed.notify();
        if let Err(e) = self.spawn(&record, Some((socket, auth))) {
            log::error!("Cannot start the dial thread of {}: {e}", record.id);
        }
        Ok(record)
    }
}

/// One outbound client's thread: its socket and its ladder.
struct DialThread {
    handles: DialHandles,
    id: String,
    orders: Receiver<Order>,
    current: Arc<Mutex<Option<Outbox<ToSocket>>>>,
}

/// How a wait of the ladder ended.
enum Woken {
    Due,
    DialNow,
    Stop,
}

impl DialThread {
    fn run(self, mut first: Option<(WsSocket, Auth)>) {
        // Dials since a socket last opened: the ladder's step.
        let mut failures: u32 = 0;
        let mut next: Option<DateTime<Utc>> = None;
        loop {
            // The ladder step this dial answers (None: the first dial, or an order).
            let mut due = None;
            if let Some(at) = next.take() {
                match self.wait_until(at) {
                    Woken::Stop => return,
                    Woken::Due => due = Some(at),
                    Woken::DialNow => {}
                }
            }
            if self.handles.shutdown.is_set() {
                return;
            }
            let (socket, first_step, client) = match first.take() {
                Some((socket, auth)) => {
                    let Ok(Some(client)) = clients::get(&self.handles.session.db, &self.id) else {
                        return;
                    };
                    (socket, First::Received(auth), client)
                }
                // Steps count from when a dial started, so a slow failure (a
                // 10 s timeout) does not push the next try back.
                None => match self.dial(self.dial_started(due)) {
                    Dial::Open(open) => {
                        let (socket, client) = *open;
                        let until = self.handles.clock.utc()
                            + chrono::Duration::seconds(agent_socket::AUTH_WINDOW_SECS);
                        (socket, First::AwaitAuth(until), client)
                    }
                    Dial::Failed(started, e) => {
                        failures += 1;
                        let delay = reconnect_delay(failures);
                        log::info!(
                            "Cannot reach outbound agent {}: {e}; next try in {} s",
                            self.id,
                            delay.num_seconds()
                        );
                        next = Some(started + delay);
                        continue;
                    }
                    Dial::Never => return,
                },
            };
            // A socket opened: the ladder starts again from its first step.
            failures = 0;
            self.serve(socket, first_step, client);
            // Orders that came during the session decide what comes next.
            let mut now_again = false;
            while let Ok(order) = self.orders.try_recv() {
                match order {
                    Order::Stop => return,
                    Order::DialNow => now_again = true,
                }
            }
            if !now_again {
                failures = 1;
                next = Some(self.handles.clock.utc() + reconnect_delay(failures));
            }
        }
    }

    fn serve(&self, socket: WsSocket, first: First, client: ClientRecord) {
        let queue = match live::channel::<ToSocket>(agent_socket::QUEUE) {
            Ok(q) => q,
            Err(e) => {
                log::error!("Cannot create a queue for an agent socket: {e}");
                return;
            }
        };
        *self.current.lock() = Some(queue.0.clone());
        let source = canonical_ip(socket.peer.ip());
        agent_socket::serve_session(
            self.handles.session.clone(),
            socket,
            queue,
            client,
            source,
            first,
        );
        *self.current.lock() = None;
    }

    /// The time a dial starts, logged with how late it is against its ladder
    /// step: the reconnect benchmark (scripts/bench-outbound.sh) reads this line.
    fn dial_started(&self, due: Option<DateTime<Utc>>) -> DateTime<Utc> {
        let now = self.handles.clock.utc();
        match due {
            Some(at) => log::debug!(
                "Dialling outbound agent {}: ladder step due at {}, {} ms after it",
                self.id,
                crate::clock::iso(at),
                (now - at).num_milliseconds()
            ),
            None => log::debug!("Dialling outbound agent {}", self.id),
        }
        now
    }

    /// Waits for `at` on the server's clock, or an order.
    fn wait_until(&self, at: DateTime<Utc>) -> Woken {
        loop {
            if self.handles.shutdown.is_set() {
                return Woken::Stop;
            }
            let now = self.handles.clock.utc();
            if now >= at {
                return Woken::Due;
            }
            let left = (at - now).to_std().unwrap_or_default().min(WAIT_STEP);
            match self.orders.recv_timeout(left) {
                Ok(Order::DialNow) => return Woken::DialNow,
                Ok(Order::Stop) | Err(RecvTimeoutError::Disconnected) => return Woken::Stop,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    fn dial(&self, started: DateTime<Utc>) -> Dial {
        let db = &self.handles.session.db;
        let client = match clients::get(db, &self.id) {
            Ok(Some(c)) => c,
            Ok(None) => return Dial::Never,
            Err(e) => return Dial::Failed(started, format!("cannot read the client: {e}")),
        };
        let address = client.outbound_target_address.clone().unwrap_or_default();
        let target = match outbound::parse_target(&address) {
            Ok(t) => t,
            Err(e) => {
                log::error!(
                    "Outbound agent {} has an unusable address {address:?} ({e}); not dialled until it is changed",
                    self.id
                );
                return Dial::Never;
            }
        };
        let token = match clients::sealed_token(db, &self.id) {
            Ok(Some(sealed)) => match self.handles.seal_key.as_ref().map(|k| k.open(&sealed)) {
                Some(Ok(token)) => token,
                Some(Err(e)) => {
                    log::error!("Outbound agent {} is not dialled: {e}", self.id);
                    return Dial::Never;
                }
                None => {
                    log::error!(
                        "Outbound agent {} is not dialled: secretKey could not be persisted",
                        self.id
                    );
                    return Dial::Never;
                }
            },
            Ok(None) => {
                log::error!(
                    "Outbound agent {} has no stored token; not dialled",
                    self.id
                );
                return Dial::Never;
            }
            Err(e) => return Dial::Failed(started, format!("cannot read the token: {e}")),
        };
        match dial_agent(&target, &self.id, &token, self.handles.allow_self_signed) {
            Ok((socket, _)) => Dial::Open(Box::new((socket, client))),
            Err(e) => Dial::Failed(started, e),
        }
    }
}

enum Dial {
    Open(Box<(WsSocket, ClientRecord)>),
    /// When the dial started, and why it failed.
    Failed(DateTime<Utc>, String),
    /// Not to be dialled (deleted, no usable token or address).
    Never,
}

/// Connects and completes the WebSocket handshake within the dial timeout.
fn open(
    target: &Target,
    url: &str,
    allow_self_signed: bool,
) -> Result<(WebSocket<Stream>, RawFd, SocketAddr), String> {
    let deadline = Instant::now() + Duration::from_secs(DIAL_TIMEOUT_SECS);
    let endpoint = vrrp_dial::Endpoint {
        host: target.host.clone(),
        port: target.port,
        tls: target.tls.then_some(allow_self_signed),
    };
    let stream = vrrp_dial::open(&endpoint, deadline)?;
    let fd = stream.tcp().as_raw_fd();
    let peer = stream.tcp().peer_addr().map_err(|e| e.to_string())?;
    let left = deadline.saturating_duration_since(Instant::now());
    stream
        .tcp()
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .map_err(|e| e.to_string())?;
    let request = url
        .into_client_request()
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let stream: Stream = Box::new(stream);
    match tungstenite::client::client_with_config(request, stream, Some(ws::ws_config())) {
        Ok((socket, _)) => Ok((socket, fd, peer)),
        Err(HandshakeError::Interrupted(_)) => {
            Err(format!("no answer within {DIAL_TIMEOUT_SECS} s"))
        }
        Err(HandshakeError::Failure(e)) => Err(dial_error(target, &e.to_string())),
    }
}

/// `/ws/agent` with both halves of the identity in the query.
fn dial_agent(
    target: &Target,
    id: &str,
    token: &str,
    allow_self_signed: bool,
) -> Result<(WsSocket, SocketAddr), String> {
    let url = format!(
        "{}?clientId={}&token={}",
        target.url("/ws/agent"),
        vrrp_dial::encode_query_value(id),
        vrrp_dial::encode_query_value(token)
    );
    // The URL holds the token: no error text may carry it into a log line.
    let (socket, fd, peer) =
        open(target, &url, allow_self_signed).map_err(|e| e.replace(token, "****"))?;
    Ok((ws::dialled(socket, fd, peer)?, peer))
}

/// `/ws/register`: REGISTRATION_REQUEST, then the agent's answer, or its close.
fn register_at(
    target: &Target,
    secret: &str,
    id: &str,
    token: &str,
    allow_self_signed: bool,
) -> RegistrationEnd {
    let (mut socket, _, _) = match open(target, &target.url("/ws/register"), allow_self_signed) {
        Ok(s) => s,
        Err(e) => return RegistrationEnd::Failed(e),
    };
    let request = envelope(
        kind::REGISTRATION_REQUEST,
        json!({ "secret": secret, "clientId": id, "authToken": token }),
    );
    if let Err(e) = socket.send(Message::text(&*request)) {
        return RegistrationEnd::Failed(format!("cannot send the registration request: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(DIAL_TIMEOUT_SECS);
    let end = loop {
        if Instant::now() >= deadline {
            break RegistrationEnd::Failed(format!(
                "the agent did not answer the registration within {DIAL_TIMEOUT_SECS} s"
            ));
        }
        match socket.read() {
            Ok(Message::Text(text)) => match session::message(&text) {
                Some((message, payload)) if message == kind::REGISTRATION_SUCCESS => {
                    break RegistrationEnd::Registered {
                        hostname: payload["hostname"].as_str().map(str::to_owned),
                    }
                }
                Some((message, payload)) if message == kind::REGISTRATION_FAILURE => {
                    break RegistrationEnd::Refused(
                        payload["error"].as_str().unwrap_or_default().to_owned(),
                    )
                }
                _ => log::debug!("Dropped a message before the registration answer"),
            },
            Ok(Message::Close(frame)) => {
                break match frame {
                    Some(f) => RegistrationEnd::Closed(u16::from(f.code), f.reason.to_string()),
                    None => RegistrationEnd::Failed(
                        "the agent closed the connection without an answer".into(),
                    ),
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                break RegistrationEnd::Failed(
                    "the agent closed the connection without an answer".into(),
                )
            }
            Err(e) => break RegistrationEnd::Failed(format!("connection lost: {e}")),
        }
    };
    let _ = socket.close(None);
    let _ = socket.flush();
    end
}

/// The first session's AUTH, read before the client is stored (within the
/// AUTH window).
fn first_auth(socket: &mut WsSocket, clock: &SharedClock) -> Result<Auth, String> {
    let until = clock.utc() + chrono::Duration::seconds(agent_socket::AUTH_WINDOW_SECS);
    loop {
        match socket.receive_one(Duration::from_millis(50)) {
            None | Some(ws::Received::Pong) => {}
            Some(ws::Received::Text(text)) => {
                return match session::message(&text) {
                    Some((message, payload)) if message == kind::AUTH => {
                        session::parse_auth(&payload)
                            .ok_or_else(|| "the agent's AUTH does not parse".to_owned())
                    }
                    _ => Err("the agent's first message was not AUTH".into()),
                };
            }
            Some(ws::Received::Closed) => return Err("the agent closed the connection".into()),
        }
        if clock.utc() >= until {
            return Err(format!(
                "no AUTH within {} s",
                agent_socket::AUTH_WINDOW_SECS
            ));
        }
    }
}
