//! The notify FIFO watcher thread (`fifo-watch`): a trigger, nothing more.
//!
//! The FIFO is opened through `/proc/<keepalived pid>/root` for reading only, without
//! blocking: keepalived makes it root-owned and 0600, and an agent running as its own
//! user may read it (CAP_DAC_READ_SEARCH) but not write it, so it cannot hold a writer
//! end itself. When every writer has closed it (keepalived went away) a read sees
//! end-of-file and poll(2) would report the hang-up forever: the FIFO is then opened
//! afresh, and a new open end reports no hang-up until a writer has come and gone
//! again. Every 5 s the FIFO's inode and keepalived's PID are compared with the open
//! one; a change means a reopen and one reading. The agent never creates the FIFO. A
//! missing FIFO is logged once per streak and shown on the status page, and a FIFO
//! the agent is not allowed to open says which capability is missing. What a line says
//! is logged at debug level and otherwise ignored.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::keepalived;
use crate::reader::{FifoState, SharedStatus, Trigger, TriggerSource};

/// How often the FIFO's inode and keepalived's PID are checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Whether the periodic check is due (never checked: due).
pub fn check_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|l| now.saturating_duration_since(l) >= CHECK_EVERY)
}

/// What the check decided, as a pure function of what is open and what was found.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    Keep,
    /// (Re)open; `changed` says a FIFO was open or missing before (so one reading follows).
    Open {
        changed: bool,
    },
    Missing,
}

/// `open` is the (pid, inode) held now, `found` what the process table and file system
/// show, `ever_opened` whether this watcher had a FIFO open before.
pub fn decide(
    open: Option<(u32, u64)>,
    found: Option<(u32, u64)>,
    ever_opened: bool,
) -> CheckOutcome {
    match (open, found) {
        (_, None) => CheckOutcome::Missing,
        (Some(o), Some(f)) if o == f => CheckOutcome::Keep,
        (_, Some(_)) => CheckOutcome::Open {
            changed: ever_opened,
        },
    }
}

pub struct FifoWatcher {
    proc_dir: PathBuf,
    /// The FIFO as keepalived sees it.
    path: PathBuf,
    trigger: Trigger,
    status: SharedStatus,
    stop: Arc<AtomicBool>,
}

pub struct FifoHandle {
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

impl FifoHandle {
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

pub fn spawn(
    proc_dir: PathBuf,
    path: PathBuf,
    trigger: Trigger,
    status: SharedStatus,
) -> io::Result<FifoHandle> {
    let stop = Arc::new(AtomicBool::new(false));
    let w = FifoWatcher {
        proc_dir,
        path,
        trigger,
        status,
        stop: stop.clone(),
    };
    let thread = thread::Builder::new()
        .name("fifo-watch".into())
        .spawn(move || crate::fatal::guard("fifo-watch", || w.run()))?;
    Ok(FifoHandle { stop, thread })
}

/// How long one wait for FIFO data lasts at most, so a stop request is seen quickly.
const TICK: Duration = Duration::from_millis(250);

impl FifoWatcher {
    /// keepalived's PID, the FIFO's inode and its path through `/proc/<pid>/root`; or
    /// nothing, with the reason when it is a refusal (a missing capability) rather than
    /// a missing FIFO.
    fn locate(&self) -> (Option<(u32, u64, PathBuf)>, Option<String>) {
        let Some(found) = keepalived::find(&self.proc_dir).ok().flatten() else {
            return (None, None);
        };
        let root = self.proc_dir.join(found.parent.to_string()).join("root");
        let p = root.join(self.path.strip_prefix("/").unwrap_or(&self.path));
        match std::fs::metadata(&p) {
            Ok(meta) if meta.file_type().is_fifo() => (Some((found.parent, meta.ino(), p)), None),
            Ok(_) => (None, None),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => (
                None,
                Some(format!(
                    "Notify FIFO {} cannot be reached: {e}{}",
                    self.path.display(),
                    keepalived::capability_hint(&e, &root)
                )),
            ),
            Err(_) => (None, None),
        }
    }

    fn set_state(&self, s: FifoState) {
        self.status.write().fifo = s;
    }

