//! The agent without root (issue 46), beside real keepalived: two hosts of scripts/lab
//! (h1 120 MASTER, h2 110 BACKUP), the real server in the lab's switch namespace, a
//! root agent on h1 as the yardstick and, on h2, the agent as the shipped unit runs it:
//! its own uid (a bare number, no passwd entry needed), no groups, no-new-privs, and
//! exactly CAP_KILL, CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE (inheritable, ambient and
//! bounding set alike, as `AmbientCapabilities=` and `CapabilityBoundingSet=` give
//! them). Its data directory and config are that uid's; keepalived's dumps and FIFO
//! stay root-owned 0600, as keepalived makes them.
//!
//! It registers (and writes `serverUrl` back into its config), its readings make the
//! clusters with both hosts' real states, and a real failover and the takeover back
//! reach the server as keepalived made them, each state change once, as for a root
//! agent (lab_agent_kill.rs holds root agents to the same count); a drain and an
//! undrain write the drain file in a directory of the agent's user. Then, to show the
//! list is exact, the agent is started three more times, each time with one of the
//! three missing: every reading fails, and says which capability it lacks.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux (setpriv), curl.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use serde_json::{json, Value};
use vrrp_test_support::changes::*;
use vrrp_test_support::host_agent::*;
use vrrp_test_support::lab::Lab;
use vrrp_test_support::*;

/// The agent's uid and gid: any number with no passwd entry does.
const UID: u32 = 64123;

/// The unit's capabilities, in setpriv's spelling.
const CAPS: [&str; 3] = ["kill", "dac_read_search", "sys_ptrace"];

/// CapEff of a process holding exactly CAPS: bits 5 (KILL), 2 (DAC_READ_SEARCH) and
/// 19 (SYS_PTRACE).
const CAPS_MASK: &str = "0000000000080024";

/// Starts `a` in its host as UID with only `caps`, the way systemd starts the unit
/// (HostAgent::start, with setpriv in front); returns once its web server listens.
fn start_as_agent_user(a: &mut HostAgent, lab: &Lab, caps: &[&str]) {
    a.runs += 1;
    let log = fs::File::create(a.log_path(a.runs)).unwrap();
    let set = format!(
        "-all{}",
        caps.iter().map(|c| format!(",+{c}")).collect::<String>()
    );
    let child = lab
        .cmd(&["exec", &a.host, "setpriv"])
        .arg(format!("--reuid={UID}"))
        .arg(format!("--regid={UID}"))
        .arg("--clear-groups")
        .arg(format!("--inh-caps={set}"))
        .arg(format!("--ambient-caps={set}"))
        .arg(format!("--bounding-set={set}"))
        .arg("--no-new-privs")
        .arg("--")
        .arg(&a.bin)
        .env("SVC_CLIENT_CONFIG", a.dir.join("config.yaml"))
        .env("SVC_CLIENT_DATA_DIR", a.dir.join("data"))
        .env("LOG_LEVEL", a.log_level)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    a.child = Some(child);
    wait_for("the agent's web server", 20, || {
        a.log().contains("Web server listening").then_some(())
    });
}

/// (Uid line, CapEff, CapBnd) of the running agent, from /proc.
fn credentials(a: &HostAgent) -> (String, String, String) {
    let pid = a.pid().expect("the agent runs");
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    (field("Uid:"), field("CapEff:"), field("CapBnd:"))
}

fn chown(path: &std::path::Path) {
    std::os::unix::fs::chown(path, Some(UID), Some(UID)).unwrap();
}

/// Both clusters with both hosts live, and `master`'s host as the one master.
fn wait_clusters(server: &Server, admin: &str, master: &str, what: &str) -> Value {
    wait_for(what, 60, || {
        let list = server.get(admin, "/api/v1/keepalived/clusters");
        let ok = list.as_array()?.len() == 2
            && list.as_array()?.iter().all(|c| {
                c["members"].as_array().is_some_and(|m| {
                    m.len() == 2
                        && m.iter().all(|m| {
                            (m["instance"]["state"] == "MASTER") == (m["clientId"] == master)
                        })
                })
            });
        ok.then_some(list)
    })
}

