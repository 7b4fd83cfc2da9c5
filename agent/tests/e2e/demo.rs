//! `scripts/demo` as a newcomer would run it, non-interactively (`--for 60`): the
//! dashboard answers through the demo's forwarder, three clients are online and
//! every cluster is ok; `scripts/demo failover` yields a `vrrp.master_changed`;
//! when the time is up everything is down: no namespace of it in `ip netns list`,
//! no work directory.
//!
//! Needs root, keepalived, iproute2, util-linux, curl, python3.

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vrrp_test_support::{free_port, http, request, wait_for};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Should the test fail half-way, SIGTERM takes the demo down as Ctrl-C would.
struct Demo(std::process::Child);
impl Drop for Demo {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = Command::new("kill").arg(self.0.id().to_string()).status();
            let _ = self.0.wait();
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn the_demo_comes_up_reacts_to_a_failover_and_leaves_nothing_behind() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Lab);
    let _slot = vrrp_test_support::lab::exclusive();
    let prefix = format!("vdemo{}", std::process::id() % 100_000);
    let dir = format!("/var/tmp/vrrp-demo-test-{prefix}");
    let port = free_port();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("demo.out");
    let demo = |args: &[&str]| {
        let mut c = Command::new(format!("{ROOT}/scripts/demo"));
        c.args(args)
            .env("VRRP_DEMO_PREFIX", &prefix)
            .env("VRRP_DEMO_DIR", &dir)
            .env("VRRP_DEMO_PORT", port.to_string());
        c
    };
    let mut running = Demo(
        demo(&["--for", "60"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    // Up: the URL and the login are printed (building may wait for cargo's lock).
    let password = wait_for("the demo's login line", 300, || {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        text.lines()
            .find_map(|l| l.trim().strip_prefix("Login:      admin / "))
            .map(str::to_owned)
    });
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains(&format!("Dashboard:  http://localhost:{port}/")),
        "{text}"
    );
    let base = format!("http://127.0.0.1:{port}");
    let mut login = http()
        .post(&format!("{base}/api/login"))
        .send_json(json!({"username": "admin", "password": password}))
        .unwrap();
    assert_eq!(
        login.status(),
        200,
        "{}",
        login.body_mut().read_to_string().unwrap_or_default()
    );
    let cookie = login
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix("svc_session="))
        .map(|c| c.split(';').next().unwrap().to_owned())
        .expect("a session cookie");
    let get = |path: &str| request("GET", &format!("{base}{path}"), Some(&cookie), None).2;

    wait_for("three clients online", 30, || {
        let clients = get("/api/v1/clients");
        let online = clients
            .as_array()?
            .iter()
            .filter(|c| c["status"] == "online")
            .count();
        (online == 3).then_some(())
    });
    wait_for("two clusters, both ok", 30, || {
        let clusters = get("/api/v1/keepalived/clusters");
        let list = clusters.as_array()?;
        (list.len() == 2 && list.iter().all(|c| c["health"] == "ok")).then_some(())
    });

    // A failover from another terminal.
    let status = demo(&["failover"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let changed: Value = wait_for("vrrp.master_changed", 30, || {
        get("/api/v1/activity")
            .as_array()?
            .iter()
            .find(|e| e["kind"] == "vrrp.master_changed")
            .cloned()
    });
    assert_eq!(
        changed["data"]["previousMaster"],
        format!("{prefix}-h1"),
        "{changed}"
    );

    // Time up: everything is down.
    let deadline = Instant::now() + Duration::from_secs(120);
    let exit = loop {
        if let Some(s) = running.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the demo did not end");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(exit.success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("Down: no namespace, process or file of the demo is left."),
        "{text}"
    );
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let netns = String::from_utf8_lossy(&netns.stdout);
    assert!(!netns.lines().any(|l| l.starts_with(&prefix)), "{netns}");
    assert!(!std::path::Path::new(&dir).exists());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the forwarder still listens"
    );
}
