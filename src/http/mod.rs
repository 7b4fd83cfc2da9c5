//! The HTTP layer: tiny_http accepts (in generations, see [`listen`]), a pool of
//! `http-worker` threads answers.
//!
//! Invariant: nothing outside `http` touches tiny_http. Handlers validate, call the
//! domain modules and map their errors to status codes here; a panic in a handler
//! becomes a 500 for that request only.

pub mod api_agents;
pub mod api_auth;
pub mod api_history;
pub mod api_settings;
pub mod api_silences;
pub mod api_users;
pub mod api_webhooks;
pub mod conns;
pub mod listen;
pub mod metrics;
pub mod request;
pub mod response;
pub(crate) mod sockets;
pub mod state;
pub mod static_files;
pub mod validate;
pub mod ws;
pub mod ws_agent;
pub mod ws_dashboard;
pub mod ws_outbound;

use crate::auth::{self, AuthFailure, Session};
use crate::lifecycle::{self, Shutdown};
use conns::{ConnTracker, IdlePolicy, Reaped};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};
use request::{ReadError, Req};
use response::{ApiError, ApiResult, Resp};
use serde_json::json;
pub use state::App;
use std::net::TcpListener;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads answering requests. Handlers are short (the slowest is an Argon2 hash,
/// ~15 ms of CPU), so a few per core keep both cores busy.
const WORKERS: usize = 8;
/// The listen backlog (the kernel caps it at `net.core.somaxconn`): a fleet
/// reconnecting after a restart arrives faster than one accept thread takes it.
const BACKLOG: i32 = 4096;
/// How long the kernel keeps a new connection to itself until its first bytes
/// arrive (TCP_DEFER_ACCEPT, rounded up by Linux to its SYN-ACK retransmission
/// steps: 1 + 2 + 4 + 8 + 16 s). Every HTTP client speaks first, so a request
/// is accepted the moment it arrives; a connection that says nothing costs a
/// kernel request socket instead of tiny_http's thread and two descriptors.
/// 10,000 such connections were the limit of this design (issue 19); with the
/// deferral up to the backlog's worth of them never reach us. When it runs
/// out the kernel hands the connection over all the same, and the reaper's
/// first-request timeout applies from there.
const DEFER_ACCEPT_SECS: i32 = 30;
/// How often the reaper looks at the connections: a starved connection waits at
/// most about this long, a slowloris a tick past its timeout. Longer when a
/// look is costly ([`reap_tick_after`]).
const REAP_TICK: Duration = Duration::from_millis(100);

/// The reaper's next tick after a pass that took `spent` and saw `reaped`: at
/// most a twentieth of a core while all is calm. A pass lists every descriptor;
/// at 5,000 agents that is 6,000 entries of `/proc/self/fd`, and ten passes a
/// second took a tenth of the server's CPU. Under pressure (many idle
/// connections, a limit near, connections starved) it stays at [`REAP_TICK`]:
/// closing is what frees room, and backing off there doubled health's p99 with
/// 10,000 idle connections (`scripts/bench-hostile.sh`).
fn reap_tick_after(spent: Duration, reaped: &Reaped, policy: &IdlePolicy) -> Duration {
    let pressed = reaped.without_request > policy.pressure_above
        || reaped.descriptor_pressure
        || reaped.thread_pressure
        || reaped.starved > 0;
    if pressed {
        REAP_TICK
    } else {
        REAP_TICK.max(spent * 20)
    }
}
/// At most one "near the descriptor limit" warning this often.
const PRESSURE_WARN_EVERY: Duration = Duration::from_secs(60);
/// How often tiny_http's new threads are renamed.
const NAMING_EVERY: Duration = Duration::from_secs(1);

pub struct HttpServer {
    workers: Vec<JoinHandle<()>>,
    done: Receiver<()>,
}

pub fn start(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: Shutdown,
) -> std::io::Result<HttpServer> {
    let local = listener.local_addr()?;
    let port = local.port();
    {
        use std::os::fd::AsRawFd;
        if let Err(e) = sockets::set_backlog(listener.as_raw_fd(), BACKLOG) {
            log::warn!("Cannot raise the listen backlog to {BACKLOG}: {e}");
        }
        if let Err(e) = sockets::set_defer_accept(listener.as_raw_fd(), DEFER_ACCEPT_SECS) {
            log::warn!("Cannot have the kernel hold HTTP connections until their first bytes: {e}");
        }
        if let Err(e) = sockets::set_nodelay(listener.as_raw_fd()) {
            log::warn!("Cannot turn Nagle's algorithm off for HTTP connections: {e}");
        }
    }
    let descriptor_limit = sockets::raise_descriptor_limit();
    // Where the reaper reaches us itself (an unspecified bind address is loopback).
    let self_addr = if local.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], port))
    } else {
        local
    };
    let tracker = Arc::new(ConnTracker::new(port));
    if let Some(limit) = descriptor_limit {
        tracker.set_descriptor_limit(limit);
        log::debug!("Open descriptor limit: {limit}");
    }
    if let Some(ceiling) = sockets::thread_ceiling() {
        tracker.set_thread_limit(ceiling);
        log::debug!("Thread ceiling: {ceiling}");
    }
    let listening = listen::start(listener, tracker.clone(), shutdown.clone())?;
    let accept_tid = listening.accept_tid;

    let (done_tx, done) = bounded(WORKERS);
    let mut workers = Vec::new();
    for i in 0..WORKERS {
        let (requests, app, tracker, shutdown, done_tx) = (
            listening.requests.clone(),
            app.clone(),
            tracker.clone(),
            shutdown.clone(),
            done_tx.clone(),
        );
        workers.push(
            std::thread::Builder::new()
                .name(format!("http-worker-{i}"))
                .spawn(move || {
                    while !shutdown.is_set() {
                        match requests.recv_timeout(Duration::from_millis(200)) {
                            Ok(rq) => serve(&app, &tracker, rq),
                            Err(RecvTimeoutError::Timeout) => {}
                            // Every pump is gone: only at shutdown.
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                    let _ = done_tx.send(());
                })?,
        );
    }

    let reaper_shutdown = shutdown.clone();
    std::thread::Builder::new()
        .name("http-reaper".into())
        .spawn(move || {
            let policy = IdlePolicy::default();
            let mut pressed = false;
            let mut short_of_descriptors = false;
            let mut pressure_warned: Option<Instant> = None;
            let mut named = std::collections::HashSet::new();
            let mut last_naming = Instant::now() - NAMING_EVERY;
            let mut tick = REAP_TICK;
            while !reaper_shutdown.wait_timeout(tick) {
                let started = Instant::now();
                let reaped = tracker.reap(&policy, tick);
                let idle = reaped.without_request;
                if idle > policy.pressure_above && !pressed {
                    log::warn!(
                        "{idle} HTTP connections without a request: closing idle ones after {:?}",
                        policy.pressed
                    );
                }
                pressed = idle > policy.pressure_above;
                let near_a_limit = reaped.descriptor_pressure || reaped.thread_pressure;
                if near_a_limit && !short_of_descriptors {
                    // Running out comes in bursts (closing frees room, the backlog
                    // fills it again): one warning a minute says it.
                    if pressure_warned.is_none_or(|t: Instant| t.elapsed() >= PRESSURE_WARN_EVERY) {
                        log::warn!(
                            "{} descriptors and {} threads open, near a limit: closing idle HTTP connections at once",
                            reaped.descriptors,
                            reaped.threads
                        );
                        pressure_warned = Some(Instant::now());
                    } else {
                        log::debug!(
                            "{} descriptors and {} threads open, near a limit again",
                            reaped.descriptors,
                            reaped.threads
                        );
                    }
                }
                short_of_descriptors = near_a_limit;
                if reaped.closed > 0 {
                    log::debug!("Closed {} idle HTTP connections", reaped.closed);
                }
                if reaped.starved > 0 {
                    log::debug!(
                        "{} connections wait for a tiny_http thread; nudging its pool",
                        reaped.starved
                    );
                    nudge_pool(self_addr, reaped.starved);
                }
                let tid = accept_tid.load(std::sync::atomic::Ordering::Relaxed);
                if last_naming.elapsed() >= NAMING_EVERY && tid != listen::TID_LOOKING {
                    conns::name_inherited_threads((tid > 0).then_some(tid), &mut named);
                    last_naming = Instant::now();
                }
                tick = reap_tick_after(started.elapsed(), &reaped, &policy);
            }
        })?;
    Ok(HttpServer { workers, done })
}

/// Makes tiny_http's pool spawn `n` threads: each connection to our own port that
/// arrives while no pool thread is parked gets a new thread, which serves that
/// (empty) connection and then takes a connection that was queued without one.
fn nudge_pool(addr: std::net::SocketAddr, n: usize) {
    for _ in 0..n.min(64) {
        if let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            drop(s);
        }
    }
}