/// The member of the cluster of `vrid` that `client` reports.
fn member(clusters: &Value, vrid: u64, client: &str) -> Value {
    clusters
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["vrid"] == vrid)
        .and_then(|c| {
            c["members"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["clientId"] == client)
                .cloned()
        })
        .unwrap_or(Value::Null)
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn an_agent_with_only_its_three_capabilities_registers_reads_and_reports_a_failover() {
    let (lab, mut server) = lab_with_server(2, "vnr"); // h1 120 MASTER, h2 110 BACKUP
    server.start();
    let admin = server.admin();

    // The root agent on h1, the yardstick.
    let mut h1 = HostAgent::new(&lab, "h1");
    h1.start(&lab);
    // The agent on h2 as its own user: its directory and config are its own (what the
    // packages do for /etc/vrrp-agent and systemd for /var/lib/vrrp-agent).
    let mut h2 = HostAgent::new(&lab, "h2");
    h2.log_level = "info";
    // Drains on, into a directory of the agent's user, as the host guide has it
    // (keepalived, root, reads it whoever owns it).
    let drain_dir = lab.work.join("keepalived-drain");
    fs::create_dir(&drain_dir).unwrap();
    fs::set_permissions(&drain_dir, fs::Permissions::from_mode(0o755)).unwrap();
    chown(&drain_dir);
    let drain_file = drain_dir.join("drain");
    fs::write(
        h2.dir.join("config.yaml"),
        format!("{CONFIG}actions:\n  drainFile: {}\n", drain_file.display()),
    )
    .unwrap();
    fs::set_permissions(
        h2.dir.join("config.yaml"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    chown(&h2.dir);
    chown(&h2.dir.join("config.yaml"));
    start_as_agent_user(&mut h2, &lab, &CAPS);
    let (uid, eff, bnd) = credentials(&h2);
    let uid_line = format!("{UID}\t{UID}\t{UID}\t{UID}");
    assert_eq!(uid, uid_line, "real, effective, saved and file-system uid");
    assert_eq!((eff.as_str(), bnd.as_str()), (CAPS_MASK, CAPS_MASK));

    let c1 = register(&lab, &server, &admin, &h1);
    let c2 = register(&lab, &server, &admin, &h2);
    let config = fs::read_to_string(h2.dir.join("config.yaml")).unwrap();
    assert!(
        config.contains(&format!("serverUrl: {}", server.url())),
        "serverUrl written back: {config}"
    );
    let md = fs::metadata(h2.dir.join("data/identity.json")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&md), UID);

    // Its readings: keepalived found, signalled and read, the FIFO open read-only.
    let s = wait_for("h2's first reading", 20, || {
        let s = h2.get(&lab, "/api/status/keepalived");
        (s["collected"] == true).then_some(s)
    });
    assert_eq!(
        (&s["running"], &s["error"], &s["instances"], &s["version"]),
        (&true.into(), &Value::Null, &2.into(), &"2.2.7".into()),
        "{s}"
    );
    wait_for("h2's FIFO open", 15, || {
        (h2.get(&lab, "/api/status/keepalived")["triggers"]["fifo"] == "open").then_some(())
    });
    // What it read is keepalived's, root's and 0600, as keepalived made it: nothing
    // here loosens it for the agent.
    for f in [
        "keepalived.data",
        "keepalived.stats",
        "keepalived_vrrp.fifo",
    ] {
        let md = fs::metadata(lab.state.join("h2/tmp").join(f)).unwrap();
        let owner = std::os::unix::fs::MetadataExt::uid(&md);
        assert_eq!((owner, md.permissions().mode() & 0o777), (0, 0o600), "{f}");
    }
    let clusters = wait_clusters(&server, &admin, &c1, "both clusters, h1 MASTER, h2 BACKUP");
    for vrid in [51, 52] {
        let m = member(&clusters, vrid, &c2);
        assert_eq!(m["instance"]["state"], "BACKUP", "{m}");
        assert_eq!(m["instance"]["priority"], 110, "{m}");
    }

    // A real failover: keepalived on h1 stops, h2 takes over; then h1 comes back and
    // takes the role back. The server stores each of h2's changes once, as keepalived
    // made them.
    let (_, from_line) = keepalived_changes(&lab, "h2", 0);
    lab.run(&["failover", "h1"]);
    lab.wait_state("h2", "VI_1", "MASTER");
    lab.wait_state("h2", "VI_2", "MASTER");
    let (want, _) = keepalived_changes(&lab, "h2", from_line);
    assert!(want.len() >= 2, "both instances changed: {want:?}");
    wait_for("the server has h2's takeover", 30, || {
        (server_changes(&server, &admin, &c2).0 == want).then_some(())
    });
    wait_for("the clusters with h2 MASTER", 30, || {
        let list = server.get(&admin, "/api/v1/keepalived/clusters");
        [51, 52]
            .iter()
            .all(|v| member(&list, *v, &c2)["instance"]["state"] == "MASTER")
            .then_some(())
    });
    lab.run(&["start", "h1"]);
    lab.wait_state("h1", "VI_1", "MASTER");
    lab.wait_state("h2", "VI_1", "BACKUP");
    lab.wait_state("h2", "VI_2", "BACKUP");
    let (want, _) = keepalived_changes(&lab, "h2", from_line);
    wait_for("the server has h2's step back", 30, || {
        (server_changes(&server, &admin, &c2).0 == want).then_some(())
    });
    let (got, duplicate_ids) = server_changes(&server, &admin, &c2);
    eprintln!("non-root agent on h2: keepalived's changes {want:?}, the server's {got:?}");
    assert_eq!(duplicate_ids, 0);
    wait_clusters(&server, &admin, &c1, "both clusters, h1 MASTER again");

    // A drain and an undrain through the server: the agent replaces the file in its
    // directory (0644, for keepalived to read).
    for (method, body, want) in [
        ("POST", Some(json!({"reason": "non-root drill"})), "1\n"),
        ("DELETE", None, "0\n"),
    ] {
        let (status, _, b) = request(
            method,
            &format!("{}/api/v1/clients/{c2}/drain", server.url()),
            Some(&admin),
            body.as_ref(),
        );
        assert_eq!(status, 200, "{method} drain: {b}");
        assert_eq!(b["warning"], Value::Null, "{b}");
        assert_eq!(fs::read_to_string(&drain_file).unwrap(), want);
        let md = fs::metadata(&drain_file).unwrap();
        let owner = std::os::unix::fs::MetadataExt::uid(&md);
        assert_eq!((owner, md.permissions().mode() & 0o777), (UID, 0o644));
    }

    // One capability fewer, each in turn: the reading fails and names it.
    h2.kill(nix::sys::signal::Signal::SIGTERM);
    for (missing, says) in [
        ("dac_read_search", "CAP_DAC_READ_SEARCH"),
        ("sys_ptrace", "CAP_SYS_PTRACE"),
        ("kill", "CAP_KILL"),
    ] {
        let caps: Vec<&str> = CAPS.iter().copied().filter(|c| *c != missing).collect();
        start_as_agent_user(&mut h2, &lab, &caps);
        let s = wait_for(&format!("a reading without {says}"), 20, || {
            let s = h2.get(&lab, "/api/status/keepalived");
            (s["collected"] == true).then_some(s)
        });
        let error = s["error"].as_str().unwrap_or_default();
        eprintln!("without {says}: {error}");
        assert!(
            error.contains(&format!("the agent needs {says}")),
            "without {says}: {s}"
        );
        assert_eq!(s["instances"], 0, "nothing read without {says}: {s}");
        if missing != "kill" {
            // The FIFO, root's and 0600 behind /proc/<pid>/root, says the same.
            let line = wait_for("the FIFO's warning", 15, || {
                h2.log()
                    .lines()
                    .find(|l| l.contains("Notify FIFO"))
                    .map(str::to_string)
            });
            eprintln!("without {says}: {line}");
            assert!(line.contains(&format!("the agent needs {says}")), "{line}");
        }
        h2.kill(nix::sys::signal::Signal::SIGTERM);
    }
}
