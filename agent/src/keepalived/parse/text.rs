//! The text state dump (`keepalived.data`, SIGUSR1), any version from 1.3 to 2.4: its
//! instance and sync-group blocks, the lists inside them, and the tracker sections
//! (joined to the instances by `trackers`). The settings lines of an instance block go
//! to `settings`. Every line and value is bounded (`limits`).

use vrrp_protocol::{SyncGroup, TrackedItem, TrackedKind, VrrpInstance, VrrpState};

use super::limits::{self, MAX_INSTANCES, MAX_LINE};
use super::settings::{self, BlockNotes};
use super::shared::{
    epoch_to_iso, first_number, parse_advert_interval, vip_of, ParseError, ParsedDump,
};
use super::trackers::{address_of, join_trackers, name_and_weight, tracked_list, TrackerStates};

/// What an indented list under the current key collects.
#[derive(Clone, Copy, PartialEq)]
enum ListKind {
    Vips,
    ExcludedVips,
    Members,
    /// An instance's `Tracked scripts :` (interfaces, files, processes) list.
    Tracked(TrackedKind),
    UnicastPeers,
    /// An instance's `Flags:` (2.2 and later): `Using unicast`, ...
    Flags,
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

/// Inserts into a tracker section's map while it has room (a name seen before is
/// always updated).
fn remember<V>(map: &mut std::collections::BTreeMap<String, V>, name: &str, value: V) {
    if map.contains_key(name) || limits::room(map.len()) {
        map.insert(name.to_string(), value);
    }
}

/// The instance (or group) being read and what its block said besides its fields.
#[derive(Default)]
struct Current {
    inst: VrrpInstance,
    notes: BlockNotes,
    group: SyncGroup,
}

/// Ends the current block: a finished instance or group joins the dump (while it has
/// room for one).
fn finish(block: &mut Block, cur: &mut Current, out: &mut ParsedDump) {
    match block {
        Block::Instance => {
            let mut inst = std::mem::take(&mut cur.inst);
            settings::finish(&mut inst, &std::mem::take(&mut cur.notes));
            if out.instances.len() < MAX_INSTANCES {
                out.instances.push(inst);
            }
        }
        Block::Group => {
            let group = std::mem::take(&mut cur.group);
            if out.sync_groups.len() < MAX_INSTANCES {
                out.sync_groups.push(group);
            }
        }
        _ => {}
    }
    *block = Block::None;
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
    let mut cur = Current::default();
    let mut seen_keys: Vec<&str> = Vec::new();
    let mut list: Option<(usize, ListKind)> = None;
    let mut states = TrackerStates::default();
    // keepalived 1.3's script block inside the instance: index into `inst.tracked`.
    let mut inline_script: Option<usize> = None;

    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if trimmed.len() > MAX_LINE {
            // Nothing is taken from it; it still ends a list it is not indented under.
            if list.is_some_and(|(list_indent, _)| indent <= list_indent) {
                list = None;
            }
            continue;
        }
        if trimmed.starts_with("------<") {
            finish(&mut block, &mut cur, &mut out);
            list = None;
            section = section_of(trimmed);
            if section == Section::Topology {
                saw_topology = true;
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix("VRRP Instance = ") {
            finish(&mut block, &mut cur, &mut out);
            list = None;
            block = Block::Instance;
            seen_keys.clear();
            inline_script = None;
            cur.inst.name = limits::name(name.trim());
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("VRRP Sync Group = ") {
            finish(&mut block, &mut cur, &mut out);
            list = None;
            block = Block::Group;
            let mut parts = rest.splitn(2, ',');
            cur.group.name = limits::name(parts.next().unwrap_or("").trim());
            cur.group.state = parts
                .next()
                .map_or(VrrpState::Unknown, VrrpState::from_word);
            continue;
        }
        if section != Section::Topology {
            let opened = if let Some(n) = trimmed.strip_prefix("VRRP Script = ") {
                Some(Block::Script(limits::name(n.trim())))
            } else if let Some(n) = trimmed.strip_prefix("Track file = ") {
                Some(Block::TrackFile(limits::name(n.trim())))
            } else if let Some(n) = trimmed.strip_prefix("VRRP Track process = ") {
                Some(Block::TrackProcess(limits::name(n.trim())))
            } else if section == Section::Interfaces {
                trimmed
                    .strip_prefix("Name = ")
                    .map(|n| Block::Interface(limits::name(n.trim())))
            } else {
                None
            };
            if let Some(opened) = opened {
                finish(&mut block, &mut cur, &mut out);
                list = None;
                block = opened;
                continue;
            }
        }
        if let Some((list_indent, kind)) = list {
            if indent > list_indent {
                list_item(kind, &block, &mut cur, &mut out, &mut states, trimmed);
                continue;
            }
            list = None;
        }
        match &block {
            Block::Instance => {
                let inst = &mut cur.inst;
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
                // `Flags: none`, or `Flags:` and the flags indented below it; not
                // `Flags of interface faults ...`.
                if let Some(rest) = trimmed.strip_prefix("Flags:") {
                    cur.notes.flags_line(rest);
                    list = Some((indent, ListKind::Flags));
                    continue;
                }
                // keepalived 1.3 prints the tracked script's block inside the instance:
                // its name, then its own `Weight` and `Status`.
                if let Some(name) = trimmed.strip_prefix("VRRP Script = ") {
                    if limits::room(inst.tracked.len()) {
                        inline_script = Some(inst.tracked.len());
                        inst.tracked.push(TrackedItem {
                            kind: TrackedKind::Script,
                            name: limits::name(name.trim()),
                            ok: true,
                            ..TrackedItem::default()
                        });
                    }
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
                            item.status = limits::word(value).map(str::to_string);
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
                    "Interface" | "Listening device" => {
                        inst.interface = limits::word(value).map(str::to_string)
                    }
                    "Virtual Router ID" => inst.vrid = first_number(value),
                    "Priority" => inst.priority = first_number(value),
                    "Effective priority" => inst.effective_priority = first_number(value),
                    "Advert interval" => inst.advert_interval = parse_advert_interval(value),
                    "Last transition" => {
                        inst.last_transition = first_number::<f64>(value).and_then(epoch_to_iso)
                    }
                    "Sync group" => inst.sync_group = limits::word(value).map(str::to_string),
                    // 2.3.3 renamed 2.2's count; both count failed trackers.
                    "Number of tracker faults" | "Number of interface and track script faults" => {
                        inst.tracker_faults = first_number(value)
                    }
                    "Master router" => inst.master_router = address_of(value),
                    _ => {
                        if !settings::take(inst, &mut cur.notes, key, value) {
                            continue;
                        }
                    }
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
                let word = limits::word(value).map(str::to_string);
                match (&block, key.trim()) {
                    (Block::Script(_), "Status") => {
                        if let Some(w) = word {
                            remember(&mut states.scripts, name, w);
                        }
                    }
                    (Block::Script(_), "State") => {
                        if let Some(w) = word {
                            remember(&mut states.script_runs, name, w);
                        }
                    }
                    (Block::TrackFile(_), "Status") => {
                        remember(&mut states.files, name, first_number(value));
                    }
                    (Block::TrackProcess(_), "Current processes") => {
                        let quorum = states.processes.get(name).and_then(|p| p.1);
                        remember(&mut states.processes, name, (first_number(value), quorum));
                    }
                    (Block::TrackProcess(_), "Have quorum") => {
                        let quorum = match value {
                            "true" => Some(true),
                            "false" => Some(false),
                            _ => None,
                        };
                        let count = states.processes.get(name).and_then(|p| p.0);
                        remember(&mut states.processes, name, (count, quorum));
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
                    remember(&mut states.interfaces, name, up);
                } else if trimmed.ends_with(':') {
                    list = Some((indent, ListKind::Ignored));
                }
            }
            Block::None => {}
        }
    }
    finish(&mut block, &mut cur, &mut out);

    if !saw_topology && out.instances.is_empty() {
        return Err(ParseError(
            "not a keepalived state dump (no VRRP Topology section)".into(),
        ));
    }
    link_sync_groups(&mut out);
    join_trackers(&mut out.instances, &states);
    Ok(out)
}

/// One entry of the list the current block opened (`trimmed` is the whole line).
fn list_item(
    kind: ListKind,
    block: &Block,
    cur: &mut Current,
    out: &mut ParsedDump,
    states: &mut TrackerStates,
    trimmed: &str,
) {
    let inst = &mut cur.inst;
    match (kind, block) {
        (ListKind::Vips | ListKind::ExcludedVips, Block::Instance) => match vip_of(trimmed) {
            Some(vip) if kind == ListKind::Vips => {
                if limits::room(inst.vips.len()) {
                    inst.vips.push(vip.to_string());
                }
            }
            Some(vip) => {
                if limits::room(inst.excluded_vips.len()) {
                    inst.excluded_vips.push(vip.to_string());
                }
            }
            None => {
                if limits::room(out.not_addresses.len()) {
                    out.not_addresses
                        .push((inst.name.clone(), limits::name(trimmed)));
                }
            }
        },
        (ListKind::Members, Block::Group) => {
            let item = trimmed.split_whitespace().next().unwrap_or("");
            let item = limits::name(item.trim_end_matches(','));
            let group = &mut cur.group;
            if limits::room(group.instances.len()) && !group.instances.contains(&item) {
                group.instances.push(item);
            }
        }
        (ListKind::Tracked(kind), Block::Instance) => {
            if let Some((name, weight)) = name_and_weight(trimmed) {
                if limits::room(inst.tracked.len())
                    && !inst
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
                if limits::room(inst.unicast_peers.len()) && !inst.unicast_peers.contains(&peer) {
                    inst.unicast_peers.push(peer);
                }
            }
        }
        (ListKind::Flags, Block::Instance) => cur.notes.flag(trimmed),
        (ListKind::TrackingInstances, Block::Interface(ifname)) => {
            if let Some((instance, weight)) = name_and_weight(trimmed) {
                if limits::room(states.interface_tracking.len()) {
                    states
                        .interface_tracking
                        .push((ifname.clone(), instance, weight));
                }
            }
        }
        _ => {}
    }
}

/// Sync-group membership is printed in two places (each instance's `Sync group` and the
/// group's member list); fill each side from the other.
fn link_sync_groups(out: &mut ParsedDump) {
    for g in &mut out.sync_groups {
        for i in &out.instances {
            if i.sync_group.as_deref() == Some(g.name.as_str())
                && limits::room(g.instances.len())
                && !g.instances.contains(&i.name)
            {
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
