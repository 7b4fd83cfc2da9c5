//! `/api/v1/clients/:id/drain`: drain a host (its agent writes the drain file a
//! keepalived `track_file` watches, so a backup takes over) and undrain it.
//! Operators and administrators; each one an event and an audit entry.

use super::validate::{no_control, Body};
use crate::activity::Event;
use crate::agents::actions::{ActionError, ANSWER_WITHIN};
use crate::agents::clients;
use crate::auth::Session;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::json;
use vrrp_protocol::actions::{DRAIN, MAX_REASON_CHARS, UNDRAIN};
use vrrp_protocol::{ActivityLevel, HostActionResult};

/// `POST /api/v1/clients/:id/drain {reason}`
pub fn drain(app: &App, req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let reason = body.required_text("reason")?.trim().to_owned();
    no_control("reason", &reason)?;
    if reason.is_empty() {
        return Err(super::validate::invalid("reason", "must not be empty"));
    }
    if reason.chars().count() > MAX_REASON_CHARS {
        return Err(super::validate::invalid(
            "reason",
            &format!("must be at most {MAX_REASON_CHARS} characters"),
        ));
    }
    act(app, session, path, DRAIN, reason)
}

/// `DELETE /api/v1/clients/:id/drain`
pub fn undrain(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    act(app, session, path, UNDRAIN, String::new())
}

fn act(app: &App, session: &Session, path: &[&str], action: &str, reason: String) -> ApiResult {
    let id = path.get(3).copied().unwrap_or_default();
    let client =
        clients::get(&app.db, id)?.ok_or_else(|| ApiError::not_found("Client not found"))?;
    let result = request(app, &client.id, action, reason.clone(), &session.actor)?;
    // The event's kind names the audit action too.
    let (kind, summary) = if action == DRAIN {
        (
            "client.drained",
            format!(
                "\"{}\" drained: {}",
                client.name().escape_debug(),
                reason.escape_debug()
            ),
        )
    } else {
        (
            "client.undrained",
            format!("\"{}\" undrained", client.name().escape_debug()),
        )
    };
    app.record_activity(vec![Event::server(
        kind,
        ActivityLevel::Info,
        Some(client.id.clone()),
        json!({ "reason": reason, "by": session.actor, "drain": result.drain }),
        app.clock.utc(),
    )]);
    Ok(
        Resp::ok(&json!({ "drain": result.drain, "warning": result.error })).audited(
            kind,
            format!("client {}", client.id),
            summary,
        ),
    )
}

/// Asks the client's agent and waits for its answer; the agent's refusal (no
/// `actions.drainFile`, a file it could not write) is a 409 with its words.
fn request(
    app: &App,
    client_id: &str,
    action: &str,
    reason: String,
    by: &str,
) -> Result<HostActionResult, ApiError> {
    match crate::drills::probe::act(&app.session, client_id, action, &reason, by) {
        Ok(result) if result.ok => Ok(result),
        Ok(result) => Err(ApiError::new(
            409,
            result
                .error
                .unwrap_or_else(|| "the agent refused without a reason".into()),
        )),
        Err(ActionError::Invalid(why)) => Err(ApiError::bad_request(why)),
        Err(ActionError::Offline) => Err(ApiError::new(409, "Client is offline")),
        Err(ActionError::NoAnswer) => Err(ApiError::new(
            504,
            format!(
                "The agent did not answer within {} s; agents before host actions never do (upgrade it)",
                ANSWER_WITHIN.as_secs()
            ),
        )),
    }
}
