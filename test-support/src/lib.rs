//! What the tests of both binaries share: a free port, a bounded wait, the HTTP
//! client they use, the workspace's binaries found beside the test, the real server
//! and agent started as processes, the lab of real keepalived hosts
//! (`scripts/lab`), and the opt-in test tiers with their prerequisites.
//!
//! It is a dev-dependency only: nothing here ships.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod changes;
pub mod host_agent;
pub mod lab;
pub mod receiver;
pub mod tier;

pub const ADMIN_PASSWORD: &str = "agent-e2e-admin-pw";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The workspace's binary `name` (`vrrp-monitor`, `vrrp-agent`, `vrrp-load`) of the
/// profile the running test was built with: test executables live in
/// `target/<profile>/deps/`, binaries one folder up. Cargo builds a package's own
/// binaries before its integration tests and `cargo test --workspace` builds every
/// member's; a clear failure when it is missing.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test executable lives in target/<profile>/deps");
    let p = profile_dir.join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --workspace --bins` (or `cargo test --workspace`, which builds every member's binaries) before this test",
        p.display()
    );
    p
}

/// The server binary of this build.
pub fn server_binary() -> PathBuf {
    binary("vrrp-monitor")
}

/// The agent binary of this build.
pub fn agent_binary() -> PathBuf {
    binary("vrrp-agent")
}

/// The repository's root folder (scripts, fixtures and documents are read from it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support lives in the repository root")
        .to_path_buf()
}

/// `name` on the PATH, if it is there.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether this process runs as root (the lab needs namespaces and mounts).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Starts the real agent on `port` with its config, data and a stand-in `/proc`
/// (pid 1 only: no keepalived) under `dir`; `config` is written only when
/// `dir/config.yaml` does not exist yet (a restart keeps what the agent wrote).
/// Its log is appended to `dir/agent.log` across restarts.
pub fn spawn_agent(dir: &Path, config: &str, port: u16, log_level: &str) -> Child {
    let proc_dir = dir.join("proc");
    fs::create_dir_all(proc_dir.join("1")).unwrap();
    fs::write(proc_dir.join("1/comm"), "init\n").unwrap();
    let cfg = dir.join("config.yaml");
    if !cfg.exists() {
        fs::write(&cfg, config).unwrap();
    }
    Command::new(agent_binary())
        .env_clear()
        .env("SVC_CLIENT_CONFIG", &cfg)
        .env("SVC_CLIENT_DATA_DIR", dir.join("data"))
        .env("SVC_PROC_DIR", &proc_dir)
        .env("SVC_CLIENT_PORT", port.to_string())
        .env("LOG_LEVEL", log_level)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("agent.log"))
                .unwrap(),
        )
        .spawn()
        .unwrap()
}

/// `main` of a lab benchmark: runs `bench` only under `cargo bench` (which passes
/// `--bench`; `cargo test --all-targets` starts benchmarks with nothing to do), on
/// its own thread: the lab is entered per thread, and `scripts/lab down` kills every
/// process whose main thread lives in the lab's namespaces.
pub fn bench_main(bench: fn()) {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    if std::thread::spawn(bench).join().is_err() {
        std::process::exit(1);
    }
}

/// Polls `f` every 20 ms until it gives a value; fails the test after `secs`.
pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `done` every 20 ms until it holds; fails the test after `secs`.
pub fn wait_until(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    wait_for(what, secs, || done().then_some(()))
}

/// Reuses a kept-alive connection only well within the servers' 5 s
/// keep-alive: a connection idle longer may meet the server's reaper closing it.
pub fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_idle_age(Duration::from_secs(2))
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .max_redirects(0)
        .build()
        .into()
}

/// (status, Location header, body as JSON or as a string).
pub fn request(
    method: &str,
    url: &str,
    cookie: Option<&str>,
    body: Option<&Value>,
) -> (u16, Option<String>, Value) {
    let h = http();
    let cookie = cookie.map(|c| format!("svc_session={c}"));
    let mut resp = match method {
        "GET" | "DELETE" => {
            let mut r = if method == "GET" {
                h.get(url)
            } else {
                h.delete(url)
            };
            if let Some(c) = &cookie {
                r = r.header("Cookie", c);
            }
            r.call()
        }
        _ => {
            let mut r = if method == "PUT" {
                h.put(url)
            } else {
                h.post(url)
            };
            if let Some(c) = &cookie {
                r = r.header("Cookie", c);
            }
            match body {
                Some(b) => r.send_json(b),
                None => r.send_empty(),
            }
        }
    }
    .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status().as_u16();
    let loc = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, loc, body)
}

/// The real server on a fixed port with its own data directory; restartable.
pub struct Server {
    pub child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    pub bin: PathBuf,
    /// Where it listens (`127.0.0.1` here, the lab's switch address there).
    pub host: String,
    /// Prefix for running it elsewhere (`ip netns exec <ns>`).
    pub wrap: Vec<String>,
    pub log: PathBuf,
    pub log_level: &'static str,
}

impl Server {
    pub fn new(dir: &Path, bin: PathBuf, host: &str, wrap: &[&str]) -> Server {
        fs::create_dir_all(dir).unwrap();
        Server {
            child: None,
            port: free_port(),
            dir: dir.to_path_buf(),
            bin,
            host: host.to_string(),
            wrap: wrap.iter().map(|s| s.to_string()).collect(),
            log: dir.join("server.log"),
            log_level: "info",
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    pub fn start(&mut self) {
        let (prog, args): (PathBuf, Vec<String>) = match self.wrap.split_first() {
            Some((p, rest)) => {
                let mut a: Vec<String> = rest.to_vec();
                a.push(self.bin.display().to_string());
                (PathBuf::from(p), a)
            }
            None => (self.bin.clone(), Vec::new()),
        };
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(prog)
            .args(args)
            .env("SVC_SERVER_DATA_DIR", self.dir.join("data"))
            .env("SVC_SERVER_PORT", self.port.to_string())
            .env("SVC_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("LOG_FORMAT", "json")
            .env("LOG_LEVEL", self.log_level)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for("the server to answer", 30, || {
            http()
                .get(&format!("{}/api/v1/ping", self.local_url()))
                .call()
                .ok()
                .filter(|r| r.status() == 200)
        });
    }

    /// Where this process reaches it (the same address here; tests in the lab reach
    /// the switch namespace through their own route).
    pub fn local_url(&self) -> String {
        self.url()
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let t0 = Instant::now();
            while c.try_wait().ok().flatten().is_none() {
                if t0.elapsed() > Duration::from_secs(10) {
                    let _ = c.kill();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.wait();
        }
    }

    pub fn admin(&self) -> String {
        self.login("admin", ADMIN_PASSWORD)
    }

    /// Logs `user` in; returns the session token.
    pub fn login(&self, user: &str, password: &str) -> String {
        let resp = http()
            .post(&format!("{}/api/login", self.local_url()))
            .send_json(json!({ "username": user, "password": password }))
            .unwrap();
        assert_eq!(resp.status(), 200, "login of {user}");
        resp.headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("svc_session="))
            .and_then(|c| c.split(';').next())
            .expect("session cookie")
            .to_string()
    }

    pub fn token(&self, admin: &str) -> String {
        let (s, _, b) = request(
            "POST",
            &format!("{}/api/v1/tokens", self.local_url()),
            Some(admin),
            Some(&json!({})),
        );
        assert_eq!(s, 200, "{b}");
        b["token"].as_str().unwrap().to_string()
    }

    pub fn get(&self, admin: &str, path: &str) -> Value {
        let (s, _, b) = request(
            "GET",
            &format!("{}{path}", self.local_url()),
            Some(admin),
            None,
        );
        assert_eq!(s, 200, "GET {path}: {b}");
        b
    }

    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A dashboard socket (session cookie), reading with a short timeout.
    pub fn dashboard(&self, admin: &str) -> Dashboard {
        use tungstenite::client::IntoClientRequest;
        let addr = format!("{}:{}", self.host, self.port);
        let stream = std::net::TcpStream::connect(&addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut req = format!("ws://{addr}/ws/dashboard")
            .into_client_request()
            .unwrap();
        req.headers_mut()
            .insert("Cookie", format!("svc_session={admin}").parse().unwrap());
        let (ws, _) = tungstenite::client(req, stream).expect("dashboard socket");
        Dashboard { ws }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A read on a socket with a read timeout that ended by the timeout: nothing has
/// arrived yet and the socket is fine (`WouldBlock` or `TimedOut`, by platform).
pub fn io_timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// [`io_timed_out`] for a WebSocket read.
pub fn ws_timed_out(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(e) if io_timed_out(e))
}

pub struct Dashboard {
    pub ws: tungstenite::WebSocket<std::net::TcpStream>,
}

impl Dashboard {
    /// Next message of `kind` whose payload satisfies `f`, within `secs`.
    pub fn wait(&mut self, kind: &str, secs: u64, mut f: impl FnMut(&Value) -> bool) -> Value {
        let t0 = Instant::now();
        loop {
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "no {kind} on the dashboard within {secs} s"
            );
            match self.ws.read() {
                Ok(tungstenite::Message::Text(t)) => {
                    let v: Value = serde_json::from_str(&t).unwrap();
                    if v["type"] == kind && f(&v["payload"]) {
                        return v["payload"].clone();
                    }
                }
                Ok(_) => {}
                Err(e) if ws_timed_out(&e) => {}
                Err(e) => panic!("dashboard socket: {e}"),
            }
        }
    }
}

/// An activity event in the agent's wire shape (for a preloaded queue.json).
pub fn event(id: &str, occurred_at: &str) -> Value {
    json!({
        "id": id,
        "occurredAt": occurred_at,
        "kind": "vrrp.state_changed",
        "level": "info",
        "correlationId": null,
        "subject": {"instanceName": "VI_1", "vrid": 51, "interface": "eth0"},
        "data": {"from": "BACKUP", "to": "MASTER", "priority": 100, "effectivePriority": 100, "previousPriority": 100, "previousEffectivePriority": 100},
    })
}

/// The pid of the process running `bin` with `SVC_CLIENT_DATA_DIR=data`: an agent
/// started inside a lab host is not our child, so it is found through /proc.
pub fn agent_pid(bin: &Path, data: &Path) -> Option<i32> {
    let want = format!("SVC_CLIENT_DATA_DIR={}", data.display());
    for e in fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if fs::read_link(e.path().join("exe")).ok().as_deref() != Some(bin) {
            continue;
        }
        let env = fs::read(e.path().join("environ")).unwrap_or_default();
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

/// `s` as one URL path segment or query value: every byte but the unreserved
/// ones (RFC 3986) percent-encoded.
pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
