//! The route table: which handler answers which method and path, and which
//! routes need a session. Unknown paths under `/api` are 404 before any
//! session check.

use super::{
    activity, agents, auth as api_auth, ha, heartbeat, history, metrics, settings, silences,
    static_files, users, webhooks,
};
use crate::auth::{self, AuthFailure, Session};
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::json;

type Handler = fn(&App, &Req, &Session, &[&str]) -> ApiResult;

/// The route table. Unknown paths under `/api` are 404 before any session check.
pub fn route(app: &App, req: &Req) -> ApiResult {
    let segments = req.segments();
    let path: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (req.method.as_str(), path.as_slice()) {
        ("POST", ["api", "login"]) => api_auth::login(app, req),
        ("POST", ["api", "auth", "logout"]) => api_auth::logout(app, req),
        ("GET", ["api", "auth", "config"]) => api_auth::config(app),
        ("GET", ["api", "auth", "login"]) => api_auth::oidc_login(app, req),
        ("GET", ["api", "auth", "callback"]) => api_auth::oidc_callback(app, req),
        ("GET", ["api", "health"]) => health(app),
        // No session: Prometheus scrapes it; `security.metrics_allowed_networks` guards it.
        ("GET", ["metrics"]) => metrics::serve(app, req),
        ("GET", ["api", "v1", "ping"]) => Ok(Resp::ok(&json!({ "status": "ok" }))),
        ("POST", ["api", "v1", "register"]) => agents::register(app, req),
        // Public: the dashboard links to it beside the webhook editor.
        ("GET", ["docs", "webhook-templates"]) => Ok(Resp {
            status: 200,
            headers: Vec::new(),
            body: include_bytes!("../../../static/docs/webhook-templates.md").to_vec(),
            content_type: "text/markdown; charset=utf-8",
            after_sent: None,
        }),
        // Everything outside /api, /ws and /docs is the dashboard (deep links
        // answer index.html).
        ("GET" | "HEAD", [first, ..]) if !matches!(*first, "api" | "ws" | "docs") => {
            Ok(static_files::serve(req))
        }
        ("GET" | "HEAD", []) => Ok(static_files::serve(req)),
        _ => {
            let handler: Handler = match (req.method.as_str(), path.as_slice()) {
                ("GET", ["api", "v1", "me"]) => api_auth::me,
                ("GET", ["api", "v1", "users"]) => users::list,
                ("POST", ["api", "v1", "users"]) => users::create,
                ("PUT", ["api", "v1", "users", _]) => users::update,
                ("DELETE", ["api", "v1", "users", _]) => users::delete,
                ("GET", ["api", "v1", "tokens"]) => agents::list_tokens,
                ("POST", ["api", "v1", "tokens"]) => agents::create_token,
                ("DELETE", ["api", "v1", "tokens", _]) => agents::delete_token,
                ("GET", ["api", "v1", "clients"]) => agents::list_clients,
                ("POST", ["api", "v1", "clients", "outbound"]) => agents::create_outbound,
                ("POST", ["api", "v1", "clients", _, "reconnect"]) => agents::reconnect,
                ("PUT", ["api", "v1", "clients", _]) => agents::update_client,
                ("DELETE", ["api", "v1", "clients", _]) => agents::delete_client,
                ("GET", ["api", "v1", "clients", _, "keepalived"]) => agents::client_state,
                ("POST", ["api", "v1", "clients", _, "keepalived", "refresh"]) => {
                    agents::refresh_state
                }
                ("GET", ["api", "v1", "keepalived", "states"]) => agents::list_states,
                ("GET", ["api", "v1", "keepalived", "clusters"]) => agents::list_clusters,
                ("GET", ["api", "v1", "keepalived", "clusters", "history"]) => history::history,
                ("GET", ["api", "v1", "keepalived", "clusters", "availability"]) => {
                    history::availability_of_all
                }
                ("GET", ["api", "v1", "activity"]) => activity::list_activity,
                ("POST", ["api", "v1", "activity", "seen"]) => activity::mark_seen,
                ("DELETE", ["api", "v1", "activity"]) => activity::delete_activity,
                ("GET", ["api", "v1", "settings", "cleanup"]) => settings::get,
                ("PUT", ["api", "v1", "settings", "cleanup"]) => settings::put,
                ("POST", ["api", "v1", "settings", "cleanup", "invalid-tokens"]) => {
                    settings::clean_tokens
                }
                ("POST", ["api", "v1", "settings", "cleanup", "notifications"]) => {
                    settings::clean_notifications
                }
                ("GET", ["api", "v1", "settings", "scheduler-status"]) => settings::status,
                ("GET", ["api", "v1", "ha"]) => ha::get,
                ("POST", ["api", "v1", "test-hooks", "ha", "vip"]) => ha::force,
                ("GET", ["api", "v1", "settings", "heartbeat"]) => heartbeat::get,
                ("PUT", ["api", "v1", "settings", "heartbeat"]) => heartbeat::put,
                ("POST", ["api", "v1", "test-hooks", "cluster-eval", "hold"]) => heartbeat::hold,
                ("POST", ["api", "v1", "test-hooks", "cluster-eval", "release"]) => {
                    heartbeat::release
                }
                ("GET", ["api", "v1", "silences"]) => silences::list,
                ("POST", ["api", "v1", "silences"]) => silences::create,
                ("DELETE", ["api", "v1", "silences", _]) => silences::delete,
                ("GET", ["api", "v1", "webhooks"]) => webhooks::list,
                ("GET", ["api", "v1", "webhooks", "templates"]) => webhooks::templates,
                ("POST", ["api", "v1", "webhooks"]) => webhooks::create,
                ("POST", ["api", "v1", "webhooks", "test"]) => webhooks::test,
                ("POST", ["api", "v1", "webhooks", "preview"]) => webhooks::preview,
                ("PUT", ["api", "v1", "webhooks", _]) => webhooks::update,
                ("DELETE", ["api", "v1", "webhooks", _]) => webhooks::delete,
                _ => return Err(ApiError::not_found("Not found")),
            };
            let session = require_session(app, req)?;
            handler(app, req, &session, &path)
        }
    }
}

fn require_session(app: &App, req: &Req) -> Result<Session, ApiError> {
    match auth::authenticate(&app.db, &app.sessions, req.session_token(), app.clock.utc()) {
        Ok(s) => Ok(s),
        Err(AuthFailure::Db(e)) => Err(e.into()),
        Err(why) => {
            log::debug!("Refused a session for {} {}: {why:?}", req.method, req.path);
            Err(ApiError::unauthorized())
        }
    }
}

/// `GET /api/health`: whether the database can be queried. Agent connections are
/// not consulted.
fn health(app: &App) -> ApiResult {
    if app.db.is_healthy() {
        Ok(Resp::ok(&json!({ "status": "ok" })))
    } else {
        Ok(Resp::json(503, &json!({ "status": "error" })))
    }
}
