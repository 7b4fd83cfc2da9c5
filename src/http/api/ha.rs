//! `GET /api/v1/ha`: whether this server is the active or the
//! standby one of a pair (the dashboard's header says "standby"), and the test
//! hook that moves the VIP without keepalived (`SVC_TEST_HOOKS=1` only).

use super::validate::{invalid, Body};
use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::Value;

pub fn get(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&app.ha.status()))
}

/// `POST /api/v1/test-hooks/ha/vip` `{"held": true|false|null}`: the `ha-watch`
/// thread takes it as the interfaces' answer (`null`: the interfaces again).
pub fn force(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    if !app.config.test_hooks {
        return Err(ApiError::not_found("Not found"));
    }
    let body = Body::parse(&req.body)?;
    let held = match body.get("held") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(invalid("held", "must be true, false or null")),
    };
    log::warn!(
        "Test hook: \"{}\" sets the VIP as held: {held:?}",
        session.username
    );
    app.ha.force(held);
    Ok(Resp::ok(&app.ha.status()))
}
