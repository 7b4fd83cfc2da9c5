//! The HTTP layer, in three parts: [`transport`] (listening, connections,
//! WebSocket upgrades), [`api`] (the REST routes and the dashboard's files) and
//! [`sessions`] (the agent and dashboard sockets, and the outbound dialer).
//! This file only decides which part answers a request.
//!
//! Invariant: nothing outside `http` touches tiny_http. Handlers validate, call the
//! domain modules and map their errors to status codes here; a panic in a handler
//! becomes a 500 for that request only.

pub mod api;
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
use transport::{conns::ConnTracker, ws};

/// Starts the HTTP server on `listener`: every request goes to [`serve`].
pub fn start(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: Shutdown,
) -> std::io::Result<HttpServer> {
    transport::server::start(listener, shutdown, move |rq, tracker| {
        serve(&app, tracker, rq)
    })
}

fn serve(app: &Arc<App>, tracker: &Arc<ConnTracker>, mut rq: tiny_http::Request) {
    // A WebSocket keeps its own thread for the life of the socket.
    if *rq.method() == tiny_http::Method::Get && ws::is_upgrade(&rq) {
        match rq.url().split('?').next() {
            Some("/ws/agent") => return sessions::agent::start(app.clone(), tracker.clone(), rq),
            Some("/ws/dashboard") => {
                return sessions::dashboard::start(app.clone(), tracker.clone(), rq)
            }
            _ => {}
        }
    }
    let peer = rq.remote_addr().copied();
    let _busy = peer.map(|p| tracker.busy(p));
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
    let result = api::routes::route(app, &req);
    let resp = result.unwrap_or_else(ApiError::into_resp);
    if resp.status >= 500 {
        log::warn!("{} {} answered {}", req.method, req.path, resp.status);
    } else {
        log::debug!("{} {} answered {}", req.method, req.path, resp.status);
    }
    Some(resp)
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
