//! Outbound mode's decisions, without I/O: who may dial `/ws/register` and `/ws/agent`
//! (`allowedNetworks`), what a REGISTRATION_REQUEST must hold, whether a `/ws/agent`
//! query carries both halves of the stored identity, and the spec's close codes and
//! texts. The web server's `ws` module carries these decisions out on real sockets.
//!
//! Secrets (the PIN or registration secret, the auth token) are compared through their
//! SHA-256 digests in constant time, so neither their bytes nor their length leak by
//! timing; the client id is compared normally (spec, authentication rule 4).

use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use vrrp_protocol::{close, kind};

use crate::config::Secret;
use crate::store::datadir::Identity;

/// How long `/ws/register` waits for the REGISTRATION_REQUEST after the socket opened
/// (the spec names the close, not the time; see ARCHITECTURE.md's decisions).
pub const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(10);

/// A close code and its text, as the spec's error table writes them: the one
/// refusal type of both binaries.
pub use vrrp_protocol::Refusal;

pub const ACCESS_DENIED: Refusal = Refusal {
    code: close::FORBIDDEN,
    reason: "Access denied",
};
pub const UNAUTHORIZED: Refusal = Refusal {
    code: close::AUTH_REQUIRED,
    reason: "Unauthorized",
};
pub const ALREADY_REGISTERED: Refusal = Refusal {
    code: close::FORBIDDEN,
    reason: "Already registered",
};
pub const NO_SECRET: Refusal = Refusal {
    code: close::FORBIDDEN,
    reason: "No registration secret configured",
};
pub const INVALID_SECRET: Refusal = Refusal {
    code: close::FORBIDDEN,
    reason: "Invalid secret",
};
pub const TIMED_OUT: Refusal = Refusal {
    code: close::AUTH_REQUIRED,
    reason: "Registration timed out",
};
/// A first message that is not a well-formed REGISTRATION_REQUEST (policy violation).
pub const INVALID_REQUEST: Refusal = Refusal {
    code: close::POLICY_VIOLATION,
    reason: "Invalid registration request",
};
/// The server's own text for a socket replaced by a newer one (server spec).
pub const REPLACED: Refusal = Refusal {
    code: close::SESSION_ENDED,
    reason: "Replaced by new connection",
};

/// An empty list allows every peer; otherwise the peer's IPv4 address (also when it
/// arrives IPv4-mapped on an IPv6 socket) must lie in one of the networks.
pub fn peer_allowed(networks: &[ipnet::Ipv4Net], peer: IpAddr) -> bool {
    if networks.is_empty() {
        return true;
    }
    let v4 = match peer {
        IpAddr::V4(a) => a,
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(a) => a,
            None => return false,
        },
    };
    networks.iter().any(|n| n.contains(&v4))
}

/// Equal in constant time: both sides are hashed first, so the comparison always runs
/// over 32 bytes whatever the lengths.
pub fn secret_matches(given: &str, expected: &str) -> bool {
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The payload of REGISTRATION_REQUEST (design.md): the PIN or registration secret, the
/// server-issued client id and the fresh auth token.
pub struct RegistrationRequest {
    pub secret: Secret,
    pub client_id: String,
    pub auth_token: Secret,
}

impl std::fmt::Debug for RegistrationRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RegistrationRequest(client {})", self.client_id)
    }
}

/// Longest client id or auth token taken (the server's are 36 and 128 characters).
const MAX_FIELD: usize = 1024;

/// Reads the first message on `/ws/register`. The error names what is wrong (for the
/// REGISTRATION_FAILURE text); it never repeats a secret.
pub fn parse_registration(text: &str) -> Result<RegistrationRequest, String> {
    let v: Value = serde_json::from_str(text).map_err(|_| "message is not JSON".to_string())?;
    match v.get("type").and_then(Value::as_str) {
        Some(kind::REGISTRATION_REQUEST) => {}
        Some(other) => return Err(format!("expected REGISTRATION_REQUEST, got {other}")),
        None => return Err("message has no type".into()),
    }
    let p = v.get("payload").unwrap_or(&Value::Null);
    let field = |name: &str| -> Result<String, String> {
        match p.get(name) {
            Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_FIELD => Ok(s.clone()),
            Some(Value::String(s)) if !s.is_empty() => {
                Err(format!("payload.{name}: at most {MAX_FIELD} characters"))
            }
            Some(Value::String(_)) | None | Some(Value::Null) => {
                Err(format!("payload.{name}: is required"))
            }
            Some(_) => Err(format!("payload.{name}: must be a string")),
        }
    };
    Ok(RegistrationRequest {
        secret: Secret::new(field("secret")?),
        client_id: field("clientId")?,
        auth_token: Secret::new(field("authToken")?),
    })
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Percent-decoding of one query value (`+` is a space, as in forms).
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = hex(*b.get(i + 1)?)?;
                let lo = hex(*b.get(i + 2)?)?;
                out.push(hi << 4 | lo);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The first value of `name` in a query string (without the `?`).
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| decode(k).as_deref() == Some(name))
        .and_then(|(_, v)| decode(v))
}

