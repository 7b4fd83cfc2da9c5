//! The agent against real keepalived: simulated hosts of scripts/lab.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux and curl (what `.ci/run` sets up).
//! One lab (2 hosts) is shared by the scenarios, which run in order inside one test:
//! a real FAULT seen through the FIFO trigger, the same failover seen through the notify
//! endpoint (called by scripts/vrrp-agent-notify), a failover while the agent is down,
//! keepalived stopped and started, an unreadable keepalived, and `kill -9` of the agent
//! before its queue reached the disk. The lab is taken down by a guard, even on failure.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use vrrp_test_support::lab::Lab;
use vrrp_test_support::wait_for;

const TOKEN: &str = "lab-test-notify-token-42";

/// An agent running inside a lab host.
struct LabAgent {
    host: String,
    bin: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
    runs: u32,
}

impl LabAgent {
    fn new(lab: &Lab, host: &str, name: &str) -> LabAgent {
        let dir = lab.work.join(name);
        fs::create_dir_all(&dir).unwrap();
        LabAgent {
            host: host.into(),
            bin: lab.work.join("vrrp-agent"),
            dir,
            child: None,
            runs: 0,
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn start(&mut self, lab: &Lab, config: &str) {
        assert!(self.child.is_none());
        fs::write(self.dir.join("config.yaml"), config).unwrap();
        self.runs += 1;
        let log = fs::File::create(self.dir.join(format!("agent-{}.log", self.runs))).unwrap();
        let child = lab
            .cmd(&["exec", &self.host, self.bin.to_str().unwrap()])
            .env("SVC_CLIENT_CONFIG", self.dir.join("config.yaml"))
            .env("SVC_CLIENT_DATA_DIR", self.data())
            .env("LOG_LEVEL", "debug")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for("the agent's first reading", 20, || {
            (self.status(lab)["collected"] == true).then_some(())
        });
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join(format!("agent-{}.log", self.runs))).unwrap_or_default()
    }

    /// The agent's PID as this (the root) PID namespace sees it.
    fn pid(&self) -> Option<i32> {
        vrrp_test_support::agent_pid(&self.bin, &self.data())
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        let pid = self.pid().expect("agent process");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
    }

    /// SIGTERM; returns the agent's exit code.
    fn term(&mut self) -> Option<i32> {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        self.reap()
    }

    fn kill9(&mut self) {
        self.signal(nix::sys::signal::Signal::SIGKILL);
        self.reap();
    }

    fn reap(&mut self) -> Option<i32> {
        let mut c = self.child.take()?;
        let t0 = Instant::now();
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                return s.code();
            }
            assert!(t0.elapsed() < Duration::from_secs(15), "agent did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn status(&self, lab: &Lab) -> Value {
        serde_json::from_str(
            &lab.curl(&self.host, &["http://127.0.0.1:3011/api/status/keepalived"])
                .1,
        )
        .unwrap_or(Value::Null)
    }

    fn queue(&self) -> Vec<Value> {
        fs::read_to_string(self.data().join("queue.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["events"].as_array().cloned())
            .unwrap_or_default()
    }

    fn last_reading(&self) -> Value {
        // Written in the same flush as the queue, just after it.
        wait_for("keepalived-last.json", 5, || {
            let t = fs::read_to_string(self.data().join("keepalived-last.json")).ok()?;
            Some(serde_json::from_str::<Value>(&t).ok()?["reading"].clone())
        })
    }

    /// Events on disk matching `f`.
    fn events(&self, f: impl Fn(&Value) -> bool) -> Vec<Value> {
        self.queue().into_iter().filter(|e| f(e)).collect()
    }

    fn wait_events(&self, what: &str, n: usize, f: impl Fn(&Value) -> bool) -> Vec<Value> {
        wait_for(what, 30, || {
            let ev = self.events(&f);
            (ev.len() >= n).then_some(ev)
        })
    }

    /// Triggers a reading through scripts/vrrp-agent-notify, as keepalived would.
    fn notify(&self, lab: &Lab, args: &[&str]) {
        let script = lab.work.join("vrrp-agent-notify");
        let out = lab
            .cmd(&["exec", &self.host, "env"])
            .arg(format!(
                "VRRP_AGENT_NOTIFY_TOKEN_FILE={}",
                lab.work.join("notify-token").display()
            ))
            .arg(script)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "the notify script must never fail");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "and says nothing"
        );
    }

    /// Waits for the reading after `before` (a collectedAt).
    fn wait_reading_after(&self, lab: &Lab, before: &str) -> Value {
        wait_for("a new reading", 20, || {
            let s = self.status(lab);
            (s["collectedAt"].as_str().is_some_and(|t| t != before)).then_some(s)
        })
    }
}

impl Drop for LabAgent {
    fn drop(&mut self) {
        if self.child.is_some() {
            if let Some(pid) = self.pid() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

fn is_change(e: &Value, inst: &str, from: &str, to: &str) -> bool {
    e["kind"] == "vrrp.state_changed"
        && e["subject"]["instanceName"] == inst
        && e["data"]["from"] == from
        && e["data"]["to"] == to
}

fn ids_unique(q: &[Value]) {
    let mut ids: Vec<_> = q.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ids in the queue: {q:?}");
}

const FIFO_ONLY: &str = "keepalived:\n  pollInterval: 0\n  notifyFifo: /tmp/keepalived_vrrp.fifo\n";

fn endpoint_only() -> String {
    format!("keepalived:\n  pollInterval: 0\n  notifyToken: {TOKEN}\n")
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn agent_follows_real_keepalived() {
    let lab = Lab::up(2, "vat"); // h1 (priority 120) is MASTER of VI_1 and VI_2, h2 (110) BACKUP
    fs::copy(
        env!("CARGO_BIN_EXE_vrrp-agent"),
        lab.work.join("vrrp-agent"),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/vrrp-agent-notify");
    fs::copy(&script, lab.work.join("vrrp-agent-notify")).unwrap();
    fs::write(lab.work.join("notify-token"), TOKEN).unwrap();
    fs::set_permissions(
        lab.work.join("notify-token"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();

    // --- Start: both agents read keepalived; the first reading reports nothing.
    let mut a1 = LabAgent::new(&lab, "h1", "a1");
    let mut a2 = LabAgent::new(&lab, "h2", "a2");
    a1.start(&lab, FIFO_ONLY);
    a2.start(&lab, &endpoint_only());
    let s1 = a1.status(&lab);
    assert_eq!(s1["running"], true, "{s1}");
    assert_eq!(s1["version"], "2.2.7");
    assert_eq!(s1["instances"], 2);
    assert_eq!(s1["master"], 2);
    assert_eq!(s1["triggers"]["fifo"], "open");
    assert_eq!(s1["triggers"]["endpoint"], false);
    assert_eq!(s1["triggers"]["poll"], 0.0);
    let s2 = a2.status(&lab);
    assert_eq!(s2["master"], 0);
    assert_eq!(s2["triggers"]["endpoint"], true);
    assert_eq!(s2["triggers"]["fifo"], "off");
    assert!(a1.log().contains("Found keepalived, PID"), "{}", a1.log());
    assert!(a1.queue().is_empty() && a2.queue().is_empty());

    // --- A real FAULT on h1, noticed through the FIFO alone (the timer is off).
    lab.run(&["fault", "h1", "script"]);
    let ev = a1.wait_events("MASTER->FAULT on h1 via the FIFO", 2, |e| {
        is_change(e, "VI_1", "MASTER", "FAULT") || is_change(e, "VI_2", "MASTER", "FAULT")
    });
    for e in &ev {
        assert_eq!(e["level"], "error");
        assert_eq!(e["data"]["priority"], 120);
        assert!(e["subject"]["vrid"] == 51 || e["subject"]["vrid"] == 52);
    }
    // occurredAt is keepalived's own transition time, not the reading's.
    let last = a1.last_reading();
    let vi1 = last["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "VI_1")
        .unwrap()
        .clone();
    let e1 = ev
        .iter()
        .find(|e| e["subject"]["instanceName"] == "VI_1")
        .unwrap();
    if vi1["state"] == "FAULT" {
        assert_eq!(e1["occurredAt"], vi1["lastTransition"]);
    }
    assert_ne!(e1["occurredAt"], last["collectedAt"]);

    // The same failover on h2, read when the notify script calls the endpoint.
    lab.wait_state("h2", "VI_1", "MASTER");
    lab.wait_state("h2", "VI_2", "MASTER");
    let before = a2.status(&lab)["collectedAt"].as_str().unwrap().to_string();
    a2.notify(&lab, &["INSTANCE", "VI_1", "MASTER", "110"]);
    let s2 = a2.wait_reading_after(&lab, &before);
    assert_eq!(s2["master"], 2, "{s2}");
    let ev = a2.wait_events("BACKUP->MASTER on h2 via the endpoint", 2, |e| {
        is_change(e, "VI_1", "BACKUP", "MASTER") || is_change(e, "VI_2", "BACKUP", "MASTER")
    });
    assert!(ev.iter().all(|e| e["level"] == "info"));
    assert!(a2
        .log()
        .contains("notify endpoint: INSTANCE VI_1 MASTER 110"));
    assert!(!a2.log().contains(TOKEN));

    // h1 recovers and takes over again (preemption): FAULT -> ... on h1,
    // MASTER -> BACKUP (warning) on h2.
    lab.run(&["unfault", "h1"]);
    // Preemption takes a master-down interval after the track script recovers.
    lab.wait_state("h1", "VI_1", "MASTER");
    lab.wait_state("h2", "VI_1", "BACKUP");
    a1.wait_events("VI_1 leaves FAULT on h1", 1, |e| {
        e["kind"] == "vrrp.state_changed"
            && e["subject"]["instanceName"] == "VI_1"
            && e["data"]["from"] == "FAULT"
    });
    let before = a2.status(&lab)["collectedAt"].as_str().unwrap().to_string();
    a2.notify(&lab, &["INSTANCE", "VI_1", "BACKUP", "110"]);
    a2.wait_reading_after(&lab, &before);
    let ev = a2.wait_events("MASTER->BACKUP on h2", 1, |e| {
        is_change(e, "VI_1", "MASTER", "BACKUP")
    });
    assert_eq!(ev[0]["level"], "warning");

    // --- A failover while the agent on h2 is down is still reported after its restart.
    assert_eq!(a2.term(), Some(0), "SIGTERM exits 0: {}", a2.log());
    lab.run(&["failover", "h1"]); // SIGTERM to keepalived on h1: h2 takes over
    a2.start(&lab, &endpoint_only());
    let ev = a2.wait_events("BACKUP->MASTER after the restart", 2, |e| {
        is_change(e, "VI_1", "BACKUP", "MASTER")
    });
    assert_ne!(ev[0]["id"], ev[1]["id"], "two different failovers");

    // --- keepalived stopped (while the FIFO agent ran) and started again, with the timer on.
    assert_eq!(a1.term(), Some(0));
    a1.start(
        &lab,
        "keepalived:\n  pollInterval: 1\n  notifyFifo: /tmp/keepalived_vrrp.fifo\n",
    );
    let s1 = a1.status(&lab);
    assert_eq!(s1["running"], false, "{s1}");
    assert_eq!(s1["triggers"]["fifo"], "missing");
    a1.wait_events("keepalived.stopped", 1, |e| {
        e["kind"] == "keepalived.stopped"
    });
    lab.run(&["start", "h1"]);
    let ev = a1.wait_events("keepalived.started", 1, |e| {
        e["kind"] == "keepalived.started"
    });
    assert_eq!(ev[0]["level"], "info");
    assert_eq!(ev[0]["data"]["version"], "2.2.7");
    assert!(ev[0]["data"]["pid"].as_u64().is_some());
    let q1 = a1.queue();
    assert!(
        !q1.iter()
            .any(|e| e["kind"] == "vrrp.instance_removed" || e["kind"] == "vrrp.instance_added"),
        "a stop or start reports no removed or added instances: {q1:?}"
    );
    let stopped: Vec<_> = q1
        .iter()
        .filter(|e| e["kind"] == "keepalived.stopped")
        .collect();
    assert_eq!(stopped[0]["level"], "warning");
    // The FIFO watcher reopens the new keepalived's FIFO at its next 5 s check.
    wait_for("the FIFO reopened", 15, || {
        (a1.status(&lab)["triggers"]["fifo"] == "open").then_some(())
    });
    ids_unique(&q1);

    // --- An unreadable keepalived (it never writes the dump the agent waits for) is
    // reported once per streak, as running with an error.
    assert_eq!(a2.term(), Some(0));
    a2.start(
        &lab,
        "keepalived:\n  pollInterval: 1\n  dataFile: /tmp/never-written.data\n  dumpTimeoutMs: 150\n",
    );
    let s2 = a2.status(&lab);
    assert_eq!(s2["running"], true);
    assert!(
        s2["error"]
            .as_str()
            .unwrap()
            .contains("did not write /tmp/never-written.data"),
        "{s2}"
    );
    a2.wait_events("keepalived.unreadable", 1, |e| {
        e["kind"] == "keepalived.unreadable"
    });
    let mut at = s2["collectedAt"].as_str().unwrap().to_string();
    for _ in 0..3 {
        at = a2.wait_reading_after(&lab, &at)["collectedAt"]
            .as_str()
            .unwrap()
            .to_string();
    }
    std::thread::sleep(Duration::from_millis(1200)); // let the coalesced write land
    let n = a2.events(|e| e["kind"] == "keepalived.unreadable").len();
    assert_eq!(n, 1, "once per streak, not per reading");
    assert_eq!(a2.term(), Some(0));

    // --- kill -9 right after a reading that produced events, before the coalesced
    // write: the restarted agent still reports them, each exactly once.
    a2.start(&lab, &endpoint_only());
    // h1 came back and took over again (preemption), so h2 is BACKUP now.
    lab.wait_state("h2", "VI_1", "BACKUP");
    lab.wait_state("h2", "VI_2", "BACKUP");
    lab.run(&["fault", "h2", "script"]);
    lab.wait_state("h2", "VI_1", "FAULT");
    lab.wait_state("h2", "VI_2", "FAULT");
    let before = a2.status(&lab)["collectedAt"].as_str().unwrap().to_string();
    a2.notify(&lab, &["INSTANCE", "VI_1", "FAULT", "110"]);
    let s = a2.wait_reading_after(&lab, &before);
    a2.kill9();
    let on_disk = a2.events(|e| is_change(e, "VI_1", "BACKUP", "FAULT")).len();
    eprintln!(
        "kill -9 after the reading at {}: events already on disk: {on_disk}",
        s["collectedAt"]
    );
    a2.start(&lab, &endpoint_only());
    std::thread::sleep(Duration::from_millis(1200)); // coalesced write window
    let ev = a2.wait_events("BACKUP->FAULT after kill -9", 1, |e| {
        is_change(e, "VI_1", "BACKUP", "FAULT")
    });
    assert_eq!(ev.len(), 1, "exactly once: {ev:?}");
    assert_eq!(ev[0]["level"], "error");
    assert_eq!(
        a2.events(|e| is_change(e, "VI_2", "BACKUP", "FAULT")).len(),
        1
    );
    ids_unique(&a2.queue());

    // And kill -9 after the write: nothing lost, nothing doubled.
    let count = a2.queue().len();
    a2.kill9();
    a2.start(&lab, &endpoint_only());
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(a2.queue().len(), count);
    ids_unique(&a2.queue());
    assert_eq!(a2.term(), Some(0));

    // --- The JSON dump (keepalived built with JSON: `keepalived --signum=JSON` = 36).
    a2.start(
        &lab,
        &format!("keepalived:\n  pollInterval: 0\n  jsonSignal: 36\n  notifyToken: {TOKEN}\n"),
    );
    let at = a2.status(&lab)["collectedAt"].clone();
    let last = wait_for("keepalived-last.json of the JSON reading", 5, || {
        let l = a2.last_reading();
        (l["collectedAt"] == at).then_some(l)
    });
    assert_eq!(last["source"], "json", "{last}");
    let states: Vec<_> = last["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].clone(), i["state"].clone()))
        .collect();
    assert_eq!(
        states,
        [
            ("VI_1".into(), "FAULT".into()),
            ("VI_2".into(), "FAULT".into())
        ],
        "{last}"
    );
    assert!(last["instances"][0]["stats"]["advertisements_sent"].is_u64());
    // The JSON has no tracker status: the text dump taken with it names the cause.
    let chk_lab = last["instances"][0]["tracked"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "chk_lab").cloned());
    assert_eq!(
        chk_lab.as_ref().map(|t| (&t["status"], &t["ok"])),
        Some((&"BAD".into(), &false.into())),
        "{last}"
    );
    lab.run(&["unfault", "h2"]);
    lab.wait_state("h2", "VI_1", "BACKUP");
    let before = a2.status(&lab)["collectedAt"].as_str().unwrap().to_string();
    a2.notify(&lab, &["INSTANCE", "VI_1", "BACKUP", "110"]);
    a2.wait_reading_after(&lab, &before);
    a2.wait_events("FAULT->BACKUP read from the JSON dump", 1, |e| {
        is_change(e, "VI_1", "FAULT", "BACKUP")
    });
    assert_eq!(a2.term(), Some(0));
    assert_eq!(a1.term(), Some(0));
}
