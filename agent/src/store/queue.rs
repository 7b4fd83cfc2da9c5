//! The activity queue: events kept until the server acknowledges their ids.
//!
//! `Queue` is the pure policy (at most 500 events, nothing older than 7 days, oldest
//! first out, duplicate ids ignored); `WriteCoalescer` decides when a write is due (writes
//! coalesced over one second). `ActivityQueue` is the handle the rest of the agent uses:
//! push from the reader, `offer_batch` / `ack` for the connection. Persistence is done by
//! the `persist` module's thread, which this handle wakes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use crossbeam_channel::Sender;
use parking_lot::Mutex;
use vrrp_protocol::ActivityEvent;

/// At most this many events are kept; the oldest go first.
pub const MAX_EVENTS: usize = 500;
/// Nothing older than this is kept (checked before every send).
pub const MAX_AGE: chrono::TimeDelta = chrono::TimeDelta::days(7);
/// Queue writes are coalesced over this window.
pub const WRITE_COALESCE: Duration = Duration::from_secs(1);

fn occurred(e: &ActivityEvent) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(&e.occurred_at)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Pure queue policy. Events are kept ordered by `occurredAt` (oldest first).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Queue {
    events: VecDeque<ActivityEvent>,
}

impl Queue {
    pub fn from_events(events: Vec<ActivityEvent>, now: DateTime<Utc>) -> Queue {
        let mut q = Queue::default();
        for e in events {
            q.push(e);
        }
        q.prune(now);
        q
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn events(&self) -> impl Iterator<Item = &ActivityEvent> {
        self.events.iter()
    }

    /// Adds an event unless its id is already queued. Returns whether it was added.
    pub fn push(&mut self, e: ActivityEvent) -> bool {
        if self.events.iter().any(|q| q.id == e.id) {
            return false;
        }
        // Insert after every event that did not occur later (stable by arrival).
        let t = occurred(&e);
        let pos = match t {
            Some(t) => self
                .events
                .iter()
                .rposition(|q| occurred(q).is_none_or(|qt| qt <= t))
                .map_or(0, |p| p + 1),
            None => self.events.len(),
        };
        self.events.insert(pos, e);
        while self.events.len() > MAX_EVENTS {
            self.events.pop_front();
        }
        true
    }

    /// Drops events older than seven days. Returns how many went.
    pub fn prune(&mut self, now: DateTime<Utc>) -> usize {
        let before = self.events.len();
        let limit = now - MAX_AGE;
        // An unreadable time stamp cannot be aged; it is kept (the server decides).
        self.events
            .retain(|e| occurred(e).is_none_or(|t| t >= limit));
        before - self.events.len()
    }

    /// The events to offer now, oldest first, after the age check.
    pub fn batch(&mut self, now: DateTime<Utc>, max: usize) -> Vec<ActivityEvent> {
        self.prune(now);
        self.events.iter().take(max).cloned().collect()
    }

    /// Removes acknowledged ids. Returns how many were removed.
    pub fn ack(&mut self, ids: &[String]) -> usize {
        let before = self.events.len();
        self.events.retain(|e| !ids.contains(&e.id));
        before - self.events.len()
    }
}

/// Decides when coalesced writes are due: the first change opens a window, the write
/// happens when the window closes, everything changed inside it goes in that one write.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteCoalescer {
    dirty_since: Option<Instant>,
}

impl WriteCoalescer {
    pub fn mark_dirty(&mut self, now: Instant) {
        self.dirty_since.get_or_insert(now);
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty_since.is_some()
    }

    /// `None` when nothing is pending, otherwise how long until the write is due (zero
    /// when due now).
    pub fn due_in(&self, now: Instant) -> Option<Duration> {
        self.dirty_since
            .map(|t| (t + WRITE_COALESCE).saturating_duration_since(now))
    }

    pub fn written(&mut self) {
        self.dirty_since = None;
    }
}

/// Messages to the persistence thread.
pub enum PersistMsg {
    /// The queue changed; write within the coalescing window.
    Dirty,
    /// A new baseline was handed over; write within the coalescing window.
    BaselineDirty,
    /// Write now and answer when done (termination, fatal error).
    Flush(Sender<()>),
    /// Flush and stop.
    Stop(Sender<()>),
}

/// Handle to the activity queue, shared by the reader (push), the connection (offer, ack)
/// and the persistence thread (snapshot).
#[derive(Clone)]
pub struct ActivityQueue {
    inner: Arc<Mutex<Queue>>,
    persist: Sender<PersistMsg>,
    /// Changes not yet taken by the writer (set on change, cleared by `snapshot_for_write`).
    unsaved: Arc<AtomicBool>,
}

