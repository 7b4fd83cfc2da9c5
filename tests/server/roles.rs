//! Roles, API tokens and the audit log, against the real server: the role walk
//! over the server's own OpenAPI description, the token rules, one audit entry
//! per change and no secret in the audit table or the log.

use crate::harness::*;
use serde_json::{json, Value};
use std::cell::Cell;
use vrrp_monitor::clock::Clock;

/// A user of `role` created by the administrator; returns its session token and id.
fn user(server: &Server, admin: &str, name: &str, role: &str) -> (String, i64) {
    let session = server.user(admin, name, role);
    let me = server.get("/api/v1/me", Auth::Cookie(&session));
    assert_eq!(me.body["role"], role);
    assert_eq!(me.body["via"], "session");
    (session, me.body["id"].as_i64().unwrap())
}

fn api_token(server: &Server, admin: &str, name: &str, role: &str) -> String {
    let a = server.post(
        "/api/v1/api-tokens",
        Auth::Cookie(admin),
        &json!({ "name": name, "role": role }).to_string(),
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    a.body["token"].as_str().unwrap().to_owned()
}

/// The description's path with every `{param}` filled by an id that names nothing.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "999999" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn every_change_in_the_description_is_refused_below_its_role() {
    let server = Server::start();
    let admin = server.admin();
    let (viewer, _) = user(&server, &admin, "vera", "viewer");
    let (operator, _) = user(&server, &admin, "otto", "operator");
    let viewer_token = api_token(&server, &admin, "viewer-script", "viewer");
    let operator_token = api_token(&server, &admin, "operator-script", "operator");
    let admin_token = api_token(&server, &admin, "admin-script", "admin");
    let doc = server.get("/api/openapi.json", Auth::None);
    assert_eq!(doc.status, 200);
    let paths = doc.body["paths"].as_object().expect("paths");
    let mut walked = 0;
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let method = method.to_ascii_uppercase();
            if !["POST", "PUT", "PATCH", "DELETE"].contains(&method.as_str()) {
                continue;
            }
            let role = op["x-role"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path}: x-role"));
            if role == "public" {
                continue;
            }
            walked += 1;
            let url = concrete(path);
            let example = op["requestBody"]["content"]["application/json"]["example"].clone();
            let body = (!example.is_null()).then(|| example.to_string());
            let call = |auth| server.request(&method, &url, auth, &[], body.as_deref());
            // A viewer changes nothing but its own password and its seen-marks;
            // the ids here name nobody, so only the seen-marks pass.
            let viewer_may = method == "POST" && path == "/api/v1/activity/seen";
            for (who, auth) in [
                ("viewer session", Auth::Cookie(&viewer)),
                ("viewer token", Auth::Bearer(&viewer_token)),
            ] {
                let a = call(auth);
                if viewer_may {
                    assert_ne!(a.status, 403, "{who}: {method} {path}: {:?}", a.body);
                } else {
                    assert_eq!(a.status, 403, "{who}: {method} {path}: {:?}", a.body);
                    assert!(
                        a.error().starts_with("role: "),
                        "{method} {path}: {:?}",
                        a.body
                    );
                }
            }
            for (who, auth) in [
                ("operator session", Auth::Cookie(&operator)),
                ("operator token", Auth::Bearer(&operator_token)),
            ] {
                let a = call(auth);
                if role == "admin" {
                    assert_eq!(a.status, 403, "{who}: {method} {path}: {:?}", a.body);
                } else if !path.starts_with("/api/v1/users/") {
                    assert_ne!(a.status, 403, "{who}: {method} {path}: {:?}", a.body);
                }
            }
            // The administrator passes the role check; with the description's
            // example it is answered without a server error. (A session: API
            // tokens, even an administrator's, make no API tokens.)
            let as_token = !path.starts_with("/api/v1/api-tokens");
            let admin_auth = if as_token {
                Auth::Bearer(&admin_token)
            } else {
                Auth::Cookie(&admin)
            };
            let a = call(admin_auth);
            assert!(
                ![401, 403].contains(&a.status) && (a.status < 500 || a.status == 503),
                "administrator: {method} {path} answered {}: {:?}",
                a.status,
                a.body
            );
        }
    }
    assert!(walked >= 25, "only {walked} changing routes described");
}

