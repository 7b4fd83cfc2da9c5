//! The local web server (tiny_http): the register page and route, status routes, the
//! `/status` page, `POST /api/connect`, the notify endpoint, the container health route
//! and, in outbound mode, the WebSocket routes `/ws/register` and `/ws/agent` (`ws`).
//!
//! Routes are fixed at start from the config (`Routes`). Handlers are plain functions of
//! (request, shared state) → response; nothing outside this module imports tiny_http. A
//! panic in a handler becomes a 500 for that request only. With a `tls` block the one
//! listener speaks HTTPS (and so WSS) only; there is never a plain-HTTP fallback.

pub mod state;
pub mod ws;

pub use state::{Bind, Routes, WebState};

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use serde_json::{json, Value};
use tiny_http::{Header, Method, Request, Response, Server, StatusCode};
use vrrp_protocol::VrrpState;

use crate::config::{secret_eq, Secret};
use crate::connection::{self, ConnMsg};
use crate::reader::TriggerSource;

/// The scheme the local web server speaks: `https` exactly when a `tls` block is set.
pub fn scheme(tls: bool) -> &'static str {
    if tls {
        "https"
    } else {
        "http"
    }
}

/// Notify endpoint body limit.
pub const MAX_NOTIFY_BODY: usize = 1024;

const STATUS_PAGE: &str = include_str!("../../static/status.html");
const REGISTER_PAGE: &str = include_str!("../../static/register.html");
/// Register form body limit.
const MAX_REGISTER_BODY: usize = 8 * 1024;
/// Workers: a registration waits up to 10 s for the server and `POST /api/connect` up to
/// 6 s for a handshake; the status page must stay responsive meanwhile.
const WORKERS: usize = 4;
/// Longest wait for the next request on a connection, and for any one read.
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Longest a request head may take from its first byte.
const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct WebHandle {
    server: Arc<Server>,
    /// Set at stop: a worker holding a WebSocket (registration wait, AUTH window) lets go.
    stopping: Arc<AtomicBool>,
    workers: Vec<thread::JoinHandle<()>>,
    pub addr: SocketAddr,
}

