//! Inbound mode end to end on this machine: the real `vrrp-agent` registered through its
//! real register page with the real `vrrp-monitor`, over real HTTP and WebSocket.
//! keepalived is absent here (an empty process table under `SVC_PROC_DIR`); the lab
//! tests (`lab_inbound.rs`) add real keepalived and real failovers.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use serde_json::{json, Value};
use vrrp_test_support::*;

struct Agent {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
}

impl Agent {
    fn start(dir: &std::path::Path, config: &str, port: u16) -> Agent {
        let log = dir.join("agent.log");
        // The most verbose level: the log scan must hold even there.
        let child = spawn_agent(dir, config, port, "trace");
        let a = Agent {
            child: Some(child),
            port,
            log,
        };
        a.wait_log("Web server listening", 1);
        a
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `needle` occurs at least `n` times in the log.
    fn wait_log(&self, needle: &str, n: usize) {
        wait_for(&format!("{n}× log line {needle:?}"), 20, || {
            (self.log().matches(needle).count() >= n).then_some(())
        });
    }

    /// The PIN of the `n`th (1-based) PIN block.
    fn pin(&self, n: usize) -> String {
        self.wait_log("Setup PIN: ", n);
        let log = self.log();
        let line = log
            .lines()
            .filter(|l| l.contains("Setup PIN: "))
            .nth(n - 1)
            .unwrap()
            .to_string();
        line.rsplit("Setup PIN: ")
            .next()
            .unwrap()
            .trim()
            .to_string()
    }

    fn get(&self, path: &str) -> (u16, Option<String>, Value) {
        request("GET", &self.url(path), None, None)
    }

    fn register(&self, body: Value) -> (u16, Value) {
        let (s, _, b) = request("POST", &self.url("/api/register"), None, Some(&body));
        (s, b)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let st = c.wait().unwrap();
            assert_eq!(st.code(), Some(0), "agent exit");
        }
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

const CONFIG: &str = "keepalived:\n  pollInterval: 1\n";

#[test]
fn register_through_every_stage_connect_deliver_and_keep_secrets_out_of_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::new(
        &tmp.path().join("server"),
        server_binary(),
        "127.0.0.1",
        &[],
    );
    server.log_level = "trace"; // the log scan covers the server's most verbose level too
    server.start();
    let admin = server.admin();

    // Two events waiting from an earlier life of the agent.
    let adir = tmp.path().join("agent");
    fs::create_dir_all(adir.join("data")).unwrap();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    fs::write(
        adir.join("data/queue.json"),
        json!({"events": [event("e2e-ev-1", &now), event("e2e-ev-2", &now)]}).to_string(),
    )
    .unwrap();
    let mut agent = Agent::start(&adir, CONFIG, free_port());
    let pin = agent.pin(1);
    let log = agent.log();
    assert!(
        log.contains("/register"),
        "the PIN block names the register page: {log}"
    );
    assert!(
        log.contains("http://"),
        "the PIN block names the scheme in use"
    );
    assert!(log.contains("The setup PIN is required"));
    assert!(!fs::read_to_string(adir.join("config.yaml"))
        .unwrap()
        .contains(&pin));

    // The page is open: / leads there, the form is served; nothing is dialled yet.
    assert_eq!(agent.get("/").1.as_deref(), Some("/register"));
    let (s, _, page) = agent.get("/register");
    assert_eq!(s, 200);
    assert!(page.as_str().unwrap().contains("Setup PIN"));
    assert_eq!(agent.get("/api/status/connection").2["registered"], false);
    assert_eq!(agent.get("/api/status/server").2["configured"], false);

    let token = server.token(&admin);
    let url = server.url();
    // stage input: the form.
    let (s, b) = agent.register(json!({"url": "ftp://x", "token": token, "pin": pin}));
    assert_eq!(
        (s, b["stage"].as_str(), b["field"].as_str()),
        (400, Some("input"), Some("url")),
        "{b}"
    );
    let (s, b) = agent.register(json!({"url": url, "pin": pin}));
    assert_eq!(
        (s, b["stage"].as_str(), b["field"].as_str()),
        (400, Some("input"), Some("token")),
        "{b}"
    );
    // stage input: the PIN, checked before anything is sent.
    let (s, b) = agent.register(json!({"url": url, "token": token, "pin": "AAAA-AAAA"}));
    assert_eq!((s, b["stage"].as_str()), (403, Some("input")), "{b}");
    // stage server: nothing answers there (PIN in lower case, without the hyphen).
    let loose = pin.replace('-', "").to_lowercase();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let (s, b) = agent.register(json!({"url": dead, "token": token, "pin": loose}));
    assert_eq!((s, b["stage"].as_str()), (502, Some("server")), "{b}");
    // stage register: a server answered and refused the token.
    let (s, b) = agent
        .register(json!({"url": url, "token": "0123456789abcdef0123456789abcdef", "pin": pin}));
    assert_eq!(b["stage"], "register", "{b}");
    assert!((400..600).contains(&s));
    assert_eq!(agent.get("/api/status/auth").2["hasAuthToken"], false);

    let (s, b) = agent.register(json!({"url": format!("{url}/"), "token": token, "pin": pin}));
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b,
        json!({"success": true, "message": "Registration successful"})
    );

