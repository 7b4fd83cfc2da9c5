//! What the server does for the dashboard: serving the embedded files with their
//! caching, and the activity list's paging, filters and composed texts.

use crate::harness::{reading, Auth, Server};
use serde_json::{json, Value};
use sha2::Digest;

#[test]
fn the_dashboard_is_served_with_deep_links_and_caching() {
    let server = Server::start();
    let page = server.get("/", Auth::None);
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let html = page.body.as_str().expect("html").to_owned();
    assert!(html.contains("<script type=\"module\" src=\"/app.js\">"));

    // The CSP allows the page's one inline script, the import map, by its hash.
    let map = html
        .split_once("<script type=\"importmap\">")
        .and_then(|(_, r)| r.split_once("</script>"))
        .unwrap()
        .0;
    let digest = sha2::Sha256::digest(map.as_bytes());
    let csp = page.header("content-security-policy").unwrap();
    let hash = csp
        .split("'sha256-")
        .nth(1)
        .and_then(|r| r.split('\'').next())
        .unwrap();
    assert_eq!(decode(hash), digest.to_vec(), "{csp}");
    assert!(csp.contains("default-src 'self'"));

    // Deep links answer the page itself; /api stays JSON 404.
    let deep = server.get("/clusters/dc-1%7C51%7C10.0.0.0%2F24", Auth::None);
    assert_eq!(deep.status, 200);
    assert_eq!(deep.body.as_str(), Some(html.as_str()));
    let api = server.get("/api/v1/nothing-here", Auth::None);
    assert_eq!((api.status, api.error()), (404, "Not found"));
    assert_eq!(
        server.get("/docs/webhook-templates", Auth::None).status,
        200
    );

    // Vendored files carry their version: cached for a year.
    let vendor = server.get("/vendor/preact-11.2.0.mjs", Auth::None);
    assert_eq!(vendor.status, 200);
    assert_eq!(
        vendor.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(
        vendor.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    // Our own modules are revalidated: the same content answers 304.
    let app = server.get("/app.js", Auth::None);
    assert_eq!(app.header("cache-control"), Some("no-cache"));
    let etag = app.header("etag").unwrap().to_owned();
    let again = server.request(
        "GET",
        "/app.js",
        Auth::None,
        &[("if-none-match", &etag)],
        None,
    );
    assert_eq!(again.status, 304);
    // index.html is never answered 304: a new build reaches the tab at once.
    let page_tag = page.header("etag").unwrap().to_owned();
    let page_again = server.request(
        "GET",
        "/",
        Auth::None,
        &[("if-none-match", &page_tag)],
        None,
    );
    assert_eq!(page_again.status, 200);
}

fn decode(s: &str) -> Vec<u8> {
    let v = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    } as u32;
    let b: Vec<u8> = s.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::new();
    for chunk in b.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, c)| n | v(*c) << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}

fn event(id: &str, minute: u32, kind: &str, level: &str, data: Value) -> Value {
    json!({ "id": id, "occurredAt": format!("2026-11-21T09:{minute:02}:00.000Z"), "kind": kind,
            "level": level, "correlationId": null,
            "subject": { "instanceName": "VI_1", "vrid": 51, "interface": "eth0" }, "data": data })
}

