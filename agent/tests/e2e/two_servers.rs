//! An agent registered with two servers, end to end with the real binaries:
//! one `vrrp-agent` and two `vrrp-monitor`s on free ports with their own data
//! directories. keepalived is simulated in the agent's `SVC_PROC_DIR` (a `keepalived`
//! entry appears and goes: `keepalived.started`, `.unreadable`, `.stopped`), and every
//! reading is triggered through the notify endpoint (poll timer off), so no test waits
//! for a spec interval; a reconnect is asked for with `POST /api/connect` instead of
//! waiting for the ladder.
//!
//! Inbound: the register page takes a second server and keeps the first; both servers
//! record the same events once; with one server stopped the other gets new events
//! live, the agent keeps them (across a restart too) for the stopped one, which catches
//! up to the same activity list when it returns. Outbound: two servers register the
//! agent through `/ws/register` and both dial it.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use vrrp_test_support::*;

const NOTIFY_TOKEN: &str = "two-servers-notify-token";

struct Agent {
    child: Option<Child>,
    /// The stand-in keepalived: a process of ours that ignores SIGUSR1/SIGUSR2 (so the
    /// agent finds it alive and its dump never comes: a reading with an error).
    fake: Option<Child>,
    port: u16,
    dir: PathBuf,
    log: PathBuf,
}

impl Agent {
    fn start(dir: &Path, config: &str, port: u16) -> Agent {
        let log = dir.join("agent.log");
        // The log is appended to across restarts: wait for this run's line.
        let runs = fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("Web server listening")
            .count();
        let child = spawn_agent(dir, config, port, "debug");
        let a = Agent {
            child: Some(child),
            fake: None,
            port,
            dir: dir.to_path_buf(),
            log,
        };
        wait_for("the agent's web server", 20, || {
            (a.log().matches("Web server listening").count() > runs).then_some(())
        });
        a
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// This run's setup PIN (the log holds earlier runs' too).
    fn pin(&self) -> String {
        wait_for("the setup PIN", 20, || {
            let log = self.log();
            let this_run = log.rsplit("Web server listening").next()?;
            this_run
                .lines()
                .find_map(|l| l.split("Setup PIN: ").nth(1).map(|p| p[..9].to_string()))
        })
    }

    fn get(&self, path: &str) -> (u16, Option<String>, Value) {
        request("GET", &self.url(path), None, None)
    }

    fn register(&self, url: &str, token: &str, pin: &str) -> (u16, Value) {
        let (s, _, b) = request(
            "POST",
            &self.url("/api/register"),
            None,
            Some(&json!({ "url": url, "token": token, "pin": pin })),
        );
        (s, b)
    }

    /// keepalived appears (true) or goes (false) in the agent's process table, then a
    /// reading is asked for through the notify endpoint.
    fn keepalived(&mut self, running: bool) {
        if running {
            let child = Command::new("sh")
                .args(["-c", "trap '' USR1 USR2; exec sleep 600"])
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            let pid = child.id();
            self.fake = Some(child);
            let d = self.dir.join("proc").join(pid.to_string());
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("comm"), "keepalived\n").unwrap();
            fs::write(d.join("stat"), format!("{pid} (keepalived) S 1 1 1 0 -1")).unwrap();
            // SIGUSR1 and SIGUSR2 ignored (bits 10 and 12), as the real process has them.
            fs::write(
                d.join("status"),
                "Name:\tkeepalived\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000a00\nSigCgt:\t0000000000000000\n",
            )
            .unwrap();
            let root = self.dir.join("kroot");
            fs::create_dir_all(root.join("tmp")).unwrap();
            std::os::unix::fs::symlink(&root, d.join("root")).unwrap();
        } else if let Some(mut c) = self.fake.take() {
            fs::remove_dir_all(self.dir.join("proc").join(c.id().to_string())).unwrap();
            let _ = c.kill();
            let _ = c.wait();
        }
        let resp = http()
            .post(self.url("/api/keepalived/notify"))
            .header("Authorization", format!("Bearer {NOTIFY_TOKEN}"))
            .send_empty()
            .unwrap();
        assert!(resp.status().is_success(), "notify: {}", resp.status());
    }

