//! What every dump parser shares: the error, the parsed dump, the counters'
//! shape, and the few value formats keepalived prints in more than one dump (VIP
//! entries, time stamps, intervals, leading numbers). A leaf of `parse`: the
//! parsers build on it and it names none of them.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use vrrp_protocol::{SyncGroup, VrrpInstance};

/// Why a dump could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// Instances and sync groups of one dump.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedDump {
    pub instances: Vec<VrrpInstance>,
    pub sync_groups: Vec<SyncGroup>,
    /// Entries of VIP lists left out of `vips` because they do not start with an
    /// address: (instance name, the entry as printed). Never part of the reading.
    pub not_addresses: Vec<(String, String)>,
}

/// The address an entry of a VIP list starts with, as keepalived printed it
/// (`192.0.2.100/24 dev eth0 scope global set` -> `192.0.2.100/24`), or `None` when the
/// entry does not start with an IPv4 or IPv6 address with an optional `/prefix`.
/// What keepalived appends (a trailing comma, `dev ... scope ...`) is dropped.
pub fn vip_of(entry: &str) -> Option<&str> {
    let first = entry.split_whitespace().next()?.trim_end_matches(',');
    let is_address = if first.contains('/') {
        first.parse::<ipnet::IpNet>().is_ok()
    } else {
        first.parse::<std::net::IpAddr>().is_ok()
    };
    is_address.then_some(first)
}

/// Counters per instance name.
pub type Counters = BTreeMap<String, BTreeMap<String, u64>>;

/// Formats keepalived's `seconds.micros` time stamp as ISO 8601 UTC with milliseconds.
/// Zero and nonsense give `None` (keepalived prints 0 before the first transition).
pub fn epoch_to_iso(secs: f64) -> Option<String> {
    if !secs.is_finite() || secs <= 0.0 || secs > 1.0e11 {
        return None;
    }
    let whole = secs.trunc() as i64;
    let nanos = ((secs - secs.trunc()) * 1e9)
        .round()
        .clamp(0.0, 999_999_999.0) as u32;
    DateTime::<Utc>::from_timestamp(whole, nanos)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// `1 sec`, `1000 milli-sec`, `4000 milli-sec`, `1.00 sec`, `30 secs` → seconds (finite,
/// not negative).
pub(super) fn parse_advert_interval(v: &str) -> Option<f64> {
    let mut it = v.split_whitespace();
    let n: f64 = it.next()?.parse().ok()?;
    let secs = match it.next() {
        Some(u) if u.starts_with("milli") => n / 1000.0,
        Some(u) if u.starts_with("micro") || u.starts_with("usec") => n / 1_000_000.0,
        _ => n,
    };
    (secs.is_finite() && secs >= 0.0).then_some(secs)
}

pub(super) fn first_number<T: std::str::FromStr>(v: &str) -> Option<T> {
    v.split_whitespace().next()?.parse().ok()
}
