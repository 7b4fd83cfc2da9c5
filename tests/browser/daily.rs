//! The dashboard for daily use: counters highlighted only on a fault
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
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
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

    // A young cluster: its availability is over the time it was observed, and
    // says so (not a share of a 24 h window it did not exist for).
    for range in ["7d", "24h"] {
        b.click(&format!("#history-timeline button[data-range='{range}']"));
        b.wait(&format!(
            "#history-timeline[data-range='{range}'] #availability-figures"
        ));
        let words = if range == "7d" { "7 d" } else { "24 h" };
        b.wait_text(
            "[data-figure=observed]",
            &format!("of the last {words}; the shares below are of that time"),
        );
        b.wait_text("[data-figure=ok-share]", "of the observed time");
        let share = b.js(
            "return parseFloat(document.querySelector('[data-figure=ok-share]').textContent)",
            json!([]),
        );
        assert!(
            share.as_f64().unwrap() > 10.0,
            "{range}: a healthy pair observed for seconds is {share} % ok"
        );
    }

    // The backup's authentication failures rise: that cell, and only it.
    bb.report(backup(4));
    b.wait_text("#counter-summary", "1 error counter above 0");
    assert_eq!(highlighted(&b), json!([["auth_failure", 2]]));
    b.screenshot("counters-auth-failure");
    drop(a);
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn tables_have_headers_lists_sort_and_the_clients_list_says_what_keepalived_does() {
    let server = Server::start();
    let admin = server.admin();
    let lb_a = FakeAgent::connect(
        &server,
        &admin,
        "lb-a",
        reading_of(vec![
            instance("VI_WEB", "MASTER", 150, 51, "192.0.2.100/24"),
            instance("VI_DB", "BACKUP", 100, 52, "198.51.100.10/24"),
        ]),
    );
    let lb_b = FakeAgent::connect(&server, &admin, "lb-b", member("VI_WEB", "BACKUP", 100));
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

    // The clients list: running with its instances, stopped (once the
    // snapshot's readings arrived: the list of clients may come first).
    b.goto(&server.url("/clients"));
    b.wait_text("#client-list", "cache-c");
    let row = |name: &str| {
        b.wait_js(
            "the client's row",
            "const r = [...document.querySelectorAll('#client-list tbody tr')].find(r => r.textContent.includes(arguments[0]));
             const t = r && r.querySelector('td[data-col=keepalived]').textContent.replace(/\\s+/g, ' ').trim();
             return t !== 'no reading' && t",
            json!([name]),
        )
    };
    assert_eq!(row("lb-a"), json!("running 2 instances · 1 MASTER"));
    assert_eq!(row("lb-b"), json!("running 1 instance"));
    assert_eq!(row("cache-c"), json!("stopped"));
    // Refresh from the row: the server asks the agent, whose new reading shows.
    lb_b.set_reading(reading_of(vec![
        instance("VI_WEB", "BACKUP", 100, 51, "192.0.2.100/24"),
        instance("VI_DB", "BACKUP", 90, 52, "198.51.100.10/24"),
    ]));
    assert_eq!(row("lb-b"), json!("running 1 instance"), "sent unasked");
    b.js(
        "[...document.querySelectorAll('#client-list tbody tr')].find(r => r.textContent.includes('lb-b'))
           .querySelector('button[data-action=refresh]').click()",
        json!([]),
    );
    b.wait_text("#client-list tbody tr", "Reading requested.");
    b.wait_js(
        "lb-b's new reading in its row",
        "const r = [...document.querySelectorAll('#client-list tbody tr')].find(r => r.textContent.includes('lb-b'));
         return r.querySelector('td[data-col=keepalived]').textContent.includes('2 instances')",
        json!([]),
    );
    // Inbound rows offer no reconnect (only the server dials outbound agents).
    assert_eq!(
        b.js(
            "return document.querySelectorAll('#client-list button[data-action=reconnect]').length",
            json!([])
        ),
        json!(0)
    );

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

    // The overview's card for online hosts without a usable reading leads to them.
    b.goto(&server.url("/"));
    b.wait_text(
        "#unusable-hosts",
        "hosts without a usable keepalived reading",
    );
    assert_eq!(
        b.js(
            "return document.querySelector('#unusable-hosts .stat-value').textContent",
            json!([])
        ),
        json!("1")
    );
    assert!(b
        .js(
            "return document.querySelector('#unusable-hosts').className",
            json!([])
        )
        .as_str()
        .unwrap()
        .contains("warn"));
    b.click("#unusable-hosts");
    b.wait_text("#client-list", "cache-c");
    assert_eq!(
        b.js("return [...document.querySelectorAll('#client-list tbody tr td[data-col=name] a')].map(a => a.textContent)", json!([])),
        json!(["cache-c"])
    );

    // The clusters list sorts by a column: attention first (the API's order),
    // then by VRID, and the other way.
    b.goto(&server.url("/clusters"));
    b.wait_text("article.cluster", "lb-b");
    let vrids = "return [...document.querySelectorAll('article.cluster .cluster-name')].map(a => a.textContent)";
    assert_eq!(
        b.js(vrids, json!([])),
        json!(["VRID 52", "VRID 51"]),
        "attention first"
    );
    b.click("#cluster-sort button[data-col=vrid]");
    b.wait_js(
        "the sort in the URL",
        "return location.search === '?sort=vrid'",
        json!([]),
    );
    assert_eq!(b.js(vrids, json!([])), json!(["VRID 51", "VRID 52"]));
    assert_eq!(
        b.js(
            "const x = document.querySelector('#cluster-sort button[data-col=vrid]');
             return [x.getAttribute('aria-pressed'), x.dataset.dir, x.textContent.trim()]",
            json!([])
        ),
        json!(["true", "ascending", "VRID ▲"])
    );
    b.click("#cluster-sort button[data-col=vrid]");
    b.wait_js(
        "the sort in the URL",
        "return location.search === '?sort=-vrid'",
        json!([]),
    );
    assert_eq!(b.js(vrids, json!([])), json!(["VRID 52", "VRID 51"]));
    b.screenshot("clusters-sorted");

    // A client's instances lead to their cluster.
    b.goto(&server.url("/clients"));
    b.click(&format!(
        "#client-list a[href='/clients/{}']",
        lb_a.identity.id
    ));
    b.wait("#instance-list");
    names_state_and_priority("client page", b.js(headers, json!([])));
    b.wait("#instance-list a[href^='/clusters/']");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
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
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
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
    // Each page with what it shows last (the cluster page's drawn timeline and
    // counters, the settings' scheduler status...), so the check sees it whole.
    let pages = [
        ("/".to_owned(), ".stats .stat"),
        (
            "/clusters".to_owned(),
            "article.cluster table.members tbody tr",
        ),
        (
            format!("/clusters/{}", urlencode(&key)),
            "#master-timeline .timeline-chart[data-ready='1'] canvas",
        ),
        (format!("/clusters/{}", urlencode(&key)), "#counter-summary"),
        ("/clients".to_owned(), "#client-list tbody tr"),
        (
            format!("/clients/{}", a.identity.id),
            "#instance-list tbody tr",
        ),
        (format!("/clients/{}/edit", a.identity.id), "#client-form"),
        ("/activity".to_owned(), "#activity-list"),
        ("/silences".to_owned(), ".silences"),
        ("/webhooks".to_owned(), ".admin .empty"),
        ("/tokens".to_owned(), "#token-form"),
        ("/users".to_owned(), "#user-list tbody tr"),
        (
            "/settings".to_owned(),
            "#scheduler-activity .scheduler-status",
        ),
        ("/clients/add".to_owned(), ".choice"),
        ("/clients/add?mode=outbound".to_owned(), "#outbound-form"),
        ("/webhooks/new".to_owned(), "button[data-template=slack]"),
    ];
    for (path, ready) in &pages {
        b.goto(&server.url(path));
        b.wait(ready);
        b.wait_text("#live-indicator", "Live");
        assert_eq!(sideways(&b), json!([]), "{path} at 375 px");
    }
    // The login page, logged out.
    b.click("#logout");
    b.wait("form input[name=username]");
    assert_eq!(sideways(&b), json!([]), "login at 375 px");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
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

/// The dialog "Leave without saving?" is open; `stay`: answer Stay, else Leave.
fn answer_leave(b: &Browser, stay: bool) {
    b.wait_text("#leave-dialog[open]", "not saved");
    b.click(if stay {
        "#leave-dialog[open] button.cancel"
    } else {
        "#leave-dialog[open] button.confirm"
    });
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('dialog[open]')",
        json!([]),
    );
}

