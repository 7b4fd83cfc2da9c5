//! The outbound reconnect figure with the real agent: `vrrp-agent` (no keepalived
//! needed: an empty process table under `SVC_PROC_DIR`, so it reports keepalived
//! stopped) is registered outbound, then stopped and started again each round.
//! Per round it prints when the agent was back (its port listening again, read
//! from /proc/net/tcp without connecting), when the server's ladder step was due
//! and when it dialled (the dial thread's debug line), and when the session
//! authenticated (the server's `connected (outbound)` line). The server's log
//! and this process share the host's clock.

use super::agents::post;
use super::{flag, number};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The real agent in its own temporary directory, on a fixed port.
struct RealAgent {
    binary: String,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl RealAgent {
    fn new(binary: &str) -> Result<RealAgent, String> {
        let dir = std::env::temp_dir().join(format!("vrrp-load-agent-{}", std::process::id()));
        let proc_dir = dir.join("proc/1");
        fs::create_dir_all(&proc_dir).map_err(|e| format!("{}: {e}", proc_dir.display()))?;
        fs::write(proc_dir.join("comm"), "init\n").map_err(|e| e.to_string())?;
        fs::write(dir.join("config.yaml"), "keepalived:\n  pollInterval: 5\n")
            .map_err(|e| e.to_string())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        Ok(RealAgent {
            binary: binary.to_owned(),
            dir,
            port,
            child: None,
        })
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("agent.log")
    }

    fn start(&mut self) -> Result<(), String> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| e.to_string())?;
        let child = Command::new(&self.binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SVC_CLIENT_CONFIG", self.dir.join("config.yaml"))
            .env("SVC_CLIENT_DATA_DIR", self.dir.join("data"))
            .env("SVC_PROC_DIR", self.dir.join("proc"))
            .env("SVC_CLIENT_PORT", self.port.to_string())
            .env("LOG_LEVEL", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary))?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGTERM, as a service manager stops it, and its exit.
    fn stop(&mut self) -> Result<(), String> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)
            .map_err(|e| format!("cannot stop the agent: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err("the agent did not stop within 10 s of SIGTERM".into())
    }

    fn setup_pin(&self) -> Result<String, String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            let log = fs::read_to_string(self.log_path()).unwrap_or_default();
            if let Some(pin) = log.lines().find_map(|l| l.split("Setup PIN: ").nth(1)) {
                return Ok(pin.trim().chars().take(9).collect());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "the agent printed no setup PIN; its log: {}",
            fs::read_to_string(self.log_path()).unwrap_or_default()
        ))
    }
}

impl Drop for RealAgent {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Whether a socket listens on `port` (any address), from the kernel's table:
/// no connection is made, so the agent sees nothing.
fn listening(port: u16) -> bool {
    let wanted = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        fs::read_to_string(table).is_ok_and(|text| {
            text.lines().skip(1).any(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                fields.len() > 3 && fields[1].ends_with(&wanted) && fields[3] == "0A"
            })
        })
    })
}

/// The server's log, read as it grows: each line's time and text (JSON or
/// pretty format).
struct ServerLog {
    file: File,
    offset: u64,
    partial: String,
}

type Line = (DateTime<Utc>, String);

impl ServerLog {
    fn open(path: &Path) -> Result<ServerLog, String> {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(ServerLog {
            file,
            offset: 0,
            partial: String::new(),
        })
    }

    fn new_lines(&mut self) -> Vec<Line> {
        let mut text = String::new();
        if self.file.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let read = self.file.read_to_string(&mut text).unwrap_or(0);
        self.offset += read as u64;
        self.partial.push_str(&text);
        let mut lines = Vec::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            if let Some(parsed) = parse_line(line.trim_end()) {
                lines.push(parsed);
            }
        }
        lines
    }

    /// The lines up to and including the first that `found` accepts.
    fn wait_for(
        &mut self,
        what: &str,
        within: Duration,
        found: impl Fn(&str) -> bool,
    ) -> Result<Vec<Line>, String> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            for line in self.new_lines() {
                let done = found(&line.1);
                seen.push(line);
                if done {
                    return Ok(seen);
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Err(format!(
            "no server log line for {what} within {} s",
            within.as_secs()
        ))
    }
}

fn parse_line(line: &str) -> Option<Line> {
    let (time, text) = if line.starts_with('{') {
        let v: Value = serde_json::from_str(line).ok()?;
        (
            v["time"].as_str()?.to_owned(),
            v["msg"].as_str()?.to_owned(),
        )
    } else {
        let (time, rest) = line.split_once(' ')?;
        (time.to_owned(), rest.to_owned())
    };
    let time = DateTime::parse_from_rfc3339(&time)
        .ok()?
        .with_timezone(&Utc);
    Some((time, text))
}

