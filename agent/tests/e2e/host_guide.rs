//! doc/keepalived-host.md followed step by step inside two hosts of the keepalived
//! lab by `scripts/host-guide`, which runs the guide's own tagged blocks; each step's
//! outcome is checked here. h1: the agent installed from the tarball of a static
//! (musl) dev build of both binaries (`scripts/host-guide package`), given its own
//! user as the guide says and run as that user with the unit's three capabilities
//! (the systemd stand-in applies `User=`, `AmbientCapabilities=`, ...), started too
//! early (no notify token) and with the FIFO configured before keepalived was reloaded, then set up right: notify events arrive through the notify
//! script and through the FIFO, the JSON dump is read, and it registers inbound through
//! its page's API with the PIN from its log. h2: the notify script once for the sync
//! group, TLS, started once in a PID namespace of its own, then registered outbound
//! (`wss://`) with its PIN. The log lines and
//! status values the guide's troubleshooting table lists are taken from the table
//! and must appear when the matching mistake is made.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux (setpriv), curl, openssl, readelf;
//! Zig and the musl target (scripts/install-static-deps.sh).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::SystemTime;

use serde_json::{json, Value};
use vrrp_test_support::host_agent::*;
use vrrp_test_support::lab::Lab;
use vrrp_test_support::*;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// `scripts/host-guide` against this test's lab.
struct Guide<'a> {
    lab: &'a Lab,
    dir: PathBuf,
}

impl Guide<'_> {
    fn run(&self, args: &[&str]) -> String {
        let out = self
            .lab
            .command(format!("{ROOT}/scripts/host-guide"))
            .args(args)
            .env("HOST_GUIDE_DIR", &self.dir)
            .env("HOST_GUIDE_UNIT_ENV", "LOG_LEVEL=debug")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "scripts/host-guide {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// A shell command inside the host (systemctl and journalctl are the stand-ins).
    fn sh(&self, host: &str, cmd: &str) -> String {
        self.run(&["sh", host, cmd])
    }

    /// What `journalctl -u vrrp-agent` shows: the agent's JSON log lines, as messages.
    fn journal(&self, host: &str) -> Vec<String> {
        fs::read_to_string(self.dir.join(host).join("journal/vrrp-agent.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(v) => v["msg"].as_str().unwrap_or(l).to_string(),
                Err(_) => l.to_string(),
            })
            .collect()
    }

    /// `stat` of a path as the host sees it: "mode owner".
    fn stat(&self, host: &str, path: &str) -> String {
        self.sh(host, &format!("stat -c '%a %U' {path}"))
            .trim()
            .to_string()
    }

    /// `Name:\tvalue` lines of the running agent's /proc/<pid>/status, by name.
    fn agent_proc_status(&self, host: &str) -> Vec<(String, String)> {
        self.sh(
            host,
            "cat /proc/$(cat $HOST_GUIDE_HOSTDIR/journal/vrrp-agent.pid)/status",
        )
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
    }

    /// The running agent is the unit's user, with the unit's three capabilities and
    /// no others: effective and ambient exactly those, the bounding set too.
    fn assert_agent_credentials(&self, host: &str) {
        let uid = self.sh(host, "id -u vrrp-agent").trim().to_string();
        let gid = self.sh(host, "id -g vrrp-agent").trim().to_string();
        assert_ne!(uid, "0", "the guide's vrrp-agent user is root");
        let status = self.agent_proc_status(host);
        let field = |name: &str| {
            status
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {name} in the agent's status: {status:?}"))
        };
        // Real, effective, saved and file-system ids.
        let all = |id: &str| [id; 4].join("\t");
        assert_eq!(field("Uid"), all(&uid), "{host}'s agent is not vrrp-agent");
        assert_eq!(field("Gid"), all(&gid), "{host}'s agent's group");
        // CAP_DAC_READ_SEARCH (2), CAP_KILL (5), CAP_SYS_PTRACE (19).
        for set in ["CapEff", "CapAmb", "CapBnd"] {
            assert_eq!(field(set), "0000000000080024", "{host}'s agent's {set}");
        }
        assert_eq!(field("NoNewPrivs"), "1", "{host}'s agent's NoNewPrivs");
    }

    /// The agent's status route; None while it is not answering (just restarted).
    fn status(&self, host: &str, route: &str) -> Option<Value> {
        let url = format!("http://127.0.0.1:3011/api/status/{route}");
        let (code, body) = self.lab.curl(host, &[&url]);
        (code == 200).then(|| serde_json::from_str(&body).ok())?
    }

    /// The status once the agent answers.
    fn wait_status(&self, host: &str, route: &str) -> Value {
        wait_for(&format!("{host}'s /api/status/{route}"), 20, || {
            self.status(host, route)
        })
    }

    /// The file the host's keepalived wrote into its own /tmp.
    fn tmp_mtime(&self, host: &str, file: &str) -> Option<SystemTime> {
        fs::metadata(self.lab.state.join(host).join("tmp").join(file))
            .and_then(|m| m.modified())
            .ok()
    }

    fn pin(&self, host: &str) -> String {
        let line = self.run(&["step", host, "pin"]);
        line.split("Setup PIN: ")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap_or_else(|| panic!("no PIN in {line:?}"))
            .trim()
            .to_string()
    }
}

