//! A drain end to end with real keepalived: two hosts of scripts/lab (h1 120, h2
//! 110), h1's keepalived.conf given the host guide's own `track_file` lines
//! ("Drains and failover drills", taken from doc/keepalived-host.md with the lab's
//! path), the real agent on h1 with `actions.drainFile`, and the fake server in the
//! lab's switch namespace sending HOST_ACTION.
//!
//! A drain hands VI_1's master role to h2 (h1 runs at 120 − 100 = 20); a restart of
//! keepalived on h1 keeps the drain (`init_file 0` does not overwrite the file); the
//! undrain gives the role back to h1 (preempt). The agent's readings show the drain
//! and keepalived's effective priority all along.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::Message;
use vrrp_test_support::host_agent::{HostAgent, CONFIG};
use vrrp_test_support::lab::Lab;
use vrrp_test_support::*;

use crate::in_process::{FakeMode, FakeServer};

/// The path the host guide names for the drain file.
const GUIDE_PATH: &str = "/var/lib/keepalived-drain/drain";

/// The host guide's keepalived lines for a drain: the top-level `track_file` block
/// and the instance's `track_file { .. }`, with `path` for the guide's path.
fn guide_lines(path: &Path) -> (String, String) {
    let guide = fs::read_to_string(repo_root().join("doc/keepalived-host.md")).unwrap();
    let section = guide
        .split("## Drains and failover drills")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the guide has a section \"Drains and failover drills\"");
    let conf = section
        .split("```conf\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the section's first conf block");
    let conf = conf.replace(GUIDE_PATH, &path.display().to_string());
    let (top, instance) = conf
        .split_once("\nvrrp_instance")
        .expect("the block names a vrrp_instance after the track_file block");
    let start = instance
        .find("    track_file {")
        .expect("the instance's track_file");
    let end = start + instance[start..].find("\n    }").expect("its end") + "\n    }".len();
    (format!("{top}\n"), format!("{}\n", &instance[start..end]))
}

/// h1's keepalived.conf with the guide's lines: the block before the first
/// instance, the instance's lines at the end of VI_1.
/// The guide's keepalived lines on h1, its drain file under the lab's work folder
/// (the hosts see /var/tmp as it is); returns once keepalived made the file and h1
/// is MASTER again.
pub(crate) fn guide_drain_on_h1(lab: &Lab) -> std::path::PathBuf {
    let dir = lab.work.join("drain-h1");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let drain_file = dir.join("drain");
    let (top, instance) = guide_lines(&drain_file);
    let conf_path = lab.state.join("h1/etc/keepalived.conf");
    let conf = fs::read_to_string(&conf_path).unwrap();
    fs::write(&conf_path, with_drain(&conf, &top, &instance)).unwrap();
    lab.run(&["config", "h1", "check"]);
    lab.run(&["reload", "h1"]);
    wait_for("keepalived's init_file", 20, || {
        (fs::read_to_string(&drain_file).ok()? == "0\n").then_some(())
    });
    lab.wait_state("h1", "VI_1", "MASTER");
    drain_file
}

fn with_drain(conf: &str, top: &str, instance: &str) -> String {
    let at = conf.find("\nvrrp_instance").expect("an instance") + 1;
    let mut out = format!("{}{top}\n{}", &conf[..at], &conf[at..]);
    let vi1 = out.find("vrrp_instance VI_1 {").expect("VI_1");
    let close = vi1 + out[vi1..].find("\n}\n").expect("VI_1's end") + 1;
    out.insert_str(close, instance);
    out
}

fn ask(server: &FakeServer, id: &str, action: &str) -> Value {
    server.ping();
    server.send(Message::text(
        json!({"type": "HOST_ACTION", "payload": {
            "id": id, "action": action, "reason": "failover drill", "by": "lab"}})
        .to_string(),
    ));
    let r = server.msg("HOST_ACTION_RESULT");
    assert_eq!(r["id"], id);
    assert_eq!(r["ok"], true, "{r}");
    r
}

fn vi1(reading: &Value) -> Value {
    reading["instances"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["name"] == "VI_1").cloned())
        .unwrap_or(Value::Null)
}

