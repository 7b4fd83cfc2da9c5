//! `/ws/agent`: an inbound agent's connection.
//!
//! The authentication stages run in the spec's order, each with its close code;
//! the heartbeat runs from the moment the socket opens. After AUTH the agent's
//! readings and activity are stored and passed on to dashboards.

use super::conns::ConnTracker;
use super::request::percent_decode;
use super::ws::{self, Flow, Session, WsSocket};
use crate::activity::{self, Event, Incoming};
use crate::agents::clients::{self, ClientRecord, Mode};
use crate::agents::readings;
use crate::app::App;
use crate::auth::secrets::sha256_hex;
use crate::clusters::thread::EvalMsg;
use crate::config::values::canonical_ip;
use crate::live::{self, envelope, envelope_of, ToSocket};
use chrono::{DateTime, Duration, Utc};
use ipnet::IpNet;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::sync::Arc;
use vrrp_protocol::ActivityLevel;

/// The agent must send AUTH within this long.
pub const AUTH_WINDOW_SECS: i64 = 5;
/// Messages waiting for one agent socket before it counts as stuck. Only state
/// requests and close orders go this way; a bounded channel allocates every slot
/// up front, so a small queue keeps a thousand sockets cheap.
const QUEUE: usize = 32;

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
        .and_then(super::request::bearer)
        .map(str::to_owned);
    let token = param("token").or(bearer).filter(|t| !t.is_empty());
    let Some(peer) = rq.remote_addr().copied() else {
        return;
    };
    let mut busy = tracker.busy(peer);
    // The AUTH window starts when the socket opens.
    let auth_until = app.clock.now() + Duration::seconds(AUTH_WINDOW_SECS);
    let Some(socket) = ws::accept(rq, &mut busy) else {
        return;
    };
    let source = canonical_ip(peer.ip());
    let client = match check_credentials(&app, client_id.as_deref(), token.as_deref(), source) {
        Ok(client) => client,
        Err((code, reason)) => {
            log::info!("Refused an agent connection from {source}: {code} {reason}");
            return socket.close(code, reason);
        }
    };
    let name = format!("ws-agent:{}", client.id.chars().take(8).collect::<String>());
    let spawned = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .name(name)
        .spawn(move || {
            let _busy = busy;
            if crate::lifecycle::contain_panics(|| serve(&app, socket, client, source, auth_until))
                .is_none()
            {
                log::error!("The agent connection from {peer} ended in a panic");
            }
        });
    if let Err(e) = spawned {
        log::error!("Cannot start a thread for the agent connection from {peer}: {e}");
    }
}

fn serve(
    app: &Arc<App>,
    socket: WsSocket,
    client: ClientRecord,
    source: IpAddr,
    auth_until: DateTime<Utc>,
) {
    let (outbox, inbox) = match live::channel::<ToSocket>(QUEUE) {
        Ok(c) => c,
        Err(e) => {
            log::error!("Cannot create a queue for an agent socket: {e}");
            return;
        }
    };
    let stage = Stage::AwaitingAuth {
        client,
        until: auth_until,
    };
    let mut session = AgentSession {
        app: app.clone(),
        stage,
        source,
        outbox: Some(outbox),
        connection: None,
    };
    ws::run(socket, &inbox, &app.clock, &mut session);
    session.ended();
}

/// Stages 1 to 5: both halves of the identity, the address checks.
fn check_credentials(
    app: &App,
    client_id: Option<&str>,
    token: Option<&str>,
    source: IpAddr,
) -> Result<ClientRecord, (u16, &'static str)> {
    let (Some(id), Some(token)) = (client_id, token) else {
        return Err((4001, "Authentication required"));
    };
    let client = match clients::find_by_credentials(&app.db, id, &sha256_hex(token)) {
        Ok(Some(c)) => c,
        Ok(None) => return Err((4003, "Invalid credentials")),
        Err(e) => {
            log::error!("{e}");
            return Err((1011, "Internal error"));
        }
    };
    let allowed = &app.config.security.allowed_networks;
    let in_allowed = match source {
        IpAddr::V4(v4) => allowed.iter().any(|n| n.contains(&v4)),
        IpAddr::V6(_) => false,
    };
    if !allowed.is_empty() && !in_allowed {
        return Err((4003, "Access denied"));
    }
    if client.mode == Mode::Outbound {
        return Err((4003, "Access denied"));
    }
    if let Some(rule) = client.inbound_allowed_ip.as_deref() {
        if !address_matches(rule, source) {
            return Err((4003, "IP address mismatch"));
        }
    }
    Ok(client)
}

