//! The master timeline (`static/timeline.js`, drawn with uPlot) of the cluster
//! detail, against stored cluster events from before the cluster history began
//! and the history after: lanes per host, the bar where a host was master, the
//! incident window, unrecorded time, the tooltip's exact times and the painted
//! canvas in both themes.

use crate::harness::{Auth, Server, ADMIN_PASSWORD};
use crate::screens::urlencode;
use crate::webdriver::Browser;
use crate::{login, member, FakeAgent};
use serde_json::{json, Value};

/// A day of history for the pair on VRID 51, 192.0.2.0/24 (stored as the server
/// stores cluster events): lb-a master from `first_hours_ago`, a failover to lb-b
/// 13.9 h ago during an incident (14 h to 12.5 h ago), and back to lb-a.
pub fn past_failovers(server: &Server, site: Option<&str>, first_hours_ago: f64) {
    let now = chrono::Utc::now();
    let at = |hours_ago: f64| {
        (now - chrono::Duration::seconds((hours_ago * 3600.0) as i64))
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    };
    let cluster = |master: &str, health: &str| {
        json!({ "site": site, "vrid": 51, "networks": ["192.0.2.0/24"], "vips": ["192.0.2.100/24"],
            "health": health, "master": master, "masters": [master], "members": [] })
    };
    let rows = [
        (
            "h1",
            at(first_hours_ago),
            "vrrp.master_changed",
            "info",
            None,
            json!({ "cluster": cluster("lb-a", "ok"), "previousMaster": null }),
        ),
        (
            "h2",
            at(14.0),
            "vrrp.incident_opened",
            "warning",
            Some("inc-h"),
            json!({ "cluster": cluster("lb-a", "degraded"),
            "incident": { "id": "inc-h", "health": "degraded", "previousHealth": "ok", "openedAt": at(14.0), "confirmedAt": at(14.0),
                "history": ["degraded"], "reasons": [{ "type": "fault", "host": "lb-a", "text": "lb-a is in FAULT." }] } }),
        ),
        (
            "h3",
            at(13.9),
            "vrrp.master_changed",
            "info",
            None,
            json!({ "cluster": cluster("lb-b", "degraded"), "previousMaster": "lb-a" }),
        ),
        (
            "h4",
            at(12.5),
            "vrrp.master_changed",
            "info",
            None,
            json!({ "cluster": cluster("lb-a", "ok"), "previousMaster": "lb-b" }),
        ),
        (
            "h5",
            at(12.5),
            "vrrp.incident_resolved",
            "info",
            Some("inc-h"),
            json!({ "cluster": cluster("lb-a", "ok"),
            "incident": { "id": "inc-h", "health": "ok", "previousHealth": "degraded", "openedAt": at(14.0), "confirmedAt": at(14.0),
                "resolvedAt": at(12.5), "durationSeconds": 5400, "resolution": "recovered", "history": ["degraded"], "reasons": [] } }),
        ),
    ];
    for (id, occurred, kind, level, corr, data) in rows {
        let corr = corr.map_or("NULL".to_owned(), |c| format!("'{c}'"));
        server.sql(&format!(
            "INSERT INTO activity (id, occurred_at, received_at, source, client_id, kind, level, correlation_id, subject, data)
             VALUES ('{id}', '{occurred}', '{occurred}', 'server', NULL, '{kind}', '{level}', {corr}, '{{}}', '{}')",
            data.to_string().replace('\'', "''")
        ));
    }
}

/// Points the mouse at time `t` (ms) on `host`'s lane: the tooltip's text, the
/// canvas pixel there (RGBA) and the theme's master colour.
const POINT_AT: &str = "
  const [host, t] = arguments;
  const f = document.querySelector('#master-timeline');
  const from = +f.dataset.from, to = +f.dataset.to, hosts = JSON.parse(f.dataset.hosts);
  const over = f.querySelector('.u-over');
  const r = over.getBoundingClientRect();
  const x = r.left + (t - from) / (to - from) * r.width;
  const y = r.top + (hosts.indexOf(host) + 0.5) * r.height / hosts.length;
  over.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y, bubbles: true }));
  const tip = f.querySelector('.timeline-tip');
  const canvas = f.querySelector('canvas');
  const c = canvas.getBoundingClientRect();
  const k = canvas.width / c.width;
  const px = canvas.getContext('2d').getImageData(Math.round((x - c.left) * k), Math.round((y - c.top) * k), 1, 1).data;
  const hex = getComputedStyle(f).getPropertyValue('--master').trim();
  const master = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return { tip: tip.hidden ? '' : tip.textContent, px: [px[0], px[1], px[2], px[3]], master };";