/// `/ws/agent`'s credential check: refused once registered inbound (the agent dials its
/// server itself) or without an identity; then the client id, then the token, each a
/// 4001 `Unauthorized` when it does not match.
pub fn check_agent_query(
    query: &str,
    stored: Option<&Identity>,
    registered_inbound: bool,
) -> Result<(), Refusal> {
    let Some(id) = stored else {
        return Err(UNAUTHORIZED);
    };
    if registered_inbound {
        return Err(UNAUTHORIZED);
    }
    let client_id = query_param(query, "clientId").unwrap_or_default();
    let token = query_param(query, "token").unwrap_or_default();
    // Both are evaluated before deciding, so the answer's timing does not say which
    // half was wrong.
    let id_ok = client_id == id.client_id;
    let token_ok = secret_matches(&token, &id.auth_token);
    if id_ok && token_ok {
        Ok(())
    } else {
        Err(UNAUTHORIZED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(s: &[&str]) -> Vec<ipnet::Ipv4Net> {
        s.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn allowed_networks_empty_allows_all_else_only_members() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(peer_allowed(&[], ip("203.0.113.9")));
        assert!(peer_allowed(&[], ip("::1")));
        let n = nets(&["10.0.0.0/8", "192.168.1.7/32"]);
        assert!(peer_allowed(&n, ip("10.1.2.3")));
        assert!(peer_allowed(&n, ip("192.168.1.7")));
        assert!(!peer_allowed(&n, ip("192.168.1.8")));
        assert!(!peer_allowed(&n, ip("127.0.0.1")));
        assert!(peer_allowed(&n, ip("::ffff:10.9.9.9")));
        assert!(!peer_allowed(&n, ip("::1")));
    }

    #[test]
    fn secrets_compare_by_value_whatever_the_length() {
        assert!(secret_matches("K7QM-3XRD", "K7QM-3XRD"));
        assert!(!secret_matches("K7QM-3XRD", "K7QM-3XRE"));
        assert!(!secret_matches("", "x"));
        assert!(!secret_matches("abc", "abcdef"));
    }

    #[test]
    fn registration_request_shape() {
        let ok = r#"{"type":"REGISTRATION_REQUEST","payload":{"secret":"s","clientId":"c","authToken":"t","extra":1}}"#;
        let r = parse_registration(ok).unwrap();
        assert_eq!(
            (
                r.secret.expose(),
                r.client_id.as_str(),
                r.auth_token.expose()
            ),
            ("s", "c", "t")
        );
        assert!(!format!("{r:?}").contains('"'));
        let e = |t: &str| parse_registration(t).unwrap_err();
        assert_eq!(e("nope"), "message is not JSON");
        assert!(e(r#"{"type":"AUTH","payload":{}}"#).contains("REGISTRATION_REQUEST"));
        assert_eq!(
            e(r#"{"type":"REGISTRATION_REQUEST","payload":{"clientId":"c","authToken":"t"}}"#),
            "payload.secret: is required"
        );
        assert_eq!(
            e(
                r#"{"type":"REGISTRATION_REQUEST","payload":{"secret":"s","clientId":5,"authToken":"t"}}"#
            ),
            "payload.clientId: must be a string"
        );
        let long = "x".repeat(MAX_FIELD + 1);
        let text = format!(
            r#"{{"type":"REGISTRATION_REQUEST","payload":{{"secret":"s","clientId":"c","authToken":"{long}"}}}}"#
        );
        assert!(e(&text).starts_with("payload.authToken: at most"));
    }

    #[test]
    fn query_values_are_decoded() {
        let q = "clientId=c%201&token=ab%26cd&x";
        assert_eq!(query_param(q, "clientId").as_deref(), Some("c 1"));
        assert_eq!(query_param(q, "token").as_deref(), Some("ab&cd"));
        assert_eq!(query_param(q, "x").as_deref(), Some(""));
        assert_eq!(query_param(q, "y"), None);
        assert_eq!(query_param("token=%zz", "token"), None);
    }

    #[test]
    fn agent_query_needs_both_halves_and_an_outbound_identity() {
        let id = Identity {
            client_id: "c1".into(),
            auth_token: "tok".into(),
        };
        assert_eq!(
            check_agent_query("clientId=c1&token=tok", Some(&id), false),
            Ok(())
        );
        for q in [
            "clientId=c2&token=tok",
            "clientId=c1&token=tok2",
            "",
            "token=tok",
        ] {
            assert_eq!(
                check_agent_query(q, Some(&id), false),
                Err(UNAUTHORIZED),
                "{q}"
            );
        }
        assert_eq!(
            check_agent_query("clientId=c1&token=tok", Some(&id), true),
            Err(UNAUTHORIZED)
        );
        assert_eq!(
            check_agent_query("clientId=c1&token=tok", None, false),
            Err(UNAUTHORIZED)
        );
    }
}