impl WebHandle {
    /// Stops accepting and waits for the workers.
    pub fn stop(self) {
        self.stopping.store(true, Ordering::SeqCst);
        for _ in &self.workers {
            self.server.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
    }
}

/// The certificate chain and key of the `tls` block, read at start.
pub struct TlsPem {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

impl TlsPem {
    /// Reads both files; the error names the key that cannot be used.
    pub fn read(cert: &std::path::Path, key: &std::path::Path) -> Result<TlsPem, String> {
        let read = |name: &str, p: &std::path::Path| {
            std::fs::read(p).map_err(|e| format!("{name}: cannot read {}: {e}", p.display()))
        };
        Ok(TlsPem {
            cert: read("tls.cert", cert)?,
            key: read("tls.key", key)?,
        })
    }
}

/// Why the web server did not start.
#[derive(Debug)]
pub enum StartError {
    /// The port could not be bound: logged, the agent goes on without its web UI.
    Listen(String),
    /// The `tls` block cannot be used: the start ends (never a plain-HTTP fallback).
    Tls(String),
}

/// Starts the server, with HTTPS when `tls` is given.
pub fn start(
    state: WebState,
    bind: &Bind,
    tls: Option<TlsPem>,
) -> Result<Option<WebHandle>, StartError> {
    let addr: SocketAddr = match bind {
        Bind::All(p) => SocketAddr::from(([0, 0, 0, 0], *p)),
        Bind::LoopbackOnly(p) => SocketAddr::from(([127, 0, 0, 1], *p)),
        Bind::None(_) => return Ok(None),
    };
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| StartError::Listen(format!("cannot listen on {addr}: {e}")))?;
    // The same limits as the server's, kept by tiny_http itself (patched, see
    // vendor/tiny_http/VENDORED.md): a request head within HEADER_TIMEOUT of
    // its first byte, no read blocking longer than IDLE_TIMEOUT, and its
    // `http-reaper` closing idle connections by the same policy.
    let limits = tiny_http::Limits {
        read_timeout: Some(IDLE_TIMEOUT),
        head_deadline: Some(HEADER_TIMEOUT),
        // Read before a worker sees the request: slow senders hold no worker.
        prebuffer_body: MAX_REGISTER_BODY,
        // One policy for both binaries; its head timeout is HEADER_TIMEOUT.
        idle: Some(tiny_http::IdlePolicy::default()),
    };
    let server = match tls {
        None => Server::from_listener_with_limits(listener, None, limits)
            .map_err(|e| StartError::Listen(format!("cannot serve on {addr}: {e}")))?,
        Some(pem) => Server::from_listener_with_limits(
            listener,
            Some(tiny_http::SslConfig {
                certificate: pem.cert,
                private_key: pem.key,
            }),
            limits,
        )
        .map_err(|e| {
            StartError::Tls(format!("tls: the certificate and key cannot be used: {e}"))
        })?,
    };
    let server = Arc::new(server);
    let addr = server.server_addr().to_ip().unwrap_or(addr);
    let state = Arc::new(state);
    let mut workers = Vec::new();
    let stopping = Arc::new(AtomicBool::new(false));
    for i in 0..WORKERS {
        let server = server.clone();
        let state = state.clone();
        let stopping = stopping.clone();
        let w = thread::Builder::new()
            .name(format!("http-worker-{i}"))
            .spawn(move || {
                crate::fatal::guard("http-worker", || {
                    while let Ok(req) = server.recv() {
                        serve(&state, req, &stopping);
                    }
                })
            })
            .map_err(|e| StartError::Listen(format!("cannot start the web server threads: {e}")))?;
        workers.push(w);
    }
    Ok(Some(WebHandle {
        server,
        stopping,
        workers,
        addr,
    }))
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("static header is valid")
}

/// A response not yet bound to a request.
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    pub location: Option<&'static str>,
    /// Work to do after the answer went out (the notify endpoint's reading).
    pub after: Option<TriggerSource>,
}

impl Reply {
    fn json(status: u16, v: Value) -> Reply {
        Reply {
            status,
            body: v.to_string().into_bytes(),
            content_type: "application/json",
            location: None,
            after: None,
        }
    }
    fn error(status: u16, msg: &str) -> Reply {
        Reply::json(status, json!({ "error": msg }))
    }
    fn not_found() -> Reply {
        Reply::error(404, "Not found")
    }
    fn html(page: &str) -> Reply {
        Reply {
            status: 200,
            body: page.as_bytes().to_vec(),
            content_type: "text/html; charset=utf-8",
            location: None,
            after: None,
        }
    }
    fn redirect(to: &'static str) -> Reply {
        Reply {
            status: 302,
            body: Vec::new(),
            content_type: "text/plain",
            location: Some(to),
            after: None,
        }
    }
}

fn serve(state: &WebState, mut req: Request, stopping: &AtomicBool) {
    if state.routes.outbound && *req.method() == Method::Get {
        let path = req.url().split('?').next().unwrap_or("");
        if path == "/ws/register" || path == "/ws/agent" {
            let path = path.to_string();
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                ws::serve(state, req, &path, stopping)
            }))
            .is_err()
            {
                log::error!("WebSocket handler failed: {path}");
            }
            return;
        }
    }
    // Any other upgrade request is refused before its body is touched: tiny_http
    // hands it the raw socket as body, and reading that "to the end" held a
    // worker until the peer left (four froze the web server).
    let wants_upgrade = req.headers().iter().any(|h| {
        h.field.equiv("Upgrade")
            || (h.field.equiv("Connection")
                && h.value.as_str().to_ascii_lowercase().contains("upgrade"))
    });
    let reply = if wants_upgrade {
        Reply::error(400, "upgrade: not a WebSocket route")
    } else {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| route(state, &mut req)))
            .unwrap_or_else(|_| {
                log::error!("request handler failed: {} {}", req.method(), req.url());
                Reply::error(500, "Internal error")
            })
    };
    let mut resp = Response::from_data(reply.body)
        .with_status_code(StatusCode(reply.status))
        .with_header(header("Content-Type", reply.content_type))
        .with_header(header("Cache-Control", "no-store"))
        .with_header(header("Referrer-Policy", "no-referrer"));
    if let Some(loc) = reply.location {
        resp = resp.with_header(header("Location", loc));
    }
    if let Err(e) = req.respond(resp) {
        log::debug!("response not delivered: {e}");
    }
    if let Some(src) = reply.after {
        state.trigger.fire(src);
    }
}