fn is_master_colour(v: &Value) -> bool {
    let channel = |k: &str, i: usize| v[k][i].as_i64().unwrap_or(-999);
    (0..3).all(|i| (channel("px", i) - channel("master", i)).abs() <= 6)
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_master_timeline_draws_stored_history_with_uplot() {
    let server = Server::start();
    let admin = server.admin();
    let _lb_a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let _lb_b = FakeAgent::connect(&server, &admin, "lb-b", member("VI_WEB", "BACKUP", 100));
    // The record starts 20 h ago: the 4 h before it are unknown, not lb-a's.
    past_failovers(&server, None, 20.0);
    let clusters = server
        .get("/api/v1/keepalived/clusters", Auth::Cookie(&admin))
        .body;
    let key = clusters[0]["key"]
        .as_str()
        .expect("the pair's cluster")
        .to_owned();

    let b = Browser::start(1280, 900);
    login(
        &b,
        &server,
        "admin",
        ADMIN_PASSWORD,
        &format!("/clusters/{}", urlencode(&key)),
    );
    b.wait("#master-timeline .timeline-chart[data-ready='1'] canvas");
    let facts = b.wait_js(
        "the timeline's lanes and intervals",
        "const f = document.querySelector('#master-timeline');
         const b = [...f.querySelectorAll('tr.master-interval')].find(r => r.dataset.host === 'lb-b');
         const w = f.querySelector('tr.incident-window');
         const u = f.querySelector('tr.unknown-span');
         return b && w && u && { from: +f.dataset.from, to: +f.dataset.to, hosts: JSON.parse(f.dataset.hosts),
           b: [+b.dataset.from, +b.dataset.to], w: [+w.dataset.from, +w.dataset.to],
           legend: f.querySelector('.timeline-legend').textContent }",
        json!([]),
    );
    assert_eq!(facts["hosts"], json!(["lb-a", "lb-b"]), "{facts}");
    let (from, to) = (
        facts["from"].as_f64().unwrap(),
        facts["to"].as_f64().unwrap(),
    );
    let hour = 3_600_000.0;
    assert!((to - from - 24.0 * hour).abs() < 1.0, "{facts}");
    let near = |v: &Value, hours_ago: f64| {
        (v.as_f64().unwrap() - (to - hours_ago * hour)).abs() < 60_000.0
    };
    assert!(
        near(&facts["b"][0], 13.9) && near(&facts["b"][1], 12.5),
        "{facts}"
    );
    assert!(
        near(&facts["w"][0], 14.0) && near(&facts["w"][1], 12.5),
        "{facts}"
    );
    assert!(
        facts["legend"]
            .as_str()
            .unwrap()
            .contains("no record before"),
        "{facts}"
    );
    // One timeline: the events are drawn only up to where the cluster history
    // began (the agents' first sighting, moments ago); from there the history's
    // open interval, lb-a master until now.
    let figures = b.js(
        "return document.querySelectorAll('figure.timeline').length",
        json!([]),
    );
    assert_eq!(figures, 1);
    let since = b.js(
        "return document.querySelector('#history-timeline').dataset.recordedSince",
        json!([]),
    );
    let since = chrono::DateTime::parse_from_rfc3339(since.as_str().unwrap_or_default())
        .expect("the history began")
        .timestamp_millis() as f64;
    assert!(to - since < 120_000.0, "{since} vs {to}");
    let lb_a = b.js(
        "return [...document.querySelectorAll('#master-timeline tr.master-interval')]
           .filter(r => r.dataset.host === 'lb-a').map(r => [+r.dataset.from, +r.dataset.to])",
        json!([]),
    );
    let spans = lb_a.as_array().unwrap();
    assert!(
        spans
            .iter()
            .any(|s| near(&s[0], 12.5) && s[1].as_f64() == Some(since)),
        "the events' lb-a ends where the history begins: {lb_a}"
    );
    assert!(
        spans.iter().any(|s| s[0].as_f64() == Some(since))
            && spans.iter().any(|s| s[1].as_f64() == Some(to)),
        "the history's lb-a from its start until now: {lb_a}"
    );

    // Pointing at lb-b's bar: the tooltip names it with exact times, and the
    // canvas there is painted in the master colour.
    let middle = (facts["b"][0].as_f64().unwrap() + facts["b"][1].as_f64().unwrap()) / 2.0;
    let on_b = b.js(POINT_AT, json!(["lb-b", middle]));
    let tip = on_b["tip"].as_str().unwrap();
    assert!(tip.starts_with("lb-b MASTER"), "{on_b}");
    assert!(
        tip.contains("from ") && tip.contains("1 h 24 min"),
        "{on_b}"
    );
    assert!(tip.contains("incident (degraded)"), "{on_b}");
    assert!(is_master_colour(&on_b), "{on_b}");
    b.screenshot("timeline-light");
    // lb-a's lane at the same time: not master, and not painted as such.
    let on_a = b.js(POINT_AT, json!(["lb-a", middle]));
    assert!(
        on_a["tip"].as_str().unwrap().starts_with("lb-a not master"),
        "{on_a}"
    );
    assert!(!is_master_colour(&on_a), "{on_a}");
    // Before the first record nothing is guessed: no bar, "no record".
    let early = b.js(POINT_AT, json!(["lb-a", to - 22.0 * hour]));
    assert!(
        early["tip"].as_str().unwrap().contains("no record"),
        "{early}"
    );
    assert!(!is_master_colour(&early), "{early}");
    // After the failback lb-a is master until now.
    let late = b.js(POINT_AT, json!(["lb-a", to - 6.0 * hour]));
    assert!(
        late["tip"].as_str().unwrap().starts_with("lb-a MASTER"),
        "{late}"
    );
    assert!(is_master_colour(&late), "{late}");

    // A second incident overlapping the first is shaded once, not darker.
    let at = |ms: f64| {
        chrono::DateTime::from_timestamp_millis(ms as i64)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    };
    let (opened, resolved) = (at(to - 13.95 * hour), at(to - 12.6 * hour));
    for (id, kind, when) in [
        ("h6", "vrrp.incident_opened", &opened),
        ("h7", "vrrp.incident_resolved", &resolved),
    ] {
        let data = json!({ "cluster": { "site": null, "vrid": 51, "networks": ["192.0.2.0/24"], "vips": [],
            "health": "degraded", "master": "lb-b", "masters": ["lb-b"], "members": [] },
            "incident": { "id": "inc-2", "health": "degraded", "openedAt": opened, "reasons": [], "history": [] } });
        server.sql(&format!(
            "INSERT INTO activity (id, occurred_at, received_at, source, client_id, kind, level, correlation_id, subject, data)
             VALUES ('{id}', '{when}', '{when}', 'server', NULL, '{kind}', 'warning', 'inc-2', '{{}}', '{data}')"
        ));
    }
    b.goto(&b.url());
    b.wait("#master-timeline .timeline-chart[data-ready='1'] canvas");
    b.wait_js(
        "the timeline with two incidents",
        "return document.querySelectorAll('#master-timeline tr.incident-window').length === 2",
        json!([]),
    );
    let twice = b.js(POINT_AT, json!(["lb-a", middle]));
    // (The canvas is transparent under the shade: its alpha is what adds up.)
    for i in 0..4 {
        let (one, two) = (
            on_a["px"][i].as_i64().unwrap(),
            twice["px"][i].as_i64().unwrap(),
        );
        assert!((one - two).abs() <= 2, "{on_a} vs {twice}");
    }

    // The dark theme repaints the canvas in its own master colour.
    // (What the theme switch does; the chart follows the attribute.)
    b.js("document.documentElement.dataset.theme = 'dark'", json!([]));
    let on_b_dark = b.js(POINT_AT, json!(["lb-b", middle]));
    assert_ne!(on_b_dark["master"], on_b["master"], "{on_b_dark}");
    assert!(is_master_colour(&on_b_dark), "{on_b_dark}");
    // uPlot runs under the page's CSP (it styles through the DOM, not markup)
    // and throws nothing.
    let console = b.console();
    assert!(
        console
            .iter()
            .all(|l| !l.contains("Content Security Policy") && !l.contains("Uncaught")),
        "{console:?}"
    );
    b.screenshot("timeline-dark");
}
