//! Would a failover work now, in the browser: agents speaking the real protocol
//! report the readiness fields of their instances; a healthy pair reads
//! "Ready", one member advertising at another interval makes its cluster "Not
//! ready" in the list (badge with the server's sentence), on the overview (a
//! card opening the list filtered to it) and on the cluster page (every check
//! with its outcome and the server's sentence, the failed one first), also at
//! 375 px without sideways scrolling.

use crate::daily::sideways;
use crate::harness::{Auth, Server, ADMIN_PASSWORD};
use crate::screens::urlencode;
use crate::webdriver::Browser;
use crate::{instance, login, reading_of, FakeAgent};
use serde_json::{json, Value};

/// A reading of one instance with the readiness fields an agent reports: every
/// check can be judged but the VRRP version, which `version` may leave out (an
/// older agent: that check is unknown).
pub fn ready_member(
    name: &str,
    state: &str,
    priority: i64,
    vrid: i64,
    address: &str,
    advert: f64,
    version: Option<u8>,
) -> Value {
    let vip = format!("{}.100/24", net_of(vrid));
    let master = format!("{}.1", net_of(vrid));
    let mut i = instance(name, state, priority, vrid, &vip);
    i["advertInterval"] = json!(advert);
    i["authType"] = json!("none");
    i["usesUnicast"] = json!(false);
    i["configFaults"] = json!(0);
    i["sourceAddress"] = json!(address);
    // The master's address (x.1), as the backup hears it.
    i["masterRouter"] = json!(master);
    if let Some(v) = version {
        i["vrrpVersion"] = json!(v);
    }
    reading_of(vec![i])
}

/// The /24 of VRID 51, 52, else 53.
pub fn net_of(vrid: i64) -> &'static str {
    match vrid {
        51 => "192.0.2",
        52 => "198.51.100",
        _ => "203.0.113",
    }
}

/// The cluster of `vrid` as the API answers it.
pub fn cluster_of(server: &Server, admin: &str, vrid: i64) -> Value {
    let list = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(admin))
        .body;
    list.as_array()
        .and_then(|l| l.iter().find(|c| c["vrid"] == vrid))
        .unwrap_or_else(|| panic!("no cluster of VRID {vrid}: {list}"))
        .clone()
}

/// A pair of VRID `vrid` whose members both report `advert` s: lb-a MASTER
/// (x.1), lb-b BACKUP (x.2), lb-b without its VRRP version.
pub fn pair(server: &Server, admin: &str, prefix: &str, vrid: i64) -> (FakeAgent, FakeAgent) {
    let net = net_of(vrid);
    let a = FakeAgent::connect(
        server,
        admin,
        &format!("{prefix}-a"),
        ready_member(
            "VI_1",
            "MASTER",
            150,
            vrid,
            &format!("{net}.1"),
            1.0,
            Some(3),
        ),
    );
    let b = FakeAgent::connect(
        server,
        admin,
        &format!("{prefix}-b"),
        ready_member("VI_1", "BACKUP", 100, vrid, &format!("{net}.2"), 1.0, None),
    );
    (a, b)
}

/// lb-b's reading advertising every 2 s instead of 1 s.
pub fn slower(vrid: i64) -> Value {
    let net = net_of(vrid);
    ready_member("VI_1", "BACKUP", 100, vrid, &format!("{net}.2"), 2.0, None)
}

