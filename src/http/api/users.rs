//! `/api/v1/users`: listing and managing operators.

use super::auth::set_session;
use super::validate::{invalid, no_control, Body};
use crate::auth::users::{self, AuthMethods, NewUser, UserError, UserUpdate};
use crate::auth::{Role, Session};
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

fn parse_role(body: &Body) -> Result<Option<Role>, ApiError> {
    match body.optional_string("role")? {
        None => Ok(None),
        Some(s) => Role::parse(&s)
            .map(Some)
            .ok_or_else(|| invalid("role", "must be one of viewer, operator, admin")),
    }
}

pub fn create(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let username = body.required_text("username")?;
    no_control("username", &username)?;
    let password = body.optional_string("password")?.filter(|p| !p.is_empty());
    let auth_methods = parse_methods(&body)?.unwrap_or(AuthMethods::Local);
    // Without a role a user is an administrator, as every user was before roles:
    // clients written before roles keep working (doc/decisions.md).
    let role = parse_role(&body)?.unwrap_or(Role::Admin);
    let id = users::create(
        &app.db,
        NewUser {
            username: username.clone(),
            password,
            auth_methods,
            role,
        },
        iso(app.clock.utc()),
    )?;
    log::info!(
        "User \"{}\" created by \"{}\"",
        username.escape_debug(),
        session.username
    );
    let summary = format!(
        "User \"{}\" created with role {role}, logging in with {}",
        username.escape_debug(),
        auth_methods.as_str()
    );
    Ok(Resp::json(201, &json!({ "status": "created" })).audited(
        "user.created",
        format!("user {id}"),
        summary,
    ))
}

fn user_id(path: &[&str]) -> Result<i64, ApiError> {
    path.last()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| invalid("userId", "must be a whole number"))
}

pub fn update(app: &App, req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = user_id(path)?;
    let body = Body::parse(&req.body)?;
    // Below administrator, a user changes only its own password, and only
    // logged in: a script's token changes no user.
    if session.role < Role::Admin && session.api_token.is_some() {
        return Err(ApiError::new(
            403,
            "role: an API token below admin changes no user",
        ));
    }
    if session.role < Role::Admin {
        if id != session.user_id {
            return Err(ApiError::new(
                403,
                "role: only an administrator changes other users",
            ));
        }
        if let Some(key) = body.object().keys().find(|k| k.as_str() != "password") {
            return Err(ApiError::new(
                403,
                format!("role: only an administrator changes {key}; you may change your password"),
            ));
        }
    }
    let password = match body.optional_string("password")? {
        Some(p) if p.is_empty() => return Err(invalid("password", "must not be empty")),
        other => other,
    };
    let auth_methods = parse_methods(&body)?;
    let role = parse_role(&body)?;
    let password_changed = password.is_some();
    let updated = users::update(
        &app.db,
        id,
        UserUpdate {
            password,
            auth_methods,
            role,
        },
        iso(app.clock.utc()),
    )?;
    let mut changed = Vec::new();
    if password_changed {
        changed.push("password changed".to_owned());
    }
    if let Some(m) = auth_methods {
        changed.push(format!("logs in with {}", m.as_str()));
    }
    if let Some((from, to)) = updated.role_change {
        changed.push(format!("role {from} → {to}"));
    }
    let summary = format!(
        "User \"{}\": {}",
        updated.username.escape_debug(),
        if changed.is_empty() {
            "nothing changed".to_owned()
        } else {
            changed.join(", ")
        }
    );
    let resp = Resp::ok(&json!({ "status": "updated" })).audited(
        "user.updated",
        format!("user {id}"),
        summary,
    );
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
        if id == session.user_id && session.api_token.is_none() {
            let resp = resp.after_sent(AfterSent::CloseUserSockets {
                user_id: id,
                code: 4002,
                reason: "Session renewed",
            });
            // The caller changed their own credentials: keep them logged in with a
            // token of the new version instead of ending their session.
            let oidc = session.via == crate::audit::Via::Oidc;
            return Ok(set_session(app, req, resp, id, &updated.username, tv, oidc));
        }
        app.hub.close_user(id, 4001, "Invalid Token");
    }
    Ok(resp)
}

pub fn delete(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = user_id(path)?;
    let name = users::find_by_id(&app.db, id)?.map(|u| u.username);
    users::delete(&app.db, id, session.user_id)?;
    app.hub.close_user(id, 4001, "Invalid Token");
    log::info!("User {id} deleted by \"{}\"", session.username);
    let summary = format!(
        "User \"{}\" deleted",
        name.unwrap_or_default().escape_debug()
    );
    Ok(Resp::ok(&json!({ "status": "deleted" })).audited(
        "user.deleted",
        format!("user {id}"),
        summary,
    ))
}
