//! An agent running inside a lab host, the server in the lab's switch namespace,
//! and an agent's registration through its own register page: the lab tests and the
//! failover benchmarks.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::lab::Lab;
use super::*;

pub const CONFIG: &str =
    "keepalived:\n  pollInterval: 5\n  notifyFifo: /tmp/keepalived_vrrp.fifo\n";

pub struct HostAgent {
    pub host: String,
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub child: Option<Child>,
    pub runs: u32,
    pub log_level: &'static str,
    /// Extra environment of the agent process.
    pub env: Vec<(String, String)>,
}

impl HostAgent {
    pub fn new(lab: &Lab, host: &str) -> HostAgent {
        let dir = lab.work.join(format!("agent-{host}"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("config.yaml"), CONFIG).unwrap();
        HostAgent {
            host: host.into(),
            dir,
            bin: lab.work.join("vrrp-agent"),
            child: None,
            runs: 0,
            log_level: "debug",
            env: Vec::new(),
        }
    }

    pub fn start(&mut self, lab: &Lab) {
        self.runs += 1;
        let log = fs::File::create(self.log_path(self.runs)).unwrap();
        let mut cmd = lab.cmd(&["exec", &self.host, self.bin.to_str().unwrap()]);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let child = cmd
            .env("SVC_CLIENT_CONFIG", self.dir.join("config.yaml"))
            .env("SVC_CLIENT_DATA_DIR", self.dir.join("data"))
            .env("LOG_LEVEL", self.log_level)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for("the agent's web server", 20, || {
            self.log().contains("Web server listening").then_some(())
        });
    }

    pub fn log_path(&self, run: u32) -> PathBuf {
        self.dir.join(format!("agent-{run}.log"))
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path(self.runs)).unwrap_or_default()
    }

    pub fn all_logs(&self) -> String {
        (1..=self.runs)
            .map(|r| fs::read_to_string(self.log_path(r)).unwrap_or_default())
            .collect()
    }

    pub fn get(&self, lab: &Lab, path: &str) -> Value {
        let (_, b) = lab.curl(&self.host, &[&format!("http://127.0.0.1:3011{path}")]);
        serde_json::from_str(&b).unwrap_or(Value::Null)
    }

    pub fn post(&self, lab: &Lab, path: &str, body: &Value) -> (u16, Value) {
        let (s, b) = lab.curl(
            &self.host,
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "-d",
                &body.to_string(),
                &format!("http://127.0.0.1:3011{path}"),
            ],
        );
        (s, serde_json::from_str(&b).unwrap_or(Value::Null))
    }

    pub fn queue(&self) -> Vec<Value> {
        fs::read_to_string(self.dir.join("data/queue.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["events"].as_array().cloned())
            .unwrap_or_default()
    }

    /// The agent's PID as the root PID namespace sees it.
    pub fn pid(&self) -> Option<i32> {
        super::agent_pid(&self.bin, &self.dir.join("data"))
    }

    pub fn kill(&mut self, sig: nix::sys::signal::Signal) {
        let pid = self.pid().expect("agent process");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
        if let Some(mut c) = self.child.take() {
            let t0 = Instant::now();
            while c.try_wait().unwrap().is_none() {
                assert!(t0.elapsed() < Duration::from_secs(15), "agent did not exit");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    pub fn connected(&self, lab: &Lab) -> bool {
        self.get(lab, "/api/status/connection")["connected"] == true
    }
}

impl Drop for HostAgent {
    fn drop(&mut self) {
        if self.child.is_some() {
            if let Some(pid) = self.pid() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// A lab of `hosts` hosts with the server ready to start in its switch namespace
/// (203.0.113.254, reached by every host over the management network), both
/// binaries copied under the lab's work folder (the hosts' /tmp is their own).
/// The calling thread stays in the switch namespace.
pub fn lab_with_server(hosts: usize, tag: &str) -> (Lab, Server) {
    server_in(Lab::up(hosts, tag))
}

/// [`lab_with_server`] for a lab already up.
pub fn server_in(mut lab: Lab) -> (Lab, Server) {
    lab.enter_switch();
    fs::copy(agent_binary(), lab.work.join("vrrp-agent")).unwrap();
    let sbin = lab.work.join("vrrp-monitor");
    fs::copy(server_binary(), &sbin).unwrap();
    let server = Server::new(&lab.work.join("server"), sbin, "203.0.113.254", &[]);
    (lab, server)
}

/// Registers an agent through its register page with the PIN from its log; returns
/// the client id.
pub fn register(lab: &Lab, server: &Server, admin: &str, a: &HostAgent) -> String {
    let pin = wait_for("the PIN", 10, || {
        a.log()
            .lines()
            .find_map(|l| l.split("Setup PIN: ").nth(1).map(|p| p.trim().to_string()))
    });
    let token = server.token(admin);
    let (s, b) = a.post(
        lab,
        "/api/register",
        &json!({"url": server.url(), "token": token, "pin": pin}),
    );
    assert_eq!(s, 200, "{}: {b}", a.host);
    wait_for("connected", 20, || a.connected(lab).then_some(()));
    let id: Value =
        serde_json::from_str(&fs::read_to_string(a.dir.join("data/identity.json")).unwrap())
            .unwrap();
    id["clientId"].as_str().unwrap().to_string()
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
