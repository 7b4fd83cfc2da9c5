//! `/api/v1/users`: listing and managing operators.

use super::auth::set_session;
use super::validate::{invalid, no_control, Body};
use crate::auth::users::{self, AuthMethods, NewUser, UserError, UserUpdate};
use crate::auth::Session;
use crate::clock::iso;
use crate::http::request::Req;
use crate::http::response::{AfterSent, ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::json;

impl From<UserError> for ApiError {
    fn from(e: UserError) -> Self {
        match e {
            UserError::NotFound => ApiError::not_found("User not found"),
            UserError::UsernameTaken => ApiError::new(409, "Username already exists"),
            UserError::Rule(text) => ApiError::bad_request(text),
            UserError::Hash(e) => {
                log::error!("{e}");
                ApiError::internal()
            }
            UserError::Db(e) => e.into(),
        }
    }
}

pub fn list(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&users::list(&app.db)?))
}

fn parse_methods(body: &Body) -> Result<Option<AuthMethods>, ApiError> {
    match body.optional_string("auth_methods")? {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => AuthMethods::parse(&s)
            .map(Some)
            .ok_or_else(|| invalid("auth_methods", "must be one of local, oidc, local,oidc")),
    }
}

pub fn create(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let username = body.required_text("username")?;
    no_control("username", &username)?;
    let password = body.optional_string("password")?.filter(|p| !p.is_empty());
    let auth_methods = parse_methods(&body)?.unwrap_or(AuthMethods::Local);
    users::create(
        &app.db,
        NewUser {
            username: username.clone(),
            password,
            auth_methods,
        },
        iso(app.clock.utc()),
    )?;
    log::info!(
        "User \"{}\" created by \"{}\"",
        username.escape_debug(),
        session.username
    );
    Ok(Resp::json(201, &json!({ "status": "created" })))
}

fn user_id(path: &[&str]) -> Result<i64, ApiError> {
    path.last()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| invalid("userId", "must be a whole number"))
}

pub fn update(app: &App, req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = user_id(path)?;
    let body = Body::parse(&req.body)?;
    let password = match body.optional_string("password")? {
        Some(p) if p.is_empty() => return Err(invalid("password", "must not be empty")),
        other => other,
    };
    let auth_methods = parse_methods(&body)?;
    let password_changed = password.is_some();
    let updated = users::update(
        &app.db,
        id,
        UserUpdate {
            password,
            auth_methods,
        },
        iso(app.clock.utc()),
    )?;
    let resp = Resp::ok(&json!({ "status": "updated" }));
    if let Some(tv) = updated.new_token_version {
        log::info!(
            "Sessions of user \"{}\" revoked by a change from \"{}\"",
            updated.username,
            session.username
        );
        if password_changed && id == app.first_admin_id() {
            app.forget_initial_password();
        }
        // Open dashboards of that user end with their sessions. The caller's own
        // are told 4002 and reconnect at once with the fresh cookie this answer
        // carries, so their close goes out only after the answer.
        if id == session.user_id {
            let resp = resp.after_sent(AfterSent::CloseUserSockets {
                user_id: id,
                code: 4002,
                reason: "Session renewed",
            });
            // The caller changed their own credentials: keep them logged in with a
            // token of the new version instead of ending their session.
            return Ok(set_session(app, req, resp, id, &updated.username, tv));
        }
        app.hub.close_user(id, 4001, "Invalid Token");
    }
    Ok(resp)
}

pub fn delete(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = user_id(path)?;
    users::delete(&app.db, id, session.user_id)?;
    app.hub.close_user(id, 4001, "Invalid Token");
    log::info!("User {id} deleted by \"{}\"", session.username);
    Ok(Resp::ok(&json!({ "status": "deleted" })))
}
