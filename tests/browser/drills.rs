//! Drains and failover drills in the browser. Two agents speaking the real
//! protocol carry `drain` in their readings and answer HOST_ACTION as the real
//! agent does (the result, then the reading after it); like keepalived with a
//! drain file they swap MASTER and BACKUP when the master is drained or
//! undrained, a moment later, with keepalived's transition times 250 ms apart.
//! An operator drains a host from its page (the dialog shows its cluster's
//! readiness; a refusal of the agent shows in its words), sees it drained in the
//! cluster's members, undrains it, has a drill refused while the cluster is not
//! ready, then runs one from the cluster page and watches its steps arrive and
//! its report; the drill is listed in the past drills. A viewer sees no Drain
//! and no drill button.

use crate::daily::sideways;
use crate::harness::{Agent, Auth, Server, Ws};
use crate::readiness::{cluster_of, ready_member};
use crate::screens::urlencode;
use crate::webdriver::Browser;
use crate::{instance, login, reading_of, FakeAgent};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long keepalived takes to move MASTER after the drain file changed: long
/// enough that the drill's steps arrive one by one.
const SWAP_AFTER: Duration = Duration::from_millis(800);
/// Between the old master leaving MASTER and the new one entering it.
const GAP_MS: i64 = 250;
const VRID: i64 = 51;

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn undrained() -> Value {
    json!({ "drained": false, "reason": null, "by": null, "since": null })
}

struct Host {
    name: &'static str,
    address: &'static str,
    priority: i64,
    master: bool,
    transition: String,
    drain: Value,
    advert: f64,
}

/// The two hosts as keepalived would have them, and what the test changes.
struct World {
    hosts: [Host; 2],
    /// The host to become MASTER, and when.
    pending: Option<(Instant, usize)>,
    /// The agent refuses host actions with this text (a drain file it cannot write).
    refuse: Option<String>,
    /// Readings to send now.
    dirty: [bool; 2],
}

impl World {
    fn reading(&self, i: usize) -> Value {
        let h = &self.hosts[i];
        let master = self
            .hosts
            .iter()
            .find(|h| h.master)
            .map_or("", |h| h.address);
        let state = if h.master { "MASTER" } else { "BACKUP" };
        let mut r = ready_member(
            "VI_1",
            state,
            h.priority,
            VRID,
            h.address,
            h.advert,
            Some(3),
        );
        let inst = &mut r["instances"][0];
        // The drain file's weight, -100, as keepalived applies it.
        let drained = h.drain["drained"] == true;
        inst["effectivePriority"] = json!(if drained {
            h.priority - 100
        } else {
            h.priority
        });
        inst["lastTransition"] = json!(h.transition);
        inst["masterRouter"] = json!(master);
        r["drain"] = h.drain.clone();
        r
    }

    /// A HOST_ACTION of host `i` carried out: its HOST_ACTION_RESULT.
    fn act(&mut self, i: usize, payload: &Value) -> Value {
        let id = payload["id"].clone();
        if let Some(e) = &self.refuse {
            return json!({ "id": id, "ok": false, "error": e, "drain": self.hosts[i].drain });
        }
        self.hosts[i].drain = match payload["action"].as_str() {
            Some("drain") => {
                json!({ "drained": true, "reason": payload["reason"], "by": payload["by"],
                "since": iso(chrono::Utc::now()) })
            }
            Some("undrain") => undrained(),
            other => {
                let e = format!("unknown action {other:?}");
                return json!({ "id": id, "ok": false, "error": e, "drain": self.hosts[i].drain });
            }
        };
        // The highest effective priority wins (preempt), a moment later.
        let eff = |h: &Host| h.priority - if h.drain["drained"] == true { 100 } else { 0 };
        let wanted = if eff(&self.hosts[0]) >= eff(&self.hosts[1]) {
            0
        } else {
            1
        };
        if !self.hosts[wanted].master {
            self.pending = Some((Instant::now() + SWAP_AFTER, wanted));
        }
        json!({ "id": id, "ok": true, "error": null, "drain": self.hosts[i].drain })
    }

    /// Moves MASTER when it is time: the order to send the readings in (the
    /// leaving master first, as keepalived's own adverts would have it).
    fn tick(&mut self) -> [usize; 2] {
        match self.pending {
            Some((at, new)) if Instant::now() >= at => {
                self.pending = None;
                let old = 1 - new;
                let left = chrono::Utc::now();
                self.hosts[old].master = false;
                self.hosts[old].transition = iso(left);
                self.hosts[new].master = true;
                self.hosts[new].transition = iso(left + chrono::Duration::milliseconds(GAP_MS));
                self.dirty = [true, true];
                [old, new]
            }
            _ => [0, 1],
        }
    }
}

