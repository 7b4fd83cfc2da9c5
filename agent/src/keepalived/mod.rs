//! Finding, signalling and reading keepalived ("How one reading is taken").
//!
//! Owns every contact with keepalived: the `/proc/*/comm` scan under `SVC_PROC_DIR`, the
//! start-up check of the process table, the version read from the binary, the signals
//! (only SIGUSR1, SIGUSR2 and the configured JSON signal are ever sent) and the wait for
//! complete dump files, read through `/proc/<pid>/root` (at most 32 MiB each). Parsing
//! is left to `parse`.
//!
//! Run as its own user (the shipped unit), the agent needs three capabilities for this
//! and nothing else (doc/install.md, "The agent without root"): CAP_KILL for the
//! signals, CAP_SYS_PTRACE to follow keepalived's `/proc/<pid>/root`, `/fd` and `/exe`
//! (another user's process), CAP_DAC_READ_SEARCH for its root-owned 0600 dumps and
//! FIFO and its 0500 `/proc/<pid>/fd`. A refusal says which one is missing.

pub mod fifo;
pub mod once;
pub mod parse;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use vrrp_protocol::Reading;

use crate::config::KeepalivedConfig;
use once::LoggedOnce;

/// Distinct VIP list entries that are no address, remembered so each is logged once.
const NOT_ADDRESSES_REMEMBERED: usize = 64;

/// keepalived's processes: the parent (which forwards signals) and all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub parent: u32,
    pub all: Vec<u32>,
}

