//! Outbound load agents: the server dials them. Each listens on its own port on
//! 127.0.0.1 (the kernel picks a free one, so runs beside other benchmarks and
//! tests never collide) and plays an agent's web server over real WebSockets:
//! `/ws/register` takes the REGISTRATION_REQUEST with the registration secret and
//! keeps the issued client id and token; `/ws/agent` checks both halves of that
//! identity, sends AUTH, waits for AUTH_SUCCESS, then reports like an inbound load
//! agent (the shared [`Reporter`]). A session the server ends (a redial) is
//! counted and the agent waits for the next dial, as a real agent does.

use super::agents::{auth_message, get_json, post, rss_kib, threads, timed_out, Reporter};
use super::{flag, number};
use serde_json::{json, Value};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::protocol::frame::{coding::CloseCode, CloseFrame};
use tungstenite::{Message, WebSocket};
use vrrp_protocol::messages::envelope;

/// How long a load agent waits for the server's next message in a handshake
/// step (the REGISTRATION_REQUEST, AUTH_SUCCESS), as the real agent does.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Counters the agents share with the run.
#[derive(Default)]
struct Counts {
    registered: AtomicUsize,
    /// Sessions that reached AUTH_SUCCESS.
    authenticated: AtomicUsize,
    /// Sessions the server (or the network) ended before the run did.
    ended: AtomicUsize,
    /// Dials refused: a wrong secret or identity, a second registration.
    refused: AtomicUsize,
}

/// One outbound load agent: its listener and, once registered, its identity.
struct OutboundAgent {
    hostname: String,
    listener: TcpListener,
    secret: Arc<str>,
    /// (client id, auth token) the server issued.
    identity: Option<(String, String)>,
    reporter: Reporter,
    counts: Arc<Counts>,
}

