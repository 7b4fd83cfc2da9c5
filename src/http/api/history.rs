//! `GET /api/v1/keepalived/clusters/history` and `.../availability`: a window of
//! the cluster history, and the availability figures summed from it.
//! Validates the query, then reads the history held in memory
//! (`clusters::history::mirror`), never the table.

use super::validate::invalid;
use crate::auth::Session;
use crate::clock::iso;
use crate::clusters::history;
use crate::http::request::Req;
use crate::http::response::{ApiResult, Resp};
use crate::http::App;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

/// Without `from`, a window reaches back this far.
const DEFAULT_WINDOW_DAYS: i64 = 30;
/// The longest window asked for (ten years; more is a typo).
const MAX_WINDOW_DAYS: i64 = 3660;

fn time_param(
    req: &Req,
    name: &str,
) -> Result<Option<DateTime<Utc>>, crate::http::response::ApiError> {
    match req.query_param(name) {
        None | Some("") => Ok(None),
        Some(t) => DateTime::parse_from_rfc3339(t)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| invalid(name, "must be an ISO 8601 timestamp")),
    }
}

/// `from` and `to` (ISO 8601): `to` defaults to now, `from` to 30 days before `to`.
fn window(
    app: &App,
    req: &Req,
) -> Result<(DateTime<Utc>, DateTime<Utc>), crate::http::response::ApiError> {
    let from = time_param(req, "from")?;
    let to = time_param(req, "to")?.unwrap_or_else(|| app.clock.utc());
    let from = from.unwrap_or(to - Duration::days(DEFAULT_WINDOW_DAYS));
    if from >= to {
        return Err(invalid("to", "must be after from"));
    }
    if to - from > Duration::days(MAX_WINDOW_DAYS) {
        return Err(invalid("from", "must be at most 3660 days before to"));
    }
    Ok((from, to))
}

pub fn history(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let key = match req.query_param("key") {
        None => return Err(invalid("key", "is required")),
        Some("") => return Err(invalid("key", "must not be empty")),
        Some(k) => k.to_owned(),
    };
    let (from, to) = window(app, req)?;
    let (from_ms, to_ms) = (from.timestamp_millis(), to.timestamp_millis());
    let now_ms = app.clock.utc().timestamp_millis();
    let (read, begins) = {
        let mirror = app.history.read();
        (
            mirror.window(&key, from_ms, to_ms, now_ms),
            mirror.first_start(&key),
        )
    };
    let intervals = history::clip(&read, from_ms, to_ms);
    Ok(Resp::ok(&json!({
        "key": key,
        "from": iso(from),
        "to": iso(to),
        // Where the cluster's stored history begins (null: none): before it the
        // dashboard may draw from the cluster's events; after it, a gap is
        // time nobody observed.
        "recordedSince": begins.map(|ms| iso(history::ms_to_time(ms))),
        "intervals": intervals.iter().map(history::interval_json).collect::<Vec<_>>(),
    })))
}

/// Every cluster's figures, or with `key` only that cluster's (the detail view
/// refreshes its own without fetching a thousand).
pub fn availability_of_all(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let key = match req.query_param("key") {
        Some("") => return Err(invalid("key", "must not be empty")),
        k => k,
    };
    let (from, to) = window(app, req)?;
    let (from_ms, to_ms) = (from.timestamp_millis(), to.timestamp_millis());
    // Nothing after now has been observed: the window's future is not counted.
    let now_ms = app.clock.utc().timestamp_millis();
    let clusters: Vec<_> = {
        let mirror = app.history.read();
        mirror
            .availability(key, from_ms, to_ms, to_ms.min(now_ms.max(from_ms)), now_ms)
            .into_iter()
            .map(|(key, figures)| figures.view(key.to_owned()))
            .collect()
    };
    Ok(Resp::ok(&json!({
        "from": iso(from),
        "to": iso(to),
        "clusters": clusters,
    })))
}
