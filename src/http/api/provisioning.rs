//! `GET /api/v1/settings/provisioning`: the provisioning directory, the outcome
//! of its last reading (start or SIGHUP) and what the files define now.

use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use crate::webhooks::store;
use serde_json::{json, Value};

pub fn status(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let mut answer =
        serde_json::to_value(app.provisioning.status()).map_err(|_| ApiError::internal())?;
    let webhooks: Vec<Value> = store::list(&app.db)?
        .into_iter()
        .filter_map(|h| {
            let file = h.provisioned_from?;
            Some(json!({ "id": h.id, "name": h.spec.name, "file": file }))
        })
        .collect();
    let silences: Vec<Value> = app
        .silences
        .list(app.clock.utc())
        .into_iter()
        .filter_map(|s| {
            let file = s.provisioned_from?;
            Some(json!({ "id": s.id, "name": s.name, "file": file, "status": s.status }))
        })
        .collect();
    if let Some(o) = answer.as_object_mut() {
        o.insert("webhooks".into(), json!(webhooks));
        o.insert("settings".into(), json!(app.settings.provisioned()));
        o.insert("silences".into(), json!(silences));
    }
    Ok(Resp::ok(&answer))
}

/// The refusal of an API change to what a file defines.
pub fn refused(what: &str, name: &str, file: &str) -> ApiError {
    ApiError::new(
        409,
        format!(
            "{what} \"{}\" is provisioned from {file}; change the file and send SIGHUP",
            name.escape_debug()
        ),
    )
}
