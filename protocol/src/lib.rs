//! Wire types shared by the server and the agent.
//!
//! Everything here is tolerant by construction: unknown fields of a reading are
//! kept (each level has a flattened `extra` map, so a newer agent's fields survive
//! the server's round trip into storage and the dashboards), unknown enum words are
//! normalised, a known field of the wrong type reads as absent, so that a server and
//! an agent of different ages talk. These are plain serde types (and `escape_controls`,
//! the one text rule both binaries apply to wire text in log lines, the message
//! vocabulary in [`messages`], and the [`Clock`] trait each binary implements): no
//! I/O, no reading of a clock, no logging.

pub mod actions;
pub mod clock;
pub mod fingerprint;
pub mod ladder;
pub mod log_level;
pub mod messages;
pub mod wake;

pub use actions::{DrainState, HostAction, HostActionResult};
pub use clock::Clock;
pub use fingerprint::AuthPassword;
pub use log_level::LogLevel;
pub use messages::{close, kind, Refusal};

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A VRRP state as keepalived names it. Any word this build does not know reads as
/// `UNKNOWN`, so a newer keepalived (or a newer agent) never breaks the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum VrrpState {
    Init,
    Backup,
    Master,
    Fault,
    Stop,
    Deleted,
    #[default]
    Unknown,
}

impl VrrpState {
    /// The word used on the wire and in keepalived's text dump.
    pub fn as_str(self) -> &'static str {
        match self {
            VrrpState::Init => "INIT",
            VrrpState::Backup => "BACKUP",
            VrrpState::Master => "MASTER",
            VrrpState::Fault => "FAULT",
            VrrpState::Stop => "STOP",
            VrrpState::Deleted => "DELETED",
            VrrpState::Unknown => "UNKNOWN",
        }
    }

    /// Reads a state word (case-insensitive); anything else is `Unknown`.
    pub fn from_word(word: &str) -> VrrpState {
        match word.trim().to_ascii_uppercase().as_str() {
            "INIT" => VrrpState::Init,
            "BACKUP" => VrrpState::Backup,
            "MASTER" => VrrpState::Master,
            "FAULT" => VrrpState::Fault,
            "STOP" => VrrpState::Stop,
            "DELETED" => VrrpState::Deleted,
            _ => VrrpState::Unknown,
        }
    }

    /// Reads keepalived's numeric JSON state (0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT,
    /// 97 DELETED, 98 STOP).
    pub fn from_code(code: i64) -> VrrpState {
        match code {
            0 => VrrpState::Init,
            1 => VrrpState::Backup,
            2 => VrrpState::Master,
            3 => VrrpState::Fault,
            97 => VrrpState::Deleted,
            98 => VrrpState::Stop,
            _ => VrrpState::Unknown,
        }
    }
}

impl fmt::Display for VrrpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for VrrpState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for VrrpState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Accept any JSON value: a string is read as a word, a number as keepalived's
        // code, anything else is UNKNOWN. A reading never fails because of its state.
        let v = Value::deserialize(d)?;
        Ok(match v {
            Value::String(s) => VrrpState::from_word(&s),
            Value::Number(n) => n.as_i64().map_or(VrrpState::Unknown, VrrpState::from_code),
            _ => VrrpState::Unknown,
        })
    }
}