impl ActivityQueue {
    pub fn new(queue: Queue, persist: Sender<PersistMsg>) -> ActivityQueue {
        ActivityQueue {
            inner: Arc::new(Mutex::new(queue)),
            persist,
            unsaved: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Queues events; duplicates of queued ids are dropped. Returns how many were new.
    pub fn push(&self, events: Vec<ActivityEvent>) -> usize {
        if events.is_empty() {
            return 0;
        }
        let added = {
            let mut q = self.inner.lock();
            events.into_iter().filter(|e| q.push(e.clone())).count()
        };
        if added > 0 {
            self.changed();
        }
        added
    }

    /// The batch to send now (age checked first). Events stay queued until acked.
    pub fn offer_batch(&self, now: DateTime<Utc>, max: usize) -> Vec<ActivityEvent> {
        let (batch, pruned) = {
            let mut q = self.inner.lock();
            let pruned = q.prune(now);
            (q.batch(now, max), pruned)
        };
        if pruned > 0 {
            self.changed();
        }
        batch
    }

    /// Drops acknowledged ids (unknown ids are ignored).
    pub fn ack(&self, ids: &[String]) -> usize {
        let n = self.inner.lock().ack(ids);
        if n > 0 {
            self.changed();
        }
        n
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn changed(&self) {
        self.unsaved.store(true, Ordering::SeqCst);
        let _ = self.persist.send(PersistMsg::Dirty);
    }

    /// Whether some change has not yet been handed to the writer.
    pub fn has_unsaved(&self) -> bool {
        self.unsaved.load(Ordering::SeqCst)
    }

    /// The snapshot the writer stores; marks the queue saved (the writer calls
    /// `mark_unsaved` again if the write fails).
    pub fn snapshot_for_write(&self) -> Vec<ActivityEvent> {
        let q = self.inner.lock();
        self.unsaved.store(false, Ordering::SeqCst);
        q.events().cloned().collect()
    }

    pub fn mark_unsaved(&self) {
        self.unsaved.store(true, Ordering::SeqCst);
    }

    /// A copy of what is queued, for the writer.
    pub fn snapshot(&self) -> Vec<ActivityEvent> {
        self.inner.lock().events().cloned().collect()
    }

    /// Like `snapshot` but gives up instead of waiting long (used from a failing thread,
    /// which may itself hold the lock).
    pub fn try_snapshot(&self) -> Option<Vec<ActivityEvent>> {
        self.inner
            .try_lock_for(Duration::from_millis(100))
            .map(|q| q.events().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn ev(id: &str, at: &str) -> ActivityEvent {
        ActivityEvent {
            id: id.into(),
            occurred_at: at.into(),
            kind: "k".into(),
            ..Default::default()
        }
    }

    fn t(day: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, h, 0, 0).unwrap()
    }

    fn iso(d: DateTime<Utc>) -> String {
        d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }

    #[test]
    fn duplicates_are_ignored_and_order_is_by_occurrence() {
        let mut q = Queue::default();
        assert!(q.push(ev("b", &iso(t(2, 0)))));
        assert!(q.push(ev("a", &iso(t(1, 0)))));
        assert!(!q.push(ev("a", &iso(t(1, 0)))));
        assert!(q.push(ev("c", &iso(t(3, 0)))));
        let ids: Vec<_> = q.events().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn at_most_500_and_the_oldest_go_first() {
        let mut q = Queue::default();
        let base = t(1, 0);
        for i in 0..(MAX_EVENTS + 20) {
            q.push(ev(
                &format!("e{i}"),
                &iso(base + chrono::TimeDelta::seconds(i as i64)),
            ));
        }
        assert_eq!(q.len(), MAX_EVENTS);
        assert_eq!(q.events().next().unwrap().id, "e20");
    }

    #[test]
    fn nothing_older_than_seven_days_is_offered() {
        let mut q = Queue::default();
        q.push(ev("old", &iso(t(1, 0))));
        q.push(ev("edge", &iso(t(1, 12))));
        q.push(ev("new", &iso(t(8, 0))));
        // now = 8th 12:00: 'old' is 7.5 days old, 'edge' exactly 7 days.
        let batch = q.batch(t(8, 12), 100);
        let ids: Vec<_> = batch.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["edge", "new"]);
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn ack_removes_only_known_ids_and_batch_does_not() {
        let mut q = Queue::default();
        q.push(ev("a", &iso(t(1, 0))));
        q.push(ev("b", &iso(t(1, 1))));
        assert_eq!(q.batch(t(1, 2), 1).len(), 1);
        assert_eq!(q.len(), 2, "offering does not remove");
        assert_eq!(q.ack(&["a".into(), "zz".into()]), 1);
        assert_eq!(q.events().next().unwrap().id, "b");
    }

    #[test]
    fn writes_coalesce_over_one_second() {
        let start = Instant::now();
        let mut c = WriteCoalescer::default();
        assert_eq!(c.due_in(start), None);
        c.mark_dirty(start);
        c.mark_dirty(start + Duration::from_millis(700)); // inside the window
        assert_eq!(
            c.due_in(start + Duration::from_millis(700)),
            Some(Duration::from_millis(300))
        );
        assert_eq!(
            c.due_in(start + Duration::from_millis(1500)),
            Some(Duration::ZERO)
        );
        c.written();
        assert!(!c.is_dirty());
        c.mark_dirty(start + Duration::from_secs(2));
        assert_eq!(
            c.due_in(start + Duration::from_secs(2)),
            Some(Duration::from_secs(1))
        );
    }
}
