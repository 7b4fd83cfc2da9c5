//! The tarball as a user gets it: `scripts/package` builds it (the x86_64 one, static;
//! built once for this and `static_tarballs.rs`), the test unpacks it
//! into an empty tree, checks its contents and checksums, and runs both binaries
//! as the shipped units would (their `ExecStart` and `Environment` lines, the
//! shipped example configs), registers the agent and sees its reading.

use crate::harness::{free_port, http_agent, ADMIN_PASSWORD};
use crate::static_tarballs::tarballs;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ExecStart` and `Environment` of a unit, with the install paths moved under
/// `tree` (`/opt/…`, `/etc/…`, `/var/lib/…`).
fn unit_command(unit: &Path, tree: &Path) -> (PathBuf, Vec<(String, String)>) {
    let text = std::fs::read_to_string(unit).unwrap();
    let moved = |p: &str| -> String {
        ["/opt/", "/etc/", "/var/lib/"]
            .iter()
            .fold(p.to_owned(), |p, prefix| {
                p.replace(prefix, &format!("{}{prefix}", tree.display()))
            })
    };
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    assert!(!exec.contains(' '), "ExecStart takes no arguments: {exec}");
    let env = text
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_owned(), moved(v))
        })
        .collect();
    (PathBuf::from(moved(exec)), env)
}

pub struct Running(pub Child);
impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub use vrrp_test_support::wait_for;

#[test]
#[cfg_attr(
    not(feature = "test-packaging"),
    ignore = "packaging tier: root, the static toolchain, debootstrap, qemu; --features test-packaging (scripts/test.sh)"
)]
fn the_tarball_unpacks_runs_as_the_units_would_and_registers_an_agent() {
    let work = tempfile::tempdir().unwrap();
    // The x86_64 tarball of scripts/package's one run (static_tarballs.rs checks
    // both tarballs' binaries and the SHA256SUMS over them).
    let built = tarballs();
    let tarball = built.tarball("x86_64");
    let version = built.version.clone();
    let size = std::fs::metadata(&tarball).unwrap().len();
    eprintln!(
        "tarball size: {size} bytes ({:.1} MiB)",
        size as f64 / 1048576.0
    );
    assert!(size < 15 * 1024 * 1024, "{size} bytes");
    assert!(
        built.said.contains("x86_64/vrrp-agent: ") && built.said.contains("statically linked"),
        "{}",
        built.said
    );

    // An empty tree, laid out as the install guide says.
    let tree = work.path().join("root");
    std::fs::create_dir_all(tree.join("opt")).unwrap();
    run(Command::new("tar")
        .arg("-C")
        .arg(tree.join("opt"))
        .arg("-xzf")
        .arg(&tarball));
    std::os::unix::fs::symlink(
        tree.join(format!("opt/vrrp-monitor-{version}")),
        tree.join("opt/vrrp-monitor"),
    )
    .unwrap();
    let home = tree.join("opt/vrrp-monitor");
    for file in [
        "bin/vrrp-monitor",
        "bin/vrrp-agent",
        "libexec/vrrp-agent-notify",
        "systemd/vrrp-monitor.service",
        "systemd/vrrp-agent.service",
        "etc/vrrp-monitor/config.yaml",
        "etc/vrrp-agent/config.yaml",
        "doc/install.md",
        "doc/keepalived-host.md",
        "doc/upgrade.md",
        "doc/prometheus-alerts.yml",
        "doc/grafana-dashboard.json",
        "LICENSE",
        "SHA256SUMS",
    ] {
        assert!(home.join(file).is_file(), "{file} missing from the tarball");
    }
    let sums = run(Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&home));
    assert!(
        sums.lines().count() >= 13 && sums.lines().all(|l| l.ends_with(": OK")),
        "{sums}"
    );

    for bin in ["vrrp-monitor", "vrrp-agent"] {
        let v = run(Command::new(home.join("bin").join(bin)).arg("--version"));
        assert_eq!(v.trim(), format!("{bin} {version}"));
        let help = run(Command::new(home.join("bin").join(bin)).arg("--help"));
        assert!(help.contains("Usage:"), "{help}");
        let refused = Command::new(home.join("bin").join(bin))
            .arg("--bogus")
            .output()
            .unwrap();
        assert_eq!(refused.status.code(), Some(2));
    }

    // The units: valid for systemd (ExecStart pointed at the unpacked binaries),
    // and their exposure as systemd rates it.
    for (unit, most) in [("vrrp-monitor", 3.0), ("vrrp-agent", 4.0)] {
        let text = std::fs::read_to_string(home.join(format!("systemd/{unit}.service"))).unwrap();
        let copy = work.path().join(format!("{unit}.service"));
        std::fs::write(
            &copy,
            text.replace("/opt/vrrp-monitor", &home.display().to_string()),
        )
        .unwrap();
        run(Command::new("systemd-analyze").arg("verify").arg(&copy));
        let security = run(Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--no-pager"])
            .arg(&copy));
        let score: f64 = security
            .lines()
            .find_map(|l| l.split("Overall exposure level for ").nth(1))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .expect("an exposure level");
        eprintln!("{unit}.service exposure level: {score}");
        assert!(score <= most, "{unit}: exposure {score} > {most}");
    }

    // The server, as its unit runs it, with the example config where the guide puts it.
    for dir in ["vrrp-monitor", "vrrp-agent"] {
        std::fs::create_dir_all(tree.join("etc").join(dir)).unwrap();
        std::fs::create_dir_all(tree.join("var/lib").join(dir)).unwrap();
        std::fs::copy(
            home.join(format!("etc/{dir}/config.yaml")),
            tree.join(format!("etc/{dir}/config.yaml")),
        )
        .unwrap();
    }
    let (exec, env) = unit_command(&home.join("systemd/vrrp-monitor.service"), &tree);
    let server_port = free_port();
    let logs = work.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let server = Running(
        Command::new(&exec)
            .envs(env)
            // The port is the only thing moved off the example (tests run side by side).
            .env("SVC_SERVER_PORT", server_port.to_string())
            .env("SVC_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(logs.join("server.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let http = http_agent();
    let base = format!("http://127.0.0.1:{server_port}");
    wait_for("the server", 20, || {
        http.get(&format!("{base}/api/health"))
            .call()
            .ok()
            .filter(|r| r.status() == 200)
    });
    let config = std::fs::read_to_string(tree.join("etc/vrrp-monitor/config.yaml")).unwrap();
    assert!(
        config.contains("jwtSecret:"),
        "the server filled in its secrets: {config}"
    );
    assert!(tree.join("var/lib/vrrp-monitor/vrrp-monitor.db").is_file());

    let mut login = http
        .post(&format!("{base}/api/login"))
        .header("content-type", "application/json")
        .send(json!({"username": "admin", "password": ADMIN_PASSWORD}).to_string())
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
        .find(|c| c.starts_with("svc_session="))
        .map(|c| c.split(';').next().unwrap().to_owned())
        .expect("session cookie");
    let token: Value = http
        .post(&format!("{base}/api/v1/tokens"))
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .send("{}")
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();

    // The agent, as its unit runs it. Its process table is an empty directory: the
    // test must not signal the keepalived of another engineer's lab; the reading
    // then says keepalived is not running, which is still a reading.
    let (exec, env) = unit_command(&home.join("systemd/vrrp-agent.service"), &tree);
    let agent_port = free_port();
    let no_proc = work.path().join("proc");
    std::fs::create_dir_all(&no_proc).unwrap();
    let agent_log = logs.join("agent.log");
    let _agent = Running(
        Command::new(&exec)
            .envs(env)
            .env("SVC_CLIENT_PORT", agent_port.to_string())
            .env("SVC_PROC_DIR", &no_proc)
            .stdout(std::fs::File::create(logs.join("agent.out")).unwrap())
            .stderr(std::fs::File::create(&agent_log).unwrap())
            .spawn()
            .unwrap(),
    );
    let pin = wait_for("the setup PIN in the agent's log", 20, || {
        let text = std::fs::read_to_string(&agent_log).unwrap_or_default()
            + &std::fs::read_to_string(logs.join("agent.out")).unwrap_or_default();
        text.lines().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            let msg = v["msg"].as_str().or(v["message"].as_str())?;
            Some(msg.split("Setup PIN: ").nth(1)?.trim().to_owned())
        })
    });
    let mut answer = http
        .post(&format!("http://127.0.0.1:{agent_port}/api/register"))
        .header("content-type", "application/json")
        .send(json!({"url": base, "token": token["token"], "pin": pin}).to_string())
        .unwrap();
    assert_eq!(
        answer.status(),
        200,
        "{}",
        answer.body_mut().read_to_string().unwrap_or_default()
    );
    assert!(tree.join("var/lib/vrrp-agent/identity.json").is_file());

    let reading = wait_for("the agent's reading on the server", 30, || {
        let states: Value = http
            .get(&format!("{base}/api/v1/keepalived/states"))
            .header("cookie", &cookie)
            .call()
            .ok()?
            .body_mut()
            .read_json()
            .ok()?;
        states.as_array()?.first().cloned()
    });
    assert_eq!(reading["running"], false, "{reading}");
    drop(server);
}