fn path_is(b: &Browser, path: &str) {
    b.wait_js(
        "the page",
        "return location.pathname + location.search === arguments[0]",
        json!([path]),
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn esc_closes_the_editors_and_the_add_a_host_wizard_keeps_typing_until_told() {
    let server = Server::start();
    let admin = server.admin();
    let a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let b = Browser::start(1280, 900);
    let edit = format!("/clients/{}/edit", a.identity.id);
    login(&b, &server, "admin", ADMIN_PASSWORD, &edit);

    // The client editor: Esc goes back to the client; with typing it asks first.
    b.wait("#client-form");
    b.keys("\u{E00C}");
    path_is(&b, &format!("/clients/{}", a.identity.id));
    b.goto(&server.url(&edit));
    b.type_into("#f-site", "dc-7");
    b.keys("\u{E00C}");
    answer_leave(&b, true);
    path_is(&b, &edit);
    assert_eq!(
        b.js("return document.querySelector('#f-site').value", json!([])),
        json!("dc-7")
    );
    b.keys("\u{E00C}");
    answer_leave(&b, false);
    path_is(&b, &format!("/clients/{}", a.identity.id));

    // A user's editor: Esc closes it.
    b.goto(&server.url("/users"));
    b.click("#user-list tr[data-user=admin] button.edit");
    b.wait("form[id^=edit-user]");
    b.keys("\u{E00C}");
    b.wait_js(
        "the user editor to close",
        "return !document.querySelector('form[id^=edit-user]')",
        json!([]),
    );
    path_is(&b, "/users");

    // A dialog's failure shows inside it, which stays open: a token deleted
    // elsewhere meanwhile.
    let token = server.post("/api/v1/tokens", crate::harness::Auth::Cookie(&admin), "{}");
    assert!(token.status < 300, "{:?}", token.body);
    b.goto(&server.url("/tokens"));
    b.click("#token-list tbody tr button.danger");
    b.wait("#token-delete[open]");
    let hash = b.js(
        "return document.querySelector('#token-list tbody tr').dataset.hash",
        json!([]),
    );
    let gone = server.delete(
        &format!("/api/v1/tokens/{}", hash.as_str().unwrap()),
        crate::harness::Auth::Cookie(&admin),
    );
    assert!(gone.status < 300, "{:?}", gone.body);
    b.click("#token-delete[open] button.confirm");
    b.wait("#token-delete[open] [data-error-for=dialog]");
    let error = b.js(
        "return document.querySelector('#token-delete [data-error-for=dialog]').textContent",
        json!([]),
    );
    assert_eq!(error, json!("Token not found"));
    b.click("#token-delete[open] button.cancel");
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('dialog[open]')",
        json!([]),
    );

    // The heartbeat's form and a silence's reason guard their typing too.
    b.goto(&server.url("/settings"));
    b.type_into("#heartbeat #f-url", "https://hc.example/ping/abc");
    b.click("nav a[href='/clusters']");
    answer_leave(&b, true);
    path_is(&b, "/settings");
    b.click("nav a[href='/clusters']");
    answer_leave(&b, false);
    b.click("article.cluster a.cluster-name");
    b.click("#silence-open");
    b.type_into("#silence-comment", "kernel update");
    b.click("nav a[href='/']");
    answer_leave(&b, true);
    b.keys("\u{E00C}");
    b.wait_js(
        "Esc to cancel the silence",
        "return !document.querySelector('#silence-form') && !!document.querySelector('#silence-open')",
        json!([]),
    );

    // The wizard: typed but no token made yet, leaving asks; so does switching
    // to the other way (its form would go) and Esc.
    b.goto(&server.url("/clients/add?mode=inbound"));
    b.wait("#token-form");
    b.keys("\u{E00C}");
    path_is(&b, "/clients");
    b.goto(&server.url("/clients/add?mode=inbound"));
    b.type_into("#f-displayName", "edge-9");
    b.click("nav a[href='/clusters']");
    answer_leave(&b, true);
    b.click("#mode-outbound");
    answer_leave(&b, true);
    path_is(&b, "/clients/add?mode=inbound");
    assert_eq!(
        b.js(
            "return [document.querySelector('#mode-inbound').checked, document.querySelector('#f-displayName').value]",
            json!([])
        ),
        json!([true, "edge-9"])
    );
    b.click("#mode-outbound");
    answer_leave(&b, false);
    b.wait("#outbound-form");
    path_is(&b, "/clients/add?mode=outbound");
    // A token made is kept (the tokens list has it): leaving no longer asks.
    b.click("#mode-inbound");
    b.type_into("#f-displayName", "edge-9");
    b.click("#create-token");
    b.wait("#new-token");
    b.keys("\u{E00C}");
    path_is(&b, "/clients");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_webhook_list_says_a_failed_delivery_in_words_and_wraps_a_long_url_between_parts() {
    let server = Server::start();
    let admin = server.admin();
    // Nothing listens on this port: the delivery is refused.
    let url = format!(
        "http://127.0.0.1:{}/services/T0AAAAAAA/B0BBBBBBB/Xq7rTz?channel=ops-alerts&source=vrrp-monitor",
        crate::harness::free_port()
    );
    let templates = server
        .get(
            "/api/v1/webhooks/templates",
            crate::harness::Auth::Cookie(&admin),
        )
        .body;
    let mut spec = templates
        .as_array()
        .and_then(|l| l.iter().find(|t| t["id"] == "slack"))
        .unwrap_or_else(|| panic!("no slack template: {templates}"))["webhook"]
        .clone();
    spec["name"] = json!("Ops chat");
    spec["url"] = json!(url);
    spec["minLevel"] = json!("info");
    spec["kinds"] = json!(["client.*"]);
    let hook = server.post(
        "/api/v1/webhooks",
        crate::harness::Auth::Cookie(&admin),
        &spec.to_string(),
    );
    assert!(hook.status < 300, "{:?}", hook.body);
    // An event for it (the agent connects), delivered and refused, retries included.
    let _a = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let error = crate::admin::wait_for("the refused delivery to be stored", || {
        let list = server
            .get("/api/v1/webhooks", crate::harness::Auth::Cookie(&admin))
            .body;
        list[0]["lastError"].as_str().map(str::to_owned)
    });
    assert!(error.contains("refused"), "{error}");

    let b = Browser::start(375, 740);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/webhooks");
    b.wait("#webhook-list");
    let cell = |col: &str| {
        b.js(
            "return document.querySelector(`#webhook-list td[data-label='${arguments[0]}']`).innerText",
            json!([col]),
        )
        .as_str()
        .unwrap()
        .to_owned()
    };
    let last = cell("Last delivery");
    assert!(
        last.contains("The receiver refused the connection (nothing listens on that port)."),
        "{last}"
    );
    assert!(
        !last.contains("os error") && !last.contains("io:"),
        "raw error shown: {last}"
    );
    // The URL reads whole, wraps over lines at 375 px, and no part of it is cut
    // in the middle (each part between separators sits on one line).
    assert_eq!(
        b.js(
            "return document.querySelector('#webhook-list .url').textContent",
            json!([])
        ),
        json!(url)
    );
    let lines = b.js(
        "const u = document.querySelector('#webhook-list .url');
         const tops = (n) => { const r = document.createRange(); r.selectNodeContents(n);
           return new Set([...r.getClientRects()].map(x => Math.round(x.top))); };
         const parts = [...u.childNodes].filter(n => n.nodeType === 3);
         const lines = new Set(parts.flatMap(n => [...tops(n)]));
         return [lines.size, parts.filter(n => tops(n).size > 1).map(n => n.textContent)];",
        json!([]),
    );
    assert!(
        lines[0].as_u64().unwrap() > 1,
        "the URL does not wrap: {lines}"
    );
    assert_eq!(lines[1], json!([]), "parts broken mid-word");
    assert_eq!(sideways(&b), json!([]), "the webhook list at 375 px");
    b.screenshot("webhooks-failed-delivery-phone");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_agents_own_status_page_says_its_mode_light_and_dark_and_a_row_reconnects_it() {
    let server = Server::start();
    let admin = server.admin();
    let agent = crate::admin::RealAgent::start();
    let pin = agent.pin();
    let b = Browser::start(1000, 800);
    let status = format!("http://127.0.0.1:{}/status", agent.port);

    // Unregistered: its register page and status page say where to add it, in
    // the words of the dashboard's button (checked below).
    b.goto(&format!("http://127.0.0.1:{}/register", agent.port));
    let register = b.body_text();
    assert!(register.contains("Clients → Add a host"), "{register}");
    assert!(!register.contains("Add agent"), "{register}");
    b.goto(&status);
    b.wait_text("#mode", "Connection mode: not registered yet");
    b.wait_text("#mode", "Clients → Add a host");
    // Light and dark: the system's choice until switched; the switch is kept.
    let look = "return [document.documentElement.dataset.theme || 'auto',
                        getComputedStyle(document.body).backgroundColor,
                        document.querySelector('#theme').getAttribute('aria-label')]";
    let system_dark = b.js(
        "return matchMedia('(prefers-color-scheme: dark)').matches",
        json!([]),
    );
    let auto = b.js(look, json!([]));
    assert_eq!(auto[0], "auto");
    assert_eq!(
        auto[1],
        if system_dark == json!(true) {
            "rgb(17, 20, 24)"
        } else {
            "rgb(246, 247, 249)"
        }
    );
    b.click("#theme");
    assert_eq!(
        b.js(look, json!([])),
        json!([
            "light",
            "rgb(246, 247, 249)",
            "Theme: light. Switch to dark"
        ])
    );
    b.click("#theme");
    assert_eq!(
        b.js(look, json!([])),
        json!(["dark", "rgb(17, 20, 24)", "Theme: dark. Switch to auto"])
    );
    b.goto(&status);
    b.wait_text("#mode", "Connection mode:");
    assert_eq!(b.js(look, json!([]))[0], "dark", "the switch is kept");
    b.screenshot("agent-status-unregistered-dark");

    // Added by the server (outbound): the page says who dials whom.
    let added = server.post(
        "/api/v1/clients/outbound",
        crate::harness::Auth::Cookie(&admin),
        &json!({ "outboundTargetAddress": format!("127.0.0.1:{}", agent.port),
                 "registrationSecret": pin, "hostname": "lb-out" })
        .to_string(),
    );
    assert!(added.status < 300, "{:?}", added.body);
    b.goto(&status);
    b.wait_text(
        "#mode",
        "Connection mode: outbound: the server connects to this agent.",
    );
    b.screenshot("agent-status-outbound-dark");

    // Its row in the clients list: refresh and reconnect.
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clients");
    assert_eq!(
        b.js(
            "return document.querySelector('#add-host').textContent",
            json!([])
        ),
        json!("Add a host")
    );
    b.wait_text("#client-list tbody tr", "lb-out");
    b.wait("#client-list tbody tr button[data-action=refresh]:not([disabled])");
    b.click("#client-list tbody tr button[data-action=refresh]");
    b.wait_text("#client-list tbody tr [role=status]", "Reading requested.");
    b.click("#client-list tbody tr button[data-action=reconnect]");
    b.wait_text("#client-list tbody tr [role=status]", "Reconnecting…");
    // The server dials it again: online once more.
    b.wait("#client-list tbody tr button[data-action=refresh]:not([disabled])");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_agents_status_page_lists_each_server_it_reports_to() {
    // An agent that two servers registered (both dial it, outbound,
    // with the one setup PIN) shows one row per server on its status page.
    let (one, two) = (Server::start(), Server::start());
    let agent = crate::admin::RealAgent::start_with("maxServers: 2\n");
    let pin = agent.pin();
    let b = Browser::start(1000, 800);
    let status = format!("http://127.0.0.1:{}/status", agent.port);
    let add = |server: &Server, name: &str| {
        let admin = server.admin();
        let added = server.post(
            "/api/v1/clients/outbound",
            crate::harness::Auth::Cookie(&admin),
            &json!({ "outboundTargetAddress": format!("127.0.0.1:{}", agent.port),
                     "registrationSecret": pin, "hostname": name })
            .to_string(),
        );
        assert!(added.status < 300, "{name}: {:?}", added.body);
    };
    add(&one, "lb-one");
    b.goto(&status);
    b.wait_text(
        "#servers-room",
        "Registered with 1 of at most 2 servers; 1 more can register with the setup PIN.",
    );
    add(&two, "lb-two");
    b.goto(&status);
    b.wait_text("#servers-room", "Registered with 2 of at most 2 servers.");
    b.wait_js(
        "both servers connected",
        "return [...document.querySelectorAll('#servers tr')].filter(r => r.cells[2].textContent === 'connected').length === 2",
        json!([]),
    );
    let rows = b.js(
        "return [...document.querySelectorAll('#servers tr')].map(r => [...r.cells].map(c => c.textContent))",
        json!([]),
    );
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_ne!(rows[0][0], rows[1][0], "the two servers told apart");
    for row in rows {
        let server = row[0].as_str().unwrap();
        assert!(
            server.starts_with("dials this agent (as client "),
            "{row:?}"
        );
        assert_eq!(row[1], "outbound", "{row:?}");
        assert_eq!(row[2], "connected", "{row:?}");
    }
    b.screenshot("agent-status-two-servers");
}