/// The verdict badge of the list's article of `vrid` as [verdict, text, title].
fn badge(b: &Browser, vrid: i64) -> Value {
    b.js(
        "const a = [...document.querySelectorAll('article.cluster')]
           .find(a => a.querySelector('.cluster-name')?.textContent.trim() === 'VRID ' + arguments[0]);
         const r = a && a.querySelector('.badge.readiness');
         return r ? [r.dataset.verdict, r.textContent.trim(), r.title] : null",
        json!([vrid]),
    )
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn an_advert_interval_mismatch_shows_not_ready_in_the_list_the_overview_and_the_cluster_page() {
    let server = Server::start();
    let admin = server.admin();
    let (_lb_a, lb_b) = pair(&server, &admin, "lb", 51);
    let (_db_a, _db_b) = pair(&server, &admin, "db", 52);

    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    // Healthy pairs: both ready, the badge's tooltip the server's own sentence.
    for vrid in [51, 52] {
        b.wait_js(
            "a ready badge",
            "const a = [...document.querySelectorAll('article.cluster')]
               .find(a => a.querySelector('.cluster-name')?.textContent.trim() === 'VRID ' + arguments[0]);
             return a?.querySelector('.badge.readiness')?.dataset.verdict === 'ready'",
            json!([vrid]),
        );
    }
    let ready = cluster_of(&server, &admin, 51);
    assert_eq!(ready["readiness"]["verdict"], "ready", "{ready}");
    assert_eq!(
        badge(&b, 51),
        json!([
            "ready",
            "Failover readiness: Ready",
            ready["readiness"]["checks"][0]["message"]
        ])
    );
    b.screenshot("readiness-ready");

    // lb-b advertises every 2 s: the list says so without a reload.
    b.js("window.__noReload = 1", json!([]));
    lb_b.report(slower(51));
    b.wait_js(
        "VRID 51 not ready",
        "const a = [...document.querySelectorAll('article.cluster')]
           .find(a => a.querySelector('.cluster-name')?.textContent.trim() === 'VRID 51');
         return a?.querySelector('.badge.readiness')?.dataset.verdict === 'not_ready'",
        json!([]),
    );
    let cluster = cluster_of(&server, &admin, 51);
    let readiness = &cluster["readiness"];
    assert_eq!(readiness["verdict"], "not_ready", "{readiness}");
    let finding = &readiness["findings"][0];
    assert_eq!(finding["check"], "advert_interval_mismatch", "{readiness}");
    let sentence = finding["message"].as_str().unwrap().to_owned();
    assert!(
        sentence.contains("lb-b advertises every 2 s"),
        "the server's sentence: {sentence}"
    );
    assert_eq!(
        badge(&b, 51),
        json!(["not_ready", "Failover readiness: Not ready", sentence])
    );
    assert_eq!(badge(&b, 52)[0], "ready");
    assert_eq!(
        b.js("return window.__noReload", json!([])),
        json!(1),
        "the page was reloaded"
    );
    b.screenshot("readiness-list-not-ready");

    // The overview counts it; its card opens the list filtered to it, in the URL.
    b.click("nav a[href='/']");
    b.wait_js(
        "the card to count one cluster not ready",
        "return document.querySelector('#not-ready-clusters .stat-value')?.textContent === '1'",
        json!([]),
    );
    assert_eq!(
        b.js(
            "return document.querySelector('#not-ready-clusters').textContent",
            json!([])
        ),
        json!("1clusters not ready for failovernone at risk")
    );
    b.screenshot("readiness-overview-card");
    b.click("#not-ready-clusters");
    b.wait_js(
        "the list filtered to the clusters not ready",
        "return location.pathname === '/clusters' && new URLSearchParams(location.search).get('readiness') === 'not_ready'
           && document.querySelector('#readiness-filter')?.value === 'not_ready'
           && document.querySelector('#cluster-count')?.textContent === '1 of 2'",
        json!([]),
    );
    assert_eq!(
        b.js(
            "return [...document.querySelectorAll('article.cluster .cluster-name')].map(n => n.textContent.trim())",
            json!([])
        ),
        json!(["VRID 51"])
    );
    // A reload keeps the filter; the filter offers every verdict.
    b.goto(&b.url());
    b.wait_text("#cluster-count", "1 of 2");
    assert_eq!(
        b.js(
            "return [...document.querySelectorAll('#readiness-filter option')].map(o => o.value + '=' + o.textContent)",
            json!([])
        ),
        json!([
            "=Any readiness",
            "not_ready=Not ready",
            "at_risk=At risk",
            "unknown=Unknown",
            "ready=Ready"
        ])
    );
    b.set_field("#readiness-filter", "ready");
    b.wait_js(
        "only VRID 52 ready",
        "return [...document.querySelectorAll('article.cluster .cluster-name')].map(n => n.textContent.trim()).join() === 'VRID 52'",
        json!([]),
    );

    // The cluster page: every check with its outcome and the server's sentence,
    // the failed one first.
    b.goto(&server.url(&format!(
        "/clusters/{}",
        urlencode(cluster["key"].as_str().unwrap())
    )));
    b.wait_text("h2", "Would a failover work now?");
    b.wait("#readiness li[data-check='advert_interval_mismatch'][data-status='fail']");
    let shown = b.js(
        "return [...document.querySelectorAll('#readiness li.check')].map(li => ({
           check: li.dataset.check, status: li.dataset.status,
           word: li.querySelector('.check-status').textContent.trim(),
           message: li.querySelector('.check-message').textContent }))",
        json!([]),
    );
    let shown = shown.as_array().unwrap();
    let checks = readiness["checks"].as_array().unwrap();
    assert_eq!(shown.len(), 9, "all nine checks: {shown:?}");
    assert_eq!(
        shown[0]["check"], "advert_interval_mismatch",
        "failed first"
    );
    assert_eq!(shown[0]["word"], "✗ Failed");
    assert_eq!(shown[0]["message"], sentence);
    for c in checks {
        let row = shown
            .iter()
            .find(|r| r["check"] == c["check"])
            .unwrap_or_else(|| panic!("{} not listed", c["check"]));
        assert_eq!(row["status"], c["status"], "{}", c["check"]);
        assert_eq!(row["message"], c["message"], "{}", c["check"]);
        let word = match c["status"].as_str().unwrap() {
            "pass" => "✓ Passed",
            "fail" => "✗ Failed",
            _ => "? Unknown",
        };
        assert_eq!(row["word"], word, "{}", c["check"]);
    }
    // lb-b reports no VRRP version: that check is unknown, and says why.
    let version = shown
        .iter()
        .find(|r| r["check"] == "version_mismatch")
        .unwrap();
    assert_eq!(version["status"], "unknown");
    assert!(
        version["message"].as_str().unwrap().contains("lb-b"),
        "{version}"
    );
    assert_eq!(
        shown.iter().filter(|r| r["status"] == "pass").count(),
        7,
        "{shown:?}"
    );
    b.wait_text("#readiness .readiness-verdict", "Not ready");
    b.wait_text(
        "#readiness .readiness-verdict",
        "1 failed · 1 unknown · 7 passed",
    );
    b.wait_text("#readiness .checked-at", "checked");
    let checked = b.js(
        "return document.querySelector('#readiness .checked-at time').getAttribute('datetime')",
        json!([]),
    );
    assert_eq!(checked, readiness["checkedAt"]);
    b.screenshot("readiness-cluster-page");

    // The confirmed change is an event: the page lists the server's sentence.
    b.wait_text(".cluster-detail .events .kind", "cluster.readiness_changed");
    let events = server.get("/api/v1/activity", Auth::Cookie(&admin)).body;
    let event = events
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "cluster.readiness_changed" && r["data"]["after"] == "not_ready")
        .unwrap_or_else(|| panic!("no readiness event: {events}"))
        .clone();
    assert_eq!(event["level"], "warning");
    b.wait_text(
        ".cluster-detail .events .event-message",
        event["message"].as_str().unwrap(),
    );

    // Settings list the kind with how its level is chosen.
    b.goto(&server.url("/settings"));
    b.wait_text(
        "#override-table tr[data-kind='cluster.readiness_changed']",
        "warning when it worsens, else info",
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_readiness_section_fits_a_phone() {
    let server = Server::start();
    let admin = server.admin();
    let (_lb_a, lb_b) = pair(&server, &admin, "lb-long-name.example.internal", 51);
    lb_b.report(slower(51));
    let t0 = std::time::Instant::now();
    let cluster = loop {
        let c = cluster_of(&server, &admin, 51);
        if c["readiness"]["verdict"] == "not_ready" {
            break c;
        }
        assert!(t0.elapsed().as_secs() < 15, "never not ready: {c}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let b = Browser::start(375, 740);
    let path = format!("/clusters/{}", urlencode(cluster["key"].as_str().unwrap()));
    login(&b, &server, "admin", ADMIN_PASSWORD, &path);
    b.wait("#readiness li[data-check='advert_interval_mismatch'][data-status='fail']");
    b.wait("#master-timeline .timeline-chart[data-ready='1'] canvas");
    b.js(
        "document.querySelector('#readiness-title').scrollIntoView()",
        json!([]),
    );
    assert_eq!(sideways(&b), json!([]), "the cluster page at 375 px");
    // Nothing of the section reaches past the screen's edge.
    assert_eq!(
        b.js(
            "return [...document.querySelectorAll('#readiness, #readiness *')]
               .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
               .map(e => e.className || e.tagName)",
            json!([])
        ),
        json!([])
    );
    b.screenshot("readiness-phone");
    b.goto(&server.url("/"));
    b.wait_text("#not-ready-clusters .stat-value", "1");
    assert_eq!(sideways(&b), json!([]), "the overview at 375 px");
}
