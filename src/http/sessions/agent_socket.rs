//! One agent socket's session, whichever side dialled: stage 6 (AUTH within
//! its window), then readings and activity until the socket ends. What a stage
//! decides and what becomes of readings and activity is `agents::session`; this
//! module moves frames between it and the socket. It takes [`SessionHandles`],
//! never the `App`, so both `sessions::agent` (inbound) and `sessions::outbound`
//! can run it without an import circle through `http::state`.

use crate::agents::clients::{ClientRecord, Mode};
use crate::agents::session::{self, SessionHandles};
use crate::http::transport::ws::{self, Flow, Session, WsSocket};
use crate::live::{self, envelope, ToSocket};
use chrono::{DateTime, Utc};
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
            client: Arc::new(client.clone()),
            until: clock.utc(),
        },
        source,
        outbox: Some(outbox),
        connection: None,
    };
    match first {
        First::AwaitAuth(until) => {
            socket_session.stage = Stage::AwaitingAuth {
                client: Arc::new(client),
                until,
            }
        }
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
        client: Arc<ClientRecord>,
        until: DateTime<Utc>,
    },
    Authenticated {
        /// Shared, not copied, by each message's handling.
        client: Arc<ClientRecord>,
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
                let client = ClientRecord::clone(client);
                self.first_message(socket, client, &text)
            }
            Stage::Authenticated { client } => {
                let client = Arc::clone(client);
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
                // The key the agent fingerprints its VRRP passwords with.
                json!({ "clientId": client.id, "lastSyncTime": null,
                        "fingerprintKey": &*self.handles.fingerprint_key }),
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
        self.stage = Stage::Authenticated {
            client: Arc::new(client),
        };
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
            kind::HOST_ACTION_RESULT => {
                match serde_json::from_value::<vrrp_protocol::HostActionResult>(payload) {
                    Ok(result) => {
                        self.handles.actions.answered(&client.id, result);
                    }
                    Err(e) => log::debug!(
                        "Agent {} sent a HOST_ACTION_RESULT that does not parse ({e}); dropped",
                        client.id
                    ),
                }
            }
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
