//! The dashboard for daily use (issue 34): counters highlighted only on a fault
//! given the member's own role, member tables with headers, the clients list
//! saying what keepalived does, sorting by a column, unsaved typing kept until
//! the operator says to leave, and every view at phone width without sideways
//! scrolling.

use crate::harness::{Server, ADMIN_PASSWORD};
use crate::screens::urlencode;
use crate::webdriver::Browser;
use crate::{instance, login, member, reading_of, FakeAgent};
use serde_json::{json, Value};

fn cluster_key(server: &Server, admin: &str) -> String {
    let list = server
        .get(
            "/api/v1/keepalived/clusters",
            crate::harness::Auth::Cookie(admin),
        )
        .body;
    list.as_array()
        .and_then(|l| l.iter().find(|c| c["vrid"] == 51))
        .unwrap_or_else(|| panic!("no cluster of VRID 51: {list}"))["key"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The counters' highlighted cells as [counter, column index].
fn highlighted(b: &Browser) -> Value {
    b.js(
        "return [...document.querySelectorAll('#counters td.hl')].map(td =>
           [td.closest('tr').dataset.counter, [...td.parentElement.children].indexOf(td)])",
        json!([]),
    )
}

#[test]
fn counters_are_highlighted_only_on_a_fault_of_the_members_own_role() {
    let server = Server::start();
    let admin = server.admin();
    let a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let backup = |auth_failures: i64| {
        let mut i = instance("VI_WEB", "BACKUP", 100, 51, "192.0.2.100/24");
        i["stats"]["auth_failure"] = json!(auth_failures);
        i["stats"]["packet_len_err"] = json!(0);
        reading_of(vec![i])
    };
    let bb = FakeAgent::connect(&server, &admin, "lb-b", backup(0));
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster", "lb-b");
    let key = cluster_key(&server, &admin);

    // The rule itself, on the module the page uses.
    b.js(
        "import('/counters.js').then(m => { window.__counters = m; })",
        json!([]),
    );
    b.wait_js("counters.js", "return !!window.__counters", json!([]));
    let rule = b.js(
        "const h = window.__counters.highlight;
         const master = { state: 'MASTER', live: true, stats: { advertisements_sent: 500, advertisements_received: 0, auth_failure: 0 } };
         const backup = { state: 'BACKUP', live: true, stats: { advertisements_sent: 0, advertisements_received: 0, auth_failure: 3 } };
         const hearing = { ...backup, stats: { ...backup.stats, advertisements_received: 500 } };
         const silent = { state: 'MASTER', live: true, stats: { advertisements_sent: 0 } };
         const offline = { ...backup, live: false };
         return [
           h('advertisements_received', master, [master, backup]),
           h('advertisements_sent', backup, [master, backup]),
           h('advertisements_received', backup, [master, backup]),
           h('advertisements_received', hearing, [master, hearing]),
           h('auth_failure', backup, [master, backup]),
           h('auth_failure', master, [master, backup]),
           h('advertisements_sent', silent, [silent]),
           h('auth_failure', offline, [master, offline]),
           h('became_master', { state: 'MASTER', live: true, stats: { became_master: 7 } }, []),
         ];",
        json!([]),
    );
    assert_eq!(
        rule,
        json!([false, false, true, false, true, false, true, false, false]),
        "master hears nobody: health; a backup hearing nobody while the master sends: fault; errors above 0: fault"
    );

    // A healthy MASTER/BACKUP pair: nothing highlighted, errors only by default.
    b.goto(&server.url(&format!("/clusters/{}", urlencode(&key))));
    b.wait_text("#counter-summary", "No error counted");
    assert_eq!(highlighted(&b), json!([]));
    assert!(
        !b.body_text().contains("advertisements received"),
        "traffic shown by default"
    );
    b.click("#show-traffic");
    b.wait_text("#counters", "advertisements received");
    assert_eq!(highlighted(&b), json!([]), "a healthy pair has a highlight");
    b.screenshot("counters-healthy");

    // The backup's authentication failures rise: that cell, and only it.
    bb.report(backup(4));
    b.wait_text("#counter-summary", "1 error counter above 0");
    assert_eq!(highlighted(&b), json!([["auth_failure", 2]]));
    b.screenshot("counters-auth-failure");
    drop(a);
}

#[test]
fn tables_have_headers_lists_sort_and_the_clients_list_says_what_keepalived_does() {
    let server = Server::start();
    let admin = server.admin();
    let _a = FakeAgent::connect(
        &server,
        &admin,
        "lb-a",
        reading_of(vec![
            instance("VI_WEB", "MASTER", 150, 51, "192.0.2.100/24"),
            instance("VI_DB", "BACKUP", 100, 52, "198.51.100.10/24"),
        ]),
    );
    let _b = FakeAgent::connect(&server, &admin, "lb-b", member("VI_WEB", "BACKUP", 100));
    let _c = FakeAgent::connect(
        &server,
        &admin,
        "cache-c",
        json!({ "collectedAt": "2026-11-27T06:00:00.000Z", "running": false, "pid": null, "version": null,
                "source": "data", "error": null, "syncGroups": [], "instances": [] }),
    );
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster", "lb-b");
    let headers = "return [...document.querySelectorAll('table.members, #instance-list')].map(t =>
        [...t.querySelectorAll('thead th')].map(th => th.textContent.trim()).join('|'))";
    let names_state_and_priority = |what: &str, tables: Value| {
        let tables = tables.as_array().unwrap().clone();
        assert!(!tables.is_empty(), "{what}: no member table");
        for t in tables {
            let t = t.as_str().unwrap();
            assert!(
                t.contains("State") && t.contains("Priority"),
                "{what}: headers {t}"
            );
        }
    };
    names_state_and_priority("clusters list", b.js(headers, json!([])));
    b.goto(&server.url(&format!(
        "/clusters/{}",
        urlencode(&cluster_key(&server, &admin))
    )));
    b.wait("table.members.wide");
    let wide = b.js(headers, json!([]));
    names_state_and_priority("cluster page", wide.clone());
    for h in [
        "Interface",
        "Advert interval",
        "Sync group",
        "Last transition",
    ] {
        assert!(wide[0].as_str().unwrap().contains(h), "{h} in {wide}");
    }
    b.wait_text("table.members.wide", "0.1 s");

    // The clients list: running with its instances, stopped.
    b.goto(&server.url("/clients"));
    b.wait_text("#client-list", "cache-c");
    let row = |name: &str| {
        b.wait_js(
            "the client's row",
            "const r = [...document.querySelectorAll('#client-list tbody tr')].find(r => r.textContent.includes(arguments[0]));
             return r && r.querySelector('td[data-col=keepalived]').textContent.replace(/\\s+/g, ' ').trim()",
            json!([name]),
        )
    };
    assert_eq!(row("lb-a"), json!("running 2 instances · 1 MASTER"));
    assert_eq!(row("lb-b"), json!("running 1 instance"));
    assert_eq!(row("cache-c"), json!("stopped"));
    b.wait("#client-list tr button[data-action=refresh]");

    // Sorting by a column: by name, then the other way.
    let order = "return [...document.querySelectorAll('#client-list tbody tr td[data-col=name] a')].map(a => a.textContent)";
    b.click("#client-list th[data-col=name] button");
    assert_eq!(b.js(order, json!([])), json!(["cache-c", "lb-a", "lb-b"]));
    assert_eq!(
        b.js(
            "return document.querySelector('#client-list th[data-col=name]').getAttribute('aria-sort')",
            json!([])
        ),
        json!("ascending")
    );
    b.click("#client-list th[data-col=name] button");
    assert_eq!(b.js(order, json!([])), json!(["lb-b", "lb-a", "cache-c"]));
    b.screenshot("clients-sorted");

    // A client's instances lead to their cluster.
    b.click("#client-list a[href^='/clients/']");
    b.wait("#instance-list");
    names_state_and_priority("client page", b.js(headers, json!([])));
    b.wait("#instance-list a[href^='/clusters/']");
}

