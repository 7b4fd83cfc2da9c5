//! Drains and failover drills against the real server binary: the drain routes
//! ask the client's agent over its real WebSocket (HOST_ACTION) and answer with
//! its HOST_ACTION_RESULT; a drill drains a cluster's master, watches a backup
//! take over, undrains it and reports.
//!
//! The agents here are the test, speaking the real protocol over a real socket:
//! each answers HOST_ACTION with HOST_ACTION_RESULT and then sends a fresh
//! KEEPALIVED_UPDATE whose `drain` says what it did (the real agent's order), and
//! answers REQUEST_STATE_UPDATE with its reading. Its keepalived is played too: a
//! drained master reports BACKUP and its backup MASTER. The real agent is covered
//! by the lab tests.

use crate::harness::*;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The refusal of an agent whose config names no drain file, as the agent says it.
const DISABLED: &str =
    "actions are disabled on this host; set actions.drainFile (see the host guide)";

/// The key of the cluster the hosts below form (no site, VRID 51).
const KEY: &str = "|51|192.0.2.0/24";

/// keepalived's `preempt_delay` of the hosts, seconds: the drill waits this long
/// beyond its own 5 s before it concludes that the old master does not take
/// MASTER back. The old master here takes it back once the takeover is
/// confirmed (about 4 s after it), well within.
const PREEMPT_DELAY: f64 = 5.0;

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn drills_url(key: &str) -> String {
    format!(
        "/api/v1/clusters/{}/drills",
        vrrp_test_support::percent_encode(key)
    )
}

/// A drain as an agent reports it: not drained.
fn undrained() -> Value {
    json!({ "drained": false, "reason": null, "by": null, "since": null })
}

/// The activity records of `kind`, newest first.
fn activity(server: &Server, admin: &str, kind: &str) -> Vec<Value> {
    let a = server.get(
        &format!("/api/v1/activity?kind={kind}"),
        Auth::Cookie(admin),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    a.body.as_array().expect("a list").clone()
}

/// The audit entries of `action`, newest first.
fn audit(server: &Server, admin: &str, action: &str) -> Vec<Value> {
    let a = server.get(
        &format!("/api/v1/audit?action={action}"),
        Auth::Cookie(admin),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    a.body["entries"].as_array().expect("entries").clone()
}

/// A host with its agent on a real socket: one instance of VRID 51, and a drain
/// when its agent takes host actions.
struct Host {
    name: &'static str,
    agent: Agent,
    ws: Ws,
    state: &'static str,
    priority: u32,
    last_transition: Option<String>,
    drain: Option<Value>,
}

impl Host {
    /// Registers and connects the host's agent (it sends no reading yet).
    fn new(server: &Server, admin: &str, name: &'static str, state: &'static str) -> Host {
        let agent = server.register_agent(admin, name);
        let ws = server.connect_agent(&agent);
        Host {
            name,
            agent,
            ws,
            state,
            priority: 100,
            last_transition: None,
            drain: None,
        }
    }

    fn reading(&self) -> Value {
        let mut reading = json!({
            "collectedAt": iso(Utc::now()),
            "running": true,
            "pid": 42,
            "version": "2.2.7",
            "source": "data",
            "error": null,
            "instances": [{
                "name": "VI_1",
                "state": self.state,
                "vrid": 51,
                "priority": self.priority,
                "advertInterval": 1.0,
                "preempt": true,
                "preemptDelay": PREEMPT_DELAY,
                "vips": ["192.0.2.100/24"],
                "lastTransition": self.last_transition,
            }],
            "syncGroups": [],
        });
        if let Some(drain) = &self.drain {
            reading["drain"] = drain.clone();
        }
        reading
    }

    fn report(&mut self) {
        let reading = self.reading();
        self.ws.send("KEEPALIVED_UPDATE", reading);
    }

    /// Answers a HOST_ACTION with the host's drain as it is now.
    fn answer(&mut self, action: &Value, ok: bool, error: Option<&str>) {
        let drain = self.drain.clone().unwrap_or_else(undrained);
        self.ws.send(
            "HOST_ACTION_RESULT",
            json!({ "id": action["id"], "ok": ok, "error": error, "drain": drain }),
        );
    }

    /// Carries out a drain or undrain as an agent with actions does: the drain
    /// file written, the answer, then a fresh reading.
    fn act(&mut self, action: &Value) {
        self.drain = Some(if action["action"] == "drain" {
            json!({ "drained": true, "reason": action["reason"], "by": action["by"], "since": iso(Utc::now()) })
        } else {
            undrained()
        });
        self.answer(action, true, None);
        self.report();
    }

    /// Keepalived changed state at `at`.
    fn transition(&mut self, state: &'static str, at: DateTime<Utc>) {
        self.state = state;
        self.last_transition = Some(iso(at));
        self.report();
    }
}

/// One look at every host's socket: REQUEST_STATE_UPDATE is answered with the
/// host's reading; the first HOST_ACTION is returned with the host's index.
fn serve(hosts: &mut [Host]) -> Option<(usize, Value)> {
    for (i, host) in hosts.iter_mut().enumerate() {
        while let Some(message) = host.ws.next(Duration::from_millis(20)) {
            let message =
                message.unwrap_or_else(|e| panic!("{}'s agent socket ended: {e:?}", host.name));
            match message["type"].as_str() {
                Some("REQUEST_STATE_UPDATE") => host.report(),
                Some("HOST_ACTION") => return Some((i, message["payload"].clone())),
                _ => {}
            }
        }
    }
    None
}

/// Serves the hosts until one of them is asked for a host action (10 s at most).
fn next_action(hosts: &mut [Host]) -> (usize, Value) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = serve(hosts) {
            return found;
        }
        assert!(Instant::now() < deadline, "no HOST_ACTION within 10 s");
    }
}