    fn run(self) {
        let mut open: Option<(File, u32, u64)> = None;
        let mut ever_opened = false;
        let mut missing_logged = false;
        let mut last_check: Option<Instant> = None;
        let mut buf = [0u8; 4096];
        let mut partial = Vec::new();
        while !self.stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            if check_due(last_check, now) {
                last_check = Some(now);
                let (found, refused) = self.locate();
                let held = open.as_ref().map(|(_, p, i)| (*p, *i));
                match decide(held, found.as_ref().map(|(p, i, _)| (*p, *i)), ever_opened) {
                    CheckOutcome::Keep => {}
                    CheckOutcome::Missing => {
                        open = None;
                        self.set_state(FifoState::Missing);
                        if !missing_logged {
                            match refused {
                                Some(why) => log::warn!(
                                    "{why}; readings continue on the other triggers"
                                ),
                                None => log::warn!(
                                    "Notify FIFO {} not found (keepalived not running or vrrp_notify_fifo not set); readings continue on the other triggers",
                                    self.path.display()
                                ),
                            }
                            missing_logged = true;
                        }
                    }
                    CheckOutcome::Open { changed } => {
                        let Some((pid, ino, p)) = found else { continue };
                        match open_fifo(&p) {
                            Ok(f) => {
                                log::info!(
                                    "Notify FIFO {} open (keepalived PID {pid})",
                                    self.path.display()
                                );
                                open = Some((f, pid, ino));
                                partial.clear();
                                missing_logged = false;
                                self.set_state(FifoState::Open);
                                if changed {
                                    self.trigger.fire(TriggerSource::Fifo);
                                }
                                ever_opened = true;
                            }
                            Err(e) => {
                                open = None;
                                self.set_state(FifoState::Missing);
                                if !missing_logged {
                                    let root = self.proc_dir.join(pid.to_string()).join("root");
                                    log::warn!(
                                        "Notify FIFO {} cannot be opened: {e}{}",
                                        self.path.display(),
                                        keepalived::capability_hint(&e, &root)
                                    );
                                    missing_logged = true;
                                }
                            }
                        }
                    }
                }
            }
            let until_check = last_check.map_or(Duration::ZERO, |l| {
                (l + CHECK_EVERY).saturating_duration_since(Instant::now())
            });
            let wait = until_check.min(TICK);
            let Some((f, _, _)) = &mut open else {
                thread::sleep(wait);
                continue;
            };
            let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
            let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    log::warn!("Notify FIFO poll failed: {e}; reopening");
                    open = None;
                    last_check = None;
                    continue;
                }
            }
            let mut got = false;
            let mut hung_up = false;
            loop {
                match f.read(&mut buf) {
                    // No writer left: end-of-file (an empty FIFO with writers says
                    // WouldBlock).
                    Ok(0) => {
                        hung_up = true;
                        break;
                    }
                    Ok(n) => {
                        got = true;
                        partial.extend_from_slice(&buf[..n]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        log::warn!("Notify FIFO read failed: {e}");
                        break;
                    }
                }
            }
            if got {
                while let Some(nl) = partial.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = partial.drain(..=nl).collect();
                    log::debug!("notify FIFO: {}", String::from_utf8_lossy(&line).trim_end());
                }
                // A partial line stays for the next read; keep it bounded.
                if partial.len() > 4096 {
                    partial.clear();
                }
                self.trigger.fire(TriggerSource::Fifo);
            }
            if hung_up {
                // A fresh open end waits for the next writer instead of reporting this
                // hang-up at every poll; if the FIFO is gone with keepalived, the check
                // (due at once) says so.
                // Only the same FIFO of the same keepalived: anything else is the
                // check's to find (it reopens and asks for a reading).
                let reopened = open
                    .as_ref()
                    .and_then(|(_, pid, ino)| {
                        self.locate().0.filter(|(p, i, _)| (p, i) == (pid, ino))
                    })
                    .and_then(|(pid, ino, p)| Some((open_fifo(&p).ok()?, pid, ino)));
                if reopened.is_none() {
                    last_check = None;
                }
                open = reopened;
            }
        }
    }
}

