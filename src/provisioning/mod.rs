//! Configuration as files (like Grafana's provisioning): webhooks, settings
//! (level overrides among them) and silences read from `provisioning/*.yaml`
//! beside the config file, at start and on SIGHUP.
//!
//! - `lines` and `parse` are pure: a file's text into what it defines, checked
//!   by the API's own rules, every error `file:line: message`; the files of the
//!   directory merged into one [`Provisioned`].
//! - `read` reads the directory (the only file reading after start) and
//!   checks the set ([`read::load`]).
//! - `apply` brings the server in line with a set: webhooks and silences by a
//!   name-derived id, settings as a layer over the config file's; the same files
//!   twice change nothing. It runs at start and on the `provisioning` thread.
//!
//! A set is applied only whole: one file that does not parse or validate keeps
//! the running configuration, says why in the log and in [`Status`]. What a
//! file defines the API refuses to change.

pub mod apply;
mod lines;
pub mod parse;
pub mod read;

use crate::activity::silences::provisioned::Wanted as WantedSilence;
use crate::webhooks::provisioned::Wanted as WantedWebhook;
use parking_lot::RwLock;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The directory's name beside the config file.
pub const DIR: &str = "provisioning";
/// A file larger than this is refused (a provisioning file is a few KiB).
pub const FILE_MAX: u64 = 1024 * 1024;

/// The provisioning directory of a config file: `provisioning/` beside it.
pub fn dir_of(config_path: &Path) -> PathBuf {
    config_path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(DIR)
}

/// Why a set of files was not applied: the file, the line when known.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvisionError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl ProvisionError {
    pub fn new(file: &str, line: Option<usize>, message: String) -> ProvisionError {
        ProvisionError {
            file: file.to_owned(),
            line,
            message,
        }
    }
}

impl fmt::Display for ProvisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Everything the files define, checked.
#[derive(Debug, Default)]
pub struct Provisioned {
    pub webhooks: Vec<WantedWebhook>,
    /// key → (validated value, file).
    pub settings: BTreeMap<String, (Value, String)>,
    pub silences: Vec<WantedSilence>,
    /// The files read, in name order.
    pub files: Vec<String>,
}

/// The outcome of the last reading, as `GET /api/v1/settings/provisioning`
/// shows it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The directory read.
    pub directory: String,
    /// Whether the last reading was applied.
    pub ok: bool,
    /// When and why the files were last read ("start" or "SIGHUP").
    pub last_attempt_at: Option<String>,
    pub last_trigger: Option<String>,
    /// Why the last reading was not applied (`file:line: message`).
    pub error: Option<String>,
    /// When the configuration in force was applied, and its files.
    pub applied_at: Option<String>,
    pub files: Vec<String>,
    /// What the last applied reading changed (empty: nothing).
    pub changes: Vec<String>,
}

/// The provisioning state every reader shares: the directory and [`Status`].
pub struct Provisioning {
    pub dir: PathBuf,
    status: RwLock<Status>,
}

impl Provisioning {
    pub fn new(dir: PathBuf) -> Provisioning {
        let status = Status {
            directory: dir.display().to_string(),
            ..Status::default()
        };
        Provisioning {
            dir,
            status: RwLock::new(status),
        }
    }

    pub fn status(&self) -> Status {
        self.status.read().clone()
    }

    fn set_status(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.write());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_file_and_line() {
        let e = ProvisionError::new("webhooks.yaml", Some(7), "url: bad".into());
        assert_eq!(e.to_string(), "webhooks.yaml:7: url: bad");
        let e = ProvisionError::new("big.yaml", None, "is larger than 1 MiB".into());
        assert_eq!(e.to_string(), "big.yaml: is larger than 1 MiB");
        assert_eq!(
            dir_of(Path::new("/etc/vrrp-monitor/config.yaml")),
            PathBuf::from("/etc/vrrp-monitor/provisioning")
        );
    }
}
