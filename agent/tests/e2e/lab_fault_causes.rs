//! Why an instance is in FAULT, end to end with real keepalived 2.2.7: the
//! lab's `fault h2 script` (the `chk_lab` vrrp_script fails: VI_1 and VI_2 FAULT) and
//! `fault h1 link` (tracked interface `trk0` down: VI_1 FAULT), each then `unfault`.
//! The real agent in the host reads keepalived, the real server stores what it sends:
//! the stored reading names the failing item, a `vrrp.track_changed` event says it
//! turned bad (then good), and the `vrrp.state_changed` into FAULT carries the cause.
//! Needs root, keepalived 2.2.x, iproute2, util-linux, curl.

use serde_json::Value;
use vrrp_test_support::host_agent::*;
use vrrp_test_support::*;

/// The stored reading's instance `inst` of client `client`, when it has one.
fn stored_instance(server: &Server, admin: &str, client: &str, inst: &str) -> Option<Value> {
    let states = server.get(admin, "/api/v1/keepalived/states");
    let state = states
        .as_array()?
        .iter()
        .find(|s| s["clientId"] == client)?;
    state["instances"]
        .as_array()?
        .iter()
        .find(|i| i["name"] == inst)
        .cloned()
}

fn tracked<'a>(instance: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    instance["tracked"]
        .as_array()?
        .iter()
        .find(|t| t["kind"] == kind && t["name"] == name)
}

/// The client's events of `kind` about instance `inst`, oldest first.
fn events(server: &Server, admin: &str, client: &str, kind: &str, inst: &str) -> Vec<Value> {
    let mut out: Vec<Value> = server
        .get(admin, "/api/v1/activity")
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| {
            a["clientId"] == client && a["kind"] == kind && a["subject"]["instanceName"] == inst
        })
        .cloned()
        .collect();
    out.sort_by(|a, b| {
        a["occurredAt"]
            .as_str()
            .unwrap_or("")
            .cmp(b["occurredAt"].as_str().unwrap_or(""))
    });
    out
}

