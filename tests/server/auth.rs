//! Sessions: login, cookies, revocation by `tv`, forged and expired tokens, the
//! login rate limit, and trusted-proxy handling.

use crate::harness::*;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn jwt_secret(server: &Server) -> String {
    let doc: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(server.launch.config_path()).unwrap())
            .unwrap();
    doc["jwtSecret"].as_str().unwrap().to_owned()
}

fn forge(server: &Server, claims: Value) -> String {
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(jwt_secret(server).as_bytes()),
    )
    .unwrap()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn login_sets_both_cookies_with_the_spec_attributes_and_no_token_in_the_body() {
    let server = Server::start();
    let a = server.login_answer("admin", ADMIN_PASSWORD);
    assert_eq!(a.status, 200);
    assert_eq!(a.body, json!({ "success": true }));
    let cookies = a.all("set-cookie");
    assert_eq!(cookies.len(), 2);
    let session = cookies
        .iter()
        .find(|c| c.starts_with("svc_session="))
        .unwrap();
    let auth = cookies.iter().find(|c| c.starts_with("svc_auth=")).unwrap();
    for attr in ["Path=/", "SameSite=Strict", "Max-Age=43200", "HttpOnly"] {
        assert!(
            session.split("; ").any(|p| p == attr),
            "{attr} in {session}"
        );
    }
    assert!(auth.starts_with("svc_auth=1;"));
    for attr in ["Path=/", "SameSite=Strict", "Max-Age=43200"] {
        assert!(auth.split("; ").any(|p| p == attr), "{attr} in {auth}");
    }
    assert!(!auth.contains("HttpOnly"));
    assert!(
        !session.contains("Secure") && !auth.contains("Secure"),
        "plain HTTP from an untrusted peer"
    );

    let token = a.cookie("svc_session").unwrap();
    let me = server.get("/api/v1/me", Auth::Cookie(&token));
    assert_eq!(me.status, 200);
    assert_eq!(me.body["username"], "admin");
    assert_eq!(me.body["id"], 1);
    let expires =
        chrono::DateTime::parse_from_rfc3339(me.body["expiresAt"].as_str().unwrap()).unwrap();
    let left = expires.timestamp() - now();
    assert!((43_100..=43_200).contains(&left), "expires in 12 h: {left}");
    assert_eq!(
        server.get("/api/v1/me", Auth::Bearer(&token)).status,
        200,
        "Bearer works too"
    );
}

#[test]
fn max_age_follows_jwt_expires_in() {
    let server = Launch::new().config("jwtExpiresIn: 30m\n").start();
    let a = server.login_answer("admin", ADMIN_PASSWORD);
    assert!(a
        .all("set-cookie")
        .iter()
        .all(|c| c.contains("Max-Age=1800")));
}

#[test]
fn invalid_credentials_are_identical_for_every_reason_and_take_as_long() {
    let server = Server::start();
    let admin = server.admin();
    let created = server.post(
        "/api/v1/users",
        Auth::Cookie(&admin),
        r#"{"username": "sso", "auth_methods": "oidc"}"#,
    );
    assert_eq!(created.status, 201);
    let unknown = server.login_answer("nobody", "whatever-pw");
    let wrong = server.login_answer("admin", "wrong-password");
    let oidc_only = server.login_answer("sso", "whatever-pw");
    for a in [&unknown, &wrong, &oidc_only] {
        assert_eq!(a.status, 401);
        assert_eq!(a.body, json!({ "error": "Invalid credentials" }));
        assert!(a.cookie("svc_session").is_none());
    }
    // Without hashing a dummy, an unknown user would answer ~100x faster.
    let time = |user: &str| {
        let mut samples: Vec<Duration> = (0..3)
            .map(|_| {
                let t = Instant::now();
                server.login_answer(user, "some-password");
                t.elapsed()
            })
            .collect();
        samples.sort();
        samples[1]
    };
    let (t_unknown, t_wrong) = (time("nobody"), time("admin"));
    assert!(
        t_unknown * 10 >= t_wrong * 3,
        "unknown user {t_unknown:?} vs wrong password {t_wrong:?}"
    );
}

