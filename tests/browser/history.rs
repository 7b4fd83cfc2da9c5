//! Cluster history in the dashboard: the cluster detail's one timeline, fed by the
//! cluster history, over 24 h / 7 d / 30 d with its availability figures, and
//! silencing a cluster from its detail view (the silence listed, the cluster
//! shown silenced, its events marked and no toast raised).

use crate::harness::{free_port, Auth, Server, ADMIN_PASSWORD};
use crate::webdriver::Browser;
use crate::{login, member, FakeAgent};
use serde_json::json;

const KEY: &str = "|51|192.0.2.0/24";
const DAY: i64 = 86_400_000;

/// Seeds closed history intervals: lb-a master from 20 days ago, a one-hour
/// incident without master 3 days ago, then lb-b master until 10 minutes ago.
/// The server reads its history at start, so it is restarted after.
fn seed_history(server: Server, a: &str, b: &str) -> Server {
    let now = chrono::Utc::now().timestamp_millis();
    let (t20, t3) = (now - 20 * DAY, now - 3 * DAY);
    server.sql(&format!(
        "INSERT INTO cluster_history (key, from_ms, to_ms, open, masters, health, incident_id) VALUES
         ('{KEY}', {t20}, {t3}, 0, '[[\"{a}\",\"lb-a\"]]', 'ok', NULL),
         ('{KEY}', {t3}, {t3h}, 0, '[]', 'no-master', 'inc-seeded'),
         ('{KEY}', {t3h}, {end}, 0, '[[\"{b}\",\"lb-b\"]]', 'ok', NULL);",
        t3h = t3 + 3_600_000,
        end = now - 600_000,
    ));
    let (_, mut launch) = server.stop();
    launch.port = free_port();
    launch.start()
}

