//! Outbound mode's rules, without I/O: where the server dials an agent (the
//! address rule), when it dials again (the ladder), and what an operator is
//! told when a registration fails (the reasons of the spec's table).
//!
//! The dialling itself (sockets, the `dial:<client>` threads) is in
//! `http::sessions::outbound`; the session after AUTH is `agents::session`, the same
//! as for inbound agents.

use chrono::Duration;
use std::net::{IpAddr, Ipv6Addr};

/// The agent's web server port when an address names none.
pub const DEFAULT_AGENT_PORT: u16 = 3011;
/// Connecting, and each answer during a registration, within this long.
pub const DIAL_TIMEOUT_SECS: u64 = 10;

/// Where an outbound agent is dialled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// A name, an IPv4 address, or an IPv6 address in brackets.
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Target {
    /// The stored form: `host:port`, or `wss://host:port` for TLS.
    pub fn stored(&self) -> String {
        let scheme = if self.tls { "wss://" } else { "" };
        format!("{scheme}{}:{}", self.host, self.port)
    }

    /// The WebSocket URL of one of the agent's routes, without any query.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}:{}{path}", self.host, self.port)
    }
}

/// The spec's address rule: `host`, `host:port` or `wss://host:port`; `:3011`
/// when no port is given; a bare address or `ws://` is plaintext; any other
/// scheme, any path, query or credentials are refused. The error is the
/// message after `outboundTargetAddress: `.
pub fn parse_target(address: &str) -> Result<Target, &'static str> {
    let address = address.trim();
    if address.is_empty() {
        return Err("must not be empty");
    }
    let (rest, tls) = match address.split_once("://") {
        None => (address, false),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("wss") => (rest, true),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("ws") => (rest, false),
        Some(_) => return Err("only ws:// and wss:// addresses can be dialled"),
    };
    if rest.contains('@') {
        return Err("must not hold credentials");
    }
    if rest.contains(['/', '?', '#']) {
        return Err("must be host or host:port, without a path or query");
    }
    // A bare IPv6 address: no port can be told apart, so it takes the default.
    if let Ok(v6) = rest.parse::<Ipv6Addr>() {
        return Ok(Target {
            host: format!("[{v6}]"),
            port: DEFAULT_AGENT_PORT,
            tls,
        });
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') => (host, Some(port)),
        _ => (rest, None),
    };
    let port = match port {
        None => DEFAULT_AGENT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.chars().all(|c| c.is_ascii_digit()) => n,
            _ => return Err("must have a port from 1 to 65535"),
        },
    };
    let host = if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let v6: Ipv6Addr = inner
            .parse()
            .map_err(|_| "must hold an IPv6 address inside brackets")?;
        format!("[{v6}]")
    } else if host.parse::<IpAddr>().is_ok() {
        host.to_owned()
    } else if is_host_name(host) {
        host.to_ascii_lowercase()
    } else {
        return Err("must be a host name or an IP address");
    };
    Ok(Target { host, port, tls })
}

fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// The reconnect ladder (`vrrp_protocol::ladder`: 5, 10, 30, then every 60 s),
/// without the agent's jitter. `failures` counts the attempts since a socket
/// last opened (the ladder restarts when one opens); 0, after a session ended,
/// waits the first step too.
pub fn reconnect_delay(failures: u32) -> Duration {
    let n = (failures as usize).saturating_sub(1);
    Duration::from_std(vrrp_protocol::ladder::step(n)).unwrap_or(Duration::seconds(60))
}

/// How a registration attempt on `/ws/register` ended, as the agent answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrationEnd {
    /// REGISTRATION_SUCCESS, with the agent's own host name.
    Registered { hostname: Option<String> },
    /// REGISTRATION_FAILURE with its error text.
    Refused(String),
    /// The agent closed with this code and reason.
    Closed(u16, String),
    /// No connection, a failed handshake, or no answer in time.
    Failed(String),
}

/// The reason after `Could not establish connection to client. `: what
/// happened and what to do, for each row of the spec's table.
pub fn failure_reason(end: &RegistrationEnd) -> String {
    match end {
        RegistrationEnd::Registered { .. } => "Registration succeeded.".into(),
        RegistrationEnd::Closed(4003, r) if r == "Already registered" => {
            "The agent already holds an identity (Already registered): delete identity.json in the agent's data directory, restart the agent, then try again.".into()
        }
        RegistrationEnd::Closed(4003, r) if r == "No registration secret configured" => {
            "The agent has no registration secret configured (No registration secret configured): it is older than the setup PIN; upgrade it or set SVC_REGISTRATION_SECRET on it.".into()
        }
        RegistrationEnd::Closed(4003, r) if r == "Invalid secret" => invalid_secret(),
        RegistrationEnd::Refused(_) => invalid_secret(),
        RegistrationEnd::Closed(4001, r) if r == "Registration timed out" => {
            "The agent gave up waiting for the registration request (Registration timed out); try again.".into()
        }
        RegistrationEnd::Closed(4003, r) if r == "Access denied" => {
            "The agent refused this server's address (Access denied): add it to the agent's allowedNetworks.".into()
        }
        RegistrationEnd::Closed(code, r) => {
            format!("The agent closed the connection ({code} {r}).")
        }
        RegistrationEnd::Failed(e) => e.clone(),
    }
}

