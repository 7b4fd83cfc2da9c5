//! `/api/v1/settings/...`: the settings block and the cleanup schedulers.

use super::validate::{invalid, Body};
use crate::auth::Session;
use crate::config::settings;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use crate::schedulers::{Scheduler, Trigger};
use serde_json::json;

pub fn get(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&app.settings.snapshot()))
}

pub fn put(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    // A key a provisioning file sets is that file's to change.
    for key in body.object().keys() {
        if let Some(file) = app.settings.provisioned_from(key) {
            return Err(super::provisioning::refused("setting", key, &file));
        }
    }
    let changes = settings::validate_update(body.object())
        .map_err(|(field, message)| invalid(&field, &message))?;
    {
        // Written first: a setting that would not survive a restart is not taken.
        let _one_writer = app.config_file.lock();
        crate::config::write_settings(&app.config.path, &changes).map_err(|e| {
            log::error!("Cannot save settings: {e}");
            ApiError::new(500, format!("Cannot write the configuration file: {e}"))
        })?;
        app.settings.apply(&changes);
    }
    log::info!(
        "Settings changed by \"{}\": {}",
        session.username,
        changes.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    // Settings are numbers and level overrides: no secret among them.
    let summary = format!(
        "Settings changed: {}",
        changes
            .iter()
            .map(|(k, v)| format!(
                "{k} = {}",
                v.to_string().chars().take(200).collect::<String>()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if changes.keys().any(|k| k.starts_with("token_")) {
        app.token_cleanup.wake();
    }
    if changes
        .keys()
        .any(|k| k.starts_with("notification_") || k == settings::HISTORY_RETENTION_KEY)
    {
        app.notification_cleanup.wake();
    }
    Ok(Resp::ok(&json!({ "success": true })).audited("settings.updated", "settings", summary))
}

fn run(scheduler: &Scheduler) -> ApiResult {
    match scheduler.run(Trigger::Manual) {
        Ok(removed) => Ok(
            Resp::ok(&json!({ "success": true, "removed": removed })).audited(
                "settings.cleaned",
                scheduler.name,
                format!("{} run by hand: {removed} removed", scheduler.name),
            ),
        ),
        Err(e) => Err(ApiError::new(
            500,
            format!("{} failed: {e}", scheduler.name),
        )),
    }
}

pub fn clean_tokens(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    run(&app.token_cleanup)
}

pub fn clean_notifications(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    run(&app.notification_cleanup)
}

pub fn status(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&json!({ "schedulers": {
        "notification-cleanup": app.notification_cleanup.status(),
        "token-cleanup": app.token_cleanup.status(),
    }})))
}
