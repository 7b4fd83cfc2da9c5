//! Where the server's time comes from, and the forms it writes time in.
//!
//! Domain code never reads the system clock itself: it asks a [`Clock`] (from
//! `vrrp_protocol`, shared with the agent), so that tests can drive time
//! (rate-limit windows, session lifetimes, confirmation windows, schedulers)
//! without sleeping.

use chrono::{DateTime, SecondsFormat, Utc};

/// The one clock of both binaries, in `vrrp_protocol`: the trait (`now`
/// monotonic, `utc` wall time), the real clock and the one tests drive.
pub use vrrp_protocol::clock::{Clock, ManualClock, SharedClock, SystemClock};

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
    use chrono::{Duration, TimeZone};

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
