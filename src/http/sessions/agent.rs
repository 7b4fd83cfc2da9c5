//! `/ws/agent`: an inbound agent's socket, up to its session.
//!
//! The handshake and the credential stages 1 to 5 run here, on the HTTP worker,
//! with the whole `App`; a socket that passed is handed to
//! [`agent_socket::serve_session`], which the outbound dialer uses too. Split so
//! that the session loop needs no `App`: the dialer lives in `App`, and a loop
//! that named `App` made `state` → `outbound` → `agent` → `state` a circle.

use super::agent_socket::{serve_session, First, AUTH_WINDOW_SECS, QUEUE};
use crate::agents::session;
use crate::http::request::percent_decode;
use crate::http::transport::ws;
use crate::http::App;
use chrono::Duration;
use std::sync::Arc;
use vrrp_protocol::close;

/// Takes over an upgrade request. The handshake and stages 1 to 5 run here on
/// the HTTP worker, so the SQLite lookup never touches (and keeps resident) the
/// long-lived thread's stack; a socket that passed gets its own `ws-agent` thread.
pub fn start(app: Arc<App>, rq: tiny_http::Request) {
    let query = rq
        .url()
        .split_once('?')
        .map(|(_, q)| q.to_owned())
        .unwrap_or_default();
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| percent_decode(v))
            .filter(|v| !v.is_empty())
    };
    let client_id = param("clientId");
    let bearer = ws::header(&rq, "authorization")
        .and_then(crate::http::request::bearer)
        .map(str::to_owned);
    let token = param("token").or(bearer).filter(|t| !t.is_empty());
    let Some(peer) = rq.remote_addr().copied() else {
        return;
    };
    // The agent's address, taken as registration takes it: behind a trusted
    // proxy, the address it forwarded (X-Forwarded-For), else the peer's. The
    // allowed networks, the client's allowed IP and `inboundLastIp` all use it.
    let (source, _) = crate::http::request::client_address(
        peer.ip(),
        ws::header(&rq, "x-forwarded-for"),
        None,
        &app.config.security.trusted_proxies,
    );
    // The AUTH window starts when the socket opens.
    let auth_until = app.clock.utc() + Duration::seconds(AUTH_WINDOW_SECS);
    let Some(socket) = ws::accept(rq) else {
        return;
    };
    // Woken by an eventfd: the session thread sleeps until the agent, a
    // message for it, or its heartbeat needs it (see `ws::run`).
    let queue = match ws::queue(QUEUE) {
        Ok(q) => q,
        Err(e) => {
            log::error!("Cannot create a queue for the agent socket of {peer}: {e}");
            return socket.close(close::INTERNAL_ERROR, "Internal error");
        }
    };

    let checked = session::check_credentials(
        &app.db,
        &app.config.security.allowed_networks,
        client_id.as_deref(),
        token.as_deref(),
        source,
    );
    let client = match checked {
        Ok(client) => client,
        Err(refusal) => {
            log::info!("Refused an agent connection from {source}: {refusal}");
            return socket.close(refusal.code, refusal.reason);
        }
    };
    // The session thread holds the parts it uses, not the whole App.
    let handles = app.session_handles();
    let name = format!("ws-agent:{}", client.id.chars().take(8).collect::<String>());
    // The same session as an outbound client's `dial:` thread, with the same
    // stack: 128 KiB overflowed in a debug build once instances carried the
    // readiness fields (seen with real agents in the lab tests; serde's frames
    // for the typed reading grow with its fields). Only touched pages count.
    let spawned = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .name(name)
        .spawn(move || {
            if crate::lifecycle::contain_panics(|| {
                serve_session(
                    handles,
                    socket,
                    queue,
                    client,
                    source,
                    First::AwaitAuth(auth_until),
                )
            })
            .is_none()
            {
                log::error!("The agent connection from {peer} ended in a panic");
            }
        });
    if let Err(e) = spawned {
        log::error!("Cannot start a thread for the agent connection from {peer}: {e}");
    }
}