/// The hosts of the MASTER intervals the timeline shows (its table of facts).
fn masters_shown(b: &Browser) -> String {
    b.js(
        "return [...document.querySelectorAll('#master-timeline tr.master-interval')].map(t => t.dataset.host + ' MASTER').join('\\n')",
        json!([]),
    )
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

fn show_range(b: &Browser, range: &str) {
    b.click(&format!("#history-timeline button[data-range='{range}']"));
    b.wait_js(
        &format!("the {range} timeline"),
        "const f = document.querySelector('#history-timeline');
         return f && f.dataset.range === arguments[0] && f.querySelector('#master-timeline') && document.querySelector('#availability-figures')",
        json!([range]),
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_one_timeline_shows_the_history_over_24_hours_7_days_and_30_days_with_figures() {
    // Hosts with these ids held the history; the agents that connect after the
    // restart are new ones of the same names (so one more master change).
    let server = seed_history(Server::start(), "id-lb-a", "id-lb-b");
    let admin = server.admin();
    let lb_a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let lb_b = FakeAgent::connect(&server, &admin, "lb-b", member("VI_WEB", "BACKUP", 100));

    let b = Browser::start(1280, 900);
    login(
        &b,
        &server,
        "admin",
        ADMIN_PASSWORD,
        &format!("/clusters/{}", KEY.replace('|', "%7C").replace('/', "%2F")),
    );
    b.wait("#history-timeline #master-timeline");
    // One timeline on the page: no second one drawn from the events.
    let figures = b.js(
        "return document.querySelectorAll('figure.timeline').length",
        json!([]),
    );
    assert_eq!(figures, 1);

    // 24 h: lb-b's last day from the history alone (no event says so), then the
    // ten minutes nobody observed, then lb-a live; no incident in it.
    show_range(&b, "24h");
    let day = masters_shown(&b);
    assert!(day.contains("lb-b MASTER"), "{day}");
    b.wait_js(
        "lb-a master since the restart",
        "return [...document.querySelectorAll('#master-timeline tr.master-interval')].some(t => t.dataset.host === 'lb-a')",
        json!([]),
    );
    let gap = b.js(
        "return [...document.querySelectorAll('#master-timeline tr.unknown-span')].length",
        json!([]),
    );
    assert_eq!(gap, 1, "the time the server was away is not lb-b's");
    assert!(
        b.find("#history-timeline tr.incident-window").is_none(),
        "no incident in 24 h"
    );
    b.wait("#master-timeline .timeline-chart[data-ready='1']");
    b.screenshot("history-24h");

    // 7 d: lb-a, the hour without master shaded, lb-b; one incident, changes counted.
    show_range(&b, "7d");
    let week = masters_shown(&b);
    assert!(
        week.contains("lb-a MASTER") && week.contains("lb-b MASTER"),
        "{week}"
    );
    b.wait("#history-timeline tr.incident-window");
    let incidents = b.js(
        "return document.querySelector(\"[data-figure='incidents']\").textContent",
        json!([]),
    );
    assert!(incidents.as_str().unwrap().starts_with('1'), "{incidents}");
    assert!(
        incidents.as_str().unwrap().contains("1.0 h")
            || incidents.as_str().unwrap().contains("60 min"),
        "{incidents}"
    );
    let changes = b.js(
        "return Number(document.querySelector(\"[data-figure='master-changes']\").textContent)",
        json!([]),
    );
    assert!(changes.as_i64().unwrap() >= 1, "{changes}");
    b.screenshot("history-7d");

    // 30 d: the ten days before the cluster's history began are hatched.
    show_range(&b, "30d");
    b.wait_js(
        "the unrecorded stretch from the start of the range",
        "const f = document.querySelector('#history-timeline');
         return f.querySelector('.timeline-legend').textContent.includes('no record before')
           && f.querySelectorAll('tr.unknown-span').length >= 1",
        json!([]),
    );
    b.screenshot("history-30d");
    drop((lb_a, lb_b));
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn silencing_a_cluster_from_its_detail_view() {
    let server = Server::start();
    let admin = server.admin();
    let lb_a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let lb_b = FakeAgent::connect(&server, &admin, "lb-b", member("VI_WEB", "BACKUP", 100));
    let b = Browser::start(1280, 900);
    login(
        &b,
        &server,
        "admin",
        ADMIN_PASSWORD,
        &format!("/clusters/{}", KEY.replace('|', "%7C").replace('/', "%2F")),
    );
    b.click("#silence-open");
    b.wait("#silence-form");
    // Without a comment it is refused on the page.
    b.click("#silence-form button[data-preset='4h']");
    b.wait_text("#silence-status", "comment is required");
    b.type_into("#silence-comment", "kernel update");
    b.click("#silence-form button[data-preset='4h']");
    b.wait_text("#silenced-banner", "kernel update");
    b.screenshot("cluster-silenced");
    let list = server.get("/api/v1/silences", Auth::Cookie(&admin)).body;
    assert_eq!(list[0]["matcher"]["clusterKey"], KEY);
    assert_eq!(list[0]["status"], "active");
    let ends = chrono::DateTime::parse_from_rfc3339(list[0]["endsAt"].as_str().unwrap()).unwrap();
    let hours = (ends.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_minutes();
    assert!((235..=240).contains(&hours), "4 hours: {hours} min");

    // A failover during the silence: the events are listed, marked silenced, no toast.
    b.js("window.__noReload = 1", json!([]));
    lb_a.report(member("VI_WEB", "FAULT", 150));
    lb_b.report(member("VI_WEB", "MASTER", 100));
    b.wait_text(".cluster-detail .events", "silenced");
    let toasts = b.js(
        "return document.querySelectorAll('.toast').length",
        json!([]),
    );
    assert_eq!(toasts, 0, "a silenced incident raises no toast");
    // The clusters list shows it silenced; the Silences view lists it.
    b.click("nav a[href='/clusters']");
    b.wait_text("article.cluster .badge.silenced", "silenced");
    b.click("nav a[href='/silences']");
    b.wait_text(".silence-list", "kernel update");
    b.screenshot("silences-view");
    drop((lb_a, lb_b));
}
