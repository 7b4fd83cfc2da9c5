//! The `cluster-eval` thread: keeps every host's view in memory, regroups and
//! evaluates the clusters when readings or connections change, records the
//! events, asks agents for readings, and persists what it confirmed.
//!
//! Messages are drained in batches: many readings arriving together cost one
//! evaluation. Nothing here answers to the reading or connection that triggered
//! it: an error is logged and the next message is evaluated afresh.

use crate::app::App;
use crate::clients::{self, ClientRecord};
use crate::clock::iso;
use crate::clusters::{group, HostView};
use crate::db::DbError;
use crate::evaluator::{Confirmed, Evaluator};
use crate::lifecycle::{contain_panics, Shutdown};
use crate::live::{envelope, ToSocket};
use chrono::{DateTime, Duration, Utc};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use rusqlite::params;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// After a start, nothing is evaluated until every client with a stored reading
/// reconnected, or this long passed.
pub const STARTUP_GUARD_SECS: i64 = 60;

/// What the rest of the server tells the evaluator.
#[derive(Debug, Clone)]
pub enum EvalMsg {
    /// A reading was stored (as the API shows it).
    Reading(String, Value),
    /// An agent connected or disconnected.
    Connection(String),
    /// A client's record changed (site, name).
    ClientChanged(String),
    ClientDeleted(String),
}

struct Runner {
    app: Arc<App>,
    records: HashMap<String, ClientRecord>,
    readings: HashMap<String, Value>,
    evaluator: Evaluator,
    /// Clients with a stored reading not yet reconnected since the start.
    awaiting: Option<(DateTime<Utc>, HashSet<String>)>,
}

pub fn spawn(app: Arc<App>, inbox: Receiver<EvalMsg>, shutdown: Shutdown) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("cluster-eval".into())
        .spawn(move || {
            let mut runner = match Runner::load(app) {
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
    fn load(app: Arc<App>) -> Result<Runner, DbError> {
        let records: HashMap<String, ClientRecord> = clients::list(&app.db)?
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect();
        let readings: HashMap<String, Value> = crate::readings::list(&app.db)?
            .into_iter()
            .filter_map(|r| Some((r.get("clientId")?.as_str()?.to_owned(), r)))
            .collect();
        let states: Vec<(String, String)> = app.db.read(|c| {
            let mut stmt = c.prepare("SELECT key, state FROM cluster_states")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, DbError>(rows)
        })?;
        let restored = states.into_iter().filter_map(|(key, text)| {
            let state = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| Confirmed::from_json(&v));
            if state.is_none() {
                log::warn!("The stored state of cluster {key} does not read; it starts anew");
            }
            Some((key, state?))
        });
        let evaluator = Evaluator::restore(restored);
        let waiting: HashSet<String> = readings.keys().cloned().collect();
        let until = app.clock.now() + Duration::seconds(STARTUP_GUARD_SECS);
        Ok(Runner {
            awaiting: (!waiting.is_empty()).then_some((until, waiting)),
            app,
            records,
            readings,
            evaluator,
        })
    }

    fn apply(&mut self, msg: EvalMsg) {
        match msg {
            EvalMsg::Reading(id, reading) => {
                if !self.records.contains_key(&id) {
                    self.refresh_record(&id);
                }
                self.readings.insert(id, reading);
            }
            EvalMsg::Connection(id) => {
                if self.app.agents.is_online(&id) {
                    if let Some((_, waiting)) = &mut self.awaiting {
                        waiting.remove(&id);
                    }
                }
            }
            EvalMsg::ClientChanged(id) => self.refresh_record(&id),
            EvalMsg::ClientDeleted(id) => {
                self.records.remove(&id);
                self.readings.remove(&id);
                if let Some((_, waiting)) = &mut self.awaiting {
                    waiting.remove(&id);
                }
            }
        }
    }

    fn refresh_record(&mut self, id: &str) {
        match clients::get(&self.app.db, id) {
            Ok(Some(record)) => {
                self.records.insert(id.to_owned(), record);
            }
            Ok(None) => {
                self.records.remove(id);
            }
            Err(e) => log::error!("Cannot read client {id} for the evaluator: {e}"),
        }
    }

    fn hosts(&self) -> Vec<HostView> {
        self.readings
            .iter()
            .filter_map(|(id, reading)| {
                Some(HostView::new(
                    self.records.get(id)?,
                    reading,
                    self.app.agents.is_online(id),
                ))
            })
            .collect()
    }

    fn run(&mut self, inbox: &Receiver<EvalMsg>, shutdown: &Shutdown) {
        let clock = self.app.clock.clone();
        let mut wake_at: Option<DateTime<Utc>> = None;
        while !shutdown.is_set() {
            let now = clock.now();
            // Real waits stay short so a driven clock is noticed; the clock decides.
            let wait = wake_at.map_or(std::time::Duration::from_millis(500), |w| {
                (w - now)
                    .to_std()
                    .unwrap_or_default()
                    .min(std::time::Duration::from_millis(500))
            });
            let mut changed =
                match inbox.recv_timeout(wait.max(std::time::Duration::from_millis(1))) {
                    Ok(msg) => {
                        self.apply(msg);
                        true
                    }
                    Err(RecvTimeoutError::Timeout) => false,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
            for msg in inbox.try_iter() {
                self.apply(msg);
                changed = true;
            }
            let now = clock.now();
            if let Some((until, waiting)) = &self.awaiting {
                if waiting.is_empty() || now >= *until {
                    log::info!(
                        "Cluster evaluation starts ({} clients did not reconnect)",
                        waiting.len()
                    );
                    self.awaiting = None;
                    changed = true;
                } else {
                    continue;
                }
            }
            if !changed && wake_at.is_none_or(|w| now < w) {
                continue;
            }
            wake_at = self.evaluate(now);
        }
    }

    fn evaluate(&mut self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let clusters = group(&self.hosts());
        let Some(outcome) = contain_panics(|| self.evaluator.evaluate(&clusters, now)) else {
            log::error!("The cluster evaluation panicked; it is tried again with the next change");
            return None;
        };
        let app = &self.app;
        for id in &outcome.requests {
            app.agents.send(
                id,
                ToSocket::Text(envelope("REQUEST_STATE_UPDATE", json!({}))),
            );
        }
        app.record_activity(outcome.events);
        let states: Vec<(String, Option<String>)> = outcome
            .changed
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    self.evaluator.confirmed(k).map(|c| c.to_json().to_string()),
                )
            })
            .chain(outcome.removed.iter().map(|k| (k.clone(), None)))
            .collect();
        if !states.is_empty() {
            let at = iso(now);
            let saved = app.db.write(move |c| {
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
                Ok::<_, DbError>(())
            });
            if let Err(e) = saved {
                log::error!("Cannot store the confirmed cluster states: {e}");
            }
        }
        outcome.wake_at
    }
}
