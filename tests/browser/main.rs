//! The dashboard in a real browser: headless Chromium driven over WebDriver
//! (`webdriver.rs`), against the real server binary on a free port with a temp
//! data dir, fed by agents speaking the real agent protocol over WebSocket.
//! Every test saves screenshots of what it checked under `target/screenshots/`.
//!
//! Needs `chromium` and `chromedriver` (Debian: chromium, chromium-driver);
//! `scripts/test.sh` installs them when missing.

#[allow(dead_code)]
#[path = "../server/harness.rs"]
mod harness;
mod webdriver;

mod admin;
mod bench;
mod daily;
mod drills;
mod faults;
mod history;
mod live_clusters;
mod pair;
mod provisioning;
mod readiness;
mod roles;
mod screens;
mod timeline;

use harness::{Agent, Auth, Server, ADMIN_PASSWORD};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use webdriver::Browser;

/// A simulated keepalived host: a real agent-protocol connection on its own
/// thread that sends its current reading when told and whenever the server asks
/// (REQUEST_STATE_UPDATE), as the real agent does.
pub struct FakeAgent {
    pub identity: Agent,
    reading: Arc<Mutex<Value>>,
    send: mpsc::Sender<Vec<Value>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeAgent {
    pub fn connect(server: &Server, admin: &str, hostname: &str, reading: Value) -> FakeAgent {
        let identity = server.register_agent(admin, hostname);
        let mut ws = server.connect_agent(&identity);
        let reading = Arc::new(Mutex::new(reading));
        let (send, outbox) = mpsc::channel::<Vec<Value>>();
        let stop = Arc::new(AtomicBool::new(false));
        ws.send("KEEPALIVED_UPDATE", reading.lock().unwrap().clone());
        let thread = {
            let (reading, stop) = (reading.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    while let Ok(events) = outbox.try_recv() {
                        if events.is_empty() {
                            ws.send("KEEPALIVED_UPDATE", reading.lock().unwrap().clone());
                        } else {
                            ws.send("ACTIVITY", json!({ "events": events }));
                        }
                    }
                    match ws.next(Duration::from_millis(30)) {
                        Some(Ok(m)) if m["type"] == "REQUEST_STATE_UPDATE" => {
                            ws.send("KEEPALIVED_UPDATE", reading.lock().unwrap().clone())
                        }
                        Some(Err(_)) => return,
                        _ => {}
                    }
                }
                let _ = ws.ws.close(None);
                let _ = ws.ws.flush();
            })
        };
        FakeAgent {
            identity,
            reading,
            send,
            stop,
            thread: Some(thread),
        }
    }

    /// Changes the reading and sends it now.
    pub fn report(&self, reading: Value) {
        *self.reading.lock().unwrap() = reading;
        let _ = self.send.send(Vec::new());
    }

    /// Changes the reading without sending it: the server sees it when it asks.
    pub fn set_reading(&self, reading: Value) {
        *self.reading.lock().unwrap() = reading;
    }

    /// Sends activity events as the agent reports them.
    pub fn events(&self, events: Vec<Value>) {
        let _ = self.send.send(events);
    }

    /// Closes the agent's connection (the host goes offline).
    pub fn disconnect(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One VRRP instance as an agent reports it (advert_int 0.1 s, so the server
/// confirms a change within about 1.3 s of readings).
pub fn instance(name: &str, state: &str, priority: i64, vrid: i64, vip: &str) -> Value {
    let master = state == "MASTER";
    json!({ "name": name, "state": state, "wantedState": "BACKUP", "interface": "eth0", "vrid": vrid,
        "priority": priority, "effectivePriority": priority, "advertInterval": 0.1,
        "vips": [vip], "syncGroup": null, "lastTransition": harness_now(),
        "stats": { "advertisements_sent": if master { 500 } else { 0 },
                   "advertisements_received": if master { 0 } else { 500 },
                   "became_master": 1, "released_master": 0, "priority_zero_received": 0 } })
}

fn harness_now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A reading of a running keepalived with these instances.
pub fn reading_of(instances: Vec<Value>) -> Value {
    json!({ "collectedAt": harness_now(), "running": true, "pid": 42, "version": "2.2.7",
        "source": "data", "error": null, "syncGroups": [], "instances": instances })
}

/// A reading with one instance of VRID 51 on 192.0.2.0/24.
pub fn member(name: &str, state: &str, priority: i64) -> Value {
    reading_of(vec![instance(name, state, priority, 51, "192.0.2.100/24")])
}

/// Logs in through the login page; lands on `next`.
pub fn login(b: &Browser, server: &Server, user: &str, password: &str, next: &str) {
    b.goto(&server.url(next));
    // Without a session every page sends the tab to the login page, remembering where it was.
    b.wait("form input[name=username]");
    b.wait_js(
        "the login page to remember the page asked for",
        "return location.pathname === '/login' && new URLSearchParams(location.search).get('next') === arguments[0]",
        json!([next]),
    );
    b.type_into("input[name=username]", user);
    b.type_into("input[name=password]", password);
    b.click("button[type=submit]");
    b.wait_js(
        "the page asked for after login",
        "return (location.pathname + location.search).startsWith(arguments[0]) && document.querySelector('header.top')",
        json!([next]),
    );
    b.wait_text("#live-indicator", "Live");
}

fn marker_kept(b: &Browser) -> bool {
    b.js("return window.__noReload === 1", json!([])) == json!(true)
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn a_failover_shows_live_with_timeline_toast_and_client_detail() {
    let server = Server::start();
    let admin = server.admin();
    let lb_a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let lb_b = FakeAgent::connect(&server, &admin, "lb-b", member("VI_WEB", "BACKUP", 100));

    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster", "VRID 51");
    b.wait_js(
        "lb-a listed first as MASTER",
        "const m = document.querySelector('article.cluster .member'); return m && m.textContent.includes('lb-a') && m.textContent.includes('MASTER')",
        json!([]),
    );
    b.screenshot("clusters-before-failover");
    b.js("window.__noReload = 1", json!([]));

    // Failover: lb-a's keepalived goes to FAULT, lb-b takes over.
    lb_a.report(member("VI_WEB", "FAULT", 150));
    lb_b.report(member("VI_WEB", "MASTER", 100));
    lb_a.events(vec![
        json!({ "id": "ev-fault-1", "occurredAt": "2026-11-21T09:00:00.000Z",
        "kind": "vrrp.state_changed", "level": "error", "correlationId": null,
        "subject": { "instanceName": "VI_WEB", "vrid": 51, "interface": "eth0" },
        "data": { "from": "MASTER", "to": "FAULT", "priority": 150, "effectivePriority": 150 } }),
    ]);
    b.wait_js(
        "the cluster to show lb-b as the live MASTER and the cluster degraded",
        "const c = document.querySelector('article.cluster'); if (!c) return false;
         const rows = [...c.querySelectorAll('.member')].map(m => m.textContent);
         return c.querySelector('.badge').textContent.includes('Degraded')
           && rows.some(r => r.includes('lb-b') && r.includes('MASTER'))
           && rows.some(r => r.includes('lb-a') && r.includes('FAULT'))",
        json!([]),
    );
    assert!(marker_kept(&b), "the page was reloaded");
    b.screenshot("clusters-after-failover");

    // The overview counts it without a reload.
    b.click("nav a[href='/']");
    b.wait_js(
        "the overview to count one instance in FAULT and list the cluster needing attention",
        "const s = [...document.querySelectorAll('.stat')].find(x => x.textContent.includes('instances in FAULT'));
         return s && s.querySelector('.stat-value').textContent === '1'
           && document.querySelector('.attention .cluster-card')?.textContent.includes('VRID 51')",
        json!([]),
    );
    assert!(marker_kept(&b));

    // The server confirms the change: an incident opens (a warning) and lb-b's
    // takeover is recorded; the dashboard toasts the new warning and error.
    let incident_text = b.wait_js(
        "a toast for the incident",
        "const t = [...document.querySelectorAll('.toast')].map(t => t.textContent).join('\\n');
         return t.includes('New warning') || t.includes('new warnings') ? t : ''",
        json!([]),
    );
    let activity = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let opened = activity
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "vrrp.incident_opened")
        .expect("incident opened");
    // The toast says what the server composed, not a sentence of its own.
    let message = opened["message"].as_str().expect("records carry message");
    assert!(!message.is_empty());
    assert!(
        activity
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["level"] == "warning" || r["level"] == "error")
            .any(|r| incident_text
                .as_str()
                .unwrap()
                .contains(r["message"].as_str().unwrap())),
        "toast {incident_text} shows a server message"
    );
    b.wait_text(".incidents", "open for");
    b.screenshot("overview-incident");

    // The cluster detail has the timeline with lb-b's time as master.
    b.click(".attention .cluster-card");
    b.wait("#master-timeline .timeline-chart[data-ready='1'] canvas");
    b.wait_js(
        "the timeline to show lb-b as master, the incident shaded",
        "const f = document.querySelector('#master-timeline');
         return [...f.querySelectorAll('tr.master-interval')].some(r => r.dataset.host === 'lb-b')
           && f.querySelector('tr.incident-window')",
        json!([]),
    );
    // Counters: errors only by default; the traffic behind the switch.
    b.wait_text("#counter-summary", "No error counted");
    b.click("#show-traffic");
    b.wait_text("table.counters", "advertisements received");
    b.wait_text(".cluster-detail .events", "MASTER");
    b.screenshot("cluster-detail");

    // A client's detail, and asking it for a fresh reading (from the top of the
    // page: scrolled to the counters, the members sit under the sticky header).
    b.js("window.scrollTo(0, 0)", json!([]));
    b.click(".cluster-detail .member a[href^='/clients/']");
    b.wait("#refresh-reading");
    b.wait_text(".client-detail", "VI_WEB");
    b.click("#refresh-reading");
    b.wait_text("#refresh-status", "Reading requested");
    b.screenshot("client-detail");
    // An agent that went offline cannot be asked: 409 shows as "agent offline".
    let shown = b.js("return location.pathname", json!([]));
    let (gone, other) = if shown.as_str().unwrap().contains(&lb_a.identity.id) {
        (lb_a, lb_b)
    } else {
        (lb_b, lb_a)
    };
    gone.disconnect();
    b.wait_js(
        "the client to show offline",
        "return document.querySelector('.client-detail dl')?.textContent.includes('offline')",
        json!([]),
    );
    b.click("#refresh-reading");
    b.wait_text("#refresh-status", "Agent offline");
    b.wait_text(".client-detail", "Last reading");
    b.screenshot("client-detail-offline");
    assert!(marker_kept(&b));
    drop(other);
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn activity_filters_mark_seen_and_delete_all() {
    let server = Server::start();
    let admin = server.admin();
    let agent = FakeAgent::connect(&server, &admin, "db-1", member("VI_DB", "BACKUP", 100));
    let event = |id: &str, at: &str, kind: &str, level: &str, data: Value| {
        json!({ "id": id, "occurredAt": at, "kind": kind, "level": level, "correlationId": null,
                "subject": { "instanceName": "VI_DB", "vrid": 51, "interface": "eth0" }, "data": data })
    };
    agent.events(vec![
        event(
            "e-info",
            "2026-11-21T09:00:00.000Z",
            "vrrp.instance_added",
            "info",
            json!({ "state": "BACKUP" }),
        ),
        event(
            "e-warn",
            "2026-11-21T09:01:00.000Z",
            "keepalived.stopped",
            "warning",
            json!({ "pid": 42 }),
        ),
        event(
            "e-err",
            "2026-11-21T09:02:00.000Z",
            "keepalived.unreadable",
            "error",
            json!({ "error": "permission denied" }),
        ),
    ]);
    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/activity");
    // The ids of this test's events in the list, in order (the server adds its own).
    let ours = "window.ours = () => [...document.querySelectorAll('#activity-list > li')].map(l => l.dataset.id).filter(id => id.startsWith('e-'))";
    b.js(ours, json!([]));
    // Unseen errors exist: the level filter opens on errors, and says so in the URL.
    b.wait_js(
        "the level filter to open on error",
        "return new URLSearchParams(location.search).get('level') === 'error' && document.querySelectorAll('#activity-list > li').length === 1",
        json!([]),
    );
    b.wait_text("#activity-list", "cannot be read");
    b.wait_text("#activity-list", "permission denied");
    // Widen to info: all three, newest first.
    b.set_field("#level-filter", "info");
    b.wait_js(
        "three events, newest first",
        "const ids = ours(); return ids.join() === 'e-err,e-warn,e-info'",
        json!([]),
    );
    // Text search (the `/` key focuses it), kept in the URL.
    b.js(
        "document.activeElement && document.activeElement.blur()",
        json!([]),
    );
    b.keys("/");
    b.wait_js(
        "the search field to have focus",
        "return document.activeElement && document.activeElement.matches('[data-search]')",
        json!([]),
    );
    b.keys("stopped");
    b.wait_js(
        "only the stopped event",
        "const li = [...document.querySelectorAll('#activity-list > li')]; return li.length === 1 && li[0].dataset.id === 'e-warn' && new URLSearchParams(location.search).get('q') === 'stopped'",
        json!([]),
    );
    // A reload keeps the filters (they live in the URL).
    b.goto(&b.url());
    b.wait("#activity-list");
    b.js(ours, json!([]));
    b.wait_js(
        "the filters after reload",
        "const li = [...document.querySelectorAll('#activity-list > li')]; return li.length === 1 && li[0].dataset.id === 'e-warn' && document.querySelector('[data-search]').value === 'stopped'",
        json!([]),
    );
    // Mark that one seen; with unseen-only it disappears.
    b.click("#activity-list li[data-id='e-warn'] .mark-seen");
    b.wait("#activity-list li[data-id='e-warn'].seen");
    b.set_field("[data-search]", "");
    b.click("#unseen-only");
    b.wait_js(
        "unseen-only to hide the seen event",
        "const ids = ours(); return ids.join() === 'e-err,e-info' && location.search.includes('unseen=1')",
        json!([]),
    );
    let seen = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let seen_of = |id: &str| {
        seen.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["seen"].clone())
    };
    assert_eq!(seen_of("e-warn"), Some(json!(true)));
    assert_eq!(seen_of("e-err"), Some(json!(false)));
    b.screenshot("activity-filtered");
    // Mark all shown seen: nothing unseen is left.
    b.click("#mark-all-seen");
    b.wait_text("#main", "Nothing matches these filters.");
    let all = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    // Everything shown (info and above) is seen; trace was not shown, so not marked.
    let records = all.as_array().unwrap();
    assert!(records
        .iter()
        .filter(|r| r["level"] != "trace")
        .all(|r| r["seen"] == true));
    assert!(records
        .iter()
        .filter(|r| r["level"] == "trace")
        .all(|r| r["seen"] == false));
    // Delete all asks first; Esc closes the question without deleting.
    b.click("#unseen-only");
    b.wait_js(
        "three events again",
        "return ours().length === 3",
        json!([]),
    );
    b.click("#delete-all");
    b.wait_text("dialog[open]", "cannot be undone");
    b.screenshot("activity-delete-confirm");
    b.keys("\u{E00C}"); // Escape
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('dialog[open]')",
        json!([]),
    );
    assert!(
        server
            .get("/api/v1/activity", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len()
            >= 3
    );
    b.click("#delete-all");
    b.click("dialog[open] button.danger");
    b.wait_text("#main", "Nothing matches these filters.");
    assert_eq!(
        server.get("/api/v1/activity", Auth::Cookie(&admin)).body,
        json!([])
    );
    drop(agent);
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn logout_and_a_deleted_user_return_to_login() {
    let server = Server::start();
    let admin = server.admin();
    let created = server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        &json!({ "username": "operator", "password": "operator-pw-1" }).to_string(),
    );
    assert!(created.status < 300, "{:?}", created.body);
    let b = Browser::start(1024, 768);

    // Logout ends the session: the next visit asks for a login.
    login(&b, &server, "admin", ADMIN_PASSWORD, "/");
    b.click("#logout");
    b.wait("form input[name=username]");
    b.goto(&server.url("/clients"));
    b.wait_js(
        "the login page after logout",
        "return location.pathname === '/login' && !!document.querySelector('form input[name=username]')",
        json!([]),
    );

    // The user is deleted in another session: the open tab's socket closes with
    // 4001 and the tab returns to the login page by itself.
    login(&b, &server, "operator", "operator-pw-1", "/clusters");
    let users = server.get("/api/v1/users", Auth::Cookie(&admin)).body;
    let id = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == "operator")
        .unwrap()["id"]
        .clone();
    let deleted = server.delete(&format!("/api/v1/users/{id}"), Auth::Cookie(&admin));
    assert!(deleted.status < 300, "{:?}", deleted.body);
    b.wait_js(
        "the login page after the user was deleted",
        "return location.pathname === '/login' && new URLSearchParams(location.search).get('next') === '/clusters' && !!document.querySelector('form input[name=username]')",
        json!([]),
    );
    b.screenshot("login-after-4001");

    // A tampered cookie is no session: the login page, never a blank one.
    b.js(
        "document.cookie = 'svc_session=forged.token.value; path=/'; document.cookie = 'svc_auth=1; path=/'",
        json!([]),
    );
    b.goto(&server.url("/activity"));
    b.wait_js(
        "the login page for a forged cookie",
        "return location.pathname === '/login' && !!document.querySelector('form input[name=username]')",
        json!([]),
    );
    // Wrong password: said so on the page.
    b.type_into("input[name=username]", "admin");
    b.type_into("input[name=password]", "wrong");
    b.click("button[type=submit]");
    b.wait_text("#login-error", "Wrong username or password");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn names_from_agents_and_operators_are_shown_as_text() {
    const XSS: &str = "<img src=x onerror=alert(1)>";
    let server = Server::start();
    let admin = server.admin();
    let agent = FakeAgent::connect(&server, &admin, "web-1", member(XSS, "MASTER", 100));
    let put = server.put(
        &format!("/api/v1/clients/{}", agent.identity.id),
        Auth::Cookie(&admin),
        &json!({ "displayName": XSS }).to_string(),
    );
    assert!(put.status < 300, "{:?}", put.body);
    agent.events(vec![
        json!({ "id": "x-1", "occurredAt": "2026-11-21T09:00:00.000Z",
        "kind": "vrrp.state_changed", "level": "warning", "correlationId": null,
        "subject": { "instanceName": XSS, "vrid": 51, "interface": "eth0" },
        "data": { "from": "MASTER", "to": "BACKUP", "priority": 100, "effectivePriority": 100 } }),
    ]);

    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster", XSS);
    let no_img = "return document.querySelectorAll('img').length === 0";
    assert_eq!(b.js(no_img, json!([])), json!(true));
    b.goto(&server.url(&format!("/clients/{}", agent.identity.id)));
    b.wait_text(".client-detail h1", XSS);
    b.wait_text(".client-detail table", XSS);
    b.goto(&server.url("/activity?level=info"));
    b.wait_text("#activity-list", XSS);
    b.wait_text(".toast, #activity-list", XSS);
    assert_eq!(b.js(no_img, json!([])), json!(true));
    assert_eq!(b.alert_text(), None, "an alert opened");
    b.screenshot("xss-as-text");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn a_server_restart_mid_session_reconnects_and_a_phone_width_works() {
    let server = Server::start();
    let admin = server.admin();
    let _agent = FakeAgent::connect(&server, &admin, "edge-1", member("VI_EDGE", "MASTER", 100));
    let b = Browser::start(375, 740);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster", "edge-1");
    // Nothing is wider than the phone's screen.
    assert_eq!(
        b.js(
            "return document.documentElement.scrollWidth <= window.innerWidth",
            json!([])
        ),
        json!(true),
        "the page scrolls sideways at 375 px"
    );
    b.screenshot("phone-clusters");
    // The theme follows the system until switched: auto, light, dark.
    assert_eq!(
        b.js(
            "return document.documentElement.dataset.theme || 'auto'",
            json!([])
        ),
        json!("auto")
    );
    b.click("button[aria-label^='Theme: auto']");
    b.wait_js(
        "the light theme",
        "return document.documentElement.dataset.theme === 'light'",
        json!([]),
    );
    b.click("button[aria-label^='Theme: light']");
    b.wait_js(
        "the dark theme",
        "return document.documentElement.dataset.theme === 'dark'",
        json!([]),
    );
    b.screenshot("phone-clusters-dark");
    // The server goes away and comes back on the same port and data: the tab
    // says it is reconnecting, then is live again without a reload.
    b.js("window.__noReload = 1", json!([]));
    let launch = server.kill9();
    b.wait_text("#live-indicator", "Reconnecting");
    let server = launch.start();
    b.wait_text("#live-indicator", "Live");
    assert!(marker_kept(&b));
    b.wait_text("article.cluster", "edge-1");
    drop(server);
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn an_ending_session_and_the_login_rate_limit_are_shown() {
    let server = harness::Launch::new().config("jwtExpiresIn: 3s\n").start();
    let b = Browser::start(1024, 768);
    // The session ends while the tab is open: back to login by itself.
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clients");
    b.wait_js(
        "the login page when the session expires",
        "return location.pathname === '/login' && new URLSearchParams(location.search).get('next') === '/clients' && !!document.querySelector('form input[name=username]')",
        json!([]),
    );
    // Ten attempts per 15 minutes from one address (one was the login above):
    // the eleventh is refused with the time to wait, and the button waits too.
    for _ in 0..9 {
        server.login_answer("admin", "wrong-password");
    }
    b.type_into("input[name=username]", "admin");
    b.type_into("input[name=password]", ADMIN_PASSWORD);
    b.click("button[type=submit]");
    b.wait_text("#login-error", "Too many login attempts. Try again in");
    assert_eq!(
        b.js(
            "return document.querySelector('button[type=submit]').disabled",
            json!([])
        ),
        json!(true)
    );
    b.screenshot("login-rate-limited");
}
