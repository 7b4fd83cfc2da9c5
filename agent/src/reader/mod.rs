//! The reader thread: owns keepalived access, the change-detection baseline and the poll
//! timer. Every trigger (timer, FIFO, notify endpoint, start, later the connection) is a
//! message on one channel; triggers that arrive while a reading is in flight coalesce into
//! exactly one further reading.
//!
//! It also carries out the server's host actions (`actions`: the drain file), so that
//! actions and readings take turns: the actions of a batch are done first, then its one
//! reading is taken (carrying the drain, as every reading does while actions are on),
//! and the answers travel with that reading to the connections (`ReadingNote::actions`).

pub mod events;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::RwLock;
use serde_json::Value;
use vrrp_protocol::{Reading, VrrpState};

use crate::actions::{ActionDone, Drainer};
use crate::keepalived::Prober;
use crate::store::persist::PersistHandle;
use crate::store::queue::ActivityQueue;
use events::Baseline;

/// Why a reading is asked for (logged at debug level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerSource {
    Start,
    Poll,
    Fifo,
    Endpoint,
    Connection,
    ServerRequest,
    /// The connection's "at least every 30 s" resend.
    Resend,
    /// A server's HOST_ACTION was carried out: the reading shows its effect.
    HostAction,
}

/// Every finished reading, with what triggered it, for the connection.
#[derive(Debug, Clone)]
pub struct ReadingNote {
    pub reading: Arc<Reading>,
    pub sources: Vec<TriggerSource>,
    /// The host actions carried out just before this reading, each for the
    /// connection that holds its token.
    pub actions: Vec<ActionDone>,
}

/// Messages to the reader.
pub enum ReaderMsg {
    /// Take a reading; the reply (if any) gets the reading that served this trigger.
    Read {
        source: TriggerSource,
        /// When the trigger fired: the latency of a reading is measured from here.
        at: Instant,
        reply: Option<Sender<Arc<Reading>>>,
    },
    /// Carry out a server's HOST_ACTION (`request`, its payload), then take a reading;
    /// the answer goes out with that reading's note under `token`.
    Act {
        token: u64,
        request: Value,
        at: Instant,
    },
    Stop,
}

/// The "take a reading now" interface other parts of the agent use.
#[derive(Clone)]
pub struct Trigger {
    tx: Sender<ReaderMsg>,
}

impl Trigger {
    pub fn from_sender(tx: Sender<ReaderMsg>) -> Trigger {
        Trigger { tx }
    }

    pub fn fire(&self, source: TriggerSource) {
        let _ = self.tx.send(ReaderMsg::Read {
            source,
            at: Instant::now(),
            reply: None,
        });
    }

    /// Asks for a host action (a HOST_ACTION's payload) and the reading after it.
    pub fn act(&self, token: u64, request: Value) {
        let _ = self.tx.send(ReaderMsg::Act {
            token,
            request,
            at: Instant::now(),
        });
    }

    /// Asks for a reading and waits for it (REQUEST_STATE_UPDATE, connect).
    pub fn read_now(&self, source: TriggerSource, timeout: Duration) -> Option<Arc<Reading>> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.tx
            .send(ReaderMsg::Read {
                source,
                at: Instant::now(),
                reply: Some(tx),
            })
            .ok()?;
        rx.recv_timeout(timeout).ok()
    }
}

/// What the status routes show about keepalived: the last reading and the triggers.
#[derive(Debug, Default)]
pub struct KeepalivedStatus {
    pub last: Option<Arc<Reading>>,
    pub readings: u64,
    pub fifo: FifoState,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum FifoState {
    #[default]
    Off,
    Open,
    Missing,
}

impl FifoState {
    pub fn as_str(self) -> &'static str {
        match self {
            FifoState::Off => "off",
            FifoState::Open => "open",
            FifoState::Missing => "missing",
        }
    }
}

/// Called with every finished reading (the connection's inbox; must not block).
pub type Observer = Box<dyn Fn(ReadingNote) + Send>;

pub type SharedStatus = Arc<RwLock<KeepalivedStatus>>;

/// When the next timed reading is due: `interval` after the start of the last reading;
/// `None` when the timer is off.
pub fn next_poll(last_start: Instant, interval: Option<Duration>) -> Option<Instant> {
    interval.map(|i| last_start + i)
}

pub struct ReaderHandle {
    pub trigger: Trigger,
    tx: Sender<ReaderMsg>,
    thread: thread::JoinHandle<()>,
}

impl ReaderHandle {
    pub fn stop(self) {
        let _ = self.tx.send(ReaderMsg::Stop);
        let _ = self.thread.join();
    }
}