/// One VRRP instance as it leaves the host. Only these fields are ever copied out of
/// keepalived's output (never its authentication password).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VrrpInstance {
    #[serde(deserialize_with = "lenient")]
    pub name: String,
    pub state: VrrpState,
    #[serde(deserialize_with = "lenient")]
    pub wanted_state: Option<VrrpState>,
    #[serde(deserialize_with = "lenient")]
    pub interface: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub vrid: Option<u32>,
    #[serde(deserialize_with = "lenient")]
    pub priority: Option<u32>,
    #[serde(deserialize_with = "lenient")]
    pub effective_priority: Option<u32>,
    /// Seconds between advertisements.
    #[serde(deserialize_with = "lenient")]
    pub advert_interval: Option<f64>,
    #[serde(deserialize_with = "lenient_list")]
    pub vips: Vec<String>,
    /// keepalived's `virtual_ipaddress_excluded`: addresses the instance adds and
    /// removes with its state but leaves out of its adverts, in the form of `vips`.
    /// Not in the spec's VrrpInstance: an optional field under its versioning rules,
    /// left out when empty, so readings without them look as before to every server.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_list"
    )]
    pub excluded_vips: Vec<String>,
    #[serde(deserialize_with = "lenient")]
    pub sync_group: Option<String>,
    /// ISO 8601 UTC, from keepalived's own clock.
    #[serde(deserialize_with = "lenient")]
    pub last_transition: Option<String>,
    /// Counters with flat snake_case keys (`advertisements_received`, ...);
    /// `null` when the counters dump was not read ("object or null", spec).
    #[serde(deserialize_with = "lenient_counters")]
    pub stats: Option<BTreeMap<String, u64>>,
    /// What keepalived tracks for this instance (scripts, interfaces, files,
    /// processes), each with its state as keepalived words it. Optional under the
    /// versioning rules like `excludedVips`: left out when empty.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_list"
    )]
    pub tracked: Vec<TrackedItem>,
    /// keepalived's `Number of tracker faults` (2.3 and later); absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub tracker_faults: Option<u32>,
    /// A unicast instance's peers (addresses, as keepalived lists them).
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "lenient_list"
    )]
    pub unicast_peers: Vec<String>,
    /// On a backup, the `Master router` keepalived last heard from (an address).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub master_router: Option<String>,
    /// The VRRP version the instance speaks (2 or 3).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub vrrp_version: Option<u8>,
    /// keepalived's authentication type in one lowercase word: `none`, `pass`
    /// (`SIMPLE_PASSWORD`) or `ah` (`IPSEC_AH`); another word lowercased.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub auth_type: Option<String>,
    /// HMAC-SHA256 of the authentication password under the key the server handed
    /// this agent (`fingerprintKey` of AUTH_SUCCESS), hex, first 128 bits: equal
    /// passwords give equal fingerprints; the password never leaves the host.
    /// Absent without a password, without a key, or when keepalived masks it.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub auth_fingerprint: Option<String>,
    /// `true` when keepalived (2.4 and later) masks the password in its dump, so
    /// no fingerprint can be made.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub auth_password_masked: Option<bool>,
    /// Whether the instance preempts a lower-priority master.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub preempt: Option<bool>,
    /// keepalived's `preempt_delay`, seconds.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub preempt_delay: Option<f64>,
    /// keepalived's accept mode (`accept`/`no_accept`).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub accept_mode: Option<bool>,
    /// On a VRRPv3 backup, the advert interval the master announces (seconds).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub master_advert_interval: Option<f64>,
    /// Whether the instance sends its adverts by unicast (keepalived's
    /// `Using unicast` flag); absent when the dump does not say.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub uses_unicast: Option<bool>,
    /// The source address of the instance's adverts (`Using src_ip`).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub source_address: Option<String>,
    /// keepalived's `Number of config faults` for the instance.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub config_faults: Option<u32>,
    /// The password itself, on the agent only: never serialised, never printed;
    /// the connection of each server turns it into `authFingerprint` with that
    /// server's key just before the reading is sent.
    #[serde(skip)]
    pub auth_password: Option<AuthPassword>,
    /// Server field: why a FAULT instance is in FAULT ([`VrrpInstance::fault_causes`]),
    /// set by the server on every stored FAULT instance; an agent sends none, and
    /// whatever one sends is replaced. Left out when absent.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub fault_causes: Option<Vec<FaultCause>>,
    /// Server field: the causes in words, beside `faultCauses`.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub fault_reason: Option<String>,
    /// Fields this build does not know, kept as they came (versioning rule: a
    /// newer agent's fields reach storage and the dashboards unchanged).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What kind of thing keepalived tracks. An unknown word from a newer agent reads
/// as `Other`, so a reading never fails because of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum TrackedKind {
    /// `track_script`: a `vrrp_script` keepalived runs.
    Script,
    /// `track_interface`: a network interface that must be up.
    Interface,
    /// `track_file`: a file holding a number keepalived adds to the priority.
    File,
    /// `track_process`: a process that must run (a count of instances).
    Process,
    #[default]
    Other,
}

impl TrackedKind {
    /// The word used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TrackedKind::Script => "script",
            TrackedKind::Interface => "interface",
            TrackedKind::File => "file",
            TrackedKind::Process => "process",
            TrackedKind::Other => "other",
        }
    }

    pub fn from_word(word: &str) -> TrackedKind {
        match word {
            "script" => TrackedKind::Script,
            "interface" => TrackedKind::Interface,
            "file" => TrackedKind::File,
            "process" => TrackedKind::Process,
            _ => TrackedKind::Other,
        }
    }
}

