//! The real `vrrp-agent` binary, started with a temporary data directory and config,
//! spoken to over real HTTP. keepalived is absent here (an empty process table under
//! `SVC_PROC_DIR`); real keepalived is driven in `lab.rs`.

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use vrrp_test_support::{free_port, http};

use crate::agent_process::Agent;

const TOKEN: &str = "cli-test-notify-token-0123";

fn wait_for(what: &str, f: impl FnMut() -> bool) {
    vrrp_test_support::wait_until(what, 15, f);
}

fn get(a: &Agent, path: &str) -> (u16, String) {
    let mut r = http().get(a.url(path)).call().unwrap();
    let body = r.body_mut().read_to_string().unwrap_or_default();
    (r.status().as_u16(), body)
}

fn get_json(a: &Agent, path: &str) -> Value {
    let (status, body) = get(a, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn post_notify(a: &Agent, auth: Option<&str>, body: &[u8]) -> u16 {
    let mut req = http().post(a.url("/api/keepalived/notify"));
    if let Some(t) = auth {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    req.send(body).unwrap().status().as_u16()
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Runs the binary to its end (for start-up errors) and returns (code, stderr).
fn run_to_end(config: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    Agent::start(config, env).exit()
}

#[test]
fn startup_errors_stop_with_one_line_naming_the_problem() {
    /// config text, environment, what the one error line must name
    type Case = (
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
    );
    let cases: &[Case] = &[
        (
            "keepalived:\n  pollInterval: fast\n",
            &[],
            "keepalived.pollInterval",
        ),
        (
            "keepalived:\n  pollInterval: 0\n",
            &[],
            "all triggers are off",
        ),
        (
            "keepalived:\n  jsonSignal: 99\n",
            &[],
            "keepalived.jsonSignal",
        ),
        ("allowedNetworks: [10.0.0.0/33]\n", &[], "'10.0.0.0/33'"),
        ("", &[("SVC_CLIENT_PORT", "99999")], "SVC_CLIENT_PORT"),
        (
            "tls:\n  cert: missing.pem\n  key: missing.key\n",
            &[],
            "tls.cert",
        ),
        (
            "",
            &[
                ("SVC_REGISTRATION_SECRET", "a"),
                ("SVC_REGISTRATION_SECRET_FILE", "/etc/hostname"),
            ],
            "both set",
        ),
        ("", &[("SVC_NOTIFY_TOKEN", "too-short")], "SVC_NOTIFY_TOKEN"),
    ];
    for (config, env, needle) in cases {
        let (code, log) = run_to_end(config, env);
        assert_eq!(code, Some(1), "{needle}: {log}");
        let errors: Vec<_> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
        assert_eq!(errors.len(), 1, "{needle}: {log}");
        assert!(errors[0].contains(needle), "{needle}: {log}");
    }
    // The secret never reaches the log, even in an error about it.
    let (_, log) = run_to_end("", &[("SVC_NOTIFY_TOKEN", "too-short")]);
    assert!(!log.contains("too-short\""), "{log}");
}

#[test]
fn status_routes_notify_endpoint_and_clean_stop() {
    let mut a = Agent::start(
        &format!("keepalived:\n  pollInterval: 0\n  notifyToken: {TOKEN}\n"),
        &[],
    );
    a.wait_log("Web server listening");
    a.wait_log("No keepalived process found, and ");
    assert!(a.log().contains("Agent mode: unregistered"));
    wait_for("first reading", || {
        get_json(&a, "/api/status/keepalived")["collected"] == true
    });
    let k = get_json(&a, "/api/status/keepalived");
    assert_eq!(k["running"], false);
    assert_eq!(k["error"], Value::Null);
    assert_eq!(k["instances"], 0);
    assert_eq!(
        k["triggers"],
        serde_json::json!({"poll": 0.0, "fifo": "off", "endpoint": true})
    );
    let c = get_json(&a, "/api/status/connection");
    assert_eq!(c["connected"], false);
    assert_eq!(c["state"], "disconnected");
    assert_eq!(c["registered"], false, "no identity: nothing is dialled");
    assert_eq!(c["attempts"], 0);
    assert_eq!(
        get_json(&a, "/api/status/auth"),
        serde_json::json!({"hasAuthToken": false, "statusPage": true})
    );
    let c = get_json(&a, "/api/status/config");
    assert_eq!(c["keepalived"]["notifyToken"], true);
    assert!(
        !c.to_string().contains(TOKEN),
        "config route leaks the token"
    );
    let (status, page) = get(&a, "/status");
    assert_eq!(status, 200);
    assert!(page.contains("/api/status/keepalived"));
    assert_eq!(get(&a, "/").0, 302);
    // Not in the container: no health route.
    assert_eq!(get(&a, "/api/health").0, 404);

    // Notify endpoint: bearer token, at most 1 KB, 202, then a reading.
    let at = k["collectedAt"].as_str().unwrap().to_string();
    assert_eq!(post_notify(&a, None, b"x"), 401);
    assert_eq!(post_notify(&a, Some("wrong-token-wrong-token"), b"x"), 401);
    assert_eq!(post_notify(&a, Some(TOKEN), &[b'a'; 1025]), 413);
    assert_eq!(
        post_notify(&a, Some(TOKEN), b"INSTANCE VI_1 MASTER 100"),
        202
    );
    wait_for("a reading after the notify", || {
        get_json(&a, "/api/status/keepalived")["collectedAt"] != at.as_str()
    });
    a.wait_log("notify endpoint: INSTANCE VI_1 MASTER 100");
    assert!(!a.log().contains(TOKEN), "token in the log");

    // Data directory rules.
    let data = a.data();
    wait_for("keepalived-last.json", || {
        data.join("keepalived-last.json").exists()
    });
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("keepalived-last.json")), 0o600);
    let last: Value =
        serde_json::from_str(&fs::read_to_string(data.join("keepalived-last.json")).unwrap())
            .unwrap();
    assert_eq!(last["reading"]["running"], false);

    a.signal(nix::sys::signal::Signal::SIGTERM);
    let status = a.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", a.log());
    assert!(a.log().contains("Stopped"));
    assert!(data.join("queue.json").exists(), "queue flushed on stop");
    assert_eq!(mode(&data.join("queue.json")), 0o600);
}

#[test]
fn health_route_in_the_container_only_and_sigint_stops() {
    let mut a = Agent::start(
        // A serverUrl means no outbound routes: only the health route is left.
        "serverUrl: http://127.0.0.1:9\nenableStatusPage: false\nenableRegisterPage: false\n",
        &[("SVC_CONTAINER", "true")],
    );
    a.wait_log("Web server listening on http://127.0.0.1:");
    assert_eq!(
        get_json(&a, "/api/health"),
        serde_json::json!({"status": "ok"})
    );
    assert_eq!(get(&a, "/api/status/keepalived").0, 404);
    assert_eq!(get(&a, "/status").0, 404);
    a.signal(nix::sys::signal::Signal::SIGINT);
    assert_eq!(a.wait_exit().code(), Some(0));
}

#[test]
fn listen_failure_is_logged_and_the_agent_keeps_reading() {
    let busy = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let a = Agent::start("", &[("SVC_CLIENT_PORT", port.as_str())]);
    a.wait_log("Web server not started, continuing without it");
    let data = a.data();
    wait_for("a reading despite the web server", || {
        data.join("keepalived-last.json").exists()
    });
    assert!(a.child.is_some());
    drop(busy);
}

#[test]
fn damaged_identity_is_moved_aside_and_legacy_identity_migrated() {
    // Damaged identity: renamed, error logged, unregistered.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(data.join("identity.json"), "{not json").unwrap();
    fs::write(data.join("queue.json"), "[[[").unwrap();
    let data_s = data.to_str().unwrap().to_string();
    let mut a = Agent::start("", &[("SVC_CLIENT_DATA_DIR", data_s.as_str())]);
    a.wait_log("Agent mode: unregistered");
    let log = a.log();
    assert!(
        log.lines()
            .any(|l| l.contains(" ERROR ") && l.contains("identity.json is damaged")),
        "{log}"
    );
    assert!(log.contains("is damaged and was discarded"), "{log}");
    assert_eq!(mode(&data), 0o700, "data dir mode set at every start");
    let moved: Vec<_> = fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("identity.json.corrupt-"))
        .collect();
    assert_eq!(moved.len(), 1);
    a.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(a.wait_exit().code(), Some(0));

    // Legacy config: identity written first, keys removed from config, mode inbound.
    let mut a = Agent::start(
        "serverUrl: http://127.0.0.1:9\nclientId: client-42\nauthToken: legacy-secret-token\nregistrationSecret: old\n",
        &[],
    );
    a.wait_log("Agent mode: inbound");
    let log = a.log();
    assert!(log.contains("Migrated clientId/authToken"), "{log}");
    assert!(log.contains("registrationSecret in the config file is ignored"));
    assert!(!log.contains("legacy-secret-token"));
    let id: Value =
        serde_json::from_str(&fs::read_to_string(a.data().join("identity.json")).unwrap()).unwrap();
    assert_eq!(id["clientId"], "client-42");
    assert_eq!(id["authToken"], "legacy-secret-token");
    assert_eq!(mode(&a.data().join("identity.json")), 0o600);
    let cfg = fs::read_to_string(a.dir.path().join("config.yaml")).unwrap();
    assert!(
        !cfg.contains("clientId") && !cfg.contains("legacy-secret-token"),
        "{cfg}"
    );
    assert!(cfg.contains("serverUrl"));
    assert_eq!(get_json(&a, "/api/status/auth")["hasAuthToken"], true);
    a.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(a.wait_exit().code(), Some(0));
    let mut s = String::new();
    fs::File::open(a.data().join("identity.json"))
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert!(s.contains("client-42"));
}

/// scripts/vrrp-agent-notify reaches the endpoint (over HTTPS when the agent serves
/// TLS), and never fails or speaks when the agent is down, the token file is missing
/// or the port is nonsense.
#[test]
fn notify_script_triggers_a_reading_and_never_fails() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/vrrp-agent-notify");
    let a = Agent::start(
        &format!("keepalived:\n  pollInterval: 0\n  notifyToken: {TOKEN}\n"),
        &[],
    );
    a.wait_log("Web server listening");
    let token_file = a.dir.path().join("token");
    fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let run = |port: &str, token: &Path| {
        let out = Command::new(&script)
            .args(["INSTANCE", "VI_1", "MASTER", "130"])
            .env("VRRP_AGENT_PORT", port)
            .env("VRRP_AGENT_NOTIFY_TOKEN_FILE", token)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty() && out.stderr.is_empty());
    };
    run(&a.port.to_string(), &token_file);
    a.wait_log("notify endpoint: INSTANCE VI_1 MASTER 130");
    let closed = free_port().to_string();
    run(&closed, &token_file);
    run(&a.port.to_string(), Path::new("/nonexistent/token"));
    run("not-a-port", &token_file);

    // An agent with a `tls` block speaks HTTPS only: the script reaches it there.
    let tls = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    let b = Agent::start(
        &format!(
            "keepalived:\n  pollInterval: 0\n  notifyToken: {TOKEN}\ntls:\n  cert: {tls}/localhost.cert.pem\n  key: {tls}/localhost.key.pem\n"
        ),
        &[],
    );
    b.wait_log("Web server listening on https://");
    run(&b.port.to_string(), &token_file);
    b.wait_log("notify endpoint: INSTANCE VI_1 MASTER 130");
}