/// The first column of the guide's troubleshooting table, each row's code span.
fn troubleshooting_rows() -> Vec<String> {
    let guide = fs::read_to_string(format!("{ROOT}/doc/keepalived-host.md")).unwrap();
    let table = guide
        .split("## Troubleshooting")
        .nth(1)
        .expect("the guide has a troubleshooting section");
    table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" | ").next())
        .filter_map(|cell| cell.split('`').nth(1).map(|c| (cell, c)))
        .map(|(cell, code)| {
            if cell.starts_with("status ") {
                format!("status {code}")
            } else {
                code.to_string()
            }
        })
        .collect()
}

fn row(starts: &str) -> String {
    let rows = troubleshooting_rows();
    rows.iter()
        .find(|r| r.starts_with(starts))
        .unwrap_or_else(|| panic!("no troubleshooting row starting {starts:?} in {rows:#?}"))
        .clone()
}

/// The row's fixed text (split at `…` and at placeholders like `<n>`) is in one log line.
fn assert_logged(lines: &[String], row: &str) {
    let mut parts = Vec::new();
    for piece in row.split('…') {
        let mut rest = piece;
        while let Some(open) = rest.find('<') {
            parts.push(&rest[..open]);
            rest = rest[open..].split_once('>').map_or("", |(_, r)| r);
        }
        parts.push(rest);
    }
    let parts: Vec<&str> = parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let hit = lines.iter().any(|l| {
        let mut at = 0;
        parts.iter().all(|p| match l[at..].find(p) {
            Some(i) => {
                at += i + p.len();
                true
            }
            None => false,
        })
    });
    assert!(
        hit,
        "no log line matches the guide's row {row:?} ({parts:?}): {lines:#?}"
    );
}

/// A status row (`status triggers.fifo: "missing"`) holds in the agent's status.
fn assert_status(keepalived: &Value, row: &str) {
    let (path, want) = row
        .strip_prefix("status ")
        .and_then(|r| r.split_once(": "))
        .unwrap_or_else(|| panic!("not a status row: {row}"));
    let want: Value = serde_json::from_str(want).unwrap();
    let got = path.split('.').fold(keepalived, |v, k| &v[k]);
    assert_eq!(got, &want, "the guide's row {row:?}: {keepalived}");
}