/// Serves the hosts until `done` finds what it looks for (`within` at most); a
/// host action on the way is a failure.
fn serve_until<T>(
    hosts: &mut [Host],
    within: Duration,
    what: &str,
    mut done: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some((i, action)) = serve(hosts) {
            panic!(
                "{} was asked for {action} while waiting for {what}",
                hosts[i].name
            );
        }
        if let Some(found) = done() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
    }
}

/// The cluster as `GET /api/v1/keepalived/clusters` shows it, once it has
/// `members` members with a reading and the readiness verdict `verdict`.
fn cluster_when(server: &Server, admin: &str, members: usize, verdict: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = server.get("/api/v1/keepalived/clusters", Auth::Cookie(admin));
        assert_eq!(list.status, 200, "{:?}", list.body);
        let found = list.body.as_array().and_then(|l| {
            l.iter()
                .find(|c| {
                    c["key"] == KEY
                        && c["members"].as_array().map(Vec::len) == Some(members)
                        && c["readiness"]["verdict"] == verdict
                })
                .cloned()
        });
        if let Some(cluster) = found {
            return cluster;
        }
        assert!(
            Instant::now() < deadline,
            "no cluster {KEY} of {members} members, {verdict}, within 10 s: {}",
            list.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `POST` (or `DELETE`) of a drain as `session` while the host's agent answers
/// on this thread: returns the HOST_ACTION the agent got and the server's answer.
fn drain_call(
    server: &Server,
    session: &str,
    host: &mut Host,
    method: &str,
    body: Option<&str>,
    ok: bool,
    error: Option<&str>,
) -> (Value, Answer) {
    let url = format!("/api/v1/clients/{}/drain", host.agent.id);
    std::thread::scope(|s| {
        let call = s.spawn(|| server.request(method, &url, Auth::Cookie(session), &[], body));
        let action = host.ws.expect("HOST_ACTION");
        if ok {
            host.act(&action);
        } else {
            host.answer(&action, false, error);
        }
        (action, call.join().expect("the request thread"))
    })
}

#[test]
fn an_operator_drains_and_undrains_a_host_through_its_agent() {
    let server = Server::start();
    let admin = server.admin();
    let operator = server.user(&admin, "otto", "operator");
    let mut host = Host::new(&server, &admin, "lb-d", "MASTER");
    host.drain = Some(undrained());
    host.report();

    let (action, a) = drain_call(
        &server,
        &operator,
        &mut host,
        "POST",
        Some(r#"{"reason": "  kernel update  "}"#),
        true,
        None,
    );
    assert!(
        action["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{action}"
    );
    assert_eq!(
        (&action["action"], &action["reason"], &action["by"]),
        (&json!("drain"), &json!("kernel update"), &json!("otto")),
        "the reason trimmed, the operator's name: {action}"
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let drained = host.drain.clone().unwrap();
    assert_eq!(a.body, json!({ "drain": drained, "warning": null }));
    // The reading the agent sent after its answer carries the drain.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = server.get(
            &format!("/api/v1/clients/{}/keepalived", host.agent.id),
            Auth::Cookie(&operator),
        );
        if r.body["drain"] == drained {
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", r.body);
        std::thread::sleep(Duration::from_millis(20));
    }
    let events = activity(&server, &admin, "client.drained");
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["clientId"], host.agent.id.as_str());
    assert_eq!(e["level"], "info");
    assert_eq!(e["message"], "lb-d was drained by otto: kernel update");
    assert_eq!(
        (&e["data"]["reason"], &e["data"]["by"], &e["data"]["drain"]),
        (&json!("kernel update"), &json!("otto"), &drained)
    );
    let entries = audit(&server, &admin, "client.drained");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (
            &entries[0]["actor"],
            &entries[0]["via"],
            &entries[0]["target"]
        ),
        (
            &json!("otto"),
            &json!("session"),
            &json!(format!("client {}", host.agent.id))
        )
    );
    assert_eq!(entries[0]["summary"], r#""lb-d" drained: kernel update"#);

    let (action, a) = drain_call(&server, &operator, &mut host, "DELETE", None, true, None);
    assert_eq!(
        (&action["action"], &action["reason"], &action["by"]),
        (&json!("undrain"), &json!(""), &json!("otto")),
        "{action}"
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body, json!({ "drain": undrained(), "warning": null }));
    let events = activity(&server, &admin, "client.undrained");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["message"], "lb-d was undrained by otto.");
    assert_eq!(events[0]["clientId"], host.agent.id.as_str());
    assert_eq!(events[0]["data"]["drain"], undrained());
    let entries = audit(&server, &admin, "client.undrained");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (&entries[0]["actor"], &entries[0]["via"]),
        (&json!("otto"), &json!("session"))
    );
}

#[test]
fn an_agent_without_actions_refuses_in_its_own_words() {
    let server = Server::start();
    let admin = server.admin();
    let mut host = Host::new(&server, &admin, "lb-old", "MASTER");
    host.report();
    let (action, a) = drain_call(
        &server,
        &admin,
        &mut host,
        "POST",
        Some(r#"{"reason": "kernel update"}"#),
        false,
        Some(DISABLED),
    );
    assert_eq!(action["by"], "admin");
    assert_eq!(
        (a.status, a.body.clone()),
        (409, json!({ "error": DISABLED }))
    );
    let (_, a) = drain_call(
        &server,
        &admin,
        &mut host,
        "DELETE",
        None,
        false,
        Some(DISABLED),
    );
    assert_eq!(
        (a.status, a.body.clone()),
        (409, json!({ "error": DISABLED }))
    );
    // Nothing changed: no event, no audit entry.
    assert_eq!(
        activity(&server, &admin, "client.drained"),
        Vec::<Value>::new()
    );
    assert_eq!(
        activity(&server, &admin, "client.undrained"),
        Vec::<Value>::new()
    );
    assert_eq!(
        audit(&server, &admin, "client.drained"),
        Vec::<Value>::new()
    );
    assert_eq!(
        audit(&server, &admin, "client.undrained"),
        Vec::<Value>::new()
    );
}

#[test]
fn drains_want_an_online_client_an_operator_and_a_reason() {
    let server = Server::start();
    let admin = server.admin();
    let viewer = server.user(&admin, "vera", "viewer");
    let operator = server.user(&admin, "otto", "operator");
    let body = r#"{"reason": "kernel update"}"#;

    // Registered, never connected: offline.
    let offline = server.register_agent(&admin, "lb-off");
    let url = format!("/api/v1/clients/{}/drain", offline.id);
    let a = server.post(&url, Auth::Cookie(&operator), body);
    assert_eq!((a.status, a.error()), (409, "Client is offline"));
    let a = server.delete(&url, Auth::Cookie(&operator));
    assert_eq!((a.status, a.error()), (409, "Client is offline"));
    let a = server.post(
        "/api/v1/clients/no-such-client/drain",
        Auth::Cookie(&operator),
        body,
    );
    assert_eq!((a.status, a.error()), (404, "Client not found"));

    // An online host: a viewer is refused before anything reaches its agent
    // (which never answers here: a request that reached it would wait 10 s and
    // be 504).
    let host = Host::new(&server, &admin, "lb-v", "MASTER");
    let url = format!("/api/v1/clients/{}/drain", host.agent.id);
    let a = server.post(&url, Auth::Cookie(&viewer), body);
    assert_eq!(a.status, 403, "{:?}", a.body);
    assert!(a.error().starts_with("role: "), "{:?}", a.body);
    let a = server.delete(&url, Auth::Cookie(&viewer));
    assert_eq!(a.status, 403, "{:?}", a.body);
    let a = server.post(&drills_url(KEY), Auth::Cookie(&viewer), "{}");
    assert_eq!(a.status, 403, "{:?}", a.body);
    // Reading drills is a viewer's.
    let a = server.get("/api/v1/drills", Auth::Cookie(&viewer));
    assert_eq!((a.status, a.body.clone()), (200, json!([])));

    // The reason is checked before the agent is asked.
    for (body, error) in [
        ("{}", "reason: is required"),
        (r#"{"reason": "   "}"#, "reason: must not be empty"),
        (r#"{"reason": 5}"#, "reason: must be a string"),
        (
            r#"{"reason": "a\nb"}"#,
            "reason: must not contain control characters",
        ),
    ] {
        let a = server.post(&url, Auth::Cookie(&operator), body);
        assert_eq!((a.status, a.error()), (400, error), "{body}");
    }
    let long = json!({ "reason": "é".repeat(201) }).to_string();
    let a = server.post(&url, Auth::Cookie(&operator), &long);
    assert_eq!(
        (a.status, a.error()),
        (400, "reason: must be at most 200 characters")
    );
    assert_eq!(
        audit(&server, &admin, "client.drained"),
        Vec::<Value>::new()
    );
}

#[test]
fn a_drill_the_preflight_refuses_is_kept_with_its_findings() {
    let server = Server::start();
    let admin = server.admin();
    let operator = server.user(&admin, "otto", "operator");
    // Agents without actions (no `drain` in their readings), and a priority
    // tie: at risk, with a finding.
    let mut h1 = Host::new(&server, &admin, "h1", "MASTER");
    let mut h2 = Host::new(&server, &admin, "h2", "BACKUP");
    let (r1, r2) = (h1.reading(), h2.reading());
    server.send_in_order(
        &admin,
        vec![(&mut h1.ws, &h1.agent, r1), (&mut h2.ws, &h2.agent, r2)],
    );
    let cluster = cluster_when(&server, &admin, 2, "at_risk");
    let findings: Vec<Value> = cluster["readiness"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].clone())
        .collect();
    assert!(!findings.is_empty(), "{cluster}");

    let a = server.post(
        &drills_url("|51|198.51.100.0/24"),
        Auth::Cookie(&operator),
        "{}",
    );
    assert_eq!((a.status, a.error()), (404, "Cluster not found"));

    let a = server.post(
        &drills_url(KEY),
        Auth::Cookie(&operator),
        r#"{"reason": "quarterly"}"#,
    );
    assert_eq!(a.status, 409, "{:?}", a.body);
    assert_eq!(
        a.error(),
        "Drill refused: readiness is at_risk, not ready: a failover may not work (force to drill anyway)"
    );
    assert_eq!(a.body["findings"], json!(findings));
    let unforced = a.body["id"]
        .as_str()
        .expect("the refused drill's id")
        .to_owned();

    let a = server.post(
        &drills_url(KEY),
        Auth::Cookie(&operator),
        r#"{"reason": "quarterly", "force": true}"#,
    );
    assert_eq!(a.status, 409, "{:?}", a.body);
    let refusal = "h1 takes no host actions: set actions.drainFile in its agent's config (see the host guide)";
    assert_eq!(a.error(), format!("Drill refused: {refusal}"));
    assert_eq!(a.body["findings"], json!(findings));
    let forced = a.body["id"]
        .as_str()
        .expect("the refused drill's id")
        .to_owned();

    let d = server.get(&format!("/api/v1/drills/{forced}"), Auth::Cookie(&admin));
    assert_eq!(d.status, 200, "{:?}", d.body);
    let d = d.body;
    assert_eq!(
        (&d["id"], &d["cluster"], &d["status"], &d["forced"]),
        (&json!(forced), &json!(KEY), &json!("refused"), &json!(true)),
        "{d}"
    );
    assert_eq!(
        (&d["by"], &d["reason"], &d["findings"]),
        (&json!("otto"), &json!("quarterly"), &json!(findings)),
        "{d}"
    );
    assert_eq!(
        (
            &d["oldMaster"],
            &d["newMaster"],
            &d["takeoverMs"],
            &d["returnMs"]
        ),
        (&Value::Null, &Value::Null, &Value::Null, &Value::Null),
        "{d}"
    );
    assert!(d["finishedAt"].is_string(), "{d}");
    let steps = d["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{d}");
    assert_eq!(steps[0]["what"], format!("Refused: {refusal}"));
    let unforced_drill = server.get(&format!("/api/v1/drills/{unforced}"), Auth::Cookie(&admin));
    assert_eq!(
        (
            &unforced_drill.body["status"],
            &unforced_drill.body["forced"]
        ),
        (&json!("refused"), &json!(false))
    );

    let a = server.get(
        &format!(
            "/api/v1/drills?cluster={}",
            vrrp_test_support::percent_encode(KEY)
        ),
        Auth::Cookie(&admin),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let mut ids: Vec<&str> = a
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut both = vec![forced.as_str(), unforced.as_str()];
    both.sort_unstable();
    assert_eq!(ids, both);
    let a = server.get("/api/v1/drills?limit=1", Auth::Cookie(&admin));
    assert_eq!(a.body.as_array().map(Vec::len), Some(1), "{:?}", a.body);
    let a = server.get("/api/v1/drills?cluster=elsewhere", Auth::Cookie(&admin));
    assert_eq!(a.body, json!([]));
    let a = server.get("/api/v1/drills?limit=0", Auth::Cookie(&admin));
    assert_eq!(a.status, 400, "{:?}", a.body);
    let a = server.get("/api/v1/drills/no-such-drill", Auth::Cookie(&admin));
    assert_eq!((a.status, a.error()), (404, "Drill not found"));
}

#[test]
fn a_drill_drains_the_master_times_the_takeover_and_undrains_it() {
    let server = Server::start();
    let admin = server.admin();
    let operator = server.user(&admin, "otto", "operator");
    let mut h1 = Host::new(&server, &admin, "h1", "MASTER");
    let mut h2 = Host::new(&server, &admin, "h2", "BACKUP");
    let start = Utc::now() - chrono::Duration::minutes(10);
    h1.priority = 200;
    for h in [&mut h1, &mut h2] {
        h.drain = Some(undrained());
        h.last_transition = Some(iso(start));
    }
    let (r1, r2) = (h1.reading(), h2.reading());
    server.send_in_order(
        &admin,
        vec![(&mut h1.ws, &h1.agent, r1), (&mut h2.ws, &h2.agent, r2)],
    );
    cluster_when(&server, &admin, 2, "ready");
    let (h1_id, h2_id) = (h1.agent.id.clone(), h2.agent.id.clone());
    let mut hosts = [h1, h2];
    let mut dash = server.dashboard(&admin);
    dash.expect("ACTIVITY_UPDATE");

    let a = server.post(
        &drills_url(KEY),
        Auth::Cookie(&operator),
        r#"{"reason": "quarterly test"}"#,
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    let id = a.body["id"].as_str().expect("the drill's id").to_owned();
    let drill = |server: &Server| -> Value {
        let d = server.get(&format!("/api/v1/drills/{id}"), Auth::Cookie(&operator));
        assert_eq!(d.status, 200, "{:?}", d.body);
        d.body
    };
    assert_eq!(drill(&server)["status"], "running");

    // The drill asks h1's agent to drain it, as the operator.
    let (i, action) = next_action(&mut hosts);
    assert_eq!(i, 0, "the master is drained: {action}");
    assert_eq!(action["action"], "drain");
    assert_eq!(action["by"], "otto");
    assert_eq!(
        action["reason"],
        format!("failover drill {}: quarterly test", &id[..8])
    );
    // While it runs, the cluster takes no second drill.
    let a = server.post(&drills_url(KEY), Auth::Cookie(&admin), "{}");
    assert_eq!(
        (a.status, a.error()),
        (
            409,
            format!("A drill is already running for this cluster ({id})").as_str()
        )
    );
    // Drained, h1's keepalived lowers its priority: h2 takes over 250 ms after
    // h1 left MASTER, by the two hosts' own clocks.
    let t1 = Utc::now() - chrono::Duration::seconds(1);
    hosts[0].act(&action);
    hosts[0].transition("BACKUP", t1);
    hosts[1].transition("MASTER", t1 + chrono::Duration::milliseconds(250));

    // The drill undrains h1; with its preempt delay h1 stays BACKUP until the
    // server has confirmed h2 as master.
    let (i, action) = next_action(&mut hosts);
    assert_eq!(i, 0, "the old master is undrained: {action}");
    assert_eq!(
        (&action["action"], &action["by"]),
        (&json!("undrain"), &json!("otto"))
    );
    hosts[0].act(&action);
    let taken = serve_until(
        &mut hosts,
        Duration::from_secs(15),
        "h2 confirmed as master",
        || {
            activity(&server, &admin, "vrrp.master_changed")
                .into_iter()
                .find(|e| e["clientId"] == h2_id.as_str())
        },
    );
    assert_eq!(
        drill(&server)["status"],
        "running",
        "h2 has not stayed put 10 s"
    );
    // Preempt: h1 takes MASTER back, and h2 hears it and leaves MASTER a few
    // ms later.
    let t2 = Utc::now();
    hosts[0].transition("MASTER", t2);
    hosts[1].transition("BACKUP", t2 + chrono::Duration::milliseconds(4));
    let d = serve_until(
        &mut hosts,
        Duration::from_secs(15),
        "the drill's end",
        || {
            let d = drill(&server);
            (d["status"] != "running").then_some(d)
        },
    );
    let back = serve_until(
        &mut hosts,
        Duration::from_secs(15),
        "h1 confirmed as master again",
        || {
            activity(&server, &admin, "vrrp.master_changed")
                .into_iter()
                .find(|e| e["clientId"] == h1_id.as_str())
        },
    );

    assert_eq!(d["status"], "passed", "{d:#}");
    assert_eq!(
        (&d["oldMaster"], &d["newMaster"]),
        (&json!("h1"), &json!("h2")),
        "{d:#}"
    );
    assert_eq!(d["takeoverMs"], 250, "{d:#}");
    // From the undrain (the step's time, on the server's clock) to h1 entering
    // MASTER again (by its keepalived's clock); the step's time is cut to the
    // millisecond.
    let undrained_at = DateTime::parse_from_rfc3339(d["steps"][3]["at"].as_str().unwrap()).unwrap();
    let expected = (t2 - undrained_at.with_timezone(&Utc)).num_milliseconds();
    let return_ms = d["returnMs"].as_i64().expect("returnMs");
    assert!(
        return_ms == expected || return_ms == expected - 1,
        "returnMs {return_ms}, expected {expected}: {d:#}"
    );
    assert_eq!(d["findings"], json!([]), "{d:#}");
    assert_eq!(
        (&d["by"], &d["reason"], &d["forced"]),
        (&json!("otto"), &json!("quarterly test"), &json!(false))
    );
    assert!(d["finishedAt"].is_string(), "{d:#}");
    let steps: Vec<&str> = d["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "Draining h1, the master",
            "h1 drained; waiting for a new master",
            "h2 is MASTER, 250 ms after h1 left it; undraining h1",
            "h1 undrained; waiting for the cluster to settle",
            "Preempt gave MASTER back to h1",
        ],
        "{d:#}"
    );

    // Every step went to the dashboards; the last update is the report.
    let mut updates = Vec::new();
    while updates
        .last()
        .is_none_or(|u: &Value| u["status"] == "running")
    {
        let u = dash.expect("DRILL_UPDATE");
        assert_eq!(u["id"], id.as_str(), "{u}");
        updates.push(u);
    }
    assert_eq!(updates.len(), steps.len(), "{updates:#?}");
    assert_eq!(updates.last(), Some(&d));

    let finished = activity(&server, &admin, "cluster.drill_finished");
    assert_eq!(finished.len(), 1, "{finished:?}");
    let f = &finished[0];
    assert_eq!(f["level"], "info", "{f}");
    assert_eq!(f["clientId"], h1_id.as_str(), "{f}");
    assert_eq!(f["data"]["drill"], d, "{f}");
    assert_eq!(f["data"]["cluster"]["key"], KEY, "{f}");
    assert_eq!(
        f["message"], "Failover drill on VRID 51 (h1, h2) passed: h2 took over from h1 in 250 ms.",
        "{f}"
    );

    // Both changes of master were planned, and say so.
    for e in [&taken, &back] {
        assert_eq!(e["data"]["planned"], true, "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .ends_with(" Planned: a host was drained or undrained."),
            "{e}"
        );
        let members = e["data"]["cluster"]["members"].as_array().unwrap();
        assert_eq!(members.len(), 2, "{e}");
        assert!(
            members.iter().all(|m| m["drain"]["drained"] == false),
            "h1 was undrained before either was confirmed: {e}"
        );
    }
    assert_eq!(taken["data"]["previousMaster"], "h1", "{taken}");
    assert_eq!(back["data"]["previousMaster"], "h2", "{back}");
}