impl OutboundAgent {
    /// Serves the server's dials, one at a time, until the process ends (the
    /// run does not join these threads: one may sit in `accept`).
    fn serve(mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => self.connection(stream),
                Err(e) => {
                    eprintln!("vrrp-load: {}: accept: {e}", self.hostname);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn connection(&mut self, stream: TcpStream) {
        stream.set_nodelay(true).ok();
        stream.set_read_timeout(Some(STEP_TIMEOUT)).ok();
        let mut target = String::new();
        // tungstenite's handshake callback fixes this signature (its error is a
        // whole HTTP response), so the lint about a large Err does not apply.
        #[allow(clippy::result_large_err)]
        let route = |request: &Request, response: Response| {
            target = request.uri().to_string();
            match request.uri().path() {
                "/ws/register" | "/ws/agent" => Ok(response),
                _ => {
                    let mut refused = ErrorResponse::new(Some("Not found".into()));
                    *refused.status_mut() = tungstenite::http::StatusCode::NOT_FOUND;
                    Err(refused)
                }
            }
        };
        let config = tungstenite::protocol::WebSocketConfig::default()
            .read_buffer_size(8 * 1024)
            .write_buffer_size(0);
        let mut ws = match tungstenite::accept_hdr_with_config(stream, route, Some(config)) {
            Ok(ws) => ws,
            Err(e) => {
                eprintln!("vrrp-load: {}: handshake: {e}", self.hostname);
                return;
            }
        };
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        if path == "/ws/register" {
            self.register(&mut ws);
        } else {
            let query = query.to_owned();
            self.session(&mut ws, &query);
        }
    }

    /// `/ws/register`: the REGISTRATION_REQUEST, answered as the agent spec says.
    fn register(&mut self, ws: &mut WebSocket<TcpStream>) {
        if self.identity.is_some() {
            return self.refuse(ws, 4003, "Already registered");
        }
        let Some(request) = next_message(ws, "REGISTRATION_REQUEST") else {
            return self.refuse(ws, 1008, "Invalid registration request");
        };
        let field = |name: &str| {
            request[name]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let (Some(secret), Some(id), Some(token)) =
            (field("secret"), field("clientId"), field("authToken"))
        else {
            send(
                ws,
                "REGISTRATION_FAILURE",
                json!({ "error": "payload.secret, clientId and authToken are required" }),
            );
            return self.refuse(ws, 1008, "Invalid registration request");
        };
        if secret != *self.secret {
            send(
                ws,
                "REGISTRATION_FAILURE",
                json!({ "error": "Invalid secret" }),
            );
            return self.refuse(ws, 4003, "Invalid secret");
        }
        self.identity = Some((id, token));
        self.counts.registered.fetch_add(1, Ordering::Relaxed);
        send(
            ws,
            "REGISTRATION_SUCCESS",
            json!({ "hostname": self.hostname }),
        );
        close(ws, 1000, "");
    }

    /// `/ws/agent`: both halves of the identity, AUTH, AUTH_SUCCESS, then readings.
    fn session(&mut self, ws: &mut WebSocket<TcpStream>, query: &str) {
        let presented = (query_param(query, "clientId"), query_param(query, "token"));
        let matches = matches!((&self.identity, presented), (Some((id, token)), (Some(i), Some(t))) if *id == i && *token == t);
        if !matches {
            return self.refuse(ws, 4001, "Unauthorized");
        }
        if ws.send(auth_message(&self.hostname)).is_err() {
            self.counts.ended.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if next_message(ws, "AUTH_SUCCESS").is_none() {
            eprintln!("vrrp-load: {}: no AUTH_SUCCESS", self.hostname);
            self.counts.ended.fetch_add(1, Ordering::Relaxed);
            return close(ws, 1000, "");
        }
        self.counts.authenticated.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.reporter.run(ws) {
            eprintln!("vrrp-load: {}: session ended: {e}", self.hostname);
            self.counts.ended.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn refuse(&self, ws: &mut WebSocket<TcpStream>, code: u16, reason: &str) {
        eprintln!(
            "vrrp-load: {}: refused a dial: {code} {reason}",
            self.hostname
        );
        self.counts.refused.fetch_add(1, Ordering::Relaxed);
        close(ws, code, reason);
    }
}

fn send(ws: &mut WebSocket<TcpStream>, kind: &str, payload: Value) {
    let _ = ws.send(Message::text(envelope::encode(kind, &payload)));
}

/// The payload of the next text message if it is of `kind`, within the step
/// timeout; None for anything else (another message, a close, silence).
fn next_message(ws: &mut WebSocket<TcpStream>, kind: &str) -> Option<Value> {
    let deadline = Instant::now() + STEP_TIMEOUT;
    while Instant::now() < deadline {
        match ws.read() {
            Ok(Message::Text(text)) => {
                let v: Value = serde_json::from_str(text.as_str()).ok()?;
                return (v["type"] == kind).then(|| v["payload"].clone());
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if timed_out(&e) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Closes with `code` and waits (briefly) for the server's answering close, so
/// the server reads the code rather than a reset.
fn close(ws: &mut WebSocket<TcpStream>, code: u16, reason: &str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.to_owned().into(),
    };
    if ws.close(Some(frame)).is_err() {
        return;
    }
    ws.get_mut()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .ok();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        match ws.read() {
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if timed_out(&e) => {}
            Err(_) => return,
        }
    }
}

/// The first value of `name` in a query string, percent-decoded.
fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| percent_decode(v))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Open file descriptors of a process.
fn fds(pid: &str) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// What the server process holds at one moment.
struct Footprint {
    rss_kib: u64,
    threads: usize,
    fds: usize,
}

fn footprint(pid: &str) -> Option<Footprint> {
    Some(Footprint {
        rss_kib: rss_kib(pid)?,
        threads: threads(pid)?,
        fds: fds(pid)?,
    })
}

/// `vrrp-load outbound`: N outbound agents registered through the API, the
/// server's memory, threads and fds per outbound client once all are online.
pub fn run(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("outbound needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("outbound needs --token (an admin session token)")?;
    let count = number(args, "--agents", 500)?;
    let seconds = number(args, "--seconds", 10)? as u64;
    let interval = Duration::from_millis(number(args, "--interval-ms", 1000)?.max(1) as u64);
    let server_pid = flag(args, "--server-pid");
    let secret: Arc<str> = flag(args, "--secret")
        .unwrap_or_else(|| "load-registration-secret".into())
        .into();

    let counts = Arc::new(Counts::default());
    let sent = Arc::new(AtomicUsize::new(0));
    let run_until = Arc::new(Mutex::new(None::<Instant>));
    let epoch = Instant::now();
    let mut ports = Vec::with_capacity(count);
    for i in 0..count {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("listen: {e}"))?;
        ports.push(listener.local_addr().map_err(|e| e.to_string())?.port());
        let agent = OutboundAgent {
            hostname: format!("out-{i}"),
            listener,
            secret: secret.clone(),
            identity: None,
            reporter: Reporter {
                i,
                pairs: false,
                interval,
                epoch,
                sent: sent.clone(),
                run_until: run_until.clone(),
            },
            counts: counts.clone(),
        };
        std::thread::Builder::new()
            .name(format!("out-{i}"))
            .stack_size(128 * 1024)
            .spawn(move || agent.serve())
            .map_err(|e| format!("cannot start outbound agent {i}: {e}"))?;
    }
    println!("{count} outbound agents listening on 127.0.0.1, one port each");

    let before = server_pid.as_deref().and_then(footprint);
    let started = Instant::now();
    let mut ids = Vec::with_capacity(count);
    let mut failed = 0;
    for (i, port) in ports.iter().enumerate() {
        let body = json!({ "outboundTargetAddress": format!("127.0.0.1:{port}"), "registrationSecret": &*secret, "hostname": format!("out-{i}") });
        match post(&addr, "/api/v1/clients/outbound", &cookie, &body) {
            Ok(created) => match created["id"].as_str() {
                Some(id) => ids.push(id.to_owned()),
                None => return Err(format!("the create answer has no id: {created}")),
            },
            Err(e) => {
                eprintln!("vrrp-load: out-{i}: {e}");
                failed += 1;
            }
        }
    }
    println!(
        "registered {} outbound agents in {:.1} s through POST /api/v1/clients/outbound ({failed} failed)",
        ids.len(),
        started.elapsed().as_secs_f64()
    );

    // Online as the server sees it, and AUTH_SUCCESS as the agents saw it.
    let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut online = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let list = get_json(&addr, "/api/v1/clients", &cookie)?;
        online = list.as_array().map_or(0, |clients| {
            clients
                .iter()
                .filter(|c| {
                    c["status"] == "online"
                        && c["connectionMode"] == "outbound"
                        && c["id"].as_str().is_some_and(|id| wanted.contains(id))
                })
                .count()
        });
        if online == ids.len() && counts.authenticated.load(Ordering::Relaxed) >= ids.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "online: {online} of {} (all online {:.1} s after the first registration)",
        ids.len(),
        started.elapsed().as_secs_f64()
    );

    // A steady window of readings before the memory is read.
    let sent_at_start = sent.load(Ordering::Relaxed);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let elapsed = window.elapsed().as_secs_f64();
    let sent_in_window = sent.load(Ordering::Relaxed) - sent_at_start;
    let after = server_pid.as_deref().and_then(footprint);
    *run_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());

    println!(
        "readings sent per second:        {:.0} (one every {} ms per agent)",
        sent_in_window as f64 / elapsed,
        interval.as_millis()
    );
    println!(
        "sessions ended by the server:    {}",
        counts.ended.load(Ordering::Relaxed)
    );
    println!(
        "dials refused by the agents:     {}",
        counts.refused.load(Ordering::Relaxed)
    );
    if let (Some(b), Some(a)) = (before, after) {
        let n = ids.len().max(1) as f64;
        println!(
            "server resident memory:          {:.1} MiB before, {:.1} MiB with {} outbound agents",
            b.rss_kib as f64 / 1024.0,
            a.rss_kib as f64 / 1024.0,
            ids.len()
        );
        println!(
            "memory per outbound client:      {:.1} KiB",
            a.rss_kib.saturating_sub(b.rss_kib) as f64 / n
        );
        println!(
            "server threads:                  {} before, {} after ({:.2} per client)",
            b.threads,
            a.threads,
            a.threads.saturating_sub(b.threads) as f64 / n
        );
        println!(
            "server open fds:                 {} before, {} after ({:.2} per client)",
            b.fds,
            a.fds,
            a.fds.saturating_sub(b.fds) as f64 / n
        );
    }
    // Let the sessions close (each looks at the end of the run within an interval).
    std::thread::sleep(interval + Duration::from_millis(200));
    if failed > 0 || online < count {
        return Err(format!(
            "{online} of {count} outbound agents came online ({failed} registrations failed)"
        ));
    }
    Ok(())
}
