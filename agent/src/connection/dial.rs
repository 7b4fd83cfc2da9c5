//! Dialling the server: TCP with a timeout, TLS (rustls with ring) when the URL is https,
//! the WebSocket upgrade on `/ws/agent?clientId=..&token=..`, AUTH, and the wait for
//! AUTH_SUCCESS (and the fingerprint key it may carry), all inside one deadline read
//! from the driven clock. Certificate checking is decided per dial from
//! `allow_self_signed`; nothing process-wide is touched.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};
use vrrp_protocol::kind;

use super::fingerprint::{FingerprintKey, NoKey};
use super::session::{envelope, parse_envelope};
use crate::clock::Clock;
use crate::config::Secret;

/// What the agent dials with: the server and both halves of the identity.
#[derive(Clone)]
pub struct Target {
    pub base_url: String,
    pub client_id: String,
    pub token: Secret,
    pub allow_self_signed: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Target({}, client {})", self.base_url, self.client_id)
    }
}

/// Any byte stream a WebSocket can run over (the web server's upgraded streams).
pub trait Duplex: Read + Write + Send {}
impl<T: Read + Write + Send + ?Sized> Duplex for T {}

/// A socket the server dialled on the agent's web server (`/ws/agent`): the upgraded
/// stream the web server handed over (plain or TLS), and a duplicate of its TCP
/// descriptor for what the stream cannot do: timeouts, non-blocking mode, poll(2).
pub struct Accepted {
    pub io: Box<dyn Duplex>,
    pub sock: TcpStream,
}

/// A socket the agent dialled (plain or TLS, `vrrp_dial`), or one the server dialled.
pub enum Stream {
    Dialled(vrrp_dial::Stream),
    Accepted(Accepted),
}

impl Stream {
    /// The TCP socket underneath (timeouts, non-blocking mode, poll).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Dialled(s) => s.tcp(),
            Stream::Accepted(a) => &a.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Dialled(s) => s.read(buf),
            Stream::Accepted(a) => a.io.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Dialled(s) => s.write(buf),
            Stream::Accepted(a) => a.io.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Dialled(s) => s.flush(),
            Stream::Accepted(a) => a.io.flush(),
        }
    }
}

pub type Socket = WebSocket<Stream>;

/// Small buffers: the agent sends readings of a few KB.
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(16 * 1024)
        .write_buffer_size(0)
        .max_message_size(Some(4 << 20))
        .max_frame_size(Some(4 << 20))
}

use vrrp_dial::encode_query_value as encode;

/// `http(s)://host[:port][/prefix]` → (`ws(s)://host[:port][/prefix]/ws/agent`, tls).
pub fn agent_endpoint(base_url: &str) -> Result<(String, bool), String> {
    let base = base_url.trim().trim_end_matches('/');
    let (rest, tls) = if let Some(r) = base.strip_prefix("https://") {
        (r, true)
    } else if let Some(r) = base.strip_prefix("http://") {
        (r, false)
    } else {
        return Err(format!("serverUrl {base} is not an http or https URL"));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("serverUrl {base} has no host"));
    }
    Ok((
        format!("{}://{rest}/ws/agent", if tls { "wss" } else { "ws" }),
        tls,
    ))
}

/// The URL with the secret in it: never logged (`masked_url` is).
fn full_url(endpoint: &str, t: &Target) -> String {
    format!(
        "{endpoint}?clientId={}&token={}",
        encode(&t.client_id),
        encode(t.token.expose())
    )
}

pub fn masked_url(endpoint: &str, t: &Target) -> String {
    format!("{endpoint}?clientId={}&token=****", encode(&t.client_id))
}

