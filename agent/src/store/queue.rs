//! The activity queue: events kept until every server acknowledges their ids.
//!
//! `Queue` is the pure policy (at most 500 events, nothing older than 7 days, oldest
//! first out, duplicate ids ignored); `WriteCoalescer` decides when a write is due (writes
//! coalesced over one second). `ActivityQueue` is the handle the rest of the agent uses:
//! push from the reader, `offer_batch_for` / `ack_for` for each server's connection.
//! Persistence is done by the `persist` module's thread, which this handle wakes.
//!
//! An agent registered with more than one server keeps one queue of events
//! and, per server (keyed by the client id that server issued), the ids that server
//! acknowledged while another has not yet: an event leaves the queue once every known
//! server acknowledged it. The size and age limits apply to the one queue, so they bound
//! the slowest server (doc/decisions.md, "One queue, acknowledgements per server"). A
//! one-server agent never holds such ids, so its queue.json stays `{"events": [..]}`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
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

/// Ids acknowledged by one server (key: the client id it issued) that are still queued
/// because another server has not acknowledged them.
pub type Acked = BTreeMap<String, BTreeSet<String>>;

/// What queue.json holds: the events and the per-server acknowledgements.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct QueueState {
    pub events: Vec<ActivityEvent>,
    pub acked: Acked,
}

/// Pure queue policy. Events are kept ordered by `occurredAt` (oldest first).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Queue {
    events: VecDeque<ActivityEvent>,
    /// The servers an event waits for (client ids); empty while unregistered.
    servers: BTreeSet<String>,
    acked: Acked,
}

impl Queue {
    pub fn from_events(events: Vec<ActivityEvent>, now: DateTime<Utc>) -> Queue {
        Queue::from_state(
            QueueState {
                events,
                acked: Acked::new(),
            },
            now,
        )
    }

    /// The queue as stored, acknowledgements included (the server list comes later,
    /// from the identities: `set_servers`).
    pub fn from_state(state: QueueState, now: DateTime<Utc>) -> Queue {
        let mut q = Queue::default();
        for e in state.events {
            q.push(e);
        }
        q.acked = state.acked;
        q.prune(now);
        q
    }

    /// The servers events wait for. Acknowledgements of servers not in the list are
    /// forgotten, and events every listed server acknowledged leave.
    pub fn set_servers(&mut self, servers: impl IntoIterator<Item = String>) {
        self.servers = servers.into_iter().collect();
        let servers = &self.servers;
        self.acked.retain(|k, _| servers.contains(k));
        self.drop_fully_acked();
    }

    pub fn state(&self) -> QueueState {
        QueueState {
            events: self.events.iter().cloned().collect(),
            acked: self.acked.clone(),
        }
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
        self.forget_gone();
        true
    }

    /// Acknowledgements of ids no longer queued are dropped (age, size limit, ack).
    fn forget_gone(&mut self) {
        if self.acked.is_empty() {
            return;
        }
        let queued: BTreeSet<&str> = self.events.iter().map(|e| e.id.as_str()).collect();
        for ids in self.acked.values_mut() {
            ids.retain(|id| queued.contains(id.as_str()));
        }
        self.acked.retain(|_, ids| !ids.is_empty());
    }

    fn drop_fully_acked(&mut self) {
        if self.acked.is_empty() || self.servers.is_empty() {
            return;
        }
        let (servers, acked) = (&self.servers, &self.acked);
        self.events.retain(|e| {
            !servers
                .iter()
                .all(|s| acked.get(s).is_some_and(|ids| ids.contains(&e.id)))
        });
        self.forget_gone();
    }

    /// Drops events older than seven days. Returns how many went.
    pub fn prune(&mut self, now: DateTime<Utc>) -> usize {
        let before = self.events.len();
        let limit = now - MAX_AGE;
        // An unreadable time stamp cannot be aged; it is kept (the server decides).
        self.events
            .retain(|e| occurred(e).is_none_or(|t| t >= limit));
        self.forget_gone();
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
        self.forget_gone();
        before - self.events.len()
    }

    /// The batch for one server: what it has not acknowledged, oldest first.
    pub fn batch_for(
        &mut self,
        server: &str,
        now: DateTime<Utc>,
        max: usize,
    ) -> Vec<ActivityEvent> {
        self.prune(now);
        let acked = self.acked.get(server);
        self.events
            .iter()
            .filter(|e| acked.is_none_or(|ids| !ids.contains(&e.id)))
            .take(max)
            .cloned()
            .collect()
    }

    /// One server acknowledged these ids: an event leaves once every server did. A
    /// server not yet in the list joins it (a registration racing its first ack).
    /// Returns how many events left the queue.
    pub fn ack_for(&mut self, server: &str, ids: &[String]) -> usize {
        if !self.servers.contains(server) {
            self.servers.insert(server.to_string());
        }
        if self.servers.len() == 1 {
            // The one-server case: exactly today's queue, nothing kept per server.
            return self.ack(ids);
        }
        let before = self.events.len();
        let queued: BTreeSet<&str> = self.events.iter().map(|e| e.id.as_str()).collect();
        let mine = self.acked.entry(server.to_string()).or_default();
        mine.extend(
            ids.iter()
                .filter(|id| queued.contains(id.as_str()))
                .cloned(),
        );
        self.drop_fully_acked();
        before - self.events.len()
    }

