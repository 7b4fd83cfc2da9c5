//! `GET /api/v1/audit`: the audit log for administrators, newest first, with
//! filters. There is no route that deletes entries.

use super::validate::invalid;
use crate::audit::{self, Filter};
use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiResult, Resp};
use crate::http::App;
use chrono::{DateTime, Utc};

pub fn list(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let text = |key: &str| {
        req.query_param(key)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let time = |key: &'static str| match req.query_param(key).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => DateTime::parse_from_rfc3339(v)
            .map(|t| Some(crate::clock::iso(t.with_timezone(&Utc))))
            .map_err(|_| invalid(key, "must be an ISO 8601 time with a zone")),
    };
    let number = |key: &'static str, max: i64| match req.query_param(key) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .map(Some)
            .ok_or_else(|| invalid(key, &format!("must be a whole number from 1 to {max}"))),
    };
    let filter = Filter {
        actor: text("actor"),
        action: text("action"),
        target: text("target"),
        from: time("from")?,
        to: time("to")?,
        before: number("before", i64::MAX)?,
        limit: number("limit", audit::MAX_LIMIT as i64)?
            .map_or(audit::DEFAULT_LIMIT, |n| n as usize),
    };
    Ok(Resp::ok(&audit::list(&app.db, &filter)?))
}