impl Serialize for TrackedKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TrackedKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(v.as_str()
            .map_or(TrackedKind::Other, TrackedKind::from_word))
    }
}

/// One item an instance tracks (`tracked` entry of a VrrpInstance).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TrackedItem {
    pub kind: TrackedKind,
    /// The script's, interface's, file's or process's name in keepalived.conf.
    #[serde(deserialize_with = "lenient")]
    pub name: String,
    /// keepalived's own word for its state, as it writes it (`GOOD`, `BAD`,
    /// `INIT`, `UP`, `DOWN`, ...); absent where keepalived writes none.
    #[serde(deserialize_with = "lenient")]
    pub status: Option<String>,
    /// A track script's run state as keepalived words it (`idle`, `running`,
    /// `requested termination`, `forcing termination`: keepalived-exporter's
    /// `keepalived_script_state`); absent for other kinds. Optional: left out when
    /// absent, so other items are as before.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub state: Option<String>,
    /// A track file's current value, or a track process's count of running
    /// processes; absent for scripts and interfaces.
    #[serde(deserialize_with = "lenient")]
    pub value: Option<i64>,
    /// The weight the instance gives it; absent when keepalived shows none (an
    /// item without weight puts the instance in FAULT when it fails).
    #[serde(deserialize_with = "lenient")]
    pub weight: Option<i64>,
    /// Whether the item is in its good state; `false` is what can put the
    /// instance in FAULT (or lower its priority, with a weight).
    #[serde(deserialize_with = "lenient")]
    pub ok: bool,
    /// Fields this build does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why an instance is in FAULT, as far as its reading tells (see
/// [`VrrpInstance::fault_causes`]). The server words it; the agent puts it in
/// `vrrp.state_changed`'s data as `causes`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultCause {
    /// `script`, `interface`, `file`, `process`, or `syncGroup` when the
    /// instance is in FAULT only because its sync group is.
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub value: Option<i64>,
}

impl VrrpInstance {
    /// The causes of a FAULT as the reading shows them: every tracked item that
    /// is not ok and has no weight (a weighted item only lowers the priority),
    /// or, when none of its own fails but its sync group is in FAULT, the group.
    /// Empty when the instance is not in FAULT or no cause is reportable.
    pub fn fault_causes(&self, sync_groups: &[SyncGroup]) -> Vec<FaultCause> {
        if self.state != VrrpState::Fault {
            return Vec::new();
        }
        let own: Vec<FaultCause> = self
            .tracked
            .iter()
            .filter(|t| !t.ok && t.weight.unwrap_or(0) == 0)
            .map(|t| FaultCause {
                kind: t.kind.as_str().to_string(),
                name: t.name.clone(),
                status: t.status.clone(),
                value: t.value,
            })
            .collect();
        if !own.is_empty() {
            return own;
        }
        let group = self.sync_group.as_deref().and_then(|g| {
            sync_groups
                .iter()
                .find(|s| s.name == g && s.state == VrrpState::Fault)
        });
        group
            .map(|g| FaultCause {
                kind: "syncGroup".to_string(),
                name: g.name.clone(),
                status: Some(VrrpState::Fault.as_str().to_string()),
                value: None,
            })
            .into_iter()
            .collect()
    }
}

/// A VRRP sync group (`syncGroups` entry of a reading).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncGroup {
    #[serde(deserialize_with = "lenient")]
    pub name: String,
    pub state: VrrpState,
    #[serde(deserialize_with = "lenient_list")]
    pub instances: Vec<String>,
    /// Fields this build does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One reading of keepalived (the server spec's KeepalivedState). The agent fills the
