//! The JSON dump (`keepalived.json`, keepalived's JSON signal): its instances with
//! their counters, and `merge_text_only`, which joins to a JSON reading what only the
//! text dump shows. Bounded like the text dump (`limits`).

use std::collections::BTreeMap;

use serde_json::Value;
use vrrp_protocol::{VrrpInstance, VrrpState};

use super::limits::{self, MAX_INSTANCES};
use super::settings;
use super::shared::{epoch_to_iso, vip_of, ParseError, ParsedDump};

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

/// A string value worth keeping (`limits::word`).
fn json_str(v: &Value, key: &str) -> Option<String> {
    v.get(key)?
        .as_str()
        .and_then(limits::word)
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
            Some(vip) => {
                if limits::room(vips.len()) {
                    vips.push(vip.to_string());
                }
            }
            None => {
                if limits::room(not_addresses.len()) {
                    let entry = match v.as_str() {
                        Some(s) => limits::name(s),
                        None => limits::name(&v.to_string()),
                    };
                    not_addresses.push((name.to_string(), entry));
                }
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
        if out.instances.len() >= MAX_INSTANCES {
            break;
        }
        let Some(data) = entry.get("data") else {
            continue;
        };
        let Some(name) = data
            .get("iname")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(limits::name)
        else {
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
        let mut inst = VrrpInstance {
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
        };
        settings::from_json(&mut inst, data);
        out.instances.push(inst);
    }
    Ok(out)
}

/// Takes what only the text dump shows into a reading from the JSON dump: keepalived's
/// JSON (up to 2.4.3) lists track scripts by command and without status, has no track
/// files, unicast peers, master router, flags, source address, config faults or sync
/// groups (nor, in the fixtures, an instance's own `sync_group`). Instances are matched
/// by name; the JSON's own fields stay as they are, the settings it lacks come from the
/// text dump (`settings::merge`).
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
            settings::merge(i, d);
        }
    }
    if json.sync_groups.is_empty() {
        json.sync_groups = data.sync_groups.clone();
    }
}
