//! The Ansible roles of deploy/ansible (site.yml) run twice against hosts of
//! scripts/lab: the agent role on h1..h3, the server role on h4, the real server
//! (the one the agents register with) in the lab's switch namespace.
//!
//! The hosts have no ssh and no systemd: Ansible reaches them through the
//! connection plugin tests/ansible/connection_plugins/lab.py (`scripts/lab exec`),
//! and both roles run with service management off. Each host has its own /etc,
//! /usr and /var/lib (`LAB_OWN_SYSTEM=1`, overlays of the machine's), so the
//! packages install into the host's own dpkg database as on a machine of its own,
//! and nothing of them is left on this machine when the lab goes down.
//!
//! In order: ansible-lint on deploy/ansible (production profile, no finding); the
//! .debs of scripts/package (from a static dev build, as scripts/host-guide
//! packs its tarball; `VRRP_ANSIBLE_PACKAGES` names a folder of ready ones
//! instead); the first run installs both packages, writes the configs and
//! registers three agents (the server lists three clients, one per host); the
//! second run changes nothing on any host; the installed server and agents are
//! started as their units would start them, the server reads its provisioning
//! file and leaves its config untouched, the agents report readings (both VRRP
//! clusters with three members); a third run still changes nothing.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux (setpriv), curl, and
//! ansible-core and ansible-lint in target/ansible-venv (scripts/install-test-deps.sh);
//! for the packages Zig, the musl target, cargo-deb (scripts/install-static-deps.sh).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{json, Value};
use vrrp_test_support::host_agent::server_in;
use vrrp_test_support::lab::Lab;
use vrrp_test_support::*;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// What scripts/install-test-deps.sh installs into [`venv`], pinned.
const ANSIBLE_PIP: &[&str] = &["ansible-core==2.19.14", "ansible-lint==26.10.1"];

const AGENT_HOSTS: [&str; 3] = ["h1", "h2", "h3"];
const SERVER_HOST: &str = "h4";

fn venv() -> PathBuf {
    Path::new(ROOT).join("target/ansible-venv")
}

/// The venv's bin folder, with both tools in it.
fn ansible_bin() -> PathBuf {
    let bin = venv().join("bin");
    let missing: Vec<&str> = ["ansible-playbook", "ansible-lint"]
        .into_iter()
        .filter(|t| !bin.join(t).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "{} missing from {}: scripts/install-test-deps.sh installs them (python3 -m venv {v} && {v}/bin/pip install {})",
        missing.join(" and "),
        bin.display(),
        ANSIBLE_PIP.join(" "),
        v = venv().display()
    );
    bin
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn lint(bin: &Path) {
    let out = Command::new(bin.join("ansible-lint"))
        .arg("--nocolor")
        .current_dir(Path::new(ROOT).join("deploy/ansible"))
        .env("PATH", path_with(bin))
        .env(
            "ANSIBLE_HOME",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("ansible-lint-home"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = text(&out);
    eprintln!("ansible-lint: {}", said.trim());
    assert!(out.status.success(), "ansible-lint found something: {said}");
    assert!(said.contains("0 failure(s), 0 warning(s)"), "{said}");
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The two .debs: from `VRRP_ANSIBLE_PACKAGES`, or scripts/package over a static dev build.
fn packages() -> (PathBuf, PathBuf) {
    let dir = match std::env::var_os("VRRP_ANSIBLE_PACKAGES").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-ansible-dist");
            let _ = fs::remove_dir_all(&out);
            let built = Command::new(Path::new(ROOT).join("scripts/lib/static-build"))
                .args(["x86_64", "dev"])
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()
                .unwrap();
            assert!(built.status.success(), "static build: {}", text(&built));
            let bins = String::from_utf8_lossy(&built.stdout).trim().to_string();
            let packed = Command::new(Path::new(ROOT).join("scripts/package"))
                .args(["--bin-dir", &bins, "--arch", "x86_64", "--out"])
                .arg(&out)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                packed.status.success(),
                "scripts/package: {}",
                text(&packed)
            );
            out
        }
    };
    let find = |name: &str| {
        fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let f = p.file_name().unwrap().to_string_lossy();
                f.starts_with(&format!("{name}_")) && f.ends_with(".deb")
            })
            .unwrap_or_else(|| panic!("no {name}_*.deb in {}", dir.display()))
    };
    (find("vrrp-agent"), find("vrrp-monitor"))
}

