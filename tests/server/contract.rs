//! The contract tier: the real server against its OpenAPI description
//! (`src/http/api/openapi.json`, served at `GET /api/openapi.json`).
//!
//! openapi-spec-validator checks that the description is valid OpenAPI 3.1;
//! schemathesis (both from PyPI, see `scripts/install-test-deps.sh`) then
//! generates requests for every described operation, from the examples, the
//! schemas' boundaries and at random, valid and invalid, and checks every answer
//! of the real server: not a server error, a documented status, a documented
//! content type, a body its schema allows. Any failure fails the test with the
//! tool's own report (each failure with a `curl` line that reproduces it).
//!
//! The server and schemathesis run in a network namespace of their own that has
//! only loopback (so the tier needs root): the fuzzer saves webhooks, heartbeat
//! URLs and outbound agents with addresses it makes up, and tests webhooks, and
//! the server dials them; here every such dial fails at once and nothing leaves
//! the machine.

use crate::harness::{event_batch, reading, Auth, Launch, Server, Ws};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use vrrp_test_support::tier::{self, Tier};

/// The description the server serves (`include_bytes!` there too).
const DESCRIPTION: &[u8] = include_bytes!("../../src/http/api/openapi.json");

/// Test cases per operation and phase: 75 to 90 s on two cores for the whole
/// test (doc/testing.md); `VRRP_CONTRACT_EXAMPLES` asks for more or fewer.
const MAX_EXAMPLES: u32 = 300;

/// The fixed default seed keeps CI's runs alike; `VRRP_CONTRACT_SEED` picks another.
const SEED: u64 = 20261129;

/// schemathesis hooks (Python), loaded through `SCHEMATHESIS_HOOKS`.
///
/// Excluded cases, each because it would lock the run out of the server:
/// - `PUT`/`PATCH`/`DELETE /api/v1/users/1`: user 1 is the administrator whose
///   credentials the run uses. A new password, new login methods or a new role
///   end its sessions (the session token of the second pass dies), and a lower
///   role lowers every API token it made (a token acts with the lesser of its own
///   role and its creator's), so every later request would be 401 or 403.
///   Deleting it is refused anyway (`Cannot delete yourself`, which
///   tests/server/users.rs holds the server to), and a regression there would
///   take the run down with it.
/// - `DELETE /api/v1/api-tokens/<the run's token>`: revoking the credential in
///   use makes every later request 401.
///
/// Accepted server errors, each the documented answer of its route:
/// - `GET /api/auth/callback` 500 `Authentication failed: <reason>`: the spec's
///   answer to every failed single sign-on (here OIDC is not configured);
/// - `POST /api/v1/clients/outbound` 503 `Could not establish connection to
///   client. <reason>`: no agent waits at the made-up addresses.
///
/// Any other 5xx of these routes is still a failure.
const HOOKS: &str = r#"
import json
import os
import re

import schemathesis
from schemathesis.core.failures import ServerError

ADMIN_ID = re.compile(r"^\+?0*1$")
TOKEN_ID = os.environ.get("CONTRACT_TOKEN_ID", "")


def _is(value, pattern):
    return pattern.match(str(value)) is not None


@schemathesis.hook
def filter_case(context, case):
    path = case.operation.path
    params = case.path_parameters or {}
    if path == "/api/v1/users/{userId}" and _is(params.get("userId"), ADMIN_ID):
        return False
    if (
        TOKEN_ID
        and path == "/api/v1/api-tokens/{tokenId}"
        and _is(params.get("tokenId"), re.compile(r"^\+?0*" + re.escape(TOKEN_ID) + "$"))
    ):
        return False
    return True


EXPECTED_SERVER_ERRORS = {
    ("GET", "/api/auth/callback"): (500, "Authentication failed: "),
    ("POST", "/api/v1/clients/outbound"): (503, "Could not establish connection to client. "),
}


@schemathesis.hook
def filter_failure(context, failure, case, response):
    expected = EXPECTED_SERVER_ERRORS.get((case.operation.method.upper(), case.operation.path))
    if expected is None or not isinstance(failure, ServerError):
        return True
    status, prefix = expected
    try:
        text = json.loads(response.content).get("error", "")
    except Exception:
        text = ""
    return not (response.status_code == status and str(text).startswith(prefix))
"#;

