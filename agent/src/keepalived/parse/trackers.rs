//! What keepalived tracks, from the text dump: the instances' tracked lists and the
//! tracker sections (`VRRP Scripts`, `VRRP Track files`, `VRRP Track processes`,
//! `Interfaces`), joined by name once the whole dump is read.

use std::collections::BTreeMap;

use vrrp_protocol::{TrackedItem, TrackedKind, VrrpInstance};

/// What the tracker sections say, by name, to be joined with the instances' lists.
#[derive(Default)]
pub(super) struct TrackerStates {
    /// Script name → `Status` word (`GOOD`, `BAD`, `INIT`, `INIT/FAILED`).
    pub(super) scripts: BTreeMap<String, String>,
    /// Script name → its run `State` (`idle`, `running`, ...).
    pub(super) script_runs: BTreeMap<String, String>,
    /// Track file name → its `Status` (the file's current value).
    pub(super) files: BTreeMap<String, Option<i64>>,
    /// Track process name → (`Current processes`, `Have quorum`).
    pub(super) processes: BTreeMap<String, (Option<i64>, Option<bool>)>,
    /// Interface name → up (keepalived's `UP` and `RUNNING` flags both set).
    pub(super) interfaces: BTreeMap<String, bool>,
    /// (interface, instance, weight) from each interface's `Tracking VRRP instances`.
    pub(super) interface_tracking: Vec<(String, String, Option<i64>)>,
}

/// `trk0 weight -30`, `trk_val, weight 0`, `VI_1, weight 5` → (name, weight).
pub(super) fn name_and_weight(entry: &str) -> Option<(String, Option<i64>)> {
    let mut words = entry.split_whitespace();
    let name = words.next()?.trim_end_matches(',');
    if name.is_empty() {
        return None;
    }
    let name = super::limits::name(name);
    let weight = words
        .skip_while(|w| *w != "weight")
        .nth(1)
        .and_then(|w| w.trim_end_matches(',').parse().ok());
    Some((name, weight))
}

/// Which tracked list a line of an instance opens: `Tracked scripts :` (2.1 and
/// later) or `Tracked scripts = 1` (2.0 and older).
pub(super) fn tracked_list(line: &str) -> Option<TrackedKind> {
    let rest = line.strip_prefix("Tracked ")?;
    let word = rest.split([' ', ':', '=']).next()?;
    match word {
        "interfaces" | "interface" => Some(TrackedKind::Interface),
        "scripts" | "script" => Some(TrackedKind::Script),
        "files" | "file" => Some(TrackedKind::File),
        "processes" | "process" => Some(TrackedKind::Process),
        _ => None,
    }
}

/// An address, and only an address: the first word of a `Unicast Peer` entry or of
/// `Master router`.
pub(super) fn address_of(v: &str) -> Option<String> {
    let first = v.split_whitespace().next()?.trim_end_matches(',');
    first
        .parse::<std::net::IpAddr>()
        .ok()
        .map(|_| first.to_string())
}

/// keepalived puts an instance in FAULT when a weighted track file's value times its
/// weight is below this (`keepalived.conf(5)`: "less than -253").
const TRACK_FILE_FAULT_BELOW: i64 = -253;

/// Fills each tracked item's state from the tracker sections, by name. An interface
/// that names the instance under `Tracking VRRP instances` but is not in the instance's
/// own list (its own interface, which keepalived tracks unless `dont_track_primary`)
/// is added: losing it puts the instance in FAULT as well. An item whose state the
/// dump does not show stays `ok` with no status: a failure is reported only when
/// keepalived says so.
pub(super) fn join_trackers(instances: &mut [VrrpInstance], states: &TrackerStates) {
    for inst in instances {
        for (ifname, instance, weight) in &states.interface_tracking {
            if *instance == inst.name
                && !inst
                    .tracked
                    .iter()
                    .any(|t| t.kind == TrackedKind::Interface && t.name == *ifname)
            {
                inst.tracked.push(TrackedItem {
                    kind: TrackedKind::Interface,
                    name: ifname.clone(),
                    weight: *weight,
                    ok: true,
                    ..TrackedItem::default()
                });
            }
        }
        for item in &mut inst.tracked {
            match item.kind {
                TrackedKind::Script => {
                    if item.status.is_none() {
                        item.status = states.scripts.get(&item.name).cloned();
                    }
                    item.ok = item.status.as_deref().is_none_or(|s| s == "GOOD");
                    item.state = states.script_runs.get(&item.name).cloned();
                }
                TrackedKind::Interface => {
                    if let Some(up) = states.interfaces.get(&item.name) {
                        item.status = Some(if *up { "UP" } else { "DOWN" }.to_string());
                        item.ok = *up;
                    }
                }
                TrackedKind::File => {
                    item.value = states.files.get(&item.name).copied().flatten();
                    item.ok = match (item.value, item.weight.unwrap_or(0)) {
                        (None, _) => true,
                        (Some(v), 0) => v == 0,
                        (Some(v), w) => v.saturating_mul(w) >= TRACK_FILE_FAULT_BELOW,
                    };
                }
                TrackedKind::Process => {
                    if let Some((count, quorum)) = states.processes.get(&item.name) {
                        item.value = *count;
                        item.status = quorum.map(|q| if q { "quorum" } else { "no quorum" }.into());
                        item.ok = quorum.unwrap_or(true);
                    }
                }
                TrackedKind::Other => {}
            }
        }
    }
}
