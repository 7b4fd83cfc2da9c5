//! Dialling a socket for a WebSocket: TCP with a connect timeout, and TLS
//! (rustls with the ring provider) when asked, with the certificate check
//! decided per dial: verified against the web PKI roots, or any certificate
//! accepted (a self-signed one) when the caller's configuration allows it.
//! Nothing process-wide is touched.
//!
//! Both directions use it: the agent dials the server (inbound mode) and the
//! server dials agents (outbound mode). The WebSocket handshake itself stays
//! with each caller.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

/// A plain or TLS socket.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    /// The TCP socket underneath (timeouts, non-blocking mode, poll).
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

/// Accepts any certificate, for one dial whose configuration allows self-signed
/// certificates. Signatures are still checked, so the handshake is a real one.
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

/// How to reach the other side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// A name or address; an IPv6 address may be written in brackets.
    pub host: String,
    pub port: u16,
    /// `Some(allow_self_signed)` for TLS.
    pub tls: Option<bool>,
}

/// Opens TCP (every resolved address in turn) and wraps it in TLS when asked,
/// all before `deadline`. The TLS handshake itself happens on first use.
/// Errors are sentences for a log line or an API answer.
pub fn open(endpoint: &Endpoint, deadline: Instant) -> Result<Stream, String> {
    let bare_host = endpoint
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addrs: Vec<_> = (bare_host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", endpoint.host))?
        .collect();
    let mut last_err = format!("{} has no address", endpoint.host);
    let mut tcp = None;
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("timed out connecting to {}", endpoint.host));
        }
        match TcpStream::connect_timeout(&a, left) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last_err = format!("cannot connect to {a}: {e}"),
        }
    }
    let tcp = tcp.ok_or(last_err)?;
    let _ = tcp.set_nodelay(true);
    tcp.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    match endpoint.tls {
        None => Ok(Stream::Plain(tcp)),
        Some(allow_self_signed) => {
            let name = ServerName::try_from(bare_host)
                .map_err(|e| format!("{} is not a TLS server name: {e}", endpoint.host))?;
            let conn = rustls::ClientConnection::new(tls_config(allow_self_signed)?, name)
                .map_err(|e| format!("TLS setup: {e}"))?;
            Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
        }
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
pub fn encode_query_value(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode_query_value("c 1"), "c%201");
        assert_eq!(encode_query_value("ab&cd=é"), "ab%26cd%3D%C3%A9");
        assert_eq!(encode_query_value("A-z_0.~"), "A-z_0.~");
    }

    #[test]
    fn nothing_listening_is_an_error_that_names_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let endpoint = Endpoint {
            host: "127.0.0.1".into(),
            port,
            tls: None,
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        let err = open(&endpoint, deadline).err().unwrap();
        assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    }

    #[test]
    fn a_tls_dial_needs_a_server_name_or_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = Endpoint {
            host: "127.0.0.1".into(),
            port: listener.local_addr().unwrap().port(),
            tls: Some(false),
        };
        let stream = open(&endpoint, Instant::now() + Duration::from_secs(2)).unwrap();
        assert!(matches!(stream, Stream::Tls(_)));
    }
}
