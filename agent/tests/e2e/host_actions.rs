//! Host actions end to end: the real `vrrp-agent` (inbound, registered beforehand,
//! under systemd's umask 077, keepalived absent) dials the fake server, which sends
//! HOST_ACTION over the real socket. With `actions.drainFile` a drain writes `1\n`
//! (0644) into exactly that file, the HOST_ACTION_RESULT says so and the reading after
//! it carries the drain; an undrain writes `0\n`; a request that breaks the rules, or
//! names another path, leaves every file as it was; a drain made by hand reads as made
//! outside vrrp-monitor. Without `actions.drainFile` every action is refused with the
//! one text and readings carry no `drain`.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};
use tungstenite::Message;

use crate::agent_process::Agent;
use crate::in_process::{FakeMode, FakeServer};

/// Every file below `dir` (the agent's own log and data directory aside), with its
/// bytes and modification time.
fn tree(dir: &Path, leave_out: &[PathBuf]) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if leave_out.contains(&p) {
                continue;
            }
            let md = fs::symlink_metadata(&p).unwrap();
            if md.is_dir() {
                todo.push(p);
            } else {
                out.insert(
                    p.clone(),
                    (fs::read(&p).unwrap_or_default(), md.modified().unwrap()),
                );
            }
        }
    }
    out
}

/// The agent, registered as `c1` with `server`, reading keepalived only when asked
/// (on connect and on request); with `drain` its config names `keepalived/drain` in
/// its own folder as `actions.drainFile`. Beside it: the folder `keepalived/` and a
/// decoy file `elsewhere/decoy`.
fn start(server: &FakeServer, drain: bool) -> Agent {
    let config = format!(
        "serverUrl: http://127.0.0.1:{}\nkeepalived:\n  pollInterval: 3600\n",
        server.port
    );
    Agent::start_prepared(&config, &[], Some(0o077), |dir| {
        fs::create_dir_all(dir.join("data")).unwrap();
        fs::write(
            dir.join("data/identity.json"),
            r#"{"clientId": "c1", "authToken": "tok-secret-123"}"#,
        )
        .unwrap();
        fs::create_dir_all(dir.join("keepalived")).unwrap();
        fs::create_dir_all(dir.join("elsewhere")).unwrap();
        fs::write(dir.join("elsewhere/decoy"), "0\n").unwrap();
        if drain {
            // The folder exists only now: the config names its path before the start.
            let with_actions = format!(
                "{config}actions:\n  drainFile: {}\n",
                dir.join("keepalived/drain").display()
            );
            fs::write(dir.join("config.yaml"), with_actions).unwrap();
        }
    })
}

fn ask(server: &FakeServer, payload: Value) {
    server.send(Message::text(
        json!({"type": "HOST_ACTION", "payload": payload}).to_string(),
    ));
}

fn not_drained() -> Value {
    json!({"drained": false, "reason": null, "by": null, "since": null})
}

