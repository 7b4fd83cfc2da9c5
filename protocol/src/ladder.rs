//! The reconnect ladder of the spec, the one both binaries (and the load
//! generator) climb: 5, 10, 30, then 60 s between attempts. The agent adds up
//! to 3 s of random jitter to each; the server dialling an outbound agent waits
//! the steps as they are. Pure: the jitter is passed in as a fraction in [0, 1).

use std::time::Duration;

pub const STEPS: [Duration; 4] = [
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(60),
];
pub const MAX_JITTER: Duration = Duration::from_secs(3);

/// The wait of the `n`th step (from 0), without jitter; 60 s from the fourth on.
pub fn step(n: usize) -> Duration {
    STEPS[n.min(STEPS.len() - 1)]
}

/// Where an agent is on the ladder.
#[derive(Debug, Default, Clone)]
pub struct Ladder {
    failures: usize,
}

impl Ladder {
    /// A connection authenticated: the next wait starts at 5 s again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// The wait before the next attempt; climbs one step per call, then stays at 60 s.
    pub fn next_delay(&mut self, jitter: f64) -> Duration {
        let base = step(self.failures);
        self.failures = self.failures.saturating_add(1);
        base + MAX_JITTER.mul_f64(jitter.clamp(0.0, 0.999_999))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbs_5_10_30_60_and_stays() {
        let mut l = Ladder::default();
        let got: Vec<u64> = (0..6).map(|_| l.next_delay(0.0).as_secs()).collect();
        assert_eq!(got, [5, 10, 30, 60, 60, 60]);
        l.reset();
        assert_eq!(l.next_delay(0.0), Duration::from_secs(5));
    }

    #[test]
    fn jitter_adds_up_to_three_seconds() {
        let mut l = Ladder::default();
        let d = l.next_delay(0.5);
        assert_eq!(d, Duration::from_millis(6500));
        let d = l.next_delay(1.0);
        assert!(
            d < Duration::from_secs(13) && d > Duration::from_millis(12_990),
            "{d:?}"
        );
        let d = l.next_delay(-4.0);
        assert_eq!(d, Duration::from_secs(30));
    }
}
