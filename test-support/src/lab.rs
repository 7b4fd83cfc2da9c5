//! A lab of `scripts/lab` (simulated hosts with real keepalived in network
//! namespaces) for end-to-end tests; taken down on drop.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::wait_for;

/// The repository's lab script, `scripts/lab`.
pub fn lab_script() -> PathBuf {
    crate::repo_root().join("scripts/lab")
}

/// One lab at a time in a test process: VRRP timing on 2 cores is what the lab
/// tests measure, and two labs at once would share those cores (the tests of one
/// binary run on parallel threads).
static ONE_LAB_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the process's one lab slot until dropped (a panicking holder's slot is
/// taken over, not poisoned: its lab was taken down by its own drop).
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_LAB_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub struct Lab {
    /// The namespace the test started in, kept once the thread enters the switch: lab
    /// commands run there (the script's `down` kills whatever lives in the switch
    /// namespace, which would include itself if it ran inside).
    root_ns: Option<std::os::fd::OwnedFd>,
    pub prefix: String,
    pub state: PathBuf,
    /// Under /var/tmp: hosts have a private /tmp, so binaries and data live here.
    pub work: PathBuf,
    /// Dropped after the lab is down (fields drop after `Drop::drop`).
    _slot: std::sync::MutexGuard<'static, ()>,
}

impl Lab {
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.command("bash");
        c.arg(lab_script()).args(args);
        c
    }

    /// `program` run where the lab's commands run (the namespace the test started
    /// in), with this lab's LAB_PREFIX, LAB_STATE and LAB_FIFO_READER=0.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        if let Some(ns) = &self.root_ns {
            use std::os::fd::AsRawFd;
            use std::os::unix::process::CommandExt;
            let fd = ns.as_raw_fd();
            // SAFETY: between fork and exec only setns(2) runs, a plain system call.
            unsafe {
                c.pre_exec(move || {
                    let f = std::os::fd::BorrowedFd::borrow_raw(fd);
                    nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)
                        .map_err(std::io::Error::from)
                });
            }
        }
        c.env("LAB_PREFIX", &self.prefix)
            .env("LAB_STATE", &self.state)
            .env("LAB_FIFO_READER", "0");
        c
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "scripts/lab {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `tag` keeps the prefix apart from other labs of other test binaries.
    pub fn up(hosts: usize, tag: &str) -> Lab {
        Lab::up_with(hosts, tag, &[])
    }

    /// [`Lab::up`] with extra environment for `scripts/lab up` (`LAB_SYNC_GROUP=1`).
    pub fn up_with(hosts: usize, tag: &str, env: &[(&str, &str)]) -> Lab {
        crate::tier::require(crate::tier::Tier::Lab);
        let slot = exclusive();
        let prefix = format!("{tag}{}", std::process::id() % 100_000);
        let work = PathBuf::from(format!("/var/tmp/vrrp-agent-test-{prefix}"));
        let _ = fs::remove_dir_all(&work);
        fs::create_dir_all(&work).unwrap();
        let lab = Lab {
            root_ns: None,
            state: work.join("lab-state"),
            prefix,
            work,
            _slot: slot,
        };
        let out = lab
            .cmd(&["up", &hosts.to_string()])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/lab up failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        lab
    }

    /// curl inside a host: (HTTP status, body).
    pub fn curl(&self, host: &str, args: &[&str]) -> (u16, String) {
        let out = Command::new("ip")
            .args(["netns", "exec", &format!("{}-{host}", self.prefix)])
            .args(["curl", "-s", "-m", "20", "-w", "\n%{http_code}"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_string())
    }

    /// keepalived's state of an instance as the lab's own notify script recorded it.
    pub fn wait_state(&self, host: &str, inst: &str, state: &str) {
        let f = self
            .state
            .join(host)
            .join("run/lab/state")
            .join(format!("INSTANCE.{inst}"));
        wait_for(&format!("{inst} {state} on {host}"), 30, || {
            let t = fs::read_to_string(&f).ok()?;
            (t.split_whitespace().next() == Some(state)).then_some(())
        });
    }

    /// Moves the calling thread into the switch namespace, where the server runs and
    /// every host reaches it at 203.0.113.254. Children spawned from this thread follow.
    pub fn enter_switch(&mut self) {
        let root = fs::File::open("/proc/thread-self/ns/net").unwrap();
        self.root_ns = Some(root.into());
        let f = fs::File::open(format!("/run/netns/{}-sw", self.prefix)).unwrap();
        nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)
            .expect("setns into the switch namespace");
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.cmd(&["down"]).stdin(Stdio::null()).output();
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.work);
        } else {
            eprintln!("lab work dir kept for inspection: {}", self.work.display());
        }
    }
}
