//! Applying a set of provisioning files, at start and on the `provisioning`
//! thread (one reading per SIGHUP): webhooks and silences in line with the
//! files (each in one write), settings as the layer over the config file's,
//! the schedulers woken when theirs changed, and one audit entry (actor
//! `provisioning`, via `cli`) when anything changed. Nothing changes when the
//! files did not, so a reading without changes leaves no entry.

use super::read::load;
use super::{Provisioned, Provisioning};
use crate::activity::event::Recorder;
use crate::activity::silences::Silences;
use crate::audit::{self, Actor, Note, Via};
use crate::clock::{iso, SharedClock};
use crate::config::settings::{Settings, HISTORY_RETENTION_KEY};
use crate::db::Db;
use crate::lifecycle::Shutdown;
use crate::schedulers::Scheduler;
use crate::webhooks::live::Webhooks;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// An audit summary is cut here (a file may define many things).
const SUMMARY_MAX: usize = 4000;

/// What applying uses.
#[derive(Clone)]
pub struct Handles {
    pub db: Arc<Db>,
    pub clock: SharedClock,
    pub settings: Arc<Settings>,
    pub silences: Arc<Silences>,
    /// Where `silence.created` goes.
    pub activity: Arc<dyn Recorder>,
    /// The webhook definitions the dispatcher holds: a file's change replaces them.
    pub webhooks: Arc<Webhooks>,
    /// `webhooks.allowed_networks`: a file's webhook meets the API's target rule.
    pub allowed_networks: Vec<ipnet::IpNet>,
    pub state: Arc<Provisioning>,
}

/// The schedulers a settings change wakes (absent at start: they read the
/// settings when they start).
#[derive(Clone, Default)]
pub struct Wake {
    pub token_cleanup: Option<Arc<Scheduler>>,
    pub notification_cleanup: Option<Arc<Scheduler>>,
}

/// Applies a checked set; one sentence per change.
pub fn apply(h: &Handles, set: Provisioned, wake: &Wake) -> Result<Vec<String>, String> {
    let now = h.clock.utc();
    let mut changes = h
        .webhooks
        .sync_provisioned(set.webhooks, now)
        .map_err(|e| format!("cannot store the webhooks: {e}"))?;
    let settings = h.settings.provision(set.settings);
    if settings.iter().any(|(k, _)| k.starts_with("token_")) {
        if let Some(s) = &wake.token_cleanup {
            s.wake();
        }
    }
    if settings
        .iter()
        .any(|(k, _)| k.starts_with("notification_") || k == HISTORY_RETENTION_KEY)
    {
        if let Some(s) = &wake.notification_cleanup {
            s.wake();
        }
    }
    changes.extend(settings.into_iter().map(|(_, sentence)| sentence));
    changes.extend(
        h.silences
            .provision(set.silences, now, h.activity.as_ref())
            .map_err(|e| format!("cannot store the silences: {e}"))?,
    );
    Ok(changes)
}

/// Reads the directory and applies it when every file is fine; the outcome
/// goes to the log, the status and (with changes) the audit log. `Err` with
/// the message when the set was not applied.
pub fn reload(h: &Handles, trigger: &str, wake: &Wake) -> Result<Vec<String>, String> {
    let at = iso(h.clock.utc());
    let outcome = load(&h.state.dir, &h.allowed_networks)
        .map_err(|e| e.to_string())
        .and_then(|set| {
            let files = set.files.clone();
            apply(h, set, wake).map(|changes| (files, changes))
        });
    match outcome {
        Ok((files, changes)) => {
            if changes.is_empty() {
                log::info!(
                    "Provisioning ({trigger}): {} file(s) in {} read, nothing changed",
                    files.len(),
                    h.state.dir.display()
                );
            } else {
                for change in &changes {
                    log::info!("Provisioning ({trigger}): {change}");
                }
                record(h, trigger, &changes);
            }
            h.state.set_status(|s| {
                s.ok = true;
                s.last_attempt_at = Some(at.clone());
                s.last_trigger = Some(trigger.to_owned());
                s.error = None;
                s.applied_at = Some(at);
                s.files = files;
                s.changes = changes.clone();
            });
            Ok(changes)
        }
        Err(message) => {
            h.state.set_status(|s| {
                s.ok = false;
                s.last_attempt_at = Some(at);
                s.last_trigger = Some(trigger.to_owned());
                s.error = Some(message.clone());
            });
            Err(message)
        }
    }
}

/// The one audit entry of a reading that changed something. Its sentences
/// name webhooks by name, method and masked URL, never headers.
fn record(h: &Handles, trigger: &str, changes: &[String]) {
    let mut summary = format!(
        "Provisioning files applied ({trigger}): {}",
        changes.join("; ")
    );
    if summary.chars().count() > SUMMARY_MAX {
        summary = summary.chars().take(SUMMARY_MAX).collect::<String>() + "…";
    }
    let actor = Actor {
        name: "provisioning".into(),
        via: Via::Cli,
        source_ip: None,
    };
    let note = Note::new("provisioning.applied", "provisioning", summary);
    let _ = audit::record(&h.db, &actor, note, h.clock.utc());
}

/// The `provisioning` thread: one reading per SIGHUP (asks that arrive while
/// one runs are one more reading). A panic costs that reading only.
pub fn run(h: Handles, wake: Wake, asks: Receiver<()>, shutdown: Shutdown) {
    loop {
        match asks.recv_timeout(Duration::from_millis(250)) {
            Ok(()) => {
                let outcome = crate::lifecycle::contain_panics(|| reload(&h, "SIGHUP", &wake));
                match outcome {
                    Some(Ok(_)) => {}
                    Some(Err(message)) => log::error!(
                        "Provisioning files not applied: {message}; the running configuration stays"
                    ),
                    None => log::error!(
                        "Provisioning files not applied (a panic, logged above); the running configuration stays"
                    ),
                }
            }
            Err(RecvTimeoutError::Timeout) if !shutdown.is_set() => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
