//! `/api/v1/webhooks`: webhook definitions.

use super::request::Req;
use super::response::{ApiError, ApiResult, Resp};
use super::validate::{invalid, Body};
use super::App;
use crate::auth::Session;
use crate::webhooks::store;
use serde_json::json;

fn spec(req: &Req) -> Result<store::WebhookSpec, ApiError> {
    let body = Body::parse(&req.body)?;
    store::validate(body.object()).map_err(|(field, message)| invalid(&field, &message))
}

pub fn list(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let hooks: Vec<_> = store::list(&app.db)?
        .iter()
        .map(store::Webhook::to_json)
        .collect();
    Ok(Resp::ok(&hooks))
}

pub fn create(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let hook = store::create(&app.db, spec(req)?, app.clock.now())?;
    log::info!(
        "Webhook \"{}\" created by \"{}\"",
        hook.spec.name,
        session.username
    );
    Ok(Resp::json(201, &hook.to_json()))
}

pub fn update(app: &App, req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = path.last().copied().unwrap_or_default();
    let spec = spec(req)?;
    match store::update(&app.db, id, spec, app.clock.now())? {
        Some(hook) => {
            log::info!(
                "Webhook \"{}\" changed by \"{}\"",
                hook.spec.name,
                session.username
            );
            Ok(Resp::ok(&hook.to_json()))
        }
        None => Err(ApiError::not_found("Webhook not found")),
    }
}

pub fn delete(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = path.last().copied().unwrap_or_default();
    if !store::delete(&app.db, id)? {
        return Err(ApiError::not_found("Webhook not found"));
    }
    log::info!("Webhook {id} deleted by \"{}\"", session.username);
    Ok(Resp::ok(&json!({ "success": true })))
}

/// `POST /api/v1/webhooks/test`: renders the sample event, sends it once, records
/// nothing. A refusing target is still a 200 with `ok: false`.
pub fn test(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    use crate::webhooks::delivery;
    let spec = spec(req)?;
    let event = delivery::sample_for(&spec, app.clock.now());
    let ctx = delivery::context(&app.db, &event, &spec.name);
    let rendered = delivery::render(&spec, &ctx)
        .map_err(|e| ApiError::bad_request(format!("bodyTemplate: {e}")))?;
    let attempt = delivery::send(&spec, &rendered);
    Ok(Resp::ok(&json!({
        "ok": attempt.ok(),
        "status": attempt.status,
        "error": attempt.error,
        "body": rendered.body,
        "response": attempt.response,
    })))
}

/// `GET /api/v1/webhooks/templates`: ready-made webhooks for common receivers.
pub fn templates(_app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let list: Vec<_> = crate::webhooks::ready::READY_MADE
        .iter()
        .map(|r| r.to_json())
        .collect();
    Ok(Resp::ok(&list))
}
