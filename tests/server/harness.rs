//! Starts the real `vrrp-monitor` binary on a free port with a temporary data
//! directory, and speaks HTTP to it.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ADMIN_PASSWORD: &str = "first-run-secret-pw";
/// A keep-alive `GET /api/v1/ping`, for tests that speak raw HTTP.
pub const PING_REQUEST: &[u8] = b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n";

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_vrrp-monitor")
}

/// The load generator (package `vrrp-load`), built beside the server by
/// `cargo test --workspace`: Cargo hands a test only its own package's binaries.
pub fn load_binary() -> std::path::PathBuf {
    vrrp_test_support::binary("vrrp-load")
}

pub use vrrp_test_support::free_port;

/// How to start a server.
pub struct Launch {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
    pub port: u16,
    /// RLIMIT_NOFILE (soft and hard) for the child: the server cannot raise it.
    pub open_files: Option<u64>,
}

impl Launch {
    pub fn new() -> Launch {
        let dir = tempfile::tempdir().unwrap();
        Launch {
            dir,
            env: vec![("SVC_ADMIN_PASSWORD".into(), ADMIN_PASSWORD.into())],
            port: free_port(),
            open_files: None,
        }
    }

    /// Starts the child with at most `n` open descriptors (soft and hard limit).
    pub fn open_files(mut self, n: u64) -> Launch {
        self.open_files = Some(n);
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Launch {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn without_env(mut self, key: &str) -> Launch {
        self.env.retain(|(k, _)| k != key);
        self
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn config_path(&self) -> PathBuf {
        self.data_dir().join("config.yaml")
    }

    /// Writes the config file before start.
    pub fn config(self, text: &str) -> Launch {
        std::fs::create_dir_all(self.data_dir()).unwrap();
        std::fs::write(self.config_path(), text).unwrap();
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(binary());
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SVC_SERVER_DATA_DIR", self.data_dir())
            .env("SVC_SERVER_PORT", self.port.to_string())
            .env("LOG_FORMAT", "json")
            .env("LOG_LEVEL", "debug");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(n) = self.open_files {
            use std::os::unix::process::CommandExt;
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            // SAFETY: runs in the forked child before exec; setrlimit is
            // async-signal-safe and only reads `lim`, which was copied in.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        cmd
    }

    /// Runs a start that is expected to fail; returns its exit status and log lines.
    pub fn run_to_exit(&self) -> (ExitStatus, Vec<Value>) {
        let out = self.command().output().unwrap();
        (out.status, parse_log(&String::from_utf8_lossy(&out.stderr)))
    }

    /// Runs the server inside this process with a clock the test drives.
    pub fn start_in_process(self) -> (Server, vrrp_monitor::clock::ManualClock) {
        self.start_in_process_at(chrono::Utc::now())
    }

    /// Runs the server inside this process with a clock the test drives, starting
    /// at `start` (a restart can then resume where the last run's clock was).
    pub fn start_in_process_at(
        self,
        start: chrono::DateTime<chrono::Utc>,
    ) -> (Server, vrrp_monitor::clock::ManualClock) {
        use vrrp_monitor::{app, clock::ManualClock, config, lifecycle::Shutdown};
        let mut env =
            config::Env::default().with("SVC_SERVER_DATA_DIR", self.data_dir().to_str().unwrap());
        for (k, v) in &self.env {
            env = env.with(k, v);
        }
        let loaded = config::load(&env).expect("config");
        // A server stopped in this process a moment ago may still hold its port:
        // tiny_http's accept thread closes the listen socket after shutdown, not
        // before `stop_in_process` returns. Wait for that, up to 10 s, instead
        // of failing at once.
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)) {
                Ok(l) => break l,
                Err(e)
                    if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("cannot listen on port {}: {e}", self.port),
            }
        };
        let clock = ManualClock::new(start);
        let shutdown = Shutdown::new();
        let (c, s) = (clock.clone(), shutdown.clone());
        let thread = std::thread::spawn(move || {
            app::run(loaded.config, listener, std::sync::Arc::new(c), s).expect("server runs")
        });
        let server = Server {
            child: None,
            inproc: Some((shutdown, thread)),
            launch: self,
            log: Arc::default(),
            http: http_agent(),
        };
        server.wait_ready();
        (server, clock)
    }

    /// Starts the server and waits until it answers.
    pub fn start(self) -> Server {
        let mut child = self.command().spawn().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let server = Server {
            child: Some(child),
            inproc: None,
            launch: self,
            log,
            http: http_agent(),
        };
        server.wait_ready();
        server
    }
}

/// Log lines as JSON. A pretty line (written before the log format is known, e.g.
/// for an invalid LOG_FORMAT) is read as `{level, msg}` from its text.
pub fn parse_log(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|_| {
                let level = l
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                serde_json::json!({ "level": level, "msg": l })
            })
        })
        .collect()
}

