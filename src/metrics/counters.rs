//! Counters since start, kept in memory: the activity events stored (by kind and
//! level) and the webhook deliveries (by webhook and outcome).
//!
//! In memory on purpose: a Prometheus counter may start again from zero at a
//! restart (`rate()` handles resets), but must never go down while the process
//! lives, which a count of stored rows would as the cleanup deletes old ones.

use parking_lot::Mutex;
use std::collections::BTreeMap;

type Labelled = BTreeMap<(String, String), u64>;

/// Shared by `Arc`: the activity sink and the webhook dispatcher count, the
/// metrics route reads.
#[derive(Default)]
pub struct Counters {
    activity: Mutex<Labelled>,
    webhooks: Mutex<Labelled>,
}

/// What became of one event offered to one webhook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered 2xx, at the first attempt or a retry.
    Delivered,
    /// Still failing after the retries (or not renderable).
    Failed,
    /// Not attempted: that webhook's queue was full.
    Dropped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Failed => "failed",
            Outcome::Dropped => "dropped",
        }
    }
}

impl Counters {
    /// One event stored in the activity list.
    pub fn activity_stored(&self, kind: &str, level: &str) {
        *self
            .activity
            .lock()
            .entry((kind.to_owned(), level.to_owned()))
            .or_insert(0) += 1;
    }

    /// One event's delivery to one webhook ended.
    pub fn webhook_outcome(&self, webhook: &str, outcome: Outcome) {
        *self
            .webhooks
            .lock()
            .entry((webhook.to_owned(), outcome.as_str().to_owned()))
            .or_insert(0) += 1;
    }

    /// `((kind, level), count)`, sorted.
    pub fn activity(&self) -> Vec<((String, String), u64)> {
        self.activity
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// `((webhook, outcome), count)`, sorted.
    pub fn webhooks(&self) -> Vec<((String, String), u64)> {
        self.webhooks
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }
}