    /// Waits until the agent has two servers and a session with each.
    fn wait_both_connected(&self) {
        wait_for("both servers connected", 20, || {
            let s = self.servers();
            (s.len() == 2 && s.iter().all(|x| x["connected"] == true)).then_some(())
        });
    }

    fn servers(&self) -> Vec<Value> {
        self.get("/api/status/connection").2["servers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// queue.json as it is on disk (null before its first write).
    fn queue_file(&self) -> Value {
        fs::read_to_string(self.dir.join("data/queue.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            assert_eq!(c.wait().unwrap().code(), Some(0), "agent exit");
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("agent log:\n{}", self.log());
        }
        if let Some(mut c) = self.fake.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn config() -> String {
    // A short dump wait: the stand-in keepalived never writes one.
    format!(
        "maxServers: 2\nkeepalived:\n  pollInterval: 0\n  dumpTimeoutMs: 50\n  notifyToken: {NOTIFY_TOKEN}\n"
    )
}

/// The agent's events on a server: event id → how many times it is listed.
fn agent_events(server: &Server, admin: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for a in server
        .get(admin, "/api/v1/activity?limit=500")
        .as_array()
        .unwrap()
    {
        if a["kind"]
            .as_str()
            .is_some_and(|k| k.starts_with("keepalived."))
        {
            *out.entry(a["id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    out
}

fn wait_events(server: &Server, admin: &str, n: usize) -> BTreeMap<String, usize> {
    let t0 = std::time::Instant::now();
    loop {
        let ev = agent_events(server, admin);
        if ev.len() >= n {
            return ev;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "{n} agent events on {}: {}",
            server.url(),
            server.get(admin, "/api/v1/activity?limit=500")
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn servers(tmp: &Path) -> (Server, Server) {
    let mut a = Server::new(&tmp.join("server-a"), server_binary(), "127.0.0.1", &[]);
    let mut b = Server::new(&tmp.join("server-b"), server_binary(), "127.0.0.1", &[]);
    a.start();
    b.start();
    (a, b)
}

#[test]
fn both_servers_get_every_event_once_and_a_returning_server_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let (sa, mut sb) = servers(tmp.path());
    let (admin_a, admin_b) = (sa.admin(), sb.admin());
    let adir = tmp.path().join("agent");
    let mut agent = Agent::start(&adir, &config(), free_port());
    let pin = agent.pin();

    // The first registration keeps the page open for a second server.
    let (s, b) = agent.register(&sa.url(), &sa.token(&admin_a), &pin);
    assert_eq!((s, b["moreServers"].as_u64()), (200, Some(1)), "{b}");
    assert_eq!(agent.get("/register").0, 200, "the page stays open");
    let auth = agent.get("/api/status/auth").2;
    assert_eq!(auth["servers"][0]["serverUrl"], sa.url().as_str(), "{auth}");
    assert_eq!(auth["moreServers"], 1, "{auth}");
    let (s, b) = agent.register(&sa.url(), &sa.token(&admin_a), &pin);
    assert_eq!((s, b["field"].as_str()), (409, Some("url")), "{b}");
    let (s, b) = agent.register(&sb.url(), &sb.token(&admin_b), &pin);
    assert_eq!(s, 200, "{b}");
    // Full: the page and the route are gone, as after a one-server registration.
    assert_eq!(agent.get("/register").1.as_deref(), Some("/status"));
    assert_eq!(agent.register(&sb.url(), "x", &pin).0, 404);

    // The first server is where a one-server agent keeps it; the second in servers.json.
    let data = adir.join("data");
    let identity: Value =
        serde_json::from_str(&fs::read_to_string(data.join("identity.json")).unwrap()).unwrap();
    let extra: Value =
        serde_json::from_str(&fs::read_to_string(data.join("servers.json")).unwrap()).unwrap();
    assert_eq!(
        fs::metadata(data.join("servers.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_eq!(
        extra["servers"][0]["serverUrl"],
        sb.url().as_str(),
        "{extra}"
    );
    let cfg = fs::read_to_string(adir.join("config.yaml")).unwrap();
    assert!(cfg.contains(&format!("serverUrl: {}", sa.url())), "{cfg}");
    assert!(!cfg.contains(&sb.url()), "{cfg}");
    let id_a = identity["clientId"].as_str().unwrap().to_string();
    let id_b = extra["servers"][0]["clientId"]
        .as_str()
        .unwrap()
        .to_string();
    for token in [&identity["authToken"], &extra["servers"][0]["authToken"]] {
        assert!(
            !agent.log().contains(token.as_str().unwrap()),
            "token in the log"
        );
    }
    agent.wait_both_connected();

    // Live: both servers record the same events, each once; the queue empties.
    agent.keepalived(true);
    let on_a = wait_events(&sa, &admin_a, 2);
    let on_b = wait_events(&sb, &admin_b, 2);
    assert_eq!(on_a, on_b);
    assert!(on_a.values().all(|n| *n == 1), "{on_a:?}");
    wait_for("the queue emptied", 20, || {
        let q = agent.queue_file();
        (q["events"].as_array()?.is_empty() && q.get("acked").is_none()).then_some(())
    });

    // B stops; A gets the next events live, the agent keeps them for B.
    sb.stop();
    wait_for("B's session gone", 20, || {
        (agent.servers()[1]["connected"] == false).then_some(())
    });
    agent.keepalived(false);
    agent.keepalived(true);
    let on_a = wait_events(&sa, &admin_a, on_b.len() + 3);
    assert!(on_a.values().all(|n| *n == 1), "{on_a:?}");
    let waiting = wait_for("B's events acknowledged by A, kept for B", 20, || {
        let q = agent.queue_file();
        let acked = q["acked"][&id_a].as_array()?.len();
        (acked == 3 && q["events"].as_array()?.len() == 3).then_some(q)
    });
    assert!(waiting["acked"].get(&id_b).is_none(), "{waiting}");
    let st = agent.servers();
    assert_eq!(
        (
            st[0]["pendingEvents"].as_u64(),
            st[1]["pendingEvents"].as_u64()
        ),
        (Some(0), Some(3))
    );

    // A restart keeps each server's position: nothing reaches A twice. (The stand-in
    // keepalived stays up across it.)
    agent.stop();
    let fake = agent.fake.take();
    let port = agent.port;
    drop(agent);
    let mut agent = Agent::start(&adir, &config(), port);
    agent.fake = fake;
    assert_eq!(
        agent.log().matches("Setup PIN: ").count(),
        1,
        "no PIN once full"
    );
    wait_for("A connected again", 20, || {
        (agent.servers()[0]["connected"] == true).then_some(())
    });
    agent.keepalived(false);
    let on_a = wait_events(&sa, &admin_a, on_b.len() + 4);
    assert!(on_a.values().all(|n| *n == 1), "{on_a:?}");

    // B returns (same port and database) and catches up to A's list, each event once.
    sb.start();
    let (s, _, c) = request("POST", &agent.url("/api/connect"), None, None);
    assert_eq!((s, c["connected"].as_bool()), (200, Some(true)), "{c}");
    let caught_up = wait_events(&sb, &admin_b, on_a.len());
    assert_eq!(caught_up, on_a, "B's list is A's");
    assert!(on_a.values().all(|n| *n == 1));
    wait_for("the queue emptied after the catch-up", 20, || {
        let q = agent.queue_file();
        (q["events"].as_array()?.is_empty() && q.get("acked").is_none()).then_some(())
    });
    assert!(!agent
        .log()
        .contains(identity["authToken"].as_str().unwrap()));
    agent.stop();
}

#[test]
fn two_servers_register_the_agent_outbound_and_both_dial_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (sa, sb) = servers(tmp.path());
    let (admin_a, admin_b) = (sa.admin(), sb.admin());
    let adir = tmp.path().join("agent");
    let port = free_port();
    let mut agent = Agent::start(&adir, &config(), port);
    let pin = agent.pin();
    let mut ids = Vec::new();
    for (server, admin) in [(&sa, &admin_a), (&sb, &admin_b)] {
        let (status, _, body) = request(
            "POST",
            &format!("{}/api/v1/clients/outbound", server.local_url()),
            Some(admin),
            Some(
                &json!({ "outboundTargetAddress": format!("127.0.0.1:{port}"), "registrationSecret": pin }),
            ),
        );
        assert_eq!(status, 200, "{body}");
        ids.push(body["id"].as_str().unwrap().to_string());
    }
    // A third server would be refused: the agent is full.
    let data = adir.join("data");
    let identity: Value =
        serde_json::from_str(&fs::read_to_string(data.join("identity.json")).unwrap()).unwrap();
    let extra: Value =
        serde_json::from_str(&fs::read_to_string(data.join("servers.json")).unwrap()).unwrap();
    assert_eq!(identity["clientId"], ids[0].as_str());
    assert_eq!(extra["servers"][0]["clientId"], ids[1].as_str());
    assert!(extra["servers"][0].get("serverUrl").is_none(), "{extra}");
    agent.wait_both_connected();
    agent.keepalived(true);
    let on_a = wait_events(&sa, &admin_a, 2);
    let on_b = wait_events(&sb, &admin_b, 2);
    assert_eq!(on_a, on_b);
    assert!(on_a.values().all(|n| *n == 1), "{on_a:?}");
    agent.stop();
}

#[test]
fn a_one_server_data_dir_loads_unchanged_and_takes_a_second_server() {
    let tmp = tempfile::tempdir().unwrap();
    let (sa, sb) = servers(tmp.path());
    let (admin_a, admin_b) = (sa.admin(), sb.admin());
    let adir = tmp.path().join("agent");
    let one = format!(
        "keepalived:\n  pollInterval: 0\n  dumpTimeoutMs: 50\n  notifyToken: {NOTIFY_TOKEN}\n"
    );
    let mut agent = Agent::start(&adir, &one, free_port());
    let pin = agent.pin();
    let (s, b) = agent.register(&sa.url(), &sa.token(&admin_a), &pin);
    // A one-server agent answers as before agents had several servers, and keeps its files as before.
    assert_eq!(
        (s, b),
        (
            200,
            json!({"success": true, "message": "Registration successful"})
        )
    );
    agent.stop();
    let data = adir.join("data");
    let identity = fs::read(data.join("identity.json")).unwrap();
    let id: BTreeMap<String, Value> = serde_json::from_slice(&identity).unwrap();
    assert_eq!(
        id.keys().collect::<Vec<_>>(),
        ["authToken", "clientId"],
        "identity.json is the pair"
    );
    assert!(!data.join("servers.json").exists());
    // An event waiting from the earlier life, in the older queue.json shape.
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    fs::write(
        data.join("queue.json"),
        json!({"events": [event("old-life-1", &now)]}).to_string(),
    )
    .unwrap();

    // The same data directory with maxServers: 2: A as before, room for B.
    let cfg = adir.join("config.yaml");
    let text = fs::read_to_string(&cfg).unwrap();
    fs::write(&cfg, format!("maxServers: 2\n{text}")).unwrap();
    let port = agent.port;
    drop(agent);
    let mut agent = Agent::start(&adir, &one, port);
    assert!(agent.log().contains("Agent mode: inbound"));
    wait_for("the old event on A", 20, || {
        sa.get(&admin_a, "/api/v1/activity?limit=500")
            .as_array()?
            .iter()
            .any(|a| a["id"] == "old-life-1")
            .then_some(())
    });
    let pin = agent.pin();
    let (s, b) = agent.register(&sb.url(), &sb.token(&admin_b), &pin);
    assert_eq!((s, b["moreServers"].as_u64()), (200, Some(0)), "{b}");
    assert_eq!(
        fs::read(data.join("identity.json")).unwrap(),
        identity,
        "the first server's identity is kept byte for byte"
    );
    agent.wait_both_connected();
    agent.keepalived(true);
    let on_a = wait_events(&sa, &admin_a, 2);
    assert_eq!(on_a, wait_events(&sb, &admin_b, 2));
    agent.stop();
}
