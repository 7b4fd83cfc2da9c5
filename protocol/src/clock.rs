//! The one clock trait both binaries read time through.
//!
//! Defined here, implemented by each binary (`SystemClock`, and a `ManualClock`
//! tests drive): domain code never reads the system clock itself, so no test
//! sleeps for a spec interval. Nothing in this crate reads a clock.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// A source of time: monotonic for deadlines, wall time for timestamps.
pub trait Clock: Send + Sync {
    /// Monotonic time (deadlines, intervals, the agent's connection timing).
    fn now(&self) -> Instant;

    /// Wall time (timestamps, the server's windows and schedules).
    fn utc(&self) -> DateTime<Utc>;

    /// Whether time moves only when a test moves it: then a thread waiting for
    /// a deadline must look at the clock often, since nothing wakes it when the
    /// test jumps ahead.
    fn is_driven(&self) -> bool {
        false
    }

    /// How long a thread may block before it looks at the clock again when it
    /// wants to wait `want`: `want` itself, or a short tick on a driven clock so
    /// that advancing it takes effect.
    fn wait_hint(&self, want: Duration) -> Duration {
        if self.is_driven() {
            want.min(Duration::from_millis(10))
        } else {
            want
        }
    }
}
