//! A request as handlers see it: method, decoded path, query, headers, body, and
//! the caller's address as far as it can be believed.

use crate::config::values::canonical_ip;
use crate::config::ProxyRule;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};

/// Largest request body read; webhook templates (64 KiB) are the biggest legitimate one.
pub const MAX_BODY: usize = 1024 * 1024;

pub struct Req {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
    /// The caller: the peer, or the first untrusted address of `X-Forwarded-For`
    /// when the peer is a trusted proxy.
    pub client_ip: IpAddr,
    /// Came in over HTTPS: only known through a trusted proxy's `X-Forwarded-Proto`.
    pub https: bool,
    /// The authority the request was sent to: a trusted proxy's
    /// `X-Forwarded-Host`, else `Host`.
    pub host: Option<String>,
}

pub enum ReadError {
    TooLarge,
    Io(std::io::Error),
}

impl Req {
    pub fn read(rq: &mut tiny_http::Request, trusted: &[ProxyRule]) -> Result<Req, ReadError> {
        let peer = rq
            .remote_addr()
            .copied()
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        let headers: Vec<(String, String)> = rq
            .headers()
            .iter()
            .map(|h| {
                (
                    h.field.as_str().as_str().to_ascii_lowercase(),
                    h.value.as_str().to_owned(),
                )
            })
            .collect();
        let (raw_path, raw_query) = match rq.url().split_once('?') {
            Some((p, q)) => (p.to_owned(), q.to_owned()),
            None => (rq.url().to_owned(), String::new()),
        };
        // Refused before a byte of it is read: the body can only be too large.
        if rq.body_length().is_some_and(|n| n > MAX_BODY) {
            return Err(ReadError::TooLarge);
        }
        let mut body = Vec::new();
        rq.as_reader()
            .take(MAX_BODY as u64 + 1)
            .read_to_end(&mut body)
            .map_err(ReadError::Io)?;
        if body.len() > MAX_BODY {
            return Err(ReadError::TooLarge);
        }
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let (client_ip, https) = client_address(
            peer.ip(),
            header("x-forwarded-for"),
            header("x-forwarded-proto"),
            trusted,
        );
        let host = request_host(
            peer.ip(),
            header("x-forwarded-host"),
            header("host"),
            trusted,
        );
        Ok(Req {
            host,
            method: rq.method().as_str().to_ascii_uppercase(),
            path: raw_path,
            query: parse_query(&raw_query),
            headers,
            body,
            peer,
            client_ip,
            https,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path split into decoded segments, e.g. `/api/v1/users/3` → `[api, v1, users, 3]`.
    pub fn segments(&self) -> Vec<String> {
        self.path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(percent_decode)
            .collect()
    }

    /// The session token: cookie `svc_session`, else `Authorization: Bearer`.
    pub fn session_token(&self) -> Option<&str> {
        if let Some(t) = self
            .header("cookie")
            .and_then(|c| crate::auth::cookies::find(c, crate::auth::cookies::SESSION_COOKIE))
        {
            return Some(t);
        }
        self.bearer_token()
    }

    pub fn bearer_token(&self) -> Option<&str> {
        bearer(self.header("authorization")?)
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme in any case).
pub fn bearer(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Who the caller is, believing forwarding headers only from trusted proxies.
/// Walks `X-Forwarded-For` from the right and stops at the first address that is
/// not a trusted proxy, so a client cannot forge its address by prepending entries.
pub fn client_address(
    peer: IpAddr,
    forwarded_for: Option<&str>,
    forwarded_proto: Option<&str>,
    trusted: &[ProxyRule],
) -> (IpAddr, bool) {
    let peer = canonical_ip(peer);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|r| r.contains(ip));
    if !is_trusted(peer) {
        return (peer, false);
    }
    let https = forwarded_proto
        .and_then(|p| p.split(',').next())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    let mut client = peer;
    if let Some(list) = forwarded_for {
        for hop in list.split(',').rev() {
            let Ok(ip) = hop.trim().parse::<IpAddr>() else {
                break;
            };
            client = canonical_ip(ip);
            if !is_trusted(client) {
                break;
            }
        }
    }
    (client, https)
}

/// The authority a request was sent to: the first entry of `X-Forwarded-Host`
/// when the peer is a trusted proxy, else the `Host` header.
pub fn request_host(
    peer: IpAddr,
    forwarded_host: Option<&str>,
    host: Option<&str>,
    trusted: &[ProxyRule],
) -> Option<String> {
    let peer = canonical_ip(peer);
    let forwarded = forwarded_host
        .filter(|_| trusted.iter().any(|r| r.contains(peer)))
        .and_then(|f| f.split(',').next())
        .map(str::trim)
        .filter(|f| !f.is_empty());
    forwarded.or(host).map(str::to_owned)
}

fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(pair), String::new()),
        })
        .collect()
}

/// Decodes `%XX` escapes (and `+` as space in queries is not needed by any route).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex_digit(bytes[i + 1]), hex_digit(bytes[i + 2])) {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<ProxyRule> {
        list.iter().map(|s| ProxyRule::parse(s).unwrap()).collect()
    }

    #[test]
    fn forwarded_headers_only_from_trusted_peers() {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let none = rules(&[]);
        assert_eq!(
            client_address(peer, Some("198.51.100.7"), Some("https"), &none),
            (peer, false)
        );
        let lo = rules(&["loopback"]);
        let (ip, https) = client_address(peer, Some("198.51.100.7"), Some("https"), &lo);
        assert_eq!(ip.to_string(), "198.51.100.7");
        assert!(https);
        // A client prepending its own entry cannot hide behind it.
        let (ip, _) = client_address(peer, Some("203.0.113.1, 198.51.100.7"), None, &lo);
        assert_eq!(ip.to_string(), "198.51.100.7");
        // Several trusted hops are skipped.
        let chain = rules(&["loopback", "10.0.0.0/8"]);
        let (ip, https) =
            client_address(peer, Some("198.51.100.7, 10.1.1.1"), Some("http"), &chain);
        assert_eq!(ip.to_string(), "198.51.100.7");
        assert!(!https);
        // A garbage entry stops the walk at the last good address.
        let (ip, _) = client_address(peer, Some("nonsense"), None, &lo);
        assert_eq!(ip, peer);
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%é%"), "%é%");
        assert_eq!(
            parse_query("code=a%3Db&state=&x"),
            vec![
                ("code".into(), "a=b".into()),
                ("state".into(), "".into()),
                ("x".into(), "".into())
            ]
        );
    }
}