/// Why a blocking step stopped early.
pub enum Abort {
    /// The caller asked to stop (shutdown).
    Stop,
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Dials and authenticates within `deadline` (the 5 s handshake timeout). `tick` is the
/// socket read timeout between looks at the clock; `poll` runs on every tick (it collects
/// waiting `POST /api/connect` callers) and returns `Some(Abort)` to give up. Gives the
/// socket and the server's fingerprint key, if it sent one.
pub fn connect(
    t: &Target,
    hostname: &str,
    version: &str,
    clock: &dyn Clock,
    deadline: Instant,
    tick: Duration,
    poll: &mut dyn FnMut() -> Option<Abort>,
) -> Result<(Socket, Option<FingerprintKey>), String> {
    let (endpoint, tls) = agent_endpoint(&t.base_url)?;
    let uri: tungstenite::http::Uri = endpoint
        .parse()
        .map_err(|e| format!("serverUrl cannot be used: {e}"))?;
    let host = uri.host().ok_or("serverUrl has no host")?.to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let left = |c: &dyn Clock| deadline.saturating_duration_since(c.now());
    let timed_out = || "handshake not finished within 5 s".to_string();

    let left_now = left(clock);
    if left_now.is_zero() {
        return Err(timed_out());
    }
    let target = vrrp_dial::Endpoint {
        host: host.clone(),
        port,
        tls: tls.then_some(t.allow_self_signed),
    };
    let stream = vrrp_dial::open(&target, Instant::now() + left_now)?;
    stream
        .tcp()
        .set_read_timeout(Some(tick))
        .map_err(|e| e.to_string())?;
    let request = full_url(&endpoint, t)
        .into_client_request()
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let mut hs = tungstenite::client::client_with_config(
        request,
        Stream::Dialled(stream),
        Some(ws_config()),
    );
    let mut ws = loop {
        match hs {
            Ok((ws, _)) => break ws,
            Err(HandshakeError::Interrupted(mid)) => {
                if let Some(Abort::Stop) = poll() {
                    return Err("stopped".into());
                }
                if left(clock).is_zero() {
                    return Err(timed_out());
                }
                hs = mid.handshake();
            }
            Err(HandshakeError::Failure(e)) => return Err(format!("WebSocket handshake: {e}")),
        }
    };
    let key = authenticate(&mut ws, hostname, version, clock, deadline, poll)?;
    Ok((ws, key))
}

/// The connect procedure after the socket opened, the same for both directions: AUTH
/// first, then AUTH_SUCCESS before `deadline` (AUTH_FAILURE is not handled on its own;
/// the server closes). The socket must have a short read timeout (`tick`). Gives the
/// fingerprint key of AUTH_SUCCESS: `None` from a server that sends none (older) or
/// one that is not hex (a warning in the log, without the value).
pub fn authenticate(
    ws: &mut Socket,
    hostname: &str,
    version: &str,
    clock: &dyn Clock,
    deadline: Instant,
    poll: &mut dyn FnMut() -> Option<Abort>,
) -> Result<Option<FingerprintKey>, String> {
    let auth = envelope(
        kind::AUTH,
        json!({ "hostname": hostname, "version": version, "capabilities": ["vrrp"] }),
    );
    ws.send(Message::text(auth))
        .map_err(|e| format!("cannot send AUTH: {e}"))?;
    loop {
        if let Some(Abort::Stop) = poll() {
            return Err("stopped".into());
        }
        if deadline.saturating_duration_since(clock.now()).is_zero() {
            return Err("no AUTH_SUCCESS within 5 s".into());
        }
        match ws.read() {
            Ok(Message::Text(text)) => match parse_envelope(&text) {
                Some((k, p)) if k == kind::AUTH_SUCCESS => {
                    return Ok(match FingerprintKey::from_auth_success(&p) {
                        Ok(key) => Some(key),
                        Err(NoKey::Absent) => None,
                        Err(NoKey::Invalid) => {
                            log::warn!(
                                "AUTH_SUCCESS carries a fingerprintKey that is not a hex key; \
                                 readings go to this server without password fingerprints"
                            );
                            None
                        }
                    });
                }
                Some((k, p)) if k == kind::AUTH_FAILURE => {
                    log::debug!("AUTH_FAILURE {p}");
                }
                other => log::debug!(
                    "message before AUTH_SUCCESS dropped: {:?}",
                    other.map(|(k, _)| k)
                ),
            },
            Ok(Message::Close(f)) => {
                return Err(match f {
                    Some(f) => format!("closed by the server: {} {}", u16::from(f.code), f.reason),
                    None => "closed by the server".into(),
                })
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if would_block(&e) => {}
            Err(e) => return Err(format!("connection lost before AUTH_SUCCESS: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_from_server_url() {
        assert_eq!(
            agent_endpoint("http://10.0.0.1:3010/").unwrap(),
            ("ws://10.0.0.1:3010/ws/agent".to_string(), false)
        );
        assert_eq!(
            agent_endpoint("https://mon.example/vrrp").unwrap(),
            ("wss://mon.example/vrrp/ws/agent".to_string(), true)
        );
        assert!(agent_endpoint("ftp://x").is_err());
        assert!(agent_endpoint("http://").is_err());
    }

    #[test]
    fn token_is_encoded_in_the_url_and_masked_in_the_log_form() {
        let t = Target {
            base_url: "http://h".into(),
            client_id: "c 1".into(),
            token: Secret::new("ab&cd".into()),
            allow_self_signed: false,
        };
        assert_eq!(
            full_url("ws://h/ws/agent", &t),
            "ws://h/ws/agent?clientId=c%201&token=ab%26cd"
        );
        let m = masked_url("ws://h/ws/agent", &t);
        assert!(!m.contains("ab") && m.ends_with("token=****"), "{m}");
        assert!(!format!("{t:?}").contains("ab&cd"));
    }
}
