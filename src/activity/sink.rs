//! The one way an event enters the activity list: [`ActivitySink::record`].
//!
//! The sink applies the level policy (the `activity_level_overrides` setting),
//! stores the events whose ids are new, and hands exactly those on: to the
//! dashboards (ACTIVITY_APPENDED, with the composed `message` and `detail`) and
//! to the webhooks. An event an active silence covers is marked
//! (`data.silenced`) before it is stored, and not offered to the webhooks. Every thread that records
//! events (agent sessions, the `cluster-eval` thread, the schedulers, the HTTP
//! routes) holds a clone of it, not the whole `App`.

use super::event::{insert_new, with_texts, ActivityRecord, Event, LevelPolicy, Recorder};
use super::silences::Silences;
use crate::db::Db;
use crate::live::{envelope_of, Hub};
use crate::metrics::Counters;
use std::sync::Arc;

/// Who hears of newly stored events besides the dashboards: the webhooks.
/// A trait so that the activity list does not depend on webhook delivery.
pub trait StoredEvents: Send + Sync {
    /// Called once per stored batch, with exactly the events stored now that no
    /// silence holds back (none when every one is silenced).
    /// Must not block.
    fn offer(&self, records: &[Arc<ActivityRecord>]);
}

/// Cheap to clone: a handle on shared parts.
#[derive(Clone)]
pub struct ActivitySink {
    db: Arc<Db>,
    policy: Arc<dyn LevelPolicy>,
    hub: Arc<Hub>,
    webhooks: Arc<dyn StoredEvents>,
    /// Stored events by kind and level, for `GET /metrics`.
    counters: Arc<Counters>,
    silences: Arc<Silences>,
}

impl ActivitySink {
    pub fn new(
        db: Arc<Db>,
        policy: Arc<dyn LevelPolicy>,
        hub: Arc<Hub>,
        webhooks: Arc<dyn StoredEvents>,
        counters: Arc<Counters>,
        silences: Arc<Silences>,
    ) -> ActivitySink {
        ActivitySink {
            db,
            policy,
            hub,
            webhooks,
            counters,
            silences,
        }
    }

    /// Stores events whose ids are new (after the level policy), and passes the
    /// newly stored on to dashboards and webhooks. False only when storing failed.
    pub fn record(&self, events: Vec<Event>) -> bool {
        let mut kept: Vec<Event> = events
            .into_iter()
            .filter_map(|mut e| {
                e.level = self.policy.level_for(&e.kind, e.level)?;
                Some(e)
            })
            .collect();
        self.silences.apply(&mut kept);
        match insert_new(&self.db, kept) {
            Ok(stored) => {
                for e in &stored {
                    self.counters.activity_stored(&e.kind, e.level.as_str());
                }
                if !stored.is_empty() {
                    // Composed once: the dashboards and every webhook get these
                    // records, texts included, without a copy.
                    let mut records: Vec<_> = stored.into_iter().map(|e| e.record(false)).collect();
                    with_texts(&self.db, &mut records);
                    self.hub
                        .broadcast(envelope_of("ACTIVITY_APPENDED", &records));
                    let deliver: Vec<Arc<ActivityRecord>> = records
                        .into_iter()
                        .filter(|r| !r.event.data.contains_key("silenced"))
                        .map(Arc::new)
                        .collect();
                    // Offering runs on the recorder's thread (the cluster
                    // thread among them) with user-made webhook definitions:
                    // a panic there costs this offer, never the recorder.
                    if !deliver.is_empty()
                        && crate::lifecycle::contain_panics(|| self.webhooks.offer(&deliver))
                            .is_none()
                    {
                        log::error!("Offering {} events to the webhooks panicked", deliver.len());
                    }
                }
                true
            }
            Err(e) => {
                e.log_write_failure(format_args!("Cannot store activity"));
                false
            }
        }
    }
}

impl Recorder for ActivitySink {
    fn record(&self, events: Vec<Event>) -> bool {
        ActivitySink::record(self, events)
    }
}
