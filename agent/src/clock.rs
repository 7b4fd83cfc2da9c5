//! The clock the connection's timing reads (handshake timeout, ping deadline, resend,
//! re-offer, ladder). The process uses `SystemClock`; tests drive a `ManualClock` so no
//! test sleeps for a spec interval.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

/// The one clock trait of both binaries, in `vrrp_protocol` (`now` monotonic, `utc`
/// wall time, `wait_hint`).
pub use vrrp_protocol::Clock;

pub type SharedClock = Arc<dyn Clock>;

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn utc(&self) -> DateTime<Utc> {
        Utc::now()
    }
    fn wait_hint(&self, want: Duration) -> Duration {
        want
    }
}

/// A clock that moves only when a test advances it.
pub struct ManualClock {
    base: Instant,
    base_utc: DateTime<Utc>,
    offset: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock {
            base: Instant::now(),
            base_utc: Utc::now(),
            offset: Mutex::new(Duration::ZERO),
        })
    }

    pub fn advance(&self, d: Duration) {
        *self.offset.lock() += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.base + *self.offset.lock()
    }
    fn utc(&self) -> DateTime<Utc> {
        let off = *self.offset.lock();
        self.base_utc + chrono::TimeDelta::from_std(off).unwrap_or_default()
    }
    fn is_driven(&self) -> bool {
        true
    }
    fn wait_hint(&self, want: Duration) -> Duration {
        want.min(Duration::from_millis(10))
    }
}