/// lb-a (MASTER, priority 150) and lb-b (BACKUP, 100), both with a drain file;
/// one thread speaks for both, so a swap's readings go out in order.
pub struct DrainPair {
    pub a: Agent,
    pub b: Agent,
    world: Arc<Mutex<World>>,
    stop: Arc<AtomicBool>,
}

impl DrainPair {
    fn start(server: &Server, admin: &str) -> DrainPair {
        let now = iso(chrono::Utc::now());
        let host = |name, address, priority, master| Host {
            name,
            address,
            priority,
            master,
            transition: now.clone(),
            drain: undrained(),
            advert: 1.0,
        };
        let world = World {
            hosts: [
                host("lb-a", "192.0.2.1", 150, true),
                host("lb-b", "192.0.2.2", 100, false),
            ],
            pending: None,
            refuse: None,
            dirty: [false, false],
        };
        let (a, b) = (
            server.register_agent(admin, world.hosts[0].name),
            server.register_agent(admin, world.hosts[1].name),
        );
        let mut wa = server.connect_agent(&a);
        let mut wb = server.connect_agent(&b);
        // The master first: a first sighting of the backup alone would be a
        // cluster without a master.
        server.send_in_order(
            admin,
            vec![
                (&mut wa, &a, world.reading(0)),
                (&mut wb, &b, world.reading(1)),
            ],
        );
        let world = Arc::new(Mutex::new(world));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (world, stop) = (world.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut ws: [Ws; 2] = [wa, wb];
                while !stop.load(Ordering::Relaxed) {
                    for (i, w) in ws.iter_mut().enumerate() {
                        match w.next(Duration::from_millis(10)) {
                            Some(Ok(m)) if m["type"] == "REQUEST_STATE_UPDATE" => {
                                world.lock().unwrap().dirty[i] = true;
                            }
                            Some(Ok(m)) if m["type"] == "HOST_ACTION" => {
                                // The result, then the reading taken after it.
                                let answer = world.lock().unwrap().act(i, &m["payload"]);
                                w.send("HOST_ACTION_RESULT", answer);
                                world.lock().unwrap().dirty[i] = true;
                            }
                            Some(Err(_)) => return,
                            _ => {}
                        }
                    }
                    let sends: Vec<(usize, Value)> = {
                        let mut w = world.lock().unwrap();
                        let order = w.tick();
                        let due: Vec<usize> = order.into_iter().filter(|&i| w.dirty[i]).collect();
                        w.dirty = [false, false];
                        due.into_iter().map(|i| (i, w.reading(i))).collect()
                    };
                    for (i, r) in sends {
                        ws[i].send("KEEPALIVED_UPDATE", r);
                    }
                }
                for mut w in ws {
                    let _ = w.ws.close(None);
                    let _ = w.ws.flush();
                }
            });
        }
        DrainPair { a, b, world, stop }
    }

    fn refuse(&self, error: Option<&str>) {
        self.world.lock().unwrap().refuse = error.map(str::to_owned);
    }

    /// lb-b advertises every `advert` s (2 s: the pair is not ready).
    fn advert_b(&self, advert: f64) {
        let mut w = self.world.lock().unwrap();
        w.hosts[1].advert = advert;
        w.dirty[1] = true;
    }
}

