//! Why a member is in FAULT, in the browser: the cause beside the
//! member on the clusters list and the cluster page, the cause and the tracked
//! items on the client page, and the mark on a backup that hears another
//! master than the one the server sees. Agent-given names reach the page as
//! text only. `fault_screenshots` (ignored) renews the docs screenshots.

use crate::harness::{Auth, Server, ADMIN_PASSWORD};
use crate::screens::urlencode;
use crate::webdriver::Browser;
use crate::{instance, login, reading_of, FakeAgent};
use serde_json::{json, Value};
use std::path::Path;

const XSS: &str = "<img src=x onerror=alert(1)>";
const CAUSE: &str = "track script chk_lab failed and tracked interface trk0 is down";

/// VRID 51 on four unicast hosts a (.11), b (.12), c (.13), d (.14): each lists
/// the others as peers, so the dashboard can tell which address is whose.
fn unicast(state: &str, own: u8, master_router: Option<&str>) -> Value {
    let mut i = instance("VI_1", state, 100 + i64::from(own), 51, "192.0.2.100/24");
    let peers: Vec<String> = (11..=14)
        .filter(|n| *n != own)
        .map(|n| format!("192.0.2.{n}"))
        .collect();
    i["unicastPeers"] = json!(peers);
    if let Some(r) = master_router {
        i["masterRouter"] = json!(r);
    }
    i
}

/// The four hosts: lb-a MASTER, lb-b a backup hearing lb-c's address as master,
/// lb-c in FAULT for a script and an interface, lb-d a backup that agrees.
/// `process` names lb-c's track process (an agent-given name, shown as text).
fn fleet(server: &Server, admin: &str, process: &str) -> Vec<FakeAgent> {
    let mut faulty = unicast("FAULT", 13, None);
    faulty["effectivePriority"] = json!(0);
    faulty["trackerFaults"] = json!(2);
    faulty["tracked"] = json!([
        { "kind": "script", "name": "chk_lab", "status": "BAD", "ok": false },
        { "kind": "interface", "name": "trk0", "status": "DOWN", "ok": false },
        { "kind": "file", "name": "prio_file", "status": "OK", "value": -20, "weight": 1, "ok": true },
        { "kind": "process", "name": process, "status": "UP", "value": 2, "ok": true }
    ]);
    let r = reading_of(vec![faulty]);
    vec![
        FakeAgent::connect(
            server,
            admin,
            "lb-a",
            reading_of(vec![unicast("MASTER", 11, None)]),
        ),
        FakeAgent::connect(
            server,
            admin,
            "lb-b",
            reading_of(vec![unicast("BACKUP", 12, Some("192.0.2.13"))]),
        ),
        FakeAgent::connect(server, admin, "lb-c", r),
        FakeAgent::connect(
            server,
            admin,
            "lb-d",
            reading_of(vec![unicast("BACKUP", 14, Some("192.0.2.11"))]),
        ),
    ]
}

fn cluster_key(server: &Server, admin: &str) -> String {
    let list = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(admin))
        .body;
    let c = list
        .as_array()
        .and_then(|l| l.iter().find(|c| c["vrid"] == 51))
        .unwrap_or_else(|| panic!("no cluster of VRID 51: {list}"));
    c["key"].as_str().unwrap().to_owned()
}