/// reading fields; `clientId`, `receivedAt` and `lastKnownInstances` are set by the server
/// and left out of the agent's KEEPALIVED_UPDATE.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeepalivedState {
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub received_at: Option<String>,
    /// Agent's time of the reading, ISO 8601 UTC.
    #[serde(deserialize_with = "lenient")]
    pub collected_at: String,
    #[serde(deserialize_with = "lenient")]
    pub running: bool,
    #[serde(deserialize_with = "lenient")]
    pub pid: Option<u32>,
    #[serde(deserialize_with = "lenient")]
    pub version: Option<String>,
    /// `data` or `json`: which dump the instances come from.
    #[serde(deserialize_with = "lenient")]
    pub source: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub error: Option<String>,
    #[serde(deserialize_with = "lenient_list")]
    pub instances: Vec<VrrpInstance>,
    #[serde(deserialize_with = "lenient_list")]
    pub sync_groups: Vec<SyncGroup>,
    /// Set by the server; its counters are left out (spec), not written as null.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "without_counters",
        deserialize_with = "lenient"
    )]
    pub last_known_instances: Option<Vec<VrrpInstance>>,
    /// Whether the host is drained through its drain file ([`actions`]); absent when
    /// the agent's actions are disabled (and from agents older than actions).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub drain: Option<DrainState>,
    /// Fields this build does not know, kept as they came (the server stores and
    /// rebroadcasts them: a newer agent's fields survive an older server).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The agent's name for one KeepalivedState it took.
pub type Reading = KeepalivedState;

/// Instances as `lastKnownInstances` carries them (and the server stores
/// them): each without `stats`, which is left out rather than null (spec).
pub fn instances_without_counters(instances: &[VrrpInstance]) -> Vec<Value> {
    instances
        .iter()
        .map(|i| {
            let mut v = serde_json::to_value(i).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.remove("stats");
            }
            v
        })
        .collect()
}

fn without_counters<S: serde::Serializer>(
    instances: &Option<Vec<VrrpInstance>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    instances_without_counters(instances.as_deref().unwrap_or_default()).serialize(s)
}

impl KeepalivedState {
    /// True when the reading describes a running keepalived that could be read.
    pub fn readable(&self) -> bool {
        self.running && self.error.is_none()
    }

    /// Equality that ignores what changes on every reading: the time and the counters.
    pub fn same_apart_from_counters(&self, other: &KeepalivedState) -> bool {
        let strip = |s: &KeepalivedState| {
            let mut s = s.clone();
            s.collected_at.clear();
            s.received_at = None;
            for i in &mut s.instances {
                i.stats = None;
            }
            s
        };
        strip(self) == strip(other)
    }
}

/// Level of an activity event, lowest first. An unknown word reads as `info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum ActivityLevel {
    Trace,
    #[default]
    Info,
    Warning,
    Error,
}

impl ActivityLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityLevel::Trace => "trace",
            ActivityLevel::Info => "info",
            ActivityLevel::Warning => "warning",
            ActivityLevel::Error => "error",
        }
    }
}

impl Serialize for ActivityLevel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ActivityLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match v.as_str() {
            Some("trace") => ActivityLevel::Trace,
            Some("warning") => ActivityLevel::Warning,
            Some("error") => ActivityLevel::Error,
            _ => ActivityLevel::Info,
        })
    }
}

/// An activity event as an agent reports it (`ACTIVITY` batch entry). The server adds
/// `receivedAt`, `source`, `clientId` and `seen` to make its ActivityRecord.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActivityEvent {
    pub id: String,
    pub occurred_at: String,
    pub kind: String,
    pub level: ActivityLevel,
    pub correlation_id: Option<String>,
    /// For VRRP events `{instanceName, vrid, interface}`; `{}` for process events.
    #[serde(deserialize_with = "null_as_empty")]
    pub subject: Map<String, Value>,
    #[serde(deserialize_with = "null_as_empty")]
    pub data: Map<String, Value>,
}

/// A map that may come as `null`: read as empty.
fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Ok(Option::<Map<String, Value>>::deserialize(d)?.unwrap_or_default())
}

/// Payload of the agent's `ACTIVITY` message.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActivityBatch {
    pub events: Vec<ActivityEvent>,
}

/// Payload of the server's `ACTIVITY_ACK` message.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActivityAck {
    pub ids: Vec<String>,
}

