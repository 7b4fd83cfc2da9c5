//! Parsers for keepalived's dump files: the text state dump (`keepalived.data`), the
//! counters dump (`keepalived.stats`) and the JSON dump (`keepalived.json`).
//!
//! Pure functions from text to wire types. Only the fields the spec lists (and the
//! optional ones of issues 23 and 33: excluded VIPs, tracked items, tracker faults,
//! unicast peers, master router) are copied, one by one, so nothing else keepalived
//! prints (its authentication password and HMAC settings above all) can reach the wire.
//! Unknown keys are skipped; a dump that is not a dump is an error, never a panic. An
//! entry of a VIP list counts only when it starts with an address ([`vip_of`]); the
//! others are handed back in [`ParsedDump::not_addresses`] for the caller to log.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;
use vrrp_protocol::{SyncGroup, TrackedItem, TrackedKind, VrrpInstance, VrrpState};

mod trackers;
use trackers::{address_of, join_trackers, name_and_weight, tracked_list, TrackerStates};

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

/// `1 sec`, `1000 milli-sec`, `4000 milli-sec` → seconds.
fn parse_advert_interval(v: &str) -> Option<f64> {
    let mut it = v.split_whitespace();
    let n: f64 = it.next()?.parse().ok()?;
    let secs = match it.next() {
        Some(u) if u.starts_with("milli") => n / 1000.0,
        Some(u) if u.starts_with("micro") || u.starts_with("usec") => n / 1_000_000.0,
        _ => n,
    };
    secs.is_finite().then_some(secs)
}

fn first_number<T: std::str::FromStr>(v: &str) -> Option<T> {
    v.split_whitespace().next()?.parse().ok()
}

/// What an indented list under the current key collects.
#[derive(Clone, Copy, PartialEq)]
enum ListKind {
    Vips,
    ExcludedVips,
    Members,
    /// An instance's `Tracked scripts :` (interfaces, files, processes) list.
    Tracked(TrackedKind),
    UnicastPeers,
    /// An interface's `Tracking VRRP instances :` list (Interfaces section).
    TrackingInstances,
    Ignored,
}

/// The block a line belongs to. Instances and groups are built as they are read; the
/// tracker blocks only record their state, joined to the instances by name at the end.
#[derive(PartialEq)]
enum Block {
    None,
    Instance,
    Group,
    Script(String),
    TrackFile(String),
    TrackProcess(String),
    Interface(String),
}

/// The `------< NAME >------` section a line is in. `VRRP Script = ` means a script
/// block of its own in the `VRRP Scripts` section, but a script printed inside the
/// instance in the topology section (keepalived 1.3); `State = ` means other things
/// in other sections.
#[derive(Clone, Copy, PartialEq)]
enum Section {
    Other,
    Topology,
    Scripts,
    Interfaces,
}

fn section_of(header: &str) -> Section {
    if header.contains("VRRP Topology") {
        Section::Topology
    } else if header.contains("VRRP Scripts") {
        Section::Scripts
    } else if header.contains("< Interfaces >") {
        Section::Interfaces
    } else {
        Section::Other
    }
}

