//! The login rate limit: 10 attempts per 15 minutes per client address, successful
//! or not. A fixed window per address, starting at its first attempt. An IPv6
//! client counts per /64: one host holds a whole /64 and can pick any address in
//! it for each attempt.

use chrono::{DateTime, Duration, Utc};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;

pub const LOGIN_LIMIT: u32 = 10;
pub const LOGIN_WINDOW_SECS: i64 = 15 * 60;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    pub reset_at: DateTime<Utc>,
    /// Whole seconds until the window resets (at least 1), for `Retry-After`.
    pub retry_after_secs: i64,
}

struct Window {
    start: DateTime<Utc>,
    count: u32,
}

pub struct RateLimiter {
    limit: u32,
    window: Duration,
    windows: Mutex<HashMap<IpAddr, Window>>,
}

/// The address an attempt is counted under: an IPv4 address (or an IPv4-mapped
/// IPv6 one) as it is, an IPv6 address by its /64.
fn counted_as(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
        v4 => v4,
    }
}

impl RateLimiter {
    pub fn new(limit: u32, window_secs: i64) -> Self {
        RateLimiter {
            limit,
            window: Duration::seconds(window_secs),
            windows: Mutex::new(HashMap::new()),
        }
    }

    pub fn login() -> Self {
        Self::new(LOGIN_LIMIT, LOGIN_WINDOW_SECS)
    }

    /// Counts one attempt from `ip` at `now` and says whether it may proceed.
    pub fn hit(&self, ip: IpAddr, now: DateTime<Utc>) -> Decision {
        let mut windows = self.windows.lock();
        // Forget finished windows now and then, so addresses that stopped coming cost nothing.
        if windows.len() > 1024 {
            let window = self.window;
            windows.retain(|_, w| w.start + window > now);
        }
        let w = windows.entry(counted_as(ip)).or_insert(Window {
            start: now,
            count: 0,
        });
        if w.start + self.window <= now {
            *w = Window {
                start: now,
                count: 0,
            };
        }
        w.count = w.count.saturating_add(1);
        let reset_at = w.start + self.window;
        Decision {
            allowed: w.count <= self.limit,
            limit: self.limit,
            remaining: self.limit.saturating_sub(w.count),
            reset_at,
            retry_after_secs: (reset_at - now).num_seconds().max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use chrono::TimeZone;

    #[test]
    fn an_ipv6_client_counts_per_64_and_ipv4_per_address() {
        let limiter = RateLimiter::login();
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        for i in 0..10u16 {
            let ip: IpAddr = format!("2001:db8:1:2::{:x}", i + 1).parse().unwrap();
            assert!(limiter.hit(ip, now).allowed, "attempt {i}");
        }
        let same_64: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(!limiter.hit(same_64, now).allowed, "the 11th from the /64");
        let next_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(
            limiter.hit(next_64, now).allowed,
            "another /64 counts apart"
        );
        let mapped: IpAddr = "::ffff:192.0.2.9".parse().unwrap();
        assert_eq!(counted_as(mapped), "192.0.2.9".parse::<IpAddr>().unwrap());
        let other_v4: IpAddr = "192.0.2.10".parse().unwrap();
        assert_eq!(counted_as(other_v4), other_v4);
    }

    #[test]
    fn ten_per_fifteen_minutes_per_address() {
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap());
        let limiter = RateLimiter::login();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for i in 1..=10 {
            let d = limiter.hit(a, clock.utc());
            assert!(d.allowed, "attempt {i}");
            assert_eq!(d.remaining, 10 - i);
            clock.advance(Duration::seconds(10));
        }
        let d = limiter.hit(a, clock.utc());
        assert!(!d.allowed);
        assert_eq!(d.remaining, 0);
        assert_eq!(d.retry_after_secs, 15 * 60 - 100);
        assert!(
            limiter.hit(b, clock.utc()).allowed,
            "another address has its own window"
        );
        clock.advance(Duration::seconds(15 * 60 - 100 - 1));
        assert!(
            !limiter.hit(a, clock.utc()).allowed,
            "one second before the reset"
        );
        clock.advance(Duration::seconds(1));
        let d = limiter.hit(a, clock.utc());
        assert!(d.allowed);
        assert_eq!(d.remaining, 9);
    }
}
