//! Roles, API tokens and the audit log in the browser. The same pages are opened
//! as an administrator, an operator and a viewer: each control that changes
//! something is first found on the administrator's page (so its selector is
//! right), then must be missing where the role may not use it. A viewer still
//! changes its own password; an operator silences; an administrator makes an
//! API token (shown once), sees it listed and revokes it; the audit page lists
//! those actions, pages back with "Load older" and filters.

use crate::daily::sideways;
use crate::harness::{Auth, Server, ADMIN_PASSWORD};
use crate::webdriver::Browser;
use crate::{login, member, FakeAgent};
use serde_json::{json, Value};

/// One page and the controls on it that change something: `admin` only an
/// administrator sees, `operator` an operator and an administrator.
struct Page {
    path: String,
    /// Each present (for every role: alternatives separated by commas) once
    /// the view has rendered the data its controls follow.
    ready: &'static [&'static str],
    admin: Vec<&'static str>,
    operator: Vec<&'static str>,
}

fn count(b: &Browser, css: &str) -> u64 {
    b.js(
        "return document.querySelectorAll(arguments[0]).length",
        json!([css]),
    )
    .as_u64()
    .unwrap()
}

/// The navigation's labels.
fn nav(b: &Browser) -> Vec<String> {
    let v = b.js(
        "return [...document.querySelectorAll('nav#main-nav a')].map(a => a.textContent.trim())",
        json!([]),
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// Opens every page as `who` and checks which changing controls are there.
fn check_pages(b: &Browser, server: &Server, who: &str, pages: &[Page]) {
    let (sees_admin, sees_operator) = match who {
        "admin" => (true, true),
        "operator" => (false, true),
        _ => (false, false),
    };
    for p in pages {
        b.goto(&server.url(&p.path));
        for css in p.ready {
            b.wait(css);
        }
        for (list, shown) in [(&p.admin, sees_admin), (&p.operator, sees_operator)] {
            for css in list.iter() {
                if shown {
                    // Waited for: some controls follow data that loads after `ready`.
                    b.wait(css);
                } else {
                    assert_eq!(count(b, css), 0, "{who} sees {css} on {}", p.path);
                }
            }
        }
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
    let list = server.get("/api/v1/users", Auth::Cookie(admin)).body;
    let made = list
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == name);
    assert_eq!(made.map(|u| u["role"].clone()), Some(json!(role)), "{list}");
}

fn audit(server: &Server, admin: &str, query: &str) -> Vec<Value> {
    let page = server.get(
        &format!("/api/v1/audit?limit=1000{query}"),
        Auth::Cookie(admin),
    );
    assert_eq!(page.status, 200, "{:?}", page.body);
    page.body["entries"].as_array().unwrap().clone()
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn each_role_sees_what_it_may_do_and_tokens_and_the_audit_log_work() {
    let server = Server::start();
    let admin = server.admin();
    let agent = FakeAgent::connect(&server, &admin, "lb-a", member("VI_WEB", "MASTER", 150));
    let client = agent.identity.id.clone();
    user(&server, &admin, "viewer1", "viewer-pw-1", "viewer");
    user(&server, &admin, "operator1", "operator-pw-1", "operator");
    let hook = server.post(
        "/api/v1/webhooks",
        Auth::Cookie(&admin),
        &json!({ "name": "pager", "enabled": false, "url": "http://127.0.0.1:9/hook", "minLevel": "error",
                 "bodyTemplate": "{\"text\": \"{{event.message}}\"}" })
        .to_string(),
    );
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let hook = hook.body["id"].as_str().unwrap().to_owned();
    let ends = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let silence = server.post(
        "/api/v1/silences",
        Auth::Cookie(&admin),
        &json!({ "matcher": { "kind": "keepalived.*" }, "endsAt": ends, "comment": "kernel update" })
            .to_string(),
    );
    assert_eq!(silence.status, 201, "{:?}", silence.body);
    // More than one page of audit entries (100), all newer than the users made above.
    for _ in 0..100 {
        assert_eq!(
            server
                .post("/api/v1/tokens", Auth::Cookie(&admin), "{}")
                .status,
            200
        );
    }

    let pages = vec![
        Page {
            path: "/clients".into(),
            ready: &["#client-list tbody tr"],
            admin: vec![
                "#add-host",
                "#registration-tokens",
                "#client-list button[data-action=refresh]",
            ],
            operator: vec![],
        },
        Page {
            path: format!("/clients/{client}"),
            ready: &["#instance-list"],
            admin: vec!["#refresh-reading", "#edit-client"],
            operator: vec!["#silence-open"],
        },
        Page {
            path: format!("/clients/{client}/edit"),
            ready: &["#client-form, #read-only"],
            admin: vec!["#save-client", "#delete-client"],
            operator: vec![],
        },
        Page {
            path: "/clients/add?mode=inbound".into(),
            ready: &["#token-form, #read-only"],
            admin: vec!["#create-token"],
            operator: vec![],
        },
        Page {
            path: "/tokens".into(),
            ready: &["#token-list, #read-only"],
            admin: vec!["#token-form", "#token-list button.danger"],
            operator: vec![],
        },
        Page {
            path: "/webhooks".into(),
            ready: &["#webhook-list"],
            admin: vec!["#new-webhook", "#webhook-list input[type=checkbox]:enabled"],
            operator: vec![],
        },
        Page {
            path: format!("/webhooks/{hook}"),
            ready: &["#webhook-form"],
            admin: vec![
                "#save-webhook",
                "#send-test",
                "#delete-webhook",
                "#webhook-form #f-url:enabled",
            ],
            operator: vec![],
        },
        Page {
            path: "/settings".into(),
            ready: &["#overrides", "form#heartbeat"],
            admin: vec![
                "#scheduler-activity button[type=submit]",
                "#scheduler-activity .run-now",
                "#scheduler-activity input:enabled",
                "#heartbeat button[type=submit]",
                "#overrides button[type=submit]",
                "#overrides select:enabled",
            ],
            operator: vec![],
        },
        Page {
            path: "/users".into(),
            ready: &["#user-list, #own-password"],
            admin: vec![
                "#create-user",
                "#user-list button.delete",
                "#api-tokens-link",
            ],
            operator: vec![],
        },
        Page {
            path: "/activity?level=info".into(),
            ready: &["#activity-list"],
            admin: vec!["#delete-all"],
            operator: vec![],
        },
        Page {
            path: "/silences".into(),
            ready: &[".silence-list"],
            admin: vec![],
            operator: vec!["#silence-by-kind", ".silence-list .end-silence"],
        },
        Page {
            path: "/api-tokens".into(),
            ready: &["#api-token-form, #read-only"],
            admin: vec!["#create-api-token"],
            operator: vec![],
        },
        Page {
            path: "/audit".into(),
            ready: &["#audit-list, #read-only"],
            admin: vec!["#audit-filters"],
            operator: vec![],
        },
    ];

    // The administrator: everything is there (the selectors are right).
    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clients");
    let labels = nav(&b);
    for l in ["Users", "Webhooks", "Audit", "Settings", "Silences"] {
        assert!(
            labels.iter().any(|x| x == l),
            "admin nav {labels:?} lacks {l}"
        );
    }
    assert!(!labels.iter().any(|x| x == "Account"), "{labels:?}");
    check_pages(&b, &server, "admin", &pages);

    // The viewer: none of it; reads settings; changes its own password.
    let v = Browser::start(1280, 900);
    login(&v, &server, "viewer1", "viewer-pw-1", "/clients");
    let labels = nav(&v);
    for l in ["Users", "Webhooks", "Audit"] {
        assert!(
            !labels.iter().any(|x| x == l),
            "viewer nav {labels:?} has {l}"
        );
    }
    assert!(labels.iter().any(|x| x == "Settings"), "{labels:?}");
    assert!(labels.iter().any(|x| x == "Account"), "{labels:?}");
    v.wait_text("#signed-in", "viewer");
    check_pages(&v, &server, "viewer", &pages);
    // Settings are read (the stored values are shown), not changed.
    v.goto(&server.url("/settings"));
    v.wait("#scheduler-activity input:disabled");
    v.wait_text("#read-only", "you can read the settings");
    v.screenshot("roles-viewer-settings");
    // Its own password: the only form on its account page.
    v.goto(&server.url("/users"));
    v.wait("#own-password");
    assert_eq!(
        count(&v, "#own-password #f-role, #own-password #f-auth_methods"),
        0
    );
    v.js("window.__noReload = 1", json!([]));
    v.type_into("#own-password #f-password", "viewer-pw-2");
    v.click("#own-password button[type=submit]");
    v.wait_text("#own-password .note", "You stay logged in");
    v.screenshot("roles-viewer-account");
    assert_eq!(server.login_answer("viewer1", "viewer-pw-2").status, 200);
    assert_eq!(server.login_answer("viewer1", "viewer-pw-1").status, 401);
    // Marking activity seen is the viewer's too.
    v.goto(&server.url("/activity?level=info"));
    v.wait("#activity-list li.unseen");
    v.click("#mark-all-seen");
    v.wait_js(
        "every shown event seen",
        "return document.querySelector('#activity-list') && !document.querySelector('#activity-list li.unseen')",
        json!([]),
    );
    assert_eq!(count(&v, ".form-error"), 0);
    drop(v);

    // The operator: a viewer that silences.
    let o = Browser::start(1280, 900);
    login(&o, &server, "operator1", "operator-pw-1", "/clients");
    let labels = nav(&o);
    assert!(
        !labels.iter().any(|x| x == "Users" || x == "Audit"),
        "{labels:?}"
    );
    check_pages(&o, &server, "operator", &pages);
    o.goto(&server.url(&format!("/clients/{client}")));
    o.click("#silence-open");
    o.type_into("#silence-comment", "disk swap");
    o.click("#silence-form button[data-preset='1h']");
    o.wait("#silenced-banner");
    o.wait_text("#silenced-banner", "disk swap");
    let silences = server.get("/api/v1/silences", Auth::Cookie(&admin)).body;
    assert!(
        silences
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["createdBy"] == "operator1" && s["matcher"]["clientId"] == client.as_str()),
        "{silences}"
    );
    drop(o);

    // The administrator makes an API token from the Users page: shown once.
    b.goto(&server.url("/users"));
    b.click("#api-tokens-link");
    b.wait("#api-token-form");
    b.type_into("#api-token-form #f-name", "ci-reader");
    let day = (chrono::Local::now() + chrono::Duration::days(30)).date_naive();
    b.set_field(
        "#api-token-form #f-expiresAt",
        &day.format("%Y-%m-%d").to_string(),
    );
    b.set_field("#api-token-form #f-role", "operator");
    b.click("#create-api-token");
    b.wait_text("#api-token-issued", "will not be shown again");
    let token = b
        .js(
            "return document.querySelector('#new-api-token').textContent",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_owned();
    assert!(token.starts_with("vmt_"), "{token}");
    b.screenshot("roles-api-token-issued");
    b.wait("#api-token-list tr[data-name='ci-reader']");
    let me = server.get("/api/v1/me", Auth::Bearer(&token));
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.body["role"], "operator");
    let listed = server.get("/api/v1/api-tokens", Auth::Cookie(&admin)).body;
    let ours = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ci-reader")
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    // The end of the chosen day in the browser's time zone.
    let expires =
        chrono::DateTime::parse_from_rfc3339(ours["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(
        expires.with_timezone(&chrono::Local).date_naive(),
        day,
        "{ours}"
    );
    assert_eq!(ours["createdBy"], "admin");
    let row = "#api-token-list tr[data-name='ci-reader']";
    b.wait_text(row, "Operator");
    b.wait_text(row, "admin");
    // Its first use shows as "last used".
    b.goto(&server.url("/api-tokens"));
    b.wait(row);
    assert!(
        !b.body_text().contains(&token),
        "the token is shown again after a reload"
    );
    assert_eq!(count(&b, "#new-api-token"), 0);
    assert!(
        !b.js(
            &format!(
                "return document.querySelector(\"{row} td[data-label='Last used']\").textContent"
            ),
            json!([])
        )
        .as_str()
        .unwrap()
        .contains("never"),
        "last use not shown"
    );
    // The same name again: the API's sentence beside the name.
    b.type_into("#api-token-form #f-name", "ci-reader");
    b.click("#create-api-token");
    b.wait_text(
        "[data-error-for=name]",
        "An API token with that name exists",
    );
    // A name with markup is text wherever it is shown.
    let odd = "<img src=x onerror=window.__xss=1>";
    b.set_field("#api-token-form #f-name", odd);
    b.click("#create-api-token");
    b.wait("#new-api-token");
    b.wait_text("#api-token-list", odd);
    assert_eq!(count(&b, "#api-token-list img, #api-token-issued img"), 0);
    b.click("#api-token-done");
    b.wait_js(
        "the new token's box to close",
        "return !document.querySelector('#new-api-token')",
        json!([]),
    );
    // Revoke, after the question.
    b.click(&format!("{row} button.revoke"));
    b.wait_text("dialog[open]", "Revoke ci-reader?");
    b.screenshot("roles-api-token-revoke");
    b.click("dialog[open] button.danger");
    b.wait_text("#api-tokens-status", "ci-reader revoked");
    b.wait_js(
        "the revoked token to leave the list",
        "return !document.querySelector(arguments[0])",
        json!([row]),
    );
    assert_eq!(server.get("/api/v1/me", Auth::Bearer(&token)).status, 401);

    // Roles on the Users page; the last administrator keeps the role. A second
    // administrator is demoted meanwhile (another tab): the API's sentence shows
    // beside the role, then the select offers the last administrator nothing else.
    user(&server, &admin, "admin2", "admin2-pw-1", "admin");
    let users = server.get("/api/v1/users", Auth::Cookie(&admin)).body;
    let id_of = |name: &str| {
        users
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["username"] == name)
            .unwrap()["id"]
            .clone()
    };
    b.goto(&server.url("/users"));
    b.wait_text("#user-list tr[data-user=viewer1] td.role", "Viewer");
    b.wait_text("#user-list tr[data-user=operator1] td.role", "Operator");
    b.click("#user-list tr[data-user=admin] button.edit");
    let own_role = "form[id^=edit-user] #f-role";
    b.wait(&format!("{own_role} option[value=viewer]:enabled"));
    let demoted = server.put(
        &format!("/api/v1/users/{}", id_of("admin2")),
        Auth::Cookie(&admin),
        r#"{"role": "viewer"}"#,
    );
    assert_eq!(demoted.status, 200, "{:?}", demoted.body);
    b.set_field(own_role, "viewer");
    b.click("form[id^=edit-user] button[type=submit]");
    b.wait_text(
        "form[id^=edit-user] [data-error-for=role]",
        "Cannot demote the last administrator",
    );
    // Closed first: the refused change is unsaved typing, which a reload asks about.
    b.click("form[id^=edit-user] button[type=button]");
    b.goto(&server.url("/users"));
    b.wait_text("#user-list tr[data-user=admin2] td.role", "Viewer");
    b.click("#user-list tr[data-user=admin] button.edit");
    b.wait(&format!("{own_role} option[value=viewer]:disabled"));
    b.wait_text(
        "form[id^=edit-user] .field",
        "The last administrator cannot be demoted.",
    );
    // A new user's role, chosen in the form.
    b.type_into("#create-user #f-username", "operator2");
    b.type_into("#create-user #f-password", "operator2-pw-1");
    b.set_field("#create-user #f-role", "operator");
    b.click("#create-user button[type=submit]");
    b.wait_text("#create-user-status", "created");
    b.wait_text("#user-list tr[data-user=operator2] td.role", "Operator");

    // The audit page: those actions, newest first.
    b.click("nav a[href='/audit']");
    b.wait("#audit-list");
    let rows = "return [...document.querySelectorAll('#audit-list tbody tr')].map(r => ({ id: Number(r.dataset.id), action: r.dataset.action, text: r.textContent }))";
    let shown = b.js(rows, json!([])).as_array().unwrap().clone();
    assert_eq!(shown.len(), 100, "one page of 100");
    let ids: Vec<i64> = shown.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let has = |rows: &[Value], action: &str, text: &str| {
        rows.iter()
            .any(|r| r["action"] == action && r["text"].as_str().unwrap().contains(text))
    };
    assert!(has(&shown, "api_token.deleted", "ci-reader"), "{shown:?}");
    assert!(has(&shown, "api_token.created", "ci-reader"), "{shown:?}");
    assert!(has(&shown, "api_token.created", odd), "{shown:?}");
    assert!(has(&shown, "silence.created", "operator1"), "{shown:?}");
    assert!(has(&shown, "user.updated", "viewer1"), "{shown:?}");
    assert!(has(&shown, "login.succeeded", "operator1"), "{shown:?}");
    assert!(has(&shown, "user.updated", "admin2"), "{shown:?}");
    assert!(has(&shown, "user.created", "operator2"), "{shown:?}");
    assert_eq!(count(&b, "#audit-list img"), 0);
    assert_eq!(
        b.js("return window.__xss === undefined", json!([])),
        json!(true)
    );
    // The users were made before a hundred registration tokens: on the next page.
    assert!(!has(&shown, "user.created", "viewer1"), "{shown:?}");
    b.screenshot("roles-audit");
    b.click("#audit-older");
    b.wait_js(
        "older entries below the first page",
        "return document.querySelectorAll('#audit-list tbody tr').length > 100",
        json!([]),
    );
    let all = b.js(rows, json!([])).as_array().unwrap().clone();
    let ids: Vec<i64> = all.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] > w[1]),
        "newest first, no repeat: {ids:?}"
    );
    assert!(has(&all, "user.created", "viewer1"), "{all:?}");
    assert!(has(&all, "user.created", "operator1"), "{all:?}");
    assert_eq!(
        all.len(),
        audit(&server, &admin, "").len().min(200),
        "the page shows what the API lists"
    );
    // Filters: by actor, then by action too; kept in the URL.
    b.type_into("#audit-actor", "viewer1");
    b.wait_js(
        "only the viewer's entries",
        "const r = [...document.querySelectorAll('#audit-list tbody tr td[data-col=actor]')];
         return r.length > 0 && r.every(td => td.textContent === 'viewer1')
           && new URLSearchParams(location.search).get('actor') === 'viewer1'",
        json!([]),
    );
    let expected = audit(&server, &admin, "&actor=viewer1").len();
    assert_eq!(count(&b, "#audit-list tbody tr") as usize, expected);
    b.set_field("#audit-actor", "");
    b.set_field("#audit-action", "api_token.deleted");
    b.wait_js(
        "only the revocation",
        "const r = [...document.querySelectorAll('#audit-list tbody tr')];
         return r.length === 1 && r[0].dataset.action === 'api_token.deleted' && r[0].textContent.includes('ci-reader')",
        json!([]),
    );
    // A range that ended before anything happened: nothing.
    b.set_field("#audit-action", "");
    b.set_field("#audit-to", "2001-01-01T00:00");
    b.wait("#audit-empty");
    b.click("#audit-clear");
    b.wait("#audit-list");
    drop(b);

    // Both new pages fit a phone: nothing scrolls sideways at 375 px.
    let phone = Browser::start(375, 740);
    login(&phone, &server, "admin", ADMIN_PASSWORD, "/api-tokens");
    phone.wait("#api-token-list");
    assert_eq!(sideways(&phone), json!([]), "/api-tokens at 375 px");
    phone.goto(&server.url("/audit"));
    phone.wait("#audit-list");
    assert_eq!(sideways(&phone), json!([]), "/audit at 375 px");
    phone.screenshot("roles-phone-audit");
    drop(agent);
}
