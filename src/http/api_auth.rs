//! Session routes: login, logout, who am I, and the login-method discovery.

use super::request::Req;
use super::response::{ApiError, ApiResult, Resp};
use super::validate::{invalid, Body};
use super::App;
use crate::auth::users;
use crate::auth::{cookies, password, rate_limit::Decision, Session};
use crate::clock::iso;
use serde_json::json;

pub const INVALID_CREDENTIALS: &str = "Invalid credentials";
pub const TOO_MANY_LOGINS: &str = "Too many login attempts, please try again later";

/// `POST /api/login`
pub fn login(app: &App, req: &Req) -> ApiResult {
    let now = app.clock.now();
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
        return Err(ApiError::new(401, INVALID_CREDENTIALS));
    }
    let Some(user) = user else {
        return Err(ApiError::new(401, INVALID_CREDENTIALS));
    };
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
    ))
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
) -> Resp {
    let (token, _) = app.sessions.issue(user_id, username, tv, app.clock.now());
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
        "expiresAt": iso(session.expires_at),
    })))
}

/// `GET /api/auth/config`: `oidc` only while a provider is configured and was
/// discovered at start; OIDC login is not built yet, so always `local`.
pub fn config(_app: &App) -> ApiResult {
    Ok(Resp::ok(&json!({ "type": "local" })))
}

/// `GET /api/auth/login`: 404 while OIDC is not configured.
pub fn oidc_login(_app: &App) -> ApiResult {
    Err(ApiError::not_found("OIDC is not configured"))
}

/// `GET /api/auth/callback`: the query is checked first; with OIDC off the
/// callback always fails.
pub fn oidc_callback(_app: &App, req: &Req) -> ApiResult {
    for key in ["code", "state"] {
        match req.query_param(key) {
            None => return Err(invalid(key, "is required")),
            Some("") => return Err(invalid(key, "must not be empty")),
            Some(_) => {}
        }
    }
    Err(ApiError::new(
        500,
        "Authentication failed: OIDC is not enabled",
    ))
}
