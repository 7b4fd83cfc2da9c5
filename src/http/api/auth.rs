//! Session routes: login, logout, who am I, and the login-method discovery.

use super::validate::{invalid, Body};
use crate::audit::{self, Actor, Note, Via};
use crate::auth::users;
use crate::auth::{cookies, oidc, password, rate_limit::Decision, Session};
use crate::clock::iso;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::json;

pub const INVALID_CREDENTIALS: &str = "Invalid credentials";
pub const TOO_MANY_LOGINS: &str = "Too many login attempts, please try again later";

/// `POST /api/login`
pub fn login(app: &App, req: &Req) -> ApiResult {
    let now = app.clock.utc();
    let limit = app.login_limiter.hit(req.client_ip, now);
    with_rate_headers(&limit, login_checked(app, req, &limit))
}

fn login_checked(app: &App, req: &Req, limit: &Decision) -> ApiResult {
    if !limit.allowed {
        log::warn!("Login rate limit reached for {}", req.client_ip);
        return Err(ApiError::new(429, TOO_MANY_LOGINS)
            .header("retry-after", limit.retry_after_secs.to_string()));
    }
    let body = Body::parse(&req.body)?;
    let username = body.required_text("username")?;
    let password = body.required_text("password")?;
    let user = users::find_by_username(&app.db, &username)?;
    // Same work whether the user is unknown, has no local password, or typed it wrong.
    let local_hash = user
        .as_ref()
        .filter(|u| u.auth_methods.has_local())
        .and_then(|u| u.password_hash.as_deref());
    if !password::verify(&password, local_hash) {
        log::info!(
            "Failed login for \"{}\" from {}",
            username.escape_debug(),
            req.client_ip
        );
        record_login(
            app,
            req,
            &username,
            Via::Session,
            false,
            "wrong password or unknown user",
        );
        return Err(ApiError::new(401, INVALID_CREDENTIALS));
    }
    let Some(user) = user else {
        return Err(ApiError::new(401, INVALID_CREDENTIALS));
    };
    record_login(
        app,
        req,
        &user.username,
        Via::Session,
        true,
        "with a password",
    );
    upgrade_imported_hash(app, &user, &password);
    log::info!(
        "User \"{}\" logged in from {}",
        user.username,
        req.client_ip
    );
    Ok(set_session(
        app,
        req,
        Resp::ok(&json!({ "success": true })),
        user.id,
        &user.username,
        user.token_version,
        false,
    ))
}

/// One audit entry per login attempt. The name is as typed (it may be no
/// user's), never the password.
fn record_login(app: &App, req: &Req, name: &str, via: Via, ok: bool, how: &str) {
    // A name is user text: bounded, so a flood of long names cannot bloat the log.
    let name: String = name.chars().take(100).collect();
    let actor = Actor {
        name: name.clone(),
        via,
        source_ip: Some(req.client_ip.to_string()),
    };
    let (action, verb) = if ok {
        ("login.succeeded", "logged in")
    } else {
        ("login.failed", "failed to log in")
    };
    let note = Note::new(
        action,
        format!("user {}", name.escape_debug()),
        format!("\"{}\" {verb} {how}", name.escape_debug()),
    );
    let _ = audit::record(&app.db, &actor, note, app.clock.utc());
}

/// A hash imported from keepalived-status-monitor (bcrypt) is replaced by an
/// Argon2id one at its first successful login. A failure here is logged and the
/// login goes on: the old hash still verifies next time.
fn upgrade_imported_hash(app: &App, user: &users::UserRecord, password: &str) {
    let Some(old) = user
        .password_hash
        .as_deref()
        .filter(|h| password::needs_rehash(h))
    else {
        return;
    };
    let result = password::hash(password)
        .map_err(|e| e.to_string())
        .and_then(|new| {
            users::upgrade_hash(&app.db, user.id, old.to_owned(), new).map_err(|e| e.to_string())
        });
    match result {
        Ok(true) => log::info!(
            "The imported password hash of \"{}\" was replaced by an Argon2id hash",
            user.username
        ),
        Ok(false) => {}
        Err(e) => log::warn!(
            "The imported password hash of \"{}\" could not be replaced: {e}",
            user.username
        ),
    }
}

fn with_rate_headers(limit: &Decision, result: ApiResult) -> ApiResult {
    let headers = [
        ("x-ratelimit-limit", limit.limit.to_string()),
        ("x-ratelimit-remaining", limit.remaining.to_string()),
        ("x-ratelimit-reset", limit.reset_at.timestamp().to_string()),
    ];
    match result {
        Ok(mut resp) => {
            resp.headers.extend(headers.map(|(k, v)| (k.to_owned(), v)));
            Ok(resp)
        }
        Err(mut err) => {
            err.headers.extend(headers.map(|(k, v)| (k.to_owned(), v)));
            Err(err)
        }
    }
}