    /// How many events one server has not acknowledged.
    pub fn pending_for(&self, server: &str) -> usize {
        let acked = self.acked.get(server);
        self.events
            .iter()
            .filter(|e| acked.is_none_or(|ids| !ids.contains(&e.id)))
            .count()
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

    /// The batch one server gets now (what it has not acknowledged; age checked first).
    pub fn offer_batch_for(
        &self,
        server: &str,
        now: DateTime<Utc>,
        max: usize,
    ) -> Vec<ActivityEvent> {
        let (batch, pruned) = {
            let mut q = self.inner.lock();
            let pruned = q.prune(now);
            (q.batch_for(server, now, max), pruned)
        };
        if pruned > 0 {
            self.changed();
        }
        batch
    }

    /// One server's acknowledgement; written like any other change of the queue, since
    /// the per-server ids are part of queue.json.
    pub fn ack_for(&self, server: &str, ids: &[String]) -> usize {
        let (n, changed) = {
            let mut q = self.inner.lock();
            let before = q.acked.clone();
            let n = q.ack_for(server, ids);
            (n, n > 0 || q.acked != before)
        };
        if changed {
            self.changed();
        }
        n
    }

    /// The servers events wait for (at start, and when a registration adds one).
    pub fn set_servers(&self, servers: impl IntoIterator<Item = String>) {
        let changed = {
            let mut q = self.inner.lock();
            let before = q.len();
            q.set_servers(servers);
            q.len() != before
        };
        if changed {
            self.changed();
        }
    }

    /// Adds one server to the list (a registration).
    pub fn add_server(&self, server: &str) {
        let all = {
            let q = self.inner.lock();
            let mut all = q.servers.clone();
            all.insert(server.to_string());
            all
        };
        self.set_servers(all);
    }

    /// How many events one server has not acknowledged (the status route).
    pub fn pending_for(&self, server: &str) -> usize {
        self.inner.lock().pending_for(server)
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
    pub fn snapshot_for_write(&self) -> QueueState {
        let q = self.inner.lock();
        self.unsaved.store(false, Ordering::SeqCst);
        q.state()
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
    pub fn try_snapshot(&self) -> Option<QueueState> {
        self.inner
            .try_lock_for(Duration::from_millis(100))
            .map(|q| q.state())
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
    fn each_server_acknowledges_for_itself_and_an_event_leaves_after_the_last() {
        let mut q = Queue::default();
        q.set_servers(["A".to_string(), "B".to_string()]);
        q.push(ev("a", &iso(t(1, 0))));
        q.push(ev("b", &iso(t(1, 1))));
        assert_eq!(
            q.ack_for("A", &["a".into(), "b".into()]),
            0,
            "B still waits"
        );
        assert!(q.batch_for("A", t(1, 2), 10).is_empty());
        let ids: Vec<_> = q
            .batch_for("B", t(1, 2), 10)
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(q.pending_for("B"), 2);
        assert_eq!(q.ack_for("B", &["a".into()]), 1);
        assert_eq!(q.state().acked["A"], BTreeSet::from(["b".to_string()]));
        // Stored and loaded again: the same positions per server.
        let mut again = Queue::from_state(q.state(), t(1, 2));
        again.set_servers(["A".to_string(), "B".to_string()]);
        assert!(again.batch_for("A", t(1, 2), 10).is_empty());
        assert_eq!(again.ack_for("B", &["b".into()]), 1);
        assert!(again.is_empty() && again.state().acked.is_empty());
    }

    #[test]
    fn one_server_keeps_nothing_per_server_and_limits_bound_the_slowest() {
        let mut q = Queue::default();
        q.set_servers(["A".to_string()]);
        q.push(ev("a", &iso(t(1, 0))));
        assert_eq!(q.ack_for("A", &["a".into()]), 1);
        assert!(q.state().acked.is_empty());
        // Two servers, B away: the 500 limit drops the oldest B has not seen.
        let mut q = Queue::default();
        q.set_servers(["A".to_string(), "B".to_string()]);
        for i in 0..(MAX_EVENTS + 5) {
            let id = format!("e{i}");
            q.push(ev(
                &id,
                &iso(t(1, 0) + chrono::TimeDelta::seconds(i as i64)),
            ));
            q.ack_for("A", &[id]);
        }
        assert_eq!(q.len(), MAX_EVENTS);
        assert_eq!(q.batch_for("B", t(1, 1), 1)[0].id, "e5");
        assert_eq!(q.state().acked["A"].len(), MAX_EVENTS);
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
