//! Failover drills: `POST /api/v1/clusters/:key/drills {reason, force?}` checks
//! the preflight and starts one (`{id}`); `GET /api/v1/drills` and
//! `GET /api/v1/drills/:id` give their reports. A refused drill is kept too.

use super::validate::{invalid, no_control, Body};
use crate::auth::Session;
use crate::drills::{probe, store, Drill, Status};
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::{json, Value};

pub fn create(app: &App, req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let key = path.get(3).copied().unwrap_or_default();
    let body = Body::parse(&req.body)?;
    let reason = body
        .optional_string("reason")?
        .unwrap_or_default()
        .trim()
        .to_owned();
    no_control("reason", &reason)?;
    if reason.chars().count() > 150 {
        return Err(invalid("reason", "must be at most 150 characters"));
    }
    let force = match body.get("force") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("force", "must be true or false")),
    };
    let cluster = probe::clusters_now(&app.session)
        .into_iter()
        .find(|c| c.key == key)
        .ok_or_else(|| ApiError::not_found("Cluster not found"))?;
    let now = app.clock.utc();
    let mut drill = Drill::new(
        uuid::Uuid::new_v4().to_string(),
        cluster.key.clone(),
        session.actor.clone(),
        reason.clone(),
        force,
        now,
    );
    let target = format!("cluster {}", cluster.key);
    let old = match crate::drills::preflight(&cluster, force) {
        Ok(old) => old,
        Err(refusal) => {
            drill.findings = refusal.findings.clone();
            drill.step(now, format!("Refused: {}", refusal.reason));
            drill.finish(Status::Refused, now);
            store::save(&app.db, &drill)?;
            let summary = format!("Drill refused: {}", refusal.reason);
            let mut err = ApiError::new(409, format!("Drill refused: {}", refusal.reason));
            err.extra = Some(Box::new(
                json!({ "id": drill.id, "findings": refusal.findings }),
            ));
            // A refusal is not a change: it still leaves its audit entry.
            crate::audit::record(
                &app.db,
                &session.audit_actor(req.client_ip),
                crate::audit::Note::new("drill.refused", target, summary),
                now,
            )
            .ok();
            return Err(err);
        }
    };
    if let Err(other) = app.drills.claim(&cluster.key, &drill.id) {
        return Err(ApiError::new(
            409,
            format!("A drill is already running for this cluster ({other})"),
        ));
    }
    drill.old_master = Some(old.1.clone());
    if let Err(e) = store::save(&app.db, &drill) {
        app.drills.release(&cluster.key);
        return Err(e.into());
    }
    let id = drill.id.clone();
    let summary = format!(
        "Failover drill {id} started on {} (master {}){}: {}",
        cluster.key,
        old.1,
        if force { ", forced past readiness" } else { "" },
        reason.escape_debug()
    );
    if let Err(e) = probe::start(app.session.clone(), app.drills.clone(), drill, old) {
        app.drills.release(&cluster.key);
        log::error!("Cannot start a drill thread: {e}");
        return Err(ApiError::internal());
    }
    Ok(Resp::json(201, &json!({ "id": id })).audited("drill.started", target, summary))
}

pub fn list(app: &App, req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let cluster = req.query_param("cluster").filter(|c| !c.is_empty());
    let limit = match req.query_param("limit") {
        None | Some("") => 100,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| invalid("limit", "must be a whole number from 1 to 1000"))?,
    };
    Ok(Resp::ok(&store::list(&app.db, cluster, limit)?))
}

pub fn get(app: &App, _req: &Req, _s: &Session, path: &[&str]) -> ApiResult {
    let id = path.get(3).copied().unwrap_or_default();
    match store::get(&app.db, id)? {
        Some(d) => Ok(Resp::ok(&d)),
        None => Err(ApiError::not_found("Drill not found")),
    }
}
