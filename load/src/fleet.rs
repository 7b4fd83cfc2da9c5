//! A fleet of simulated agents that behave like the real one when their socket
//! drops: they wait on the agent's reconnect ladder (5, 10, 30, then 60 s, each
//! plus up to 3 s of jitter: `vrrp_protocol::ladder`), give a handshake
//! 5 s (the agent's handshake timeout), and count as connected only once
//! AUTH_SUCCESS came back. Also the `/api/health` probe that samples how long a
//! REST answer takes while the fleet reconnects.

use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;
use vrrp_protocol::messages::{envelope, kind};

/// The agent's handshake timeout (its ladder is `vrrp_protocol::ladder`'s).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an agent waits for AUTH_SUCCESS after sending AUTH.
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);

/// What the agent threads share with the driver.
pub struct Shared {
    pub addr: String,
    pub epoch: Instant,
    pub interval: Duration,
    /// Agents holding an authenticated socket now.
    pub connected: AtomicUsize,
    /// Agents that connected at least once.
    pub ever_connected: AtomicUsize,
    pub sent: AtomicUsize,
    /// Connection attempts that failed (refused, handshake or AUTH timeout).
    pub failed_attempts: AtomicUsize,
    /// Sockets that dropped after they had authenticated.
    pub dropped: AtomicUsize,
    pub stop: AtomicBool,
    /// Bumped on each server restart; an agent reports its first AUTH_SUCCESS
    /// of each generation.
    pub generation: AtomicUsize,
    pub restart_at: Mutex<Option<Instant>>,
    /// Time from the restart to each agent's AUTH_SUCCESS.
    pub reconnects: Mutex<Vec<Duration>>,
    /// With `--clusters`: how often each pair failed over (odd: the odd agent is MASTER).
    pub flips: Vec<AtomicU32>,
    pub pairs: bool,
    errors_logged: AtomicUsize,
}

impl Shared {
    pub fn new(addr: &str, epoch: Instant, interval: Duration, agents: usize, pairs: bool) -> Self {
        Shared {
            addr: addr.to_owned(),
            epoch,
            interval,
            connected: AtomicUsize::new(0),
            ever_connected: AtomicUsize::new(0),
            sent: AtomicUsize::new(0),
            failed_attempts: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            generation: AtomicUsize::new(0),
            restart_at: Mutex::new(None),
            reconnects: Mutex::new(Vec::new()),
            flips: (0..agents.div_ceil(2)).map(|_| AtomicU32::new(0)).collect(),
            pairs,
            errors_logged: AtomicUsize::new(0),
        }
    }

    fn note_error(&self, i: usize, e: &str) {
        // A few samples say what went wrong without flooding the output.
        if self.errors_logged.fetch_add(1, Ordering::Relaxed) < 5 {
            eprintln!("vrrp-load: agent {i}: {e}");
        }
    }

    /// Marks a restart: agents report their next AUTH_SUCCESS against it.
    pub fn restarted(&self) {
        *self.restart_at.lock().unwrap() = Some(Instant::now());
        self.reconnects.lock().unwrap().clear();
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn sleep(&self, d: Duration) -> bool {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
        }
        !self.stop.load(Ordering::Relaxed)
    }
}

/// One WebSocket client connect with a deadline over the whole handshake.
pub fn ws_connect(
    addr: &str,
    path: &str,
    cookie: Option<&str>,
    timeout: Duration,
) -> Result<tungstenite::WebSocket<TcpStream>, String> {
    let started = Instant::now();
    let mut request = format!("ws://{addr}{path}")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    if let Some(c) = cookie {
        request.headers_mut().insert(
            "cookie",
            format!("svc_session={c}")
                .parse()
                .map_err(|_| "bad cookie")?,
        );
    }
    let sa = resolve(addr)?;
    let stream =
        TcpStream::connect_timeout(&sa, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_nodelay(true).ok();
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    stream.set_read_timeout(Some(left)).ok();
    stream.set_write_timeout(Some(left)).ok();
    let config = tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(8 * 1024)
        .write_buffer_size(0);
    let (ws, _) = tungstenite::client::client_with_config(request, stream, Some(config))
        .map_err(|e| format!("handshake: {e}"))?;
    Ok(ws)
}

pub fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))
}