#[test]
fn login_validation_names_the_first_offending_field() {
    let server = Server::start();
    let cases = [
        ("", "username: is required"),
        ("{}", "username: is required"),
        (
            r#"{"username": "", "password": ""}"#,
            "username: must not be empty",
        ),
        (r#"{"username": "admin"}"#, "password: is required"),
        (
            r#"{"username": "admin", "password": ""}"#,
            "password: must not be empty",
        ),
        (
            r#"{"username": 5, "password": "x"}"#,
            "username: must be a string",
        ),
        ("not json", "body: is not valid JSON"),
        ("[1, 2]", "body: must be a JSON object"),
    ];
    for (body, error) in cases {
        let a = server.post("/api/login", Auth::None, body);
        assert_eq!((a.status, a.error()), (400, error), "body {body}");
    }
}

#[test]
fn protected_routes_refuse_missing_forged_expired_and_stale_tokens() {
    let server = Server::start();
    assert_eq!(server.get("/api/v1/me", Auth::None).status, 401);
    assert_eq!(
        server.get("/api/v1/users", Auth::Cookie("garbage")).status,
        401
    );
    let t = now();
    let good = forge(
        &server,
        json!({ "sub": 1, "username": "admin", "tv": 1, "iat": t, "exp": t + 600 }),
    );
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&good)).status,
        200,
        "a token signed with jwtSecret works"
    );
    let cases = [
        (
            "expired",
            json!({ "sub": 1, "username": "admin", "tv": 1, "iat": t - 7200, "exp": t - 10 }),
        ),
        (
            "older than the lifetime",
            json!({ "sub": 1, "username": "admin", "tv": 1, "iat": t - 13 * 3600, "exp": t + 3600 }),
        ),
        (
            "no tv claim",
            json!({ "sub": 1, "username": "admin", "iat": t, "exp": t + 600 }),
        ),
        (
            "stale tv",
            json!({ "sub": 1, "username": "admin", "tv": 0, "iat": t, "exp": t + 600 }),
        ),
        (
            "unknown user",
            json!({ "sub": 99, "username": "ghost", "tv": 1, "iat": t, "exp": t + 600 }),
        ),
    ];
    for (why, claims) in cases {
        let token = forge(&server, claims);
        let a = server.get("/api/v1/me", Auth::Cookie(&token));
        assert_eq!(a.status, 401, "{why}");
        assert_eq!(a.error(), "Unauthorized");
    }
    let other_key = encode(
        &Header::default(),
        &json!({ "sub": 1, "username": "admin", "tv": 1, "iat": t, "exp": t + 600 }),
        &EncodingKey::from_secret(b"not-the-secret"),
    )
    .unwrap();
    assert_eq!(
        server.get("/api/v1/me", Auth::Bearer(&other_key)).status,
        401
    );
}

#[test]
fn logout_clears_both_cookies_and_is_public() {
    let server = Server::start();
    let a = server.post("/api/auth/logout", Auth::None, "");
    assert_eq!(a.status, 200);
    assert_eq!(a.body, json!({ "success": true }));
    let cookies = a.all("set-cookie");
    assert_eq!(cookies.len(), 2);
    assert!(cookies
        .iter()
        .all(|c| c.contains("Max-Age=0") && c.contains("Path=/")));
    assert!(cookies.iter().any(|c| c.starts_with("svc_session=;")));
    assert!(cookies.iter().any(|c| c.starts_with("svc_auth=;")));
}

#[test]
fn auth_config_and_oidc_routes_without_oidc() {
    let server = Server::start();
    let a = server.get("/api/auth/config", Auth::None);
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "type": "local" }))
    );
    assert_eq!(server.get("/api/auth/login", Auth::None).status, 404);
    let a = server.get("/api/auth/callback", Auth::None);
    assert_eq!((a.status, a.error()), (400, "code: is required"));
    let a = server.get("/api/auth/callback?code=abc", Auth::None);
    assert_eq!((a.status, a.error()), (400, "state: is required"));
    let a = server.get("/api/auth/callback?code=abc&state=xyz", Auth::None);
    assert_eq!(a.status, 500);
    assert!(
        a.error().starts_with("Authentication failed: "),
        "{}",
        a.error()
    );
}

