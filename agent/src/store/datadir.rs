//! The data directory: identity.json, keepalived-last.json, queue.json and, for an
//! agent registered with more than one server, servers.json.
//!
//! identity.json and the config's `serverUrl` stay the first server's, exactly as for a
//! one-server agent; servers.json (0600, holds tokens) lists the servers registered
//! after it, each with its own identity and, when the agent dials it, its URL. queue.json
//! gains an `acked` map only while some server has acknowledged an event another has
//! not, so an older data directory loads unchanged and a one-server agent writes the
//! same bytes as before.
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

use std::collections::BTreeMap;

use crate::reader::events::Baseline;
use crate::store::queue::{Acked, QueueState};

pub const IDENTITY: &str = "identity.json";
pub const LAST_READING: &str = "keepalived-last.json";
pub const QUEUE: &str = "queue.json";
pub const SERVERS: &str = "servers.json";

/// A server registered after the first (servers.json). `server_url` set: the agent
/// dials it (inbound); unset: that server dials the agent (outbound).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtraServer {
    #[serde(flatten)]
    pub identity: Identity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_url: Option<String>,
}

impl std::fmt::Debug for ExtraServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtraServer")
            .field("identity", &self.identity)
            .field("server_url", &self.server_url)
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
struct ServersFile {
    servers: Vec<ExtraServer>,
}

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

    /// The servers registered after the first. A damaged file is moved aside like a
    /// damaged identity (those servers must register the agent again); the error says so.
    pub fn load_servers(&self, now_stamp: &str) -> Result<Vec<ExtraServer>, String> {
        let path = self.file(SERVERS);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let reason = match serde_json::from_slice::<ServersFile>(&text) {
            Ok(f)
                if f.servers.iter().all(|s| {
                    !s.identity.client_id.is_empty() && !s.identity.auth_token.is_empty()
                }) =>
            {
                return Ok(f.servers)
            }
            Ok(_) => "a clientId or authToken is empty".to_string(),
            Err(e) => format!("does not parse: {e}"),
        };
        let moved_to = self.file(&format!("{SERVERS}.corrupt-{now_stamp}"));
        fs::rename(&path, &moved_to).map_err(|e| format!("{}: {e}", path.display()))?;
        Err(format!(
            "{SERVERS} is damaged ({reason}); moved to {} and the servers in it are forgotten",
            moved_to.display()
        ))
    }

    pub fn save_servers(&self, servers: &[ExtraServer]) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(&ServersFile {
            servers: servers.to_vec(),
        })
        .map_err(io::Error::other)?;
        vrrp_fs::write_private_atomic(&self.file(SERVERS), &bytes)
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
        Ok(self.load_queue_state()?.events)
    }

    /// Queued events with the per-server acknowledgements (none in an older file).
    pub fn load_queue_state(&self) -> Result<QueueState, String> {
        Ok(load_scratch::<QueueFile>(&self.file(QUEUE))?
            .map(|q| QueueState {
                events: q.events,
                acked: q.acked,
            })
            .unwrap_or_default())
    }

    pub fn save_queue(&self, events: &[ActivityEvent]) -> io::Result<()> {
        self.save_queue_state(events, &Acked::new())
    }

    pub fn save_queue_state(&self, events: &[ActivityEvent], acked: &Acked) -> io::Result<()> {
        let bytes =
            serde_json::to_vec(&QueueFileRef { events, acked }).map_err(io::Error::other)?;
        vrrp_fs::write_private_atomic(&self.file(QUEUE), &bytes)
    }
}

#[derive(Deserialize)]
struct QueueFile {
    events: Vec<ActivityEvent>,
    #[serde(default)]
    acked: Acked,
}

#[derive(Serialize)]
struct QueueFileRef<'a> {
    events: &'a [ActivityEvent],
    /// Left out when empty: a one-server agent's file is exactly the older format.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    acked: &'a Acked,
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
    fn the_baseline_on_disk_holds_no_password() {
        use vrrp_protocol::{AuthPassword, Reading, VrrpInstance};
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(&tmp.path().join("data")).unwrap();
        let b = Baseline {
            reading: Reading {
                running: true,
                instances: vec![VrrpInstance {
                    name: "VI_1".into(),
                    auth_type: Some("pass".into()),
                    auth_password: Some(AuthPassword::new("s3cr3t51")),
                    ..Default::default()
                }],
                ..Default::default()
            },
            ..Default::default()
        };
        d.save_baseline(&b).unwrap();
        let text = fs::read_to_string(d.path().join(LAST_READING)).unwrap();
        assert!(
            text.contains("\"authType\":\"pass\"") && !text.contains("s3cr3t51"),
            "{text}"
        );
        // Read back, it has none: change detection (the events) never looks at it.
        let back = d.load_baseline().unwrap().unwrap();
        assert_eq!(back.reading.instances[0].auth_password, None);
    }

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
    fn an_older_queue_file_loads_and_one_server_writes_the_same_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(tmp.path()).unwrap();
        // queue.json as one-server agents wrote it.
        let old = br#"{"events":[{"id":"e1","occurredAt":"2026-11-20T10:00:00.000Z","kind":"keepalived.started","level":"info"}]}"#;
        fs::write(d.path().join(QUEUE), old).unwrap();
        let st = d.load_queue_state().unwrap();
        assert_eq!(st.events.len(), 1);
        assert!(st.acked.is_empty());
        d.save_queue_state(&st.events, &st.acked).unwrap();
        let again = fs::read_to_string(d.path().join(QUEUE)).unwrap();
        assert!(again.starts_with(r#"{"events":[{"id":"e1""#), "{again}");
        assert!(!again.contains("acked"), "{again}");
        // With a second server's acknowledgements they are kept.
        let acked: Acked = [("A".to_string(), ["e1".to_string()].into())].into();
        d.save_queue_state(&st.events, &acked).unwrap();
        assert_eq!(d.load_queue_state().unwrap().acked, acked);
    }

    #[test]
    fn servers_file_is_private_and_a_damaged_one_is_moved_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(tmp.path()).unwrap();
        assert!(d.load_servers("x").unwrap().is_empty());
        let s = ExtraServer {
            identity: Identity {
                client_id: "c2".into(),
                auth_token: "tok-2-secret".into(),
            },
            server_url: Some("http://b:3010".into()),
        };
        d.save_servers(std::slice::from_ref(&s)).unwrap();
        let mode = fs::metadata(d.path().join(SERVERS))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(d.load_servers("x").unwrap(), std::slice::from_ref(&s));
        assert!(!format!("{s:?}").contains("tok-2-secret"));
        fs::write(d.path().join(SERVERS), b"{").unwrap();
        assert!(d.load_servers("20261127T000000Z").is_err());
        assert!(d
            .path()
            .join("servers.json.corrupt-20261127T000000Z")
            .exists());
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