/// Connects, sends AUTH and waits for AUTH_SUCCESS.
fn connect_and_auth(
    shared: &Shared,
    path: &str,
    hostname: &str,
) -> Result<tungstenite::WebSocket<TcpStream>, String> {
    let mut ws = ws_connect(&shared.addr, path, None, HANDSHAKE_TIMEOUT)?;
    let auth = json!({ "hostname": hostname, "version": "load", "capabilities": ["vrrp"] });
    ws.send(Message::text(envelope::encode(kind::AUTH, &auth)))
        .map_err(|e| format!("AUTH: {e}"))?;
    let deadline = Instant::now() + AUTH_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no AUTH_SUCCESS within 10 s".into());
        }
        ws.get_mut().set_read_timeout(Some(left)).ok();
        match ws.read() {
            Ok(Message::Text(t)) if t.as_str().contains("\"AUTH_SUCCESS\"") => return Ok(ws),
            Ok(Message::Close(c)) => return Err(format!("closed before AUTH_SUCCESS: {c:?}")),
            Ok(_) => {}
            Err(e) => return Err(format!("waiting for AUTH_SUCCESS: {e}")),
        }
    }
}

/// The reading agent `i` sends: with pairs, agent `i` belongs to cluster `i / 2`
/// (its own /24, VRID 51 for all: the worst case for grouping); the even one is
/// MASTER until the pair fails over.
pub fn reading_for(shared: &Shared, i: usize, sent_us: u64) -> Value {
    let flips = if shared.pairs {
        shared.flips[i / 2].load(Ordering::Relaxed)
    } else {
        0
    };
    pair_reading(i, shared.pairs, flips, sent_us)
}

/// The reading every load agent sends: two BACKUP instances, stamped with its send
/// time (`benchSentUs`) so the dashboard side can measure the latency.
pub(crate) fn reading(sent_us: u64) -> Value {
    let instance = |name: &str, vrid: u32, vip: &str| {
        json!({ "name": name, "state": "BACKUP", "wantedState": "BACKUP", "interface": "eth0", "vrid": vrid,
                "priority": 100, "effectivePriority": 100, "advertInterval": 1, "vips": [vip],
                "syncGroup": null, "lastTransition": "2026-11-21T08:00:00.000Z",
                "stats": { "advertisements_received": 1000, "advertisements_sent": 0, "became_master": 0 } })
    };
    json!({ "collectedAt": "2026-11-21T08:00:00.000Z", "running": true, "pid": 100, "version": "2.2.7",
            "source": "data", "error": null,
            "instances": [instance("VI_1", 51, "192.0.2.100/24"), instance("VI_2", 52, "198.51.100.100/24")],
            "syncGroups": [], "benchSentUs": sent_us })
}

/// The reading of agent `i` after its pair failed over `flips` times (any agent
/// alone, inbound or outbound, with `pairs` false).
pub fn pair_reading(i: usize, pairs: bool, flips: u32, sent_us: u64) -> Value {
    let mut r = reading(sent_us);
    if pairs {
        let pair = i / 2;
        let vip = format!("10.{}.{}.100/24", pair / 256, pair % 256);
        let master = (i % 2 == 0) == (flips % 2 == 0);
        let state = if master { "MASTER" } else { "BACKUP" };
        r["instances"] =
            json!([{ "name": "VI_1", "state": state, "vrid": 51, "priority": 100, "vips": [vip] }]);
    }
    r
}

