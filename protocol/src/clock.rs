//! The one clock both binaries read time through: the [`Clock`] trait, the
//! [`SystemClock`] the processes run on and the [`ManualClock`] their tests
//! drive. Domain code never reads the system clock itself, so no test sleeps
//! for a spec interval.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};

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

/// A clock shared by the threads that read it.
pub type SharedClock = Arc<dyn Clock>;

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

/// A clock that moves only when a test moves it; clones share its time. Its
/// monotonic time moves with its wall time (and stays put when a test sets the
/// wall time back).
#[derive(Debug, Clone)]
pub struct ManualClock {
    start: DateTime<Utc>,
    base: Instant,
    now: Arc<Mutex<DateTime<Utc>>>,
}

/// A step a [`ManualClock`] moves by: chrono's or std's durations alike.
pub trait Step {
    fn delta(self) -> TimeDelta;
}

impl Step for TimeDelta {
    fn delta(self) -> TimeDelta {
        self
    }
}

impl Step for Duration {
    fn delta(self) -> TimeDelta {
        TimeDelta::from_std(self).unwrap_or(TimeDelta::MAX)
    }
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            start,
            base: Instant::now(),
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Starting at the real time now.
    pub fn starting_now() -> ManualClock {
        ManualClock::new(Utc::now())
    }

    fn time(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A test thread that panicked holding it left a time that is still a time.
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn advance(&self, by: impl Step) {
        let mut now = self.time();
        *now += by.delta();
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.time() = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        let moved = (*self.time() - self.start).to_std().unwrap_or_default();
        self.base + moved
    }

    fn utc(&self) -> DateTime<Utc> {
        *self.time()
    }

    fn is_driven(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_moved_and_both_times_together() {
        let start = Utc::now();
        let clock = ManualClock::new(start);
        let (t0, shared) = (clock.now(), clock.clone());
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!((clock.now(), clock.utc()), (t0, start), "it stands still");
        shared.advance(Duration::from_secs(2));
        clock.advance(TimeDelta::milliseconds(500));
        assert_eq!(clock.utc(), start + TimeDelta::milliseconds(2500));
        assert_eq!(clock.now() - t0, Duration::from_millis(2500));
        // Set back: the wall time goes back, monotonic time does not.
        clock.set(start - TimeDelta::seconds(10));
        assert_eq!(clock.now(), t0);
        assert!(clock.is_driven() && !SystemClock.is_driven());
        assert_eq!(
            clock.wait_hint(Duration::from_secs(5)),
            Duration::from_millis(10)
        );
    }
}
