//! Fault: the agent's data directory runs out of space (a small tmpfs mounted by the
//! test) while keepalived fails over and the server is away. The agent keeps the
//! events in memory, says so once in its log and on its status page, writes them
//! as soon as space returns, and delivers each exactly once.
//! Needs root (mount, the lab), keepalived 2.2.x, iproute2, util-linux, curl.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use vrrp_test_support::host_agent::*;
use vrrp_test_support::lab::Lab;
use vrrp_test_support::*;

/// A small tmpfs as the agent's data directory, mounted inside the lab host (each
/// host has its own mount namespace, so the files are reached through the host too).
struct SmallDisk<'a> {
    lab: &'a Lab,
    host: String,
    dir: String,
}

impl<'a> SmallDisk<'a> {
    fn mount(lab: &'a Lab, host: &str, at: &Path) -> SmallDisk<'a> {
        fs::create_dir_all(at).unwrap();
        let dir = at.to_str().unwrap().to_owned();
        lab.run(&[
            "exec",
            host,
            "mount",
            "-t",
            "tmpfs",
            "-o",
            "size=1m,mode=0700",
            "tmpfs",
            &dir,
        ]);
        SmallDisk {
            lab,
            host: host.into(),
            dir,
        }
    }

    fn sh(&self, script: &str) -> String {
        self.lab.run(&["exec", &self.host, "sh", "-c", script])
    }

    fn fill(&self) {
        // dd stops at ENOSPC with a non-zero status; the disk is then full.
        self.sh(&format!("dd if=/dev/zero of={}/filler bs=4k 2>/dev/null; dd if=/dev/zero of={}/filler2 bs=1 2>/dev/null; true", self.dir, self.dir));
    }

    fn free(&self) {
        self.sh(&format!("rm -f {0}/filler {0}/filler2", self.dir));
    }

    /// The events in queue.json, as the agent wrote them.
    fn queue(&self) -> Vec<Value> {
        let text = self.sh(&format!("cat {}/queue.json 2>/dev/null; true", self.dir));
        serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["events"].as_array().cloned())
            .unwrap_or_default()
    }
}

impl Drop for SmallDisk<'_> {
    fn drop(&mut self) {
        let _ = self
            .lab
            .cmd(&["exec", &self.host, "umount", "-l", &self.dir])
            .status();
    }
}

fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn a_full_agent_disk_keeps_events_in_memory_says_so_and_delivers_them_once() {
    let (lab, mut server) = lab_with_server(2, "vfd"); // h1 130 MASTER, h2 120
    server.start();
    let admin = server.admin();
    let mut agent = HostAgent::new(&lab, "h2");
    let disk = SmallDisk::mount(&lab, "h2", &agent.dir.join("data"));
    agent.start(&lab);
    let pin = wait_for("the PIN", 10, || {
        agent
            .log()
            .lines()
            .find_map(|l| l.split("Setup PIN: ").nth(1).map(|p| p.trim().to_string()))
    });
    let token = server.token(&admin);
    let (s, b) = agent.post(
        &lab,
        "/api/register",
        &json!({"url": server.url(), "token": token, "pin": pin}),
    );
    assert_eq!(s, 200, "{b}");
    wait_for("connected", 20, || agent.connected(&lab).then_some(()));
    let identity: Value =
        serde_json::from_str(&disk.sh(&format!("cat {}/identity.json", disk.dir))).unwrap();
    let client = identity["clientId"].as_str().unwrap().to_owned();

    server.stop();
    wait_for("the agent notices the server is gone", 60, || {
        (!agent.connected(&lab)).then_some(())
    });
    disk.fill();
    lab.run(&["failover", "h1"]); // h2 becomes MASTER: events on the agent
    lab.wait_state("h2", "VI_1", "MASTER");
    let queue = wait_for(
        "the status page says the queue is in memory only",
        30,
        || {
            let q = agent.get(&lab, "/api/status/connection")["queue"].clone();
            (q["onDisk"] == false && q["events"].as_u64() >= Some(1)).then_some(q)
        },
    );
    assert!(
        queue["writeError"]
            .as_str()
            .is_some_and(|e| e.contains("No space left")),
        "{queue}"
    );
    assert!(queue["writeFailingSince"].is_string(), "{queue}");
    // Retries run every second; the log says it once.
    std::thread::sleep(Duration::from_secs(3));
    let log = agent.log();
    assert_eq!(count(&log, "are kept in memory"), 1, "{log}");
    assert!(disk.queue().is_empty(), "nothing could reach queue.json");

    disk.free();
    let on_disk = wait_for("the queue written once space returned", 15, || {
        let q = disk.queue();
        (!q.is_empty()).then_some(q)
    });
    assert!(on_disk
        .iter()
        .any(|e| e["kind"] == "vrrp.state_changed" && e["data"]["to"] == "MASTER"));
    assert_eq!(
        agent.get(&lab, "/api/status/connection")["queue"]["onDisk"],
        true
    );
    assert_eq!(
        count(&agent.log(), "The data directory takes writes again"),
        1
    );

    server.start();
    let (s, b) = agent.post(&lab, "/api/connect", &json!({}));
    assert_eq!((s, b["connected"].as_bool()), (200, Some(true)), "{b}");
    wait_for("the queue delivered and emptied", 30, || {
        disk.queue().is_empty().then_some(())
    });
    let activity = server.get(&admin, "/api/v1/activity");
    for e in &on_disk {
        let stored = activity
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["id"] == e["id"] && a["clientId"] == client.as_str())
            .count();
        assert_eq!(stored, 1, "{e}");
    }
    agent.kill(nix::sys::signal::Signal::SIGTERM);
    drop(disk);
}