#[test]
fn drain_and_undrain_write_only_the_drain_file_and_the_readings_show_it() {
    let server = FakeServer::start(FakeMode::Auth);
    let agent = start(&server, true);
    let dir = agent.dir.path().to_path_buf();
    let drain_file = dir.join("keepalived/drain");
    server.msg("AUTH");
    let first = server.msg("KEEPALIVED_UPDATE");
    assert_eq!(first["drain"], not_drained(), "no drain file: not drained");
    let leave_out = [dir.join("data"), dir.join("stderr.log"), drain_file.clone()];
    let before = tree(&dir, &leave_out);

    // Drain, with a path of the requester's own that is not the agent's to take.
    let decoy = dir.join("elsewhere/decoy").display().to_string();
    ask(
        &server,
        json!({"id": "req-1", "action": "drain", "reason": "failover drill", "by": "alice",
               "file": decoy, "path": decoy}),
    );
    let result = server.msg("HOST_ACTION_RESULT");
    assert_eq!(result["id"], "req-1");
    assert_eq!(result["ok"], true, "{result}");
    assert!(result["error"].is_null(), "{result}");
    let drain = &result["drain"];
    assert_eq!(drain["drained"], true);
    assert_eq!(drain["reason"], "failover drill");
    assert_eq!(drain["by"], "alice");
    let since = drain["since"].as_str().unwrap();
    assert!(since.ends_with('Z') && since.len() == 24, "{since}");
    let reading = server.msg("KEEPALIVED_UPDATE");
    assert_eq!(
        &reading["drain"], drain,
        "the reading after the action shows it"
    );
    assert_eq!(fs::read_to_string(&drain_file).unwrap(), "1\n");
    let mode = fs::metadata(&drain_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "keepalived reads it; the agent's umask is 077");
    let names: Vec<_> = fs::read_dir(dir.join("keepalived"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        [std::ffi::OsString::from("drain")],
        "no temporary left"
    );
    let state = fs::metadata(agent.data().join("drain.json")).unwrap();
    assert_eq!(state.permissions().mode() & 0o777, 0o600);

    // A request that breaks the rules changes nothing.
    ask(
        &server,
        json!({"id": "req-2", "action": "drain", "reason": "x".repeat(201), "by": "alice"}),
    );
    let refused = server.msg("HOST_ACTION_RESULT");
    assert_eq!(refused["id"], "req-2");
    assert_eq!(refused["ok"], false);
    assert_eq!(refused["error"], "reason: longer than 200 characters");
    assert_eq!(&refused["drain"], drain, "still the first drain");
    // Nor does an action this agent does not know.
    ask(
        &server,
        json!({"id": "req-3", "action": "restart", "reason": "", "by": "alice"}),
    );
    let unknown = server.msg("HOST_ACTION_RESULT");
    assert_eq!(unknown["ok"], false);
    assert!(unknown["error"]
        .as_str()
        .unwrap()
        .contains("unknown action"));

    // Undrain.
    ask(
        &server,
        json!({"id": "req-4", "action": "undrain", "reason": "drill over", "by": "bob"}),
    );
    let result = server.msg("HOST_ACTION_RESULT");
    assert_eq!(result["id"], "req-4");
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["drain"], not_drained());
    assert_eq!(server.msg("KEEPALIVED_UPDATE")["drain"], not_drained());
    assert_eq!(fs::read_to_string(&drain_file).unwrap(), "0\n");
    assert!(!agent.data().join("drain.json").exists());

    // Drained by hand: the next reading says so, without a name.
    fs::write(&drain_file, "1\n").unwrap();
    server.send(Message::text(
        json!({"type": "REQUEST_STATE_UPDATE", "payload": {}}).to_string(),
    ));
    let by_hand = server.msg("KEEPALIVED_UPDATE");
    assert_eq!(by_hand["drain"]["drained"], true);
    assert_eq!(by_hand["drain"]["reason"], "drained outside vrrp-monitor");
    assert!(by_hand["drain"]["by"].is_null());
    assert!(by_hand["drain"]["since"].is_string());

    // Nothing but the drain file and the data directory was touched.
    assert_eq!(tree(&dir, &leave_out), before);
    assert!(agent
        .log()
        .contains("Host action drain (req-1) asked by alice"));
}

#[test]
fn without_a_drain_file_every_action_is_refused_and_readings_carry_no_drain() {
    let server = FakeServer::start(FakeMode::Auth);
    let agent = start(&server, false);
    let dir = agent.dir.path().to_path_buf();
    server.msg("AUTH");
    let first = server.msg("KEEPALIVED_UPDATE");
    assert!(first.get("drain").is_none(), "{first}");
    let before = tree(&dir, &[dir.join("data"), dir.join("stderr.log")]);
    for (id, action) in [("r1", "drain"), ("r2", "undrain"), ("r3", "reboot")] {
        ask(
            &server,
            json!({"id": id, "action": action, "reason": "drill", "by": "alice"}),
        );
        let r = server.msg("HOST_ACTION_RESULT");
        assert_eq!(r["id"], id);
        assert_eq!(r["ok"], false);
        assert_eq!(
            r["error"],
            "actions are disabled on this host; set actions.drainFile (see the host guide)"
        );
        assert_eq!(r["drain"], not_drained());
    }
    assert!(server.msg("KEEPALIVED_UPDATE").get("drain").is_none());
    assert_eq!(
        tree(&dir, &[dir.join("data"), dir.join("stderr.log")]),
        before
    );
    assert!(!dir.join("keepalived/drain").exists());
    assert!(agent
        .log()
        .contains("Host actions off (no actions.drainFile)"));
}
