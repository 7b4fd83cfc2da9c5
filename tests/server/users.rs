//! `/api/v1/users`: every rule, and that credential changes end sessions.

use crate::harness::*;
use serde_json::json;

fn user_id(server: &Server, token: &str, username: &str) -> i64 {
    let list = server.get("/api/v1/users", Auth::Cookie(token)).body;
    list.as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == username)
        .unwrap()["id"]
        .as_i64()
        .unwrap()
}

#[test]
fn list_shows_users_without_secrets() {
    let server = Server::start();
    let admin = server.admin();
    let a = server.get("/api/v1/users", Auth::Cookie(&admin));
    assert_eq!(a.status, 200);
    let users = a.body.as_array().unwrap();
    assert_eq!(users.len(), 1);
    let u = users[0].as_object().unwrap();
    let mut keys: Vec<&str> = u.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "auth_methods",
            "created_at",
            "id",
            "role",
            "updated_at",
            "username"
        ]
    );
    assert_eq!(u["auth_methods"], "local");
    assert!(chrono::DateTime::parse_from_rfc3339(u["created_at"].as_str().unwrap()).is_ok());
    assert_eq!(server.get("/api/v1/users", Auth::None).status, 401);
}

#[test]
fn create_rules() {
    let server = Server::start();
    let admin = server.admin();
    let post = |body: &str| server.post("/api/v1/users", Auth::Cookie(&admin), body);
    let a = post(r#"{"username": "bob", "password": "bob-password"}"#);
    assert_eq!(
        (a.status, a.body.clone()),
        (201, json!({ "status": "created" }))
    );
    let a = post(r#"{"username": "bob", "password": "other"}"#);
    assert_eq!((a.status, a.error()), (409, "Username already exists"));
    let a = post(r#"{"password": "x"}"#);
    assert_eq!((a.status, a.error()), (400, "username: is required"));
    let a = post(r#"{"username": "carol", "auth_methods": "ldap", "password": "x"}"#);
    assert_eq!(
        (a.status, a.error()),
        (400, "auth_methods: must be one of local, oidc, local,oidc")
    );
    let a = post(r#"{"username": "carol"}"#);
    assert_eq!(
        (a.status, a.error()),
        (400, "A password is required for local authentication")
    );
    let a = post(r#"{"username": "carol", "auth_methods": "local,oidc"}"#);
    assert_eq!(a.status, 400);
    let a = post(r#"{"username": "carol", "auth_methods": "oidc", "password": "x"}"#);
    assert_eq!(
        (a.status, a.error()),
        (
            400,
            "Password can only be set for users with local authentication"
        )
    );
    assert_eq!(
        post(r#"{"username": "carol", "auth_methods": "oidc"}"#).status,
        201
    );
    assert_eq!(
        post(r#"{"username": "dave", "auth_methods": "local,oidc", "password": "dave-pw"}"#).status,
        201
    );
    assert_eq!(server.login_answer("bob", "bob-password").status, 200);
    assert_eq!(server.login_answer("dave", "dave-pw").status, 200);
    let list = server.get("/api/v1/users", Auth::Cookie(&admin)).body;
    let methods: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["auth_methods"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["local", "local", "oidc", "local,oidc"]);
}

#[test]
fn update_rules_and_revocation() {
    let server = Server::start();
    let admin = server.admin();
    server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "bob", "password": "bob-password"}"#,
    );
    server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "sso", "auth_methods": "oidc"}"#,
    );
    let bob = user_id(&server, &admin, "bob");
    let sso = user_id(&server, &admin, "sso");
    let put = |id: i64, body: &str| {
        server.put(&format!("/api/v1/users/{id}"), Auth::Cookie(&admin), body)
    };

    assert_eq!(put(999, r#"{"password": "x"}"#).status, 404);
    let a = put(sso, r#"{"password": "new-pw"}"#);
    assert_eq!(
        (a.status, a.error()),
        (
            400,
            "Password can only be set for users with local authentication"
        )
    );
    let a = put(sso, r#"{"auth_methods": "local"}"#);
    assert_eq!(
        (a.status, a.error()),
        (400, "A password is required for local authentication")
    );
    let a = put(bob, r#"{"auth_methods": "sometimes"}"#);
    assert_eq!(a.status, 400);
    assert!(a.error().starts_with("auth_methods: "));
    let a = put(bob, r#"{"password": ""}"#);
    assert_eq!((a.status, a.error()), (400, "password: must not be empty"));

    // An empty auth_methods leaves them unchanged and does not end sessions.
    let bob_session = server.login("bob", "bob-password");
    let a = put(bob, r#"{"auth_methods": ""}"#);
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "status": "updated" }))
    );
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&bob_session)).status,
        200
    );

    // A password change by someone else ends every session of that user.
    assert_eq!(put(bob, r#"{"password": "bob-new-password"}"#).status, 200);
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&bob_session)).status,
        401
    );
    assert_eq!(server.login_answer("bob", "bob-password").status, 401);
    let bob_session = server.login("bob", "bob-new-password");

    // So does a change of methods.
    assert_eq!(put(bob, r#"{"auth_methods": "local,oidc"}"#).status, 200);
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&bob_session)).status,
        401
    );
    // Enabling local for the OIDC user with a password works.
    assert_eq!(
        put(
            sso,
            r#"{"auth_methods": "local,oidc", "password": "sso-pw"}"#
        )
        .status,
        200
    );
    assert_eq!(server.login_answer("sso", "sso-pw").status, 200);
}

#[test]
fn changing_your_own_password_gives_a_fresh_cookie() {
    let server = Server::start();
    let old = server.admin();
    let other_session = server.admin();
    let a = server.put(
        "/api/v1/users/1",
        Auth::Cookie(&old),
        r#"{"password": "brand-new-password"}"#,
    );
    assert_eq!(a.status, 200);
    let fresh = a
        .cookie("svc_session")
        .expect("fresh session cookie in the same answer");
    assert_eq!(a.cookie("svc_auth").as_deref(), Some("1"));
    assert_eq!(server.get("/api/v1/me", Auth::Cookie(&fresh)).status, 200);
    assert_eq!(server.get("/api/v1/me", Auth::Cookie(&old)).status, 401);
    assert_eq!(
        server
            .get("/api/v1/me", Auth::Cookie(&other_session))
            .status,
        401,
        "all older sessions end"
    );
}

#[test]
fn delete_rules_and_sessions_of_deleted_users() {
    let server = Server::start();
    let admin = server.admin();
    server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "bob", "password": "bob-password"}"#,
    );
    let bob = user_id(&server, &admin, "bob");
    let bob_session = server.login("bob", "bob-password");
    let a = server.delete("/api/v1/users/1", Auth::Cookie(&admin));
    assert_eq!((a.status, a.error()), (400, "Cannot delete yourself"));
    assert_eq!(
        server
            .delete("/api/v1/users/999", Auth::Cookie(&admin))
            .status,
        404
    );
    let a = server.delete("/api/v1/users/abc", Auth::Cookie(&admin));
    assert_eq!(
        (a.status, a.error()),
        (400, "userId: must be a whole number")
    );
    let a = server.delete(&format!("/api/v1/users/{bob}"), Auth::Cookie(&admin));
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "status": "deleted" }))
    );
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&bob_session)).status,
        401
    );
    assert_eq!(
        server
            .get("/api/v1/users", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