/// The checks run on every answer.
const CHECKS: &str =
    "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";

#[test]
#[cfg_attr(
    not(feature = "test-contract"),
    ignore = "contract tier: root, python3 with schemathesis and openapi-spec-validator (scripts/install-test-deps.sh); --features test-contract (scripts/test.sh)"
)]
fn the_server_answers_as_its_openapi_description_says() {
    tier::require(Tier::Contract);
    let python = tier::contract_python();
    validate_description(&python);
    // A thread of its own: a network namespace is the calling thread's (and its
    // children's), so neither the test harness nor other tests move into it.
    let fuzzing = std::thread::Builder::new()
        .name("contract".into())
        .spawn(move || fuzz(&python))
        .unwrap();
    if let Err(panic) = fuzzing.join() {
        std::panic::resume_unwind(panic);
    }
}

fn description_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http/api/openapi.json")
}

/// openapi-spec-validator: the description is valid OpenAPI 3.1.
fn validate_description(python: &Path) {
    let out = Command::new(python)
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(description_path())
        .stdin(Stdio::null())
        .output()
        .expect("run openapi-spec-validator");
    assert!(
        out.status.success(),
        "openapi-spec-validator refused src/http/api/openapi.json:\n{}",
        text(&out)
    );
}

fn fuzz(python: &Path) {
    enter_private_network();
    let server = Launch::new().start();
    assert_eq!(
        net_namespace(&format!("/proc/{}/ns/net", server.pid())),
        net_namespace("/proc/thread-self/ns/net"),
        "the server runs in the test's private network namespace"
    );
    let served = server.get("/api/openapi.json", Auth::None);
    assert_eq!(
        served.status, 200,
        "GET /api/openapi.json: {:?}",
        served.body
    );
    assert_eq!(
        served.body,
        serde_json::from_slice::<serde_json::Value>(DESCRIPTION).unwrap(),
        "GET /api/openapi.json serves src/http/api/openapi.json"
    );

    // The administrator's session, and an administrator's API token made with it:
    // the token for the run (nothing the fuzzer does to sessions touches it), the
    // session for the API token routes (a token may not make tokens).
    let session = server.admin();
    let made = server.post(
        "/api/v1/api-tokens",
        Auth::Bearer(&session),
        &json!({ "name": "contract-test", "role": "admin" }).to_string(),
    );
    assert_eq!(
        made.status, 201,
        "an API token for the run: {:?}",
        made.body
    );
    let token = made.body["token"].as_str().unwrap().to_owned();
    let token_id = made.body["id"].as_i64().unwrap();

    // Something to show: without clients, readings and clusters their schemas
    // would only ever be checked against empty lists.
    let (_online, client_ids) = fleet(&server, &session);
    let cluster_keys = cluster_keys(&server, &token);

    let work = tempfile::tempdir().unwrap();
    let hooks = work.path().join("contract_hooks.py");
    std::fs::write(&hooks, HOOKS).unwrap();
    let config = work.path().join("schemathesis.toml");
    std::fs::write(&config, config_toml(&client_ids, &cluster_keys)).unwrap();
    let location = server.url("/api/openapi.json");
    let examples = env_or("VRRP_CONTRACT_EXAMPLES", MAX_EXAMPLES.into());
    let seed = env_or("VRRP_CONTRACT_SEED", SEED);
    // More options for both runs, e.g. `--include-tag users` while working on one part.
    let more = std::env::var("VRRP_CONTRACT_ARGS").unwrap_or_default();
    let run = |name: &str, credential: &str, extra: &[&str]| {
        let started = Instant::now();
        let mut cmd = Command::new(python);
        cmd.args(["-m", "schemathesis.cli", "--config-file"])
            .arg(&config)
            .args(["run", &location])
            .args(["--checks", CHECKS])
            .arg(format!("--header=Authorization: Bearer {credential}"))
            // The credential above is the only one: no made-up cookies or headers
            // for the security schemes (a made-up `svc_session` cookie would win
            // over the bearer token and make the request 401).
            .args(["--generation-with-security-parameters", "false"])
            .arg(format!("--max-examples={examples}"))
            .arg(format!("--seed={seed}"))
            .args(["--workers", "2", "--request-timeout", "30"])
            // Hypothesis's health checks judge generation speed, which other
            // tests running beside this one on two cores would make flaky.
            .args(["--suppress-health-check", "all"])
            .args(["--generation-database", "none", "--no-color"])
            // Every value in the reproducing `curl` lines: the credentials are
            // those of this throwaway server, and a body key with `token` in its
            // name (`token_retention_days`) would otherwise be hidden.
            .args(["--output-sanitize", "false"])
            .args(extra)
            .args(more.split_whitespace())
            .current_dir(work.path())
            .env("SCHEMATHESIS_HOOKS", &hooks)
            .env("CONTRACT_TOKEN_ID", token_id.to_string())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        let out = cmd.output().expect("run schemathesis");
        eprintln!(
            "schemathesis, {name}: {} in {:.0?}\n{}",
            out.status,
            started.elapsed(),
            tail(&text(&out), 40)
        );
        (name.to_owned(), out)
    };
    let passes = [
        // Every operation, as an administrator's API token.
        run("every operation with an admin API token", &token, &[]),
        // Making API tokens needs a logged-in session.
        run(
            "the API token routes with the admin's session",
            &session,
            &["--include-tag", "api-tokens"],
        ),
    ];

    let failed: Vec<String> = passes
        .iter()
        .filter(|(_, out)| !out.status.success())
        .map(|(name, out)| {
            format!(
                "schemathesis, {name}, failed ({}):\n{}",
                out.status,
                text(out)
            )
        })
        .collect();
    if !failed.is_empty() {
        // The log of a server that died is still arriving through its pipe.
        std::thread::sleep(std::time::Duration::from_secs(1));
        let log = server.log_text();
        let kept = keep("server.log", &log);
        let notable: Vec<&str> = log
            .lines()
            .filter(|l| !l.contains(r#""level":"debug""#) && !l.contains(r#""level":"info""#))
            .collect();
        panic!(
            "{}\n\nthe server's log, its last warnings and errors (all of it: {}):\n{}",
            failed.join("\n\n"),
            kept.display(),
            tail(&notable.join("\n"), 20)
        );
    }
    // The exclusions held: the run's credentials still work.
    for credential in [&token, &session] {
        let me = server.get("/api/v1/me", Auth::Bearer(credential));
        assert_eq!(
            me.status, 200,
            "the run's credentials survive it: {:?}",
            me.body
        );
        assert_eq!(me.body["role"], "admin", "{:?}", me.body);
    }
    let log = server.log_text();
    let kept = keep("server.log", &log);
    let (status, _) = server.stop();
    assert!(
        status.success(),
        "the server did not stop cleanly after the run ({status}); its log: {}",
        kept.display()
    );
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
    assert!(
        panics.is_empty(),
        "the server panicked:\n{}",
        panics.join("\n")
    );
}

/// The online agents' sockets, answering host actions until dropped.
struct Online {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Online {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Answers the server's HOST_ACTIONs on `ws` as an agent does: with actions
/// (`enabled`) the host is in the state asked for, else the refusal of an
/// agent whose config names no drain file. Without an answer every drain the
/// fuzzer sends an online client would wait the server's 10 s and be 504.
fn answer_host_actions(mut ws: Ws, enabled: bool, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match ws.next(Duration::from_millis(100)) {
                Some(Ok(m)) if m["type"] == "HOST_ACTION" => {
                    let ask = &m["payload"];
                    let drained = ask["action"] == "drain";
                    let answer = if enabled {
                        json!({ "id": ask["id"], "ok": true, "error": null, "drain": {
                            "drained": drained,
                            "reason": if drained { ask["reason"].clone() } else { json!(null) },
                            "by": if drained { ask["by"].clone() } else { json!(null) },
                            "since": if drained { json!("2026-11-21T08:00:00.000Z") } else { json!(null) },
                        } })
                    } else {
                        json!({ "id": ask["id"], "ok": false,
                            "error": "actions are disabled on this host; set actions.drainFile (see the host guide)",
                            "drain": { "drained": false, "reason": null, "by": null, "since": null } })
                    };
                    ws.send("HOST_ACTION_RESULT", answer);
                }
                Some(Err(_)) => return,
                _ => {}
            }
        }
    })
}

/// Three agents: lb-1 MASTER and lb-2 BACKUP of one cluster, online, lb-2 with
/// activity of its own and host actions (`drain` in its readings), lb-1 without;
/// lb-3 offline, its keepalived stopped after a reading with an instance (so the
/// server keeps `lastKnownInstances`). Returns the online agents, answering host
/// actions until the end of the run, and the three client ids.
fn fleet(server: &Server, admin: &str) -> (Online, Vec<String>) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let mut ids = Vec::new();
    for host in ["lb-1", "lb-2", "lb-3"] {
        let agent = server.register_agent(admin, host);
        let mut ws = server.connect_agent(&agent);
        match host {
            "lb-1" => ws.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")])),
            "lb-2" => {
                let mut backup = reading(&[("VI_1", "BACKUP")]);
                backup["drain"] =
                    json!({ "drained": false, "reason": null, "by": null, "since": null });
                ws.send("KEEPALIVED_UPDATE", backup);
                ws.send(
                    "ACTIVITY",
                    event_batch(&["contract-1".into(), "contract-2".into()]),
                );
                ws.expect("ACTIVITY_ACK");
            }
            _ => {
                ws.send("KEEPALIVED_UPDATE", reading(&[("VI_2", "FAULT")]));
                let mut stopped = reading(&[]);
                stopped["running"] = json!(false);
                ws.send("KEEPALIVED_UPDATE", stopped);
            }
        }
        // lb-3 leaves: its client goes offline, its readings stay.
        if host != "lb-3" {
            threads.push(answer_host_actions(ws, host == "lb-2", stop.clone()));
        }
        ids.push(agent.id);
    }
    (Online { stop, threads }, ids)
}