/// One agent's life: connect, report every interval, and on any drop wait on the
/// ladder and try again, until `stop`.
pub fn agent(shared: Arc<Shared>, i: usize, id: String, token: String, start_delay: Duration) {
    if !shared.sleep(start_delay) {
        return;
    }
    let path = format!("/ws/agent?clientId={id}&token={token}");
    let hostname = format!("load-{i}");
    let mut ladder = vrrp_protocol::ladder::Ladder::default();
    let mut reported_generation = usize::MAX;
    loop {
        match connect_and_auth(&shared, &path, &hostname) {
            Ok(ws) => {
                ladder.reset();
                let generation = shared.generation.load(Ordering::SeqCst);
                if generation != reported_generation {
                    reported_generation = generation;
                    if let Some(at) = *shared.restart_at.lock().unwrap() {
                        shared.reconnects.lock().unwrap().push(at.elapsed());
                    }
                }
                shared.ever_connected.fetch_add(1, Ordering::Relaxed);
                shared.connected.fetch_add(1, Ordering::Relaxed);
                let ended = report(&shared, i, ws);
                shared.connected.fetch_sub(1, Ordering::Relaxed);
                if let Err(e) = ended {
                    shared.dropped.fetch_add(1, Ordering::Relaxed);
                    shared.note_error(i, &e);
                }
            }
            Err(e) => {
                shared.failed_attempts.fetch_add(1, Ordering::Relaxed);
                shared.note_error(i, &e);
            }
        }
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let wait = ladder.next_delay(rand::random::<f64>());
        if !shared.sleep(wait) {
            return;
        }
    }
}

/// Sends a reading every interval until the socket fails (`Err`) or `stop` (`Ok`).
fn report(
    shared: &Shared,
    i: usize,
    mut ws: tungstenite::WebSocket<TcpStream>,
) -> Result<(), String> {
    let interval = shared.interval;
    let offset = (i as u64 * 7) % interval.as_millis().max(1) as u64;
    let mut next = Instant::now() + Duration::from_millis(offset);
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            let _ = ws.close(None);
            let _ = ws.flush();
            return Ok(());
        }
        let now = Instant::now();
        if now >= next {
            let sent_us = shared.epoch.elapsed().as_micros() as u64;
            let msg = envelope::encode(kind::KEEPALIVED_UPDATE, &reading_for(shared, i, sent_us));
            ws.send(Message::text(msg))
                .map_err(|e| format!("send: {e}"))?;
            shared.sent.fetch_add(1, Ordering::Relaxed);
            next += interval;
            if next < now {
                next = now + interval;
            }
        }
        let wait = next
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(1), Duration::from_millis(200));
        ws.get_mut().set_read_timeout(Some(wait)).ok();
        match ws.read() {
            Ok(Message::Close(c)) => return Err(format!("closed by the server: {c:?}")),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

/// Samples `GET /api/health` on a fresh connection every `every` until stopped.
pub struct HealthProbe {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<(Instant, Result<Duration, String>)>>,
}

impl HealthProbe {
    pub fn start(addr: &str, every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, flag) = (addr.to_owned(), stop.clone());
        let handle = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let at = Instant::now();
                samples.push((at, health_once(&addr, Duration::from_secs(5))));
                std::thread::sleep(every.saturating_sub(at.elapsed()));
            }
            samples
        });
        HealthProbe { stop, handle }
    }

    /// Stops and returns the samples taken.
    pub fn finish(self) -> Vec<(Instant, Result<Duration, String>)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// One `GET /api/health`: how long until the whole answer came, or why it failed.
pub fn health_once(addr: &str, timeout: Duration) -> Result<Duration, String> {
    let t = Instant::now();
    let sa = resolve(addr)?;
    let mut s = TcpStream::connect_timeout(&sa, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout)).ok();
    s.write_all(
        format!("GET /api/health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    let (status, _) = super::read_response(&mut BufReader::new(s))?;
    if status != 200 {
        return Err(format!("health answered {status}"));
    }
    Ok(t.elapsed())
}

/// How many successful samples were taken at or after `since`, their p50, p99
/// and max in ms, and the count of failed ones.
pub fn health_summary(
    samples: &[(Instant, Result<Duration, String>)],
    since: Instant,
) -> (usize, f64, f64, f64, usize) {
    let mut ok: Vec<Duration> = samples
        .iter()
        .filter(|(at, _)| *at >= since)
        .filter_map(|(_, r)| r.as_ref().ok().copied())
        .collect();
    let failed = samples
        .iter()
        .filter(|(at, r)| *at >= since && r.is_err())
        .count();
    ok.sort();
    let pct = |p: f64| {
        ok.get(((ok.len() as f64 * p) as usize).min(ok.len().saturating_sub(1)))
            .map_or(0.0, |d| ms(*d))
    };
    (
        ok.len(),
        pct(0.5),
        pct(0.99),
        ok.last().map_or(0.0, |d| ms(*d)),
        failed,
    )
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
