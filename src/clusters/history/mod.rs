//! Cluster history: the intervals in which a cluster's confirmed state
//! held (its masters, incident health and open incident), kept apart from the
//! activity list and its retention.
//!
//! The `cluster-eval` thread writes them as the evaluator confirms changes: a
//! [`Book`] (pure) turns each confirmed state into the writes that close the
//! open interval and open the next; [`store`] carries them out, in the table
//! and (once committed) in the [`mirror`] (pure), the copy in memory the
//! endpoints read; [`availability`] (pure) sums a window of intervals into the
//! figures operators ask for. A cluster whose key changes (site or network edited) is a
//! new cluster: its old key's intervals are closed and stay readable under it.
//!
//! Restart rule: an open interval's end is touched every
//! [`TOUCH_SECS`] while the server runs. At start every interval still open is
//! closed where it was last known to hold, and the confirmed states resume as new
//! intervals once evaluation starts (after the start-up guard). The time between
//! is *unobserved*: nothing was watching, so the history says so rather than
//! stretching the last state over it. An incident open across the restart keeps
//! its id on both sides.

pub mod availability;
pub mod mirror;
#[cfg(test)]
mod mirror_tests;
pub mod store;
#[cfg(test)]
mod tests;

use crate::clock::iso;
use crate::clusters::confirm::Confirmed;
use crate::clusters::observe::{IncidentHealth, Roles};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// How often the open intervals' ends are moved to now.
pub const TOUCH_SECS: i64 = 30;

/// The incident health an interval was confirmed in (`no statement` is never
/// confirmed: the previous state is kept then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistoryHealth {
    Ok,
    Degraded,
    VipMismatch,
    NoMaster,
    SplitBrain,
    Unreachable,
}

impl HistoryHealth {
    pub const ALL: [HistoryHealth; 6] = [
        HistoryHealth::Ok,
        HistoryHealth::Degraded,
        HistoryHealth::VipMismatch,
        HistoryHealth::NoMaster,
        HistoryHealth::SplitBrain,
        HistoryHealth::Unreachable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HistoryHealth::Ok => "ok",
            HistoryHealth::Degraded => "degraded",
            HistoryHealth::VipMismatch => "vip-mismatch",
            HistoryHealth::NoMaster => "no-master",
            HistoryHealth::SplitBrain => "split-brain",
            HistoryHealth::Unreachable => "unreachable",
        }
    }

    pub fn parse(s: &str) -> Option<HistoryHealth> {
        HistoryHealth::ALL.into_iter().find(|h| h.as_str() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }

    fn of(h: IncidentHealth) -> Option<HistoryHealth> {
        Some(match h {
            IncidentHealth::Ok => HistoryHealth::Ok,
            IncidentHealth::Degraded => HistoryHealth::Degraded,
            IncidentHealth::VipMismatch => HistoryHealth::VipMismatch,
            IncidentHealth::NoMaster => HistoryHealth::NoMaster,
            IncidentHealth::SplitBrain => HistoryHealth::SplitBrain,
            IncidentHealth::Unreachable => HistoryHealth::Unreachable,
            IncidentHealth::NoStatement => return None,
        })
    }
}

/// The confirmed masters of an interval: client ids (what identifies a master
/// change) and host names as they were then.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Masters {
    pub ids: Vec<String>,
    pub hosts: Vec<String>,
}

impl Masters {
    /// The stored form: `[[clientId, host], ...]`.
    pub fn to_text(&self) -> String {
        let pairs: Vec<Value> = self
            .ids
            .iter()
            .zip(&self.hosts)
            .map(|(id, host)| json!([id, host]))
            .collect();
        Value::Array(pairs).to_string()
    }

    pub fn from_text(text: &str) -> Masters {
        let pairs: Vec<(String, String)> = serde_json::from_str(text).unwrap_or_default();
        let (ids, hosts) = pairs.into_iter().unzip();
        Masters { ids, hosts }
    }
}

/// What an interval says: who was master, the health, the incident open.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub masters: Masters,
    pub health: HistoryHealth,
    pub incident: Option<String>,
}

