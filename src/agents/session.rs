//! What an agent session decides, whichever side dialled: the credential
//! checks (stages 1 to 5), AUTH, and what becomes of readings, activity and the
//! end of a connection.
//!
//! The socket itself is served by `http::sessions::agent` (inbound); outbound dialling
//! will use the same functions. Everything here works on [`SessionHandles`], the
//! narrow set of shared parts a session touches, never on the whole `App`.

use super::clients::{self, ClientRecord, Mode};
use super::feed::ClientsChanged;
use super::readings::{self, Latest, Reading};
use super::AgentRegistry;
use crate::activity::{self, ActivitySink, Event, Incoming};
use crate::clock::{iso, SharedClock};
use crate::config::values::canonical_ip;
use crate::db::Db;
use crate::live::{Hub, Outbox, ToSocket};
use crate::secrets::sha256_hex;
use ipnet::{IpNet, Ipv4Net};
use serde_json::{json, Value};
use std::net::IpAddr;
use std::sync::Arc;
pub use vrrp_protocol::Refusal;
use vrrp_protocol::{close, ActivityLevel};

/// Who hears of a client's stored readings and connection changes: the cluster
/// evaluator. A trait so that the agents domain does not depend on clusters.
pub trait AgentObserver: Send + Sync {
    /// A reading was stored (as the API shows it). Must not block.
    fn reading_stored(&self, client_id: &str, reading: Arc<Reading>);
    /// The client connected or disconnected. Must not block.
    fn connection_changed(&self, client_id: &str);
}

/// The shared parts an agent session uses. Cheap to clone.
#[derive(Clone)]
pub struct SessionHandles {
    pub db: Arc<Db>,
    pub clock: SharedClock,
    pub agents: Arc<AgentRegistry>,
    pub readings: Arc<Latest>,
    pub hub: Arc<Hub>,
    pub activity: ActivitySink,
    pub clients_changed: ClientsChanged,
    /// The `cluster-eval` thread.
    pub evaluator: Arc<dyn AgentObserver>,
    /// Host actions waiting for their agent's answer.
    pub actions: Arc<super::actions::HostActions>,
    /// The key every agent of this server fingerprints its VRRP passwords with
    /// (hex, sent in AUTH_SUCCESS; [`fingerprint_key`]).
    pub fingerprint_key: Arc<str>,
}

/// The password-fingerprint key of a server: derived from its own secret, so it
/// is the same for all its agents and across restarts, and needs no setting.
/// Not the secret itself: HMAC-SHA256(secret, a fixed label), hex.
pub fn fingerprint_key(server_secret: &str) -> String {
    vrrp_protocol::fingerprint::hmac_sha256(
        server_secret.as_bytes(),
        b"vrrp-monitor auth fingerprint v1",
    )
    .iter()
    .map(|b| format!("{b:02x}"))
    .collect()
}