#[test]
fn login_rate_limit_is_ten_per_window_per_address_with_headers() {
    let server = Launch::new().env("SVC_TRUSTED_PROXIES", "loopback").start();
    let from = |ip: &str, password: &str| {
        server.request(
            "POST",
            "/api/login",
            Auth::None,
            &[("x-forwarded-for", ip)],
            Some(&json!({ "username": "admin", "password": password }).to_string()),
        )
    };
    // The window starts at the first attempt; ten password checks can take seconds
    // on a loaded machine, so the bounds come from clock readings around the calls.
    let before_first = now();
    let mut after_first = before_first;
    for i in 1..=10u32 {
        // Successful attempts count as well as failed ones.
        let a = from(
            "198.51.100.1",
            if i % 2 == 0 { ADMIN_PASSWORD } else { "wrong" },
        );
        if i == 1 {
            after_first = now();
        }
        assert_ne!(a.status, 429, "attempt {i}");
        assert_eq!(a.header("x-ratelimit-limit"), Some("10"));
        assert_eq!(
            a.header("x-ratelimit-remaining"),
            Some((10 - i).to_string().as_str())
        );
    }
    let before_last = now();
    let a = from("198.51.100.1", ADMIN_PASSWORD);
    let after_last = now();
    assert_eq!(a.status, 429);
    assert!(a.cookie("svc_session").is_none());
    assert_eq!(a.header("x-ratelimit-remaining"), Some("0"));
    let reset: i64 = a.header("x-ratelimit-reset").unwrap().parse().unwrap();
    assert!(
        before_first + 900 <= reset && reset <= after_first + 901,
        "reset {reset} is 15 minutes after the first attempt ({before_first}..={after_first})"
    );
    let retry: i64 = a.header("retry-after").unwrap().parse().unwrap();
    assert!(
        reset - after_last - 1 <= retry && retry <= reset - before_last + 1,
        "retry-after {retry} counts down to the reset"
    );
    assert!(!a.error().is_empty());
    // Another client address, as told by a trusted proxy, has its own window.
    assert_eq!(from("198.51.100.2", ADMIN_PASSWORD).status, 200);
    // Other endpoints are not limited.
    assert_eq!(server.get("/api/health", Auth::None).status, 200);
}

#[test]
fn forwarded_headers_from_an_untrusted_peer_are_ignored() {
    let server = Server::start();
    for i in 0..10 {
        let a = server.request(
            "POST",
            "/api/login",
            Auth::None,
            &[("x-forwarded-for", &format!("198.51.100.{i}"))],
            Some(r#"{"username":"admin","password":"x"}"#),
        );
        assert_eq!(a.status, 401);
    }
    let a = server.request(
        "POST",
        "/api/login",
        Auth::None,
        &[("x-forwarded-for", "198.51.100.200")],
        Some(r#"{"username":"admin","password":"x"}"#),
    );
    assert_eq!(
        a.status, 429,
        "the peer address counts, not the forged header"
    );
    let a = server.request(
        "POST",
        "/api/login",
        Auth::None,
        &[("x-forwarded-proto", "https")],
        Some(&json!({ "username": "admin", "password": ADMIN_PASSWORD }).to_string()),
    );
    assert!(a.all("set-cookie").iter().all(|c| !c.contains("Secure")));
}

#[test]
fn cookies_are_secure_behind_a_trusted_https_proxy() {
    let server = Launch::new()
        .config("security:\n  trusted_proxies: ['127.0.0.0/8']\n")
        .start();
    let a = server.request(
        "POST",
        "/api/login",
        Auth::None,
        &[
            ("x-forwarded-proto", "https"),
            ("x-forwarded-for", "203.0.113.9"),
        ],
        Some(&json!({ "username": "admin", "password": ADMIN_PASSWORD }).to_string()),
    );
    assert_eq!(a.status, 200);
    let cookies = a.all("set-cookie");
    assert_eq!(cookies.len(), 2);
    assert!(
        cookies.iter().all(|c| c.split("; ").any(|p| p == "Secure")),
        "{cookies:?}"
    );
    assert!(
        server.wait_log("logged in from 203.0.113.9"),
        "the client address comes from the proxy"
    );
}
