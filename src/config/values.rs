//! Parsers for single configuration values: durations, log levels, address rules.
//!
//! Pure functions, so every accepted and refused spelling is tested directly.

use ipnet::{IpNet, Ipv4Net};
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::time::Duration;

/// Log levels of the spec: one enum for both binaries, in `vrrp_protocol`.
pub use vrrp_protocol::LogLevel;

/// `jwtExpiresIn`: `12h`, `30m`, `7d`, `45s`, or a whole number of seconds.
pub fn parse_lifetime(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("\"{s}\" is not a lifetime (a number of seconds, or e.g. 30m, 12h, 7d)");
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_lowercase()),
        Some(_) => (t, 's'),
        None => return Err(bad()),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let secs = match unit {
        's' => n,
        'm' => n.checked_mul(60).ok_or_else(bad)?,
        'h' => n.checked_mul(3600).ok_or_else(bad)?,
        'd' => n.checked_mul(86_400).ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if secs == 0 {
        return Err(format!("\"{s}\" must be longer than zero"));
    }
    Ok(Duration::from_secs(secs))
}

/// A listen port, 1 to 65535.
pub fn parse_port(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=65535).contains(&n) => Ok(n as u16),
        _ => Err(format!("\"{s}\" is not a port (1 to 65535)")),
    }
}

/// One entry of `security.trusted_proxies`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyRule {
    Net(IpNet),
    Loopback,
    LinkLocal,
    UniqueLocal,
}

impl ProxyRule {
    pub fn parse(s: &str) -> Result<ProxyRule, String> {
        let t = s.trim();
        match t {
            "loopback" => return Ok(ProxyRule::Loopback),
            "linklocal" => return Ok(ProxyRule::LinkLocal),
            "uniquelocal" => return Ok(ProxyRule::UniqueLocal),
            _ => {}
        }
        if let Ok(net) = IpNet::from_str(t) {
            return Ok(ProxyRule::Net(net.trunc()));
        }
        if let Ok(ip) = IpAddr::from_str(t) {
            return Ok(ProxyRule::Net(IpNet::from(ip)));
        }
        Err(format!(
            "\"{s}\" is not an IP address, a CIDR network, loopback, linklocal or uniquelocal"
        ))
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical_ip(ip);
        let in_any = |nets: &[&str]| {
            nets.iter()
                .filter_map(|n| IpNet::from_str(n).ok())
                .any(|n| n.contains(&ip))
        };
        match self {
            ProxyRule::Net(net) => net.contains(&ip),
            ProxyRule::Loopback => in_any(&["127.0.0.0/8", "::1/128"]),
            ProxyRule::LinkLocal => in_any(&["169.254.0.0/16", "fe80::/10"]),
            ProxyRule::UniqueLocal => {
                in_any(&["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"])
            }
        }
    }
}

/// An IPv4 peer reaching a dual-stack socket shows up as `::ffff:a.b.c.d`;
/// every address rule is written for the IPv4 form.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// An IPv4 address (a /32) or IPv4 CIDR network, as `security.allowed_networks`
/// and a client's `inboundAllowedIp` take them.
pub fn parse_ipv4_net(s: &str) -> Result<Ipv4Net, String> {
    let t = s.trim();
    if let Ok(net) = Ipv4Net::from_str(t) {
        return Ok(net.trunc());
    }
    if let Ok(ip) = Ipv4Addr::from_str(t) {
        return Ok(Ipv4Net::from(ip));
    }
    Err(format!("\"{s}\" is not an IPv4 address or CIDR network"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes() {
        assert_eq!(parse_lifetime("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_lifetime("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_lifetime("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_lifetime("3600"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_lifetime("45s"), Ok(Duration::from_secs(45)));
        for bad in ["", "h", "12x", "-5", "1.5h", "0", "0h", "twelve hours"] {
            assert!(parse_lifetime(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn ports() {
        assert_eq!(parse_port("3010"), Ok(3010));
        assert_eq!(parse_port("65535"), Ok(65535));
        for bad in ["0", "65536", "-1", "http", ""] {
            assert!(parse_port(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn log_levels() {
        assert_eq!("TRACE".parse::<LogLevel>(), Ok(LogLevel::Trace));
        assert_eq!("silent".parse::<LogLevel>(), Ok(LogLevel::Silent));
        assert!("verbose".parse::<LogLevel>().is_err());
    }

    #[test]
    fn proxy_rules() {
        let ip = |s: &str| IpAddr::from_str(s).unwrap();
        let lo = ProxyRule::parse("loopback").unwrap();
        assert!(lo.contains(ip("127.0.0.1")));
        assert!(lo.contains(ip("::1")));
        assert!(lo.contains(ip("::ffff:127.0.0.9")));
        assert!(!lo.contains(ip("10.0.0.1")));
        let ul = ProxyRule::parse("uniquelocal").unwrap();
        assert!(ul.contains(ip("172.20.1.1")) && ul.contains(ip("fd00::1")));
        assert!(!ul.contains(ip("172.32.0.1")));
        let ll = ProxyRule::parse("linklocal").unwrap();
        assert!(ll.contains(ip("169.254.3.4")) && ll.contains(ip("fe80::1")));
        let net = ProxyRule::parse("10.1.0.0/16").unwrap();
        assert!(net.contains(ip("10.1.200.3")) && !net.contains(ip("10.2.0.1")));
        let v6 = ProxyRule::parse("2001:db8::/32").unwrap();
        assert!(v6.contains(ip("2001:db8::5")));
        let single = ProxyRule::parse("192.0.2.7").unwrap();
        assert!(single.contains(ip("192.0.2.7")) && !single.contains(ip("192.0.2.8")));
        for bad in ["", "localhost", "10.0.0.0/33", "300.1.1.1"] {
            assert!(ProxyRule::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn ipv4_networks() {
        assert_eq!(
            parse_ipv4_net("192.0.2.9").unwrap().to_string(),
            "192.0.2.9/32"
        );
        assert_eq!(
            parse_ipv4_net("192.0.2.9/24").unwrap().to_string(),
            "192.0.2.0/24"
        );
        for bad in ["::1", "fe80::/10", "192.0.2.0/40", "x"] {
            assert!(parse_ipv4_net(bad).is_err(), "{bad} accepted");
        }
    }
}
