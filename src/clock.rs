//! Where the server's time comes from.
//!
//! Domain code never reads the system clock itself: it asks a [`Clock`], so that
//! tests can drive time (rate-limit windows, session lifetimes, and later the
//! cluster confirmation windows and schedulers) without sleeping.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Instant;

/// The one clock trait of both binaries (`now` monotonic, `utc` wall time).
pub use vrrp_protocol::Clock;

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn utc(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when a test moves it. Its monotonic time moves with
/// its wall time (and stays put when a test sets the wall time back).
#[derive(Debug, Clone)]
pub struct ManualClock {
    start: DateTime<Utc>,
    base: Instant,
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            start,
            base: Instant::now(),
            now: Arc::new(Mutex::new(start)),
        }
    }

    pub fn advance(&self, by: Duration) {
        *self.now.lock() += by;
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock() = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        let moved = (*self.now.lock() - self.start).to_std().unwrap_or_default();
        self.base + moved
    }

    fn utc(&self) -> DateTime<Utc> {
        *self.now.lock()
    }

    fn is_driven(&self) -> bool {
        true
    }
}

pub type SharedClock = Arc<dyn Clock>;

/// ISO 8601 UTC with milliseconds, the form of every timestamp the API returns
/// unless the spec names another (design.md).
pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A time field written as [`iso`] and read as any RFC 3339 time, for
/// `#[serde(with = "crate::clock::iso_millis")]`.
pub mod iso_millis {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::iso(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

/// `YYYY-MM-DD HH:MM:SS`, the form the spec gives for client rows.
pub fn sql_timestamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = Utc.with_ymd_and_hms(2026, 11, 21, 8, 46, 0).unwrap();
        let clock = ManualClock::new(start);
        let at_start = clock.now();
        assert_eq!(clock.utc(), start);
        clock.advance(Duration::seconds(90));
        assert_eq!(iso(clock.utc()), "2026-11-21T08:47:30.000Z");
        assert_eq!(sql_timestamp(clock.utc()), "2026-11-21 08:47:30");
        assert_eq!(clock.now() - at_start, std::time::Duration::from_secs(90));
    }
}
