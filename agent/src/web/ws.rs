//! Outbound mode's WebSocket routes on the agent's web server: `/ws/register` and
//! `/ws/agent`, over tiny_http's upgraded stream (plain, or TLS with a `tls` block).
//!
//! tiny_http's upgraded stream (plain or TLS) has no timeouts, so before the upgrade we
//! take a descriptor of the request's TCP socket of our own (`Request::clone_socket`,
//! our patch of tiny_http): read timeouts during the handshake, non-blocking mode and
//! poll(2) during the session go through it (they act on the one socket).
//!
//! Both routes run their checks on the `http-worker` that took the request, so a refused
//! socket never reaches the connection thread: `allowedNetworks` first (4003), then the
//! route's own rules (see `crate::connection::outbound`). `/ws/register` answers on this worker.
//! `/ws/agent` sends AUTH, waits for AUTH_SUCCESS, then hands the socket (with the
//! fingerprint key AUTH_SUCCESS carried, if any) to the connection thread of the server
//! whose client id it presented (an agent may be registered with more than one), which
//! runs the same `Session` as for the socket it dials.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tiny_http::{Header, Request, Response};
use tungstenite::protocol::Role;
use tungstenite::{Message, WebSocket};
use vrrp_protocol::{close, kind};

use super::state::WebState;
use crate::connection::dial::{self, Accepted, Socket, Stream};
use crate::connection::outbound::{self, Refusal};
use crate::connection::session::envelope;
use crate::connection::{close_with, ConnMsg, Incoming, HANDSHAKE_TIMEOUT};
use crate::registration::OutboundRefused;

/// How long a refused socket waits for the peer's close reply before it is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(1);

fn header<'a>(rq: &'a Request, name: &str) -> Option<&'a str> {
    rq.headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// Serves one request to `/ws/register` or `/ws/agent`.
pub fn serve(state: &WebState, req: Request, path: &str, stopping: &AtomicBool) {
    let Some(peer) = req.remote_addr().copied() else {
        let _ = req.respond(Response::from_string("no peer address").with_status_code(400));
        return;
    };
    let query = req
        .url()
        .split_once('?')
        .map(|(_, q)| q.to_string())
        .unwrap_or_default();
    // The registration timeout runs from before the 101 goes out, so a peer that saw
    // the upgrade answered can rely on it having started.
    let opened = state.clock.now();
    let Some(mut ws) = upgrade(state, req, peer) else {
        return;
    };
    if !outbound::peer_allowed(&state.config.allowed_networks, peer.ip()) {
        log::warn!("{path}: connection from {peer} refused: not in allowedNetworks");
        refuse(&mut ws, outbound::ACCESS_DENIED);
        return;
    }
    if path == "/ws/register" {
        register(state, ws, peer, opened, stopping);
    } else {
        agent(state, ws, peer, &query, stopping);
    }
}

