//! `/ws/agent`: an inbound agent's socket.
//!
//! The authentication stages run in the spec's order, each with its close code;
//! the heartbeat runs from the moment the socket opens. What a stage decides and
//! what becomes of readings and activity is `agents::session`; this module moves
//! frames between it and the socket.

use crate::agents::clients::{ClientRecord, Mode};
use crate::agents::session::{self, SessionHandles};
use crate::config::values::canonical_ip;
use crate::http::request::percent_decode;
use crate::http::transport::conns::ConnTracker;
use crate::http::transport::ws::{self, Flow, Session, WsSocket};
use crate::http::App;
use crate::live::{self, envelope, ToSocket};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use std::net::IpAddr;
use std::sync::Arc;
use vrrp_protocol::{close, kind};

/// The agent must send AUTH within this long.
pub const AUTH_WINDOW_SECS: i64 = 5;
/// Messages waiting for one agent socket before it counts as stuck. Only state
/// requests and close orders go this way; a bounded channel allocates every slot
/// up front, so a small queue keeps a thousand sockets cheap.
pub const QUEUE: usize = 32;

/// Takes over an upgrade request. The handshake and stages 1 to 5 run here on
/// the HTTP worker, so the SQLite lookup never touches (and keeps resident) the
/// long-lived thread's stack; a socket that passed gets its own `ws-agent` thread.
pub fn start(app: Arc<App>, tracker: Arc<ConnTracker>, rq: tiny_http::Request) {
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
    let mut busy = tracker.busy(peer);
    // The AUTH window starts when the socket opens.
    let auth_until = app.clock.utc() + Duration::seconds(AUTH_WINDOW_SECS);
    let Some(socket) = ws::accept(rq, &mut busy) else {
        return;
    };
    // Woken by an eventfd: the session thread sleeps until the agent, a
    // message for it, or its heartbeat needs it (see `ws::run`).
    let queue = match ws::queue(&mut busy, QUEUE) {
        Ok(q) => q,
        Err(e) => {
            log::error!("Cannot create a queue for the agent socket of {peer}: {e}");
            return socket.close(close::INTERNAL_ERROR, "Internal error");
        }
    };
    let source = canonical_ip(peer.ip());
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
    let spawned = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .name(name)
        .spawn(move || {
            let _busy = busy;
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

/// Where a session starts.
pub enum First {
    /// The agent must send AUTH before this time (the spec's stage 6).
    AwaitAuth(DateTime<Utc>),
    /// AUTH was already read (the first session of a new outbound client, read
    /// before the client was stored).
    Received(session::Auth),
}

/// Runs one agent socket, in either direction, until it ends. `queue` is the
/// socket's queue: its outbox goes to the agent registry at AUTH; the caller
/// may keep a clone (outbound dialling closes the socket through it).
pub fn serve_session(
    handles: SessionHandles,
    mut socket: WsSocket,
    queue: (live::Outbox<ToSocket>, live::Inbox<ToSocket>),
    client: ClientRecord,
    source: IpAddr,
    first: First,
) {
    let (outbox, inbox) = queue;
    let clock = handles.clock.clone();
    let mut socket_session = AgentSocket {
        handles,
        stage: Stage::AwaitingAuth {
            client: client.clone(),
            until: clock.utc(),
        },
        source,
        outbox: Some(outbox),
        connection: None,
    };
    match first {
        First::AwaitAuth(until) => socket_session.stage = Stage::AwaitingAuth { client, until },
        First::Received(auth) => match socket_session.accept_auth(&mut socket, client, auth) {
            Flow::Continue => {}
            Flow::Close(code, reason) => return socket.close(code, reason),
            Flow::End => return,
        },
    }
    ws::run(socket, &inbox, &clock, &mut socket_session);
    socket_session.ended();
}

enum Stage {
    AwaitingAuth {
        client: ClientRecord,
        until: DateTime<Utc>,
    },
    Authenticated {
        client: ClientRecord,
    },
}

struct AgentSocket {
    handles: SessionHandles,
    stage: Stage,
    source: IpAddr,
    outbox: Option<live::Outbox<ToSocket>>,
    /// Our id in the agent registry once authenticated.
    connection: Option<u64>,
}

impl Session for AgentSocket {
    fn on_text(&mut self, socket: &mut WsSocket, text: String) -> Flow {
        match &self.stage {
            Stage::AwaitingAuth { client, .. } => {
                let client = client.clone();
                self.first_message(socket, client, &text)
            }
            Stage::Authenticated { client } => {
                let client = client.clone();
                self.after_auth(socket, &client, &text)
            }
        }
    }

    fn on_time(&mut self, now: DateTime<Utc>) -> Flow {
        match &self.stage {
            Stage::AwaitingAuth { until, client } if now >= *until => {
                log::info!(
                    "Agent {} sent no AUTH within {AUTH_WINDOW_SECS} s",
                    client.id
                );
                Flow::Close(close::AUTH_REQUIRED, "Authentication timed out")
            }
            _ => Flow::Continue,
        }
    }

    fn deadline(&self) -> Option<DateTime<Utc>> {
        match &self.stage {
            Stage::AwaitingAuth { until, .. } => Some(*until),
            _ => None,
        }
    }
}

impl AgentSocket {
    /// Stage 6: the first message must be AUTH with a payload that parses.
    fn first_message(&mut self, socket: &mut WsSocket, client: ClientRecord, text: &str) -> Flow {
        let Some((_, payload)) = session::message(text).filter(|(k, _)| k == kind::AUTH) else {
            let _ = socket.send_text(&envelope(kind::AUTH_FAILURE, json!({})));
            return Flow::Close(close::FORBIDDEN, "Forbidden");
        };
        let Some(auth) = session::parse_auth(&payload) else {
            return Flow::Close(close::SESSION_ENDED, "Invalid payload");
        };
        self.accept_auth(socket, client, auth)
    }

    /// AUTH accepted: register, AUTH_SUCCESS, tell everyone.
    fn accept_auth(
        &mut self,
        socket: &mut WsSocket,
        client: ClientRecord,
        auth: session::Auth,
    ) -> Flow {
        let Some(outbox) = self.outbox.take() else {
            return Flow::End;
        };
        self.connection = Some(session::authenticated(
            &self.handles,
            &client,
            &auth,
            self.source,
            outbox,
        ));
        if socket
            .send_text(&envelope(
                kind::AUTH_SUCCESS,
                json!({ "clientId": client.id, "lastSyncTime": null }),
            ))
            .is_err()
        {
            return Flow::End;
        }
        let mode = connection_mode(&client);
        log::info!(
            "Agent {} ({}) connected ({mode}) from {}, version {}",
            client.name(),
            client.id,
            self.source,
            auth.version
        );
        session::announce_connected(&self.handles, &client, &auth, mode);
        self.stage = Stage::Authenticated { client };
        Flow::Continue
    }

    fn after_auth(&mut self, socket: &mut WsSocket, client: &ClientRecord, text: &str) -> Flow {
        let Some((message, payload)) = session::message(text) else {
            log::debug!(
                "Agent {} sent a frame that is not a message; dropped",
                client.id
            );
            return Flow::Continue;
        };
        match message.as_str() {
            kind::KEEPALIVED_UPDATE => session::reading(&self.handles, client, payload),
            kind::ACTIVITY => {
                let Some(ack) = session::activity(&self.handles, client, &payload) else {
                    return Flow::Continue;
                };
                if socket
                    .send_text(&envelope(kind::ACTIVITY_ACK, json!({ "ids": ack })))
                    .is_err()
                {
                    return Flow::End;
                }
            }
            other => log::debug!(
                "Agent {} sent an unknown message type {other:?}; dropped",
                client.id
            ),
        }
        Flow::Continue
    }

    fn ended(&self) {
        if let (Stage::Authenticated { client }, Some(connection)) = (&self.stage, self.connection)
        {
            session::ended(&self.handles, client, connection, connection_mode(client));
        }
    }
}

fn connection_mode(client: &ClientRecord) -> &'static str {
    match client.mode {
        Mode::Inbound => "inbound",
        Mode::Outbound => "outbound",
    }
}
