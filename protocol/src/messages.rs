//! The socket vocabulary both binaries speak: the `{type, payload}` envelope,
//! message kinds, close codes and the refusal (a close code with its text) that
//! ends a connection.
//!
//! Constants rather than an enum for the kinds: a receiver drops a kind it does
//! not know (versioning rule 1), so the wire word, not a closed set, is what a
//! session matches on; constants keep both sides spelling it the same way.

/// The frame every socket message is: `{"type": KIND, "payload": ...}`.
pub mod envelope {
    use serde::Serialize;
    use serde_json::Value;

    #[derive(Serialize)]
    struct Frame<'a, T: ?Sized> {
        #[serde(rename = "type")]
        kind: &'a str,
        payload: &'a T,
    }

    /// One message as the text of one frame; the payload is written straight
    /// into it, without a `Value` in between.
    pub fn encode<T: Serialize + ?Sized>(kind: &str, payload: &T) -> String {
        serde_json::to_string(&Frame { kind, payload }).unwrap_or_default()
    }

    /// A frame's kind and payload (`null` when it has none); `None` when the
    /// text is not an envelope. The payload is taken out, not copied: a
    /// reading is the bulk of most messages.
    pub fn decode(text: &str) -> Option<(String, Value)> {
        let mut v: Value = serde_json::from_str(text).ok()?;
        let kind = v.get("type")?.as_str()?.to_owned();
        let payload = v
            .as_object_mut()
            .and_then(|o| o.remove("payload"))
            .unwrap_or(Value::Null);
        Some((kind, payload))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        #[test]
        fn a_message_goes_out_and_comes_back() {
            let text = encode("AUTH", &json!({ "hostname": "lb-1" }));
            assert_eq!(text, r#"{"type":"AUTH","payload":{"hostname":"lb-1"}}"#);
            assert_eq!(
                decode(&text),
                Some(("AUTH".into(), json!({ "hostname": "lb-1" })))
            );
            assert_eq!(
                decode(r#"{"type":"PING"}"#),
                Some(("PING".into(), Value::Null))
            );
            for bad in ["", "[]", r#"{"payload":{}}"#, r#"{"type":5}"#, "{"] {
                assert_eq!(decode(bad), None, "{bad}");
            }
        }
    }
}

/// Message kinds (`type` of the `{type, payload}` envelope).
pub mod kind {
    /// Agent to server: the first message, `{hostname, version, capabilities}`.
    pub const AUTH: &str = "AUTH";
    /// Server to agent: AUTH accepted.
    pub const AUTH_SUCCESS: &str = "AUTH_SUCCESS";
    /// Server to agent: the first message was not AUTH.
    pub const AUTH_FAILURE: &str = "AUTH_FAILURE";
    /// Agent to server: a reading of keepalived.
    pub const KEEPALIVED_UPDATE: &str = "KEEPALIVED_UPDATE";
    /// Server to dashboards: a stored reading, with `clientId` and `receivedAt`.
    pub const KEEPALIVED_STATE_UPDATE: &str = "KEEPALIVED_STATE_UPDATE";
    /// Server to agent: read now and send a reading.
    pub const REQUEST_STATE_UPDATE: &str = "REQUEST_STATE_UPDATE";
    /// Agent to server: a batch of activity events.
    pub const ACTIVITY: &str = "ACTIVITY";
    /// Server to agent: the ids of the batch it stored (or refuses to ever store).
    pub const ACTIVITY_ACK: &str = "ACTIVITY_ACK";
    /// Server to agent on `/ws/register` (outbound): the registration secret.
    pub const REGISTRATION_REQUEST: &str = "REGISTRATION_REQUEST";
    /// Agent to server on `/ws/register`: registered, with its `hostname`.
    pub const REGISTRATION_SUCCESS: &str = "REGISTRATION_SUCCESS";
    /// Agent to server on `/ws/register`: refused, with an `error`.
    pub const REGISTRATION_FAILURE: &str = "REGISTRATION_FAILURE";
    /// Server to dashboards: the client list.
    pub const CLIENTS_UPDATE: &str = "CLIENTS_UPDATE";
    /// Server to dashboards: what changed in the cluster list (`seq`, `changed`,
    /// `removed`; the whole list with `full: true` on connect).
    pub const CLUSTERS_UPDATE: &str = "CLUSTERS_UPDATE";
    /// Server to agent: drain or undrain the host (`vrrp_protocol::HostAction`).
    pub const HOST_ACTION: &str = "HOST_ACTION";
    /// Agent to server: the answer to a HOST_ACTION (`vrrp_protocol::HostActionResult`).
    pub const HOST_ACTION_RESULT: &str = "HOST_ACTION_RESULT";
}

/// WebSocket close codes the spec's error tables name.
pub mod close {
    /// A normal close (the server redials an outbound agent).
    pub const NORMAL: u16 = 1000;
    /// The side is stopping (the server's or the agent's SIGTERM): reconnect later.
    pub const GOING_AWAY: u16 = 1001;
    /// A first message that is not what the socket expects (a malformed
    /// REGISTRATION_REQUEST on the agent's `/ws/register`).
    pub const POLICY_VIOLATION: u16 = 1008;
    /// The server failed inside (a database error during the checks).
    pub const INTERNAL_ERROR: u16 = 1011;
    /// The server ends an agent's session: a newer connection replaced it, the
    /// client was deleted, or its AUTH payload does not parse.
    pub const SESSION_ENDED: u16 = 4000;
    /// No (or invalid) credentials, or none in time.
    pub const AUTH_REQUIRED: u16 = 4001;
    /// A dashboard whose user changed their own password: reconnect with the fresh cookie.
    pub const CREDENTIALS_CHANGED: u16 = 4002;
    /// Credentials or address refused.
    pub const FORBIDDEN: u16 = 4003;
}

/// A refused (or ended) connection: the close code and the reason text sent with
/// it, as the spec's error tables write them. One type on both sides, so that a
/// refusal reads the same wherever it is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub code: u16,
    pub reason: &'static str,
}

impl Refusal {
    pub const fn new(code: u16, reason: &'static str) -> Refusal {
        Refusal { code, reason }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.reason)
    }
}