/// Answers the upgrade (or 400 to a request that is not one) and wraps the stream.
fn upgrade(state: &WebState, req: Request, peer: SocketAddr) -> Option<Socket> {
    let is_upgrade = header(&req, "upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        && header(&req, "connection").is_some_and(|v| v.to_ascii_lowercase().contains("upgrade"));
    let key = header(&req, "sec-websocket-key").map(str::to_owned);
    let (true, Some(key)) = (is_upgrade, key) else {
        let body = json!({ "error": "This route takes a WebSocket upgrade" }).to_string();
        let _ = req.respond(Response::from_string(body).with_status_code(400));
        return None;
    };
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let response = Response::empty(101)
        .with_header(Header::from_bytes(&b"Sec-WebSocket-Accept"[..], accept.as_bytes()).ok()?);
    let sock = match req.clone_socket() {
        Ok(sock) => sock,
        Err(e) => {
            log::error!("Cannot take a descriptor of the socket of {peer}: {e}; dropping it");
            return None;
        }
    };
    let stream = req.upgrade("websocket", response);
    let _ = sock.set_nodelay(true);
    let tick = state.clock.wait_hint(Duration::from_millis(250));
    if let Err(e) = sock
        .set_read_timeout(Some(tick.max(Duration::from_millis(1))))
        .and_then(|_| sock.set_write_timeout(Some(Duration::from_secs(10))))
    {
        log::error!("Cannot set up the socket of {peer}: {e}");
        return None;
    }
    Some(WebSocket::from_raw_socket(
        Stream::Accepted(Accepted {
            io: Box::new(stream),
            sock,
        }),
        Role::Server,
        Some(dial::ws_config()),
    ))
}

/// Closes with the refusal's code and text and waits briefly for the peer's reply.
fn refuse(ws: &mut Socket, r: Refusal) {
    close_with(ws, r.code, r.reason);
    let t0 = Instant::now();
    while t0.elapsed() < CLOSE_LINGER {
        match ws.read() {
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
}

fn send(ws: &mut Socket, kind: &str, payload: serde_json::Value) {
    if let Err(e) = ws.send(Message::text(envelope(kind, payload))) {
        log::debug!("{kind} not delivered: {e}");
    }
}

/// `/ws/register`: refused once registered; otherwise waits (on the agent's clock) for
/// the REGISTRATION_REQUEST and answers it.
fn register(
    state: &WebState,
    mut ws: Socket,
    peer: SocketAddr,
    opened: Instant,
    stopping: &AtomicBool,
) {
    if state.reg.is_full() {
        log::warn!("/ws/register: {peer} refused: this agent is already registered");
        refuse(&mut ws, outbound::ALREADY_REGISTERED);
        return;
    }
    let clock = &state.clock;
    let deadline = opened + outbound::REGISTRATION_TIMEOUT;
    let text = loop {
        if stopping.load(Ordering::SeqCst) {
            close_with(&mut ws, close::GOING_AWAY, "Agent stopping");
            return;
        }
        if clock.now() >= deadline {
            log::warn!(
                "/ws/register: no REGISTRATION_REQUEST from {peer} within {} s",
                outbound::REGISTRATION_TIMEOUT.as_secs()
            );
            refuse(&mut ws, outbound::TIMED_OUT);
            return;
        }
        match ws.read() {
            Ok(Message::Text(t)) => break t.as_str().to_owned(),
            Ok(Message::Close(_)) => return,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                log::debug!("/ws/register: {peer} went away: {e}");
                return;
            }
        }
    };
    let req = match outbound::parse_registration(&text) {
        Ok(r) => r,
        Err(e) => {
            log::warn!("/ws/register: {peer} sent an invalid request: {e}");
            send(&mut ws, "REGISTRATION_FAILURE", json!({ "error": e }));
            refuse(&mut ws, outbound::INVALID_REQUEST);
            return;
        }
    };
    log::info!(
        "/ws/register: registration request from {peer} for client {}",
        req.client_id
    );
    match state.reg.register_outbound(req, &state.dir) {
        Ok(identity) => {
            // Its queue position starts with what is still queued; its connection
            // thread waits for the `/ws/agent` it dials next.
            state.queue.add_server(&identity.client_id);
            send(
                &mut ws,
                kind::REGISTRATION_SUCCESS,
                json!({ "hostname": state.hostname }),
            );
            refuse(&mut ws, Refusal::new(close::NORMAL, ""));
        }
        Err(OutboundRefused::Closed(r)) => refuse(&mut ws, r),
        Err(e @ (OutboundRefused::InvalidSecret | OutboundRefused::Store(_))) => {
            send(
                &mut ws,
                kind::REGISTRATION_FAILURE,
                json!({ "error": e.text() }),
            );
            refuse(&mut ws, e.refusal());
        }
    }
}

/// `/ws/agent`: both halves of the identity, then AUTH / AUTH_SUCCESS, then the session
/// on the connection thread.
fn agent(state: &WebState, mut ws: Socket, peer: SocketAddr, query: &str, stopping: &AtomicBool) {
    // Each outbound server presents the identity it issued; its slot's thread runs it.
    let slot = match state.reg.outbound_slot(query) {
        Ok(slot) => slot,
        Err(r) => {
            log::warn!("/ws/agent: {peer} refused: {}", r.reason);
            refuse(&mut ws, r);
            return;
        }
    };
    let Some(conn) = state.conns.get(slot) else {
        log::error!("/ws/agent: no connection for server {}", slot + 1);
        refuse(&mut ws, outbound::UNAUTHORIZED);
        return;
    };
    let client_id = outbound::query_param(query, "clientId").unwrap_or_default();
    // AUTH goes out after this, so the window has started before the peer sees it.
    let deadline = state.clock.now() + HANDSHAKE_TIMEOUT;
    let fingerprint_key = match dial::authenticate(
        &mut ws,
        &state.hostname,
        &state.version,
        state.clock.as_ref(),
        deadline,
        &mut || stopping.load(Ordering::SeqCst).then_some(dial::Abort::Stop),
    ) {
        Ok(key) => key,
        Err(e) => {
            log::warn!("/ws/agent: session from {peer} not started: {e}");
            close_with(&mut ws, 1000, "");
            return;
        }
    };
    conn.inbox.send(ConnMsg::Accepted(Box::new(Incoming {
        ws,
        peer,
        client_id,
        fingerprint_key,
    })));
}
