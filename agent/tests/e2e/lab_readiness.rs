//! Readiness end to end with real keepalived: hosts of scripts/lab, one real
//! agent per host, the real server in the lab's switch namespace, and a real
//! webhook receiver beside it.
//!
//! Three hosts (h1 130, h2 120, h3 110): both clusters are `ready` with no
//! finding and stay so through failovers made by stopping and starting
//! keepalived; then one host's configuration drifts (advert interval, password,
//! VRRP version) and both backups go to FAULT, each giving `not_ready` with the
//! finding naming that host, one `cluster.readiness_changed` and one webhook,
//! and back. Four hosts in two unicast pairs on one VRID and network are two
//! clusters, both `ready`.
//!
//! Needs root, keepalived 2.2.x, iproute2, util-linux, curl.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{json, Value};
use vrrp_test_support::host_agent::*;
use vrrp_test_support::lab::Lab;
use vrrp_test_support::receiver::Receiver;
use vrrp_test_support::*;

/// Agents started on every host and registered together; client id by host.
fn start_agents(
    lab: &Lab,
    server: &Server,
    admin: &str,
    hosts: &[&str],
) -> (Vec<HostAgent>, HashMap<String, String>) {
    let mut agents: Vec<HostAgent> = hosts.iter().map(|h| HostAgent::new(lab, h)).collect();
    for a in &mut agents {
        a.start(lab);
    }
    let ids = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .iter()
            .map(|a| s.spawn(move || (a.host.clone(), register(lab, server, admin, a))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (agents, ids)
}

fn clusters(server: &Server, admin: &str) -> Vec<Value> {
    server
        .get(admin, "/api/v1/keepalived/clusters")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn cluster_of(server: &Server, admin: &str, vrid: u64) -> Option<Value> {
    clusters(server, admin)
        .into_iter()
        .find(|c| c["vrid"] == vrid)
}

/// The readiness events stored so far, oldest first.
fn readiness_events(server: &Server, admin: &str) -> Vec<Value> {
    let mut list: Vec<Value> = server
        .get(admin, "/api/v1/activity")
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["kind"] == "cluster.readiness_changed")
        .collect();
    list.reverse();
    list
}

/// Every cluster `ready` with no finding and `members` live members.
fn wait_all_ready(
    server: &Server,
    admin: &str,
    clusters_wanted: usize,
    members: usize,
    what: &str,
) {
    wait_for(what, 90, || {
        let list = clusters(server, admin);
        let ok = list.len() == clusters_wanted
            && list.iter().all(|c| {
                c["readiness"]["verdict"] == "ready"
                    && c["readiness"]["findings"]
                        .as_array()
                        .is_some_and(Vec::is_empty)
                    && c["members"].as_array().is_some_and(|m| {
                        m.iter()
                            .filter(|m| m["online"] == true && m["reporting"] == true)
                            .count()
                            == members
                    })
            });
        ok.then_some(())
    });
}

/// Waits for the next readiness event of VRID 51 after `seen` events; returns it.
fn next_event(server: &Server, admin: &str, seen: usize, what: &str) -> Value {
    wait_for(what, 60, || {
        readiness_events(server, admin)
            .into_iter()
            .skip(seen)
            .find(|e| e["data"]["cluster"]["vrid"] == 51)
    })
}

/// The deliveries the receiver got within `quiet` of the last one.
fn deliveries(receiver: &Receiver, first_within: Duration) -> Vec<Value> {
    let mut got = Vec::new();
    let mut wait = first_within;
    while let Some((_, _, _, body)) = receiver.next(wait) {
        got.push(body);
        wait = Duration::from_secs(3);
    }
    got
}

struct Drift<'a> {
    lab: &'a Lab,
    server: &'a Server,
    admin: &'a str,
    receiver: &'a Receiver,
    names: &'a HashMap<String, String>,
}

impl Drift<'_> {
    /// Makes a change on the lab, waits for VRID 51 to become `not_ready` with a
    /// `check` finding naming `hosts` (and its event and webhook), undoes it and
    /// waits for `ready` again (and its event and webhook).
    fn check(&self, what: &str, check: &str, hosts: &[&str], make: &dyn Fn(), undo: &dyn Fn()) {
        let seen = readiness_events(self.server, self.admin).len();
        make();
        // keepalived runs the change now: the finding comes with the host's next
        // reading, within 10 s.
        let made_at = std::time::Instant::now();
        let finding = wait_for(&format!("{what}: {check} on the cluster list"), 30, || {
            let c = cluster_of(self.server, self.admin, 51)?;
            c["readiness"]["findings"]
                .as_array()?
                .iter()
                .find(|f| f["check"] == check)
                .cloned()
        });
        let mut named: Vec<&str> = hosts.iter().map(|h| self.names[*h].as_str()).collect();
        named.sort();
        assert_eq!(finding["hosts"], json!(named), "{what}: {finding}");
        assert!(
            made_at.elapsed() <= Duration::from_secs(10),
            "{what}: the finding came {:?} after the change",
            made_at.elapsed()
        );
        assert_eq!(finding["severity"], "blocking", "{what}");
        // The event follows once the change is confirmed: the master-down interval
        // and fresh readings, again if the drift itself moves the roles (a member
        // that discards the master's adverts becomes master: a split brain).
        let worse = next_event(self.server, self.admin, seen, &format!("{what}: the event"));
        assert_eq!(worse["level"], "warning", "{what}: {worse}");
        assert_eq!(worse["data"]["before"], "ready", "{what}: {worse}");
        assert_eq!(worse["data"]["after"], "not_ready", "{what}: {worse}");
        assert!(
            worse["data"]["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["check"] == check),
            "{what}: {worse}"
        );
        let hooks = deliveries(self.receiver, Duration::from_secs(20));
        assert_eq!(hooks.len(), 1, "{what}: one webhook: {hooks:#?}");
        assert_eq!(hooks[0]["verdict"], "not_ready", "{what}");
        assert_eq!(hooks[0]["kind"], "cluster.readiness_changed");
        undo();
        let better = next_event(
            self.server,
            self.admin,
            seen + 1,
            &format!("{what}: recovery"),
        );
        assert_eq!(better["level"], "info", "{what}: {better}");
        assert_eq!(better["data"]["after"], "ready", "{what}: {better}");
        let hooks = deliveries(self.receiver, Duration::from_secs(20));
        assert_eq!(hooks.len(), 1, "{what}: one webhook back: {hooks:#?}");
        assert_eq!(hooks[0]["verdict"], "ready", "{what}");
        wait_all_ready(
            self.server,
            self.admin,
            2,
            3,
            &format!("{what}: ready again"),
        );
        let events: Vec<Value> = readiness_events(self.server, self.admin)
            .into_iter()
            .skip(seen)
            .filter(|e| e["data"]["cluster"]["vrid"] == 51)
            .collect();
        assert_eq!(events.len(), 2, "{what}: exactly two events: {events:#?}");
        let _ = self.lab;
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn readiness_follows_real_keepalived_through_failovers_and_drift() {
    let (lab, mut server) = lab_with_server(3, "vrd");
    server.start();
    let admin = server.admin();
    let receiver = Receiver::start(vec![Some(200)]);
    let (s, _, b) = request(
        "POST",
        &format!("{}/api/v1/webhooks", server.local_url()),
        Some(&admin),
        Some(&json!({
            "name": "readiness", "url": receiver.url("/hook"), "minLevel": "info",
            "kinds": ["cluster.readiness_changed"],
            "bodyTemplate": r#"{"kind": "{{event.kind}}", "verdict": "{{readiness.verdict}}", "summary": "{{readiness.summary}}", "message": "{{event.message}}"}"#
        })),
    );
    assert_eq!(s, 201, "{b}");
    let (agents, ids) = start_agents(&lab, &server, &admin, &["h1", "h2", "h3"]);
    let list = server.get(&admin, "/api/v1/clients");
    let names: HashMap<String, String> = ids
        .iter()
        .map(|(h, id)| {
            let c = list
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == id.as_str())
                .unwrap();
            let name = c["displayName"]
                .as_str()
                .filter(|n| !n.is_empty())
                .or(c["hostname"].as_str())
                .unwrap();
            (h.clone(), name.to_owned())
        })
        .collect();

    // --- Healthy: ready, no finding, every check that can run passes.
    wait_all_ready(&server, &admin, 2, 3, "both clusters ready");
    for c in clusters(&server, &admin) {
        for check in c["readiness"]["checks"].as_array().unwrap() {
            assert_eq!(check["status"], "pass", "VRID {}: {check}", c["vrid"]);
        }
    }

    // --- Failovers by stopping and starting keepalived: no false alarm.
    for round in 0..2 {
        lab.run(&["stop", "h1"]);
        lab.wait_state("h2", "VI_1", "MASTER");
        wait_for("h2 master on the cluster list", 30, || {
            let c = cluster_of(&server, &admin, 51)?;
            (c["members"]
                .as_array()?
                .iter()
                .any(|m| m["clientId"] == ids["h2"].as_str() && m["instance"]["state"] == "MASTER"))
            .then_some(())
        });
        lab.run(&["start", "h1"]);
        lab.wait_state("h1", "VI_1", "MASTER");
        wait_all_ready(
            &server,
            &admin,
            2,
            3,
            &format!("round {round}: ready again"),
        );
    }
    // Past every confirmation window: nothing was reported.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(
        readiness_events(&server, &admin),
        Vec::<Value>::new(),
        "failovers are no readiness change"
    );
    assert!(deliveries(&receiver, Duration::from_millis(500)).is_empty());

    let drift = Drift {
        lab: &lab,
        server: &server,
        admin: &admin,
        receiver: &receiver,
        names: &names,
    };
    let restart = |h: &str| {
        lab.run(&["restart", h]);
    };

    // --- One host advertises every 2 s.
    drift.check(
        "advert_int 2 on h2",
        "advert_interval_mismatch",
        &["h2"],
        &|| {
            lab.run(&["config", "h2", "set", "VI_1", "advert_int", "2"]);
            restart("h2");
        },
        &|| {
            lab.run(&["config", "h2", "reset"]);
            restart("h2");
        },
    );

    // --- VRRPv3 on one member of a VRRPv2 instance.
    drift.check(
        "version 3 on h3",
        "version_mismatch",
        &["h3"],
        &|| {
            lab.run(&["config", "h3", "set", "VI_1", "version", "3"]);
            restart("h3");
        },
        &|| {
            lab.run(&["config", "h3", "reset"]);
            restart("h3");
        },
    );

    // --- Both backups in FAULT (their tracked interface down: VI_1 only, so one
    // cluster changes): no backup could take over.
    drift.check(
        "h2 and h3 in FAULT",
        "no_ready_backup",
        &["h2", "h3"],
        &|| {
            lab.run(&["fault", "h2", "link"]);
            lab.run(&["fault", "h3", "link"]);
        },
        &|| {
            lab.run(&["unfault", "h2"]);
            lab.run(&["unfault", "h3"]);
        },
    );

    // --- Passwords: the same on every host is ready; another on h2 is not.
    // keepalived keeps 8 characters of a password (and warns of more).
    const SHARED: &str = "pw7391sh";
    const OTHER: &str = "pw5527ot";
    let auth = |pw: &str| format!("{{ auth_type PASS auth_pass {pw} }}");
    for h in ["h1", "h2", "h3"] {
        lab.run(&["config", h, "set", "VI_1", "authentication", &auth(SHARED)]);
    }
    for h in ["h3", "h2", "h1"] {
        restart(h);
    }
    lab.wait_state("h1", "VI_1", "MASTER");
    wait_all_ready(&server, &admin, 2, 3, "one password everywhere: ready");
    let c = cluster_of(&server, &admin, 51).unwrap();
    let auth_check = c["readiness"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "auth_mismatch")
        .cloned()
        .unwrap();
    assert_eq!(auth_check["status"], "pass", "{auth_check}");
    // Whatever arrived while the hosts restarted one by one (a host without the
    // password for a moment) is drained before the measured change.
    std::thread::sleep(Duration::from_secs(6));
    let _ = deliveries(&receiver, Duration::from_millis(500));
    drift.check(
        "another password on h2",
        "auth_mismatch",
        &["h2"],
        &|| {
            lab.run(&[
                "config",
                "h2",
                "set",
                "VI_1",
                "authentication",
                &auth(OTHER),
            ]);
            restart("h2");
        },
        &|| {
            lab.run(&[
                "config",
                "h2",
                "set",
                "VI_1",
                "authentication",
                &auth(SHARED),
            ]);
            restart("h2");
        },
    );
    // The passwords reached no reading, no database row and no log line.
    let readings = server.get(&admin, "/api/v1/clients").to_string();
    let mut places: Vec<(String, Vec<u8>)> =
        vec![("the client list".into(), readings.into_bytes())];
    for id in ids.values() {
        let one = server
            .get(&admin, &format!("/api/v1/clients/{id}/keepalived"))
            .to_string();
        places.push((format!("the reading of {id}"), one.into_bytes()));
    }
    places.push((
        "the cluster list".into(),
        clusters(&server, &admin)
            .iter()
            .map(Value::to_string)
            .collect::<String>()
            .into_bytes(),
    ));
    places.push(("the server log".into(), server.log_text().into_bytes()));
    for a in &agents {
        places.push((format!("{}'s agent log", a.host), a.all_logs().into_bytes()));
        for f in ["queue.json", "identity.json"] {
            if let Ok(b) = std::fs::read(a.dir.join("data").join(f)) {
                places.push((format!("{}'s {f}", a.host), b));
            }
        }
    }
    for entry in std::fs::read_dir(server.dir.join("data"))
        .unwrap()
        .flatten()
    {
        if let Ok(b) = std::fs::read(entry.path()) {
            places.push((entry.path().display().to_string(), b));
        }
    }
    for (place, bytes) in &places {
        for pw in [SHARED, OTHER] {
            assert!(
                !bytes.windows(pw.len()).any(|w| w == pw.as_bytes()),
                "the password {pw} is in {place}"
            );
        }
    }
    let seen: HashSet<String> = places.iter().map(|(p, _)| p.clone()).collect();
    assert!(
        seen.iter()
            .any(|p| p.ends_with(".db") || p.contains("sqlite")),
        "the database was read: {seen:?}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn two_unicast_pairs_on_one_vrid_and_network_are_two_ready_clusters() {
    let lab = Lab::up(4, "vuc"); // h1 140, h2 130, h3 120, h4 110
    let pairs = [("h1", "h2"), ("h3", "h4")];
    let address = |h: &str| format!("192.0.2.1{}", &h[1..]);
    for (a, b) in pairs {
        for (me, peer) in [(a, b), (b, a)] {
            // The peers first: keepalived refuses a unicast source without peers.
            lab.run(&[
                "config",
                me,
                "set",
                "VI_1",
                "unicast_peer",
                &format!("{{ {} }}", address(peer)),
            ]);
            lab.run(&["config", me, "set", "VI_1", "unicast_src_ip", &address(me)]);
        }
    }
    for h in ["h4", "h3", "h2", "h1"] {
        lab.run(&["restart", h]);
    }
    lab.wait_state("h1", "VI_1", "MASTER");
    lab.wait_state("h3", "VI_1", "MASTER");
    let (lab, mut server) = server_in(lab);
    server.start();
    let admin = server.admin();
    let (_agents, ids) = start_agents(&lab, &server, &admin, &["h1", "h2", "h3", "h4"]);
    wait_for(
        "two clusters of VRID 51, both ready, and VRID 52",
        90,
        || {
            let list = clusters(&server, &admin);
            let vi1: Vec<&Value> = list.iter().filter(|c| c["vrid"] == 51).collect();
            let ok = vi1.len() == 2
                && vi1.iter().all(|c| {
                    c["readiness"]["verdict"] == "ready"
                        && c["health"] == "ok"
                        && c["members"].as_array().is_some_and(|m| m.len() == 2)
                });
            ok.then_some(())
        },
    );
    let list = clusters(&server, &admin);
    for c in list.iter().filter(|c| c["vrid"] == 51) {
        let members: HashSet<&str> = c["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["clientId"].as_str().unwrap())
            .collect();
        let pair_a: HashSet<&str> = [ids["h1"].as_str(), ids["h2"].as_str()].into();
        let pair_b: HashSet<&str> = [ids["h3"].as_str(), ids["h4"].as_str()].into();
        assert!(members == pair_a || members == pair_b, "{c}");
        assert!(c["key"].as_str().unwrap().contains("|unicast "), "{c}");
        let unicast = c["readiness"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "unicast_mismatch")
            .cloned()
            .unwrap();
        assert_eq!(unicast["status"], "pass", "{unicast}");
    }
}
