//! Wire types shared by the server and the agent.
//!
//! Everything here is tolerant by construction: unknown fields are ignored, unknown
//! enum words are normalised, so that a server and an agent of different ages talk.
//! These are plain serde types: no I/O, no clock, no logging.

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
    pub name: String,
    pub state: VrrpState,
    pub wanted_state: Option<VrrpState>,
    pub interface: Option<String>,
    pub vrid: Option<u32>,
    pub priority: Option<u32>,
    pub effective_priority: Option<u32>,
    /// Seconds between advertisements.
    pub advert_interval: Option<f64>,
    pub vips: Vec<String>,
    /// keepalived's `virtual_ipaddress_excluded`: addresses the instance adds and
    /// removes with its state but leaves out of its adverts, in the form of `vips`.
    /// Not in the spec's VrrpInstance: an optional field under its versioning rules,
    /// left out when empty, so readings without them look as before to every server.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_vips: Vec<String>,
    pub sync_group: Option<String>,
    /// ISO 8601 UTC, from keepalived's own clock.
    pub last_transition: Option<String>,
    /// Counters with flat snake_case keys (`advertisements_received`, ...).
    #[serde(deserialize_with = "lenient_counters")]
    pub stats: Option<BTreeMap<String, u64>>,
}

/// A VRRP sync group (`syncGroups` entry of a reading).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncGroup {
    pub name: String,
    pub state: VrrpState,
    pub instances: Vec<String>,
}

/// One reading of keepalived (the server spec's KeepalivedState). The agent fills the
/// reading fields; `clientId`, `receivedAt` and `lastKnownInstances` are set by the server
/// and left out of the agent's KEEPALIVED_UPDATE.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeepalivedState {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_at: Option<String>,
    /// Agent's time of the reading, ISO 8601 UTC.
    pub collected_at: String,
    pub running: bool,
    pub pid: Option<u32>,
    pub version: Option<String>,
    /// `data` or `json`: which dump the instances come from.
    pub source: Option<String>,
    pub error: Option<String>,
    pub instances: Vec<VrrpInstance>,
    pub sync_groups: Vec<SyncGroup>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_known_instances: Option<Vec<VrrpInstance>>,
}

/// The agent's name for one KeepalivedState it took.
pub type Reading = KeepalivedState;

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
    pub subject: Map<String, Value>,
    pub data: Map<String, Value>,
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
}