fn wait_logged(g: &Guide, host: &str, what: &str) {
    wait_for(what, 20, || {
        g.journal(host)
            .iter()
            .any(|l| l.contains(what))
            .then_some(())
    });
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn the_host_guide_works_as_written() {
    // h1 MASTER (120), h2 BACKUP (110); VI_1 and VI_2 in sync group SG_1, so h2 can
    // take the guide's notify for a sync group while h1 takes it per instance.
    let (lab, mut server) = server_in(Lab::up_with(2, "vhg", &[("LAB_SYNC_GROUP", "1")]));
    server.start();
    let admin = server.admin();
    let g = Guide {
        lab: &lab,
        dir: lab.work.join("guide"),
    };

    // --- The tarball, from the binaries this test was built with.
    let said = g.run(&["package"]);
    let tarball = said
        .lines()
        .find_map(|l| l.strip_prefix("tarball: "))
        .expect("the tarball's path");
    let version = tarball
        .rsplit_once("/vrrp-monitor-")
        .and_then(|(_, t)| t.strip_suffix("-linux-x86_64.tar.gz"))
        .unwrap()
        .to_string();

    // --- Step 1 on h1: installed where the guide says, from those binaries.
    g.run(&["prepare", "h1"]);
    g.run(&["step", "h1", "install"]);
    assert_eq!(
        g.sh("h1", "readlink /opt/vrrp-monitor").trim(),
        format!("/opt/vrrp-monitor-{version}")
    );
    // scripts/host-guide packs the static (musl) dev build, as the tarball ships
    // static binaries: the installed agent is that build, not this
    // test's own glibc one.
    let static_agent = Path::new(env!("CARGO_BIN_EXE_vrrp-agent"))
        .parent()
        .and_then(Path::parent)
        .map(|target| target.join("x86_64-unknown-linux-musl/debug/vrrp-agent"))
        .unwrap();
    let installed = g.sh("h1", "sha256sum < /opt/vrrp-monitor/bin/vrrp-agent");
    let built = lab
        .command("sh")
        .arg("-c")
        .arg(format!("sha256sum < {}", static_agent.display()))
        .output()
        .unwrap();
    assert_eq!(installed, String::from_utf8_lossy(&built.stdout));
    assert_eq!(g.stat("h1", "/etc/vrrp-agent"), "700 root");
    assert_eq!(g.stat("h1", "/etc/vrrp-agent/config.yaml"), "600 root");
    // Step 1's user: it owns /etc/vrrp-agent, where the agent writes serverUrl back.
    // The host's /etc is an overlay: the machine's users stay as they were.
    let machine_passwd = fs::read_to_string("/etc/passwd").unwrap();
    g.run(&["step", "h1", "agent-user"]);
    assert_eq!(g.stat("h1", "/etc/vrrp-agent"), "700 vrrp-agent");
    assert_eq!(
        g.stat("h1", "/etc/vrrp-agent/config.yaml"),
        "600 vrrp-agent"
    );
    assert_eq!(
        fs::read_to_string("/etc/passwd").unwrap(),
        machine_passwd,
        "the host's vrrp-agent user leaked onto the machine"
    );
    assert_eq!(g.stat("h1", "/usr/local/bin/vrrp-agent-notify"), "755 root");
    assert_eq!(
        g.stat("h1", "/etc/systemd/system/vrrp-agent.service"),
        "644 root"
    );
    assert!(
        !Path::new(&format!("/opt/vrrp-monitor-{version}")).exists()
            && !Path::new("/etc/vrrp-agent").exists(),
        "the host's installation leaked onto the machine"
    );

    // --- Mistake: started before step 2. The start-up lines of the table, and no
    // notify endpoint. The unit's three capabilities are all it has, and enough.
    g.run(&["step", "h1", "start"]);
    wait_logged(&g, "h1", "Found keepalived");
    let log = g.journal("h1");
    let starting = row("vrrp-agent <version> starting");
    assert_logged(&log, &starting);
    assert!(
        log.iter()
            .any(|l| l.contains("(config /etc/vrrp-agent/config.yaml, data /var/lib/vrrp-agent)")),
        "{log:#?}"
    );
    assert_logged(&log, &row("Agent mode: unregistered"));
    assert_logged(&log, &row("Setup PIN:"));
    assert_logged(&log, &row("Found keepalived, PID"));
    let k = wait_for("a first reading", 20, || {
        let k = g.status("h1", "keepalived")?;
        (k["collected"] == true).then_some(k)
    });
    assert_eq!(
        (&k["running"], &k["instances"]),
        (&json!(true), &json!(2)),
        "{k}"
    );
    assert_status(&k, &row("status triggers.endpoint"));
    g.assert_agent_credentials("h1");
    // Its StateDirectory, as systemd makes it.
    assert_eq!(g.stat("h1", "/var/lib/vrrp-agent"), "700 vrrp-agent");

    // --- Step 2: the token file and the unit's environment, root only (keepalived's
    // notify script and systemd read them as root; the agent gets the token through
    // its environment).
    g.run(&["step", "h1", "notify-token"]);
    assert_eq!(g.stat("h1", "/etc/vrrp-agent/notify-token"), "600 root");
    assert_eq!(g.stat("h1", "/etc/vrrp-agent/env"), "600 root");
    let token = g.sh("h1", "cat /etc/vrrp-agent/notify-token");
    let token = token.trim();
    assert!(token.len() >= 16, "a token of {} characters", token.len());
    assert_eq!(
        g.sh("h1", "cat /etc/vrrp-agent/env").trim(),
        format!("SVC_NOTIFY_TOKEN={token}")
    );
    assert!(g
        .sh("h1", "cat /etc/systemd/system/vrrp-agent.service.d/*.conf")
        .contains("EnvironmentFile=/etc/vrrp-agent/env"));

    // --- Step 3, mistake: the agent restarted with the FIFO before keepalived was
    // reloaded with it.
    g.run(&["keepalived-conf", "h1"]);
    g.run(&["agent-config", "h1", "agent-fifo"]);
    assert_eq!(
        g.stat("h1", "/etc/vrrp-agent/config.yaml"),
        "600 vrrp-agent"
    );
    g.sh("h1", "systemctl restart vrrp-agent");
    let fifo_row = row("Notify FIFO");
    wait_logged(
        &g,
        "h1",
        "Notify FIFO /run/keepalived/vrrp-notify.fifo not found",
    );
    assert_logged(&g.journal("h1"), &fifo_row);
    let k = wait_for("the restarted agent's status", 20, || {
        let k = g.status("h1", "keepalived")?;
        (k["collected"] == true).then_some(k)
    });
    assert_status(&k, &row("status triggers.fifo"));
    assert_eq!(k["triggers"]["endpoint"], true, "{k}");

    // --- Step 3 as written: keepalived reloaded, the agent restarted; a FAULT
    // reaches it through the notify script and through the FIFO.
    g.run(&["step", "h1", "start"]);
    wait_for("the FIFO open", 20, || {
        (g.status("h1", "keepalived")?["triggers"]["fifo"] == "open").then_some(())
    });
    lab.run(&["fault", "h1", "script"]);
    wait_logged(&g, "h1", "notify endpoint: INSTANCE VI_1 FAULT");
    wait_logged(&g, "h1", "notify FIFO: INSTANCE \"VI_1\" FAULT");
    wait_logged(&g, "h1", "reading keepalived (triggers: [Endpoint");
    wait_logged(&g, "h1", "reading keepalived (triggers: [Fifo");
    wait_for("h1 with no master", 20, || {
        (g.status("h1", "keepalived")?["master"] == 0).then_some(())
    });
    lab.run(&["unfault", "h1"]);
    lab.wait_state("h1", "VI_1", "MASTER");

    // --- JSON dumps: the signal keepalived names; the JSON dump and, for the trackers,
    // the text dump are asked for.
    g.run(&["agent-config", "h1", "agent-json"]);
    let signum = g.sh("h1", "keepalived --signum=JSON");
    g.sh("h1", "systemctl restart vrrp-agent");
    let restarted = SystemTime::now();
    let config = g.wait_status("h1", "config");
    assert_eq!(
        config["keepalived"]["jsonSignal"],
        json!(signum.trim().parse::<u32>().unwrap()),
        "{config}"
    );
    wait_for("a JSON dump after the restart", 20, || {
        (g.tmp_mtime("h1", "keepalived.json")? > restarted).then_some(())
    });
    // The dump is on disk before the agent has read it: wait for the reading
    // itself (a status taken in between says `collected: false`).
    let k = wait_for("a reading from the JSON dump", 20, || {
        g.status("h1", "keepalived")
            .filter(|k| k["collected"] == true)
    });
    assert_eq!(
        (&k["running"], &k["instances"]),
        (&json!(true), &json!(2)),
        "{k}"
    );
    // The JSON has no tracker state: the text dump is asked for with it,
    // the counters dump no longer.
    wait_for("a text dump with the JSON one", 20, || {
        (g.tmp_mtime("h1", "keepalived.data")? > restarted).then_some(())
    });
    assert!(
        g.tmp_mtime("h1", "keepalived.stats").unwrap() <= restarted,
        "a counters dump was asked for after jsonSignal was set"
    );

    // --- Step 4, inbound: a token from the server, the PIN from the log as the guide
    // greps it, both entered through the agent page's API.
    let pin = g.pin("h1");
    let (s, _, b) = request(
        "POST",
        "http://203.0.113.11:3011/api/register",
        None,
        Some(&json!({"url": server.url(), "token": server.token(&admin), "pin": pin})),
    );
    assert_eq!(s, 200, "{b}");
    let identity = g.dir.join("h1/var-lib/vrrp-agent/identity.json");
    let identity: Value = serde_json::from_str(&fs::read_to_string(identity).unwrap()).unwrap();
    let id1 = identity["clientId"].as_str().unwrap().to_string();
    assert!(g
        .sh("h1", "cat /etc/vrrp-agent/config.yaml")
        .contains(&format!("serverUrl: {}", server.url())));
    // Written by the agent, as its user: the config through a file beside it.
    assert_eq!(
        g.stat("h1", "/etc/vrrp-agent/config.yaml"),
        "600 vrrp-agent"
    );
    assert_eq!(
        g.stat("h1", "/var/lib/vrrp-agent/identity.json"),
        "600 vrrp-agent"
    );
    wait_for("h1's reading on the server", 20, || {
        server
            .get(&admin, "/api/v1/keepalived/states")
            .as_array()?
            .iter()
            .any(|s| s["clientId"] == id1.as_str())
            .then_some(())
    });

    // --- h2: steps 1 to 3 with TLS; mistake: started while keepalived is stopped.
    g.run(&["prepare", "h2"]);
    for step in ["install", "agent-user", "notify-token"] {
        g.run(&["step", "h2", step]);
    }
    assert_eq!(g.stat("h2", "/etc/vrrp-agent"), "700 vrrp-agent");
    g.run(&["keepalived-conf", "h2", "sync-group"]);
    g.run(&["agent-config", "h2", "agent-fifo"]);
    g.run(&["step", "h2", "tls-cert"]);
    // The agent's own key: it reads it as its user.
    assert_eq!(g.stat("h2", "/etc/vrrp-agent/tls"), "700 vrrp-agent");
    assert_eq!(
        g.stat("h2", "/etc/vrrp-agent/tls/key.pem"),
        "600 vrrp-agent"
    );
    g.run(&["agent-config", "h2", "agent-tls"]);
    g.run(&["step", "h2", "start"]);
    wait_logged(&g, "h2", "Found keepalived");
    g.assert_agent_credentials("h2");
    // The notify script of the sync group: one call for the group.
    lab.run(&["fault", "h2", "script"]);
    wait_logged(&g, "h2", "notify endpoint: GROUP SG_1 FAULT");
    lab.run(&["unfault", "h2"]);
    lab.wait_state("h2", "VI_1", "BACKUP");
    // Mistake: the agent started in a PID namespace of its own (a container without
    // --pid=host). (Stopping keepalived instead cannot give the table's "No keepalived
    // process is running on this host." here: a lab host is itself a PID namespace.)
    let run = g.sh(
        "h2",
        "systemctl stop vrrp-agent
         unshare --pid --fork --mount-proc env SVC_CLIENT_CONFIG=/etc/vrrp-agent/config.yaml \\
           SVC_CLIENT_DATA_DIR=/var/lib/vrrp-agent LOG_FORMAT=pretty \\
           timeout 3 /opt/vrrp-monitor/bin/vrrp-agent 2>&1 || true
         systemctl start vrrp-agent",
    );
    let lines: Vec<String> = run.lines().map(str::to_string).collect();
    assert_logged(&lines, &row("No keepalived process found, and"));
    // Back under its unit: HTTPS only, reading keepalived, the FIFO open.
    assert_eq!(
        lab.curl("h2", &["http://127.0.0.1:3011/api/status/keepalived"])
            .0,
        0,
        "plain HTTP answered on a TLS agent"
    );
    wait_for("h2 reading keepalived over HTTPS", 20, || {
        let (_, body) = lab.curl(
            "h2",
            &["-k", "https://127.0.0.1:3011/api/status/keepalived"],
        );
        let k: Value = serde_json::from_str(&body).ok()?;
        (k["running"] == true && k["triggers"]["fifo"] == "open").then_some(())
    });

    // --- Step 4, outbound over TLS with the PIN: refused while the server does not
    // accept self-signed agent certificates, registered once it does.
    let pin = g.pin("h2");
    let clients_outbound = format!("{}/api/v1/clients/outbound", server.local_url());
    let outbound = |admin: &str| {
        let (s, _, b) = request(
            "POST",
            &clients_outbound,
            Some(admin),
            Some(
                &json!({"outboundTargetAddress": "wss://203.0.113.12", "registrationSecret": pin}),
            ),
        );
        (s, b)
    };
    let (s, b) = outbound(&admin);
    assert_eq!(s, 503, "{b}");
    assert!(
        b["error"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
            .contains("certificate"),
        "{b}"
    );
    server.stop();
    let config = server.dir.join("data/config.yaml");
    let text = fs::read_to_string(&config).unwrap();
    fs::write(
        &config,
        format!("{text}\nsecurity:\n  allow_self_signed_agent_certificates: true\n"),
    )
    .unwrap();
    server.start();
    let admin = server.admin();
    let (s, b) = outbound(&admin);
    assert_eq!(s, 200, "{b}");
    let id2 = b["id"].as_str().unwrap().to_string();
    wait_for("h2 online, dialled over wss", 20, || {
        server
            .get(&admin, "/api/v1/clients")
            .as_array()?
            .iter()
            .any(|c| {
                c["id"] == id2.as_str()
                    && c["status"] == "online"
                    && c["connectionMode"] == "outbound"
            })
            .then_some(())
    });
    assert!(g.dir.join("h2/var-lib/vrrp-agent/identity.json").exists());
    wait_for("h1 back online after the server's restart", 30, || {
        server
            .get(&admin, "/api/v1/clients")
            .as_array()?
            .iter()
            .any(|c| c["id"] == id1.as_str() && c["status"] == "online")
            .then_some(())
    });
}
