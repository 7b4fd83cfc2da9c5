//! The route table: every REST route with its method, path, the least role it
//! needs and its handler. One table, so that the role check, the audit log and
//! the OpenAPI description (`openapi.json`, compared with this table by a test)
//! cannot miss a route.
//!
//! Order of checks: unknown paths under `/api` are 404 before any credential is
//! looked at; then 401 without a valid credential; then 403 below the route's
//! role; only then does the handler read the body. A successful change leaves
//! one audit entry (the handler's [`Note`](crate::audit::Note), or a plain one
//! naming the route when a handler gave none).

use super::{
    activity, agents, api_tokens, audit as api_audit, auth as api_auth, drains, drills, ha,
    heartbeat, history, metrics, provisioning, settings, silences, static_files, users, webhooks,
};
use crate::audit::{self, Note};
use crate::auth::{self, AuthFailure, Role, Session};
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::App;
use serde_json::json;

type SessionHandler = fn(&App, &Req, &Session, &[&str]) -> ApiResult;
type PublicHandler = fn(&App, &Req) -> ApiResult;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Access {
    /// Anyone: login, health, registration (which checks its own token), metrics
    /// (which checks its own network list and token).
    Public,
    /// A session or API token with at least this role.
    Least(Role),
}

#[derive(Clone, Copy)]
pub enum Handler {
    Public(PublicHandler),
    Session(SessionHandler),
}

#[derive(Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    /// Segments; `{name}` matches any one segment.
    pub path: &'static str,
    pub access: Access,
    pub handler: Handler,
    /// Only there with `SVC_TEST_HOOKS=1`; not in the OpenAPI description.
    pub test_hook: bool,
}

const fn public(method: &'static str, path: &'static str, h: PublicHandler) -> Route {
    Route {
        method,
        path,
        access: Access::Public,
        handler: Handler::Public(h),
        test_hook: false,
    }
}

const fn least(role: Role, method: &'static str, path: &'static str, h: SessionHandler) -> Route {
    Route {
        method,
        path,
        access: Access::Least(role),
        handler: Handler::Session(h),
        test_hook: false,
    }
}

const fn viewer(method: &'static str, path: &'static str, h: SessionHandler) -> Route {
    least(Role::Viewer, method, path, h)
}

const fn operator(method: &'static str, path: &'static str, h: SessionHandler) -> Route {
    least(Role::Operator, method, path, h)
}

const fn admin(method: &'static str, path: &'static str, h: SessionHandler) -> Route {
    least(Role::Admin, method, path, h)
}

const fn test_hook(method: &'static str, path: &'static str, h: SessionHandler) -> Route {
    Route {
        test_hook: true,
        ..admin(method, path, h)
    }
}