/// A client as a well-behaved one is: it reuses a kept-alive connection only
/// well within the server's 5 s keep-alive (ureq's default is 15 s), so a
/// request never meets the reaper closing that connection (a reset in CI).
pub fn http_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_idle_age(Duration::from_secs(2))
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into()
}

pub struct Server {
    child: Option<Child>,
    /// A server run in this process (driven clock): its stop switch and thread.
    inproc: Option<(
        vrrp_monitor::lifecycle::Shutdown,
        std::thread::JoinHandle<()>,
    )>,
    pub launch: Launch,
    log: Arc<Mutex<String>>,
    pub http: ureq::Agent,
}

/// An answer: status, headers (lower-case names) and the body as JSON.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The value of cookie `name` as set by this answer.
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.all("set-cookie").into_iter().find_map(|c| {
            let first = c.split(';').next()?;
            let (k, v) = first.split_once('=')?;
            (k == name).then(|| v.to_owned())
        })
    }

    pub fn error(&self) -> &str {
        self.body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error text in {:?}", self.body))
    }
}

/// Credentials a request carries.
#[derive(Clone, Copy)]
pub enum Auth<'a> {
    None,
    Cookie(&'a str),
    Bearer(&'a str),
}

impl Server {
    pub fn start() -> Server {
        Launch::new().start()
    }

    pub fn port(&self) -> u16 {
        self.launch.port
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the log holds `needle` (log lines arrive through a pipe).
    pub fn wait_log(&self, needle: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.log_text().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = self.http.get(self.url("/api/v1/ping")).call() {
                if r.status() == 200 {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "server did not answer; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        auth: Auth<'_>,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Answer {
        let mut builder = ureq::http::Request::builder()
            .method(method)
            .uri(self.url(path));
        match auth {
            Auth::None => {}
            Auth::Cookie(t) => {
                builder = builder.header("cookie", format!("svc_session={t}; svc_auth=1"))
            }
            Auth::Bearer(t) => builder = builder.header("authorization", format!("Bearer {t}")),
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let resp = match body {
            Some(b) => self.http.run(
                builder
                    .header("content-type", "application/json")
                    .body(b.to_owned())
                    .unwrap(),
            ),
            None => self.http.run(builder.body(()).unwrap()),
        };
        let mut resp = resp.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Answer {
            status,
            headers,
            body,
        }
    }

    pub fn get(&self, path: &str, auth: Auth<'_>) -> Answer {
        self.request("GET", path, auth, &[], None)
    }

    pub fn post(&self, path: &str, auth: Auth<'_>, body: &str) -> Answer {
        self.request("POST", path, auth, &[], Some(body))
    }

    pub fn put(&self, path: &str, auth: Auth<'_>, body: &str) -> Answer {
        self.request("PUT", path, auth, &[], Some(body))
    }

    pub fn delete(&self, path: &str, auth: Auth<'_>) -> Answer {
        self.request("DELETE", path, auth, &[], None)
    }

    pub fn login_answer(&self, username: &str, password: &str) -> Answer {
        self.post(
            "/api/login",
            Auth::None,
            &serde_json::json!({ "username": username, "password": password }).to_string(),
        )
    }

    /// Logs in and returns the session token.
    pub fn login(&self, username: &str, password: &str) -> String {
        let a = self.login_answer(username, password);
        assert_eq!(a.status, 200, "login of {username}: {:?}", a.body);
        a.cookie("svc_session").expect("session cookie")
    }

    pub fn admin(&self) -> String {
        self.login("admin", ADMIN_PASSWORD)
    }

    /// A user of `role` made by the administrator (password `<name>-password-1`),
    /// logged in: its session token.
    pub fn user(&self, admin: &str, name: &str, role: &str) -> String {
        let password = format!("{name}-password-1");
        let a = self.post(
            "/api/v1/users",
            Auth::Cookie(admin),
            &serde_json::json!({ "username": name, "password": password, "role": role })
                .to_string(),
        );
        assert_eq!(a.status, 201, "{:?}", a.body);
        self.login(name, &password)
    }

    /// Sends a signal to the server.
    pub fn signal(&self, signal: i32) {
        unsafe_kill(self.pid(), signal);
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let child = self.child.as_mut().unwrap();
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stop(mut self) -> (ExitStatus, Launch) {
        self.signal(15);
        let status = self.wait_exit(Duration::from_secs(10));
        let child = self.child.take();
        drop(child);
        // Give the stderr reader a moment to drain.
        std::thread::sleep(Duration::from_millis(50));
        let launch = std::mem::replace(&mut self.launch, Launch::new());
        (status, launch)
    }

    /// How many descriptors the server has open, from /proc.
    pub fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// The server's thread names, from /proc.
    pub fn thread_names(&self) -> Vec<String> {
        let dir = format!("/proc/{}/task", self.pid());
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|s| s.trim_end().to_owned())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((shutdown, thread)) = self.inproc.take() {
            shutdown.trigger();
            let _ = thread.join();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn unsafe_kill(pid: u32, signal: i32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The fatal lines of a log.
pub fn fatal_lines(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["level"] == "fatal")
        .map(|l| l["msg"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A WebSocket client speaking the `{type, payload}` envelope over a real socket.
pub struct Ws {
    pub ws: tungstenite::WebSocket<std::net::TcpStream>,
}

/// How a WebSocket ended, as the client saw it.
#[derive(Debug, PartialEq)]
pub enum Ending {
    Close(u16, String),
    /// The connection dropped without a close frame.
    Dropped,
}

impl Ws {
    pub fn connect(port: u16, path: &str, headers: &[(&str, &str)]) -> Ws {
        use tungstenite::client::IntoClientRequest;
        let mut request = format!("ws://127.0.0.1:{port}{path}")
            .into_client_request()
            .unwrap();
        for (k, v) in headers {
            request.headers_mut().insert(
                tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                tungstenite::http::HeaderValue::from_str(v).unwrap(),
            );
        }
        let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let (ws, _) = tungstenite::client::client(request, stream).expect("WebSocket handshake");
        Ws { ws }
    }

    pub fn send(&mut self, kind: &str, payload: Value) {
        self.send_raw(&serde_json::json!({ "type": kind, "payload": payload }).to_string());
    }

    pub fn send_raw(&mut self, text: &str) {
        self.ws.send(tungstenite::Message::text(text)).unwrap();
    }

    /// The next message, or how the socket ended; `None` after `timeout` of silence.
    pub fn next(&mut self, timeout: Duration) -> Option<Result<Value, Ending>> {
        self.ws.get_mut().set_read_timeout(Some(timeout)).unwrap();
        loop {
            match self.ws.read() {
                Ok(tungstenite::Message::Text(t)) => {
                    return Some(Ok(serde_json::from_str(t.as_str()).unwrap()))
                }
                Ok(tungstenite::Message::Close(frame)) => {
                    let ending = frame.map_or(Ending::Dropped, |f| {
                        Ending::Close(u16::from(f.code), f.reason.to_string())
                    });
                    return Some(Err(ending));
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None
                }
                Err(_) => return Some(Err(Ending::Dropped)),
            }
        }
    }

    /// The next message of type `kind`, skipping others.
    pub fn expect(&mut self, kind: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left.max(Duration::from_millis(1))) {
                Some(Ok(m)) if m["type"] == kind => return m["payload"].clone(),
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("socket ended ({e:?}) while waiting for {kind}"),
                None => panic!("no {kind} within 10 s"),
            }
        }
    }

    /// How the socket ends, skipping messages before.
    pub fn ending(&mut self) -> Ending {
        loop {
            match self.next(Duration::from_secs(10)) {
                Some(Ok(_)) => continue,
                Some(Err(e)) => return e,
                None => panic!("socket did not end within 10 s"),
            }
        }
    }

    /// Asserts that nothing of type `kind` arrives within `quiet`.
    pub fn assert_no(&mut self, kind: &str, quiet: Duration) {
        let deadline = Instant::now() + quiet;
        while Instant::now() < deadline {
            if let Some(Ok(m)) = self.next(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ) {
                assert_ne!(m["type"], kind, "unexpected {m}");
            }
        }
    }
}

/// An agent's identity, from a token and `POST /api/v1/register`.
pub struct Agent {
    pub id: String,
    pub token: String,
}

impl Server {
    pub fn register_agent(&self, admin: &str, hostname: &str) -> Agent {
        let t = self.post("/api/v1/tokens", Auth::Cookie(admin), "{}");
        assert_eq!(t.status, 200, "{:?}", t.body);
        let token = t.body["token"].as_str().unwrap();
        let r = self.post(
            "/api/v1/register",
            Auth::None,
            &serde_json::json!({ "token": token, "hostname": hostname }).to_string(),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
        Agent {
            id: r.body["clientId"].as_str().unwrap().to_owned(),
            token: r.body["token"].as_str().unwrap().to_owned(),
        }
    }

    pub fn agent_socket(&self, agent: &Agent) -> Ws {
        Ws::connect(
            self.port(),
            &format!("/ws/agent?clientId={}&token={}", agent.id, agent.token),
            &[],
        )
    }

    /// Connects and authenticates an agent.
    pub fn connect_agent(&self, agent: &Agent) -> Ws {
        let mut ws = self.agent_socket(agent);
        ws.send(
            "AUTH",
            serde_json::json!({ "hostname": "h", "version": "1.2.3", "capabilities": ["vrrp"] }),
        );
        let ok = ws.expect("AUTH_SUCCESS");
        assert_eq!(ok["clientId"], agent.id.as_str());
        assert!(ok["lastSyncTime"].is_null());
        ws
    }

    pub fn dashboard(&self, token: &str) -> Ws {
        Ws::connect(
            self.port(),
            "/ws/dashboard",
            &[("cookie", &format!("svc_session={token}"))],
        )
    }

    /// Runs SQL against the server's database (to set up what the API cannot, like
    /// an expired token).
    pub fn sql(&self, statement: &str) {
        let conn =
            rusqlite::Connection::open(self.launch.data_dir().join("vrrp-monitor.db")).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn.execute_batch(statement).unwrap();
    }
}

/// A reading as an agent sends it.
pub fn reading(states: &[(&str, &str)]) -> Value {
    // A master's priority above its backups', as a configured pair has: equal
    // priorities would be a readiness finding (priority_tie) of their own.
    let instances: Vec<Value> = states
        .iter()
        .map(|(name, state)| {
            let priority = if *state == "MASTER" { 110 } else { 100 };
            serde_json::json!({ "name": name, "state": state, "vrid": 51, "priority": priority, "vips": ["192.0.2.100/24"], "stats": { "advertisements_sent": 3 } })
        })
        .collect();
    serde_json::json!({ "collectedAt": "2026-11-21T08:00:00.000Z", "running": true, "pid": 42, "version": "2.2.7", "source": "data", "error": null, "instances": instances, "syncGroups": [] })
}

impl Server {
    /// Kills the server with SIGKILL (no chance to clean up) and hands back its launch.
    pub fn kill9(mut self) -> Launch {
        self.signal(9);
        let _ = self.wait_exit(Duration::from_secs(10));
        self.child.take();
        std::mem::replace(&mut self.launch, Launch::new())
    }
}

impl Server {
    /// Stops a server run in this process and hands back its launch (same data).
    pub fn stop_in_process(mut self) -> Launch {
        if let Some((shutdown, thread)) = self.inproc.take() {
            shutdown.trigger();
            let _ = thread.join();
        }
        std::mem::replace(&mut self.launch, Launch::new())
    }
}

/// An ACTIVITY payload with one `test.load` event per id.
pub fn event_batch(ids: &[String]) -> Value {
    let events: Vec<Value> = ids
        .iter()
        .map(|id| serde_json::json!({ "id": id, "occurredAt": "2026-11-21T08:00:00.000Z", "kind": "test.load", "level": "info", "subject": {}, "data": {} }))
        .collect();
    serde_json::json!({ "events": events })
}

impl Server {
    /// The activity list's cluster events (`vrrp.*`), newest first.
    pub fn cluster_events(&self, admin: &str) -> Vec<Value> {
        let list = self.get("/api/v1/activity", Auth::Cookie(admin)).body;
        list.as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"].as_str().unwrap().starts_with("vrrp."))
            .cloned()
            .collect()
    }

    /// Sends each agent's reading and waits for its dashboard broadcast before the
    /// next: a session tells the evaluator of a reading before it broadcasts it, so
    /// the evaluator sees them in this order. Two agents' sockets otherwise race,
    /// and a first sighting of the BACKUP alone is a cluster without a master.
    pub fn send_in_order(&self, admin: &str, sends: Vec<(&mut Ws, &Agent, Value)>) {
        let mut dash = self.dashboard(admin);
        dash.expect("ACTIVITY_UPDATE");
        for (ws, agent, reading) in sends {
            ws.send("KEEPALIVED_UPDATE", reading);
            while dash.expect("KEEPALIVED_STATE_UPDATE")["clientId"] != agent.id.as_str() {}
        }
    }

    /// Two agents, `lb-a` and `lb-b`, registered and connected (authenticated).
    pub fn two_agents(&self, admin: &str) -> (Agent, Ws, Agent, Ws) {
        let a = self.register_agent(admin, "lb-a");
        let b = self.register_agent(admin, "lb-b");
        let wa = self.connect_agent(&a);
        let wb = self.connect_agent(&b);
        (a, wa, b, wb)
    }
}