/// The FIFO's reading end, without blocking for a writer.
fn open_fifo(p: &std::path::Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::ReaderMsg;
    use std::io::Write;

    #[test]
    fn check_every_five_seconds() {
        let t = Instant::now();
        assert!(check_due(None, t));
        assert!(!check_due(Some(t), t + Duration::from_millis(4999)));
        assert!(check_due(Some(t), t + Duration::from_secs(5)));
    }

    /// CPU time (user + system, in clock ticks) of this process's `fifo-watch` threads.
    fn watcher_ticks() -> u64 {
        let mut ticks = 0;
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != "fifo-watch" {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
            let fields: Vec<&str> = after.split_whitespace().collect();
            // utime and stime: fields 14 and 15 of stat, 12 and 13 after the comm.
            ticks += fields
                .get(11)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
            ticks += fields
                .get(12)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        }
        ticks
    }

    /// The FIFO is held read-only (an agent without root cannot open keepalived's 0600
    /// FIFO for writing), so every writer leaving is an end-of-file: each writer that
    /// comes and goes is still read, and after the last one the watcher waits rather
    /// than seeing the hang-up at every poll.
    #[test]
    fn a_writer_that_comes_and_goes_is_read_each_time_without_spinning() {
        let tmp = tempfile::tempdir().unwrap();
        // A process table with one keepalived whose root is `rootfs`.
        let proc_dir = tmp.path().join("proc");
        let pid_dir = proc_dir.join("100");
        std::fs::create_dir_all(&pid_dir).unwrap();
        std::fs::write(pid_dir.join("comm"), "keepalived\n").unwrap();
        std::fs::write(pid_dir.join("stat"), "100 (keepalived) S 1 1 1 0 -1").unwrap();
        let rootfs = tmp.path().join("rootfs");
        std::fs::create_dir_all(rootfs.join("tmp")).unwrap();
        std::os::unix::fs::symlink(&rootfs, pid_dir.join("root")).unwrap();
        let fifo = rootfs.join("tmp/keepalived_vrrp.fifo");
        let made = std::process::Command::new("mkfifo")
            .args(["-m", "0600"])
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());

        let (tx, rx) = crossbeam_channel::unbounded();
        let status = SharedStatus::default();
        let watcher = spawn(
            proc_dir,
            PathBuf::from("/tmp/keepalived_vrrp.fifo"),
            Trigger::from_sender(tx),
            status.clone(),
        )
        .unwrap();
        let t0 = Instant::now();
        while status.read().fifo != FifoState::Open {
            assert!(t0.elapsed() < Duration::from_secs(5), "the FIFO opened");
            thread::sleep(Duration::from_millis(10));
        }
        for round in 0..3 {
            // Blocks until a reader has it open: the watcher does.
            let mut w = OpenOptions::new().write(true).open(&fifo).unwrap();
            writeln!(w, "INSTANCE \"VI_1\" MASTER 100").unwrap();
            drop(w);
            match rx.recv_timeout(Duration::from_secs(5)) {
                Ok(ReaderMsg::Read {
                    source: TriggerSource::Fifo,
                    ..
                }) => {}
                _ => panic!("round {round}: no reading asked for"),
            }
        }
        // No writer left: nothing more is asked for, the FIFO stays open, and the
        // watcher sleeps in poll(2) (a hang-up seen at every poll would spin: a
        // whole core, some 100 ticks a second).
        let before = watcher_ticks();
        assert!(rx.recv_timeout(Duration::from_secs(1)).is_err());
        let spent = watcher_ticks() - before;
        assert!(spent < 10, "the watcher spent {spent} ticks in a second");
        assert_eq!(status.read().fifo, FifoState::Open);
        watcher.stop();
    }

    #[test]
    fn reopen_on_inode_or_pid_change_only() {
        assert_eq!(decide(None, None, false), CheckOutcome::Missing);
        assert_eq!(
            decide(None, Some((10, 7)), false),
            CheckOutcome::Open { changed: false }
        );
        assert_eq!(
            decide(Some((10, 7)), Some((10, 7)), true),
            CheckOutcome::Keep
        );
        assert_eq!(
            decide(Some((10, 7)), Some((10, 8)), true),
            CheckOutcome::Open { changed: true }
        );
        assert_eq!(
            decide(Some((10, 7)), Some((11, 7)), true),
            CheckOutcome::Open { changed: true }
        );
        assert_eq!(decide(Some((10, 7)), None, true), CheckOutcome::Missing);
        // Back after a missing streak: a change, so one reading.
        assert_eq!(
            decide(None, Some((12, 9)), true),
            CheckOutcome::Open { changed: true }
        );
    }
}
