//! Screenshots for the README (`doc/screenshots/`), light and dark: a small
//! fleet with a failover, a split brain and a healthy pair. Ignored in normal
//! runs; `cargo test --test browser docs_screenshots -- --ignored` renews them,
//! `readiness_screenshots` the overview's readiness card and the cluster page's
//! readiness section.

use crate::harness::{Auth, Server, ADMIN_PASSWORD};
use crate::readiness::{cluster_of, net_of, pair, ready_member, slower};
use crate::timeline::past_failovers;
use crate::webdriver::Browser;
use crate::{instance, login, reading_of, FakeAgent};
use serde_json::json;
use std::path::Path;

#[test]
#[ignore = "writes doc/screenshots/"]
fn docs_screenshots() {
    let server = Server::start();
    let admin = server.admin();
    let web = |state: &str, prio| {
        reading_of(vec![
            instance("VI_WEB", state, prio, 51, "192.0.2.100/24"),
            instance(
                "VI_API",
                if state == "MASTER" {
                    "BACKUP"
                } else {
                    "MASTER"
                },
                250 - prio,
                52,
                "198.51.100.100/24",
            ),
        ])
    };
    let lb_a = FakeAgent::connect(&server, &admin, "lb-a", web("MASTER", 150));
    let lb_b = FakeAgent::connect(&server, &admin, "lb-b", web("BACKUP", 100));
    let _db1 = FakeAgent::connect(
        &server,
        &admin,
        "db-1",
        reading_of(vec![instance(
            "VI_DB",
            "MASTER",
            120,
            60,
            "203.0.113.10/24",
        )]),
    );
    let _db2 = FakeAgent::connect(
        &server,
        &admin,
        "db-2",
        reading_of(vec![instance(
            "VI_DB",
            "MASTER",
            110,
            60,
            "203.0.113.10/24",
        )]),
    );
    let _edge = FakeAgent::connect(
        &server,
        &admin,
        "edge-1",
        reading_of(vec![instance(
            "VI_EDGE",
            "MASTER",
            100,
            70,
            "203.0.113.50/24",
        )]),
    );
    let _put = server.put(
        &format!("/api/v1/clients/{}", lb_a.identity.id),
        Auth::Cookie(&admin),
        &json!({ "site": "dc-1" }).to_string(),
    );
    let _put = server.put(
        &format!("/api/v1/clients/{}", lb_b.identity.id),
        Auth::Cookie(&admin),
        &json!({ "site": "dc-1" }).to_string(),
    );

    past_failovers(&server, Some("dc-1"), 30.0);

    let b = Browser::start(1200, 820);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster", "lb-b");
    // A failover on the web pair: lb-a faults, lb-b takes over.
    lb_a.report(web("FAULT", 150));
    lb_b.report(web("MASTER", 100));
    b.wait_text(".badge", "Split brain");
    b.wait_text(".badge", "Degraded");
    b.goto(&server.url("/"));
    b.wait_text(".incidents", "open for");
    b.js(
        "document.querySelectorAll('.toast button').forEach(x => x.click())",
        json!([]),
    );

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/screenshots");
    let cluster = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
        .body;
    let web_key = cluster
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["vrid"] == 51)
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    // The administration views' content: a token, a webhook from the Slack
    // template, a second user, a manual cleanup run.
    let token = server.post(
        "/api/v1/tokens",
        Auth::Cookie(&admin),
        &json!({ "displayName": "edge-2" }).to_string(),
    );
    assert!(token.status < 300, "{:?}", token.body);
    let templates = server
        .get("/api/v1/webhooks/templates", Auth::Cookie(&admin))
        .body;
    let mut slack = templates
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "slack")
        .unwrap()["webhook"]
        .clone();
    slack["name"] = json!("Team chat");
    // A reserved name: the fixture's incident is offered to it, and nothing
    // outside this machine may receive it (the failed attempt shows in the list).
    slack["url"] = json!("https://hooks.slack.example/services/T000/B000/XXXX");
    slack["kinds"] = json!(["vrrp.incident_*"]);
    let hook = server.post("/api/v1/webhooks", Auth::Cookie(&admin), &slack.to_string());
    assert!(hook.status < 300, "{:?}", hook.body);
    let hook_id = hook.body["id"].as_str().unwrap().to_owned();
    let user = server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        &json!({ "username": "operator", "password": "operator-pw-1" }).to_string(),
    );
    assert!(user.status < 300, "{:?}", user.body);
    let ran = server.post(
        "/api/v1/settings/cleanup/notifications",
        Auth::Cookie(&admin),
        "",
    );
    assert!(ran.status < 300, "{:?}", ran.body);

    // Both themes show the same outcome: wait for the incident's delivery
    // (refused, after its two retries) to be stored.
    let t0 = std::time::Instant::now();
    while server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body[0]["lastAttemptAt"].is_null() {
        assert!(t0.elapsed().as_secs() < 30, "no delivery outcome stored");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let pages = [
        ("overview", "/".to_owned(), ".incidents"),
        ("clusters", "/clusters".to_owned(), "article.cluster"),
        ("clients", "/clients".to_owned(), "#client-list"),
        ("silences", "/silences".to_owned(), ".silences"),
        (
            "cluster-detail",
            format!("/clusters/{}", urlencode(&web_key)),
            "#master-timeline .timeline-chart[data-ready='1'] canvas",
        ),
        (
            "client-detail",
            format!("/clients/{}", lb_a.identity.id),
            "#instance-list",
        ),
        (
            "activity",
            "/activity?level=info".to_owned(),
            "#activity-list",
        ),
        (
            "client-edit",
            format!("/clients/{}/edit", lb_a.identity.id),
            "#client-form",
        ),
        ("tokens", "/tokens".to_owned(), "#token-list"),
        ("webhooks", "/webhooks".to_owned(), "#webhook-list"),
        (
            "webhook-editor",
            format!("/webhooks/{hook_id}"),
            "#preview-body",
        ),
        (
            "settings",
            "/settings".to_owned(),
            "#scheduler-activity .badge",
        ),
        ("users", "/users".to_owned(), "#user-list"),
    ];
    let shoot = |b: &Browser, suffix: &str| {
        for theme in ["light", "dark"] {
            b.js(
                "localStorage.setItem('theme', arguments[0])",
                json!([theme]),
            );
            for (name, path, wait) in &pages {
                b.goto(&server.url(path));
                b.wait(wait);
                b.wait_text("#live-indicator", "Live");
                b.js(
                    "document.querySelectorAll('.toast button').forEach(x => x.click())",
                    json!([]),
                );
                b.screenshot_to(&dir.join(format!("{name}{suffix}-{theme}.png")));
            }
            // The add-a-host wizard with a token issued, waiting for the agent.
            b.goto(&server.url("/clients/add?mode=inbound"));
            b.type_into("#f-displayName", "edge-3");
            b.click("#create-token");
            b.wait("#new-token");
            b.wait_text("#live-indicator", "Live");
            b.screenshot_to(&dir.join(format!("add-host{suffix}-{theme}.png")));
        }
    };
    shoot(&b, "");
    // The same views at 375 px; the login page (before logging in) and the
    // agent's own status page at both widths.
    let agent = crate::admin::RealAgent::start();
    let status = format!("http://127.0.0.1:{}/status", agent.port);
    let phone = Browser::start(375, 760);
    for (browser, suffix) in [(&b, ""), (&phone, "-phone")] {
        for theme in ["light", "dark"] {
            for (name, url, wait) in [
                ("login", server.url("/login"), "form input[name=username]"),
                ("agent-status", status.clone(), "#conn tr"),
            ] {
                browser.goto(&url);
                browser.js(
                    "localStorage.setItem('theme', arguments[0])",
                    json!([theme]),
                );
                browser.goto(&url);
                browser.wait(wait);
                browser.screenshot_to(&dir.join(format!("{name}{suffix}-{theme}.png")));
            }
        }
    }
    login(&phone, &server, "admin", ADMIN_PASSWORD, "/");
    shoot(&phone, "-phone");
}

pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (c as char).to_string(),
            _ => format!("%{c:02X}"),
        })
        .collect()
}

/// The README's screenshots of readiness: the overview's card and the cluster
/// page's section, light and dark, desktop and 375 px. VRID 51 is not ready (a
/// member advertises at another interval, another does not report its VRRP
/// version), VRID 52 at risk (a priority tie), VRID 53 ready.
#[test]
#[ignore = "writes doc/screenshots/"]
fn readiness_screenshots() {
    let server = Server::start();
    let admin = server.admin();
    let (_lb_a, lb_b) = pair(&server, &admin, "lb", 51);
    let db = |name: &str, state: &str, last: u8| {
        let address = format!("{}.{last}", net_of(52));
        let reading = ready_member("VI_DB", state, 100, 52, &address, 1.0, Some(3));
        FakeAgent::connect(&server, &admin, name, reading)
    };
    let _db_a = db("db-a", "MASTER", 1);
    let _db_b = db("db-b", "BACKUP", 2);
    let (_edge_a, _edge_b) = pair(&server, &admin, "edge", 53);
    lb_b.report(slower(51));
    let t0 = std::time::Instant::now();
    while cluster_of(&server, &admin, 51)["readiness"]["verdict"] != "not_ready"
        || cluster_of(&server, &admin, 52)["readiness"]["verdict"] != "at_risk"
    {
        assert!(t0.elapsed().as_secs() < 15, "the fleet's verdicts");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The confirmed changes' events (and their toasts) before any screenshot.
    let confirmed = || {
        let list = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
        let after = |v: &str| {
            list.as_array()
                .unwrap()
                .iter()
                .any(|r| r["kind"] == "cluster.readiness_changed" && r["data"]["after"] == v)
        };
        after("not_ready") && after("at_risk")
    };
    while !confirmed() {
        assert!(t0.elapsed().as_secs() < 30, "the readiness events");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let key = cluster_of(&server, &admin, 51)["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/screenshots");
    for (b, suffix) in [
        (Browser::start(1200, 820), ""),
        (Browser::start(375, 760), "-phone"),
    ] {
        login(&b, &server, "admin", ADMIN_PASSWORD, "/");
        for theme in ["light", "dark"] {
            b.js(
                "localStorage.setItem('theme', arguments[0])",
                json!([theme]),
            );
            for (name, path, wait, show) in [
                (
                    "readiness-card",
                    "/".to_owned(),
                    "#not-ready-clusters",
                    "#not-ready-clusters",
                ),
                (
                    "readiness-section",
                    format!("/clusters/{}", urlencode(&key)),
                    "#readiness li.check-fail",
                    "#readiness-title",
                ),
            ] {
                b.goto(&server.url(&path));
                b.wait(wait);
                b.wait_text("#live-indicator", "Live");
                if name == "readiness-card" {
                    // The two readiness warnings, counted once the snapshot is in.
                    b.wait_text("a[href^='/activity?unseen=1'] .stat-value", "2");
                }
                b.js(
                    "document.querySelectorAll('.toast button').forEach(x => x.click());
                     const e = document.querySelector(arguments[0]);
                     const top = e.getBoundingClientRect().top + scrollY;
                     const bar = document.querySelector('header.top').offsetHeight;
                     if (arguments[1] || top + e.offsetHeight > innerHeight) scrollTo(0, top - bar - 12);",
                    json!([show, name == "readiness-section"]),
                );
                b.screenshot_to(&dir.join(format!("{name}{suffix}-{theme}.png")));
            }
        }
    }
}