/// Waits until the stored reading shows the item in the given state, the item's
/// `vrrp.track_changed` to `to` arrived, and (into FAULT) the state change names it.
fn expect_item(
    server: &Server,
    admin: &str,
    client: &str,
    inst: &str,
    (kind, name): (&str, &str),
    (to, ok): (&str, bool),
    state: &str,
) {
    let what = format!("{inst}'s {kind} {name} {to} and {state} in the stored reading");
    let reading = wait_for(&what, 30, || {
        let i = stored_instance(server, admin, client, inst)?;
        let t = tracked(&i, kind, name)?;
        (t["status"] == to && t["ok"] == ok && i["state"] == state).then_some(i)
    });
    if !ok {
        assert!(
            reading["trackerFaults"].as_u64().unwrap_or(0) >= 1,
            "{reading}"
        );
    }
    let change = wait_for(&format!("{inst}: track_changed {name} to {to}"), 30, || {
        events(server, admin, client, "vrrp.track_changed", inst)
            .into_iter()
            .rev()
            .find(|e| e["data"]["name"] == name && e["data"]["to"] == to)
    });
    let level = if ok { "info" } else { "warning" };
    assert_eq!(change["level"], level, "{change}");
    assert_eq!(change["data"]["kind"], kind, "{change}");
    assert_eq!(change["data"]["ok"], ok, "{change}");
    assert_eq!(change["data"]["weight"], 0, "{change}");
    assert_eq!(change["subject"]["vrid"], reading["vrid"], "{change}");
    // Into FAULT, or (keepalived may pass through BACKUP before MASTER) out of it.
    let transition = wait_for(&format!("{inst}: state_changed for {state}"), 30, || {
        events(server, admin, client, "vrrp.state_changed", inst)
            .into_iter()
            .rev()
            .find(|e| {
                if ok {
                    e["data"]["from"] == "FAULT"
                } else {
                    e["data"]["to"] == "FAULT"
                }
            })
    });
    if state == "FAULT" {
        let causes = transition["data"]["causes"].as_array().cloned();
        let causes = causes.unwrap_or_else(|| panic!("no causes: {transition}"));
        assert!(
            causes
                .iter()
                .any(|c| c["kind"] == kind && c["name"] == name && c["status"] == to),
            "{transition}"
        );
    } else {
        assert!(transition["data"].get("causes").is_none(), "{transition}");
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn fault_causes_from_real_keepalived_reach_the_server() {
    let (lab, mut server) = lab_with_server(2, "vfc"); // h1 130 MASTER, h2 120 BACKUP
    server.start();
    let admin = server.admin();
    let mut agents: Vec<HostAgent> = ["h1", "h2"]
        .iter()
        .map(|h| HostAgent::new(&lab, h))
        .collect();
    let mut clients = Vec::new();
    for a in &mut agents {
        a.start(&lab);
        clients.push(register(&lab, &server, &admin, a));
    }
    let (h1, h2) = (clients[0].as_str(), clients[1].as_str());
    for (client, state) in [(h1, "MASTER"), (h2, "BACKUP")] {
        let i = wait_for("a first reading with trackers", 30, || {
            stored_instance(&server, &admin, client, "VI_1")
                .filter(|i| i["state"] == state && i["tracked"].is_array())
        });
        let script = tracked(&i, "script", "chk_lab").expect("chk_lab tracked");
        assert_eq!(
            (&script["status"], &script["ok"]),
            (&Value::from("GOOD"), &Value::from(true))
        );
        // The script's run state, for keepalived-exporter's keepalived_script_state.
        assert!(
            ["idle", "running"].contains(&script["state"].as_str().unwrap_or("")),
            "{script}"
        );
        let link = tracked(&i, "interface", "trk0").expect("trk0 tracked");
        assert_eq!(link["status"], "UP", "{i}");
        assert_eq!(i["trackerFaults"], 0, "{i}");
    }
    // The backup names the master keepalived hears.
    let vi1 = stored_instance(&server, &admin, h2, "VI_1").unwrap();
    assert_eq!(vi1["masterRouter"], "192.0.2.11", "{vi1}");

    // --- A failing track script on the backup: both instances in FAULT.
    lab.run(&["fault", "h2", "script"]);
    lab.wait_state("h2", "VI_1", "FAULT");
    for inst in ["VI_1", "VI_2"] {
        expect_item(
            &server,
            &admin,
            h2,
            inst,
            ("script", "chk_lab"),
            ("BAD", false),
            "FAULT",
        );
    }
    // keepalived-exporter's script series, from the stored readings' tracked items.
    let metrics = wait_for("chk_lab BAD in /metrics", 20, || {
        let (s, _, body) = request("GET", &format!("{}/metrics", server.url()), None, None);
        let text = body.as_str().unwrap_or("").to_string();
        let bad = text.lines().any(|l| {
            l.starts_with("keepalived_script_status{") && l.contains("chk_lab") && l.ends_with(" 0")
        });
        (s == 200 && bad).then_some(text)
    });
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("keepalived_script_state{") && l.contains("chk_lab")),
        "{metrics}"
    );
    lab.run(&["unfault", "h2"]);
    lab.wait_state("h2", "VI_1", "BACKUP");
    for inst in ["VI_1", "VI_2"] {
        expect_item(
            &server,
            &admin,
            h2,
            inst,
            ("script", "chk_lab"),
            ("GOOD", true),
            "BACKUP",
        );
    }

    // --- The tracked interface down on the master: VI_1 in FAULT, VI_2 stays MASTER.
    lab.run(&["fault", "h1", "link"]);
    lab.wait_state("h1", "VI_1", "FAULT");
    expect_item(
        &server,
        &admin,
        h1,
        "VI_1",
        ("interface", "trk0"),
        ("DOWN", false),
        "FAULT",
    );
    let vi2 = stored_instance(&server, &admin, h1, "VI_2").unwrap();
    assert_eq!(vi2["state"], "MASTER", "{vi2}");
    assert!(
        events(&server, &admin, h1, "vrrp.track_changed", "VI_2").is_empty(),
        "trk0 is not tracked by VI_2"
    );
    lab.run(&["unfault", "h1"]);
    lab.wait_state("h1", "VI_1", "MASTER");
    expect_item(
        &server,
        &admin,
        h1,
        "VI_1",
        ("interface", "trk0"),
        ("UP", true),
        "MASTER",
    );

    // Each change once: two hosts' worth of track events, no doubles.
    let all = server.get(&admin, "/api/v1/activity");
    let mut ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "vrrp.track_changed")
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids.len(),
        6,
        "chk_lab bad+good on VI_1 and VI_2, trk0 bad+good"
    );
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "no event stored twice");
}
