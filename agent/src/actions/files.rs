//! The two files a drain touches, and nothing else: the drain file itself (the one
//! path `actions.drainFile` names, written whole through a temporary file beside it)
//! and `drain.json` in the agent's data directory (the drain's reason, who and since).
//!
//! The drain file is keepalived's `track_file`: keepalived (root) only reads it, so it
//! is written 0644, atomically (temporary file in the same directory, fsync, rename,
//! fsync of the directory: keepalived, watching the directory with inotify, sees one
//! complete file move in). The path is never followed through a symbolic link, and
//! something at it that is not a regular file is left alone. `drain.json` is written
//! like the agent's other state files (0600, `vrrp_fs::write_private_atomic`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::drain::{file_value, FileId, Seen, StoredDrain, READ_MAX};

/// The drain's story in the data directory.
pub const STATE_FILE: &str = "drain.json";

/// Mode of the drain file: keepalived only reads it.
const MODE: u32 = 0o644;

/// The drain file as it is now: `Ok(None)` when there is none; an error when it
/// cannot be read or is no regular file (keepalived reads either as 0).
pub fn look(path: &Path) -> Result<Option<Seen>, String> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(format!("{} is a symbolic link", path.display()))
        }
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let md = file
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !md.file_type().is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mut bytes = Vec::with_capacity(READ_MAX);
    file.take(READ_MAX as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(Some(Seen {
        value: file_value(&bytes),
        id: FileId::of(&md),
    }))
}

/// Whether `path` may be replaced: nothing there, or a regular file (never a
/// symbolic link, a directory or a device).
pub fn replaceable(path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot look at {}: {e}", path.display())),
        Ok(md) if md.file_type().is_file() => Ok(()),
        Ok(md) if md.file_type().is_symlink() => Err(format!(
            "{} is a symbolic link; give actions.drainFile the path keepalived's track_file names",
            path.display()
        )),
        Ok(_) => Err(format!("{} is not a regular file", path.display())),
    }
}

/// The temporary file a write of `path` goes through: beside it, hidden, ours.
fn temporary(path: &Path) -> io::Result<(PathBuf, PathBuf)> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .ok_or_else(|| io::Error::other("the drain file has no directory"))?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("the drain file has no name"))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.vrrp-agent-{}.tmp", std::process::id()));
    Ok((dir.to_path_buf(), tmp))
}

/// What a refused write of the drain file means. The agent runs as its own user and
/// writes the file through a temporary file beside it, so it needs the directory, not
/// the file: no capability it holds (CAP_DAC_READ_SEARCH reads, never writes) stands
/// in for owning the directory.
pub fn write_hint(e: &io::Error) -> &'static str {
    if e.kind() == io::ErrorKind::PermissionDenied {
        " — the drain file's directory must belong to the agent's user (install -d -m 0755 -o vrrp-agent -g vrrp-agent DIR; see the host guide)"
    } else {
        ""
    }
}

/// Replaces the drain file with `bytes` (0644), atomically; gives the file written.
pub fn write_drain_file(path: &Path, bytes: &[u8]) -> io::Result<FileId> {
    let (dir, tmp) = temporary(path)?;
    // Left behind by a write that was cut short (our own name, our own pid).
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        // create_new: O_EXCL, so nothing that appeared at the name is followed.
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(MODE)
            .open(&tmp)?;
        // The mode given to open() is filtered by the umask (the unit's is 077).
        f.set_permissions(fs::Permissions::from_mode(MODE))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        let id = FileId::of(&f.metadata()?);
        fs::rename(&tmp, path)?;
        File::open(&dir)?.sync_all()?;
        Ok(id)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The stored drain, bounded; `None` when there is none. A damaged file is removed
/// (the drain then reads as made outside vrrp-monitor) and reported once.
pub fn load_state(data_dir: &Path) -> (Option<StoredDrain>, Option<String>) {
    let path = data_dir.join(STATE_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (None, None),
        Err(e) => return (None, Some(format!("{}: {e}", path.display()))),
    };
    match serde_json::from_slice::<StoredDrain>(&bytes) {
        Ok(s) => (Some(s.bounded()), None),
        Err(e) => {
            let _ = fs::remove_file(&path);
            (
                None,
                Some(format!(
                    "{} is damaged and was discarded: {e}",
                    path.display()
                )),
            )
        }
    }
}

pub fn save_state(data_dir: &Path, stored: &StoredDrain) -> io::Result<()> {
    let bytes = serde_json::to_vec(stored).map_err(io::Error::other)?;
    vrrp_fs::write_private_atomic(&data_dir.join(STATE_FILE), &bytes)
}

pub fn remove_state(data_dir: &Path) -> io::Result<()> {
    match fs::remove_file(data_dir.join(STATE_FILE)) {
        Ok(()) => File::open(data_dir)?.sync_all(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn the_drain_file_is_replaced_whole_0644_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("drain");
        assert_eq!(look(&path), Ok(None));
        // (The mode under the unit's umask 077: the e2e test starts the agent so.)
        let id = write_drain_file(&path, b"1\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"1\n");
        let md = fs::metadata(&path).unwrap();
        assert_eq!(md.mode() & 0o777, 0o644);
        assert_eq!(names(tmp.path()), ["drain"], "no temporary left");
        let seen = look(&path).unwrap().unwrap();
        assert_eq!((seen.value, seen.id), (Some(1), id));
        let again = write_drain_file(&path, b"0\n").unwrap();
        assert_ne!(again.ino, id.ino, "a new file moved in");
        assert_eq!(look(&path).unwrap().unwrap().value, Some(0));
    }

    #[test]
    fn a_link_or_a_directory_is_never_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        fs::write(&target, "keep\n").unwrap();
        let link = tmp.path().join("drain");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(look(&link).unwrap_err().contains("symbolic link"));
        assert!(replaceable(&link).unwrap_err().contains("symbolic link"));
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
        let dir = tmp.path().join("d");
        fs::create_dir(&dir).unwrap();
        assert!(look(&dir).unwrap_err().contains("not a regular file"));
        assert!(replaceable(&dir).is_err());
        assert!(replaceable(&tmp.path().join("none")).is_ok());
        // No directory: the write fails and leaves nothing.
        let missing = tmp.path().join("no-such-dir/drain");
        assert!(write_drain_file(&missing, b"1\n").is_err());
    }

    #[test]
    fn the_stored_drain_round_trips_and_a_damaged_one_is_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(load_state(tmp.path()), (None, None));
        let s = StoredDrain {
            reason: "drill".into(),
            by: "alice".into(),
            since: "2026-11-21T08:46:00.000Z".into(),
            file: FileId {
                dev: 1,
                ino: 2,
                mtime_sec: 3,
                mtime_nsec: 4,
            },
        };
        save_state(tmp.path(), &s).unwrap();
        let md = fs::metadata(tmp.path().join(STATE_FILE)).unwrap();
        assert_eq!(md.mode() & 0o777, 0o600);
        assert_eq!(load_state(tmp.path()), (Some(s), None));
        remove_state(tmp.path()).unwrap();
        remove_state(tmp.path()).unwrap();
        fs::write(tmp.path().join(STATE_FILE), "{").unwrap();
        let (none, problem) = load_state(tmp.path());
        assert!(none.is_none() && problem.unwrap().contains("damaged"));
        assert!(!tmp.path().join(STATE_FILE).exists());
    }
}