/// A reading of h1 (asked for, while keeping the session alive) that `holds` (30 s).
fn reading_where(server: &FakeServer, what: &str, holds: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        server.ping();
        server.send(Message::text(
            json!({"type": "REQUEST_STATE_UPDATE", "payload": {}}).to_string(),
        ));
        let r = server.msg("KEEPALIVED_UPDATE");
        if holds(&r) {
            return r;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no reading with {what}; the last: {r}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn a_drain_through_the_guides_track_file_hands_the_role_over_and_back() {
    let mut lab = Lab::up(2, "vdr");
    lab.wait_state("h1", "VI_1", "MASTER");

    let drain_file = guide_drain_on_h1(&lab);

    // The agent on h1, registered beforehand with the fake server in the switch.
    lab.enter_switch();
    fs::copy(
        env!("CARGO_BIN_EXE_vrrp-agent"),
        lab.work.join("vrrp-agent"),
    )
    .unwrap();
    let server = FakeServer::start_on("203.0.113.254", FakeMode::Auth);
    let mut agent = HostAgent::new(&lab, "h1");
    fs::create_dir_all(agent.dir.join("data")).unwrap();
    fs::write(
        agent.dir.join("data/identity.json"),
        r#"{"clientId": "c1", "authToken": "tok-secret-123"}"#,
    )
    .unwrap();
    fs::write(
        agent.dir.join("config.yaml"),
        format!(
            "serverUrl: http://203.0.113.254:{}\n{CONFIG}actions:\n  drainFile: {}\n",
            server.port,
            drain_file.display()
        ),
    )
    .unwrap();
    agent.start(&lab);
    server.msg("AUTH");
    let first = reading_where(&server, "VI_1 MASTER at 120", |r| {
        vi1(r)["state"] == "MASTER" && vi1(r)["effectivePriority"] == 120
    });
    assert_eq!(
        first["drain"],
        json!({"drained": false, "reason": null, "by": null, "since": null})
    );
    let tracked = vi1(&first)["tracked"].clone();
    assert!(
        tracked
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["kind"] == "file" && t["name"] == "vrrp_drain" && t["weight"] == -100),
        "keepalived tracks the guide's file: {tracked}"
    );

    // Drain: h1 drops to 20, h2 takes over.
    let drained = ask(&server, "d1", "drain");
    assert_eq!(drained["drain"]["drained"], true);
    assert_eq!(fs::read_to_string(&drain_file).unwrap(), "1\n");
    lab.wait_state("h2", "VI_1", "MASTER");
    lab.wait_state("h1", "VI_1", "BACKUP");
    let r = reading_where(&server, "VI_1 BACKUP at 20", |r| {
        vi1(r)["state"] == "BACKUP" && vi1(r)["effectivePriority"] == 20
    });
    assert_eq!(r["drain"], drained["drain"]);

    // keepalived restarted on h1 (a reboot's start): the file still says 1, so the new
    // keepalived reads 20 at once and stays a backup.
    let pid = r["pid"].clone();
    lab.run(&["restart", "h1"]);
    let r = reading_where(&server, "a new keepalived, VI_1 BACKUP at 20", |r| {
        r["pid"] != pid && vi1(r)["state"] == "BACKUP" && vi1(r)["effectivePriority"] == 20
    });
    assert_eq!(fs::read_to_string(&drain_file).unwrap(), "1\n");
    assert_eq!(r["drain"], drained["drain"], "the drain's story survives");

    // Undrain: h1 is back at 120 and preempts.
    let undrained = ask(&server, "u1", "undrain");
    assert_eq!(undrained["drain"]["drained"], false);
    assert_eq!(fs::read_to_string(&drain_file).unwrap(), "0\n");
    lab.wait_state("h1", "VI_1", "MASTER");
    lab.wait_state("h2", "VI_1", "BACKUP");
    let r = reading_where(&server, "VI_1 MASTER at 120", |r| {
        vi1(r)["state"] == "MASTER" && vi1(r)["effectivePriority"] == 120
    });
    assert_eq!(r["drain"]["drained"], false);
    let names: Vec<_> = fs::read_dir(drain_file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("drain")]);
}

