//! The HTTP layer, in three parts: [`transport`] (listening, connections,
//! WebSocket upgrades), [`api`] (the REST routes and the dashboard's files) and
//! [`sessions`] (the agent and dashboard sockets, and the outbound dialer).
//! This file only decides which part answers a request.
//!
//! Invariant: nothing outside `http` touches tiny_http. Handlers validate, call the
//! domain modules and map their errors to status codes here; a panic in a handler
//! becomes a 500 for that request only.

pub mod api;
pub mod origin;
pub mod request;
pub mod response;
pub mod sessions;
pub mod state;
pub mod transport;

use crate::lifecycle::{self, Shutdown};
use request::{ReadError, Req};
use response::{ApiError, Resp};
pub use state::App;
use std::net::TcpListener;
use std::sync::Arc;
pub use transport::server::HttpServer;
use transport::ws;

/// Starts the HTTP server on `listener`: every request goes to [`serve`].
pub fn start(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: Shutdown,
) -> std::io::Result<HttpServer> {
    transport::server::start(listener, shutdown, move |rq| serve(&app, rq))
}

fn serve(app: &Arc<App>, mut rq: tiny_http::Request) {
    // A WebSocket keeps its own thread for the life of the socket.
    if *rq.method() == tiny_http::Method::Get && ws::is_upgrade(&rq) {
        match rq.url().split('?').next() {
            Some("/ws/agent") => {
                // The upgrade path runs on this worker too: a panic in it costs
                // this socket, never the worker (or the process).
                let app = app.clone();
                if lifecycle::contain_panics(|| sessions::agent::start(app, rq)).is_none() {
                    log::error!("An agent socket's upgrade panicked");
                }
                return;
            }
            Some("/ws/dashboard") => {
                // Another origin's page (even a same-site one: another port)
                // carries the operator's cookie: its upgrade is refused.
                if !ws_same_origin(app, &rq) {
                    let resp = ApiError::new(403, "origin: not this server's origin").into_resp();
                    if let Err(e) = rq.respond(to_tiny(resp, app.config.security.hsts)) {
                        log::debug!("Could not send an answer: {e}");
                    }
                    return;
                }
                let app = app.clone();
                if lifecycle::contain_panics(|| sessions::dashboard::start(app, rq)).is_none() {
                    log::error!("A dashboard socket's upgrade panicked");
                }
                return;
            }
            _ => {}
        }
    }
    // Any other upgrade request is refused before its body is touched: tiny_http
    // hands such a request the raw socket as its body, and reading it "to the
    // end" held a worker until the peer left (eight of them froze the API).
    if wants_upgrade(&rq) {
        let resp = ApiError::new(
            400,
            "upgrade: only a WebSocket handshake on /ws/agent or /ws/dashboard",
        )
        .into_resp();
        if let Err(e) = rq.respond(to_tiny(resp, app.config.security.hsts)) {
            log::debug!("Could not send an answer: {e}");
        }
        return;
    }
    let resp = match lifecycle::contain_panics(|| handle(app, &mut rq)) {
        Some(Some(resp)) => resp,
        Some(None) => return,
        None => ApiError::internal().into_resp(),
    };
    let hsts = app.config.security.hsts;
    let mut resp = resp;
    let after_sent = resp.after_sent.take();
    if let Err(e) = rq.respond(to_tiny(resp, hsts)) {
        log::debug!("Could not send an answer: {e}");
    }
    match after_sent {
        Some(response::AfterSent::CloseUserSockets {
            user_id,
            code,
            reason,
        }) => app.hub.close_user(user_id, code, reason),
        None => {}
    }
}

/// The same-origin rule of [`refuse_foreign`] for a socket's upgrade request.
fn ws_same_origin(app: &App, rq: &tiny_http::Request) -> bool {
    let peer = rq
        .remote_addr()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |p| p.ip());
    let host = request::request_host(
        peer,
        ws::header(rq, "x-forwarded-host"),
        ws::header(rq, "host"),
        &app.config.security.trusted_proxies,
    );
    origin::same_origin(
        ws::header(rq, "origin"),
        ws::header(rq, "sec-fetch-site"),
        host.as_deref(),
    )
}