#[test]
fn leaving_a_half_typed_webhook_form_asks_first() {
    let server = Server::start();
    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/webhooks/new");
    b.click("#start-blank");
    b.wait("#f-name");
    // Untouched: leaving does not ask.
    b.click("nav a[href='/clients']");
    b.wait("#add-host");
    b.goto(&server.url("/webhooks/new"));
    b.click("#start-blank");
    b.type_into("#f-name", "half typed");
    b.click("nav a[href='/clients']");
    b.wait_text("#leave-dialog[open]", "not saved");
    b.screenshot("leave-dialog");
    b.click("#leave-dialog[open] button.cancel");
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('dialog[open]')",
        json!([]),
    );
    assert!(b.url().ends_with("/webhooks/new"), "{}", b.url());
    assert_eq!(
        b.js("return document.querySelector('#f-name').value", json!([])),
        json!("half typed")
    );
    // Esc asks the same, and Leave leaves.
    b.keys("\u{E00C}");
    b.wait("#leave-dialog[open]");
    b.click("#leave-dialog[open] button.confirm");
    b.wait_js(
        "the webhook list",
        "return location.pathname === '/webhooks'",
        json!([]),
    );
}

/// Elements the page or a box inside it scrolls sideways for.
pub fn sideways(b: &Browser) -> Value {
    b.js(
        "const out = [];
         if (document.documentElement.scrollWidth > window.innerWidth) out.push('page ' + document.documentElement.scrollWidth);
         for (const e of document.querySelectorAll('body *')) {
           const o = getComputedStyle(e).overflowX;
           if ((o === 'auto' || o === 'scroll') && e.scrollWidth > e.clientWidth + 1)
             out.push(`${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.scrollWidth}>${e.clientWidth}`);
         }
         return out.slice(0, 8);",
        json!([]),
    )
}

