//! The heartbeat: a dead man's switch outside the server. Every
//! `heartbeat.interval_seconds` the `heartbeat` thread calls `heartbeat.url`,
//! but only after the server showed it is really working: the `sqlite-writer`
//! thread committed an empty job, the `cluster-eval` thread answered a cluster
//! list request and the HTTP listener answered `GET /api/v1/ping`, each before
//! the beat's deadline (one interval after it began, on the server's clock). A
//! stuck thread therefore stops the beat, and the service outside raises the
//! alarm that silence alone could not.
//!
//! [`Heartbeat`] is what the thread and the HTTP settings routes share: the
//! block as it runs now (changed by `PUT /api/v1/settings/heartbeat`, which
//! wakes the thread for a beat at once) and the last outcome ([`Status`]), which
//! the Settings page and `/metrics` show. A failed beat is logged once per streak
//! of failures (and once when beats succeed again); the URL reaches logs only
//! masked ([`mask_url`]). `beat` holds one beat's steps.

mod beat;

pub use beat::Handles;

pub use crate::config::heartbeat::{mask_url, HeartbeatConfig};

use crate::clock::iso;
use crate::clusters::thread::{EvalMsg, EvalSender};
use crate::lifecycle::Shutdown;
use chrono::{DateTime, Duration, Utc};
use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use std::sync::Arc;

/// The last outcome, as `GET /api/v1/settings/heartbeat` shows it.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// When the last beat began.
    pub last_attempt: Option<String>,
    /// When the URL last answered 2xx.
    pub last_success: Option<String>,
    /// The same in Unix seconds, for `/metrics`.
    #[serde(skip)]
    pub last_success_unix: Option<f64>,
    /// Why the last beat failed (`None` after a success); never the full URL.
    pub last_error: Option<String>,
    /// Beats failed since the last success.
    pub consecutive_failures: u64,
    /// When the next beat is due (`None` while switched off).
    pub next_beat: Option<String>,
}

/// What the `heartbeat` thread and the HTTP routes share.
pub struct Heartbeat {
    config: RwLock<HeartbeatConfig>,
    status: Mutex<Status>,
    wake: (Sender<()>, Receiver<()>),
    /// The test hook's hold on `cluster-eval` (`SVC_TEST_HOOKS=1` only).
    hold: Mutex<Option<Sender<()>>>,
}

impl Heartbeat {
    pub fn new(config: HeartbeatConfig) -> Heartbeat {
        Heartbeat {
            config: RwLock::new(config),
            status: Mutex::new(Status::default()),
            wake: bounded(1),
            hold: Mutex::new(None),
        }
    }

    pub fn config(&self) -> HeartbeatConfig {
        self.config.read().clone()
    }

    pub fn status(&self) -> Status {
        self.status.lock().clone()
    }

    /// Applies a changed block (already written to the config file) and beats
    /// at once with it.
    pub fn apply(&self, config: HeartbeatConfig) {
        *self.config.write() = config;
        let _ = self.wake.0.try_send(());
    }

    /// Test hook: holds the `cluster-eval` thread until [`release`](Self::release).
    pub fn hold_evaluator(&self, evaluate: &EvalSender) {
        let (release, held) = bounded(1);
        evaluate.tell(EvalMsg::Hold(held));
        // A hold already in place is released by dropping its sender.
        *self.hold.lock() = Some(release);
    }

    /// Test hook: lets a held `cluster-eval` thread go on.
    pub fn release_evaluator(&self) -> bool {
        self.hold.lock().take().is_some()
    }
}

/// Starts the `heartbeat` thread.
pub fn spawn(shared: Arc<Heartbeat>, handles: Handles, shutdown: Shutdown) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("heartbeat".into())
        .spawn(move || run(&shared, &handles, &shutdown))?;
    Ok(())
}

fn run(shared: &Heartbeat, handles: &Handles, shutdown: &Shutdown) {
    let clock = handles.clock.clone();
    // The first beat goes out at start: the service outside learns at once
    // that the server is back.
    let mut due: Option<DateTime<Utc>> = Some(clock.utc());
    let mut config = shared.config();
    while !shutdown.is_set() {
        let now = clock.utc();
        if !config.enabled() {
            due = None;
        }
        if let Some(at) = due.filter(|at| *at <= now) {
            let interval = Duration::seconds(config.interval_seconds as i64);
            beat_once(shared, handles, &config, at, shutdown);
            // The next beat one interval after this one began; a beat that
            // ended late (a stop, a stuck probe) does not cause a burst.
            let next = at + interval;
            due = Some(if next <= clock.utc() - interval {
                clock.utc()
            } else {
                next
            });
            shared.status.lock().next_beat = due.map(iso);
            continue;
        }
        let step = if due.is_none() {
            // Switched off: only a saved block wakes the thread.
            std::time::Duration::from_millis(500)
        } else if clock.is_driven() {
            std::time::Duration::from_millis(20)
        } else {
            due.and_then(|at| (at - now).to_std().ok())
                .unwrap_or(std::time::Duration::from_millis(500))
                .min(std::time::Duration::from_millis(500))
        };
        if shared.wake.1.recv_timeout(step).is_ok() {
            config = shared.config();
            due = config.enabled().then(|| clock.utc());
            let mut status = shared.status.lock();
            status.next_beat = due.map(iso);
            if !config.enabled() {
                *status = Status::default();
            }
        }
    }
}

fn beat_once(
    shared: &Heartbeat,
    handles: &Handles,
    config: &HeartbeatConfig,
    at: DateTime<Utc>,
    shutdown: &Shutdown,
) {
    shared.status.lock().last_attempt = Some(iso(at));
    let outcome =
        beat::probe(handles, config, at, shutdown).and_then(|summary| beat::send(config, &summary));
    let mut status = shared.status.lock();
    match outcome {
        Ok(()) => {
            if status.consecutive_failures > 0 {
                log::info!(
                    "Heartbeat to {} succeeds again after {} failed beat(s)",
                    mask_url(&config.url),
                    status.consecutive_failures
                );
            }
            let now = handles.clock.utc();
            status.last_success = Some(iso(now));
            status.last_success_unix = Some(now.timestamp_millis() as f64 / 1000.0);
            status.last_error = None;
            status.consecutive_failures = 0;
        }
        Err(why) => {
            if status.consecutive_failures == 0 {
                log::warn!(
                    "Heartbeat to {} failed: {why} (logged once until a beat succeeds)",
                    mask_url(&config.url)
                );
            }
            status.last_error = Some(why);
            status.consecutive_failures += 1;
        }
    }
}