/// Whether a request asks for a protocol change (`Upgrade`, or `Connection:
/// upgrade`): never served as an ordinary request.
fn wants_upgrade(rq: &tiny_http::Request) -> bool {
    rq.headers().iter().any(|h| {
        h.field.equiv("Upgrade")
            || (h.field.equiv("Connection")
                && h.value.as_str().to_ascii_lowercase().contains("upgrade"))
    })
}

fn handle(app: &App, rq: &mut tiny_http::Request) -> Option<Resp> {
    let req = match Req::read(rq, &app.config.security.trusted_proxies) {
        Ok(req) => req,
        Err(ReadError::TooLarge) => {
            return Some(ApiError::new(413, "body: larger than 1 MiB").into_resp())
        }
        Err(ReadError::Io(e)) => {
            log::debug!("Could not read a request: {e}");
            return None;
        }
    };
    if let Some(refused) = refuse_token_in_url(&req).or_else(|| refuse_foreign(&req)) {
        return Some(refused.into_resp());
    }
    let result = api::routes::route(app, &req);
    let resp = result.unwrap_or_else(ApiError::into_resp);
    if resp.status >= 500 {
        log::warn!("{} {} answered {}", req.method, req.path, resp.status);
    } else {
        log::debug!("{} {} answered {}", req.method, req.path, resp.status);
    }
    Some(resp)
}

/// Same origin for every state-changing request that says where it comes from,
/// and JSON bodies only as `application/json` (a `no-cors` form or `text/plain`
/// POST from another page is refused before any route sees it).
///
/// A request with `Authorization: Bearer` and no cookie is exempt: a page on
/// another origin cannot make a browser send that header (it needs a CORS
/// preflight this server never grants), so these rules, which stop forged
/// browser requests, do not apply to scripts.
fn refuse_foreign(req: &Req) -> Option<ApiError> {
    if !matches!(req.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") {
        return None;
    }
    if req.bearer_token().is_some() && req.header("cookie").is_none() {
        return None;
    }
    if !origin::same_origin(
        req.header("origin"),
        req.header("sec-fetch-site"),
        req.host.as_deref(),
    ) {
        return Some(ApiError::new(403, "origin: not this server's origin"));
    }
    if !req.body.is_empty() && !origin::is_json(req.header("content-type")) {
        return Some(ApiError::new(415, "content-type: must be application/json"));
    }
    None
}

/// An API token in the query string is refused outright, before any route:
/// URLs end up in proxy logs and browser history.
fn refuse_token_in_url(req: &Req) -> Option<ApiError> {
    req.query
        .iter()
        .any(|(k, v)| crate::auth::api_tokens::looks_like_token(v) || k == "access_token")
        .then(|| {
            ApiError::new(
                400,
                "token: send API tokens in an Authorization: Bearer header, never in a URL (revoke one that was)",
            )
        })
}

fn to_tiny(resp: Resp, hsts: bool) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut out = tiny_http::Response::from_data(resp.body).with_status_code(resp.status);
    let mut add = |name: &str, value: &str| {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            out.add_header(h);
        }
    };
    add("Content-Type", resp.content_type);
    // API answers are never cached; dashboard files say how they may be.
    if !resp.headers.iter().any(|(n, _)| n == "Cache-Control") {
        add("Cache-Control", "no-store");
    }
    add("X-Content-Type-Options", "nosniff");
    add("Referrer-Policy", "no-referrer");
    if hsts {
        add(
            "Strict-Transport-Security",
            "max-age=15552000; includeSubDomains",
        );
    }
    for (name, value) in &resp.headers {
        add(name, value);
    }
    out
}
