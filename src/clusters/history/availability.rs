//! Availability figures of one cluster over a window, summed from its history
//! intervals (pure: no clock, no database).
//!
//! - seconds in each incident health, over the observed time (time no interval
//!   covers, such as while the server was stopped, is `unobservedSeconds`);
//! - master changes: intervals starting inside the window with exactly one master
//!   that is not who was master before (as `vrrp.master_changed` counts: a master
//!   coming back after a split brain or a time without one counts too);
//! - incidents overlapping the window: their number, total and longest length,
//!   each from its first to its last interval inside the window (a server restart
//!   within an incident counts: the incident stayed open, as its
//!   `durationSeconds` would say);
//! - the share of the observed time with exactly one master (not counting
//!   `unreachable`, when no agent could say who was master).

use super::{HistoryHealth, Interval};
use serde::Serialize;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Availability {
    pub window_ms: i64,
    pub observed_ms: i64,
    /// Indexed by [`HistoryHealth::index`].
    pub health_ms: [i64; 6],
    pub master_changes: u64,
    pub incidents: u64,
    pub incident_total_ms: i64,
    pub incident_longest_ms: i64,
    pub one_master_ms: i64,
}

/// Sums one cluster's intervals (sorted by start, not overlapping) over
/// `[from_ms, to_ms)`. Given the cluster's whole history, an interval starting in
/// the window is compared with the one before it wherever that one lies.
pub fn availability(intervals: &[Interval], from_ms: i64, to_ms: i64) -> Availability {
    availability_of(intervals, from_ms, to_ms)
}

/// [`availability`] over intervals from anywhere (the mirror's stored ones with
/// its open one ended now), in the same order.
pub fn availability_of<'a>(
    intervals: impl IntoIterator<Item = &'a Interval>,
    from_ms: i64,
    to_ms: i64,
) -> Availability {
    let mut a = Availability {
        window_ms: (to_ms - from_ms).max(0),
        ..Availability::default()
    };
    let mut previous: Option<&Interval> = None;
    // The incident being followed: its id and its span inside the window.
    let mut incident: Option<(Arc<str>, i64, i64)> = None;
    for i in intervals {
        let (f, t) = (i.from_ms.max(from_ms), i.to_ms.min(to_ms));
        if i.from_ms >= to_ms {
            break;
        }
        if let Some(p) = previous {
            let starts_inside = i.from_ms >= from_ms;
            if starts_inside
                && i.masters.ids.len() == 1
                && !Arc::ptr_eq(&p.masters, &i.masters)
                && p.masters.ids != i.masters.ids
            {
                a.master_changes += 1;
            }
        }
        previous = Some(i);
        if f >= t {
            continue;
        }
        let d = t - f;
        a.observed_ms += d;
        a.health_ms[i.health.index()] += d;
        if i.masters.ids.len() == 1 && i.health != HistoryHealth::Unreachable {
            a.one_master_ms += d;
        }
        match (&mut incident, &i.incident) {
            (Some((id, _, end)), Some(this)) if id == this => *end = t,
            (current, this) => {
                if let Some((_, start, end)) = current.take() {
                    a.add_incident(end - start);
                }
                *current = this.as_ref().map(|id| (id.clone(), f, t));
            }
        }
    }
    if let Some((_, start, end)) = incident {
        a.add_incident(end - start);
    }
    a
}

impl Availability {
    fn add_incident(&mut self, ms: i64) {
        self.incidents += 1;
        self.incident_total_ms += ms;
        self.incident_longest_ms = self.incident_longest_ms.max(ms);
    }

    /// The API's form (seconds, with milliseconds as fractions).
    pub fn view(&self, key: String) -> AvailabilityView {
        let secs = |ms: i64| ms as f64 / 1000.0;
        AvailabilityView {
            key,
            observed_seconds: secs(self.observed_ms),
            unobserved_seconds: secs(self.window_ms - self.observed_ms),
            seconds: HealthSeconds(self.health_ms.map(secs)),
            master_changes: self.master_changes,
            incidents: IncidentFigures {
                count: self.incidents,
                total_seconds: secs(self.incident_total_ms),
                longest_seconds: secs(self.incident_longest_ms),
            },
            one_master_share: (self.observed_ms > 0)
                .then(|| self.one_master_ms as f64 / self.observed_ms as f64),
        }
    }
}

/// One cluster's availability figures as the API shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilityView {
    pub key: String,
    pub observed_seconds: f64,
    pub unobserved_seconds: f64,
    pub seconds: HealthSeconds,
    pub master_changes: u64,
    pub incidents: IncidentFigures,
    /// `None` when nothing was observed: no share rather than a made-up one.
    pub one_master_share: Option<f64>,
}

/// Seconds in each incident health, by its name (indexed by [`HistoryHealth::index`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HealthSeconds(pub [f64; 6]);

impl Serialize for HealthSeconds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(
            HistoryHealth::ALL
                .iter()
                .map(|h| (h.as_str(), self.0[h.index()])),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentFigures {
    pub count: u64,
    pub total_seconds: f64,
    pub longest_seconds: f64,
}
