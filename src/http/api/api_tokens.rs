//! `/api/v1/api-tokens`: long-lived credentials for scripts, made and revoked by
//! administrators. The token itself is in the answer to its creation only.

use super::validate::{invalid, no_control, Body};
use crate::auth::api_tokens::{self, NewToken, TokenError};
use crate::auth::{Role, Session};
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use chrono::{DateTime, Utc};
use serde_json::json;

impl From<TokenError> for ApiError {
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::NameTaken => ApiError::new(409, "An API token with that name exists"),
            TokenError::NotFound => ApiError::not_found("API token not found"),
            TokenError::AboveCreator { requested, creator } => ApiError::new(
                403,
                format!("role: a token cannot have a higher role ({requested}) than its creator ({creator})"),
            ),
            TokenError::Db(e) => e.into(),
        }
    }
}

pub fn list(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&api_tokens::list(&app.db)?))
}

pub fn create(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    // A token making tokens would outlive any revocation of it.
    if session.api_token.is_some() {
        return Err(ApiError::new(
            403,
            "API tokens are made from a logged-in session, not with another API token",
        ));
    }
    let body = Body::parse(&req.body)?;
    let name = body.required_text("name")?;
    no_control("name", &name)?;
    if name.chars().count() > 100 {
        return Err(invalid("name", "must be at most 100 characters"));
    }
    let role_text = body.required_text("role")?;
    let role = Role::parse(&role_text)
        .ok_or_else(|| invalid("role", "must be one of viewer, operator, admin"))?;
    let now = app.clock.utc();
    let expires_at = match body.optional_string("expiresAt")? {
        None => None,
        Some(text) => {
            let at = DateTime::parse_from_rfc3339(&text)
                .map_err(|_| invalid("expiresAt", "must be an ISO 8601 time with a zone"))?
                .with_timezone(&Utc);
            if at <= now {
                return Err(invalid("expiresAt", "must be in the future"));
            }
            Some(at)
        }
    };
    let made = api_tokens::create(
        &app.db,
        NewToken {
            name,
            role,
            expires_at,
            creator_id: session.user_id,
            creator_name: session.username.clone(),
            creator_role: session.role,
        },
        now,
    )?;
    let summary = format!(
        "API token \"{}\" made with role {}{}",
        made.listed.name.escape_debug(),
        made.listed.role,
        made.listed
            .expires_at
            .as_deref()
            .map(|e| format!(", expires {e}"))
            .unwrap_or_default()
    );
    log::info!("{summary} by \"{}\"", session.username.escape_debug());
    let target = format!("api token {}", made.listed.id);
    Ok(Resp::json(201, &made).audited("api_token.created", target, summary))
}

pub fn delete(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = path
        .last()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| invalid("tokenId", "must be a whole number"))?;
    let name = api_tokens::delete(&app.db, id)?;
    let summary = format!("API token \"{}\" revoked", name.escape_debug());
    log::info!("{summary} by \"{}\"", session.username.escape_debug());
    Ok(Resp::ok(&json!({ "status": "deleted" })).audited(
        "api_token.deleted",
        format!("api token {id}"),
        summary,
    ))
}