/// Every REST route. Reading needs a viewer; changing needs an administrator,
/// except what a viewer may change about itself (its own password, checked in
/// the handler; its seen-marks) and what an operator may do (silences).
pub const ROUTES: &[Route] = &[
    public("POST", "/api/login", api_auth::login),
    public("POST", "/api/auth/logout", api_auth::logout),
    public("GET", "/api/auth/config", api_auth::config),
    public("GET", "/api/auth/login", api_auth::oidc_login),
    public("GET", "/api/auth/callback", api_auth::oidc_callback),
    public("GET", "/api/health", health),
    public("GET", "/api/openapi.json", openapi),
    public("GET", "/metrics", metrics::serve),
    public("GET", "/api/v1/ping", ping),
    public("POST", "/api/v1/register", agents::register),
    // Public: the dashboard links to it beside the webhook editor.
    public("GET", "/docs/webhook-templates", webhook_template_docs),
    viewer("GET", "/api/v1/me", api_auth::me),
    viewer("GET", "/api/v1/users", users::list),
    admin("POST", "/api/v1/users", users::create),
    viewer("PUT", "/api/v1/users/{userId}", users::update),
    viewer("PATCH", "/api/v1/users/{userId}", users::update),
    admin("DELETE", "/api/v1/users/{userId}", users::delete),
    admin("GET", "/api/v1/api-tokens", api_tokens::list),
    admin("POST", "/api/v1/api-tokens", api_tokens::create),
    admin("DELETE", "/api/v1/api-tokens/{tokenId}", api_tokens::delete),
    admin("GET", "/api/v1/audit", api_audit::list),
    // Registration tokens are listed by hash: no credential in the list.
    viewer("GET", "/api/v1/tokens", agents::list_tokens),
    admin("POST", "/api/v1/tokens", agents::create_token),
    admin("DELETE", "/api/v1/tokens/{tokenHash}", agents::delete_token),
    viewer("GET", "/api/v1/clients", agents::list_clients),
    admin("POST", "/api/v1/clients/outbound", agents::create_outbound),
    admin(
        "POST",
        "/api/v1/clients/{clientId}/reconnect",
        agents::reconnect,
    ),
    admin("PUT", "/api/v1/clients/{clientId}", agents::update_client),
    operator("POST", "/api/v1/clients/{clientId}/drain", drains::drain),
    operator(
        "DELETE",
        "/api/v1/clients/{clientId}/drain",
        drains::undrain,
    ),
    admin(
        "DELETE",
        "/api/v1/clients/{clientId}",
        agents::delete_client,
    ),
    viewer(
        "GET",
        "/api/v1/clients/{clientId}/keepalived",
        agents::client_state,
    ),
    admin(
        "POST",
        "/api/v1/clients/{clientId}/keepalived/refresh",
        agents::refresh_state,
    ),
    operator(
        "POST",
        "/api/v1/clusters/{clusterKey}/drills",
        drills::create,
    ),
    viewer("GET", "/api/v1/drills", drills::list),
    viewer("GET", "/api/v1/drills/{drillId}", drills::get),
    viewer("GET", "/api/v1/keepalived/states", agents::list_states),
    viewer("GET", "/api/v1/keepalived/clusters", agents::list_clusters),
    viewer(
        "GET",
        "/api/v1/keepalived/clusters/history",
        history::history,
    ),
    viewer(
        "GET",
        "/api/v1/keepalived/clusters/availability",
        history::availability_of_all,
    ),
    viewer("GET", "/api/v1/activity", activity::list_activity),
    viewer("POST", "/api/v1/activity/seen", activity::mark_seen),
    admin("DELETE", "/api/v1/activity", activity::delete_activity),
    viewer("GET", "/api/v1/settings/cleanup", settings::get),
    admin("PUT", "/api/v1/settings/cleanup", settings::put),
    admin(
        "POST",
        "/api/v1/settings/cleanup/invalid-tokens",
        settings::clean_tokens,
    ),
    admin(
        "POST",
        "/api/v1/settings/cleanup/notifications",
        settings::clean_notifications,
    ),
    viewer("GET", "/api/v1/settings/scheduler-status", settings::status),
    viewer("GET", "/api/v1/settings/provisioning", provisioning::status),
    viewer("GET", "/api/v1/ha", ha::get),
    viewer("GET", "/api/v1/settings/heartbeat", heartbeat::get),
    admin("PUT", "/api/v1/settings/heartbeat", heartbeat::put),
    viewer("GET", "/api/v1/silences", silences::list),
    operator("POST", "/api/v1/silences", silences::create),
    operator("DELETE", "/api/v1/silences/{silenceId}", silences::delete),
    viewer("GET", "/api/v1/webhooks", webhooks::list),
    viewer("GET", "/api/v1/webhooks/templates", webhooks::templates),
    admin("POST", "/api/v1/webhooks", webhooks::create),
    admin("POST", "/api/v1/webhooks/test", webhooks::test),
    admin("POST", "/api/v1/webhooks/preview", webhooks::preview),
    admin("PUT", "/api/v1/webhooks/{webhookId}", webhooks::update),
    admin("DELETE", "/api/v1/webhooks/{webhookId}", webhooks::delete),
    test_hook("POST", "/api/v1/test-hooks/ha/vip", ha::force),
    test_hook(
        "POST",
        "/api/v1/test-hooks/cluster-eval/hold",
        heartbeat::hold,
    ),
    test_hook(
        "POST",
        "/api/v1/test-hooks/cluster-eval/release",
        heartbeat::release,
    ),
];

/// Routes that change nothing and so leave no audit entry: previews, the
/// caller's own seen-marks, and leaving.
const NOT_A_CHANGE: &[(&str, &str)] = &[
    ("POST", "/api/v1/webhooks/preview"),
    ("POST", "/api/v1/activity/seen"),
    ("POST", "/api/auth/logout"),
];

