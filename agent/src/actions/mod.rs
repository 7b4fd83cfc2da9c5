//! Host actions: the server's HOST_ACTION, carried out on this host. There is one
//! kind of action, and it is opt-in: draining the host through keepalived's own
//! `track_file` (write `1` into the file `actions.drainFile` names; keepalived lowers
//! the priority by the tracked weight and a backup takes over) and undraining it
//! (write `0`). That is all an action may do: no restart, no reload, no command, no
//! other path than that file and `drain.json` in the data directory (`files`).
//!
//! Without `actions.drainFile` every action is refused with
//! [`vrrp_protocol::actions::ACTIONS_DISABLED`] and readings carry no `drain`.
//!
//! Run by the `ka-reader` thread (`Drainer` is the reader's), so actions and readings
//! take turns: the reading after an action is taken after it, and carries its drain.
//! `drain` holds the pure rules, `files` the two files.

pub mod drain;
pub mod files;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
use vrrp_protocol::actions::{request_id, HostActionKind, ACTIONS_DISABLED};
use vrrp_protocol::{escape_controls, DrainState, HostAction, HostActionResult};

use drain::{StoredDrain, DRAINED, UNDRAINED};

/// The `actions` block of config.yaml.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActionsConfig {
    /// The one file a drain writes, as the agent sees it (on the host: the `file` of
    /// keepalived's `track_file`). `None`: actions are disabled.
    pub drain_file: Option<PathBuf>,
}

/// Reads the `actions` block: `drainFile` must be an absolute path to a file (no
/// `.` or `..` in it, not inside the agent's data directory).
pub fn config_block(block: Option<&Yaml>, data_dir: &Path) -> Result<ActionsConfig, String> {
    let m = match block {
        None | Some(Yaml::Null) => return Ok(ActionsConfig::default()),
        Some(Yaml::Mapping(m)) => m,
        Some(_) => return Err("actions: must be a mapping (with drainFile)".into()),
    };
    let drain_file = match m.get("drainFile") {
        None | Some(Yaml::Null) => None,
        Some(Yaml::String(s)) => {
            let p = PathBuf::from(s);
            // Every segment a name: no `.`, `..`, `//` or trailing `/`.
            let plain = s.starts_with('/')
                && !s.contains('\0')
                && s[1..]
                    .split('/')
                    .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
            if !plain {
                return Err(format!(
                    "actions.drainFile: '{}' is not an absolute path to a file (no . or .. in it)",
                    escape_controls(s)
                ));
            }
            if p.starts_with(data_dir) {
                return Err(format!(
                    "actions.drainFile: '{s}' is inside the agent's data directory; use the path keepalived's track_file names"
                ));
            }
            Some(p)
        }
        Some(_) => return Err("actions.drainFile: must be a path (a string)".into()),
    };
    Ok(ActionsConfig { drain_file })
}

/// A HOST_ACTION carried out: its answer, for the connection whose `token` it is.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionDone {
    pub token: u64,
    pub result: HostActionResult,
}

/// The drain file, the drain the agent made, and what was last logged about the file.
pub struct Drainer {
    file: PathBuf,
    data_dir: PathBuf,
    stored: Option<StoredDrain>,
    /// The last problem with the drain file that was logged (once per streak).
    problem: Option<String>,
}

