//! The data directory: identity.json, keepalived-last.json and queue.json.
//!
//! Owns the on-disk rules: the directory is 0700 (set at every start), files are 0600,
//! every write is atomic and synced (temporary file, fsync, rename, fsync of the
//! directory). A damaged scratch file (last reading, queue) is discarded; a damaged
//! identity is renamed `identity.json.corrupt-<timestamp>` and the agent starts
//! unregistered.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vrrp_protocol::ActivityEvent;

use crate::reader::events::Baseline;

pub const IDENTITY: &str = "identity.json";
pub const LAST_READING: &str = "keepalived-last.json";
pub const QUEUE: &str = "queue.json";

/// The pair the server issued at registration. The token is a secret: `Debug` masks it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    pub client_id: String,
    pub auth_token: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("client_id", &self.client_id)
            .field("auth_token", &"***")
            .finish()
    }
}

/// What reading the identity file found.
#[derive(Debug)]
pub enum IdentityLoad {
    Missing,
    Found(Identity),
    /// The file was damaged and has been moved aside to this path.
    Corrupt {
        moved_to: PathBuf,
        reason: String,
    },
}

#[derive(Debug, Clone)]
pub struct DataDir {
    dir: PathBuf,
}

impl DataDir {
    /// Creates the directory if needed and sets it to 0700.
    pub fn open(dir: &Path) -> io::Result<DataDir> {
        vrrp_fs::ensure_private_dir(dir)?;
        Ok(DataDir {
            dir: dir.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn load_identity(&self, now_stamp: &str) -> io::Result<IdentityLoad> {
        let path = self.file(IDENTITY);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(IdentityLoad::Missing),
            Err(e) => return Err(e),
        };
        let reason = match serde_json::from_slice::<Identity>(&text) {
            Ok(id) if !id.client_id.is_empty() && !id.auth_token.is_empty() => {
                return Ok(IdentityLoad::Found(id))
            }
            Ok(_) => "clientId or authToken is empty".to_string(),
            Err(e) => format!("does not parse as the clientId/authToken pair: {e}"),
        };
        let moved_to = self.file(&format!("{IDENTITY}.corrupt-{now_stamp}"));
        fs::rename(&path, &moved_to)?;
        Ok(IdentityLoad::Corrupt { moved_to, reason })
    }

    pub fn save_identity(&self, id: &Identity) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(id).map_err(io::Error::other)?;
        vrrp_fs::write_private_atomic(&self.file(IDENTITY), &bytes)
    }

    /// The baseline for change detection, or `None` (missing or damaged: discarded).
    pub fn load_baseline(&self) -> Result<Option<Baseline>, String> {
        load_scratch(&self.file(LAST_READING))
    }

    pub fn save_baseline(&self, b: &Baseline) -> io::Result<()> {
        let bytes = serde_json::to_vec(b).map_err(io::Error::other)?;
        vrrp_fs::write_private_atomic(&self.file(LAST_READING), &bytes)
    }

    /// Queued events, or an empty queue when the file is missing or damaged.
    pub fn load_queue(&self) -> Result<Vec<ActivityEvent>, String> {
        Ok(load_scratch::<QueueFile>(&self.file(QUEUE))?
            .map(|q| q.events)
            .unwrap_or_default())
    }

    pub fn save_queue(&self, events: &[ActivityEvent]) -> io::Result<()> {
        let bytes = serde_json::to_vec(&QueueFileRef { events }).map_err(io::Error::other)?;
        vrrp_fs::write_private_atomic(&self.file(QUEUE), &bytes)
    }
}

#[derive(Deserialize)]
struct QueueFile {
    events: Vec<ActivityEvent>,
}

#[derive(Serialize)]
struct QueueFileRef<'a> {
    events: &'a [ActivityEvent],
}

/// Reads a scratch file. Missing gives `Ok(None)`; damaged gives `Err(reason)` after the
/// file has been removed, so the damage is reported once.
fn load_scratch<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, String> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            let _ = fs::remove_file(path);
            Err(format!(
                "{} is damaged and was discarded: {e}",
                path.display()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn modes_and_atomic_write() {
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(&tmp.path().join("data")).unwrap();
        let mode = fs::metadata(d.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        d.save_queue(&[]).unwrap();
        let mode = fs::metadata(d.path().join(QUEUE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(QUEUE)]);
    }

    #[test]
    fn damaged_scratch_is_discarded_and_identity_moved_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(tmp.path()).unwrap();
        fs::write(d.path().join(QUEUE), b"{\"events\": [").unwrap();
        assert!(d.load_queue().is_err());
        assert!(!d.path().join(QUEUE).exists());
        assert!(d.load_queue().unwrap().is_empty());

        fs::write(d.path().join(IDENTITY), b"{\"clientId\": \"x\"}").unwrap();
        match d.load_identity("20261121T000000Z").unwrap() {
            IdentityLoad::Corrupt { moved_to, .. } => {
                assert!(moved_to.ends_with("identity.json.corrupt-20261121T000000Z"));
                assert!(moved_to.exists());
            }
            other => panic!("expected corrupt, got {other:?}"),
        }
        assert!(matches!(
            d.load_identity("x").unwrap(),
            IdentityLoad::Missing
        ));
        let id = Identity {
            client_id: "c".into(),
            auth_token: "secret-token".into(),
        };
        d.save_identity(&id).unwrap();
        assert!(matches!(d.load_identity("x").unwrap(), IdentityLoad::Found(i) if i == id));
        assert!(!format!("{id:?}").contains("secret-token"));
    }
}