/// What the reader thread owns.
pub struct Reader {
    pub prober: Prober,
    pub baseline: Option<Baseline>,
    pub queue: ActivityQueue,
    pub persist: PersistHandle,
    pub status: SharedStatus,
    pub poll: Option<Duration>,
    pub observer: Option<Observer>,
    /// The drain file's keeper; `None`: actions are disabled (each is refused).
    pub drain: Option<Drainer>,
}

/// Starts the reader thread on a channel made beforehand (the web server's notify
/// endpoint needs the sender before the reader starts). A first reading is taken at once.
pub fn spawn_with(
    tx: Sender<ReaderMsg>,
    rx: Receiver<ReaderMsg>,
    reader: Reader,
) -> std::io::Result<ReaderHandle> {
    let thread = thread::Builder::new()
        .name("ka-reader".into())
        .spawn(move || crate::fatal::guard("ka-reader", || reader.run(rx)))?;
    let trigger = Trigger { tx: tx.clone() };
    trigger.fire(TriggerSource::Start);
    Ok(ReaderHandle {
        trigger,
        tx,
        thread,
    })
}

/// The triggers that one reading serves.
struct Batch {
    sources: Vec<TriggerSource>,
    replies: Vec<Sender<Arc<Reading>>>,
    /// Host actions to carry out before the reading, with their tokens.
    actions: Vec<(u64, Value)>,
    /// The earliest trigger: a reading's latency is measured from here.
    first_at: Option<Instant>,
    stop: bool,
}

/// Everything that arrived while the last reading was in flight becomes exactly one
/// further reading, which answers every trigger in it.
fn coalesce(messages: impl Iterator<Item = ReaderMsg>) -> Batch {
    let mut batch = Batch {
        sources: Vec::new(),
        replies: Vec::new(),
        actions: Vec::new(),
        first_at: None,
        stop: false,
    };
    for m in messages {
        match m {
            ReaderMsg::Read { source, at, reply } => {
                batch.first_at = Some(batch.first_at.map_or(at, |f| f.min(at)));
                batch.sources.push(source);
                batch.replies.extend(reply);
            }
            ReaderMsg::Act { token, request, at } => {
                batch.first_at = Some(batch.first_at.map_or(at, |f| f.min(at)));
                if !batch.sources.contains(&TriggerSource::HostAction) {
                    batch.sources.push(TriggerSource::HostAction);
                }
                batch.actions.push((token, request));
            }
            ReaderMsg::Stop => batch.stop = true,
        }
    }
    batch
}

impl Reader {
    fn run(mut self, rx: Receiver<ReaderMsg>) {
        let mut last_start = Instant::now();
        loop {
            let msg = match next_poll(last_start, self.poll) {
                Some(at) => match rx.recv_deadline(at) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => ReaderMsg::Read {
                        source: TriggerSource::Poll,
                        at: Instant::now(),
                        reply: None,
                    },
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                None => match rx.recv() {
                    Ok(m) => m,
                    Err(_) => return,
                },
            };
            // Coalesce: this message plus everything already waiting is one reading.
            let batch = coalesce(std::iter::once(msg).chain(rx.try_iter()));
            let (sources, replies, first_at) = (batch.sources, batch.replies, batch.first_at);
            let stop = batch.stop;
            if stop {
                return;
            }
            let actions: Vec<ActionDone> = batch
                .actions
                .iter()
                .map(|(token, request)| ActionDone {
                    token: *token,
                    result: crate::actions::answer(
                        self.drain.as_mut(),
                        request,
                        chrono::Utc::now(),
                    ),
                })
                .collect();
            log::debug!("reading keepalived (triggers: {sources:?})");
            last_start = Instant::now();
            let reading = Arc::new(self.read_once(first_at.unwrap_or(last_start)));
            for r in replies {
                let _ = r.send(reading.clone());
            }
            if let Some(o) = &self.observer {
                o(ReadingNote {
                    reading,
                    sources,
                    actions,
                });
            }
        }
    }