    // Identity stored 0600, serverUrl written, page closed, connected at once.
    let id_path = adir.join("data/identity.json");
    assert_eq!(
        fs::metadata(&id_path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let identity: Value = serde_json::from_str(&fs::read_to_string(&id_path).unwrap()).unwrap();
    let client_id = identity["clientId"].as_str().unwrap().to_string();
    let auth_token = identity["authToken"].as_str().unwrap().to_string();
    let cfg = fs::read_to_string(adir.join("config.yaml")).unwrap();
    assert!(cfg.contains(&format!("serverUrl: {url}")), "{cfg}");
    assert!(cfg.contains("pollInterval: 1"), "{cfg}");
    assert_eq!(agent.get("/register").1.as_deref(), Some("/status"));
    assert_eq!(agent.get("/").1.as_deref(), Some("/status"));
    let (s, _) = agent.register(json!({"url": url, "token": token, "pin": pin}));
    assert_eq!(s, 404);
    wait_for("connected", 20, || {
        (agent.get("/api/status/connection").2["connected"] == true).then_some(())
    });
    assert_eq!(agent.get("/api/status/auth").2["hasAuthToken"], true);
    // An old `?url=` query is not taken: the check goes to the configured server only.
    let srv = agent.get("/api/status/server?url=http://127.0.0.1:1").2;
    assert_eq!(srv["url"], url.as_str(), "{srv}");
    assert_eq!(
        (srv["configured"].as_bool(), srv["reachable"].as_bool()),
        (Some(true), Some(true)),
        "{srv}"
    );
    let (s, _, c) = request("POST", &agent.url("/api/connect"), None, None);
    assert_eq!((s, c["connected"].as_bool()), (200, Some(true)), "{c}");

    // The server: the client is online with its version, the reading is stored, the
    // queued events are stored once and acknowledged (the agent's queue empties).
    let log = agent.log();
    let version = log
        .lines()
        .find_map(|l| l.split("vrrp-agent ").nth(1)?.split(" starting").next())
        .unwrap()
        .to_string();
    let clients = server.get(&admin, "/api/v1/clients");
    let row = clients
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == client_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(row["status"], "online", "{row}");
    assert_eq!(row["capabilities"], json!(["vrrp"]));
    assert_eq!(
        row["version"],
        version.as_str(),
        "AUTH carries the build's version"
    );
    assert!(!version.is_empty() && version != "0.0.0");
    wait_for("a stored reading", 20, || {
        let states = server.get(&admin, "/api/v1/keepalived/states");
        states
            .as_array()?
            .iter()
            .any(|s| s["clientId"] == client_id.as_str() && s["running"] == false)
            .then_some(())
    });
    // The server's refresh (REQUEST_STATE_UPDATE): an unchanged reading is sent at once,
    // long before the 30 s resend would send it.
    let received = |server: &Server| {
        server
            .get(&admin, "/api/v1/keepalived/states")
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["clientId"] == client_id.as_str())
            .map(|s| s["receivedAt"].clone())
    };
    let before = received(&server);
    let (s, _, b) = request(
        "POST",
        &format!(
            "{}/api/v1/clients/{client_id}/keepalived/refresh",
            server.url()
        ),
        Some(&admin),
        None,
    );
    assert_eq!(s, 200, "{b}");
    wait_for("the refreshed reading", 10, || {
        (received(&server) != before).then_some(())
    });
    wait_for("both events on the server", 20, || {
        let acts = server.get(&admin, "/api/v1/activity");
        let ids: Vec<_> = acts
            .as_array()?
            .iter()
            .filter_map(|a| a["id"].as_str())
            .collect();
        (ids.iter().filter(|i| i.starts_with("e2e-ev-")).count() == 2).then_some(())
    });
    wait_for("the agent's queue emptied on disk", 20, || {
        let q: Value =
            serde_json::from_str(&fs::read_to_string(adir.join("data/queue.json")).ok()?).ok()?;
        q["events"].as_array()?.is_empty().then_some(())
    });

    // A restart comes back inbound: no PIN, page closed, connects by itself.
    agent.stop();
    let before = agent.log().matches("Setup PIN: ").count();
    let port = agent.port;
    let mut agent = Agent::start(&adir, CONFIG, port);
    agent.wait_log("Agent mode: inbound", 1);
    agent.wait_log("Connected and authenticated", 2);
    assert_eq!(
        agent.log().matches("Setup PIN: ").count(),
        before,
        "no PIN once registered"
    );
    assert_eq!(agent.get("/register").1.as_deref(), Some("/status"));
    agent.stop();

    // The log scan: after the registration no line carries the auth token, the PIN or
    // the registration token; the token never appears at all.
    let log = agent.log();
    let after = &log[log.find("Registered with").expect("registration logged")..];
    for (name, secret) in [
        ("auth token", auth_token.as_str()),
        ("PIN", pin.as_str()),
        ("loose PIN", loose.as_str()),
        ("registration token", token.as_str()),
    ] {
        assert!(
            !after.contains(secret),
            "{name} in the agent log after registration"
        );
    }
    assert!(
        !log.contains(&auth_token) && !log.contains(&token),
        "a token in the agent log"
    );
    assert!(
        log.contains("token=****"),
        "the dial is logged with the token masked"
    );
    assert!(
        !server.log_text().contains(&auth_token),
        "server log carries the agent token"
    );
}

#[test]
fn the_pin_is_replaced_after_five_wrong_attempts() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = Agent::start(tmp.path(), CONFIG, free_port());
    let first = agent.pin(1);
    let dead = format!("http://127.0.0.1:{}", free_port());
    for i in 1..=5 {
        let (s, b) = agent.register(json!({"url": dead, "token": "t", "pin": "2222-2222"}));
        assert_eq!(
            (s, b["stage"].as_str()),
            (403, Some("input")),
            "attempt {i}: {b}"
        );
    }
    let second = agent.pin(2);
    assert_ne!(first, second);
    assert!(agent.log().contains("5 wrong setup PIN attempts"));
    let (s, _) = agent.register(json!({"url": dead, "token": "t", "pin": first}));
    assert_eq!(s, 403, "the old PIN is gone");
    // The new one passes the PIN check: the next stage (nobody at that URL) answers.
    let (s, b) = agent.register(json!({"url": dead, "token": "t", "pin": second}));
    assert_eq!((s, b["stage"].as_str()), (502, Some("server")), "{b}");
}