#[test]
fn activity_pages_filters_and_texts() {
    let server = Server::start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "lb-1");
    let mut ws = server.connect_agent(&agent);
    ws.send("KEEPALIVED_UPDATE", reading(&[("VI_1", "MASTER")]));
    let events = vec![
        event(
            "a1",
            1,
            "vrrp.instance_added",
            "info",
            json!({ "state": "BACKUP" }),
        ),
        event(
            "a2",
            2,
            "vrrp.state_changed",
            "info",
            json!({ "from": "BACKUP", "to": "MASTER", "priority": 100 }),
        ),
        event("a3", 3, "keepalived.stopped", "warning", json!({})),
        event(
            "a4",
            4,
            "keepalived.unreadable",
            "error",
            json!({ "error": "permission denied" }),
        ),
        event(
            "a5",
            5,
            "vrrp.state_changed",
            "warning",
            json!({ "from": "MASTER", "to": "BACKUP", "priority": 100 }),
        ),
    ];
    ws.send("ACTIVITY", json!({ "events": events }));
    ws.expect("ACTIVITY_ACK");
    let get = |q: &str| server.get(&format!("/api/v1/activity{q}"), Auth::Cookie(&admin));
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["id"].as_str())
            .filter(|id| id.len() == 2 && id.starts_with('a'))
            .map(str::to_owned)
            .collect()
    };

    // Unparameterised: the whole list, newest first, with the composed texts.
    let all = get("").body;
    assert_eq!(ids(&all), ["a5", "a4", "a3", "a2", "a1"]);
    let a4 = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "a4")
        .unwrap();
    assert_eq!(a4["message"], "keepalived on lb-1 cannot be read.");
    assert_eq!(a4["detail"], "permission denied");

    // Paging: limit, then before the last one seen.
    let first = get("?level=warning,error&limit=2").body;
    assert_eq!(ids(&first), ["a5", "a4"]);
    let next = get("?level=info,warning,error&limit=2&before=a4").body;
    assert_eq!(ids(&next), ["a3", "a2"]);
    assert_eq!(get("?limit=2&before=no-such-id").body, json!([]));

    // Filters.
    assert_eq!(ids(&get("?level=warning,error").body), ["a5", "a4", "a3"]);
    assert_eq!(ids(&get("?kind=vrrp.state_changed").body), ["a5", "a2"]);
    assert_eq!(ids(&get("?q=CANNOT%20BE%20READ").body), ["a4"]);
    assert_eq!(ids(&get("?q=changed&limit=1").body), ["a5"]);
    assert_eq!(ids(&get("?since=2026-11-21T09:04:00Z").body), ["a5", "a4"]);
    let seen = server.post(
        "/api/v1/activity/seen",
        Auth::Cookie(&admin),
        r#"{"ids":["a5","a4"]}"#,
    );
    assert_eq!(seen.status, 200);
    assert_eq!(ids(&get("?level=warning,error&unseen=true").body), ["a3"]);
    assert_eq!(
        get("?level=warning,error&unseen=true&count=true").body,
        json!({ "count": 1 })
    );

    // Bad parameters are named.
    for (q, field) in [
        ("?limit=0", "limit"),
        ("?limit=many", "limit"),
        ("?level=loud", "level"),
        ("?unseen=yes", "unseen"),
        ("?since=yesterday", "since"),
        ("?count=1", "count"),
    ] {
        let a = get(q);
        assert_eq!(a.status, 400, "{q}");
        assert!(
            a.error().starts_with(&format!("{field}: ")),
            "{q}: {}",
            a.error()
        );
    }

    // The dashboard socket can ask for only the newest records on connect.
    let mut dash = Ws::connect(
        server.port(),
        "/ws/dashboard?activity=2",
        &[("cookie", &format!("svc_session={admin}"))],
    );
    let snapshot = dash.expect("ACTIVITY_UPDATE");
    assert_eq!(snapshot.as_array().unwrap().len(), 2);
    assert!(snapshot[0]["message"].is_string());
    // Without it, everything (the spec's behaviour).
    let mut full = server.dashboard(&admin);
    let whole = full.expect("ACTIVITY_UPDATE");
    assert_eq!(
        whole.as_array().unwrap().len(),
        all.as_array().unwrap().len()
    );
    // Appended events carry their texts too.
    ws.send("ACTIVITY", json!({ "events": [event("a6", 6, "keepalived.started", "info", json!({ "pid": 7, "version": "2.2.8" }))] }));
    let appended = full.expect("ACTIVITY_APPENDED");
    assert_eq!(appended[0]["message"], "keepalived started on lb-1.");
    assert_eq!(appended[0]["detail"], "Version 2.2.8, PID 7.");
}

use crate::harness::Ws;
