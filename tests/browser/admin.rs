//! The administration views in headless Chromium, against the real
//! server and, for adding hosts, the real `vrrp-agent` binary on a free port (an
//! empty process table: no keepalived, which these views do not need).

use crate::harness::{Auth, Server, ADMIN_PASSWORD};
use crate::login;
use crate::webdriver::{Browser, WAIT};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// [`vrrp_test_support::wait_for`] for as long as a wait for the page lasts.
pub fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    vrrp_test_support::wait_for(what, WAIT.as_secs(), f)
}

/// The real agent binary, built beside the server's (`cargo build --workspace
/// --bins`, as scripts/test.sh does), unregistered and without `serverUrl`: it
/// offers both its register page (inbound) and `/ws/register` (outbound).
pub struct RealAgent {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl RealAgent {
    pub fn start() -> RealAgent {
        Self::start_with("")
    }

    /// With `extra` appended to its config file (YAML, top-level keys).
    pub fn start_with(extra: &str) -> RealAgent {
        let bin = Path::new(env!("CARGO_BIN_EXE_vrrp-monitor")).with_file_name("vrrp-agent");
        assert!(
            bin.exists(),
            "{} is missing: run `cargo build --workspace --bins` first (scripts/test.sh does)",
            bin.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join("proc");
        std::fs::create_dir_all(proc_dir.join("1")).unwrap();
        std::fs::write(proc_dir.join("1/comm"), "init\n").unwrap();
        let cfg = dir.path().join("config.yaml");
        std::fs::write(&cfg, format!("keepalived:\n  pollInterval: 3600\n{extra}")).unwrap();
        let port = crate::harness::free_port();
        let child = Command::new(bin)
            .env_clear()
            .env("SVC_CLIENT_CONFIG", &cfg)
            .env("SVC_CLIENT_DATA_DIR", dir.path().join("data"))
            .env("SVC_PROC_DIR", &proc_dir)
            .env("SVC_CLIENT_PORT", port.to_string())
            .env("LOG_LEVEL", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("stderr.log")).unwrap())
            .spawn()
            .expect("vrrp-agent starts");
        RealAgent { child, port, dir }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// The newest setup PIN the agent printed.
    pub fn pin(&self) -> String {
        wait_for("the agent's setup PIN", || {
            self.log()
                .lines()
                .filter_map(|l| l.split("Setup PIN: ").nth(1))
                .map(|p| p.trim().chars().take(9).collect::<String>())
                .next_back()
        })
    }

    pub fn identity(&self) -> PathBuf {
        self.dir.path().join("data/identity.json")
    }
}

impl Drop for RealAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A webhook receiver on a free port: answers every request 200 with `answer`
/// and hands the request's body to the test.
struct Receiver {
    port: u16,
    bodies: mpsc::Receiver<String>,
}

impl Receiver {
    fn start(answer: &'static str) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, bodies) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        Receiver { port, bodies }
    }
}

fn clients(server: &Server, admin: &str) -> Vec<Value> {
    server
        .get("/api/v1/clients", Auth::Cookie(admin))
        .body
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn text_of(b: &Browser, css: &str) -> String {
    b.js(
        "return document.querySelector(arguments[0])?.textContent || ''",
        json!([css]),
    )
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

fn value_of(b: &Browser, css: &str) -> String {
    b.js(
        "return document.querySelector(arguments[0])?.value ?? ''",
        json!([css]),
    )
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn an_inbound_host_is_added_with_a_token_from_the_wizard_and_the_agents_own_page() {
    let server = Server::start();
    let admin = server.admin();
    let agent = RealAgent::start();
    let pin = agent.pin();

    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clients");
    b.click("#add-host");
    b.click("#mode-inbound");
    // A bad allowed address: the API's own text beside the field, the typing kept.
    b.type_into("#f-displayName", "edge-7");
    b.type_into("#f-inboundAllowedIp", "10.0.0.300");
    b.click("#create-token");
    b.wait_text(
        "[data-error-for=inboundAllowedIp]",
        "inboundAllowedIp: must be an IPv4 address or CIDR network",
    );
    assert_eq!(value_of(&b, "#f-displayName"), "edge-7");
    b.set_field("#f-inboundAllowedIp", "");
    b.click("#create-token");
    b.wait("#new-token");
    let token = text_of(&b, "#new-token");
    assert_eq!(token.len(), 32, "the raw token is shown once: {token:?}");
    b.wait_text("#token-expiry", "Valid for");
    assert!(
        text_of(&b, "#token-expiry").contains("29:")
            || text_of(&b, "#token-expiry").contains("30:")
    );
    assert_eq!(
        text_of(&b, "#server-url"),
        server.url("").trim_end_matches('/')
    );
    b.wait_text("#wait-client", "Waiting for the agent to register");
    // Copy: to the clipboard, or (no clipboard for this page) selected for Ctrl+C.
    b.click("#copy-token");
    b.wait_js(
        "the token copied or selected",
        "const s = document.querySelector('.copy [role=status]')?.textContent || '';
         return s === 'Copied.' || (s.startsWith('Selected') && getSelection().toString() === arguments[0])",
        json!([token]),
    );
    b.screenshot("add-host-inbound-token");
    b.js("window.__noReload = 1", json!([]));

    // On the host: the agent's own page, with the server URL, the token and the PIN.
    let host = Browser::start(1024, 768);
    host.goto(&format!("http://127.0.0.1:{}/", agent.port));
    host.wait("form#f input#token");
    host.type_into("#url", server.url("").trim_end_matches('/'));
    host.type_into("#token", &token);
    host.type_into("#pin", &pin);
    host.click("button[type=submit]");
    host.wait_js(
        "the agent's page to report the registration",
        "return document.getElementById('out').className === 'ok' || document.getElementById('out').className === 'warn'",
        json!([]),
    );

    // The wizard sees the new client register and connect, live.
    b.wait_text("#client-connected", "edge-7");
    assert_eq!(b.js("return window.__noReload", json!([])), json!(1));
    let added = clients(&server, &admin);
    assert_eq!(added.len(), 1);
    let id = added[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(added[0]["connectionMode"], "inbound");
    assert_eq!(added[0]["status"], "online");
    assert!(agent.identity().is_file());
    // Then it is named and given its site.
    b.set_field("#name-site #f-site", "dc-9");
    b.click("#name-site button[type=submit]");
    b.wait("#name-site-saved");
    let c = clients(&server, &admin);
    assert_eq!(
        (c[0]["displayName"].as_str(), c[0]["site"].as_str()),
        (Some("edge-7"), Some("dc-9"))
    );
    b.screenshot("add-host-inbound-connected");

    // The token list: this token used, naming edge-7; another made and deleted.
    b.goto(&server.url("/tokens"));
    b.wait_text("#token-list tbody tr", "edge-7");
    b.wait_text("#token-list tbody tr .badge", "used");
    b.type_into("#token-form #f-inboundAllowedIp", "192.0.2.0/33");
    b.click("#token-form button[type=submit]");
    b.wait_text(
        "#token-form [data-error-for=inboundAllowedIp]",
        "inboundAllowedIp: must be an IPv4 address or CIDR network",
    );
    b.set_field("#token-form #f-inboundAllowedIp", "192.0.2.0/24");
    b.click("#token-form button[type=submit]");
    b.wait("#token-issued #new-token");
    b.wait_text("#token-list", "192.0.2.0/24");
    let tokens = |server: &Server| {
        server
            .get("/api/v1/tokens", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(tokens(&server), 2);
    // Delete asks first; Cancel keeps the token.
    let delete = "[...document.querySelectorAll('#token-list tbody tr')].find(r => r.textContent.includes('192.0.2.0/24')).querySelector('button').click()";
    b.js(delete, json!([]));
    b.wait_text("#token-delete[open]", "can no longer register");
    assert_eq!(tokens(&server), 2, "deleted before the dialog was answered");
    b.click("#token-delete[open] button.cancel");
    b.wait_js(
        "the dialog to close",
        "return !document.querySelector('dialog[open]')",
        json!([]),
    );
    assert_eq!(tokens(&server), 2, "a cancelled delete deleted");
    assert_eq!(
        b.js(
            "return document.querySelectorAll('#token-list tbody tr').length",
            json!([])
        ),
        json!(2)
    );
    b.js(delete, json!([]));
    b.click("#token-delete[open] button.confirm");
    b.wait_js(
        "the deleted token to leave the list",
        "return document.querySelectorAll('#token-list tbody tr').length === 1",
        json!([]),
    );
    assert_eq!(tokens(&server), 1);

    // The client editor: a warning when the allowed address would refuse the
    // address the agent last connected from; the API's text for a bad one.
    b.goto(&server.url(&format!("/clients/{id}/edit")));
    b.wait("#client-form");
    b.set_field("#f-inboundAllowedIp", "10.0.0.0/8");
    b.wait_text("#allowed-warning", "127.0.0.1");
    b.set_field("#f-inboundAllowedIp", "127.0.0.0/8");
    b.wait_js(
        "the warning to go",
        "return !document.getElementById('allowed-warning')",
        json!([]),
    );
    b.set_field("#f-inboundAllowedIp", "not-an-address");
    b.set_field("#f-site", "dc-10");
    b.click("#save-client");
    b.wait_text(
        "[data-error-for=inboundAllowedIp]",
        "inboundAllowedIp: must be an IPv4 address or CIDR network",
    );
    assert_eq!(
        value_of(&b, "#f-site"),
        "dc-10",
        "the form keeps what was typed"
    );
    assert_eq!(clients(&server, &admin)[0]["site"], "dc-9", "nothing saved");
    b.set_field("#f-inboundAllowedIp", "127.0.0.1");
    b.click("#save-client");
    b.wait_text("#client-status", "Saved");
    let c = clients(&server, &admin);
    assert_eq!(
        (c[0]["site"].as_str(), c[0]["inboundAllowedIp"].as_str()),
        (Some("dc-10"), Some("127.0.0.1"))
    );
    b.screenshot("client-editor");
    // Delete says what goes with it, and asks first.
    b.click("#delete-client");
    b.wait_text("dialog[open]", "removed");
    b.click("dialog[open] button.danger");
    b.wait_js(
        "the clients list",
        "return location.pathname === '/clients'",
        json!([]),
    );
    assert!(clients(&server, &admin).is_empty());
    drop(host);
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn an_outbound_host_is_added_through_the_wizard_and_a_wrong_pin_is_explained() {
    let server = Server::start();
    let admin = server.admin();
    let agent = RealAgent::start();
    let pin = agent.pin();

    let b = Browser::start(1280, 900);
    login(
        &b,
        &server,
        "admin",
        ADMIN_PASSWORD,
        "/clients/add?mode=outbound",
    );
    b.wait("#outbound-form");
    // Refused before any connection: the API's text beside the address field.
    b.type_into("#f-outboundTargetAddress", "http://127.0.0.1/x");
    b.type_into("#f-registrationSecret", "AAAA-AAAA");
    b.click("#add-outbound");
    b.wait("[data-error-for=outboundTargetAddress]");
    let refused = text_of(&b, "[data-error-for=outboundTargetAddress]");
    assert!(refused.starts_with("outboundTargetAddress: "), "{refused}");
    // A wrong PIN: the server's reason and what to do.
    b.set_field(
        "#f-outboundTargetAddress",
        &format!("127.0.0.1:{}", agent.port),
    );
    b.set_field("#f-hostname", "lb-out");
    b.click("#add-outbound");
    b.wait_text(
        "#outbound-error",
        "Could not establish connection to client.",
    );
    b.wait_text("#outbound-error", "Invalid secret");
    b.wait_text(
        "#outbound-help",
        "After 5 wrong attempts the agent replaces its PIN",
    );
    assert_eq!(value_of(&b, "#f-registrationSecret"), "AAAA-AAAA", "kept");
    assert!(clients(&server, &admin).is_empty());
    b.screenshot("add-host-outbound-wrong-pin");
    // The right PIN: added, and online once the server dialled it.
    b.set_field("#f-registrationSecret", &pin);
    b.click("#add-outbound");
    b.wait_text("#outbound-added", "is online");
    let c = clients(&server, &admin);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["connectionMode"], "outbound");
    assert_eq!(c[0]["hostname"], "lb-out");
    assert_eq!(
        c[0]["outboundTargetAddress"],
        format!("127.0.0.1:{}", agent.port)
    );
    // Registering again is refused by the agent: identity present, explained.
    b.click("#add-outbound");
    b.wait_text("#outbound-error", "Already registered");
    b.wait_text("#outbound-help", "delete identity.json");
    // The editor reconnects an outbound client.
    b.goto(&server.url(&format!("/clients/{}/edit", c[0]["id"].as_str().unwrap())));
    b.click("#reconnect");
    b.wait_text("#client-status", "Dialling 127.0.0.1:");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn a_webhook_from_the_slack_template_previews_tests_and_locates_a_broken_template() {
    let server = Server::start();
    let admin = server.admin();
    let receiver = Receiver::start(r#"{"answer":"received by the browser test"}"#);
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/webhooks");
    b.wait_text("#main", "No webhooks yet");
    b.click("#new-webhook");
    b.click("button[data-template=slack]");
    b.wait("#f-bodyTemplate");
    assert!(value_of(&b, "#f-bodyTemplate").contains("\"blocks\""));
    b.set_field("#f-name", "team chat");
    let url = format!("http://127.0.0.1:{}/hook", receiver.port);
    b.set_field("#f-url", &url);
    // The preview: rendered by the server for a sample event, as typed.
    b.wait_text("#preview-kind", "vrrp.state_changed");
    b.wait_text("#preview-body", "\"blocks\"");
    b.set_field("#sample-kind", "vrrp.incident_opened");
    b.wait_text("#preview-body", "Incident opened for VRID 51");
    b.wait_text("#preview-body", "*lb-1*: MASTER");
    b.wait_text("#preview-url", &url);
    b.screenshot("webhook-preview");
    // The template language page it links to is there.
    let docs = b.js(
        "const a = document.getElementById('template-docs');
         return fetch(a.href).then(async r => [new URL(a.href).pathname, r.status, (await r.text()).slice(0, 20)])",
        json!([]),
    );
    assert_eq!(
        docs,
        json!(["/docs/webhook-templates", 200, "# Webhook templates\n"])
    );

    // Send test: the receiver's answer is shown.
    b.click("#send-test");
    b.wait_text("#test-result", "Delivered");
    b.wait_text("#test-result", "answered 200");
    b.wait_text("#test-response", "received by the browser test");
    let sent: Value =
        serde_json::from_str(&receiver.bodies.recv_timeout(WAIT).expect("a test delivery"))
            .unwrap();
    assert!(sent["blocks"].is_array(), "{sent}");

    // A broken template: the located error in the preview and beside the field,
    // the same text a save answers with; the save keeps what was typed.
    let broken = r#"{"text": "{{event.message | nosuch}}"}"#;
    b.set_field("#f-bodyTemplate", broken);
    b.wait("#preview-error");
    let expected = server
        .post(
            "/api/v1/webhooks",
            Auth::Cookie(&admin),
            &json!({ "name": "x", "url": url, "bodyTemplate": broken }).to_string(),
        )
        .body["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(expected.starts_with("bodyTemplate: text"), "{expected}");
    b.wait_text("#preview-error", &expected);
    b.wait_text("[data-error-for=bodyTemplate]", &expected);
    b.screenshot("webhook-broken-template");
    b.click("#save-webhook");
    b.wait_text("[data-error-for=bodyTemplate]", &expected);
    assert_eq!(value_of(&b, "#f-bodyTemplate"), broken);
    assert_eq!(value_of(&b, "#f-name"), "team chat");
    // A header the API refuses: its text beside the headers field.
    b.set_field("#f-headers", "Bad Header: x");
    b.click("#save-webhook");
    b.wait_text(
        "[data-error-for=headers]",
        "headers.Bad Header: is not a header name",
    );
    b.set_field("#f-headers", "X-Team: {{webhook.name}}");
    // A timeout out of range: the API's text beside it.
    b.set_field("#f-bodyTemplate", r#"{"text": "{{event.message}}"}"#);
    b.set_field("#f-timeoutMs", "500");
    b.click("#save-webhook");
    b.wait_text(
        "[data-error-for=timeoutMs]",
        "timeoutMs: must be a whole number from 1000 to 60000",
    );
    b.set_field("#f-timeoutMs", "5000");
    b.click("#save-webhook");
    b.wait_js(
        "the saved webhook's page",
        "return /^\\/webhooks\\/[0-9a-f-]{36}$/.test(location.pathname)",
        json!([]),
    );
    let hooks = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
    assert_eq!(hooks[0]["name"], "team chat");
    assert_eq!(hooks[0]["timeoutMs"], 5000);
    assert_eq!(hooks[0]["url"], url.as_str());
    assert_eq!(hooks[0]["headers"], json!({ "X-Team": "{{webhook.name}}" }));
    // A real delivery: an agent reports a warning; the list shows its outcome.
    let agent = crate::FakeAgent::connect(
        &server,
        &admin,
        "lb-1",
        crate::member("VI_1", "MASTER", 100),
    );
    agent.events(vec![
        json!({ "id": "w-1", "occurredAt": "2026-11-21T09:00:00.000Z",
        "kind": "keepalived.stopped", "level": "warning", "correlationId": null,
        "subject": {}, "data": { "pid": 42, "version": "2.2.7" } }),
    ]);
    let delivered: Value =
        serde_json::from_str(&receiver.bodies.recv_timeout(WAIT).expect("a delivery")).unwrap();
    assert!(
        delivered["text"].as_str().unwrap().contains("lb-1"),
        "{delivered}"
    );
    wait_for("the delivery's outcome to be stored", || {
        let hooks = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
        (hooks[0]["lastStatus"] == 200).then_some(())
    });
    // The list, with the last delivery and the enabled switch.
    b.click("a[href='/webhooks']");
    b.wait_text("#webhook-list", "team chat");
    b.wait_text("#webhook-list td .badge.ok", "200");
    b.click("#webhook-list input[type=checkbox]");
    wait_for("the webhook to be disabled", || {
        (server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body[0]["enabled"] == false)
            .then_some(())
    });
    // Refused requests log as resources that failed to load; nothing else may.
    let errors: Vec<String> = b
        .console()
        .into_iter()
        .filter(|l| l.contains("SEVERE") && !l.contains("Failed to load resource"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn a_retention_change_and_a_cleanup_run_show_in_the_scheduler_status_live() {
    let server = Server::start();
    let admin = server.admin();
    let b = Browser::start(1280, 1000);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/settings");
    b.wait("#scheduler-activity");
    b.js("window.__noReload = 1", json!([]));
    // A refused value: the API's text beside the field, the value kept.
    b.set_field("#scheduler-activity #f-notification_retention_days", "ten");
    b.click("#scheduler-activity button[type=submit]");
    b.wait_text(
        "[data-error-for=notification_retention_days]",
        "notification_retention_days: must be a non-negative whole number",
    );
    assert_eq!(
        value_of(&b, "#scheduler-activity #f-notification_retention_days"),
        "ten"
    );
    b.set_field("#scheduler-activity #f-notification_retention_days", "30");
    b.click("#scheduler-activity button[type=submit]");
    b.wait_text("#scheduler-activity .note", "Saved");
    let settings = server
        .get("/api/v1/settings/cleanup", Auth::Cookie(&admin))
        .body;
    assert_eq!(settings["notification_retention_days"], "30");

    // Run now: the status turns to a manual run, pushed over the dashboard socket.
    assert!(!text_of(&b, "#scheduler-activity .scheduler-status").contains("run by hand"));
    b.click("#scheduler-activity .run-now");
    b.wait_text("#scheduler-activity .scheduler-status", "run by hand");
    b.wait_text("#scheduler-activity .scheduler-status", "success");
    b.wait_text("#scheduler-activity .note", "Ran: removed");
    let status = server
        .get("/api/v1/settings/scheduler-status", Auth::Cookie(&admin))
        .body;
    assert_eq!(
        status["schedulers"]["notification-cleanup"]["lastRun"]["trigger"],
        "manual"
    );
    // A run made elsewhere (the API, not this page) shows here too: only the socket can tell.
    let ran = server.post(
        "/api/v1/settings/cleanup/invalid-tokens",
        Auth::Cookie(&admin),
        "",
    );
    assert!(ran.status < 300);
    b.wait_text("#scheduler-tokens .scheduler-status", "run by hand");
    assert_eq!(b.js("return window.__noReload", json!([])), json!(1));
    b.screenshot("settings-after-run");

    // Level overrides: every kind listed with its own level and the override
    // beside it; `none` is not offered for the incident kinds.
    let row = |kind: &str| {
        b.js(
            "const r = document.querySelector(`#override-table tr[data-kind='${arguments[0]}']`);
             return r && [r.children[1].textContent, r.querySelector('select').value]",
            json!([kind]),
        )
    };
    assert_eq!(row("keepalived.stopped"), json!(["warning", ""]));
    assert_eq!(row("client.connected"), json!(["trace", ""]));
    assert_eq!(row("vrrp.incident_resolved"), json!(["info", ""]));
    assert_eq!(
        b.js(
            "return [...document.querySelectorAll(\"#override-table tr[data-kind='vrrp.incident_opened'] option\")].find(o => o.textContent === 'none').disabled",
            json!([])
        ),
        json!(true)
    );
    b.set_field(
        "#override-table tr[data-kind='client.connected'] select.level",
        "none",
    );
    b.click("#overrides button[type=submit]");
    b.wait_text("#overrides .note", "Saved");
    let settings = server
        .get("/api/v1/settings/cleanup", Auth::Cookie(&admin))
        .body;
    assert_eq!(
        settings["activity_level_overrides"],
        "client.connected=none"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn users_are_created_and_deleted_and_an_own_password_change_keeps_the_session() {
    let server = Server::start();
    let admin = server.admin();
    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/users");
    b.wait_text("#user-list", "admin");
    b.wait_text(
        "#user-list tr[data-user=admin] .guard",
        "You cannot delete yourself.",
    );
    // Create a user.
    b.type_into("#create-user #f-username", "operator");
    b.type_into("#create-user #f-password", "operator-pw-1");
    b.click("#create-user button[type=submit]");
    b.wait_text("#create-user-status", "created");
    b.wait("#user-list tr[data-user=operator]");
    // Again: refused with the API's text beside the username, the form kept.
    b.type_into("#create-user #f-username", "operator");
    b.type_into("#create-user #f-password", "another-pw");
    b.click("#create-user button[type=submit]");
    b.wait_text("[data-error-for=username]", "Username already exists");
    assert_eq!(value_of(&b, "#create-user #f-username"), "operator");

    // A single-sign-on user needs no password; giving them password login
    // without one is refused with the API's sentence, beside the password field.
    b.set_field("#create-user #f-auth_methods", "oidc");
    b.wait_js(
        "the password field to go for single sign-on",
        "return !document.querySelector('#create-user #f-password')",
        json!([]),
    );
    b.set_field("#create-user #f-username", "sso-user");
    b.click("#create-user button[type=submit]");
    b.wait("#user-list tr[data-user=sso-user]");
    b.click("#user-list tr[data-user=sso-user] button.edit");
    b.set_field("form[id^=edit-user] #f-auth_methods", "local");
    b.click("form[id^=edit-user] button[type=submit]");
    b.wait_text(
        "form[id^=edit-user] [data-error-for=password]",
        "A password is required for local authentication",
    );
    b.set_field("form[id^=edit-user] #f-password", "sso-user-pw-1");
    b.click("form[id^=edit-user] button[type=submit]");
    b.wait_text("form[id^=edit-user] .note", "sessions ended");
    assert!(server.login_answer("sso-user", "sso-user-pw-1").status < 300);
    b.click("form[id^=edit-user] button[type=button]");

    // The new user logs in elsewhere; deleting them sends that tab to login.
    let other = Browser::start(1024, 768);
    login(&other, &server, "operator", "operator-pw-1", "/clusters");
    b.click("#user-list tr[data-user=operator] button.delete");
    b.wait_text("dialog[open]", "login page");
    b.click("dialog[open] button.danger");
    b.wait_text("#users-status", "operator deleted");
    other.wait_js(
        "the deleted user's tab on the login page",
        "return location.pathname === '/login' && !!document.querySelector('form input[name=username]')",
        json!([]),
    );
    b.screenshot("users");

    // Own password: the tab stays logged in and live (4002, then a reconnect).
    b.js("window.__noReload = 1", json!([]));
    b.click("#user-list tr[data-user=admin] button.edit");
    b.type_into("form[id^=edit-user] #f-password", "a-new-admin-pw");
    b.click("form[id^=edit-user] button[type=submit]");
    b.wait_text("form[id^=edit-user] .note", "You stay logged in");
    // The server closed this tab's socket (4002, the old cookie is void);
    // messages reach the tab again, so it reconnected with the fresh cookie.
    let fresh = server.login("admin", "a-new-admin-pw");
    let before = b.js("return window.vrrpLive.messages", json!([]));
    wait_for(
        "a broadcast to reach the tab after the password change",
        || {
            let ran = server.post(
                "/api/v1/settings/cleanup/notifications",
                Auth::Cookie(&fresh),
                "",
            );
            assert!(ran.status < 300);
            std::thread::sleep(Duration::from_millis(200));
            (b.js("return window.vrrpLive.messages", json!([])) != before).then_some(())
        },
    );
    b.wait_text("#live-indicator", "Live");
    assert_eq!(b.js("return window.__noReload", json!([])), json!(1));
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&admin)).status,
        401,
        "the old session ended"
    );
    b.goto(&server.url("/users"));
    b.wait_text("#user-list", "admin");
    b.wait_text("#live-indicator", "Live");
    assert!(!b.url().contains("/login"));
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn the_administration_views_fit_a_phone() {
    let server = Server::start();
    let b = Browser::start(375, 740);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/");
    // The administration views load when first opened, not with the overview.
    let fetched = "return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname).filter(p => p.startsWith('/views/'))";
    let views = b.js(fetched, json!([]));
    assert!(
        views
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "/views/overview.js"),
        "{views}"
    );
    assert!(
        !views
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "/views/settings.js" || v == "/views/webhook-edit.js"),
        "{views}"
    );
    // At phone width the navigation sits behind the menu button; the header is one row.
    let header = b.js(
        "return document.querySelector('header.top').getBoundingClientRect().height",
        json!([]),
    );
    assert!(header.as_f64().unwrap() < 60.0, "header {header} px high");
    b.click("#menu-button");
    b.click("nav a[href='/settings']");
    b.wait("#scheduler-activity");
    assert!(b
        .js(fetched, json!([]))
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v == "/views/settings.js"));
    let pages = [
        ("/settings", "#scheduler-activity"),
        ("/users", "#user-list"),
        ("/webhooks/new", "button[data-template=pagerduty]"),
        ("/tokens", "#token-form"),
        ("/clients/add?mode=outbound", "#outbound-form"),
    ];
    for (path, ready) in pages {
        b.goto(&server.url(path));
        b.wait(ready);
        assert_eq!(wider_than_the_screen(&b), json!([]), "{path} at 375 px");
    }
    // The editor with a template and its preview, and the inbound steps with a token.
    b.goto(&server.url("/webhooks/new"));
    b.click("button[data-template=pagerduty]");
    b.wait("#preview-body");
    assert_eq!(wider_than_the_screen(&b), json!([]), "webhook editor");
    b.screenshot("phone-webhook-editor");
    b.goto(&server.url("/clients/add?mode=inbound"));
    b.click("#create-token");
    b.wait("#new-token");
    assert_eq!(wider_than_the_screen(&b), json!([]), "inbound steps");
    b.screenshot("phone-add-host");
}

/// Elements reaching past the window's right edge (outside scrolling boxes),
/// named by tag, id and class; empty when the page does not scroll sideways.
fn wider_than_the_screen(b: &Browser) -> Value {
    b.js(
        "if (document.documentElement.scrollWidth <= window.innerWidth) return [];
         const scrolls = (e) => { for (let p = e.parentElement; p; p = p.parentElement) {
           const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; } return false; };
         return [...document.querySelectorAll('body *')]
           .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !scrolls(e))
           .slice(0, 8).map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`);",
        json!([]),
    )
}