fn ppid_of(proc_dir: &Path, pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(proc_dir.join(pid.to_string()).join("stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Scans the process table. An unreadable table is an error; no keepalived is `None`.
pub fn find(proc_dir: &Path) -> io::Result<Option<Found>> {
    let mut cands = Vec::new();
    for entry in fs::read_dir(proc_dir)? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        match fs::read_to_string(entry.path().join("comm")) {
            Ok(c) if c.trim_end() == "keepalived" => cands.push(pid),
            _ => {}
        }
    }
    cands.sort_unstable();
    let parent = cands
        .iter()
        .copied()
        .find(|p| ppid_of(proc_dir, *p).is_none_or(|pp| !cands.contains(&pp)));
    Ok(parent.map(|parent| Found { parent, all: cands }))
}

/// The start-up check: one log line, at the spec's level.
pub fn startup_check(proc_dir: &Path) -> (log::Level, String) {
    match find(proc_dir) {
        Err(e) => (
            log::Level::Error,
            format!(
                "Cannot read the process table in {}: {e}",
                proc_dir.display()
            ),
        ),
        Ok(Some(f)) => (
            log::Level::Info,
            format!("Found keepalived, PID {}", f.parent),
        ),
        // PID 2 is the kernel thread daemon on a Linux host; a container's own PID
        // namespace has no kernel threads.
        Ok(None) => {
            let kthreadd = fs::read_to_string(proc_dir.join("2").join("comm"))
                .map(|c| c.trim_end() == "kthreadd")
                .unwrap_or(false);
            if kthreadd {
                (
                    log::Level::Warn,
                    "No keepalived process is running on this host.".into(),
                )
            } else {
                (
                    log::Level::Warn,
                    format!(
                        "No keepalived process found, and {} is not the host's process table: start the agent with the host's PID namespace (for example --pid=host)",
                        proc_dir.display()
                    ),
                )
            }
        }
    }
}

/// Reads keepalived's version from its binary (`Keepalived v2.2.7 (01/16,2022)` → `2.2.7`)
/// without running it.
pub fn read_version(proc_dir: &Path, pid: u32) -> Option<String> {
    let bytes = fs::read(proc_dir.join(pid.to_string()).join("exe")).ok()?;
    version_in(&bytes)
}

pub fn version_in(bytes: &[u8]) -> Option<String> {
    const NEEDLE: &[u8] = b"Keepalived v";
    let mut from = 0;
    while let Some(pos) = bytes[from..]
        .windows(NEEDLE.len())
        .position(|w| w == NEEDLE)
    {
        let start = from + pos + NEEDLE.len();
        let v: String = bytes[start..]
            .iter()
            .take(32)
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+' | b'_'))
            .map(|b| *b as char)
            .collect();
        if v.starts_with(|c: char| c.is_ascii_digit()) {
            return Some(v);
        }
        from = start;
    }
    None
}

/// A file's identity: any change of inode, modification time or size means it was
/// (re)written.
type Stamp = (u64, SystemTime, u64);

fn stamp(path: &Path) -> io::Result<Option<Stamp>> {
    use std::os::unix::fs::MetadataExt;
    match fs::metadata(path) {
        Ok(m) => Ok(Some((m.ino(), m.modified()?, m.len()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a keepalived process still has the dump (or its temporary file) open: keepalived
/// creates the file before writing it, so a changed file is not yet a complete file.
fn held_open(proc_dir: &Path, pids: &[u32], target: &Path) -> bool {
    let target = target.as_os_str().to_string_lossy();
    for pid in pids {
        let Ok(fds) = fs::read_dir(proc_dir.join(pid.to_string()).join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = fs::read_link(fd.path()) {
                if link
                    .as_os_str()
                    .to_string_lossy()
                    .starts_with(target.as_ref())
                {
                    return true;
                }
            }
        }
    }
    false
}

/// One dump the reading waits for.
struct Dump {
    /// Raw signal number: keepalived's JSON signal is a real-time signal (SIGRTMIN+2 on
    /// glibc), which nix's `Signal` enum cannot name.
    signal: i32,
    /// Path as keepalived sees it (`/tmp/keepalived.data`).
    inside: PathBuf,
    /// The same file through `/proc/<pid>/root`.
    through_root: PathBuf,
    before: Option<Stamp>,
    last_seen: Option<Stamp>,
    done: bool,
}

/// What a "permission denied" on a file of keepalived's, reached through `root`
/// (`/proc/<pid>/root`), means for an agent that runs as its own user: which of its
/// capabilities is missing (doc/install.md, "The agent without root"). Empty for any
/// other error. The link itself is checked first: following it takes CAP_SYS_PTRACE
/// (keepalived is another user's process), the file behind it CAP_DAC_READ_SEARCH
/// (keepalived writes its dumps and FIFO root-owned, 0600).
pub fn capability_hint(e: &io::Error, root: &Path) -> String {
    if e.kind() != io::ErrorKind::PermissionDenied {
        return String::new();
    }
    match fs::metadata(root) {
        Err(r) if r.kind() == io::ErrorKind::PermissionDenied => format!(
            " — the agent needs CAP_SYS_PTRACE to look into keepalived's files through {} (keepalived runs as another user)",
            root.display()
        ),
        _ => " — the agent needs CAP_DAC_READ_SEARCH to read keepalived's files (root-owned, mode 0600)"
            .to_string(),
    }
}

fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Takes readings of keepalived. Owned by the reader thread; caches the version per PID.
pub struct Prober {
    cfg: KeepalivedConfig,
    proc_dir: PathBuf,
    version: Option<(u32, Option<String>)>,
    not_addresses_logged: LoggedOnce,
}

impl Prober {
    pub fn new(cfg: KeepalivedConfig, proc_dir: PathBuf) -> Prober {
        Prober {
            cfg,
            proc_dir,
            version: None,
            not_addresses_logged: LoggedOnce::new(NOT_ADDRESSES_REMEMBERED),
        }
    }

    /// VIP list entries that are no address are left out of the reading (the parser
    /// did that) and said once per distinct entry, at debug level: a dump a little off
    /// the usual shape is not an error of the reading. Returns the lines to log.
    fn not_address_lines(&mut self, entries: &[(String, String)]) -> Vec<String> {
        let mut lines = Vec::new();
        for (instance, entry) in entries {
            if !self.not_addresses_logged.first_time(entry) {
                continue;
            }
            // A VIP list never holds authentication, but a dump off the usual shape
            // might: such a line is named, not shown.
            let lower = entry.to_ascii_lowercase();
            let shown = if lower.contains("pass") || lower.contains("auth") {
                "(not shown: it mentions authentication)".to_string()
            } else {
                format!("{:?}", once::cut(entry))
            };
            lines.push(format!(
                "keepalived instance {instance}: VIP list entry {shown} is not an address; left out of the reading"
            ));
        }
        lines
    }

    fn version_of(&mut self, pid: u32) -> Option<String> {
        match &self.version {
            Some((p, v)) if *p == pid => v.clone(),
            _ => {
                let v = read_version(&self.proc_dir, pid);
                self.version = Some((pid, v.clone()));
                v
            }
        }
    }

    /// Takes one reading. Never fails: a problem is a reading with `error` set.
    pub fn read(&mut self) -> Reading {
        let found = match find(&self.proc_dir) {
            Ok(f) => f,
            Err(e) => {
                return Reading {
                    collected_at: now_iso(),
                    running: false,
                    error: Some(format!(
                        "cannot read the process table in {}: {e}",
                        self.proc_dir.display()
                    )),
                    ..Default::default()
                }
            }
        };
        let Some(found) = found else {
            return Reading {
                collected_at: now_iso(),
                running: false,
                ..Default::default()
            };
        };
        let mut reading = Reading {
            collected_at: String::new(),
            running: true,
            pid: Some(found.parent),
            version: self.version_of(found.parent),
            source: Some(
                if self.cfg.json_signal.is_some() {
                    "json"
                } else {
                    "data"
                }
                .into(),
            ),
            ..Default::default()
        };
        match self.take(&found) {
            Ok(dump) => {
                for line in self.not_address_lines(&dump.not_addresses) {
                    log::debug!("{line}");
                }
                reading.instances = dump.instances;
                reading.sync_groups = dump.sync_groups;
            }
            Err(TakeError::Gone) => {
                reading.running = false;
                reading.pid = None;
                reading.version = None;
                reading.source = None;
            }
            Err(TakeError::Failed(e)) => reading.error = Some(e),
        }
        reading.collected_at = now_iso();
        reading
    }

    fn take(&self, found: &Found) -> Result<parse::ParsedDump, TakeError> {
        let Some(json_signal) = self.cfg.json_signal else {
            let (data, rest) = self.dumps(
                found,
                &[
                    (nix::libc::SIGUSR1, &self.cfg.data_file),
                    (nix::libc::SIGUSR2, &self.cfg.stats_file),
                ],
            )?;
            let mut dump = parse::parse_data(&data).map_err(|e| TakeError::Failed(e.0))?;
            match rest.first().cloned().unwrap_or_else(|| Err(String::new())) {
                Ok(t) => match parse::parse_stats(&t) {
                    Ok(c) => parse::attach_counters(&mut dump, &c),
                    Err(e) => log::warn!("keepalived counters not read: {e}"),
                },
                Err(e) if e.is_empty() => {}
                Err(e) => log::warn!("keepalived counters not read: {e}"),
            }
            return Ok(dump);
        };
        let (json, _) = self.dumps(found, &[(json_signal, &self.cfg.json_file)])?;
        let mut dump = parse::parse_json(&json).map_err(|e| TakeError::Failed(e.0))?;
        // keepalived's JSON has no tracker state, unicast peers, master router or sync
        // groups: those come from the text dump, taken right after. Without it the
        // reading is still the JSON's, only without them.
        match self.dumps(found, &[(nix::libc::SIGUSR1, &self.cfg.data_file)]) {
            Ok((data, _)) => match parse::parse_data(&data) {
                Ok(data) => parse::merge_text_only(&mut dump, &data),
                Err(e) => log::warn!("keepalived trackers not read: {e}"),
            },
            Err(TakeError::Failed(e)) => log::warn!("keepalived trackers not read: {e}"),
            Err(TakeError::Gone) => return Err(TakeError::Gone),
        }
        Ok(dump)
    }

    /// Signals keepalived for each dump and reads them once complete. The first dump
    /// must be read (its error is the reading's); the others are handed back as they
    /// came, for the caller to judge (an empty error: keepalived went away).
    fn dumps(
        &self,
        found: &Found,
        wanted: &[(i32, &PathBuf)],
    ) -> Result<(String, Vec<Result<String, String>>), TakeError> {
        let root = self.proc_dir.join(found.parent.to_string()).join("root");
        let mk = |signal: i32, inside: &Path| -> Result<Dump, TakeError> {
            let through_root = root.join(inside.strip_prefix("/").unwrap_or(inside));
            let before = stamp(&through_root).map_err(|e| {
                TakeError::Failed(format!(
                    "cannot read {}: {e}{}",
                    through_root.display(),
                    capability_hint(&e, &root)
                ))
            })?;
            Ok(Dump {
                signal,
                inside: inside.to_path_buf(),
                through_root,
                before,
                last_seen: None,
                done: false,
            })
        };
        let mut dumps = wanted
            .iter()
            .map(|(signal, path)| mk(*signal, path))
            .collect::<Result<Vec<_>, _>>()?;
        let timeout = Duration::from_millis(self.cfg.dump_timeout_ms);
        let signals: Vec<i32> = dumps.iter().map(|d| d.signal).collect();
        self.wait_until_handled(found, &signals, Instant::now() + timeout)?;
        for attempt in 0..2 {
            for d in dumps.iter().filter(|d| !d.done) {
                if let Err(e) = send_signal(found.parent, d.signal) {
                    return Err(match e {
                        Errno::ESRCH => TakeError::Gone,
                        Errno::EPERM => TakeError::Failed(format!(
                            "cannot signal keepalived (PID {}): permission denied — the agent needs CAP_KILL to signal keepalived (another user's process) for its dumps",
                            found.parent
                        )),
                        e => TakeError::Failed(format!(
                            "cannot signal keepalived (PID {}): {e}",
                            found.parent
                        )),
                    });
                }
            }
            if self.wait(found, &mut dumps, Instant::now() + timeout)? {
                break;
            }
            if attempt == 1 {
                let missing: Vec<_> = dumps
                    .iter()
                    .filter(|d| !d.done)
                    .map(|d| d.inside.display().to_string())
                    .collect();
                return Err(TakeError::Failed(format!(
                    "keepalived (PID {}) did not write {} within {} ms, twice",
                    found.parent,
                    missing.join(" and "),
                    self.cfg.dump_timeout_ms
                )));
            }
            log::debug!("dump did not arrive within {timeout:?}; signalling keepalived once more");
        }
        let read = |d: &Dump| {
            read_dump(&d.through_root)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| {
                    TakeError::Failed(format!(
                        "cannot read {}: {e}{}",
                        d.through_root.display(),
                        capability_hint(&e, &root)
                    ))
                })
        };
        let first = read(&dumps[0])?;
        let rest = dumps[1..]
            .iter()
            .map(|d| match read(d) {
                Ok(t) => Ok(t),
                Err(TakeError::Failed(e)) => Err(e),
                // keepalived went away: the next reading says so, nothing to warn about.
                Err(TakeError::Gone) => Err(String::new()),
            })
            .collect();
        Ok((first, rest))
    }

    /// Waits until keepalived's parent handles every dump signal. A keepalived in its
    /// first milliseconds has not set up its signal handling yet, and SIGUSR1, SIGUSR2 or
    /// a real-time signal would then end it (their default action): a reading that
    /// comes with its start (the FIFO watcher sees the new PID and triggers one at once)
    /// must not kill it. A status that cannot be read does not hold the reading back.
    fn wait_until_handled(
        &self,
        found: &Found,
        signals: &[i32],
        deadline: Instant,
    ) -> Result<(), TakeError> {
        loop {
            let status = match fs::read_to_string(
                self.proc_dir.join(found.parent.to_string()).join("status"),
            ) {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(TakeError::Gone),
                Err(_) => return Ok(()),
            };
            let unhandled: Vec<i32> = signals
                .iter()
                .copied()
                .filter(|s| !signal_handled(&status, *s))
                .collect();
            if unhandled.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TakeError::Failed(format!(
                    "keepalived (PID {}) does not handle signal {unhandled:?} within {} ms (still starting?); not signalled, since it would end the process",
                    found.parent, self.cfg.dump_timeout_ms
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits until every dump is complete: changed since the signal, no longer held open by
    /// keepalived, and the same on two looks in a row. Returns false on timeout.
    fn wait(
        &self,
        found: &Found,
        dumps: &mut [Dump],
        deadline: Instant,
    ) -> Result<bool, TakeError> {
        let start = Instant::now();
        let root = self.proc_dir.join(found.parent.to_string()).join("root");
        loop {
            for d in dumps.iter_mut().filter(|d| !d.done) {
                let s = stamp(&d.through_root).map_err(|e| {
                    TakeError::Failed(format!(
                        "cannot read {}: {e}{}",
                        d.through_root.display(),
                        capability_hint(&e, &root)
                    ))
                })?;
                if s.is_none() || s == d.before {
                    continue;
                }
                if held_open(&self.proc_dir, &found.all, &d.inside) {
                    d.last_seen = None;
                    continue;
                }
                if d.last_seen == s {
                    d.done = true;
                } else {
                    d.last_seen = s;
                }
            }
            if dumps.iter().all(|d| d.done) {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            if !Path::new(&self.proc_dir)
                .join(found.parent.to_string())
                .exists()
            {
                return Err(TakeError::Gone);
            }
            // Dumps take a few milliseconds: look often at first, then back off.
            let tick = if now - start < Duration::from_millis(100) {
                Duration::from_millis(1)
            } else {
                Duration::from_millis(10)
            };
            std::thread::sleep(tick.min(deadline - now));
        }
    }
}

/// Largest dump file read: keepalived writes a few KB per instance, so anything larger
/// is no dump to parse, and reading it whole would only cost memory.
const MAX_DUMP_BYTES: u64 = 32 << 20;

/// Reads a dump file whole, up to [`MAX_DUMP_BYTES`]; a larger one is an error.
fn read_dump(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    fs::File::open(path)?
        .take(MAX_DUMP_BYTES + 1)
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_DUMP_BYTES {
        return Err(io::Error::other(format!(
            "larger than {} MiB, not a dump",
            MAX_DUMP_BYTES >> 20
        )));
    }
    Ok(buf)
}

/// Whether a process whose `/proc/<pid>/status` is `status` blocks, ignores or catches
/// `signal` (its `SigBlk`, `SigIgn`, `SigCgt` masks; keepalived blocks its signals and
/// reads them from a signalfd). A signal it does none of these with ends it.
pub fn signal_handled(status: &str, signal: i32) -> bool {
    if !(1..=64).contains(&signal) {
        return false;
    }
    let bit = 1u64 << (signal - 1);
    status
        .lines()
        .filter_map(|l| {
            let (key, mask) = l.split_once(':')?;
            if !matches!(key, "SigBlk" | "SigIgn" | "SigCgt") {
                return None;
            }
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .any(|mask| mask & bit != 0)
}

/// kill(2) with a raw signal number.
fn send_signal(pid: u32, signal: i32) -> Result<(), Errno> {
    let pid = i32::try_from(pid).map_err(|_| Errno::ESRCH)?;
    if pid <= 0 {
        // Never 0 or negative: those address process groups.
        return Err(Errno::ESRCH);
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of this process.
    let rc = unsafe { nix::libc::kill(pid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

enum TakeError {
    /// keepalived went away during the reading.
    Gone,
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_that_is_no_address_is_said_once_and_never_shows_a_password() {
        let mut p = Prober::new(KeepalivedConfig::default(), PathBuf::from("/nonexistent"));
        let entries = |list: &[&str]| -> Vec<(String, String)> {
            list.iter()
                .map(|e| ("VI_1".to_string(), e.to_string()))
                .collect()
        };
        let first = p.not_address_lines(&entries(&["not set", "(none)", "not set"]));
        assert_eq!(
            first,
            [
                "keepalived instance VI_1: VIP list entry \"not set\" is not an address; left out of the reading",
                "keepalived instance VI_1: VIP list entry \"(none)\" is not an address; left out of the reading",
            ]
        );
        // The next readings carry the same entries: nothing more is said.
        for _ in 0..3 {
            assert!(p
                .not_address_lines(&entries(&["(none)", "not set"]))
                .is_empty());
        }
        let secret = p.not_address_lines(&entries(&["Password = hunter2", ""]));
        assert_eq!(secret.len(), 2);
        assert!(secret[0].contains("(not shown: it mentions authentication)"));
        assert!(!secret.concat().contains("hunter2"));
        assert!(secret[1].contains("entry \"\" is not an address"));
    }

    #[test]
    fn a_signal_counts_as_handled_when_blocked_ignored_or_caught() {
        // keepalived 2.2.7's parent once running: its signals are blocked (signalfd).
        let running = "Name:\tkeepalived\nSigQ:\t2/96365\nSigPnd:\t0000000000000000\n\
                       SigBlk:\t4000000800014a03\nSigIgn:\tbffffff67ffab034\nSigCgt:\t0000000000000000\n";
        let json_signal = 36; // SIGRTMIN+2 on glibc
        for sig in [nix::libc::SIGUSR1, nix::libc::SIGUSR2, json_signal] {
            assert!(signal_handled(running, sig), "signal {sig}");
        }
        // Just exec'd: nothing blocked, ignored or caught yet; a dump signal would end it.
        let starting = "Name:\tkeepalived\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n\
                        SigCgt:\t0000000000000000\n";
        assert!(!signal_handled(starting, nix::libc::SIGUSR1));
        let caught = starting.replace("SigCgt:\t0000000000000000", "SigCgt:\t0000000000000200");
        assert!(signal_handled(&caught, nix::libc::SIGUSR1));
        assert!(!signal_handled(&caught, nix::libc::SIGUSR2));
        assert!(!signal_handled(running, 0));
        assert!(!signal_handled(running, 65));
        assert!(!signal_handled("garbage", nix::libc::SIGUSR1));
    }

    #[test]
    fn a_dump_is_read_whole_up_to_its_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let small = tmp.path().join("small");
        fs::write(&small, b"VRRP Instance = VI_1\n").unwrap();
        assert_eq!(read_dump(&small).unwrap(), b"VRRP Instance = VI_1\n");
        // One byte over the bound: refused (at most that one byte more is read).
        let big = tmp.path().join("big");
        fs::File::create(&big)
            .unwrap()
            .set_len(MAX_DUMP_BYTES + 1)
            .unwrap();
        let e = read_dump(&big).unwrap_err();
        assert!(e.to_string().contains("larger than 32 MiB"), "{e}");
        assert!(read_dump(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn a_refusal_names_the_missing_capability() {
        let tmp = tempfile::tempdir().unwrap();
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        // keepalived's root could be followed: the file itself refused.
        let hint = capability_hint(&denied, tmp.path());
        assert!(hint.contains("needs CAP_DAC_READ_SEARCH"), "{hint}");
        // Anything but a refusal is no capability's doing.
        assert_eq!(
            capability_hint(&io::Error::from(io::ErrorKind::NotFound), tmp.path()),
            ""
        );
        // (The root link refused, CAP_SYS_PTRACE, takes another user's process:
        // agent/tests/e2e/lab_nonroot.rs.)
    }

    #[test]
    fn version_from_binary_bytes() {
        let bytes = b"\0\0junk Keepalived v%s\0Keepalived v2.2.7 (01/16,2022)\0more";
        assert_eq!(version_in(bytes).as_deref(), Some("2.2.7"));
        assert_eq!(version_in(b"nothing here"), None);
    }

    #[test]
    fn process_table_scan_and_startup_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        let mkproc = |pid: u32, comm: &str, ppid: u32| {
            let d = p.join(pid.to_string());
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
            fs::write(d.join("stat"), format!("{pid} ({comm}) S {ppid} 1 1 0 -1")).unwrap();
        };
        mkproc(1, "init", 0);
        assert_eq!(find(p).unwrap(), None);
        let (lvl, line) = startup_check(p);
        assert_eq!(lvl, log::Level::Warn);
        assert!(
            line.starts_with("No keepalived process found, and "),
            "{line}"
        );
        mkproc(2, "kthreadd", 0);
        assert_eq!(
            startup_check(p).1,
            "No keepalived process is running on this host."
        );
        mkproc(40, "keepalived", 30);
        mkproc(30, "keepalived", 1);
        mkproc(50, "keepalived", 30);
        assert_eq!(
            find(p).unwrap(),
            Some(Found {
                parent: 30,
                all: vec![30, 40, 50]
            })
        );
        assert_eq!(
            startup_check(p),
            (log::Level::Info, "Found keepalived, PID 30".into())
        );
        let (lvl, line) = startup_check(&p.join("missing"));
        assert_eq!(lvl, log::Level::Error);
        assert!(
            line.starts_with("Cannot read the process table in "),
            "{line}"
        );
    }
}