/// An allowed-address rule: an address or a CIDR network.
pub fn address_matches(rule: &str, source: IpAddr) -> bool {
    let rule = rule.trim();
    if let Ok(net) = rule.parse::<IpNet>() {
        return net.contains(&source);
    }
    rule.parse::<IpAddr>()
        .is_ok_and(|ip| canonical_ip(ip) == source)
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

struct AgentSession {
    app: Arc<App>,
    stage: Stage,
    source: IpAddr,
    outbox: Option<live::Outbox<ToSocket>>,
    /// Our id in the agent registry once authenticated.
    connection: Option<u64>,
}

fn message(text: &str) -> Option<(String, Value)> {
    let v: Value = serde_json::from_str(text).ok()?;
    let kind = v.get("type")?.as_str()?.to_owned();
    Some((kind, v.get("payload").cloned().unwrap_or(Value::Null)))
}

impl Session for AgentSession {
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
                Flow::Close(4001, "Authentication timed out")
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

impl AgentSession {
    /// Stage 6: the first message must be AUTH with a payload that parses.
    fn first_message(&mut self, socket: &mut WsSocket, client: ClientRecord, text: &str) -> Flow {
        let Some((kind, payload)) = message(text).filter(|(k, _)| k == "AUTH") else {
            let _ = socket.send_text(&envelope("AUTH_FAILURE", json!({})));
            return Flow::Close(4003, "Forbidden");
        };
        debug_assert_eq!(kind, "AUTH");
        let Some(auth) = parse_auth(&payload) else {
            return Flow::Close(4000, "Invalid payload");
        };
        let app = &self.app;
        let now = app.clock.now();
        let Some(outbox) = self.outbox.take() else {
            return Flow::End;
        };
        self.connection = Some(
            app.agents
                .register(&client.id, auth.capabilities.clone(), outbox),
        );
        if let Err(e) = clients::record_connected(
            &app.db,
            client.id.clone(),
            Some(auth.version.clone()),
            Some(self.source.to_string()),
            now,
        ) {
            log::error!("Cannot record the connection of {}: {e}", client.id);
        }
        if socket
            .send_text(&envelope(
                "AUTH_SUCCESS",
                json!({ "clientId": client.id, "lastSyncTime": null }),
            ))
            .is_err()
        {
            return Flow::End;
        }
        log::info!(
            "Agent {} ({}) connected from {}, version {}",
            client.name(),
            client.id,
            self.source,
            auth.version
        );
        app.broadcast_clients();
        app.tell_evaluator(EvalMsg::Connection(client.id.clone()));
        let data = json!({ "connectionMode": "inbound", "version": auth.version, "clientName": client.name() });
        app.record_activity(vec![Event::server(
            "client.connected",
            ActivityLevel::Trace,
            Some(client.id.clone()),
            data,
            now,
        )]);
        self.stage = Stage::Authenticated { client };
        Flow::Continue
    }

    fn after_auth(&mut self, socket: &mut WsSocket, client: &ClientRecord, text: &str) -> Flow {
        let Some((kind, payload)) = message(text) else {
            log::debug!(
                "Agent {} sent a frame that is not a message; dropped",
                client.id
            );
            return Flow::Continue;
        };
        match kind.as_str() {
            "KEEPALIVED_UPDATE" => self.reading(client, &payload),
            "ACTIVITY" => return self.activity(socket, client, &payload),
            other => log::debug!(
                "Agent {} sent an unknown message type {other:?}; dropped",
                client.id
            ),
        }
        Flow::Continue
    }

    fn reading(&self, client: &ClientRecord, payload: &Value) {
        let app = &self.app;
        let reading = match readings::normalise(payload) {
            Ok(r) => r,
            Err(e) => {
                log::warn!(
                    "Discarded a malformed reading from {} ({}): {}",
                    client.name(),
                    client.id,
                    e.0
                );
                return;
            }
        };
        match app.readings.store(
            &app.db,
            client.id.clone(),
            reading,
            crate::clock::iso(app.clock.now()),
        ) {
            Ok(Some(stored)) => {
                // The evaluator first: a dashboard that sees the broadcast and asks
                // for the cluster list then finds the reading in it.
                app.tell_evaluator(EvalMsg::Reading(client.id.clone(), stored.clone()));
                app.hub
                    .broadcast(envelope_of("KEEPALIVED_STATE_UPDATE", &stored));
            }
            Ok(None) => {}
            Err(e) => log::error!("Cannot store the reading of {}: {e}", client.id),
        }
    }

    fn activity(&self, socket: &mut WsSocket, client: &ClientRecord, payload: &Value) -> Flow {
        let app = &self.app;
        let Some(entries) = activity::parse_batch(payload, &client.id, app.clock.now()) else {
            log::warn!(
                "Agent {} sent an ACTIVITY batch without an events list; dropped without ack",
                client.id
            );
            return Flow::Continue;
        };
        let mut ack = Vec::new();
        let mut events = Vec::new();
        for entry in entries {
            match entry {
                Incoming::Event(e) => {
                    ack.push(e.id.clone());
                    events.push(*e);
                }
                Incoming::Refused { id, why } => {
                    log::warn!("Agent {} sent activity event {id:?} that does not parse ({why}); acknowledged, not stored", client.id);
                    ack.push(id);
                }
                Incoming::Dropped { why } => log::warn!(
                    "Agent {} sent an activity event without id ({why}); dropped",
                    client.id
                ),
            }
        }
        if !app.record_activity(events) {
            // Nothing was stored: no ack, so the agent offers the batch again.
            return Flow::Continue;
        }
        if socket
            .send_text(&envelope("ACTIVITY_ACK", json!({ "ids": ack })))
            .is_err()
        {
            return Flow::End;
        }
        Flow::Continue
    }

    /// The socket ended: the client goes offline unless a newer connection took over.
    fn ended(&self) {
        let (Stage::Authenticated { client }, Some(connection)) = (&self.stage, self.connection)
        else {
            return;
        };
        let app = &self.app;
        if !app.agents.unregister(&client.id, connection) {
            return;
        }
        log::info!("Agent {} ({}) disconnected", client.name(), client.id);
        app.broadcast_clients();
        app.tell_evaluator(EvalMsg::Connection(client.id.clone()));
        // A deleted client leaves no trace of its last disconnect.
        if clients::get(&app.db, &client.id).ok().flatten().is_some() {
            let data = json!({ "connectionMode": "inbound", "version": Value::Null, "clientName": client.name() });
            app.record_activity(vec![Event::server(
                "client.disconnected",
                ActivityLevel::Trace,
                Some(client.id.clone()),
                data,
                app.clock.now(),
            )]);
        }
    }
}

struct Auth {
    version: String,
    capabilities: Vec<String>,
}

/// AUTH `{hostname, version, capabilities}`; a missing capabilities list reads as empty.
fn parse_auth(payload: &Value) -> Option<Auth> {
    let obj = payload.as_object()?;
    obj.get("hostname")?.as_str()?;
    let version = obj.get("version")?.as_str()?.to_owned();
    let capabilities = match obj.get("capabilities") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect(),
        Some(_) => return None,
    };
    Some(Auth {
        version,
        capabilities,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_address_rules() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(address_matches("192.0.2.7", ip("192.0.2.7")));
        assert!(!address_matches("192.0.2.7", ip("192.0.2.8")));
        assert!(address_matches("192.0.2.0/24", ip("192.0.2.200")));
        assert!(!address_matches("192.0.2.0/24", ip("198.51.100.1")));
        assert!(!address_matches("garbage", ip("192.0.2.7")));
    }

    #[test]
    fn auth_payloads() {
        assert!(parse_auth(&json!({"hostname": "h", "version": "1"}))
            .unwrap()
            .capabilities
            .is_empty());
        assert_eq!(
            parse_auth(&json!({"hostname": "h", "version": "1", "capabilities": ["vrrp", 5]}))
                .unwrap()
                .capabilities,
            ["vrrp"]
        );
        assert!(parse_auth(&json!({"version": "1"})).is_none());
        assert!(
            parse_auth(&json!({"hostname": "h", "version": "1", "capabilities": "vrrp"})).is_none()
        );
        assert!(parse_auth(&json!("AUTH")).is_none());
    }
}