/// Stages 1 to 5: both halves of the identity, the address checks.
pub fn check_credentials(
    db: &Db,
    allowed_networks: &[Ipv4Net],
    client_id: Option<&str>,
    token: Option<&str>,
    source: IpAddr,
) -> Result<ClientRecord, Refusal> {
    let (Some(id), Some(token)) = (client_id, token) else {
        return Err(Refusal::new(
            close::AUTH_REQUIRED,
            "Authentication required",
        ));
    };
    let client = match clients::find_by_credentials(db, id, &sha256_hex(token)) {
        Ok(Some(c)) => c,
        Ok(None) => return Err(Refusal::new(close::FORBIDDEN, "Invalid credentials")),
        Err(e) => {
            log::error!("{e}");
            return Err(Refusal::new(close::INTERNAL_ERROR, "Internal error"));
        }
    };
    let in_allowed = match source {
        IpAddr::V4(v4) => allowed_networks.iter().any(|n| n.contains(&v4)),
        IpAddr::V6(_) => false,
    };
    if !allowed_networks.is_empty() && !in_allowed {
        return Err(Refusal::new(close::FORBIDDEN, "Access denied"));
    }
    if client.mode == Mode::Outbound {
        return Err(Refusal::new(close::FORBIDDEN, "Access denied"));
    }
    if let Some(rule) = client.inbound_allowed_ip.as_deref() {
        if !address_matches(rule, source) {
            return Err(Refusal::new(close::FORBIDDEN, "IP address mismatch"));
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

/// The AUTH message's payload.
pub struct Auth {
    pub version: String,
    pub capabilities: Vec<String>,
}

/// AUTH `{hostname, version, capabilities}`; a missing capabilities list reads as empty.
pub fn parse_auth(payload: &Value) -> Option<Auth> {
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

/// A message's type and payload; `None` for a frame that is not a message.
pub fn message(text: &str) -> Option<(String, Value)> {
    vrrp_protocol::messages::envelope::decode(text)
}

/// AUTH accepted: the connection becomes the client's current one (a previous
/// one is replaced) and its version and (inbound) address are stored. Returns the
/// connection's id in the registry. Call [`announce_connected`] once AUTH_SUCCESS
/// went out.
pub fn authenticated(
    h: &SessionHandles,
    client: &ClientRecord,
    auth: &Auth,
    source: IpAddr,
    outbox: Outbox<ToSocket>,
) -> u64 {
    let inbound_source = (client.mode == Mode::Inbound).then(|| source.to_string());
    let connection = h
        .agents
        .register(&client.id, auth.capabilities.clone(), outbox);
    if let Err(e) = clients::record_connected(
        &h.db,
        client.id.clone(),
        Some(auth.version.clone()),
        inbound_source,
        h.clock.utc(),
    ) {
        log::error!("Cannot record the connection of {}: {e}", client.id);
    }
    connection
}

/// Tells dashboards, the evaluator and the activity list that the client is
/// connected (`connection_mode`: `inbound` or `outbound`).
pub fn announce_connected(
    h: &SessionHandles,
    client: &ClientRecord,
    auth: &Auth,
    connection_mode: &str,
) {
    h.clients_changed.notify();
    h.evaluator.connection_changed(&client.id);
    let data = json!({ "connectionMode": connection_mode, "version": auth.version, "clientName": client.name() });
    h.activity.record(vec![Event::server(
        "client.connected",
        ActivityLevel::Trace,
        Some(client.id.clone()),
        data,
        h.clock.utc(),
    )]);
}

/// KEEPALIVED_UPDATE: parsed into the typed reading (once, here), stored (unless older than what is stored),
/// told to the evaluator, then broadcast. A malformed reading is logged and
/// dropped; what is stored stays.
pub fn reading(h: &SessionHandles, client: &ClientRecord, payload: Value) {
    let reading = match readings::parse(payload) {
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
    match h
        .readings
        .store_with_update(&h.db, client.id.clone(), reading, iso(h.clock.utc()))
    {
        Ok(Some((stored, update))) => {
            // The evaluator first: a dashboard that sees the broadcast and asks
            // for the cluster list then finds the reading in it.
            h.evaluator.reading_stored(&client.id, stored);
            h.hub.broadcast(update);
        }
        Ok(None) => {}
        Err(e) => e.log_write_failure(format_args!("Cannot store the reading of {}", client.id)),
    }
}

/// ACTIVITY: stores the batch's new events and returns the ids to acknowledge
/// (every event with an id, stored now, before, or refused as unparseable).
/// `None`: nothing to acknowledge (no events list, or storing failed, so the
/// agent offers the batch again).
pub fn activity(h: &SessionHandles, client: &ClientRecord, payload: &Value) -> Option<Vec<String>> {
    let Some(entries) = activity::parse_batch(payload, &client.id, h.clock.utc()) else {
        log::warn!(
            "Agent {} sent an ACTIVITY batch without an events list; dropped without ack",
            client.id
        );
        return None;
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
    h.activity.record(events).then_some(ack)
}

/// The socket ended: the client goes offline unless a newer connection took over.
pub fn ended(h: &SessionHandles, client: &ClientRecord, connection: u64, connection_mode: &str) {
    if !h.agents.unregister(&client.id, connection) {
        return;
    }
    log::info!("Agent {} ({}) disconnected", client.name(), client.id);
    h.clients_changed.notify();
    h.evaluator.connection_changed(&client.id);
    // A deleted client leaves no trace of its last disconnect. The stored record
    // has the version this connection's AUTH wrote (the one the socket started
    // with predates it).
    if let Some(stored) = clients::get(&h.db, &client.id).ok().flatten() {
        let data = json!({ "connectionMode": connection_mode, "version": stored.version, "clientName": client.name() });
        h.activity.record(vec![Event::server(
            "client.disconnected",
            ActivityLevel::Trace,
            Some(client.id.clone()),
            data,
            h.clock.utc(),
        )]);
    }
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