impl Drainer {
    /// The drainer of `file`, with the drain kept in `data_dir` (if any).
    pub fn open(file: PathBuf, data_dir: &Path) -> Drainer {
        let (stored, problem) = files::load_state(data_dir);
        if let Some(p) = problem {
            log::warn!("{p}");
        }
        Drainer {
            file,
            data_dir: data_dir.to_path_buf(),
            stored,
            problem: None,
        }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The host's drain now, as the file says (a file that cannot be read is read as
    /// keepalived reads it: 0; the problem is logged once per streak).
    pub fn state(&mut self) -> DrainState {
        let seen = match files::look(&self.file) {
            Ok(seen) => {
                if self.problem.take().is_some() {
                    log::info!("The drain file {} can be read again", self.file.display());
                }
                seen
            }
            Err(e) => {
                if self.problem.as_deref() != Some(e.as_str()) {
                    log::warn!("Drain file: {e}; the host reads as not drained");
                    self.problem = Some(e);
                }
                None
            }
        };
        drain::state(seen.as_ref(), self.stored.as_ref())
    }

    /// Drains or undrains; `Err` when the host is not in the state asked for, `Ok`
    /// with a remark when it is but the drain's story could not be kept.
    fn perform(
        &mut self,
        kind: HostActionKind,
        request: &HostAction,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, String> {
        files::replaceable(&self.file)?;
        let shown = self.file.display().to_string();
        match kind {
            HostActionKind::Drain => {
                // A drained host stays drained since it first was; the story is the new one.
                let before = self.state();
                let since = before
                    .since
                    .filter(|_| before.drained)
                    .unwrap_or_else(|| drain::iso(now));
                let file = files::write_drain_file(&self.file, DRAINED)
                    .map_err(|e| format!("cannot write {shown}: {e}{}", files::write_hint(&e)))?;
                let stored = StoredDrain {
                    reason: request.reason.clone(),
                    by: request.by.clone(),
                    since,
                    file,
                };
                let saved = files::save_state(&self.data_dir, &stored);
                self.stored = Some(stored);
                Ok(saved.err().map(|e| {
                    format!(
                        "drained, but the drain's reason could not be stored ({e}); after a restart the agent reports it as drained outside vrrp-monitor"
                    )
                }))
            }
            HostActionKind::Undrain => {
                files::write_drain_file(&self.file, UNDRAINED)
                    .map_err(|e| format!("cannot write {shown}: {e}{}", files::write_hint(&e)))?;
                self.stored = None;
                Ok(files::remove_state(&self.data_dir)
                    .err()
                    .map(|e| format!("undrained, but the stored drain could not be removed ({e})")))
            }
        }
    }
}

/// The answer to one HOST_ACTION payload (whose `id` the session checked). With no
/// drainer every action is refused; otherwise a request that breaks the rules is
/// refused, and a valid one carried out. `drain` is read back afterwards.
pub fn answer(
    drainer: Option<&mut Drainer>,
    payload: &Value,
    now: DateTime<Utc>,
) -> HostActionResult {
    let id = request_id(payload).unwrap_or_default().to_string();
    let Some(drainer) = drainer else {
        log::info!("Host action refused: actions are disabled (no actions.drainFile)");
        return HostActionResult {
            id,
            ok: false,
            error: Some(ACTIONS_DISABLED.into()),
            drain: DrainState::default(),
        };
    };
    let checked = serde_json::from_value::<HostAction>(payload.clone())
        .map_err(|e| format!("the HOST_ACTION payload does not parse: {e}"))
        .and_then(|request| request.check().map(|kind| (kind, request)));
    let (kind, request) = match checked {
        Ok(k) => k,
        Err(e) => {
            log::warn!(
                "Host action {} refused: {}",
                escape_controls(&id),
                escape_controls(&e)
            );
            return HostActionResult {
                id,
                ok: false,
                error: Some(e),
                drain: drainer.state(),
            };
        }
    };
    let outcome = drainer.perform(kind, &request, now);
    let drain = drainer.state();
    let wanted = kind == HostActionKind::Drain;
    let (ok, error) = match outcome {
        Ok(remark) if drain.drained == wanted => (true, remark),
        Ok(_) => (
            false,
            Some(format!(
                "{} was written, but reads back as {}",
                drainer.file().display(),
                if drain.drained {
                    "drained"
                } else {
                    "not drained"
                }
            )),
        ),
        Err(e) => (false, Some(e)),
    };
    let line = format!(
        "Host action {} ({}) asked by {} (reason: {:?}): {}",
        request.action,
        escape_controls(&id),
        escape_controls(&request.by),
        request.reason,
        match &error {
            None => "done".to_string(),
            Some(e) => e.clone(),
        }
    );
    if ok && error.is_none() {
        log::info!("{line}");
    } else {
        log::warn!("{line}");
    }
    HostActionResult {
        id,
        ok,
        error,
        drain,
    }
}

#[cfg(test)]
mod tests;