fn route(state: &WebState, req: &mut Request) -> Reply {
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let method = req.method().clone();
    let r = &state.routes;
    let any_page = r.status_page || r.register_page;
    match (&method, path.as_str()) {
        (Method::Get, "/") if r.register_page && state.reg.page_open() => {
            Reply::redirect("/register")
        }
        (Method::Get, "/") if r.status_page => Reply::redirect("/status"),
        (Method::Get, "/register") if r.register_page && state.reg.page_open() => {
            Reply::html(REGISTER_PAGE)
        }
        (Method::Get, "/register") if r.register_configured && r.status_page => {
            Reply::redirect("/status")
        }
        (Method::Post, "/api/register") if r.register_page => register(state, req),
        (Method::Get, "/status") if r.status_page => Reply::html(STATUS_PAGE),
        (Method::Get, "/api/status/keepalived") if r.status_page => {
            Reply::json(200, keepalived_summary(state))
        }
        (Method::Get, "/api/status/connection") if r.status_page => {
            Reply::json(200, connection_summary(state))
        }
        (Method::Post, "/api/connect") if r.status_page => connect(state),
        (Method::Get, "/api/status/config") if r.status_page => {
            Reply::json(200, config_summary(state))
        }
        (Method::Get, "/api/status/auth") if any_page => Reply::json(200, auth_summary(state)),
        (Method::Get, "/api/status/server") if any_page => match state.reg.server_url() {
            Some(url) => Reply::json(200, crate::registration::serverapi::ping(&url)),
            None => Reply::json(
                200,
                json!({ "configured": false, "url": null, "reachable": false, "status": null, "latencyMs": null, "error": "no serverUrl configured" }),
            ),
        },
        (Method::Post, "/api/keepalived/notify") if r.notify => notify(state, req),
        (Method::Get, "/api/health") if r.health && is_loopback(req.remote_addr()) => {
            Reply::json(200, json!({ "status": "ok" }))
        }
        _ => Reply::not_found(),
    }
}

/// `{hasAuthToken, statusPage}`; an agent that may take more than one server
/// (`maxServers` above 1) also says which servers it has and how many more it takes,
/// for the register page. Never a token.
fn auth_summary(state: &WebState) -> Value {
    let mut v = json!({
        "hasAuthToken": state.reg.has_identity(),
        "statusPage": state.routes.status_page,
    });
    if state.config.max_servers > 1 {
        let servers = state.reg.servers();
        v["servers"] = servers
            .iter()
            .map(|s| json!({ "clientId": s.identity.client_id, "serverUrl": s.url }))
            .collect();
        v["moreServers"] = json!(state.config.max_servers.saturating_sub(servers.len()));
    }
    v
}