#[test]
fn without_the_register_page_a_pin_only_for_outbound_and_no_route() {
    let tmp = tempfile::tempdir().unwrap();
    // No serverUrl: the PIN is for the server's outbound registration; no register line.
    let a = Agent::start(
        &tmp.path().join("a"),
        "enableRegisterPage: false\nkeepalived:\n  pollInterval: 1\n",
        free_port(),
    );
    a.pin(1);
    let log = a.log();
    assert!(!log.contains("/register"), "{log}");
    assert!(log.contains("outbound"), "{log}");
    assert_eq!(a.get("/register").0, 404);
    assert_eq!(a.register(json!({})).0, 404);
    // With a serverUrl: no PIN at all.
    let b = Agent::start(&tmp.path().join("b"), "enableRegisterPage: false\nserverUrl: http://127.0.0.1:9\nkeepalived:\n  pollInterval: 1\n", free_port());
    b.wait_log("Agent mode: unregistered", 1);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!b.log().contains("Setup PIN"), "{}", b.log());
    // Registered pieces missing: nothing is dialled, and a manual connect says why.
    let (s, _, c) = request("POST", &b.url("/api/connect"), None, None);
    assert_eq!((s, c["connected"].as_bool()), (409, Some(false)), "{c}");
    assert_eq!(b.get("/api/status/connection").2["attempts"], 0);
}

#[test]
fn a_failed_write_is_reported_as_a_warning_and_the_agent_still_connects() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::new(
        &tmp.path().join("server"),
        server_binary(),
        "127.0.0.1",
        &[],
    );
    server.start();
    let admin = server.admin();
    let adir = tmp.path().join("agent");
    let agent = Agent::start(&adir, CONFIG, free_port());
    let pin = agent.pin(1);
    // The config file changes under the agent into something it cannot rewrite.
    fs::write(adir.join("config.yaml"), "- not a mapping\n").unwrap();
    let token = server.token(&admin);
    let (s, b) = agent.register(json!({"url": server.url(), "token": token, "pin": pin}));
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["success"], true);
    assert!(
        b["warning"]
            .as_str()
            .is_some_and(|w| w.contains("serverUrl")),
        "{b}"
    );
    assert!(adir.join("data/identity.json").exists());
    wait_for("connected", 20, || {
        (agent.get("/api/status/connection").2["connected"] == true).then_some(())
    });
    let page = agent.get("/register");
    assert_eq!(
        page.1.as_deref(),
        Some("/status"),
        "closed after a registration with a warning"
    );
}