    fn read_once(&mut self, triggered: Instant) -> Reading {
        let t0 = Instant::now();
        let mut reading = self.prober.read();
        reading.drain = self.drain.as_mut().map(Drainer::state);
        let took = t0.elapsed();
        let since_trigger = triggered.elapsed();
        let (evs, baseline) = events::detect(self.baseline.as_ref(), &reading);
        for e in &evs {
            log::info!(
                "activity {} ({}) {}",
                e.kind,
                e.level.as_str(),
                serde_json::Value::Object(e.data.clone())
            );
        }
        if let Some(err) = &reading.error {
            if evs.iter().any(|e| e.kind == events::KEEPALIVED_UNREADABLE) {
                log::error!("keepalived could not be read: {err}");
            }
        }
        if !evs.is_empty() && self.queue.has_unsaved() {
            // Events of an earlier reading are still inside the write window. Write them
            // (with that reading's baseline) first, so a crash can only ever lose the
            // events of this one reading, which a restart derives again with the same ids
            // from the baseline on disk. Only bursts of changes pay for this write.
            if !self.persist.flush(Duration::from_secs(5)) && !self.persist.is_failing() {
                log::error!("pending activity could not be written before new events");
            }
        }
        self.queue.push(evs);
        // The baseline goes to disk with (never before) the queue: see store/persist.rs.
        self.persist.set_baseline(baseline.clone());
        self.baseline = Some(baseline);
        let masters = reading
            .instances
            .iter()
            .filter(|i| i.state == VrrpState::Master)
            .count();
        log::debug!(
            "reading took {:.2} ms ({:.2} ms after the trigger): running={} instances={} master={} error={:?}",
            took.as_secs_f64() * 1000.0,
            since_trigger.as_secs_f64() * 1000.0,
            reading.running,
            reading.instances.len(),
            masters,
            reading.error
        );
        let mut st = self.status.write();
        st.last = Some(Arc::new(reading.clone()));
        st.readings += 1;
        reading
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_waiting_during_a_reading_become_exactly_one_more() {
        let t0 = Instant::now();
        let (tx, rx) = crossbeam_channel::unbounded();
        // Five triggers arrive while a reading is in flight (they wait in the channel);
        // two of them wait for the result.
        let (reply_a, got_a) = crossbeam_channel::bounded(1);
        let (reply_b, got_b) = crossbeam_channel::bounded(1);
        for (i, source) in [
            TriggerSource::Fifo,
            TriggerSource::Endpoint,
            TriggerSource::Fifo,
            TriggerSource::ServerRequest,
            TriggerSource::Poll,
        ]
        .into_iter()
        .enumerate()
        {
            let reply = match i {
                1 => Some(reply_a.clone()),
                3 => Some(reply_b.clone()),
                _ => None,
            };
            tx.send(ReaderMsg::Read {
                source,
                at: t0 + Duration::from_millis(10 * (5 - i as u64)),
                reply,
            })
            .unwrap();
        }
        let first = rx.recv().unwrap();
        let batch = coalesce(std::iter::once(first).chain(rx.try_iter()));
        assert_eq!(batch.sources.len(), 5, "one reading for all five");
        assert_eq!(batch.replies.len(), 2, "and it answers both who wait");
        assert_eq!(
            batch.first_at,
            Some(t0 + Duration::from_millis(10)),
            "latency counts from the earliest trigger"
        );
        assert!(!batch.stop);
        assert!(rx.try_recv().is_err(), "nothing left for another reading");
        let reading = Arc::new(Reading::default());
        for r in batch.replies {
            r.send(reading.clone()).unwrap();
        }
        assert!(
            Arc::ptr_eq(&got_a.recv().unwrap(), &got_b.recv().unwrap()),
            "the same reading"
        );
        let with_stop = coalesce(
            [
                ReaderMsg::Read {
                    source: TriggerSource::Poll,
                    at: t0,
                    reply: None,
                },
                ReaderMsg::Stop,
            ]
            .into_iter(),
        );
        assert!(with_stop.stop);
    }

    #[test]
    fn host_actions_waiting_during_a_reading_are_done_before_the_one_more() {
        let t0 = Instant::now();
        let batch = coalesce(
            [
                ReaderMsg::Act {
                    token: 1,
                    request: serde_json::json!({"id": "a"}),
                    at: t0,
                },
                ReaderMsg::Read {
                    source: TriggerSource::Poll,
                    at: t0,
                    reply: None,
                },
                ReaderMsg::Act {
                    token: 2,
                    request: serde_json::json!({"id": "b"}),
                    at: t0,
                },
            ]
            .into_iter(),
        );
        let tokens: Vec<u64> = batch.actions.iter().map(|(t, _)| *t).collect();
        assert_eq!(tokens, [1, 2], "both, in order");
        assert_eq!(
            batch.sources,
            [TriggerSource::HostAction, TriggerSource::Poll],
            "one reading, sent because it was asked for"
        );
    }

    #[test]
    fn poll_timer_is_interval_after_last_start_or_off() {
        let t = Instant::now();
        assert_eq!(
            next_poll(t, Some(Duration::from_secs(5))),
            Some(t + Duration::from_secs(5))
        );
        assert_eq!(next_poll(t, None), None);
    }
}