/// Adds fresh session cookies for a user to an answer.
pub fn set_session(
    app: &App,
    req: &Req,
    resp: Resp,
    user_id: i64,
    username: &str,
    tv: i64,
    oidc: bool,
) -> Resp {
    let (token, _) = app
        .sessions
        .issue(user_id, username, tv, oidc, app.clock.utc());
    let [session, auth] =
        cookies::session_cookies(&token, app.sessions.lifetime.as_secs(), req.https);
    resp.header("set-cookie", session)
        .header("set-cookie", auth)
}

/// `POST /api/auth/logout`: clears the cookies; the token itself stays valid until
/// it expires (the server keeps no session list).
pub fn logout(_app: &App, req: &Req) -> ApiResult {
    let [session, auth] = cookies::cleared_cookies(req.https);
    Ok(Resp::ok(&json!({ "success": true }))
        .header("set-cookie", session)
        .header("set-cookie", auth))
}

/// `GET /api/v1/me`
pub fn me(_app: &App, _req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&json!({
        "id": session.user_id,
        "username": session.username,
        "role": session.role,
        "via": session.via,
        "expiresAt": session.expires_at.map(iso),
    })))
}

/// `GET /api/auth/config`: `oidc` only while a provider is configured and was
/// discovered at start.
pub fn config(app: &App, _req: &Req) -> ApiResult {
    let kind = if app.oidc.is_some() { "oidc" } else { "local" };
    Ok(Resp::ok(&json!({ "type": kind })))
}

fn browser_binding(req: &Req) -> Option<&str> {
    req.header("cookie")
        .and_then(|c| cookies::find(c, oidc::BROWSER_COOKIE))
}

/// `GET /api/auth/login`: 302 to the provider; 404 while OIDC is not configured.
pub fn oidc_login(app: &App, req: &Req) -> ApiResult {
    let Some(oidc) = &app.oidc else {
        return Err(ApiError::not_found("OIDC is not configured"));
    };
    let begun = oidc.begin(browser_binding(req), app.clock.utc());
    Ok(Resp::redirect(&begun.authorization_url).header(
        "set-cookie",
        cookies::oidc_browser_cookie(&begun.browser, req.https),
    ))
}

/// `GET /api/auth/callback`: a provider's error answer, then the query, then the
/// login itself; every failure is `500 Authentication failed: <reason>`.
pub fn oidc_callback(app: &App, req: &Req) -> ApiResult {
    // RFC 6749 §4.1.2.1: the provider refused (the user cancelled, say); there is no code.
    if let Some(error) = req.query_param("error") {
        let error: String = error.chars().take(100).collect();
        log::warn!(
            "OIDC login from {} failed: the provider answered {}",
            req.client_ip,
            error.escape_debug()
        );
        return Err(auth_failed(&format!("the provider answered {error}")));
    }
    for key in ["code", "state"] {
        match req.query_param(key) {
            None => return Err(invalid(key, "is required")),
            Some("") => return Err(invalid(key, "must not be empty")),
            Some(_) => {}
        }
    }
    let Some(oidc) = &app.oidc else {
        return Err(auth_failed("OIDC is not enabled"));
    };
    let callback = oidc::Callback {
        code: req.query_param("code").unwrap_or_default(),
        state: req.query_param("state").unwrap_or_default(),
        iss: req.query_param("iss"),
        browser: browser_binding(req),
    };
    match oidc.finish(&app.db, &callback, app.clock.utc()) {
        Ok(user) => {
            log::info!(
                "User \"{}\" logged in through OIDC from {}",
                user.username.escape_debug(),
                req.client_ip
            );
            record_login(
                app,
                req,
                &user.username,
                Via::Oidc,
                true,
                "through single sign-on",
            );
            let resp = Resp::redirect("/").header(
                "set-cookie",
                cookies::cleared_oidc_browser_cookie(req.https),
            );
            Ok(set_session(
                app,
                req,
                resp,
                user.id,
                &user.username,
                user.token_version,
                true,
            ))
        }
        Err(reason) => {
            log::warn!("OIDC login from {} failed: {reason}", req.client_ip);
            record_login(
                app,
                req,
                "(single sign-on)",
                Via::Oidc,
                false,
                &format!("through single sign-on: {reason}"),
            );
            Err(auth_failed(&reason))
        }
    }
}

fn auth_failed(reason: &str) -> ApiError {
    ApiError::new(500, format!("Authentication failed: {reason}"))
}