/// The due time the dial thread's line names (`... due at <time>, ...`).
fn due_of(text: &str) -> Option<DateTime<Utc>> {
    let after = text.split("due at ").nth(1)?;
    let time = after.split(',').next()?;
    Some(DateTime::parse_from_rfc3339(time).ok()?.with_timezone(&Utc))
}

/// One round's moments.
struct Round {
    back: DateTime<Utc>,
    due: Option<DateTime<Utc>>,
    dialled: Option<DateTime<Utc>>,
    authenticated: DateTime<Utc>,
}

fn ms(later: DateTime<Utc>, earlier: DateTime<Utc>) -> f64 {
    (later - earlier).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3
}

pub fn run(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("outbound-reconnect needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("outbound-reconnect needs --token")?;
    let binary = flag(args, "--agent-bin").ok_or("outbound-reconnect needs --agent-bin")?;
    let log_path = flag(args, "--server-log").ok_or("outbound-reconnect needs --server-log")?;
    let rounds = number(args, "--rounds", 10)?.max(1);
    let down = Duration::from_millis(number(args, "--down-ms", 1000)? as u64);
    let mut log = ServerLog::open(Path::new(&log_path))?;
    let mut agent = RealAgent::new(&binary)?;
    agent.start()?;
    let pin = agent.setup_pin()?;
    let body = json!({ "outboundTargetAddress": format!("127.0.0.1:{}", agent.port), "registrationSecret": pin, "hostname": "reconnect-probe" });
    let created = post(&addr, "/api/v1/clients/outbound", &cookie, &body)?;
    let id = created["id"]
        .as_str()
        .ok_or("the create answer has no id")?
        .to_owned();
    let connected = format!("({id}) connected (outbound)");
    let disconnected = format!("({id}) disconnected");
    let dialling = format!("Dialling outbound agent {id}");
    log.wait_for("the first session", Duration::from_secs(15), |l| {
        l.contains(&connected)
    })?;
    println!(
        "the real agent registered outbound on 127.0.0.1:{} as {id}",
        agent.port
    );
    println!(
        "each round: SIGTERM, {} ms down, start again; times in ms",
        down.as_millis()
    );
    println!("round  back->auth  due->auth  due->dial  dial->auth  back before due");

    let mut all = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        // Let the session settle (its first reading in) before it is cut.
        std::thread::sleep(Duration::from_millis(500));
        let stopped = Instant::now();
        agent.stop()?;
        log.wait_for("the session's end", Duration::from_secs(15), |l| {
            l.contains(&disconnected)
        })?;
        std::thread::sleep(down.saturating_sub(stopped.elapsed()));
        agent.start()?;
        let since = Instant::now();
        while !listening(agent.port) {
            if since.elapsed() > Duration::from_secs(15) {
                return Err("the agent did not listen again within 15 s".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let back = Utc::now();
        let lines = log.wait_for("the session's AUTH", Duration::from_secs(120), |l| {
            l.contains(&connected)
        })?;
        let authenticated = lines.last().map(|l| l.0).ok_or("no lines")?;
        let dial = lines.iter().rev().find(|l| l.1.contains(&dialling));
        let r = Round {
            back,
            due: dial.and_then(|l| due_of(&l.1)),
            dialled: dial.map(|l| l.0),
            authenticated,
        };
        let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
        println!(
            "{round:>5}  {:>10.1}  {:>9}  {:>9}  {:>10}  {:>15}",
            ms(r.authenticated, r.back),
            cell(r.due.map(|d| ms(r.authenticated, d))),
            cell(r.due.zip(r.dialled).map(|(d, t)| ms(t, d))),
            cell(r.dialled.map(|t| ms(r.authenticated, t))),
            cell(r.due.map(|d| ms(d, r.back))),
        );
        all.push(r);
    }

    let summary = |name: &str, mut v: Vec<f64>| {
        if v.is_empty() {
            println!("{name:<28} - (the server logs the dial only at LOG_LEVEL=debug)");
            return;
        }
        v.sort_by(f64::total_cmp);
        println!(
            "{name:<28} min {:>7.1}  median {:>7.1}  max {:>7.1} ms",
            v[0],
            v[v.len() / 2],
            v[v.len() - 1]
        );
    };
    println!("over {rounds} rounds:");
    summary(
        "agent back -> authenticated",
        all.iter().map(|r| ms(r.authenticated, r.back)).collect(),
    );
    summary(
        "step due -> authenticated",
        all.iter()
            .filter_map(|r| r.due.map(|d| ms(r.authenticated, d)))
            .collect(),
    );
    summary(
        "step due -> dial started",
        all.iter()
            .filter_map(|r| r.due.zip(r.dialled).map(|(d, t)| ms(t, d)))
            .collect(),
    );
    summary(
        "dial started -> authenticated",
        all.iter()
            .filter_map(|r| r.dialled.map(|t| ms(r.authenticated, t)))
            .collect(),
    );
    agent.stop()?;
    Ok(())
}
