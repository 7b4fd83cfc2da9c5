//! The two cleanup schedulers, `token-cleanup` and `notification-cleanup`: their
//! timers, runs, and the status the API and dashboards show.
//!
//! [`next_run`] is the timer rule as a pure function. Each scheduler has a
//! `sched:<name>` thread that waits on the server's clock; a manual run goes
//! through the same [`Scheduler::run`]. The last run is persisted: it is written
//! as `running` when it starts, so one cut short by a stop reads as `interrupted`.

pub mod cleanup;

pub use cleanup::{clean_activity, clean_tokens, CLEANUP_BATCH};

use crate::activity::{ActivitySink, Event};
use crate::clock::{iso, SharedClock};
use crate::config::settings::Settings;
use crate::db::{Db, DbError};
use crate::live::{envelope, Hub};
use chrono::{DateTime, Duration, Utc};
use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use rusqlite::{params, OptionalExtension};
use serde_json::json;
use std::sync::Arc;

/// When the next scheduled run is due, `None` while the interval is 0: one interval
/// after the last run started (at once if that is past), never more than one
/// interval from now (a shortened interval takes effect at once).
pub fn next_run(
    last_started: Option<DateTime<Utc>>,
    interval: Duration,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    if interval <= Duration::zero() {
        return None;
    }
    let planned = last_started.map_or(now + interval, |l| l + interval);
    Some(planned.max(now).min(now + interval))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Schedule,
    Manual,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::Manual => "manual",
        }
    }
}

/// The last run of a scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct LastRun {
    pub trigger: String,
    /// `success`, `failed`, `interrupted` (or `running` while persisted mid-run).
    pub status: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub removed: Option<i64>,
    pub error: Option<String>,
}

/// A run as the API shows it: an interrupted run has neither `finishedAt` nor
/// `result` (the outer `None`); a finished one has both, possibly null.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastRunView {
    pub trigger: String,
    pub status: String,
    pub started_at: String,
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Option<Removed>>,
}

/// A run's `result`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Removed {
    pub removed: i64,
}

impl LastRun {
    fn view(&self) -> LastRunView {
        let ended = self.status != "interrupted";
        LastRunView {
            trigger: self.trigger.clone(),
            status: self.status.clone(),
            started_at: self.started_at.clone(),
            error: self.error.clone(),
            finished_at: ended.then(|| self.finished_at.clone()),
            result: ended.then(|| self.removed.map(|removed| Removed { removed })),
        }
    }
}

/// The Scheduler status shape of the API.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerStatus {
    pub is_running: bool,
    pub next_run: Option<String>,
    pub last_run: Option<LastRunView>,
}

#[derive(Debug, Default)]
struct State {
    running: bool,
    next_run: Option<DateTime<Utc>>,
    last_run: Option<LastRun>,
}

/// The work of a scheduler: removes what is due and says how much. It reads the
/// retention settings at run time, so a change applies to the next run.
pub type Work = Box<dyn Fn(&Handles, DateTime<Utc>) -> Result<u64, String> + Send + Sync>;

/// What a scheduler uses, handed to it at start: not the whole `App`.
#[derive(Clone)]
pub struct Handles {
    pub db: Arc<Db>,
    pub clock: SharedClock,
    /// Dashboards, for SCHEDULER_STATUS_UPDATE.
    pub hub: Arc<Hub>,
    /// For `scheduler.failed`.
    pub activity: ActivitySink,
    /// Intervals and retention, read at each run.
    pub settings: Arc<Settings>,
}

pub struct Scheduler {
    pub name: &'static str,
    /// The settings key of its interval in hours.
    pub interval_key: &'static str,
    work: Work,
    handles: Handles,
    state: Mutex<State>,
    /// One run at a time: a manual run waits for a scheduled one and the other way round.
    run_lock: Mutex<()>,
    wake_tx: Sender<()>,
    wake_rx: Receiver<()>,
}

impl Scheduler {
    pub fn new(
        name: &'static str,
        interval_key: &'static str,
        work: Work,
        handles: Handles,
    ) -> Scheduler {
        let (wake_tx, wake_rx) = bounded(1);
        Scheduler {
            name,
            interval_key,
            work,
            handles,
            state: Mutex::new(State::default()),
            run_lock: Mutex::new(()),
            wake_tx,
            wake_rx,
        }
    }

    /// Loads the last run; a run still marked running was cut short: interrupted.
    pub fn load(&self) -> Result<(), DbError> {
        let name = self.name;
        let last = self.handles.db.write(move |c| {
            c.execute("UPDATE scheduler_runs SET status = 'interrupted', finished_at = NULL, removed = NULL WHERE scheduler = ?1 AND status = 'running'", [name])?;
            Ok::<_, DbError>(
                c.query_row(
                    "SELECT trigger, status, started_at, finished_at, removed, error FROM scheduler_runs WHERE scheduler = ?1",
                    [name],
                    |r| Ok(LastRun { trigger: r.get(0)?, status: r.get(1)?, started_at: r.get(2)?, finished_at: r.get(3)?, removed: r.get(4)?, error: r.get(5)? }),
                )
                .optional()?,
            )
        })?;
        if last.as_ref().is_some_and(|l| l.status == "interrupted") {
            log::warn!("The last {name} run was cut short by a stop; it shows as interrupted");
        }
        self.state.lock().last_run = last;
        Ok(())
    }

    /// The Scheduler status shape of the API.
    pub fn status(&self) -> SchedulerStatus {
        let s = self.state.lock();
        SchedulerStatus {
            is_running: s.running,
            next_run: s.next_run.map(iso),
            last_run: s.last_run.as_ref().map(LastRun::view),
        }
    }