#[test]
fn every_view_fits_a_phone_without_sideways_scrolling() {
    let server = Server::start();
    let admin = server.admin();
    let a = FakeAgent::connect(
        &server,
        &admin,
        "lb-a.example.internal",
        member("VI_WEB", "MASTER", 150),
    );
    let _b = FakeAgent::connect(
        &server,
        &admin,
        "lb-b.example.internal",
        member("VI_WEB", "BACKUP", 100),
    );
    let key = cluster_key(&server, &admin);
    let b = Browser::start(375, 740);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/");
    let pages = [
        ("/".to_owned(), ".stats"),
        ("/clusters".to_owned(), "table.members"),
        (format!("/clusters/{}", urlencode(&key)), "#counters"),
        ("/clients".to_owned(), "#client-list"),
        (format!("/clients/{}", a.identity.id), "#instance-list"),
        (format!("/clients/{}/edit", a.identity.id), "#client-form"),
        ("/activity".to_owned(), "#level-filter"),
        ("/silences".to_owned(), ".silences"),
        ("/webhooks".to_owned(), ".admin"),
        ("/tokens".to_owned(), "#token-form"),
        ("/users".to_owned(), "#user-list"),
        ("/settings".to_owned(), "#scheduler-activity"),
        ("/clients/add".to_owned(), ".choice"),
    ];
    for (path, ready) in &pages {
        b.goto(&server.url(path));
        b.wait(ready);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(sideways(&b), json!([]), "{path} at 375 px");
    }
}

#[test]
fn the_words_of_a_split_brain_the_overview_and_a_used_token() {
    let server = Server::start();
    let admin = server.admin();
    let _a = FakeAgent::connect(&server, &admin, "db-1", member("VI_DB", "MASTER", 150));
    let _b = FakeAgent::connect(&server, &admin, "db-2", member("VI_DB", "MASTER", 100));
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    b.wait_text("article.cluster .explain", "db-1 and db-2 are both MASTER");
    assert!(!b.body_text().contains("are all MASTER"));

    // The overview: the incident in the badge's words, the cards say what they count.
    b.goto(&server.url("/"));
    let incident = b.wait_js(
        "the open incident",
        "return document.querySelector('.incidents .incident-text')?.textContent || ''",
        json!([]),
    );
    let incident = incident.as_str().unwrap();
    assert!(incident.ends_with(": split brain."), "{incident}");
    assert!(!incident.contains("split-brain"), "{incident}");
    let card = |label: &str| {
        b.js(
            "const c = [...document.querySelectorAll('.stat')].find(c => c.textContent.includes(arguments[0]));
             return c ? [c.className, c.textContent] : null",
            json!([label]),
        )
    };
    let ok = card("clusters OK");
    assert!(ok[0].as_str().unwrap().contains("warn"), "{ok}");
    let masters = card("live MASTER instances");
    assert!(
        masters[1]
            .as_str()
            .unwrap()
            .contains("more than one per cluster: a split brain"),
        "{masters}"
    );
    b.screenshot("overview-split-brain");

    // A used token does not count down its expiry.
    b.goto(&server.url("/tokens"));
    let used = b.wait_js(
        "the used tokens' rows",
        "const rows = [...document.querySelectorAll('#token-list tbody tr')].filter(r => r.querySelector('.badge')?.textContent === 'used');
         return rows.length ? rows.map(r => r.textContent).join('\\n') : ''",
        json!([]),
    );
    let used = used.as_str().unwrap();
    assert!(
        !used.contains("Expires in") && !used.contains(" in "),
        "{used}"
    );

    // A failed delivery in a sentence (the list's words for the transport's text).
    b.js(
        "import('/views/webhooks.js').then(m => { window.__hooks = m; })",
        json!([]),
    );
    b.wait_js("webhooks.js", "return !!window.__hooks", json!([]));
    assert_eq!(
        b.js(
            "return [
               window.__hooks.failureText(null, 'io: failed to lookup address information: Name or service not known'),
               window.__hooks.failureText(null, 'io: Connection refused (os error 111)'),
               window.__hooks.failureText(503, 'status 503')]",
            json!([])
        ),
        json!([
            "The receiver’s host name could not be resolved (DNS).",
            "The receiver refused the connection (nothing listens on that port).",
            "The receiver answered 503, a refusal."
        ])
    );
}

#[test]
fn the_agent_register_page_names_the_button_the_dashboard_shows() {
    let register = include_str!("../../agent/static/register.html");
    assert!(register.contains("Clients → Add a host"), "{register}");
    assert!(!register.contains("Add agent"));
    let clients = include_str!("../../static/views/clients.js");
    assert!(clients.contains(">Add a host</a>"));
}
