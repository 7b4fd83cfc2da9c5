//! Dialling the server: TCP with a timeout, TLS (rustls with ring) when the URL is https,
//! the WebSocket upgrade on `/ws/agent?clientId=..&token=..`, AUTH, and the wait for
//! AUTH_SUCCESS, all inside one deadline read from the driven clock. Certificate checking
//! is decided per dial from `allow_self_signed`; nothing process-wide is touched.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use serde_json::json;
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

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

/// A plain or TLS socket.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
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

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

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

/// Accepts any certificate: `allowSelfSignedCertificates: true`, for this dial only.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A TLS client config for one dial.
pub fn tls_config(allow_self_signed: bool) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let cfg = if allow_self_signed {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(Arc::new(cfg))
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
/// waiting `POST /api/connect` callers) and returns `Some(Abort)` to give up.
pub fn connect(
    t: &Target,
    hostname: &str,
    version: &str,
    clock: &dyn Clock,
    deadline: Instant,
    tick: Duration,
    poll: &mut dyn FnMut() -> Option<Abort>,
) -> Result<Socket, String> {
    let (endpoint, tls) = agent_endpoint(&t.base_url)?;
    let uri: tungstenite::http::Uri = endpoint
        .parse()
        .map_err(|e| format!("serverUrl cannot be used: {e}"))?;
    let host = uri.host().ok_or("serverUrl has no host")?.to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let left = |c: &dyn Clock| deadline.saturating_duration_since(c.now());
    let timed_out = || "handshake not finished within 5 s".to_string();

    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addrs: Vec<_> = (bare_host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last_err = format!("{host} has no address");
    let mut tcp = None;
    for a in addrs {
        let l = left(clock);
        if l.is_zero() {
            return Err(timed_out());
        }
        match TcpStream::connect_timeout(&a, l) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last_err = format!("cannot connect to {a}: {e}"),
        }
    }
    let tcp = tcp.ok_or(last_err)?;
    let _ = tcp.set_nodelay(true);
    tcp.set_read_timeout(Some(tick))
        .map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let stream = if tls {
        let name = ServerName::try_from(bare_host.clone())
            .map_err(|e| format!("{host} is not a TLS server name: {e}"))?;
        let conn = rustls::ClientConnection::new(tls_config(t.allow_self_signed)?, name)
            .map_err(|e| format!("TLS setup: {e}"))?;
        Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
    } else {
        Stream::Plain(tcp)
    };
    let request = full_url(&endpoint, t)
        .into_client_request()
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let mut hs = tungstenite::client::client_with_config(request, stream, Some(ws_config()));
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
    let auth = envelope(
        "AUTH",
        json!({ "hostname": hostname, "version": version, "capabilities": ["vrrp"] }),
    );
    ws.send(Message::text(auth))
        .map_err(|e| format!("cannot send AUTH: {e}"))?;
    loop {
        if let Some(Abort::Stop) = poll() {
            return Err("stopped".into());
        }
        if left(clock).is_zero() {
            return Err("no AUTH_SUCCESS within 5 s".into());
        }
        match ws.read() {
            Ok(Message::Text(text)) => match parse_envelope(&text) {
                Some((k, _)) if k == "AUTH_SUCCESS" => return Ok(ws),
                Some((k, p)) if k == "AUTH_FAILURE" => {
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