/// The inventory: the lab's hosts through the lab connection, one registration
/// token per agent host (a token registers one agent), service management off.
fn inventory(server_url: &str, tokens: &[String], debs: &(PathBuf, PathBuf)) -> Value {
    let agents: serde_json::Map<String, Value> = AGENT_HOSTS
        .iter()
        .zip(tokens)
        .map(|(h, t)| (h.to_string(), json!({ "vrrp_agent_registration_token": t })))
        .collect();
    json!({ "all": {
        "vars": {
            "ansible_connection": "lab",
            "ansible_lab_script": format!("{ROOT}/scripts/lab"),
            "ansible_pipelining": true,
            "ansible_python_interpreter": "/usr/bin/python3",
        },
        "children": {
            "vrrp_monitor": {
                "hosts": { SERVER_HOST: {} },
                "vars": {
                    "vrrp_monitor_package_file": debs.1,
                    "vrrp_monitor_install_throttle": 1,
                    "vrrp_monitor_manage_service": false,
                    "vrrp_monitor_jwt_secret": "6a1f0c2e9b8d7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f",
                    "vrrp_monitor_secret_key": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
                    "vrrp_monitor_provisioning": {
                        "settings": { "notification_retention_days": 30 }
                    },
                },
            },
            "vrrp_agents": {
                "hosts": agents,
                "vars": {
                    "vrrp_agent_package_file": debs.0,
                    // The hosts' dpkg databases are their own here, but a lab without
                    // LAB_OWN_SYSTEM would share the machine's: one install at a time.
                    "vrrp_agent_install_throttle": 1,
                    "vrrp_agent_manage_service": false,
                    "vrrp_agent_server_url": server_url,
                    "vrrp_agent_config": {
                        "logLevel": "debug",
                        "keepalived": { "notifyFifo": "/tmp/keepalived_vrrp.fifo" }
                    },
                },
            },
        },
    }})
}

