//! The `cluster-eval` thread: keeps every host's view in memory, regroups and
//! evaluates the clusters when readings or connections change, records the
//! events, asks agents for readings, and persists what it confirmed.
//!
//! Messages are drained in batches: many readings arriving together cost one
//! evaluation, but two readings of one host never share one while the first
//! may be a first report (see [`ReadingBatch`]), and the cluster list is
//! answered only after what it shows was evaluated and persisted. The grouping
//! is kept between evaluations: a reading that does not
//! change what grouping depends on (site, VRIDs, networks, instance names) only
//! updates its host's members, and only the clusters it touches are evaluated. Nothing here answers to the reading or connection that triggered
//! it: an error is logged and the next message is evaluated afresh.

use crate::activity::ActivitySink;
use crate::agents::clients::{self, ClientRecord};
use crate::agents::readings::{Latest, Reading};
use crate::agents::session::AgentObserver;
use crate::agents::AgentRegistry;
use crate::clock::iso;
use crate::clock::SharedClock;
use crate::clusters::board::{Board, Shown};
use crate::clusters::confirm::{Confirmed, Evaluator};
use crate::clusters::history::{self, Book};
use crate::clusters::{group, patch_member, rejudge, signature, Cluster, HostView};
use crate::db::{Db, DbError};
use crate::lifecycle::{contain_panics, Shutdown};
use crate::live::{envelope, ToSocket};
use chrono::{DateTime, Duration, Utc};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use rusqlite::params;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Evaluations at most this often while messages keep arriving (real time, not
/// the domain clock: it only batches work; at 5,000 readings a second one pass
/// per reading kept the evaluator behind). A change waits at most this long more.
const EVAL_BATCH: std::time::Duration = std::time::Duration::from_millis(20);

/// After a start, nothing is evaluated until every client with a stored reading
/// reconnected, or this long passed.
pub const STARTUP_GUARD_SECS: i64 = 60;

/// Confirmed events that could not be stored are tried again after this long.
const RETRY_SECS: i64 = 1;
/// At most this many unstored events are kept for another try.
const MAX_UNRECORDED: usize = 10_000;

/// The hosts whose readings the thread took in since its last evaluation.
///
/// Readings of different hosts wait for one evaluation together (that is what
/// makes 5,000 readings a second affordable), and a host's later reading simply
/// replaces its earlier one, except where the earlier one may be a first report:
/// in a new cluster's first master-down interval rule 4 takes a member's first
/// report silently as the confirmed state, and what follows it is a change to be
/// confirmed and reported. Merged, the later reading was taken for the first
/// report and the change was lost (or, undone later, invented).
#[derive(Debug, Default)]
pub struct ReadingBatch {
    hosts: HashSet<String>,
}

impl ReadingBatch {
    /// Whether the batch must be evaluated before a reading of `host` joins it:
    /// it holds one of its readings already, and that one may be a first report,
    /// because a cluster may have formed since the last evaluation (`regrouping`:
    /// a host's place in the grouping changed) or one is in its first interval
    /// (`first_window`). Otherwise nothing is lost by keeping only the later one.
    /// `first_window` is asked only when it decides: it looks at every cluster,
    /// and most readings are of a host the batch does not hold yet.
    pub fn evaluate_before(
        &self,
        host: &str,
        regrouping: bool,
        first_window: impl FnOnce() -> bool,
    ) -> bool {
        self.hosts.contains(host) && (regrouping || first_window())
    }

    /// Notes a reading of `host` taken in.
    pub fn note(&mut self, host: &str) {
        self.hosts.insert(host.to_owned());
    }

    /// An evaluation saw every reading taken in.
    pub fn clear(&mut self) {
        self.hosts.clear();
    }
}

/// The way into the `cluster-eval` thread; never blocks. Counts what it sent,
/// so that a reader of the [`Board`] can wait for the list to cover it.
#[derive(Clone)]
pub struct EvalSender {
    tx: crossbeam_channel::Sender<EvalMsg>,
    sent: Arc<std::sync::atomic::AtomicU64>,
}

impl EvalSender {
    pub fn new(tx: crossbeam_channel::Sender<EvalMsg>) -> EvalSender {
        EvalSender {
            tx,
            sent: Arc::default(),
        }
    }

    /// Messages sent so far (counted before each is sent: never fewer than
    /// were queued).
    pub fn sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Messages waiting for the evaluator (a gauge in `/metrics`).
    pub fn queued(&self) -> usize {
        self.tx.len()
    }

    pub fn tell(&self, msg: EvalMsg) {
        // Only fails once the thread is gone, at shutdown: nothing left to tell.
        self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.tx.send(msg);
    }
}

impl AgentObserver for EvalSender {
    fn reading_stored(&self, client_id: &str, reading: Arc<Reading>) {
        self.tell(EvalMsg::Reading(client_id.to_owned(), reading));
    }

    fn connection_changed(&self, client_id: &str) {
        self.tell(EvalMsg::Connection(client_id.to_owned()));
    }
}

/// What the rest of the server tells the evaluator.
#[derive(Debug, Clone)]
pub enum EvalMsg {
    /// A reading was stored (as the API shows it).
    Reading(String, Arc<Reading>),
    /// An agent connected or disconnected.
    Connection(String),
    /// A client's record changed (site, name).
    ClientChanged(String),
    ClientDeleted(String),
    /// Answered as soon as the thread takes it: the heartbeat's sign that the
    /// thread is working (every message sent before this one taken in).
    Ping(crossbeam_channel::Sender<()>),
    /// A test hook (`SVC_TEST_HOOKS=1`): the thread stops here until
    /// the sender sends or is dropped, as a stuck evaluator would.
    Hold(crossbeam_channel::Receiver<()>),
}

/// What the `cluster-eval` thread uses, handed to it at start: not the whole `App`.
pub struct Handles {
    pub db: Arc<Db>,
    pub clock: SharedClock,
    /// Who is online, and where REQUEST_STATE_UPDATE goes.
    pub agents: Arc<AgentRegistry>,
    /// The stored readings, read once at start.
    pub readings: Arc<Latest>,
    /// Where the events of confirmed changes go.
    pub activity: ActivitySink,
    /// The cluster history held in memory, changed with the table.
    pub history: history::store::SharedMirror,
    /// Where the cluster list is published for its readers.
    pub board: Arc<Board>,
}

struct Runner {
    handles: Handles,
    records: HashMap<String, ClientRecord>,
    readings: HashMap<String, Arc<Reading>>,
    evaluator: Evaluator,
    /// Clients with a stored reading not yet reconnected since the start.
    awaiting: Option<(DateTime<Utc>, HashSet<String>)>,
    /// The grouping of the last full evaluation, patched by later readings.
    grouped: Vec<Cluster>,
    /// Per host: its members in `grouped`, as (cluster index, member index).
    by_host: HashMap<String, Vec<(usize, usize)>>,
    /// Per host: what its place in the grouping depends on.
    signatures: HashMap<String, String>,
    /// The grouping must be built anew.
    regroup: bool,
    /// Hosts whose members need updating.
    dirty: HashSet<String>,
    /// The grouping was built anew since the last evaluation: evaluate every cluster.
    evaluate_all: bool,
    /// Indexes in `grouped` of the clusters patched since the last evaluation.
    touched: HashSet<usize>,
    /// `grouped` as last published (same indexes), each cluster shared with
    /// the board's snapshot until it changes.
    published: Vec<Arc<Shown>>,
    /// Indexes in `grouped` patched since the last publication; every one
    /// after a regrouping.
    unpublished: HashSet<usize>,
    /// The grouping was built anew since the last publication.
    publish_all: bool,
    /// Messages taken in so far (the board's list covers them once published).
    taken: u64,
    /// Events of confirmed changes whose store failed, for the next evaluation.
    unrecorded: Vec<crate::activity::Event>,
    /// The open history interval of every cluster.
    history: Book,
    /// The readings taken in since the last evaluation.
    batch: ReadingBatch,
    /// Something was taken in that no evaluation has seen yet.
    unevaluated: bool,
    /// When the evaluator asked to look again.
    wake_at: Option<DateTime<Utc>>,
    /// When the last evaluation ended (real time: it paces the batches).
    last_evaluation: std::time::Instant,
    /// When the open intervals' ends were last moved to now.
    touched_history: DateTime<Utc>,
}

pub fn spawn(
    handles: Handles,
    inbox: Receiver<EvalMsg>,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    // Before anything can read the history: what was open when the server went
    // away ends where it was last known to hold (see `history`).
    let closed = history::store::close_all_open(&handles.db).map_err(std::io::Error::other)?;
    if closed > 0 {
        log::info!("{closed} cluster history intervals closed where the server last saw them");
    }
    let started = std::time::Instant::now();
    let held =
        history::store::load(&handles.db, &handles.history).map_err(std::io::Error::other)?;
    log::info!(
        "{held} cluster history intervals held in memory (read in {} ms)",
        started.elapsed().as_millis()
    );
    std::thread::Builder::new()
        .name("cluster-eval".into())
        .spawn(move || {
            let mut runner = match Runner::load(handles) {
                Ok(r) => r,
                Err(e) => {
                    crate::fatal!("The cluster evaluator cannot read its state: {e}");
                    return;
                }
            };
            runner.run(&inbox, &shutdown);
        })?;
    Ok(())
}

impl Runner {
    fn load(handles: Handles) -> Result<Runner, DbError> {
        let records: HashMap<String, ClientRecord> = clients::list(&handles.db)?
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect();
        let readings: HashMap<String, Arc<Reading>> = handles
            .readings
            .list()
            .into_iter()
            .filter_map(|r| Some((r.client_id.clone()?, r)))
            .collect();
        let states: Vec<(String, String)> = handles.db.read(|c| {
            let mut stmt = c.prepare("SELECT key, state FROM cluster_states")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, DbError>(rows)
        })?;
        let restored = states.into_iter().filter_map(|(key, text)| {
            let state = serde_json::from_str::<Confirmed>(&text).ok();
            if state.is_none() {
                log::warn!("The stored state of cluster {key} does not read; it starts anew");
            }
            Some((key, state?))
        });
        let evaluator = Evaluator::restore(restored);
        let handles_now = handles.clock.utc();
        let waiting: HashSet<String> = readings.keys().cloned().collect();
        let until = handles.clock.utc() + Duration::seconds(STARTUP_GUARD_SECS);
        Ok(Runner {
            awaiting: (!waiting.is_empty()).then_some((until, waiting)),
            handles,
            records,
            readings,
            evaluator,
            grouped: Vec::new(),
            by_host: HashMap::new(),
            signatures: HashMap::new(),
            regroup: true,
            dirty: HashSet::new(),
            evaluate_all: true,
            touched: HashSet::new(),
            published: Vec::new(),
            unpublished: HashSet::new(),
            publish_all: true,
            taken: 0,
            unrecorded: Vec::new(),
            history: Book::default(),
            touched_history: handles_now,
            batch: ReadingBatch::default(),
            unevaluated: false,
            wake_at: None,
            last_evaluation: std::time::Instant::now()
                .checked_sub(EVAL_BATCH)
                .unwrap_or_else(std::time::Instant::now),
        })
    }

    /// Takes one message in. What was taken in before is evaluated first when
    /// this message must not be merged with it: a host's reading that must not
    /// replace its earlier one (see [`ReadingBatch`]), or the cluster list,
    /// which shows only what the evaluator has confirmed and persisted (a first sighting's roles above all:
    /// a server stopped right after the list showed a cluster restores them).
    /// Never while the start-up guard holds evaluation (rule 6).
    fn take(&mut self, msg: EvalMsg) {
        self.taken += 1;
        if self.awaiting.is_none() {
            let first = match &msg {
                EvalMsg::Reading(id, _) => {
                    let (evaluator, clock) = (&self.evaluator, &self.handles.clock);
                    self.batch.evaluate_before(id, self.regroup, || {
                        evaluator.in_first_window(clock.utc())
                    })
                }
                _ => false,
            };
            if first {
                self.evaluate_now();
            }
        }
        match &msg {
            EvalMsg::Reading(id, _) => {
                self.batch.note(id);
                self.unevaluated = true;
            }
            EvalMsg::Ping(_) => {}
            _ => self.unevaluated = true,
        }
        self.apply(msg);
    }

    fn apply(&mut self, msg: EvalMsg) {
        match msg {
            EvalMsg::Reading(id, reading) => {
                if !self.records.contains_key(&id) {
                    self.refresh_record(&id);
                }
                self.readings.insert(id.clone(), reading);
                match self.host_view(&id).map(|h| signature(&h)) {
                    Some(sig) if self.signatures.get(&id) == Some(&sig) => {
                        self.dirty.insert(id);
                    }
                    _ => self.regroup = true,
                }
            }
            EvalMsg::Connection(id) => {
                self.dirty.insert(id.clone());
                if self.handles.agents.is_online(&id) {
                    if let Some((_, waiting)) = &mut self.awaiting {
                        waiting.remove(&id);
                    }
                }
            }
            EvalMsg::ClientChanged(id) => {
                self.refresh_record(&id);
                self.regroup = true;
            }
            EvalMsg::ClientDeleted(id) => {
                self.regroup = true;
                self.records.remove(&id);
                self.readings.remove(&id);
                if let Some((_, waiting)) = &mut self.awaiting {
                    waiting.remove(&id);
                }
            }
            EvalMsg::Ping(reply) => {
                let _ = reply.send(());
            }
            EvalMsg::Hold(release) => {
                log::warn!("cluster-eval is held by a test hook");
                let _ = release.recv();
                log::warn!("cluster-eval is released by the test hook");
            }
        }
    }

    fn refresh_record(&mut self, id: &str) {
        match clients::get(&self.handles.db, id) {
            Ok(Some(record)) => {
                self.records.insert(id.to_owned(), record);
            }
            Ok(None) => {
                self.records.remove(id);
            }
            Err(e) => log::error!("Cannot read client {id} for the evaluator: {e}"),
        }
    }

    fn host_view(&self, id: &str) -> Option<HostView> {
        Some(HostView::new(
            self.records.get(id)?,
            self.readings.get(id)?,
            self.handles.agents.is_online(id),
        ))
    }

    fn hosts(&self) -> Vec<HostView> {
        self.readings
            .iter()
            .filter_map(|(id, reading)| {
                Some(HostView::new(
                    self.records.get(id)?,
                    reading,
                    self.handles.agents.is_online(id),
                ))
            })
            .collect()
    }

    fn run(&mut self, inbox: &Receiver<EvalMsg>, shutdown: &Shutdown) {
        let clock = self.handles.clock.clone();
        while !shutdown.is_set() {
            let now = clock.utc();
            self.touch_history(now, false);
            // Real waits stay short so a driven clock is noticed; the clock decides.
            let wait = self
                .wake_at
                .map_or(std::time::Duration::from_millis(500), |w| {
                    (w - now)
                        .to_std()
                        .unwrap_or_default()
                        .min(std::time::Duration::from_millis(500))
                });
            match inbox.recv_timeout(wait.max(std::time::Duration::from_millis(1))) {
                Ok(msg) => self.take(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            for msg in inbox.try_iter() {
                self.take(msg);
            }
            // While readings stream in, gather them for a moment: a batch costs
            // one pass over the pending clusters, not one per reading.
            if self.unevaluated {
                if let Some(rest) = EVAL_BATCH.checked_sub(self.last_evaluation.elapsed()) {
                    let until = std::time::Instant::now() + rest;
                    while let Ok(msg) = inbox.recv_deadline(until) {
                        self.take(msg);
                    }
                }
            }
            let now = clock.utc();
            if let Some((until, waiting)) = &self.awaiting {
                if waiting.is_empty() || now >= *until {
                    log::info!(
                        "Cluster evaluation starts ({} clients did not reconnect)",
                        waiting.len()
                    );
                    self.awaiting = None;
                    self.unevaluated = true;
                } else {
                    // Evaluation waits for the agents to reconnect; the list
                    // shows the grouping meanwhile, as it stands.
                    self.update_grouping();
                    self.publish();
                    continue;
                }
            }
            if !self.unevaluated && self.wake_at.is_none_or(|w| now < w) {
                // Everything taken in is judged: the list covers it.
                self.handles.board.cover(self.taken);
                continue;
            }
            self.evaluate_now();
        }
        // A stop: what was taken in is evaluated and its confirmed state
        // persisted (a first sighting's roles are what the next start restores).
        if self.awaiting.is_none() && self.unevaluated {
            self.evaluate_now();
        }
        // The open intervals held until now.
        self.touch_history(clock.utc(), true);
    }

    /// Evaluates what was taken in, now, and publishes the list it judged.
    fn evaluate_now(&mut self) {
        let now = self.handles.clock.utc();
        self.wake_at = self.evaluate(now);
        self.last_evaluation = std::time::Instant::now();
        self.publish();
    }

    /// Puts the grouping on the board, if it changed since the last time:
    /// only the clusters patched since then are copied.
    fn publish(&mut self) {
        if std::mem::take(&mut self.publish_all) {
            self.published = self
                .grouped
                .iter()
                .map(|c| Arc::new(Shown::new(c.clone())))
                .collect();
        } else if !self.unpublished.is_empty() {
            for &i in &self.unpublished {
                if let (Some(slot), Some(c)) = (self.published.get_mut(i), self.grouped.get(i)) {
                    *slot = Arc::new(Shown::new(c.clone()));
                }
            }
        } else {
            self.handles.board.cover(self.taken);
            return;
        }
        self.unpublished.clear();
        self.handles.board.publish(self.published.clone());
        self.handles.board.cover(self.taken);
    }

    /// Every [`history::TOUCH_SECS`]: the open intervals are known to hold until now.
    fn touch_history(&mut self, now: DateTime<Utc>, force: bool) {
        if !force && now - self.touched_history < Duration::seconds(history::TOUCH_SECS) {
            return;
        }
        self.touched_history = now;
        let handles = &self.handles;
        if let Err(e) = history::store::touch(&handles.db, &handles.history, now.timestamp_millis())
        {
            log::error!("Cannot note that the cluster history still holds: {e}");
        }
    }

    /// The history writes of an evaluation: removed clusters end, changed ones
    /// (every cluster, the first time after a start) begin their new interval
    /// when the change was first seen.
    fn history_writes(
        &mut self,
        outcome: &crate::clusters::confirm::Outcome,
        now: DateTime<Utc>,
    ) -> Vec<history::Write> {
        let mut writes = Vec::new();
        for key in &outcome.removed {
            self.history.close(key, now.timestamp_millis(), &mut writes);
        }
        let keys: Vec<String> = if self.history.resumed {
            outcome.changed.clone()
        } else {
            self.history.resumed = true;
            self.evaluator
                .all_confirmed()
                .map(|(k, _)| k.clone())
                .collect()
        };
        for key in keys {
            let Some(shape) = self.evaluator.confirmed(&key).and_then(history::shape_of) else {
                continue;
            };
            let at = outcome.since.get(&key).copied().unwrap_or(now);
            self.history
                .record(&key, shape, at.timestamp_millis(), &mut writes);
        }
        writes
    }

    /// Brings the grouping up to date with what arrived: built anew when a host's
    /// place in it may have changed, else the changed hosts' members patched.
    fn update_grouping(&mut self) {
        if self.regroup {
            let hosts = self.hosts();
            self.signatures = hosts
                .iter()
                .map(|h| (h.client_id.clone(), signature(h)))
                .collect();
            self.grouped = group(&hosts);
            self.by_host.clear();
            for (i, c) in self.grouped.iter().enumerate() {
                for (j, m) in c.members.iter().enumerate() {
                    self.by_host
                        .entry(m.client_id.clone())
                        .or_default()
                        .push((i, j));
                }
            }
            self.regroup = false;
            self.dirty.clear();
            self.touched.clear();
            self.evaluate_all = true;
            self.publish_all = true;
            return;
        }
        // Members first, then each touched cluster judged once: a batch of readings
        // from a cluster of many hosts costs one judgement, not one per reading.
        let mut patched = HashSet::new();
        for id in std::mem::take(&mut self.dirty) {
            let Some(host) = self.host_view(&id) else {
                continue;
            };
            for &(i, j) in self.by_host.get(&id).map(Vec::as_slice).unwrap_or_default() {
                patch_member(&mut self.grouped[i].members[j], &host);
                patched.insert(i);
            }
        }
        for &i in &patched {
            rejudge(&mut self.grouped[i]);
        }
        self.unpublished.extend(patched.iter().copied());
        self.touched.extend(patched);
    }

    fn evaluate(&mut self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.batch.clear();
        self.unevaluated = false;
        self.update_grouping();
        let touched = std::mem::take(&mut self.touched);
        let outcome = if std::mem::take(&mut self.evaluate_all) {
            let (evaluator, grouped) = (&mut self.evaluator, &self.grouped);
            contain_panics(|| evaluator.evaluate(grouped, now))
        } else {
            // Only the clusters of hosts that changed, and those with a change pending.
            let pending: HashSet<String> = self.evaluator.pending_keys().into_iter().collect();
            // Borrowed, not cloned: at 5,000 readings a second the copies were
            // the evaluator's largest cost.
            let subset = self
                .grouped
                .iter()
                .enumerate()
                .filter(|(i, c)| touched.contains(i) || pending.contains(&c.key))
                .map(|(_, c)| c);
            let evaluator = &mut self.evaluator;
            contain_panics(|| evaluator.evaluate_some(subset, now))
        };
        let Some(mut outcome) = outcome else {
            log::error!("The cluster evaluation panicked; it is tried again with the next change");
            return None;
        };
        let handles = &self.handles;
        for id in &outcome.requests {
            handles.agents.send(
                id,
                ToSocket::Text(envelope(
                    vrrp_protocol::kind::REQUEST_STATE_UPDATE,
                    json!({}),
                )),
            );
        }
        // Events that could not be stored are offered again with the next
        // evaluation (their ids make a second store of a stored one a no-op), so a
        // failing write delays a confirmed change but does not lose it.
        let mut events = std::mem::take(&mut self.unrecorded);
        events.extend(std::mem::take(&mut outcome.events));
        // Recording carries user text (names, sites) into the store, the
        // dashboards and the webhooks: a panic there costs these events (a
        // retry would panic again), never the cluster thread.
        let retry = !events.is_empty()
            && !contain_panics(|| handles.activity.record(events.clone())).unwrap_or_else(|| {
                log::error!(
                    "Recording {} cluster events panicked; they are dropped",
                    events.len()
                );
                true
            });
        if retry {
            if events.len() > MAX_UNRECORDED {
                log::error!(
                    "{} cluster events could not be stored; the oldest {} are dropped",
                    events.len(),
                    events.len() - MAX_UNRECORDED
                );
                events.drain(..events.len() - MAX_UNRECORDED);
            }
            log::warn!(
                "{} cluster events could not be stored; tried again in {} s",
                events.len(),
                RETRY_SECS
            );
            self.unrecorded = events;
        }
        let states: Vec<(String, Option<String>)> = outcome
            .changed
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    self.evaluator
                        .confirmed(k)
                        .and_then(|c| serde_json::to_string(c).ok()),
                )
            })
            .chain(outcome.removed.iter().map(|k| (k.clone(), None)))
            .collect();
        let writes = self.history_writes(&outcome, now);
        let handles = &self.handles;
        if !states.is_empty() || !writes.is_empty() {
            let at = iso(now);
            let now_ms = now.timestamp_millis();
            let mirror = handles.history.clone();
            let saved = handles.db.write_then(
                move |c| {
                    history::store::apply(c, &writes, now_ms)?;
                    for (key, state) in &states {
                        match state {
                        Some(s) => c.execute(
                            "INSERT INTO cluster_states (key, state, updated_at) VALUES (?1, ?2, ?3)
                             ON CONFLICT (key) DO UPDATE SET state = ?2, updated_at = ?3",
                            params![key, s, at],
                        )?,
                        None => c.execute("DELETE FROM cluster_states WHERE key = ?1", [key])?,
                    };
                    }
                    Ok::<_, DbError>(writes)
                },
                // The history in memory changes as the table did, once it committed.
                move |writes| mirror.write().apply(writes, now_ms),
            );
            if let Err(e) = saved {
                e.log_write_failure(format_args!("Cannot store the confirmed cluster states"));
            }
        }
        let retry_at = retry.then(|| now + Duration::seconds(RETRY_SECS));
        match (outcome.wake_at, retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Clusters whose confirmed state, as persisted, has an incident open (for
/// `GET /metrics`). Read from `cluster_states`, which this thread keeps current.
pub fn open_incidents(db: &Db) -> Result<u64, DbError> {
    open_incident_ids(db).map(|ids| ids.len() as u64)
}

/// The ids of the incidents open now, as `cluster_states` holds them (this
/// thread keeps it current): the dashboard's open incidents come from here, not
/// from the activity list, which retention or "delete all" may have emptied of
/// an incident's opening event.
pub fn open_incident_ids(db: &Db) -> Result<Vec<String>, DbError> {
    db.read(|c| {
        let mut stmt = c.prepare("SELECT state FROM cluster_states")?;
        let states = stmt.query_map([], |r| r.get::<_, String>(0))?;
        let mut ids = Vec::new();
        for state in states {
            let state: Value = serde_json::from_str(&state?).unwrap_or_default();
            if let Some(id) = state["incident"]["id"].as_str() {
                ids.push(id.to_owned());
            }
        }
        Ok(ids)
    })
}

/// The open incidents as `cluster_states` holds them (this thread keeps it
/// current), for the end of a silence.
pub struct StoredIncidents(pub Arc<Db>);

impl crate::activity::silences::OpenIncidents for StoredIncidents {
    fn still_open(
        &self,
        incident_ids: &[String],
        silence: &Value,
        now: DateTime<Utc>,
    ) -> Vec<crate::activity::Event> {
        let states: Result<Vec<String>, DbError> = self.0.read(|c| {
            let mut stmt = c.prepare("SELECT state FROM cluster_states")?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        });
        let states = match states {
            Ok(s) => s,
            Err(e) => {
                log::error!("Cannot read the open incidents at the end of a silence: {e}");
                return Vec::new();
            }
        };
        states
            .iter()
            .filter_map(|text| serde_json::from_str::<Confirmed>(text).ok())
            .filter(|c| {
                c.incident
                    .as_ref()
                    .is_some_and(|i| incident_ids.contains(&i.id))
            })
            .filter_map(|c| crate::clusters::confirm::silence_ended(&c, silence, now))
            .collect()
    }
}