/// The clusters' keys, once the evaluator has grouped the fleet's readings.
fn cluster_keys(server: &Server, credential: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = server.get("/api/v1/keepalived/clusters", Auth::Bearer(credential));
        let keys: Vec<String> = list.body.as_array().map_or(Vec::new(), |l| {
            l.iter()
                .filter_map(|c| c["key"].as_str().map(str::to_owned))
                .collect()
        });
        if !keys.is_empty() {
            return keys;
        }
        assert!(
            Instant::now() < deadline,
            "no cluster after 10 s: {:?}",
            list.body
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// schemathesis's configuration: half the client ids, cluster keys and
/// activity ids it sends are the fleet's, so that the routes about one answer
/// something other than 404. `DELETE /api/v1/clients/{clientId}` gets only the
/// offline lb-3's (the last id), so that the online two stay for the rest of the
/// run.
fn config_toml(client_ids: &[String], cluster_keys: &[String]) -> String {
    let list = |v: &[String]| serde_json::to_string(v).unwrap();
    let deletable = &client_ids[client_ids.len() - 1..];
    format!(
        r#"[dictionaries.clients]
values = {clients}

[dictionaries.deletable]
values = {deletable}

[dictionaries.clusters]
values = {clusters}

[dictionaries.activity]
values = ["contract-1", "contract-2"]

[parameters]
"path.clientId" = {{ dictionary = "clients", probability = 0.5 }}
"query.key" = {{ dictionary = "clusters", probability = 0.5 }}
"body.ids[*]" = {{ dictionary = "activity", probability = 0.5 }}

[[operations]]
include-path = "/api/v1/clients/{{clientId}}"
include-method = "DELETE"
parameters = {{ "path.clientId" = {{ dictionary = "deletable", probability = 0.2 }} }}
"#,
        clients = list(client_ids),
        deletable = list(deletable),
        clusters = list(cluster_keys),
    )
}

/// Moves the calling thread into a new network namespace and brings its loopback
/// up: the children it starts (the server, schemathesis) live there too.
fn enter_private_network() {
    // SAFETY: unshare(2) with CLONE_NEWNET changes only the calling thread's
    // namespace; it reads no memory of ours.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(
        rc,
        0,
        "unshare(CLONE_NEWNET): {} (the contract tier runs as root)",
        std::io::Error::last_os_error()
    );
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .output()
        .expect("ip (iproute2)");
    assert!(up.status.success(), "ip link set lo up: {}", text(&up));
}

/// Keeps `text` under `target/tmp/contract/` for after the run; returns the path.
fn keep(name: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contract");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn net_namespace(link: &str) -> PathBuf {
    std::fs::read_link(link).unwrap_or_else(|e| panic!("{link}: {e}"))
}

fn env_or(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The last `n` lines of `s`.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