/// Parses the text state dump (`keepalived.data`), any version from 1.3 to 2.4.
///
/// Blocks start at `VRRP Instance = NAME` and `VRRP Sync Group = NAME, STATE` and end at
/// the next block or section header. Within an instance the first occurrence of a key
/// wins: keepalived 1.3 prints a tracked script's own block (with its own `State`-like
/// keys) in the middle of the instance. An instance's tracked items are named in its
/// own lists (`Tracked scripts :` ...) with the instance's weight; their state is in
/// the `VRRP Scripts`, `VRRP Track files`, `VRRP Track processes` and `Interfaces`
/// sections, joined by name once the whole dump is read (`join_trackers`).
pub fn parse_data(text: &str) -> Result<ParsedDump, ParseError> {
    let mut out = ParsedDump::default();
    let mut saw_topology = false;
    let mut section = Section::Other;
    let mut block = Block::None;
    let mut inst = VrrpInstance::default();
    let mut seen_keys: Vec<&str> = Vec::new();
    let mut group = SyncGroup::default();
    let mut list: Option<(usize, ListKind)> = None;
    let mut states = TrackerStates::default();
    // keepalived 1.3's script block inside the instance: index into `inst.tracked`.
    let mut inline_script: Option<usize> = None;

    fn finish(
        block: &mut Block,
        inst: &mut VrrpInstance,
        group: &mut SyncGroup,
        out: &mut ParsedDump,
    ) {
        match block {
            Block::Instance => out.instances.push(std::mem::take(inst)),
            Block::Group => out.sync_groups.push(std::mem::take(group)),
            _ => {}
        }
        *block = Block::None;
    }

    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if trimmed.starts_with("------<") {
            finish(&mut block, &mut inst, &mut group, &mut out);
            list = None;
            section = section_of(trimmed);
            if section == Section::Topology {
                saw_topology = true;
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix("VRRP Instance = ") {
            finish(&mut block, &mut inst, &mut group, &mut out);
            list = None;
            block = Block::Instance;
            seen_keys.clear();
            inline_script = None;
            inst.name = name.trim().to_string();
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("VRRP Sync Group = ") {
            finish(&mut block, &mut inst, &mut group, &mut out);
            list = None;
            block = Block::Group;
            let mut parts = rest.splitn(2, ',');
            group.name = parts.next().unwrap_or("").trim().to_string();
            group.state = parts
                .next()
                .map_or(VrrpState::Unknown, VrrpState::from_word);
            continue;
        }
        if section != Section::Topology {
            let opened = if let Some(n) = trimmed.strip_prefix("VRRP Script = ") {
                Some(Block::Script(n.trim().to_string()))
            } else if let Some(n) = trimmed.strip_prefix("Track file = ") {
                Some(Block::TrackFile(n.trim().to_string()))
            } else if let Some(n) = trimmed.strip_prefix("VRRP Track process = ") {
                Some(Block::TrackProcess(n.trim().to_string()))
            } else if section == Section::Interfaces {
                trimmed
                    .strip_prefix("Name = ")
                    .map(|n| Block::Interface(n.trim().to_string()))
            } else {
                None
            };
            if let Some(opened) = opened {
                finish(&mut block, &mut inst, &mut group, &mut out);
                list = None;
                block = opened;
                continue;
            }
        }
        if let Some((list_indent, kind)) = list {
            if indent > list_indent {
                let item = trimmed.split_whitespace().next().unwrap_or("");
                let item = item.trim_end_matches(',');
                match (kind, &block) {
                    (ListKind::Vips | ListKind::ExcludedVips, Block::Instance) => {
                        match vip_of(trimmed) {
                            Some(vip) if kind == ListKind::Vips => inst.vips.push(vip.to_string()),
                            Some(vip) => inst.excluded_vips.push(vip.to_string()),
                            None => out
                                .not_addresses
                                .push((inst.name.clone(), trimmed.to_string())),
                        }
                    }
                    (ListKind::Members, Block::Group)
                        if !group.instances.iter().any(|m| m == item) =>
                    {
                        group.instances.push(item.to_string())
                    }
                    (ListKind::Tracked(kind), Block::Instance) => {
                        if let Some((name, weight)) = name_and_weight(trimmed) {
                            if !inst
                                .tracked
                                .iter()
                                .any(|t| t.kind == kind && t.name == name)
                            {
                                inst.tracked.push(TrackedItem {
                                    kind,
                                    name,
                                    weight,
                                    ok: true,
                                    ..TrackedItem::default()
                                });
                            }
                        }
                    }
                    (ListKind::UnicastPeers, Block::Instance) => {
                        if let Some(peer) = address_of(trimmed) {
                            if !inst.unicast_peers.contains(&peer) {
                                inst.unicast_peers.push(peer);
                            }
                        }
                    }
                    (ListKind::TrackingInstances, Block::Interface(ifname)) => {
                        if let Some((instance, weight)) = name_and_weight(trimmed) {
                            states
                                .interface_tracking
                                .push((ifname.clone(), instance, weight));
                        }
                    }
                    _ => {}
                }
                continue;
            }
            list = None;
        }
        match &block {
            Block::Instance => {
                // Lists: "Virtual IP (1):", "Virtual IP :", "Virtual IP = 1" (older), and
                // the same forms of "Virtual IP Excluded".
                if trimmed.starts_with("Virtual IP Excluded") {
                    list = Some((indent, ListKind::ExcludedVips));
                    continue;
                }
                if trimmed.starts_with("Virtual IP") {
                    list = Some((indent, ListKind::Vips));
                    continue;
                }
                if let Some(kind) = tracked_list(trimmed) {
                    list = Some((indent, ListKind::Tracked(kind)));
                    continue;
                }
                if trimmed.starts_with("Unicast Peer") {
                    list = Some((indent, ListKind::UnicastPeers));
                    continue;
                }
                // keepalived 1.3 prints the tracked script's block inside the instance:
                // its name, then its own `Weight` and `Status`.
                if let Some(name) = trimmed.strip_prefix("VRRP Script = ") {
                    let name = name.trim().to_string();
                    inline_script = Some(inst.tracked.len());
                    inst.tracked.push(TrackedItem {
                        kind: TrackedKind::Script,
                        name,
                        ok: true,
                        ..TrackedItem::default()
                    });
                    continue;
                }
                let Some((key, value)) = trimmed.split_once(" = ") else {
                    if trimmed.ends_with(':') {
                        list = Some((indent, ListKind::Ignored));
                    }
                    continue;
                };
                let key = key.trim();
                let value = value.trim();
                if let Some(item) = inline_script.and_then(|i| inst.tracked.get_mut(i)) {
                    match key {
                        "Status" => {
                            item.status = Some(value.to_string());
                            continue;
                        }
                        "Weight" => {
                            item.weight = first_number(value);
                            continue;
                        }
                        _ => {}
                    }
                }
                if seen_keys.contains(&key) {
                    continue;
                }
                match key {
                    "State" => inst.state = VrrpState::from_word(value),
                    "Wantstate" => inst.wanted_state = Some(VrrpState::from_word(value)),
                    "Interface" | "Listening device" => inst.interface = Some(value.to_string()),
                    "Virtual Router ID" => inst.vrid = first_number(value),
                    "Priority" => inst.priority = first_number(value),
                    "Effective priority" => inst.effective_priority = first_number(value),
                    "Advert interval" => inst.advert_interval = parse_advert_interval(value),
                    "Last transition" => {
                        inst.last_transition = first_number::<f64>(value).and_then(epoch_to_iso)
                    }
                    "Sync group" => inst.sync_group = Some(value.to_string()),
                    // 2.3.3 renamed 2.2's count; both count failed trackers.
                    "Number of tracker faults" | "Number of interface and track script faults" => {
                        inst.tracker_faults = first_number(value)
                    }
                    "Master router" => inst.master_router = address_of(value),
                    _ => continue,
                }
                // Only keys we took are remembered: 'seen_keys' borrows from 'text'.
                seen_keys.push(key);
            }
            Block::Group => {
                let lower = trimmed.to_ascii_lowercase();
                if lower.contains("member instances") || lower.starts_with("monitor") {
                    list = Some((indent, ListKind::Members));
                } else if trimmed.ends_with(':') {
                    list = Some((indent, ListKind::Ignored));
                }
            }
            Block::Script(name) | Block::TrackFile(name) | Block::TrackProcess(name) => {
                let Some((key, value)) = trimmed.split_once(" = ") else {
                    if trimmed.ends_with(':') {
                        list = Some((indent, ListKind::Ignored));
                    }
                    continue;
                };
                let value = value.trim();
                match (&block, key.trim()) {
                    (Block::Script(_), "Status") => {
                        states.scripts.insert(name.clone(), value.to_string());
                    }
                    (Block::Script(_), "State") => {
                        states.script_runs.insert(name.clone(), value.to_string());
                    }
                    (Block::TrackFile(_), "Status") => {
                        states.files.insert(name.clone(), first_number(value));
                    }
                    (Block::TrackProcess(_), "Current processes") => {
                        states.processes.entry(name.clone()).or_default().0 = first_number(value);
                    }
                    (Block::TrackProcess(_), "Have quorum") => {
                        states.processes.entry(name.clone()).or_default().1 = match value {
                            "true" => Some(true),
                            "false" => Some(false),
                            _ => None,
                        };
                    }
                    _ => {}
                }
            }
            Block::Interface(name) => {
                if trimmed.starts_with("Tracking VRRP instances") {
                    list = Some((indent, ListKind::TrackingInstances));
                } else if let Some(flags) = trimmed.strip_prefix("State = ") {
                    // `UP, RUNNING`, `UP, not RUNNING`, `not UP, not RUNNING`: keepalived
                    // counts an interface up only with both flags.
                    let flags: Vec<&str> = flags.split(',').map(str::trim).collect();
                    let up = flags.contains(&"UP") && flags.contains(&"RUNNING");
                    states.interfaces.insert(name.clone(), up);
                } else if trimmed.ends_with(':') {
                    list = Some((indent, ListKind::Ignored));
                }
            }
            Block::None => {}
        }
    }
    finish(&mut block, &mut inst, &mut group, &mut out);

    if !saw_topology && out.instances.is_empty() {
        return Err(ParseError(
            "not a keepalived state dump (no VRRP Topology section)".into(),
        ));
    }
    link_sync_groups(&mut out);
    join_trackers(&mut out.instances, &states);
    Ok(out)
}

/// Sync-group membership is printed in two places (each instance's `Sync group` and the
/// group's member list); fill each side from the other.
fn link_sync_groups(out: &mut ParsedDump) {
    for g in &mut out.sync_groups {
        for i in &out.instances {
            if i.sync_group.as_deref() == Some(g.name.as_str()) && !g.instances.contains(&i.name) {
                g.instances.push(i.name.clone());
            }
        }
    }
    for i in &mut out.instances {
        if i.sync_group.is_none() {
            if let Some(g) = out
                .sync_groups
                .iter()
                .find(|g| g.instances.contains(&i.name))
            {
                i.sync_group = Some(g.name.clone());
            }
        }
    }
}

/// `Packet Errors` → `packet_errors`.
fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// Parses the counters dump (`keepalived.stats`): `Key: value` lines under sub-headers,
/// flattened to `header_key` (`Priority Zero:` / `Received: 0` → `priority_zero_received`).
pub fn parse_stats(text: &str) -> Result<Counters, ParseError> {
    let mut out = Counters::new();
    let mut current: Option<String> = None;
    let mut header: Option<(usize, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(name) = trimmed.strip_prefix("VRRP Instance:") {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
            header = None;
            continue;
        }
        let Some(name) = &current else { continue };
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if let Some((h_indent, _)) = &header {
            if indent <= *h_indent {
                header = None;
            }
        }
        if value.is_empty() {
            header = Some((indent, snake(key)));
            continue;
        }
        let Ok(n) = value.parse::<u64>() else {
            continue;
        };
        let key = match &header {
            Some((_, h)) => format!("{h}_{}", snake(key)),
            None => snake(key),
        };
        if let Some(m) = out.get_mut(name) {
            m.insert(key, n);
        }
    }
    if out.is_empty() && !text.trim().is_empty() && !text.contains("VRRP Instance") {
        return Err(ParseError(
            "not a keepalived counters dump (no VRRP Instance)".into(),
        ));
    }
    Ok(out)
}

/// keepalived's JSON counter names → the same flat keys the text dump gives.
const JSON_COUNTERS: &[(&str, &str)] = &[
    ("advert_rcvd", "advertisements_received"),
    ("advert_sent", "advertisements_sent"),
    ("become_master", "became_master"),
    ("release_master", "released_master"),
    ("packet_len_err", "packet_errors_length"),
    ("ip_ttl_err", "packet_errors_ttl"),
    ("invalid_type_rcvd", "packet_errors_invalid_type"),
    (
        "advert_interval_err",
        "packet_errors_advertisement_interval",
    ),
    ("addr_list_err", "packet_errors_address_list"),
    ("invalid_authtype", "authentication_errors_invalid_type"),
    ("authtype_mismatch", "authentication_errors_type_mismatch"),
    ("auth_failure", "authentication_errors_failure"),
    // 2.4: the HMAC authentication extension's counters, named as the text dump's
    // `Authentication Extension Errors:` block gives them.
    (
        "auth_ext_missing",
        "authentication_extension_errors_missing",
    ),
    (
        "auth_ext_malformed",
        "authentication_extension_errors_malformed",
    ),
    (
        "auth_ext_unknown_key",
        "authentication_extension_errors_unknown_key",
    ),
    (
        "auth_ext_invalid_hmac",
        "authentication_extension_errors_invalid_hmac",
    ),
    ("auth_ext_stale", "authentication_extension_errors_stale"),
    ("auth_ext_replay", "authentication_extension_errors_replay"),
    ("pri_zero_rcvd", "priority_zero_received"),
    ("pri_zero_sent", "priority_zero_sent"),
];

fn json_u32(v: &Value, key: &str) -> Option<u32> {
    v.get(key)?.as_u64().and_then(|n| u32::try_from(n).ok())
}

fn json_str(v: &Value, key: &str) -> Option<String> {
    v.get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn json_state(v: &Value, key: &str) -> Option<VrrpState> {
    let s = v.get(key)?;
    Some(match s {
        Value::Number(n) => n.as_i64().map_or(VrrpState::Unknown, VrrpState::from_code),
        Value::String(w) => VrrpState::from_word(w),
        _ => VrrpState::Unknown,
    })
}

/// The `vips` (or `evips`, the excluded ones) of one instance of the JSON dump;
/// entries that are no address (or no string) go to `not_addresses`, a non-string as
/// its JSON text.
fn json_vips(
    data: &Value,
    key: &str,
    name: &str,
    not_addresses: &mut Vec<(String, String)>,
) -> Vec<String> {
    let mut vips = Vec::new();
    let entries = data.get(key).and_then(Value::as_array);
    for v in entries.into_iter().flatten() {
        match v.as_str().and_then(vip_of) {
            Some(vip) => vips.push(vip.to_string()),
            None => {
                let entry = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                not_addresses.push((name.to_string(), entry));
            }
        }
    }
    vips
}

/// Parses the JSON dump: a top-level array (json_version 1) or `{"vrrp": [...]}`
/// (json_version 2). The JSON carries its counters and no sync-group section.
pub fn parse_json(text: &str) -> Result<ParsedDump, ParseError> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| ParseError(format!("keepalived JSON dump does not parse: {e}")))?;
    let list = match &root {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("vrrp") {
            Some(Value::Array(a)) => a,
            _ => return Err(ParseError("keepalived JSON dump has no vrrp list".into())),
        },
        _ => return Err(ParseError("keepalived JSON dump is not a list".into())),
    };
    let mut out = ParsedDump::default();
    for entry in list {
        let Some(data) = entry.get("data") else {
            continue;
        };
        let Some(name) = json_str(data, "iname") else {
            continue;
        };
        let stats = entry.get("stats").and_then(Value::as_object).map(|m| {
            JSON_COUNTERS
                .iter()
                .filter_map(|(from, to)| m.get(*from)?.as_u64().map(|n| (to.to_string(), n)))
                .collect::<BTreeMap<_, _>>()
        });
        let vips = json_vips(data, "vips", &name, &mut out.not_addresses);
        let excluded_vips = json_vips(data, "evips", &name, &mut out.not_addresses);
        out.instances.push(VrrpInstance {
            name,
            state: json_state(data, "state").unwrap_or_default(),
            wanted_state: json_state(data, "wantstate"),
            interface: json_str(data, "ifp_ifname"),
            vrid: json_u32(data, "vrid"),
            priority: json_u32(data, "base_priority"),
            effective_priority: json_u32(data, "effective_priority"),
            advert_interval: data.get("adver_int").and_then(Value::as_f64),
            vips,
            excluded_vips,
            sync_group: json_str(data, "sync_group"),
            last_transition: data
                .get("last_transition")
                .and_then(Value::as_f64)
                .and_then(epoch_to_iso),
            stats,
            ..VrrpInstance::default()
        });
    }
    Ok(out)
}

/// Takes what only the text dump shows into a reading from the JSON dump: keepalived's
/// JSON (up to 2.4.3) lists track scripts by command and without status, has no track
/// files, unicast peers, master router or sync groups (nor, in the fixtures, an
/// instance's own `sync_group`). Instances are matched by name;
/// the JSON's own fields stay as they are.
pub fn merge_text_only(json: &mut ParsedDump, data: &ParsedDump) {
    for i in &mut json.instances {
        if let Some(d) = data.instances.iter().find(|d| d.name == i.name) {
            i.tracked = d.tracked.clone();
            i.tracker_faults = d.tracker_faults;
            i.unicast_peers = d.unicast_peers.clone();
            i.master_router = d.master_router.clone();
            if i.sync_group.is_none() {
                i.sync_group = d.sync_group.clone();
            }
        }
    }
    if json.sync_groups.is_empty() {
        json.sync_groups = data.sync_groups.clone();
    }
}

/// Attaches counters to the instances of the same name.
pub fn attach_counters(dump: &mut ParsedDump, counters: &Counters) {
    for i in &mut dump.instances {
        i.stats = counters.get(&i.name).cloned();
    }
}

#[cfg(test)]
mod tests;
