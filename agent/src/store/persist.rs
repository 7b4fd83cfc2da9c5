//! The persistence thread (`persist`): writes queue.json and keepalived-last.json.
//!
//! Writes are coalesced over one second. Invariant: the baseline on disk is never newer
//! than the queue on disk. Both are written in the same flush, the queue first, so after a
//! `kill -9` the agent either finds the events in queue.json or finds the older baseline
//! and derives the same events (same ids) again. For that to hold event for event, at most
//! one reading's events may be unwritten at a time: the reader flushes before it queues
//! the events of a second reading inside the same window (see `reader::read_once`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use crate::reader::events::Baseline;
use crate::store::datadir::DataDir;
use crate::store::queue::{ActivityQueue, PersistMsg, WriteCoalescer};

/// Handle to the persistence thread.
#[derive(Clone)]
pub struct PersistHandle {
    tx: Sender<PersistMsg>,
    baseline: Arc<Mutex<Option<Baseline>>>,
    baseline_dirty: Arc<AtomicBool>,
    failing: SaveStatus,
}

/// Whether the data directory takes our writes; shown on the status page.
pub type SaveStatus = Arc<Mutex<Option<SaveFailure>>>;

/// A run of failed writes (a full or read-only disk): the queue lives in memory
/// meanwhile and is written at the first write that works again.
#[derive(Clone, Debug)]
pub struct SaveFailure {
    /// When the run started (ISO 8601), for the status page.
    pub since: String,
    pub error: String,
    started: Instant,
    failed_writes: u64,
}

impl PersistHandle {
    /// Hands over the newest baseline; it is written with the next flush.
    pub fn set_baseline(&self, b: Baseline) {
        *self.baseline.lock() = Some(b);
        self.baseline_dirty.store(true, Ordering::SeqCst);
        let _ = self.tx.send(PersistMsg::BaselineDirty);
    }

    /// Writes everything pending now and waits (bounded) until it is on disk.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx.send(PersistMsg::Flush(tx)).is_ok() && rx.recv_timeout(timeout).is_ok()
    }

    /// The current run of failed writes, if any.
    pub fn save_status(&self) -> SaveStatus {
        self.failing.clone()
    }

    /// Whether writes to the data directory fail at the moment.
    pub fn is_failing(&self) -> bool {
        self.failing.lock().is_some()
    }

    /// Flushes and stops the thread.
    pub fn stop(&self, timeout: Duration) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx.send(PersistMsg::Stop(tx)).is_ok() && rx.recv_timeout(timeout).is_ok()
    }
}

/// Creates the channel first, because the queue handle needs its sender before the
/// thread (which needs the queue) can start.
pub fn channel() -> (Sender<PersistMsg>, Receiver<PersistMsg>) {
    crossbeam_channel::unbounded()
}

pub fn spawn(
    dir: DataDir,
    queue: ActivityQueue,
    tx: Sender<PersistMsg>,
    rx: Receiver<PersistMsg>,
) -> std::io::Result<(PersistHandle, thread::JoinHandle<()>)> {
    let handle = PersistHandle {
        tx,
        baseline: Arc::new(Mutex::new(None)),
        baseline_dirty: Arc::new(AtomicBool::new(false)),
        failing: Arc::new(Mutex::new(None)),
    };
    let writer = Writer {
        dir,
        queue,
        handle: handle.clone(),
        queue_dirty: false,
        coalescer: WriteCoalescer::default(),
    };
    let join = thread::Builder::new()
        .name("persist".into())
        .spawn(move || crate::fatal::guard("persist", || writer.run(rx)))?;
    Ok((handle, join))
}

struct Writer {
    dir: DataDir,
    queue: ActivityQueue,
    handle: PersistHandle,
    queue_dirty: bool,
    coalescer: WriteCoalescer,
}

impl Writer {
    fn run(mut self, rx: Receiver<PersistMsg>) {
        loop {
            let msg = match self.coalescer.due_in(Instant::now()) {
                Some(wait) => match rx.recv_timeout(wait) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => {
                        self.write();
                        return;
                    }
                },
                None => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                },
            };
            match msg {
                None => self.write(),
                Some(PersistMsg::Dirty) => {
                    self.queue_dirty = true;
                    self.coalescer.mark_dirty(Instant::now());
                }
                Some(PersistMsg::BaselineDirty) => self.coalescer.mark_dirty(Instant::now()),
                Some(PersistMsg::Flush(reply)) => {
                    self.queue_dirty = true;
                    self.write();
                    let _ = reply.send(());
                }
                Some(PersistMsg::Stop(reply)) => {
                    self.queue_dirty = true;
                    self.write();
                    let _ = reply.send(());
                    return;
                }
            }
        }
    }

    fn write(&mut self) {
        self.coalescer.written();
        if std::mem::take(&mut self.queue_dirty) {
            let state = self.queue.snapshot_for_write();
            if let Err(e) = self.dir.save_queue_state(&state.events, &state.acked) {
                // Keep the baseline back too, so nothing is lost: retry within a second.
                self.failed(
                    format!("cannot write the activity queue: {e}"),
                    state.events.len(),
                );
                self.queue.mark_unsaved();
                self.queue_dirty = true;
                self.coalescer.mark_dirty(Instant::now());
                return;
            }
        }
        if self.handle.baseline_dirty.swap(false, Ordering::SeqCst) {
            let b = self.handle.baseline.lock().clone();
            if let Some(b) = b {
                if let Err(e) = self.dir.save_baseline(&b) {
                    self.failed(
                        format!("cannot write the last reading: {e}"),
                        self.queue.len(),
                    );
                    self.handle.baseline_dirty.store(true, Ordering::SeqCst);
                    self.coalescer.mark_dirty(Instant::now());
                    return;
                }
            }
        }
        if let Some(run) = self.handle.failing.lock().take() {
            log::warn!(
                "The data directory takes writes again after {} s ({} failed writes); the activity queue is on disk",
                run.started.elapsed().as_secs(),
                run.failed_writes
            );
        }
    }

    /// One line per run of failures, not one per retry.
    fn failed(&self, error: String, queued: usize) {
        let mut failing = self.handle.failing.lock();
        match failing.as_mut() {
            Some(run) => {
                run.failed_writes += 1;
                run.error = error;
            }
            None => {
                log::error!(
                    "{error}. The {queued} queued events are kept in memory (at most {}) and still \
                     sent to the server; they would be lost if the agent stopped before the directory \
                     can be written again. Retrying every second",
                    crate::store::queue::MAX_EVENTS
                );
                *failing = Some(SaveFailure {
                    since: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    error,
                    started: Instant::now(),
                    failed_writes: 1,
                });
            }
        }
    }
}