impl Drop for DrainPair {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn user(server: &Server, admin: &str, name: &str, password: &str, role: &str) {
    let made = server.post(
        "/api/v1/users",
        Auth::Cookie(admin),
        &json!({ "username": name, "password": password, "auth_methods": "local", "role": role })
            .to_string(),
    );
    assert_eq!(made.status, 201, "{:?}", made.body);
}

fn count(b: &Browser, css: &str) -> u64 {
    b.js(
        "return document.querySelectorAll(arguments[0]).length",
        json!([css]),
    )
    .as_u64()
    .unwrap()
}

/// The client's stored reading's `drain`.
fn drain_of(server: &Server, admin: &str, client: &str) -> Value {
    server
        .get(
            &format!("/api/v1/clients/{client}/keepalived"),
            Auth::Cookie(admin),
        )
        .body["drain"]
        .clone()
}

/// Polls the API until `ok` holds for the cluster (the readings arrive on their own thread).
fn wait_cluster(server: &Server, admin: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = cluster_of(server, admin, VRID);
        if ok(&c) {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {c}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The client ids of the cluster's MASTER members.
fn master_of(c: &Value) -> Vec<String> {
    c["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["instance"]["state"] == "MASTER")
        .map(|m| m["clientId"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const REASON: &str = "kernel <b>update</b>";
const REFUSAL: &str = "cannot write /var/lib/keepalived-drain/drain: Read-only file system";

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn an_operator_drains_a_host_and_runs_a_drill_that_reports_live_and_a_viewer_cannot() {
    let server = Server::start();
    let admin = server.admin();
    user(&server, &admin, "operator1", "operator-pw-1", "operator");
    user(&server, &admin, "viewer1", "viewer-pw-1", "viewer");
    let pair = DrainPair::start(&server, &admin);
    // A host whose agent takes no actions (its readings carry no `drain`), in a
    // cluster of its own.
    let plain = FakeAgent::connect(
        &server,
        &admin,
        "lb-plain",
        reading_of(vec![instance(
            "VI_9",
            "MASTER",
            100,
            53,
            "203.0.113.100/24",
        )]),
    );
    let ready = wait_cluster(&server, &admin, "a ready pair, lb-a MASTER", |c| {
        c["readiness"]["verdict"] == "ready" && master_of(c) == [pair.a.id.clone()]
    });
    let key = ready["key"].as_str().unwrap().to_owned();
    let cluster_page = format!("/clusters/{}", urlencode(&key));
    let a_page = format!("/clients/{}", pair.a.id);

    let b = Browser::start(1280, 900);
    login(&b, &server, "operator1", "operator-pw-1", &a_page);

    // --- Drain from the host's page. ---
    b.click("#drain-open");
    b.wait("#drain-dialog[open]");
    // The dialog says what happens and shows the cluster lb-a is MASTER of with
    // the server's verdict.
    b.wait_text("#drain-dialog", "a backup takes over");
    b.wait_js(
        "the dialog to show the cluster's readiness",
        "const li = [...document.querySelectorAll('#drain-preflight li[data-cluster]')];
         return li.length === 1 && li[0].dataset.cluster === arguments[0]
           && li[0].querySelector('.badge.readiness')?.dataset.verdict === 'ready'
           && li[0].textContent.includes('VRID 51')",
        json!([key]),
    );
    b.screenshot("drain-dialog");
    // The reason is required.
    b.click("#drain-dialog button.confirm");
    b.wait_text("#drain-dialog [role=alert]", "A reason is required");
    // The agent's refusal, in its words; the dialog stays open, nothing drained.
    pair.refuse(Some(REFUSAL));
    b.type_into("#drain-reason", REASON);
    b.click("#drain-dialog button.confirm");
    b.wait_text("#drain-dialog [role=alert]", REFUSAL);
    assert_eq!(
        b.js(
            "return !!document.querySelector('#drain-dialog').open",
            json!([])
        ),
        json!(true)
    );
    assert_eq!(
        drain_of(&server, &admin, &pair.a.id)["drained"],
        json!(false)
    );
    pair.refuse(None);
    b.click("#drain-dialog button.confirm");
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('#drain-dialog').open",
        json!([]),
    );
    // Drained, as the reading says, with the reason as text (never markup).
    b.wait_text(
        "#drain-notice",
        &format!("Drained: {REASON}, by operator1, since"),
    );
    assert_eq!(
        count(&b, "#drain-notice b"),
        0,
        "the reason was rendered as markup"
    );
    let drain = drain_of(&server, &admin, &pair.a.id);
    assert_eq!(drain["drained"], json!(true), "{drain}");
    assert_eq!(drain["reason"], json!(REASON), "{drain}");
    b.wait("#undrain-open");
    assert_eq!(count(&b, "#drain-open"), 0);
    b.screenshot("client-drained");

    // --- The members show it drained, not as an unexplained failover. ---
    wait_cluster(&server, &admin, "lb-b to take over", |c| {
        master_of(c) == [pair.b.id.clone()]
    });
    b.click("nav a[href='/clusters']");
    let badge = b.wait_js(
        "lb-a drained in the list, lb-b MASTER",
        "const a = [...document.querySelectorAll('article.cluster')]
           .find(a => a.querySelector('.cluster-name')?.textContent.trim() === 'VRID 51'); if (!a) return false;
         const rows = [...a.querySelectorAll('tr.member')];
         const la = rows.find(r => r.textContent.includes('lb-a'));
         const lb = rows.find(r => r.textContent.includes('lb-b'));
         const badge = la?.querySelector('.badge.drained');
         return badge && la.classList.contains('drained') && lb?.textContent.includes('MASTER')
           && !lb.querySelector('.badge.drained')
           && a.querySelector('.explain').textContent.includes('lb-a is drained') ? badge.title : false",
        json!([]),
    );
    let title = badge.as_str().unwrap();
    assert!(
        title.starts_with(&format!("Drained: {REASON}, by operator1, since ")),
        "{title}"
    );
    b.screenshot("clusters-drained-member");
    b.goto(&server.url(&cluster_page));
    b.wait_text(
        ".cluster-detail tr.member.drained .drained-line",
        &format!("Drained: {REASON}, by operator1"),
    );

    // --- Undrain. ---
    b.goto(&server.url(&a_page));
    b.click("#undrain-open");
    b.wait_text("#undrain-dialog[open]", "takes MASTER back");
    b.click("#undrain-dialog button.confirm");
    b.wait("#drain-open");
    assert_eq!(count(&b, "#drain-notice"), 0);
    assert_eq!(
        drain_of(&server, &admin, &pair.a.id)["drained"],
        json!(false)
    );
    wait_cluster(&server, &admin, "lb-a MASTER again, ready", |c| {
        master_of(c) == [pair.a.id.clone()] && c["readiness"]["verdict"] == "ready"
    });

    // --- A host without a drain file: said so, and no Drain button. ---
    b.goto(&server.url(&format!("/clients/{}", plain.identity.id)));
    b.wait_text("#drains-off", "set actions.drainFile");
    assert_eq!(count(&b, "#drain-open"), 0);

    // --- A drill refused while the cluster is not ready. ---
    pair.advert_b(2.0);
    let not_ready = wait_cluster(&server, &admin, "the pair not ready", |c| {
        c["readiness"]["verdict"] == "not_ready"
    });
    let finding = not_ready["readiness"]["findings"][0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    b.goto(&server.url(&cluster_page));
    b.wait("#readiness .badge.readiness[data-verdict='not_ready']");
    b.click("#drill-open");
    b.wait("#drill-dialog[open] #drill-preflight .badge.readiness[data-verdict='not_ready']");
    b.wait_text("#drill-preflight", &finding);
    // Forcing is offered only because the verdict is not ready; left off.
    b.wait("#drill-force");
    b.click("#drill-dialog button.confirm");
    b.wait_text(
        "#drill-dialog [role=alert]",
        "Drill refused: readiness is not_ready",
    );
    b.wait_text("#drill-refusal", &finding);
    b.screenshot("drill-refused");
    b.click("#drill-dialog button.cancel");
    b.wait_js(
        "the refused drill in the past drills",
        "const r = document.querySelectorAll('#drill-list tbody tr');
         return r.length === 1 && r[0].dataset.status === 'refused'",
        json!([]),
    );
    pair.advert_b(1.0);
    wait_cluster(&server, &admin, "the pair ready again", |c| {
        c["readiness"]["verdict"] == "ready"
    });

    // --- A drill, live. ---
    b.wait("#readiness .badge.readiness[data-verdict='ready']");
    // Every state of the report the page shows, as it shows it.
    b.js(
        "window.drillSeen = [];
         const note = () => {
           const r = document.querySelector('#drill-report');
           if (!r) return;
           const s = r.dataset.status + ':' + [...r.querySelectorAll('.drill-steps li:not(.muted)')].map(l => l.textContent).join('|');
           if (window.drillSeen[window.drillSeen.length - 1] !== s) window.drillSeen.push(s);
         };
         new MutationObserver(note).observe(document.querySelector('#main') || document.body,
           { subtree: true, childList: true, characterData: true, attributes: true });",
        json!([]),
    );
    b.click("#drill-open");
    b.wait("#drill-dialog[open] #drill-preflight .badge.readiness[data-verdict='ready']");
    assert_eq!(count(&b, "#drill-force"), 0, "force offered although ready");
    b.type_into("#drill-reason", "quarterly drill");
    b.click("#drill-dialog button.confirm");
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('#drill-dialog').open",
        json!([]),
    );
    b.wait("#drill-report[data-status='running']");
    b.wait_text("#drill-report .drill-steps", "waiting for a new master");
    b.js(
        "document.querySelector('#drill-report').scrollIntoView()",
        json!([]),
    );
    b.screenshot("drill-running");
    b.wait("#drill-report[data-status='passed']");
    // The server's report, as the page shows it: the takeover from the two
    // hosts' transition times (250 ms apart); the return from the undrain to
    // lb-a entering MASTER again (the swap's delay and the gap at least).
    let list = server
        .get(
            &format!("/api/v1/drills?cluster={}", urlencode(&key)),
            Auth::Cookie(&admin),
        )
        .body;
    let drill = list[0].clone();
    assert_eq!(drill["status"], "passed", "{list}");
    assert_eq!(drill["takeoverMs"], json!(GAP_MS), "{drill}");
    assert_eq!(drill["by"], "operator1");
    let back = drill["returnMs"].as_i64().unwrap_or(-1);
    let least = SWAP_AFTER.as_millis() as i64 + GAP_MS;
    assert!((least..least + 5000).contains(&back), "{drill}");
    let figures = b.js(
        "const r = document.querySelector('#drill-report');
         const f = (n) => r.querySelector(`[data-figure=${n}]`).textContent.trim();
         return [r.dataset.drill, f('masters'), f('takeover'), f('return'), r.textContent.includes('Failover drill by operator1')]",
        json!([]),
    );
    assert_eq!(
        figures,
        json!([
            drill["id"],
            "lb-a → lb-b",
            "250 ms",
            format!("{back} ms"),
            true
        ]),
        "the report"
    );
    b.js(
        "document.querySelector('#drill-report').scrollIntoView()",
        json!([]),
    );
    b.screenshot("drill-passed");
    // The steps arrived one by one: the page showed the drill running with
    // some of its steps, then more, then passed.
    let seen = b.js("return window.drillSeen", json!([]));
    let seen: Vec<String> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    let steps = |s: &str| {
        s.split_once(':')
            .map_or(0, |(_, t)| t.split('|').filter(|x| !x.is_empty()).count())
    };
    let running: Vec<&String> = seen.iter().filter(|s| s.starts_with("running:")).collect();
    assert!(
        running.len() >= 2 && steps(running[0]) < steps(running[running.len() - 1]),
        "the running drill grew step by step: {seen:?}"
    );
    let last = seen.last().unwrap();
    assert!(
        last.starts_with("passed:") && steps(last) > steps(running[running.len() - 1]),
        "{seen:?}"
    );

    // Listed in the past drills, also after a reload (from the API).
    b.goto(&server.url(&cluster_page));
    b.wait_js(
        "the drill listed in the past drills",
        "const r = [...document.querySelectorAll('#drill-list tbody tr')];
         if (r.length !== 2) return false;
         const cell = (row, c) => row.querySelector(`td[data-col=${c}]`).textContent.trim();
         return r[0].dataset.drill === arguments[0] && r[0].dataset.status === 'passed'
           && cell(r[0], 'by') === 'operator1' && cell(r[0], 'takeover') === '250 ms'
           && cell(r[0], 'return') === arguments[1] && cell(r[0], 'when').length > 0
           && r[1].dataset.status === 'refused'",
        json!([drill["id"], format!("{back} ms")]),
    );
    // A row opens its report.
    b.click("#drill-list tbody tr:first-child td[data-col=open] button");
    b.wait_text("#past-drill-report", "Preempt gave MASTER back to lb-a");
    b.js(
        "document.querySelector('#past-drills').scrollIntoView()",
        json!([]),
    );
    b.screenshot("past-drills");

    // --- A viewer: the same pages without Drain, Undrain or drill buttons. ---
    b.click("#logout");
    b.wait("form input[name=username]");
    login(&b, &server, "viewer1", "viewer-pw-1", &a_page);
    b.wait("#drain-panel");
    b.wait_text(".client-detail", "VI_1");
    assert_eq!(count(&b, "#drain-open, #undrain-open, #drain-dialog"), 0);
    b.goto(&server.url(&format!("/clients/{}", plain.identity.id)));
    b.wait_text(".client-detail", "VI_9");
    assert_eq!(
        count(&b, "#drains-off"),
        0,
        "viewers are not told how to enable drains"
    );
    b.goto(&server.url(&cluster_page));
    b.wait("#drill-list tbody tr");
    b.wait("#readiness");
    assert_eq!(count(&b, "#drill-open, #drill-dialog"), 0);
    b.screenshot("drills-viewer");
    // The past drills and a report fit a phone.
    b.click("#drill-list tbody tr:first-child td[data-col=open] button");
    b.wait("#past-drill-report");
    b.cmd(
        "POST",
        "/window/rect",
        json!({ "width": 375, "height": 740 }),
    );
    b.wait_js(
        "the phone width",
        "return window.innerWidth <= 375",
        json!([]),
    );
    assert_eq!(
        sideways(&b),
        json!([]),
        "the cluster page scrolls sideways at 375 px"
    );
    b.js(
        "document.querySelector('#past-drills').scrollIntoView()",
        json!([]),
    );
    b.screenshot("drills-phone");
    drop(plain);
    drop(pair);
}
