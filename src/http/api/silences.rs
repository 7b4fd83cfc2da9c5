//! `/api/v1/silences`: list, create and end maintenance windows.
//! Validates, then calls `activity::silences`.

use super::validate::{invalid, Body};
use crate::activity::silences;
use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::json;

pub fn list(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&app.silences.list(app.clock.utc())))
}

pub fn create(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let now = app.clock.utc();
    let new = silences::validate(body.object(), now)
        .map_err(|(field, message)| invalid(&field, &message))?;
    let created = app
        .silences
        .create(new, &session.username, now, &app.activity)?;
    log::info!("Silence {} created by \"{}\"", created.id, session.username);
    let id = created.id.clone();
    let summary = format!(
        "Silence {id} created until {}: {}",
        crate::clock::iso(created.ends_at),
        created.comment.escape_debug()
    );
    Ok(Resp::json(201, &created).audited("silence.created", format!("silence {id}"), summary))
}

pub fn delete(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = path.get(3).copied().unwrap_or_default();
    if let Some(p) = app.silences.get(id).and_then(|s| s.provisioned) {
        return Err(super::provisioning::refused("silence", &p.name, &p.file));
    }
    if !app.silences.end_now(id, app.clock.utc())? {
        return Err(ApiError::not_found("Silence not found"));
    }
    log::info!("Silence {id} ended by \"{}\"", session.username);
    Ok(Resp::ok(&json!({ "success": true })).audited(
        "silence.deleted",
        format!("silence {id}"),
        format!("Silence {id} ended"),
    ))
}