/// Text that came over the wire (a host name, a user's input) on its way into a
/// log line: both binaries log through this, so a name cannot forge a line.
/// `text` with control characters (newlines, carriage returns, escapes; tabs
/// kept) written as escapes, so a log line cannot be split or recoloured.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push(c),
            c if c.is_control() => out.extend(c.escape_debug()),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A field of the wrong type (a string where a number belongs, from a broken or
/// hostile sender) reads as its default rather than failing the whole reading.
pub(crate) fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// A list that is not a list (or holds entries of another shape) from another
/// build reads as empty rather than failing the whole reading.
fn lenient_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Option::<Value>::deserialize(d)?;
    Ok(match v {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// Counters keep only whole non-negative numbers; anything else in the map is skipped
/// rather than failing the whole reading.
fn lenient_counters<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, u64>>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(match v {
        Some(Value::Object(m)) => Some(
            m.into_iter()
                .filter_map(|(k, v)| v.as_u64().map(|n| (k, n)))
                .collect(),
        ),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_state_word_and_fields_are_tolerated() {
        let json = r#"{"collectedAt":"2026-11-21T08:46:00.000Z","running":true,"futureField":1,
            "instances":[{"name":"VI_1","state":"BECOMING_MASTER","wantedState":2,
            "vrid":51,"stats":{"advertisements_sent":8,"odd":"x"},"extra":{}}],
            "syncGroups":[{"name":"SG_1","state":"master","instances":["VI_1"]}]}"#;
        let s: KeepalivedState = serde_json::from_str(json).unwrap();
        assert_eq!(s.instances[0].state, VrrpState::Unknown);
        assert_eq!(s.instances[0].wanted_state, Some(VrrpState::Master));
        assert_eq!(
            s.instances[0]
                .stats
                .as_ref()
                .unwrap()
                .get("advertisements_sent"),
            Some(&8)
        );
        assert_eq!(s.instances[0].stats.as_ref().unwrap().len(), 1);
        assert_eq!(s.sync_groups[0].state, VrrpState::Master);
        let out = serde_json::to_value(&s).unwrap();
        assert_eq!(out["instances"][0]["state"], "UNKNOWN");
        assert!(out.get("clientId").is_none());
        assert!(out.get("lastKnownInstances").is_none());
        assert_eq!(out["syncGroups"][0]["instances"][0], "VI_1");
    }

    #[test]
    fn activity_event_round_trips_in_camel_case() {
        let json = r#"{"id":"a","occurredAt":"t","kind":"vrrp.state_changed","level":"loud",
            "correlationId":null,"subject":{"instanceName":"VI_1"},"data":{"to":"FAULT"}}"#;
        let e: ActivityEvent = serde_json::from_str(json).unwrap();
        assert_eq!(e.level, ActivityLevel::Info);
        let out = serde_json::to_value(&e).unwrap();
        assert_eq!(out["occurredAt"], "t");
        assert_eq!(out["subject"]["instanceName"], "VI_1");
        assert!(out["correlationId"].is_null());
    }

    #[test]
    fn excluded_vips_are_optional_both_ways() {
        // Left out when empty: a reading without exclusions is what it was before.
        let plain = VrrpInstance {
            name: "VI_1".into(),
            vips: vec!["192.0.2.100/24".into()],
            ..Default::default()
        };
        let out = serde_json::to_value(&plain).unwrap();
        assert!(out.get("excludedVips").is_none(), "{out}");
        // Named when present; an older reading without the field reads as none.
        let with = VrrpInstance {
            excluded_vips: vec!["192.0.2.200/24".into()],
            ..plain.clone()
        };
        let out = serde_json::to_value(&with).unwrap();
        assert_eq!(out["excludedVips"][0], "192.0.2.200/24");
        let back: VrrpInstance = serde_json::from_value(out).unwrap();
        assert_eq!(back, with);
        let old: VrrpInstance =
            serde_json::from_str(r#"{"name":"VI_1","state":"MASTER","vips":[]}"#).unwrap();
        assert!(old.excluded_vips.is_empty());
    }

    #[test]
    fn counters_aside_comparison_ignores_time_and_stats() {
        let mut a = KeepalivedState {
            collected_at: "1".into(),
            running: true,
            instances: vec![VrrpInstance {
                name: "VI_1".into(),
                state: VrrpState::Master,
                stats: Some(BTreeMap::from([("x".to_string(), 1)])),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut b = a.clone();
        b.collected_at = "2".into();
        b.instances[0].stats = Some(BTreeMap::from([("x".to_string(), 2)]));
        assert!(a.same_apart_from_counters(&b));
        a.instances[0].state = VrrpState::Backup;
        assert!(!a.same_apart_from_counters(&b));
    }

    #[test]
    fn tracked_items_are_optional_tolerant_and_name_the_fault() {
        let old: VrrpInstance = serde_json::from_str(r#"{"name":"VI_1","state":"FAULT"}"#).unwrap();
        assert!(old.tracked.is_empty());
        let out = serde_json::to_value(&old).unwrap();
        for key in ["tracked", "trackerFaults", "unicastPeers", "masterRouter"] {
            assert!(out.get(key).is_none(), "{key} left out when empty");
        }
        let json = r#"{"name":"VI_1","state":"FAULT","syncGroup":"SG_1",
            "tracked":[{"kind":"script","name":"chk_lab","status":"BAD","ok":false},
                       {"kind":"interface","name":"trk0","status":"UP","ok":true},
                       {"kind":"file","name":"tf","value":-5,"weight":1,"ok":false},
                       {"kind":"telepathy","name":"x","ok":true}, 7],
            "unicastPeers":"not a list"}"#;
        let i: VrrpInstance = serde_json::from_str(json).unwrap();
        assert_eq!(i.tracked.len(), 4, "the entry of another shape is dropped");
        assert_eq!(i.tracked[3].kind, TrackedKind::Other);
        assert!(i.unicast_peers.is_empty());
        let causes = i.fault_causes(&[]);
        assert_eq!(
            causes.len(),
            1,
            "the weighted file only lowers the priority"
        );
        assert_eq!(causes[0].kind, "script");
        assert_eq!(causes[0].name, "chk_lab");
        assert_eq!(causes[0].status.as_deref(), Some("BAD"));

        let mut through_group = i.clone();
        through_group.tracked.clear();
        let groups = [SyncGroup {
            name: "SG_1".into(),
            state: VrrpState::Fault,
            instances: vec!["VI_1".into(), "VI_2".into()],
            ..Default::default()
        }];
        let causes = through_group.fault_causes(&groups);
        assert_eq!(causes[0].kind, "syncGroup");
        assert_eq!(causes[0].name, "SG_1");
        assert!(through_group.fault_causes(&[]).is_empty());
        let mut backup = i;
        backup.state = VrrpState::Backup;
        assert!(backup.fault_causes(&groups).is_empty());
    }

    #[test]
    fn a_newer_agents_fields_survive_the_round_trip_at_every_level() {
        let json = r#"{"collectedAt":"t","running":true,"pid":7,"version":null,"source":"data",
            "error":null,"topNew":{"a":[1,2]},
            "instances":[{"name":"VI_1","state":"MASTER","vrid":51,"vips":[],"instNew":"x",
                "tracked":[{"kind":"script","name":"chk","status":"GOOD","ok":true,"itemNew":3}]}],
            "syncGroups":[{"name":"SG","state":"MASTER","instances":["VI_1"],"groupNew":false}]}"#;
        let r: Reading = serde_json::from_str(json).unwrap();
        assert_eq!(r.extra["topNew"], serde_json::json!({"a": [1, 2]}));
        let out = serde_json::to_value(&r).unwrap();
        assert_eq!(out["topNew"], serde_json::json!({"a": [1, 2]}));
        assert_eq!(out["instances"][0]["instNew"], "x");
        assert_eq!(out["instances"][0]["tracked"][0]["itemNew"], 3);
        assert_eq!(out["syncGroups"][0]["groupNew"], false);
        // Known fields are not duplicated into the extra maps.
        assert!(!r.extra.contains_key("running") && !r.instances[0].extra.contains_key("vrid"));
        let again: Reading = serde_json::from_value(out.clone()).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), out);
    }

    #[test]
    fn a_field_of_the_wrong_type_reads_as_absent() {
        let json = r#"{"collectedAt":"t","running":true,"pid":"seven",
            "instances":[{"name":"VI_1","vrid":"51","priority":-1,"vips":["192.0.2.1",5]}]}"#;
        let r: Reading = serde_json::from_str(json).unwrap();
        assert_eq!(r.pid, None);
        assert_eq!(r.instances[0].vrid, None);
        assert_eq!(r.instances[0].priority, None);
        assert_eq!(r.instances[0].vips, ["192.0.2.1"]);
        // Absent counters are null ("object or null"); absent fault causes stay
        // absent; the last-known instances carry no counters at all.
        let out = serde_json::to_value(&r.instances[0]).unwrap();
        assert!(out["stats"].is_null() && out.get("stats").is_some());
        assert!(out.get("faultCauses").is_none());
        let mut known = r.clone();
        known.instances[0].stats = Some(BTreeMap::from([("x".to_string(), 1)]));
        known.last_known_instances = Some(known.instances.clone());
        let out = serde_json::to_value(&known).unwrap();
        assert_eq!(out["instances"][0]["stats"]["x"], 1);
        assert!(out["lastKnownInstances"][0].get("stats").is_none());
        assert_eq!(out["lastKnownInstances"][0]["name"], "VI_1");
    }
}