fn invalid_secret() -> String {
    "Neither the setup PIN nor the registration secret matches (Invalid secret); after 5 wrong attempts the agent issues a new PIN in its log.".into()
}

/// The reason when the registration succeeded but the first `/ws/agent`
/// session did not authenticate.
pub fn auth_failed_reason(detail: &str) -> String {
    format!("Registration succeeded but AUTH failed ({detail}): the agent already stored its token and must be reset (delete identity.json, restart it) before retrying.")
}

/// A dial error in words an operator can act on: a TLS mismatch says which
/// side speaks what.
pub fn dial_error(target: &Target, error: &str) -> String {
    let lower = error.to_ascii_lowercase();
    if target.tls
        && (lower.contains("corrupt message")
            || lower.contains("invalidcontenttype")
            || lower.contains("invalid content type")
            || lower.contains("received corrupt"))
    {
        return format!("{error} (the agent does not speak TLS: dial it as {}:{} without wss://, or give it a tls block)", target.host, target.port);
    }
    if !target.tls
        && (lower.contains("http") && lower.contains("400") || lower.contains("connection reset"))
    {
        return format!(
            "{error} (if the agent has a tls block, dial it as wss://{}:{})",
            target.host, target.port
        );
    }
    error.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(host: &str, port: u16, tls: bool) -> Target {
        Target {
            host: host.into(),
            port,
            tls,
        }
    }

    #[test]
    fn the_address_rule() {
        assert_eq!(parse_target("lb1"), Ok(t("lb1", 3011, false)));
        assert_eq!(
            parse_target(" LB1.example:4000 "),
            Ok(t("lb1.example", 4000, false))
        );
        assert_eq!(parse_target("192.0.2.7"), Ok(t("192.0.2.7", 3011, false)));
        assert_eq!(
            parse_target("ws://192.0.2.7:3012"),
            Ok(t("192.0.2.7", 3012, false))
        );
        assert_eq!(parse_target("wss://lb1:3011"), Ok(t("lb1", 3011, true)));
        assert_eq!(parse_target("WSS://lb1"), Ok(t("lb1", 3011, true)));
        assert_eq!(
            parse_target("[2001:db8::1]:3012"),
            Ok(t("[2001:db8::1]", 3012, false))
        );
        assert_eq!(
            parse_target("2001:db8::1"),
            Ok(t("[2001:db8::1]", 3011, false))
        );
        assert_eq!(parse_target("wss://[::1]"), Ok(t("[::1]", 3011, true)));
        for bad in [
            "",
            "   ",
            "http://lb1",
            "https://lb1:3011",
            "ftp://lb1",
            "lb1/ws/agent",
            "lb1:3011/",
            "lb1?x=1",
            "user:pw@lb1",
            "wss://u@lb1:1",
            "lb1:0",
            "lb1:65536",
            "lb1:+80",
            "lb1:",
            "lb 1",
            "-lb1",
            "[nope]:3011",
            "wss://",
        ] {
            assert!(parse_target(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn stored_forms_read_back_the_same() {
        for address in ["lb1", "wss://lb1:4000", "ws://[::1]", "192.0.2.7:1"] {
            let target = parse_target(address).unwrap();
            assert_eq!(parse_target(&target.stored()), Ok(target.clone()));
        }
        assert_eq!(parse_target("ws://lb1").unwrap().stored(), "lb1:3011");
        assert_eq!(
            parse_target("wss://lb1").unwrap().stored(),
            "wss://lb1:3011"
        );
        assert_eq!(
            parse_target("wss://lb1").unwrap().url("/ws/register"),
            "wss://lb1:3011/ws/register"
        );
    }

    #[test]
    fn the_ladder_is_5_10_30_then_60() {
        let steps: Vec<i64> = (1..=6).map(|n| reconnect_delay(n).num_seconds()).collect();
        assert_eq!(steps, [5, 10, 30, 60, 60, 60]);
        assert_eq!(reconnect_delay(0).num_seconds(), 5, "after a session ended");
    }

    #[test]
    fn every_row_of_the_reason_table_says_what_to_do() {
        let closed = |code, r: &str| failure_reason(&RegistrationEnd::Closed(code, r.into()));
        assert!(closed(4003, "Already registered").contains("delete identity.json"));
        assert!(
            closed(4003, "No registration secret configured").contains("SVC_REGISTRATION_SECRET")
        );
        assert!(closed(4003, "Invalid secret").contains("new PIN"));
        assert!(failure_reason(&RegistrationEnd::Refused("wrong".into())).contains("new PIN"));
        assert!(closed(4001, "Registration timed out").contains("gave up waiting"));
        assert!(closed(4003, "Access denied").contains("allowedNetworks"));
        assert_eq!(
            failure_reason(&RegistrationEnd::Failed("timed out".into())),
            "timed out"
        );
        assert!(auth_failed_reason("4001 Unauthorized").contains("must be reset"));
        let tls = t("lb1", 3011, true);
        assert!(dial_error(&tls, "TLS: received corrupt message").contains("does not speak TLS"));
        assert_eq!(dial_error(&tls, "cannot connect"), "cannot connect");
    }
}
