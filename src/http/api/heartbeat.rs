//! `/api/v1/settings/heartbeat`: the heartbeat block with its last
//! outcome, and changing it (written to the config file first, then applied);
//! `/api/v1/test-hooks/...`: the hold on `cluster-eval` the heartbeat tests use,
//! answered only when the server started with `SVC_TEST_HOOKS=1`.

use super::validate::{invalid, Body};
use crate::auth::Session;
use crate::config::heartbeat::{self, mask_url};
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::{json, Value};

/// The block with its last outcome.
#[derive(serde::Serialize)]
struct Shown {
    #[serde(flatten)]
    config: crate::config::heartbeat::HeartbeatConfig,
    status: crate::heartbeat::Status,
}

fn shown(app: &App) -> Shown {
    Shown {
        config: app.heartbeat.config(),
        status: app.heartbeat.status(),
    }
}

pub fn get(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&shown(app)))
}

pub fn put(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let new = heartbeat::validate_update(body.object(), &app.heartbeat.config())
        .map_err(|(field, message)| invalid(&field, &message))?;
    {
        // Written first: a block that would not survive a restart is not taken.
        let _one_writer = app.config_file.lock();
        let block = match serde_json::to_value(&new) {
            Ok(Value::Object(m)) => m,
            _ => return Err(ApiError::internal()),
        };
        crate::config::write_section(&app.config.path, heartbeat::SECTION, &block).map_err(
            |e| {
                log::error!("Cannot save the heartbeat settings: {e}");
                ApiError::new(500, format!("Cannot write the configuration file: {e}"))
            },
        )?;
        app.heartbeat.apply(new.clone());
    }
    // The URL may carry a token: masked, in the log and in the audit entry.
    let summary = format!(
        "Heartbeat: {} every {} s to {}",
        new.method.as_str(),
        new.interval_seconds,
        if new.enabled() {
            mask_url(&new.url)
        } else {
            "nowhere (off)".into()
        }
    );
    log::info!("Heartbeat changed by \"{}\": {summary}", session.username);
    Ok(Resp::ok(&shown(app)).audited("heartbeat.updated", "heartbeat", summary))
}

fn hooks_enabled(app: &App) -> Result<(), ApiError> {
    if app.config.test_hooks {
        Ok(())
    } else {
        Err(ApiError::not_found("Not found"))
    }
}

/// `POST /api/v1/test-hooks/cluster-eval/hold`: the thread stops, as a stuck one would.
pub fn hold(app: &App, _req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    hooks_enabled(app)?;
    log::warn!("Test hook: \"{}\" holds cluster-eval", session.username);
    app.heartbeat.hold_evaluator(&app.evaluate);
    Ok(Resp::ok(&json!({ "held": true })))
}

/// `POST /api/v1/test-hooks/cluster-eval/release`.
pub fn release(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    hooks_enabled(app)?;
    Ok(Resp::ok(
        &json!({ "released": app.heartbeat.release_evaluator() }),
    ))
}