    /// Re-arms the timer now (interval changed, or a run ended).
    pub fn wake(&self) {
        let _ = self.wake_tx.try_send(());
    }

    fn last_started(&self) -> Option<DateTime<Utc>> {
        let s = self.state.lock();
        let started = s.last_run.as_ref()?.started_at.clone();
        DateTime::parse_from_rfc3339(&started)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// Tells the dashboards this scheduler's status (a run started or ended, a
    /// timer was set).
    fn announce(&self) {
        self.handles.hub.broadcast(envelope(
            "SCHEDULER_STATUS_UPDATE",
            json!({ "scheduler": self.name, "status": self.status() }),
        ));
    }

    /// Runs the work now.
    pub fn run(&self, trigger: Trigger) -> Result<u64, String> {
        let (db, clock) = (&self.handles.db, &self.handles.clock);
        let _one = self.run_lock.lock();
        let started = clock.utc();
        let (name, trig, at) = (self.name, trigger.as_str(), iso(started));
        let marked = db.write(move |c| {
            c.execute(
                "INSERT INTO scheduler_runs (scheduler, trigger, status, started_at) VALUES (?1, ?2, 'running', ?3)
                 ON CONFLICT (scheduler) DO UPDATE SET trigger = ?2, status = 'running', started_at = ?3, finished_at = NULL, removed = NULL, error = NULL",
                params![name, trig, at],
            )?;
            Ok::<_, DbError>(())
        });
        if let Err(e) = marked {
            log::error!("Cannot record the start of a {} run: {e}", self.name);
        }
        self.state.lock().running = true;
        self.announce();
        let outcome = (self.work)(&self.handles, started);
        let finished = iso(clock.utc());
        let last = match &outcome {
            Ok(removed) => LastRun {
                trigger: trig.into(),
                status: "success".into(),
                started_at: iso(started),
                finished_at: Some(finished),
                removed: Some(*removed as i64),
                error: None,
            },
            Err(e) => LastRun {
                trigger: trig.into(),
                status: "failed".into(),
                started_at: iso(started),
                finished_at: Some(finished),
                removed: None,
                error: Some(e.clone()),
            },
        };
        let row = last.clone();
        let saved = db.write(move |c| {
            c.execute(
                "UPDATE scheduler_runs SET status = ?2, finished_at = ?3, removed = ?4, error = ?5 WHERE scheduler = ?1",
                params![name, row.status, row.finished_at, row.removed, row.error],
            )?;
            Ok::<_, DbError>(())
        });
        if let Err(e) = saved {
            log::error!("Cannot record the end of a {} run: {e}", self.name);
        }
        {
            let mut s = self.state.lock();
            s.running = false;
            s.last_run = Some(last);
        }
        match &outcome {
            Ok(n) => log::info!("{} ({}) removed {n}", self.name, trig),
            Err(e) => {
                log::error!("{} ({}) failed: {e}", self.name, trig);
                let data = json!({ "scheduler": self.name, "trigger": trig, "error": e });
                self.handles.activity.record(vec![Event::server(
                    "scheduler.failed",
                    vrrp_protocol::ActivityLevel::Error,
                    None,
                    data,
                    clock.utc(),
                )]);
            }
        }
        self.announce();
        self.wake();
        outcome
    }

    /// The timer loop of the `sched:<name>` thread.
    pub fn run_timer(&self, stop: &crate::lifecycle::Shutdown) {
        let clock = &self.handles.clock;
        while !stop.is_set() {
            let now = clock.utc();
            let interval =
                Duration::hours(self.handles.settings.number(self.interval_key, 24) as i64);
            let due = next_run(self.last_started(), interval, now);
            self.state.lock().next_run = due;
            self.announce();
            // Waits in steps of at most a second of real time, looking at the clock
            // each time: long delays are waited out in steps, and a driven clock is
            // noticed.
            loop {
                if stop.is_set() {
                    return;
                }
                let woken = self
                    .wake_rx
                    .recv_timeout(std::time::Duration::from_millis(500))
                    .is_ok();
                if woken {
                    break;
                }
                if due.is_some_and(|d| clock.utc() >= d) {
                    let _ = self.run(Trigger::Schedule);
                    // `run` wakes the timer; take that wake-up so the loop re-arms once.
                    let _ = self.wake_rx.try_recv();
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(h: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 21, 0, 0, 0).unwrap() + Duration::hours(h)
    }

    #[test]
    fn timer_rules() {
        let day = Duration::hours(24);
        assert_eq!(next_run(None, Duration::zero(), t(0)), None, "0 disables");
        assert_eq!(
            next_run(None, day, t(0)),
            Some(t(24)),
            "never ran: one interval from now"
        );
        assert_eq!(
            next_run(Some(t(-10)), day, t(0)),
            Some(t(14)),
            "one interval after the last start"
        );
        assert_eq!(
            next_run(Some(t(-30)), day, t(0)),
            Some(t(0)),
            "at once when past"
        );
        assert_eq!(next_run(Some(t(-1)), Duration::hours(2), t(0)), Some(t(1)));
        assert_eq!(
            next_run(Some(t(0)), Duration::hours(1), t(0)),
            Some(t(1)),
            "capped at one interval from now"
        );
        assert_eq!(
            next_run(Some(t(5)), day, t(0)),
            Some(t(24)),
            "a last start in the future (clock moved back) is capped"
        );
        let long = Duration::hours(24 * 60);
        assert_eq!(
            next_run(Some(t(0)), long, t(0)),
            Some(t(24 * 60)),
            "long delays are planned whole (waited in steps)"
        );
    }
}