/// The members' rows of the page: (host, note text, marked as hearing another master).
fn member_notes(b: &Browser) -> Value {
    b.js(
        "return [...document.querySelectorAll('tr.member')].map(li => [
            li.querySelector('a').textContent,
            li.querySelector('.member-note')?.textContent || '',
            !!li.querySelector('.master-disagrees')])",
        json!([]),
    )
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn a_fault_member_shows_its_cause_and_a_disagreeing_backup_is_marked() {
    let server = Server::start();
    let admin = server.admin();
    let agents = fleet(&server, &admin, XSS);
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");

    // The clusters list: the cause under lb-c, in the server's words.
    b.wait_text("article.cluster .fault-cause", CAUSE);
    b.screenshot("fault-clusters");

    // The cluster page: the cause, and lb-b (hearing .13) marked, lb-d not.
    let key = cluster_key(&server, &admin);
    b.goto(&server.url(&format!("/clusters/{}", urlencode(&key))));
    b.wait_text(".cluster-detail .member-note .fault-cause", CAUSE);
    b.wait_text(
        "#master-disagreement",
        "The backups disagree about the master: lb-b hears 192.0.2.13.",
    );
    let rows = member_notes(&b);
    let row = |host: &str| -> Value {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r[0] == host)
            .cloned()
            .unwrap_or_else(|| panic!("no row for {host}: {rows}"))
    };
    assert_eq!(row("lb-b")[2], true, "lb-b hears lb-c's address: {rows}");
    assert!(row("lb-b")[1]
        .as_str()
        .unwrap()
        .contains("hears 192.0.2.13 as master"));
    assert_eq!(row("lb-d")[2], false, "lb-d hears lb-a: {rows}");
    assert_eq!(row("lb-a")[1], "", "nothing to say about the master");
    assert!(row("lb-c")[1].as_str().unwrap().contains(CAUSE));
    b.screenshot("fault-cluster-detail");

    // lb-b comes round: the mark goes, live.
    agents[1].report(reading_of(vec![unicast("BACKUP", 12, Some("192.0.2.11"))]));
    b.wait_js(
        "the mark to go",
        "return !document.querySelector('.master-disagrees') && !document.querySelector('#master-disagreement')",
        json!([]),
    );

    // The client page of lb-c: the cause beside the state, every tracked item
    // with its state, failing first.
    b.goto(&server.url(&format!("/clients/{}", agents[2].identity.id)));
    b.wait_text(".client-detail .state-cell .fault-cause", CAUSE);
    b.wait("table.tracked[data-instance='VI_1']");
    let items = b.js(
        "return [...document.querySelectorAll('table.tracked tbody tr')].map(tr =>
            [...tr.querySelectorAll('td')].map(td => td.textContent.trim()).concat([tr.className]))",
        json!([]),
    );
    assert_eq!(
        items,
        json!([
            [
                "track script",
                "chk_lab",
                "failing",
                "BAD",
                "–",
                "–",
                "failing"
            ],
            [
                "tracked interface",
                "trk0",
                "failing",
                "DOWN",
                "–",
                "–",
                "failing"
            ],
            ["track process", XSS, "ok", "UP", "2", "–", ""],
            ["track file", "prio_file", "ok", "OK", "-20", "1", ""]
        ]),
        "failing first, then by name"
    );
    b.wait_text(".tracked-of h3", "2 tracker faults");
    assert_eq!(
        b.js("return document.querySelectorAll('img').length", json!([])),
        json!(0),
        "an agent's name is text"
    );
    assert_eq!(b.alert_text(), None);
    b.screenshot("fault-client-detail");
}

/// The README's screenshots of a FAULT member and its cause.
#[test]
#[ignore = "writes doc/screenshots/"]
fn fault_screenshots() {
    let server = Server::start();
    let admin = server.admin();
    let agents = fleet(&server, &admin, "haproxy");
    let key = cluster_key(&server, &admin);
    let b = Browser::start(1200, 820);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster .fault-cause", CAUSE);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/screenshots");
    let client = &agents[2].identity.id;
    for theme in ["light", "dark"] {
        b.js(
            "localStorage.setItem('theme', arguments[0])",
            json!([theme]),
        );
        for (name, path, wait) in [
            (
                "cluster-fault",
                format!("/clusters/{}", urlencode(&key)),
                ".cluster-detail .fault-cause",
            ),
            (
                "client-fault",
                format!("/clients/{client}"),
                "table.tracked",
            ),
        ] {
            b.goto(&server.url(&path));
            b.wait(wait);
            b.wait_text("#live-indicator", "Live");
            b.js(
                "document.querySelectorAll('.toast button').forEach(x => x.click())",
                json!([]),
            );
            if name == "client-fault" {
                b.js(
                    "document.querySelector('h2:nth-of-type(2)')?.scrollIntoView()",
                    json!([]),
                );
            }
            b.screenshot_to(&dir.join(format!("{name}-{theme}.png")));
        }
    }
}