/// Whether a route changes state: everything but `GET`/`HEAD` and [`NOT_A_CHANGE`].
pub fn changes_state(route: &Route) -> bool {
    !matches!(route.method, "GET" | "HEAD") && !NOT_A_CHANGE.contains(&(route.method, route.path))
}

/// Whether `path` (split into segments) matches a route's pattern.
fn matches(pattern: &str, path: &[&str]) -> bool {
    let mut want = pattern.split('/').filter(|s| !s.is_empty());
    let mut got = path.iter();
    loop {
        match (want.next(), got.next()) {
            (None, None) => return true,
            (Some(w), Some(g)) if w.starts_with('{') || w == *g => {}
            _ => return false,
        }
    }
}

/// The route for a method and path, if any.
pub fn find(method: &str, path: &[&str]) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.method == method && matches(r.path, path))
}

/// Answers a request: a route of the table, the dashboard's files, or 404.
pub fn route(app: &App, req: &Req) -> ApiResult {
    let segments = req.segments();
    let path: Vec<&str> = segments.iter().map(String::as_str).collect();
    let Some(route) = find(&req.method, &path) else {
        return match (req.method.as_str(), path.first()) {
            // Everything outside /api, /ws and /docs is the dashboard (deep
            // links answer index.html).
            ("GET" | "HEAD", None) => Ok(static_files::serve(req)),
            ("GET" | "HEAD", Some(first)) if !matches!(*first, "api" | "ws" | "docs") => {
                Ok(static_files::serve(req))
            }
            _ => Err(ApiError::not_found("Not found")),
        };
    };
    match (route.access, route.handler) {
        (Access::Public, Handler::Public(handler)) => handler(app, req),
        (Access::Least(role), Handler::Session(handler)) => {
            let session = require_session(app, req)?;
            if session.role < role {
                return Err(ApiError::new(
                    403,
                    format!(
                        "role: {} {} needs the {role} role; you are {}",
                        route.method, route.path, session.role
                    ),
                ));
            }
            let mut resp = handler(app, req, &session, &path)?;
            if changes_state(route) && resp.status < 300 {
                let note = resp.audit.take().unwrap_or_else(|| {
                    Note::new(
                        "api.changed",
                        req.path.clone(),
                        format!("{} {}", route.method, route.path),
                    )
                });
                // The change is made; an entry that could not be written is
                // logged by `record` and does not undo it.
                let _ = audit::record(
                    &app.db,
                    &session.audit_actor(req.client_ip),
                    note,
                    app.clock.utc(),
                );
            }
            Ok(resp)
        }
        // The constructors above pair them; a mismatch is a bug in the table.
        _ => Err(ApiError::internal()),
    }
}

fn require_session(app: &App, req: &Req) -> Result<Session, ApiError> {
    match auth::authenticate(&app.db, &app.sessions, req.session_token(), app.clock.utc()) {
        Ok(s) => Ok(s),
        Err(AuthFailure::Db(e)) => Err(e.into()),
        Err(why) => {
            log::debug!(
                "Refused a credential for {} {}: {why:?}",
                req.method,
                req.path
            );
            Err(ApiError::unauthorized())
        }
    }
}

/// `GET /api/health`: whether the database can be queried. Agent connections are
/// not consulted.
fn health(app: &App, _req: &Req) -> ApiResult {
    if app.db.is_healthy() {
        Ok(Resp::ok(&json!({ "status": "ok" })))
    } else {
        Ok(Resp::json(503, &json!({ "status": "error" })))
    }
}

fn ping(_app: &App, _req: &Req) -> ApiResult {
    Ok(Resp::ok(&json!({ "status": "ok" })))
}

/// The OpenAPI 3.1 description of this table, written by hand beside it.
pub const OPENAPI: &[u8] = include_bytes!("openapi.json");

fn openapi(_app: &App, _req: &Req) -> ApiResult {
    Ok(Resp::json_bytes(200, OPENAPI.to_vec()))
}

fn webhook_template_docs(_app: &App, _req: &Req) -> ApiResult {
    Ok(Resp {
        status: 200,
        headers: Vec::new(),
        body: include_bytes!("../../../static/docs/webhook-templates.md").to_vec(),
        content_type: "text/markdown; charset=utf-8",
        after_sent: None,
        audit: None,
    })
}

#[cfg(test)]
mod tests;
