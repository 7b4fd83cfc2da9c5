//! The real `vrrp-agent` binary as a child process, started with a temporary data
//! directory and config on a free port. keepalived is absent (an empty process table
//! under `SVC_PROC_DIR`); its stderr goes to `stderr.log` beside the config.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use vrrp_test_support::free_port;

pub struct Agent {
    pub child: Option<Child>,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Agent {
    /// Writes `config` and starts the agent with `env` (plus a private data dir, an
    /// empty process table and a free port unless given).
    pub fn start(config: &str, env: &[(&str, &str)]) -> Agent {
        Agent::start_prepared(config, env, None, |_| {})
    }

    /// As `start`, with `prepare` run on the agent's folder first (a data directory
    /// to start from, files beside it), and with `umask` set the agent runs under it
    /// (systemd's unit gives it 077).
    pub fn start_prepared(
        config: &str,
        env: &[(&str, &str)],
        umask: Option<u32>,
        prepare: impl FnOnce(&Path),
    ) -> Agent {
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join("proc");
        fs::create_dir_all(proc_dir.join("1")).unwrap();
        fs::write(proc_dir.join("1/comm"), "init\n").unwrap();
        let cfg = dir.path().join("config.yaml");
        fs::write(&cfg, config).unwrap();
        prepare(dir.path());
        let port = free_port();
        let bin = env!("CARGO_BIN_EXE_vrrp-agent");
        let mut cmd = match umask {
            None => Command::new(bin),
            Some(mask) => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c")
                    .arg(format!("umask {mask:03o} && exec \"$0\""))
                    .arg(bin);
                c
            }
        };
        cmd.env_clear()
            .env("SVC_CLIENT_CONFIG", &cfg)
            .env("SVC_CLIENT_DATA_DIR", dir.path().join("data"))
            .env("SVC_PROC_DIR", &proc_dir)
            .env("SVC_CLIENT_PORT", port.to_string())
            .env("LOG_LEVEL", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.path().join("stderr.log")).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Agent {
            child: Some(cmd.spawn().unwrap()),
            port,
            dir,
        }
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn identity(&self) -> PathBuf {
        self.dir.path().join("data/identity.json")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// Waits (15 s at the most) for `needle` in the log; gives the log.
    pub fn wait_log(&self, needle: &str) -> String {
        vrrp_test_support::wait_for(&format!("log line {needle:?}"), 15, || {
            let l = self.log();
            l.contains(needle).then_some(l)
        })
    }

    /// Every setup PIN printed so far, oldest first.
    pub fn pins(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| l.split("Setup PIN: ").nth(1))
            .map(|p| p.trim().chars().take(9).collect())
            .collect()
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        let pid = self.child.as_ref().unwrap().id() as i32;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
    }

    /// Waits (10 s at the most) for the agent to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        let t0 = Instant::now();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "agent did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs to its end (a start that fails) and returns (exit code, log).
    pub fn exit(mut self) -> (Option<i32>, String) {
        let status = self.wait_exit();
        (status.code(), self.log())
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