#[test]
fn api_tokens_expire_are_revoked_note_their_use_and_stay_out_of_urls() {
    let (server, clock) = Launch::new().start_in_process();
    let admin = server.admin();
    let expires = (clock.utc() + chrono::Duration::hours(1)).to_rfc3339();
    let a = server.post(
        "/api/v1/api-tokens",
        Auth::Cookie(&admin),
        &json!({ "name": "grafana", "role": "viewer", "expiresAt": expires }).to_string(),
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    let token = a.body["token"].as_str().unwrap().to_owned();
    let id = a.body["id"].as_i64().unwrap();
    assert!(token.starts_with("vmt_"));
    let listed = server.get("/api/v1/api-tokens", Auth::Cookie(&admin)).body;
    assert_eq!(listed[0]["lastUsedAt"], Value::Null);
    assert_eq!(listed[0]["createdBy"], "admin");
    assert!(
        listed[0].get("token").is_none(),
        "the list never carries the token"
    );

    let me = server.get("/api/v1/me", Auth::Bearer(&token));
    assert_eq!(
        (me.status, me.body["role"].clone(), me.body["via"].clone()),
        (200, json!("viewer"), json!("token"))
    );
    let listed = server.get("/api/v1/api-tokens", Auth::Cookie(&admin)).body;
    assert!(
        listed[0]["lastUsedAt"].is_string(),
        "last use noted: {listed}"
    );

    // In a query string it is refused (and must not work as a credential).
    let a = server.get(&format!("/api/v1/me?access_token={token}"), Auth::None);
    assert_eq!(a.status, 400, "{:?}", a.body);
    let a = server.get(&format!("/api/v1/clients?token={token}"), Auth::None);
    assert_eq!(a.status, 400, "{:?}", a.body);

    // A bearer request is not a browser's: no Origin rule, no content-type rule.
    let a = server.request(
        "POST",
        "/api/v1/activity/seen",
        Auth::Bearer(&token),
        &[("origin", "https://elsewhere.example")],
        Some(r#"{"ids": ["none"]}"#),
    );
    assert_ne!(a.status, 403, "{:?}", a.body);

    clock.advance(chrono::Duration::hours(1));
    assert_eq!(
        server.get("/api/v1/me", Auth::Bearer(&token)).status,
        401,
        "expired"
    );
    let fresh = api_token(&server, &admin, "terraform", "admin");
    assert_eq!(server.get("/api/v1/me", Auth::Bearer(&fresh)).status, 200);
    let a = server.delete(&format!("/api/v1/api-tokens/{id}"), Auth::Cookie(&admin));
    assert_eq!(a.status, 200);
    let fresh_id = server.get("/api/v1/api-tokens", Auth::Cookie(&admin)).body[0]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        server
            .delete(
                &format!("/api/v1/api-tokens/{fresh_id}"),
                Auth::Cookie(&admin)
            )
            .status,
        200
    );
    assert_eq!(
        server.get("/api/v1/me", Auth::Bearer(&fresh)).status,
        401,
        "revoked"
    );
    assert_eq!(
        server
            .delete(
                &format!("/api/v1/api-tokens/{fresh_id}"),
                Auth::Cookie(&admin)
            )
            .status,
        404
    );
}

#[test]
fn a_token_never_acts_above_its_creator() {
    let server = Server::start();
    let admin = server.admin();
    let (_, ops_id) = user(&server, &admin, "olga", "admin");
    let olga = server.login("olga", "olga-password-1");
    let token = api_token(&server, &olga, "olga-script", "admin");
    // A token cannot make tokens, whatever its role.
    let a = server.post(
        "/api/v1/api-tokens",
        Auth::Bearer(&token),
        &json!({ "name": "child", "role": "viewer" }).to_string(),
    );
    assert_eq!(a.status, 403, "{:?}", a.body);
    // Olga becomes an operator: her admin token acts as an operator now.
    let a = server.put(
        &format!("/api/v1/users/{ops_id}"),
        Auth::Cookie(&admin),
        r#"{"role": "operator"}"#,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let me = server.get("/api/v1/me", Auth::Bearer(&token));
    assert_eq!(me.body["role"], "operator");
    let a = server.post("/api/v1/tokens", Auth::Bearer(&token), "{}");
    assert_eq!(a.status, 403, "{:?}", a.body);
    // Her old session ended with the role change; as an operator she may not
    // make tokens at all, so not above her role either.
    assert_eq!(server.get("/api/v1/me", Auth::Cookie(&olga)).status, 401);
    let olga = server.login("olga", "olga-password-1");
    let a = server.post(
        "/api/v1/api-tokens",
        Auth::Cookie(&olga),
        &json!({ "name": "higher", "role": "admin" }).to_string(),
    );
    assert_eq!(a.status, 403, "{:?}", a.body);
}

#[test]
fn the_last_administrator_stays_one_and_viewers_change_only_their_password() {
    let server = Server::start();
    let admin = server.admin();
    let me = server.get("/api/v1/me", Auth::Cookie(&admin)).body;
    let admin_id = me["id"].as_i64().unwrap();
    assert_eq!(me["role"], "admin", "the first-run administrator");
    let a = server.put(
        &format!("/api/v1/users/{admin_id}"),
        Auth::Cookie(&admin),
        r#"{"role": "viewer"}"#,
    );
    assert_eq!(
        (a.status, a.error()),
        (400, "Cannot demote the last administrator")
    );
    let (viewer, viewer_id) = user(&server, &admin, "vic", "viewer");
    let a = server.put(
        &format!("/api/v1/users/{viewer_id}"),
        Auth::Cookie(&viewer),
        r#"{"role": "admin"}"#,
    );
    assert_eq!(a.status, 403, "{:?}", a.body);
    let a = server.put(
        &format!("/api/v1/users/{admin_id}"),
        Auth::Cookie(&viewer),
        r#"{"password": "x-x-x-x"}"#,
    );
    assert_eq!(a.status, 403, "{:?}", a.body);
    let a = server.put(
        &format!("/api/v1/users/{viewer_id}"),
        Auth::Cookie(&viewer),
        r#"{"password": "vic-new-password"}"#,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    server.login("vic", "vic-new-password");
    // PATCH is PUT.
    let a = server.request(
        "PATCH",
        &format!("/api/v1/users/{viewer_id}"),
        Auth::Cookie(&admin),
        &[],
        Some(r#"{"role": "operator"}"#),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let users = server.get("/api/v1/users", Auth::Cookie(&admin)).body;
    let vic = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == "vic")
        .unwrap();
    assert_eq!(vic["role"], "operator");
    let a = server.delete(&format!("/api/v1/users/{admin_id}"), Auth::Cookie(&admin));
    assert_eq!((a.status, a.error()), (400, "Cannot delete yourself"));
}

/// Every change of the issue's list, one after the other; after each, exactly
/// one new audit entry with the right action, actor and via.
#[test]
fn each_change_leaves_one_audit_entry_and_no_secret_anywhere() {
    const SECRET_HEADER: &str = "Bearer hook-secret-4f1c9a77";
    let server = Launch::new().env("LOG_LEVEL", "debug").start();
    let admin = server.admin();
    let token = api_token(&server, &admin, "ci", "admin");
    let entries = |server: &Server| -> Vec<Value> {
        let a = server.get("/api/v1/audit?limit=1000", Auth::Cookie(&admin));
        assert_eq!(a.status, 200, "{:?}", a.body);
        a.body["entries"].as_array().unwrap().clone()
    };
    let seen = Cell::new(entries(&server).len());
    let expect = |action: &str, actor: &str, via: &str, server: &Server| {
        let now = entries(server);
        let before = seen.get();
        assert_eq!(
            now.len(),
            before + 1,
            "one entry for {action}: {:#?}",
            &now[..now.len().saturating_sub(before)]
        );
        let e = &now[0];
        assert_eq!(
            (e["action"].as_str(), e["actor"].as_str(), e["via"].as_str()),
            (Some(action), Some(actor), Some(via)),
            "{e}"
        );
        assert_eq!(e["sourceIp"], "127.0.0.1");
        seen.set(now.len());
    };
    let a = server.login_answer("admin", "wrong-password");
    assert_eq!(a.status, 401);
    expect("login.failed", "admin", "session", &server);
    let admin = server.admin();
    expect("login.succeeded", "admin", "session", &server);
    let a = server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "ursula", "password": "ursula-secret-pw", "role": "operator"}"#,
    );
    assert_eq!(a.status, 201);
    expect("user.created", "admin", "session", &server);
    let uid = server
        .get("/api/v1/users", Auth::Cookie(&admin))
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == "ursula")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let a = server.put(
        &format!("/api/v1/users/{uid}"),
        Auth::Bearer(&token),
        r#"{"role": "viewer", "password": "ursula-secret-pw2"}"#,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    expect("user.updated", "ci", "token", &server);
    let made = server.post(
        "/api/v1/api-tokens",
        Auth::Cookie(&admin),
        r#"{"name": "grafana", "role": "viewer"}"#,
    );
    assert_eq!(made.status, 201);
    let grafana = made.body["token"].as_str().unwrap().to_owned();
    expect("api_token.created", "admin", "session", &server);
    let a = server.delete(
        &format!("/api/v1/api-tokens/{}", made.body["id"]),
        Auth::Cookie(&admin),
    );
    assert_eq!(a.status, 200);
    expect("api_token.deleted", "admin", "session", &server);
    let reg = server.post("/api/v1/tokens", Auth::Cookie(&admin), "{}");
    assert_eq!(reg.status, 200);
    let registration = reg.body["token"].as_str().unwrap().to_owned();
    expect("registration_token.created", "admin", "session", &server);
    let a = server.post(
        "/api/v1/register",
        Auth::None,
        &json!({ "token": registration, "hostname": "lb1" }).to_string(),
    );
    assert_eq!(a.status, 200);
    let agent_token = a.body["token"].as_str().unwrap().to_owned();
    let client_id = a.body["clientId"].as_str().unwrap().to_owned();
    let now = entries(&server);
    assert_eq!(now[0]["action"], "client.registered");
    assert!(now[0]["actor"]
        .as_str()
        .unwrap()
        .starts_with("registration token "));
    seen.set(now.len());
    let a = server.put(
        &format!("/api/v1/clients/{client_id}"),
        Auth::Cookie(&admin),
        r#"{"site": "dc1"}"#,
    );
    assert_eq!(a.status, 200);
    expect("client.updated", "admin", "session", &server);
    let hook = json!({
        "name": "pager", "url": "http://127.0.0.1:9/hook", "method": "POST",
        "headers": { "Authorization": SECRET_HEADER }, "enabled": false,
        "bodyTemplate": "{\"text\": \"{{event.message}}\"}",
    });
    let a = server.post("/api/v1/webhooks", Auth::Cookie(&admin), &hook.to_string());
    assert_eq!(a.status, 201, "{:?}", a.body);
    let hook_id = a.body["id"].clone();
    let hook_id = hook_id
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| hook_id.to_string());
    expect("webhook.created", "admin", "session", &server);
    let a = server.put(
        &format!("/api/v1/webhooks/{hook_id}"),
        Auth::Cookie(&admin),
        &hook.to_string(),
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    expect("webhook.updated", "admin", "session", &server);
    let a = server.put(
        "/api/v1/settings/cleanup",
        Auth::Cookie(&admin),
        r#"{"activity_level_overrides": "client.connected=none"}"#,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    expect("settings.updated", "admin", "session", &server);
    let a = server.post("/api/v1/silences", Auth::Cookie(&admin), &json!({ "matcher": { "clientId": client_id }, "endsAt": (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339(), "comment": "patching" }).to_string());
    assert_eq!(a.status, 201, "{:?}", a.body);
    let silence = a.body["id"].as_str().unwrap().to_owned();
    expect("silence.created", "admin", "session", &server);
    for (path, action) in [
        (format!("/api/v1/silences/{silence}"), "silence.deleted"),
        (format!("/api/v1/webhooks/{hook_id}"), "webhook.deleted"),
        (format!("/api/v1/clients/{client_id}"), "client.deleted"),
        (format!("/api/v1/users/{uid}"), "user.deleted"),
    ] {
        assert_eq!(
            server.delete(&path, Auth::Cookie(&admin)).status,
            200,
            "{path}"
        );
        expect(action, "admin", "session", &server);
    }
    // Refused changes and reads leave nothing.
    assert_eq!(
        server
            .delete("/api/v1/users/999999", Auth::Cookie(&admin))
            .status,
        404
    );
    server.get("/api/v1/clients", Auth::Cookie(&admin));
    assert_eq!(entries(&server).len(), seen.get());
    // Filters.
    let a = server.get("/api/v1/audit?action=webhook.created", Auth::Cookie(&admin));
    assert_eq!(a.body["entries"].as_array().unwrap().len(), 1);
    let a = server.get("/api/v1/audit?actor=ci", Auth::Cookie(&admin));
    assert!(a.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["actor"] == "ci"));
    assert_eq!(
        server
            .get("/api/v1/audit?from=yesterday", Auth::Cookie(&admin))
            .status,
        400
    );

    // No secret in the table, nor in the log.
    let dump = serde_json::to_string(&entries(&server)).unwrap();
    let log = server.log_text();
    for secret in [
        "hook-secret-4f1c9a77",
        &token,
        &grafana,
        &registration,
        &agent_token,
        ADMIN_PASSWORD,
        "wrong-password",
        "ursula-secret-pw",
    ] {
        assert!(
            !dump.contains(secret),
            "the audit log holds a secret: {secret}"
        );
        assert!(
            !log.contains(secret),
            "the server log holds a secret: {secret}"
        );
    }
}

#[test]
fn metrics_want_the_configured_token() {
    let server = Launch::new()
        .config("security:\n  metrics_token: scrape-me-0123456789abcdef\n")
        .start();
    assert_eq!(server.get("/metrics", Auth::None).status, 401);
    assert_eq!(
        server
            .get("/metrics", Auth::Bearer("wrong-token-0123456789"))
            .status,
        401
    );
    let a = server.get("/metrics", Auth::Bearer("scrape-me-0123456789abcdef"));
    assert_eq!(a.status, 200);
    let admin = server.admin();
    let token = api_token(&server, &admin, "prometheus", "viewer");
    assert_eq!(server.get("/metrics", Auth::Bearer(&token)).status, 200);
    assert!(!server.log_text().contains("scrape-me-0123456789abcdef"));
}