fn register(state: &WebState, req: &mut Request) -> Reply {
    let err = |e: crate::registration::RegError| Reply::json(e.status, e.to_json());
    if !state.reg.page_open() {
        return Reply::not_found();
    }
    if req.body_length().is_some_and(|n| n > MAX_REGISTER_BODY) {
        return err(crate::registration::RegError {
            status: 413,
            stage: "input",
            message: "body: at most 8 KB".into(),
            field: Some("body"),
        });
    }
    let mut body = Vec::new();
    if req
        .as_reader()
        .take(MAX_REGISTER_BODY as u64 + 1)
        .read_to_end(&mut body)
        .is_err()
        || body.len() > MAX_REGISTER_BODY
    {
        return err(crate::registration::RegError {
            status: 400,
            stage: "input",
            message: "body: cannot be read (at most 8 KB)".into(),
            field: Some("body"),
        });
    }
    let c = &state.config;
    match state.reg.register(
        &body,
        &state.hostname,
        c.allow_self_signed,
        &state.dir,
        &c.config_path,
    ) {
        None => Reply::not_found(),
        Some(Err(e)) => err(e),
        Some(Ok(done)) => {
            // The new server waits for the events still queued, from its first session.
            state.queue.add_server(&done.identity.client_id);
            let Some(slot) = state.conns.get(done.slot) else {
                // Slots are made for `maxServers`, and registration stops there.
                log::error!("no connection for server {}", done.slot + 1);
                return Reply::error(500, "Internal error");
            };
            slot.status.write().has_target = true;
            slot.inbox.send(ConnMsg::SetTarget(connection::Target {
                base_url: done.url,
                client_id: done.identity.client_id,
                token: Secret::new(done.identity.auth_token),
                allow_self_signed: c.allow_self_signed,
            }));
            let mut v = json!({ "success": true, "message": "Registration successful" });
            // Said only where a second server may follow, so a one-server agent's
            // answer stays as it was.
            if c.max_servers > 1 {
                v["moreServers"] = json!(c.max_servers.saturating_sub(done.slot + 1));
            }
            if let Some(w) = done.warning {
                v["warning"] = json!(w);
            }
            Reply::json(200, v)
        }
    }
}

fn connect(state: &WebState) -> Reply {
    if !state.conns.iter().any(|s| s.status.read().has_target) {
        return Reply::json(
            409,
            json!({ "connected": false, "error": "not registered with a server (no identity or no serverUrl)" }),
        );
    }
    let r = state
        .conns
        .connect(connection::HANDSHAKE_TIMEOUT + std::time::Duration::from_secs(5));
    Reply::json(200, r.to_json())
}

/// The activity queue: events not yet acknowledged, and whether `queue.json` holds
/// them (it does not while the data directory refuses writes, e.g. a full disk).
fn queue_summary(state: &WebState) -> Value {
    let failing = state.save_status.lock().clone();
    json!({
        "events": state.queue.len(),
        "onDisk": failing.is_none(),
        "writeError": failing.as_ref().map(|f| f.error.clone()),
        "writeFailingSince": failing.map(|f| f.since),
    })
}

fn connection_summary(state: &WebState) -> Value {
    // The top level is the first server's, as for a one-server agent; `servers` lists
    // each registered server's connection and queue position.
    let servers = state.reg.servers();
    let summary = |st: &connection::ConnStatus| {
        let next = st.next_attempt.map(|t| {
            t.saturating_duration_since(std::time::Instant::now())
                .as_millis() as u64
        });
        json!({
            "connected": st.state == connection::ConnState::Connected,
            "state": st.state.as_str(),
            "attempts": st.attempts,
            "lastError": st.last_error,
            "nextAttemptInMs": next,
            "connectedSince": st.connected_since,
        })
    };
    let st = state.conns.first().status.read().clone();
    let mut v = summary(&st);
    // Inbound: an identity and a server to dial; outbound: the identity alone.
    v["registered"] = json!(st.has_target || state.reg.has_identity());
    v["queue"] = queue_summary(state);
    if state.config.max_servers > 1 {
        v["servers"] = servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut one = state
                    .conns
                    .get(i)
                    .map_or(Value::Null, |c| summary(&c.status.read()));
                one["clientId"] = json!(s.identity.client_id);
                one["serverUrl"] = json!(s.url);
                one["mode"] = json!(if s.url.is_some() {
                    "inbound"
                } else {
                    "outbound"
                });
                one["pendingEvents"] = json!(state.queue.pending_for(&s.identity.client_id));
                one
            })
            .collect();
        v["maxServers"] = json!(state.config.max_servers);
    }
    v
}

