//! `/api/v1/webhooks`: webhook definitions.

use super::validate::{invalid, Body};
use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use crate::webhooks::{store, target};
use serde_json::json;

fn spec(app: &App, req: &Req) -> Result<store::WebhookSpec, ApiError> {
    let body = Body::parse(&req.body)?;
    let spec =
        store::validate(body.object()).map_err(|(field, message)| invalid(&field, &message))?;
    target::check_saved(&spec.url, &app.config.webhooks.allowed_networks)
        .map_err(ApiError::bad_request)?;
    Ok(spec)
}

pub fn list(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&store::list(&app.db)?))
}

pub fn create(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let hook = app.webhooks.create(spec(app, req)?, app.clock.utc())?;
    log::info!(
        "Webhook \"{}\" created by \"{}\"",
        hook.spec.name,
        session.username
    );
    let summary = format!("Webhook {} created", hook.spec.described());
    Ok(Resp::json(201, &hook).audited("webhook.created", format!("webhook {}", hook.id), summary))
}

/// A webhook a provisioning file defines is that file's to change: 409.
fn refuse_provisioned(app: &App, id: &str) -> Result<(), ApiError> {
    match store::get(&app.db, id)? {
        Some(store::Webhook {
            spec,
            provisioned_from: Some(file),
            ..
        }) => Err(super::provisioning::refused("webhook", &spec.name, &file)),
        _ => Ok(()),
    }
}

pub fn update(app: &App, req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = path.last().copied().unwrap_or_default();
    refuse_provisioned(app, id)?;
    let spec = spec(app, req)?;
    match app.webhooks.update(id, spec, app.clock.utc())? {
        Some(hook) => {
            log::info!(
                "Webhook \"{}\" changed by \"{}\"",
                hook.spec.name,
                session.username
            );
            let summary = format!("Webhook {} changed", hook.spec.described());
            Ok(Resp::ok(&hook).audited("webhook.updated", format!("webhook {id}"), summary))
        }
        None => Err(ApiError::not_found("Webhook not found")),
    }
}

pub fn delete(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = path.last().copied().unwrap_or_default();
    refuse_provisioned(app, id)?;
    let name = store::get(&app.db, id)?.map(|h| h.spec.name);
    if !app.webhooks.delete(id)? {
        return Err(ApiError::not_found("Webhook not found"));
    }
    log::info!("Webhook {id} deleted by \"{}\"", session.username);
    Ok(Resp::ok(&json!({ "success": true })).audited(
        "webhook.deleted",
        format!("webhook {id}"),
        format!(
            "Webhook \"{}\" deleted",
            name.unwrap_or_default().escape_debug()
        ),
    ))
}

/// `POST /api/v1/webhooks/test`: renders the sample event, sends it once, records
/// nothing. A refusing target is still a 200 with `ok: false`.
pub fn test(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    use crate::webhooks::delivery;
    let spec = spec(app, req)?;
    let event = delivery::sample_for(&spec, app.clock.utc());
    let (rendered, _) = delivery::render_once(&app.db, &spec, event)
        .map_err(|e| ApiError::bad_request(format!("bodyTemplate: {e}")))?;
    let attempt = delivery::send(&spec, &rendered, &app.config.webhooks.allowed_networks);
    let summary = format!(
        "Test sent for webhook {}: {}",
        spec.described(),
        match (attempt.ok(), attempt.status) {
            (true, Some(s)) => format!("answered {s}"),
            (false, Some(s)) => format!("refused with {s}"),
            _ => "no answer".to_owned(),
        }
    );
    Ok(Resp::ok(&json!({
        "ok": attempt.ok(),
        "status": attempt.status,
        "error": attempt.error,
        "body": rendered.body,
        "response": attempt.response,
    }))
    .audited("webhook.tested", "webhook test", summary))
}

/// `GET /api/v1/webhooks/templates`: ready-made webhooks for common receivers.
pub fn templates(_app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let list: Vec<_> = crate::webhooks::ready::READY_MADE
        .iter()
        .map(|r| r.view())
        .collect();
    Ok(Resp::ok(&list))
}

/// `POST /api/v1/webhooks/preview` (beyond the spec, see ARCHITECTURE.md): the
/// editor's live preview. Same body as create plus an optional `sampleKind`;
/// validated exactly as a save is (a blank name aside: it does not change how a
/// body renders), then the sample event of that kind is rendered with the real
/// engine. Sends nothing, records nothing. A webhook that would be refused is a
/// 200 `{ok: false, field, error}` carrying the save's own 400 text, so the
/// editor can place it beside the field while the operator types.
pub fn preview(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    use crate::webhooks::delivery;
    let body = Body::parse(&req.body)?;
    let samples = delivery::samples(app.clock.utc());
    let kinds: Vec<&str> = samples.iter().filter_map(|e| e["kind"].as_str()).collect();
    let wanted = match body.optional_string("sampleKind")? {
        Some(k) if !k.is_empty() => Some(
            samples
                .iter()
                .find(|e| e["kind"] == k.as_str())
                .ok_or_else(|| {
                    invalid(
                        "sampleKind",
                        &format!("must be one of {}", kinds.join(", ")),
                    )
                })?
                .clone(),
        ),
        _ => None,
    };
    let mut object = body.object().clone();
    object.remove("sampleKind");
    let blank_name = object
        .get("name")
        .is_none_or(|n| n.as_str().is_some_and(|s| s.trim().is_empty()) || n.is_null());
    if blank_name {
        object.insert("name".into(), json!("(unnamed)"));
    }
    let refused = |field: &str, error: String| {
        Ok(Resp::ok(&json!({
            "ok": false, "field": field, "error": error, "kinds": kinds,
        })))
    };
    let spec = match store::validate(&object) {
        Ok(spec) => spec,
        Err((field, message)) => return refused(&field, format!("{field}: {message}")),
    };
    let event = wanted.unwrap_or_else(|| delivery::sample_for(&spec, app.clock.utc()));
    let kind = event["kind"].clone();
    let (rendered, shared) = match delivery::render_once(&app.db, &spec, event) {
        Ok(r) => r,
        // validate compiled every template already; kept for a render-time refusal.
        Err(e) => return refused("bodyTemplate", format!("bodyTemplate: {e}")),
    };
    let headers: serde_json::Map<String, serde_json::Value> = rendered
        .headers
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect();
    Ok(Resp::ok(&json!({
        "ok": true,
        "kind": kind,
        "message": shared["event"]["message"],
        "method": spec.method,
        "url": rendered.url,
        "headers": headers,
        "body": rendered.body,
        "kinds": kinds,
    })))
}
