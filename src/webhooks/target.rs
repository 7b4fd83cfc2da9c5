//! Where a webhook may be sent: the rules for a URL's host, checked
//! when a webhook is saved (where its host is not templated) and before every
//! send (the rendered URL).
//!
//! - An IPv4 host only as a dotted quad: `2130706433`, `0x7f000001`, `0177.1`
//!   and other forms URL parsers read as addresses are refused, so what an
//!   operator reads in the list is where the request goes.
//! - Link-local addresses (169.254.0.0/16, fe80::/10, also as IPv4-mapped IPv6)
//!   are refused unless `webhooks.allowed_networks` lists them: a cloud's
//!   metadata service lives there.
//! - Private and loopback targets stay allowed: internal chat servers are
//!   common.
//! - A host name is judged by what it resolves to, at the send: [`Resolver`]
//!   is the lookup ureq makes, and it refuses a name with a link-local address
//!   among its answers. ureq connects to the addresses it returned, so a second
//!   lookup cannot swap in another (DNS rebinding).

use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs};
use ureq::unversioned::transport::NextTimeout;

/// Checks `url`'s host against the rules; the error names what is wrong.
pub fn check(url: &str, allowed: &[IpNet]) -> Result<(), String> {
    let Some(host) = host_of(url) else {
        return Err("url: has no host".into());
    };
    let ip = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        // A zone id (`%eth0`) is no address of ours to judge: refused.
        IpAddr::V6(
            v6.parse::<Ipv6Addr>()
                .map_err(|_| format!("url: {host} is not an IPv6 address"))?,
        )
    } else if looks_numeric(host) {
        IpAddr::V4(dotted_quad(host).ok_or_else(|| {
            format!(
                "url: the host {host} must be an IPv4 address as a dotted quad (like 192.0.2.10)"
            )
        })?)
    } else {
        return Ok(());
    };
    if is_link_local(ip) && !allowed.iter().any(|n| n.contains(&ip)) {
        return Err(format!(
            "url: {ip} is a link-local address, refused unless webhooks.allowed_networks lists it"
        ));
    }
    Ok(())
}

/// What a host name resolved to, judged: every address must pass the
/// link-local rule, or the name is refused (one bad answer among good ones is
/// still where a request could go).
pub fn check_resolved(host: &str, addrs: &[SocketAddr], allowed: &[IpNet]) -> Result<(), String> {
    match addrs
        .iter()
        .map(|a| a.ip())
        .find(|ip| is_link_local(*ip) && !allowed.iter().any(|n| n.contains(ip)))
    {
        Some(ip) => Err(format!(
            "url: {host} resolves to {ip}, a link-local address, refused unless webhooks.allowed_networks lists it"
        )),
        None => Ok(()),
    }
}

/// ureq's lookup with [`check_resolved`] on its answers. A refusal is an I/O
/// error of kind `PermissionDenied` carrying the sentence.
#[derive(Debug)]
pub struct Resolver {
    pub allowed: Arc<[IpNet]>,
}

impl ureq::unversioned::resolver::Resolver for Resolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        let host = uri.host().unwrap_or("?");
        check_resolved(host, &addrs, &self.allowed).map_err(|refused| {
            ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                refused,
            ))
        })?;
        Ok(addrs)
    }
}

/// [`check`] for a URL as saved: a host with a template in it is only known
/// once rendered, so it is checked before each send instead.
pub fn check_saved(url: &str, allowed: &[IpNet]) -> Result<(), String> {
    match host_of(url) {
        Some(host) if host.contains("{{") => Ok(()),
        _ => check(url, allowed),
    }
}

/// The host of an `http(s)://` URL: without user info and port, lower case
/// is not needed (numbers and brackets only are judged).
fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let host = if authority.starts_with('[') {
        let end = authority.find(']')?;
        &authority[..=end]
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

/// A host URL parsers take for an IPv4 address: its last label (a trailing dot
/// aside) is a number, decimal or `0x` hex (WHATWG URL's rule).
fn looks_numeric(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    let last = host.rsplit('.').next().unwrap_or(host);
    if last.is_empty() {
        return false;
    }
    let hex = last
        .strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    hex || last.chars().all(|c| c.is_ascii_digit())
}

/// Four decimal parts 0–255, no leading zeros (which some read as octal).
fn dotted_quad(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || (p.len() > 1 && p.starts_with('0')) {
            return None;
        }
        if !p.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.is_link_local(),
            None => (v6.segments()[0] & 0xffc0) == 0xfe80,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_hosts_only_as_dotted_quads() {
        assert!(check("http://192.0.2.10:8080/x", &[]).is_ok());
        assert!(
            check("http://127.0.0.1/x", &[]).is_ok(),
            "loopback stays allowed"
        );
        assert!(
            check("https://10.1.2.3/x", &[]).is_ok(),
            "private stays allowed"
        );
        assert!(check("https://chat.example/x", &[]).is_ok());
        assert!(check("https://1chat.example/x", &[]).is_ok());
        for bad in [
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0X7F.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://127.0.0.1.1/",
            "http://256.0.0.1/",
            "http://user@2130706433:80/",
            "http://127.0.0.01/",
        ] {
            let e = check(bad, &[]).unwrap_err();
            assert!(e.contains("dotted quad"), "{bad}: {e}");
        }
    }

    #[test]
    fn link_local_only_when_listed() {
        let e = check("http://169.254.169.254/latest/meta-data", &[]).unwrap_err();
        assert!(e.contains("link-local"), "{e}");
        assert!(check("http://[fe80::1]/", &[]).is_err());
        assert!(check("http://[::ffff:169.254.1.1]/", &[]).is_err());
        assert!(check("http://[::1]:9000/", &[]).is_ok());
        let allowed: Vec<IpNet> = vec!["169.254.169.254/32".parse().unwrap()];
        assert!(check("http://169.254.169.254/", &allowed).is_ok());
        assert!(check("http://169.254.1.1/", &allowed).is_err());
    }

    #[test]
    fn names_are_judged_by_every_address_they_resolve_to() {
        let at = |ip: &str| SocketAddr::new(ip.parse().unwrap(), 443);
        let good = [at("192.0.2.10"), at("2001:db8::1")];
        assert!(check_resolved("chat.example", &good, &[]).is_ok());
        let e = check_resolved(
            "meta.example",
            &[at("192.0.2.10"), at("169.254.169.254")],
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e,
            "url: meta.example resolves to 169.254.169.254, a link-local address, refused unless webhooks.allowed_networks lists it"
        );
        assert!(check_resolved("v6.example", &[at("fe80::1")], &[]).is_err());
        let allowed: Vec<IpNet> = vec!["169.254.169.254/32".parse().unwrap()];
        assert!(check_resolved("meta.example", &[at("169.254.169.254")], &allowed).is_ok());
    }

    #[test]
    fn templated_hosts_wait_for_the_send() {
        assert!(check_saved("https://{{client.hostname}}/x", &[]).is_ok());
        assert!(check_saved("https://hooks.example/{{client.hostname}}", &[]).is_ok());
        assert!(check_saved("https://2130706433/{{x}}", &[]).is_err());
    }
}
