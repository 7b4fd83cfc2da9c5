//! Routes of the activity list: the list itself (paged, filtered, or the open
//! incidents), marking records seen, and deleting them.

use super::validate::{invalid, Body};
use crate::activity;
use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiResult, Resp};
use crate::http::App;
use crate::live::envelope;
use serde_json::{json, Value};
use vrrp_protocol::ActivityLevel;

/// `GET /api/v1/activity`. Without query parameters the whole list, as the spec
/// says; the dashboard pages it with `limit` and `before` and narrows it with
/// `level`, `kind`, `correlationId`, `unseen`, `since`, `q` (text of the composed message) and `cluster` (a
/// cluster's key); `count=true` answers `{count}` instead of records (`q` and
/// `cluster` do not apply to it). Records carry the composed `message` and `detail`.
pub fn list_activity(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    match req.query_param("openIncidents") {
        None | Some("false") => {}
        Some("true") => return open_incidents(app, session),
        Some(_) => return Err(invalid("openIncidents", "must be true or false")),
    }
    let mut page = activity::Page::default();
    if let Some(limit) = req.query_param("limit") {
        match limit.parse::<usize>() {
            Ok(n) if (1..=5000).contains(&n) => page.limit = Some(n),
            _ => return Err(invalid("limit", "must be a whole number from 1 to 5000")),
        }
    }
    page.before = req.query_param("before").map(str::to_owned);
    if let Some(levels) = req.query_param("level").filter(|l| !l.is_empty()) {
        for level in levels.split(',') {
            match serde_json::from_value::<ActivityLevel>(json!(level)) {
                Ok(l) if l.as_str() == level => page.levels.push(l),
                _ => {
                    return Err(invalid(
                        "level",
                        "must list levels among trace, info, warning, error",
                    ))
                }
            }
        }
    }
    if let Some(kinds) = req.query_param("kind").filter(|k| !k.is_empty()) {
        page.kinds = kinds.split(',').map(str::to_owned).collect();
    }
    page.correlation_ids = req
        .query_param("correlationId")
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    page.unseen = match req.query_param("unseen") {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(invalid("unseen", "must be true or false")),
    };
    if let Some(since) = req.query_param("since") {
        match chrono::DateTime::parse_from_rfc3339(since) {
            Ok(t) => page.since = Some(crate::clock::iso(t.with_timezone(&chrono::Utc))),
            Err(_) => return Err(invalid("since", "must be an ISO 8601 timestamp")),
        }
    }
    match req.query_param("count") {
        None | Some("false") => {}
        Some("true") => {
            let n = activity::count(&app.db, session.user_id, &page)?;
            return Ok(Resp::ok(&json!({ "count": n })));
        }
        Some(_) => return Err(invalid("count", "must be true or false")),
    }
    let text = req
        .query_param("q")
        .map(str::to_lowercase)
        .filter(|q| !q.is_empty());
    let cluster = req.query_param("cluster").filter(|c| !c.is_empty());
    page.cluster = cluster.map(str::to_owned);
    let mut records = if let Some(q) = &text {
        // The text is composed per record, so compose before the limit applies.
        let limit = page.limit.take();
        let mut all = activity::list_page(&app.db, session.user_id, &page, |r| {
            cluster.is_none_or(|k| activity::is_about_cluster(&r.event.data, k))
        })?;
        activity::with_texts(&app.db, &mut all);
        all.retain(|r| {
            [Some(r.message()), r.detail(), Some(r.event.kind.as_str())]
                .into_iter()
                .flatten()
                .any(|t| t.to_lowercase().contains(q))
        });
        all.truncate(limit.unwrap_or(usize::MAX));
        all
    } else {
        activity::list_page(&app.db, session.user_id, &page, |r| {
            cluster.is_none_or(|k| activity::is_about_cluster(&r.event.data, k))
        })?
    };
    if text.is_none() {
        activity::with_texts(&app.db, &mut records);
    }
    Ok(Resp::ok(&records))
}

/// `GET /api/v1/activity?openIncidents=true`: the newest stored event of each
/// incident open now (the cluster evaluator's confirmed states say which), newest
/// first; the other parameters do not apply. An open incident none of whose
/// events is stored any more is left out: there is nothing to show for it.
fn open_incidents(app: &App, session: &Session) -> ApiResult {
    let ids = crate::clusters::thread::open_incident_ids(&app.db)?;
    if ids.is_empty() {
        return Ok(Resp::ok(&json!([])));
    }
    let page = activity::Page {
        kinds: ["opened", "updated", "resolved"]
            .iter()
            .map(|k| format!("vrrp.incident_{k}"))
            .collect(),
        correlation_ids: ids,
        ..activity::Page::default()
    };
    let mut seen = std::collections::HashSet::new();
    let mut records = activity::list_page(&app.db, session.user_id, &page, |r| {
        r.event
            .correlation_id
            .as_deref()
            .is_some_and(|id| seen.insert(id.to_owned()))
    })?;
    activity::with_texts(&app.db, &mut records);
    Ok(Resp::ok(&records))
}

pub fn mark_seen(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let ids = match body.get("ids") {
        None | Some(Value::Null) => return Err(invalid("ids", "is required")),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(&format!("ids[{i}]"), "must be a string"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(invalid("ids", "must be a list of strings")),
    };
    if ids.is_empty() {
        return Err(invalid("ids", "must not be empty"));
    }
    let turned = activity::mark_seen(&app.db, session.user_id, ids)?;
    if !turned.is_empty() {
        app.hub.send_to_user(
            session.user_id,
            envelope("ACTIVITY_SEEN", json!({ "ids": turned })),
        );
    }
    Ok(Resp::ok(&json!({ "ok": true })))
}

pub fn delete_activity(app: &App, _req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    activity::delete_all(&app.db)?;
    log::info!("Activity list cleared by \"{}\"", session.username);
    app.hub.broadcast(envelope("ACTIVITY_UPDATE", json!([])));
    Ok(Resp::ok(&json!({ "ok": true })).audited(
        "activity.deleted",
        "activity",
        "Activity list cleared",
    ))
}