fn is_loopback(addr: Option<&SocketAddr>) -> bool {
    match addr.map(|a| a.ip()) {
        Some(IpAddr::V4(a)) => a.is_loopback(),
        Some(IpAddr::V6(a)) => {
            a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        None => false,
    }
}

fn bearer_ok(req: &Request, token: &Secret) -> bool {
    req.headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
        .is_some_and(|t| secret_eq(t.trim().as_bytes(), token.expose().as_bytes()))
}

fn notify(state: &WebState, req: &mut Request) -> Reply {
    let Some(token) = &state.config.keepalived.notify_token else {
        return Reply::not_found();
    };
    if !bearer_ok(req, token) {
        return Reply::error(401, "Unauthorized");
    }
    if req.body_length().is_some_and(|n| n > MAX_NOTIFY_BODY) {
        return Reply::error(413, "Body too large (at most 1 KB)");
    }
    let mut body = Vec::new();
    if let Err(e) = req
        .as_reader()
        .take(MAX_NOTIFY_BODY as u64 + 1)
        .read_to_end(&mut body)
    {
        return Reply::error(400, &format!("cannot read the body: {e}"));
    }
    if body.len() > MAX_NOTIFY_BODY {
        return Reply::error(413, "Body too large (at most 1 KB)");
    }
    log::debug!("notify endpoint: {}", String::from_utf8_lossy(&body).trim());
    let mut r = Reply::json(202, json!({ "status": "accepted" }));
    r.after = Some(TriggerSource::Endpoint);
    r
}

fn keepalived_summary(state: &WebState) -> Value {
    let st = state.status.read();
    let k = &state.config.keepalived;
    let triggers = json!({
        "poll": k.poll_interval_secs,
        "fifo": st.fifo.as_str(),
        "endpoint": k.notify_token.is_some(),
    });
    match &st.last {
        None => json!({
            "collected": false, "running": false, "version": null, "error": null,
            "instances": 0, "master": 0, "collectedAt": null, "triggers": triggers,
        }),
        Some(r) => json!({
            "collected": true,
            "running": r.running,
            "version": r.version,
            "error": r.error,
            "instances": r.instances.len(),
            "master": r.instances.iter().filter(|i| i.state == VrrpState::Master).count(),
            "collectedAt": r.collected_at,
            "triggers": triggers,
        }),
    }
}

fn config_summary(state: &WebState) -> Value {
    let c = &state.config;
    let k = &c.keepalived;
    let server_url = state.reg.server_url();
    let mode = crate::config::Mode::derive(state.reg.has_identity(), server_url.is_some());
    json!({
        "mode": mode.as_str(),
        "serverUrl": server_url,
        "listenPort": c.listen_port,
        "tls": c.tls.is_some(),
        "enableStatusPage": c.enable_status_page,
        "enableRegisterPage": c.enable_register_page,
        "allowSelfSignedCertificates": c.allow_self_signed,
        "allowedNetworks": c.allowed_networks.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        "registrationSecret": state.reg.has_secret(),
        "container": c.container,
        "keepalived": {
            "pollInterval": k.poll_interval_secs,
            "notifyFifo": k.notify_fifo,
            "notifyToken": k.notify_token.is_some(),
            "dataFile": k.data_file,
            "statsFile": k.stats_file,
            "jsonFile": k.json_file,
            "jsonSignal": k.json_signal,
            "dumpTimeoutMs": k.dump_timeout_ms,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_detection() {
        assert!(is_loopback(Some(&"127.0.0.1:1".parse().unwrap())));
        assert!(is_loopback(Some(&"[::1]:1".parse().unwrap())));
        assert!(is_loopback(Some(&"[::ffff:127.0.0.1]:1".parse().unwrap())));
        assert!(!is_loopback(Some(&"10.0.0.1:1".parse().unwrap())));
        assert!(!is_loopback(None));
    }
}