impl HttpServer {
    /// Waits up to `grace` for the workers to finish the requests they hold.
    pub fn drain(self, grace: Duration) -> bool {
        let deadline = Instant::now() + grace;
        let mut finished = 0;
        while finished < self.workers.len() {
            match self.done.recv_deadline(deadline) {
                Ok(()) => finished += 1,
                Err(_) => return false,
            }
        }
        true
    }
}

fn serve(app: &Arc<App>, tracker: &Arc<ConnTracker>, mut rq: tiny_http::Request) {
    // A WebSocket keeps its own thread for the life of the socket.
    if *rq.method() == tiny_http::Method::Get && ws::is_upgrade(&rq) {
        match rq.url().split('?').next() {
            Some("/ws/agent") => return ws_agent::start(app.clone(), tracker.clone(), rq),
            Some("/ws/dashboard") => return ws_dashboard::start(app.clone(), tracker.clone(), rq),
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
    let result = route(app, &req);
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

type Handler = fn(&App, &Req, &Session, &[&str]) -> ApiResult;

/// The route table. Unknown paths under `/api` are 404 before any session check.
fn route(app: &App, req: &Req) -> ApiResult {
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
        ("POST", ["api", "v1", "register"]) => api_agents::register(app, req),
        // Public: the dashboard links to it beside the webhook editor.
        ("GET", ["docs", "webhook-templates"]) => Ok(Resp {
            status: 200,
            headers: Vec::new(),
            body: include_bytes!("../../static/docs/webhook-templates.md").to_vec(),
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
                ("GET", ["api", "v1", "users"]) => api_users::list,
                ("POST", ["api", "v1", "users"]) => api_users::create,
                ("PUT", ["api", "v1", "users", _]) => api_users::update,
                ("DELETE", ["api", "v1", "users", _]) => api_users::delete,
                ("GET", ["api", "v1", "tokens"]) => api_agents::list_tokens,
                ("POST", ["api", "v1", "tokens"]) => api_agents::create_token,
                ("DELETE", ["api", "v1", "tokens", _]) => api_agents::delete_token,
                ("GET", ["api", "v1", "clients"]) => api_agents::list_clients,
                ("POST", ["api", "v1", "clients", "outbound"]) => api_agents::create_outbound,
                ("POST", ["api", "v1", "clients", _, "reconnect"]) => api_agents::reconnect,
                ("PUT", ["api", "v1", "clients", _]) => api_agents::update_client,
                ("DELETE", ["api", "v1", "clients", _]) => api_agents::delete_client,
                ("GET", ["api", "v1", "clients", _, "keepalived"]) => api_agents::client_state,
                ("POST", ["api", "v1", "clients", _, "keepalived", "refresh"]) => {
                    api_agents::refresh_state
                }
                ("GET", ["api", "v1", "keepalived", "states"]) => api_agents::list_states,
                ("GET", ["api", "v1", "keepalived", "clusters"]) => api_agents::list_clusters,
                ("GET", ["api", "v1", "keepalived", "clusters", "history"]) => api_history::history,
                ("GET", ["api", "v1", "keepalived", "clusters", "availability"]) => {
                    api_history::availability_of_all
                }
                ("GET", ["api", "v1", "activity"]) => api_agents::list_activity,
                ("POST", ["api", "v1", "activity", "seen"]) => api_agents::mark_seen,
                ("DELETE", ["api", "v1", "activity"]) => api_agents::delete_activity,
                ("GET", ["api", "v1", "settings", "cleanup"]) => api_settings::get,
                ("PUT", ["api", "v1", "settings", "cleanup"]) => api_settings::put,
                ("POST", ["api", "v1", "settings", "cleanup", "invalid-tokens"]) => {
                    api_settings::clean_tokens
                }
                ("POST", ["api", "v1", "settings", "cleanup", "notifications"]) => {
                    api_settings::clean_notifications
                }
                ("GET", ["api", "v1", "settings", "scheduler-status"]) => api_settings::status,
                ("GET", ["api", "v1", "silences"]) => api_silences::list,
                ("POST", ["api", "v1", "silences"]) => api_silences::create,
                ("DELETE", ["api", "v1", "silences", _]) => api_silences::delete,
                ("GET", ["api", "v1", "webhooks"]) => api_webhooks::list,
                ("GET", ["api", "v1", "webhooks", "templates"]) => api_webhooks::templates,
                ("POST", ["api", "v1", "webhooks"]) => api_webhooks::create,
                ("POST", ["api", "v1", "webhooks", "test"]) => api_webhooks::test,
                ("POST", ["api", "v1", "webhooks", "preview"]) => api_webhooks::preview,
                ("PUT", ["api", "v1", "webhooks", _]) => api_webhooks::update,
                ("DELETE", ["api", "v1", "webhooks", _]) => api_webhooks::delete,
                _ => return Err(ApiError::not_found("Not found")),
            };
            let session = require_session(app, req)?;
            handler(app, req, &session, &path)
        }
    }
}

fn require_session(app: &App, req: &Req) -> Result<Session, ApiError> {
    match auth::authenticate(&app.db, &app.sessions, req.session_token(), app.clock.now()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costly_reaper_pass_spaces_the_next_one_out_unless_pressed() {
        let policy = IdlePolicy::default();
        let calm = Reaped::default();
        assert_eq!(
            reap_tick_after(Duration::from_millis(1), &calm, &policy),
            REAP_TICK
        );
        let costly = Duration::from_millis(15);
        assert_eq!(
            reap_tick_after(costly, &calm, &policy),
            Duration::from_millis(300)
        );
        for pressed in [
            Reaped {
                without_request: policy.pressure_above + 1,
                ..calm
            },
            Reaped {
                descriptor_pressure: true,
                ..calm
            },
            Reaped {
                thread_pressure: true,
                ..calm
            },
            Reaped { starved: 1, ..calm },
        ] {
            assert_eq!(reap_tick_after(costly, &pressed, &policy), REAP_TICK);
        }
    }
}