/// The shape of a confirmed state; `None` when it says nothing new (no statement).
pub fn shape_of(confirmed: &Confirmed) -> Option<Shape> {
    let health = HistoryHealth::of(confirmed.health)?;
    let ids: Vec<String> = match &confirmed.roles {
        Roles::Unknown | Roles::None => Vec::new(),
        Roles::One(id) => vec![id.clone()],
        Roles::Several(ids) => ids.clone(),
    };
    // Host names from the cluster as confirmed; a member no longer listed keeps
    // its id as its name rather than vanishing from the history.
    let members = confirmed.cluster["members"].as_array();
    let hosts = ids
        .iter()
        .map(|id| {
            members
                .and_then(|ms| ms.iter().find(|m| m["clientId"].as_str() == Some(id)))
                .and_then(|m| m["host"].as_str())
                .unwrap_or(id)
                .to_owned()
        })
        .collect();
    Some(Shape {
        masters: Masters { ids, hosts },
        health,
        incident: confirmed.incident.as_ref().map(|i| i.id.clone()),
    })
}

/// A change to the stored history.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Start an interval (replacing one of the same key starting at the same
    /// millisecond, which would have lasted no time).
    Open {
        key: String,
        from_ms: i64,
        shape: Shape,
    },
    /// End the key's open interval.
    Close { key: String, at_ms: i64 },
}

/// The open interval of every cluster, as the history has it; decides the writes.
#[derive(Debug, Default)]
pub struct Book {
    open: HashMap<String, (i64, Shape)>,
    /// Whether the restored clusters have been opened since the start.
    pub resumed: bool,
}

impl Book {
    /// A cluster's confirmed state since `at_ms`: nothing when it is the shape
    /// already open, else the open interval closes and this one opens. Never
    /// starts before the open interval (a change first seen before it began is
    /// taken as starting with it).
    pub fn record(&mut self, key: &str, shape: Shape, at_ms: i64, out: &mut Vec<Write>) {
        let mut at = at_ms;
        if let Some((from, open)) = self.open.get(key) {
            if *open == shape {
                return;
            }
            at = at.max(*from);
            out.push(Write::Close {
                key: key.to_owned(),
                at_ms: at,
            });
        }
        out.push(Write::Open {
            key: key.to_owned(),
            from_ms: at,
            shape: shape.clone(),
        });
        self.open.insert(key.to_owned(), (at, shape));
    }

    /// The cluster is gone (client deleted, key changed): its interval ends.
    pub fn close(&mut self, key: &str, at_ms: i64, out: &mut Vec<Write>) {
        if let Some((from, _)) = self.open.remove(key) {
            out.push(Write::Close {
                key: key.to_owned(),
                at_ms: at_ms.max(from),
            });
        }
    }
}

/// An interval as read back. The masters and incident ids are shared between the
/// rows that carry the same ones (a year of a thousand clusters repeats them).
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub from_ms: i64,
    /// For an open interval: now.
    pub to_ms: i64,
    pub open: bool,
    pub masters: Arc<Masters>,
    pub health: HistoryHealth,
    pub incident: Option<Arc<str>>,
}

/// The intervals (sorted by start) cut to the window; those outside it or of no
/// length after the cut are left out, except the open one that began just now
/// (it is the state now).
pub fn clip(intervals: &[Interval], from_ms: i64, to_ms: i64) -> Vec<Interval> {
    intervals
        .iter()
        .filter_map(|i| {
            let (f, t) = (i.from_ms.max(from_ms), i.to_ms.min(to_ms));
            (f < t || (i.open && f == t && i.from_ms >= from_ms)).then(|| Interval {
                from_ms: f,
                to_ms: t,
                // Cut at the window's end, it is not open in this window: a past
                // window reads the same whether the interval is still open, was
                // closed later, or was closed by a restart.
                open: i.open && i.to_ms <= to_ms,
                ..i.clone()
            })
        })
        .collect()
}

pub fn ms_to_time(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

/// The API's form of one (clipped) interval.
pub fn interval_json(i: &Interval) -> Value {
    json!({
        "from": iso(ms_to_time(i.from_ms)),
        "to": iso(ms_to_time(i.to_ms)),
        "open": i.open,
        "master": if i.masters.hosts.len() == 1 { json!(i.masters.hosts[0]) } else { Value::Null },
        "masters": i.masters.hosts,
        "masterIds": i.masters.ids,
        "health": i.health.as_str(),
        "incidentId": i.incident.as_deref(),
    })
}