/// One `ansible-playbook site.yml`; returns its output, kept in the work folder.
fn playbook(lab: &Lab, bin: &Path, inventory: &Path, run: u32) -> String {
    let home = lab.work.join("ansible-home");
    let out = lab
        .command(bin.join("ansible-playbook"))
        .arg("-i")
        .arg(inventory)
        .arg(Path::new(ROOT).join("deploy/ansible/site.yml"))
        .env("PATH", path_with(bin))
        .env(
            "ANSIBLE_CONNECTION_PLUGINS",
            Path::new(ROOT).join("tests/ansible/connection_plugins"),
        )
        // Not under /tmp: the hosts have their own, and the modules read what the
        // controller put there.
        .env("ANSIBLE_HOME", &home)
        .env("ANSIBLE_LOCAL_TEMP", home.join("local-tmp"))
        .env("ANSIBLE_REMOTE_TMP", home.join("remote-tmp"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_FORCE_COLOR", "0")
        .current_dir(&lab.work)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = text(&out);
    fs::write(lab.work.join(format!("ansible-run-{run}.log")), &said).unwrap();
    assert!(
        out.status.success(),
        "ansible-playbook run {run} failed:\n{said}"
    );
    said
}

/// PLAY RECAP: host -> counter -> number; prints the recap lines.
fn recap(out: &str, run: u32) -> BTreeMap<String, BTreeMap<String, u64>> {
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("PLAY RECAP"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    for l in &lines {
        eprintln!("run {run} recap: {}", l.trim_end());
    }
    lines
        .iter()
        .filter_map(|l| {
            let (host, counts) = l.split_once(':')?;
            let counts = counts
                .split_whitespace()
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect();
            Some((host.trim().to_string(), counts))
        })
        .collect()
}

/// A shell command inside a lab host; its output.
fn sh(lab: &Lab, host: &str, cmd: &str) -> String {
    let out = lab
        .cmd(&["exec", host, "sh", "-c", cmd])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{host}: {cmd}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The machine's own dpkg status of a package (the lab hosts' are apart).
fn machine_dpkg(package: &str) -> String {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", package])
        .output()
        .unwrap();
    text(&out)
}

/// The installed unit of `service` started in `host` as systemd would start it: its
/// ExecStart with its Environment, as its User, with its capabilities (setpriv).
/// Not emulated: the file-system sandbox, Restart=.
fn start_unit(lab: &Lab, host: &str, service: &str) -> Child {
    let unit = sh(
        lab,
        host,
        &format!("cat /lib/systemd/system/{service}.service"),
    );
    let mut envs = vec!["PATH=/usr/sbin:/usr/bin:/sbin:/bin".to_string()];
    let (mut exec, mut user, mut group) = (String::new(), String::new(), String::new());
    let (mut ambient, mut bounding, mut nnp) = (Vec::new(), None, false);
    let caps = |v: &str| -> Vec<String> {
        v.split_whitespace()
            .map(|c| format!("+{}", c.trim_start_matches("CAP_").to_lowercase()))
            .collect()
    };
    for line in unit.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "ExecStart" => exec = v.to_string(),
            "Environment" => envs.extend(v.split_whitespace().map(str::to_string)),
            "User" => user = v.to_string(),
            "Group" => group = v.to_string(),
            "AmbientCapabilities" => ambient = caps(v),
            "CapabilityBoundingSet" => bounding = Some(caps(v)),
            "NoNewPrivileges" => nnp = v == "yes",
            _ => {}
        }
    }
    assert!(
        !exec.is_empty(),
        "{service}.service has no ExecStart:\n{unit}"
    );
    let mut args: Vec<String> = vec!["exec".into(), host.into(), "env".into(), "-i".into()];
    args.extend(envs);
    args.push("setpriv".into());
    if !user.is_empty() && user != "root" {
        let group = if group.is_empty() { &user } else { &group };
        args.extend([
            "--reuid".into(),
            user.clone(),
            "--regid".into(),
            group.clone(),
        ]);
        args.push("--init-groups".into());
    }
    if !ambient.is_empty() {
        args.extend(["--inh-caps".into(), ambient.join(",")]);
        args.extend(["--ambient-caps".into(), ambient.join(",")]);
    }
    if let Some(b) = bounding {
        let mut set = vec!["-all".to_string()];
        set.extend(b);
        args.extend(["--bounding-set".into(), set.join(",")]);
    }
    if nnp {
        args.push("--no-new-privs".into());
    }
    args.push("--".into());
    args.extend(exec.split_whitespace().map(str::to_string));
    let log = fs::File::create(lab.work.join(format!("{service}-{host}.log"))).unwrap();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    lab.cmd(&argv)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Processes started in the hosts: their `scripts/lab exec` ends with them; the
/// lab's `down` ends what is left in the hosts.
struct Started(Vec<Child>);

impl Drop for Started {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn the_roles_install_and_register_three_agents_and_a_second_run_changes_nothing() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Lab);
    let bin = ansible_bin();
    lint(&bin);
    let debs = packages();
    let dpkg_before = (machine_dpkg("vrrp-agent"), machine_dpkg("vrrp-monitor"));

    let lab = Lab::up_with(4, "van", &[("LAB_OWN_SYSTEM", "1")]);
    let (lab, mut server) = server_in(lab);
    server.start();
    let admin = server.admin();
    let tokens: Vec<String> = AGENT_HOSTS.iter().map(|_| server.token(&admin)).collect();
    let inv = lab.work.join("inventory.json");
    fs::write(
        &inv,
        serde_json::to_vec_pretty(&inventory(&server.url(), &tokens, &debs)).unwrap(),
    )
    .unwrap();
    let all_hosts: Vec<&str> = AGENT_HOSTS.iter().copied().chain([SERVER_HOST]).collect();

    // --- First run: installs, configures, registers.
    let first = recap(&playbook(&lab, &bin, &inv, 1), 1);
    for h in &all_hosts {
        let r = first
            .get(*h)
            .unwrap_or_else(|| panic!("{h} not in the recap"));
        assert_eq!((r["failed"], r["unreachable"]), (0, 0), "{h}: {r:?}");
        assert!(
            r["changed"] > 0,
            "{h}: the first run changed nothing: {r:?}"
        );
    }
    let clients = server.get(&admin, "/api/v1/clients");
    let mut hostnames: Vec<String> = clients
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["hostname"].as_str().unwrap().to_string())
        .collect();
    hostnames.sort();
    let want: Vec<String> = AGENT_HOSTS
        .iter()
        .map(|h| format!("{}-{h}", lab.prefix))
        .collect();
    assert_eq!(hostnames, want, "one client per agent host: {clients:#}");
    for h in AGENT_HOSTS {
        assert_eq!(
            sh(
                &lab,
                h,
                "stat -c '%a %U' /etc/vrrp-agent/config.yaml /var/lib/vrrp-agent/identity.json"
            ),
            "600 vrrp-agent\n600 vrrp-agent",
            "{h}"
        );
        let config = sh(&lab, h, "cat /etc/vrrp-agent/config.yaml");
        assert!(
            config.contains(&format!("serverUrl: {}", server.url())),
            "{h}: {config}"
        );
    }
    assert_eq!(
        sh(&lab, SERVER_HOST, "stat -c '%a %U' /etc/vrrp-monitor/config.yaml /etc/vrrp-monitor/provisioning/ansible.yaml"),
        "600 vrrp-monitor\n600 vrrp-monitor"
    );
    assert!(sh(
        &lab,
        SERVER_HOST,
        "cat /etc/vrrp-monitor/provisioning/ansible.yaml"
    )
    .contains("apiVersion: 1\nsettings:\n  notification_retention_days: 30"));

    // --- Second run: nothing to do anywhere.
    let second = recap(&playbook(&lab, &bin, &inv, 2), 2);
    for h in &all_hosts {
        let r = &second[*h];
        assert_eq!(
            (r["changed"], r["failed"], r["unreachable"]),
            (0, 0, 0),
            "{h}: the second run changed something: {r:?}"
        );
    }
    assert_eq!(
        server
            .get(&admin, "/api/v1/clients")
            .as_array()
            .unwrap()
            .len(),
        3,
        "no second registration"
    );
    // What the role's `creates` spares the host: the command itself says so too.
    let id: Value =
        serde_json::from_str(&sh(&lab, "h1", "cat /var/lib/vrrp-agent/identity.json")).unwrap();
    assert_eq!(
        sh(
            &lab,
            "h1",
            "SVC_CLIENT_CONFIG=/etc/vrrp-agent/config.yaml SVC_CLIENT_DATA_DIR=/var/lib/vrrp-agent \
             vrrp-agent register </dev/null"
        ),
        format!("already registered as {}", id["clientId"].as_str().unwrap())
    );

    // --- The installed programs, started as their units start them.
    let config_sum = "sha256sum /etc/vrrp-monitor/config.yaml";
    let before = sh(&lab, SERVER_HOST, config_sum);
    let mut started = Started(vec![start_unit(&lab, SERVER_HOST, "vrrp-monitor")]);
    wait_for("the installed server to answer", 30, || {
        (lab.curl(SERVER_HOST, &["http://127.0.0.1:3010/api/v1/ping"])
            .0
            == 200)
            .then_some(())
    });
    let server_log = fs::read_to_string(lab.work.join(format!("vrrp-monitor-{SERVER_HOST}.log")))
        .unwrap_or_default();
    assert!(
        server_log.contains("notification_retention_days") && server_log.contains("ansible.yaml"),
        "the installed server did not apply its provisioning file: {server_log}"
    );
    assert_eq!(
        sh(&lab, SERVER_HOST, config_sum),
        before,
        "the server rewrote the config the role wrote"
    );
    for h in AGENT_HOSTS {
        started.0.push(start_unit(&lab, h, "vrrp-agent"));
    }
    wait_for("both clusters with three reporting members", 60, || {
        let list = server.get(&admin, "/api/v1/keepalived/clusters");
        let list = list.as_array()?;
        (list.len() == 2
            && list.iter().all(|c| {
                c["members"].as_array().is_some_and(|m| {
                    m.len() == 3 && m.iter().all(|m| m["instance"]["state"].is_string())
                })
            }))
        .then_some(())
    });

    // --- Third run, the programs running: still nothing to change.
    let third = recap(&playbook(&lab, &bin, &inv, 3), 3);
    for h in &all_hosts {
        assert_eq!(third[*h]["changed"], 0, "{h}: {:?}", third[*h]);
    }
    drop(started);
    // The machine's own package database never saw the packages.
    assert_eq!(
        (machine_dpkg("vrrp-agent"), machine_dpkg("vrrp-monitor")),
        dpkg_before
    );
}