/// The guide's `conf` blocks of "Drains and failover drills", in order, with the lab's
/// path for the guide's.
fn guide_blocks(path: &Path) -> Vec<String> {
    let guide = fs::read_to_string(repo_root().join("doc/keepalived-host.md")).unwrap();
    let section = guide
        .split("## Drains and failover drills")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap();
    section
        .split("```conf\n")
        .skip(1)
        .filter_map(|s| s.split("```").next())
        .map(|b| b.replace(GUIDE_PATH, &path.display().to_string()))
        .collect()
}

/// The statements of a guide block's `vrrp_sync_group G1 { .. }` after its `group`
/// line, for the lab's SG_1; and the instance lines it gives as comments, if any.
fn group_lines(block: &str) -> (String, String) {
    let body = block
        .split_once("    group { VI_1 VI_2 }\n")
        .expect("the guide's group line")
        .1;
    let (inside, after) = body.split_once("\n}\n").expect("the group's end");
    let instance: String = after
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .map(|l| format!("    {l}\n"))
        .collect();
    (format!("{inside}\n"), instance)
}

/// h1's keepalived.conf: the guide's `track_file` block before the first instance,
/// `group` inside SG_1, `instance` at the end of both VI_1 and VI_2.
fn with_group_drain(conf: &str, top: &str, group: &str, instance: &str) -> String {
    let at = conf
        .find("\nvrrp_sync_group")
        .expect("the lab's sync group")
        + 1;
    let mut out = format!("{}{top}\n{}", &conf[..at], &conf[at..]);
    let sg = out.find("vrrp_sync_group SG_1 {").unwrap();
    let close = sg + out[sg..].find("\n}\n").unwrap() + 1;
    out.insert_str(close, group);
    for name in ["VI_2", "VI_1"] {
        let vi = out.find(&format!("vrrp_instance {name} {{")).unwrap();
        let close = vi + out[vi..].find("\n}\n").unwrap() + 1;
        out.insert_str(close, instance);
    }
    out
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn the_guides_sync_group_lines_drain_the_whole_group() {
    let lab = Lab::up_with(2, "vds", &[("LAB_SYNC_GROUP", "1")]);
    for vi in ["VI_1", "VI_2"] {
        lab.wait_state("h1", vi, "MASTER");
    }
    let dir = lab.work.join("drain-h1");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let drain_file = dir.join("drain");
    let blocks = guide_blocks(&drain_file);
    assert_eq!(
        blocks.len(),
        3,
        "the single instance, FAULT and weight variants"
    );
    let top = blocks[0]
        .split("\nvrrp_instance")
        .next()
        .unwrap()
        .to_string();
    let conf_path = lab.state.join("h1/etc/keepalived.conf");
    let original = fs::read_to_string(&conf_path).unwrap();
    let both = |state: &str, host: &str| {
        for vi in ["VI_1", "VI_2"] {
            lab.wait_state(host, vi, state);
        }
    };

    // Unweighted, once for the group: a drain is the whole group in FAULT.
    let (group, instance) = group_lines(&blocks[1]);
    assert!(instance.is_empty());
    fs::write(&conf_path, with_group_drain(&original, &top, &group, "")).unwrap();
    lab.run(&["config", "h1", "check"]);
    lab.run(&["restart", "h1"]);
    both("MASTER", "h1");
    fs::write(&drain_file, "1\n").unwrap();
    both("FAULT", "h1");
    both("MASTER", "h2");
    fs::write(&drain_file, "0\n").unwrap();
    both("MASTER", "h1");
    both("BACKUP", "h2");

    // sync_group_tracking_weight, the same weight on every member: both back off.
    let (group, instance) = group_lines(&blocks[2]);
    assert!(group.contains("sync_group_tracking_weight") && instance.contains("weight -100"));
    fs::write(
        &conf_path,
        with_group_drain(&original, &top, &group, &instance),
    )
    .unwrap();
    lab.run(&["config", "h1", "check"]);
    lab.run(&["restart", "h1"]);
    both("MASTER", "h1");
    fs::write(&drain_file, "1\n").unwrap();
    both("MASTER", "h2");
    both("BACKUP", "h1");
    fs::write(&drain_file, "0\n").unwrap();
    both("MASTER", "h1");
    both("BACKUP", "h2");
}
