//! `vrrp-monitor backup <file>`: a consistent copy of the database while the
//! server runs, through SQLite's online backup API.
//!
//! All pages are copied in one step, so the copy is one read transaction's view:
//! a write the server commits meanwhile is either wholly in it or not at all (in
//! WAL mode the server's writer is not held up by it). The copy is written to a
//! temporary file beside the target, checked (`PRAGMA quick_check`), switched to
//! a rollback journal so it is one self-contained file, made 0600 and renamed
//! into place: an existing backup is only ever replaced by a complete one.

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

/// Every page in one step (`-1`): one read transaction, so one consistent view.
/// A busy or locked source (a checkpoint under way) is tried again, for at most
/// 10 s.
fn copy_all(src: &Connection, dst: &mut Connection) -> rusqlite::Result<()> {
    let backup = Backup::new(src, dst)?;
    let mut waits = 0;
    loop {
        match backup.step(-1)? {
            StepResult::Done => return Ok(()),
            StepResult::More => {}
            _ if waits < 200 => {
                waits += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("the database stayed busy for 10 s".into()),
                ))
            }
        }
    }
}

/// Copies the database at `source` to `target`; returns the copy's size.
pub fn backup(source: &Path, target: &Path) -> Result<u64, String> {
    if !source.is_file() {
        return Err(format!("no database at {}", source.display()));
    }
    let src = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", source.display()))?;
    src.busy_timeout(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let name = target
        .file_name()
        .ok_or_else(|| format!("{} is not a file name", target.display()))?;
    let partial = target.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    let _ = std::fs::remove_file(&partial);
    let copied = (|| -> Result<(), String> {
        let mut dst = Connection::open(&partial)
            .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
        copy_all(&src, &mut dst).map_err(|e| format!("backup failed: {e}"))?;
        let check: String = dst
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| format!("cannot check the copy: {e}"))?;
        if check != "ok" {
            return Err(format!("the copy does not pass quick_check: {check}"));
        }
        dst.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
            .map_err(|e| format!("cannot finish the copy: {e}"))?;
        dst.close().map_err(|(_, e)| e.to_string())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| e.to_string())?;
        std::fs::File::open(&partial)
            .and_then(|f| f.sync_all())
            .map_err(|e| e.to_string())?;
        std::fs::rename(&partial, target)
            .map_err(|e| format!("cannot write {}: {e}", target.display()))
    })();
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::metadata(target)
        .map(|m| m.len())
        .map_err(|e| e.to_string())
}
