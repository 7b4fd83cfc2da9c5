//! Many agents at once, each on its own thread and WebSocket, speaking the real
//! agent protocol; one dashboard socket measures how long a reading takes from
//! the agent's send to the dashboard.

use super::{flag, number, read_response};
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

pub(crate) fn post(addr: &str, path: &str, cookie: &str, body: &Value) -> Result<Value, String> {
    let body = body.to_string();
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: svc_session={cookie}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let (status, body) = read_response(&mut reader)?;
    let text = String::from_utf8_lossy(&body);
    if !(200..300).contains(&status) {
        return Err(format!("{path} answered {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

pub(crate) fn get(addr: &str, path: &str, cookie: &str) -> Result<Value, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: svc_session={cookie}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let (status, body) = read_response(&mut BufReader::new(stream))?;
    if status != 200 {
        return Err(format!("{path} answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|e| e.to_string())
}

fn ws_connect(
    addr: &str,
    path: &str,
    cookie: Option<&str>,
) -> Result<tungstenite::WebSocket<TcpStream>, String> {
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
    let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_nodelay(true).ok();
    // A server that never answers the handshake is a failure to report, not a hang.
    stream.set_read_timeout(Some(Duration::from_secs(15))).ok();
    let config = tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(8 * 1024)
        .write_buffer_size(0);
    let (ws, _) = tungstenite::client::client_with_config(request, stream, Some(config))
        .map_err(|e| format!("handshake: {e}"))?;
    Ok(ws)
}

/// With `pairs`, agent `i` belongs to cluster `i / 2` (its own /24, VRID 51 for all:
/// the worst case for grouping) and the even one is MASTER.
fn reading_for(i: usize, pairs: bool, sent_us: u64) -> Value {
    let mut r = reading(sent_us);
    if pairs {
        let pair = i / 2;
        let vip = format!("10.{}.{}.100/24", pair / 256, pair % 256);
        let state = if i % 2 == 0 { "MASTER" } else { "BACKUP" };
        r["instances"] =
            json!([{ "name": "VI_1", "state": state, "vrid": 51, "priority": 100, "vips": [vip] }]);
    }
    r
}

fn reading(sent_us: u64) -> Value {
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

/// The AUTH message a load agent opens its session with (inbound and outbound alike).
pub(crate) fn auth_message(hostname: &str) -> Message {
    let auth = json!({ "type": "AUTH", "payload": { "hostname": hostname, "version": "load", "capabilities": ["vrrp"] } });
    Message::text(auth.to_string())
}

/// A read that ran into its timeout (nothing arrived), not a failure.
pub(crate) fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// One load agent's session after AUTH, the same whoever dialled: a reading every
/// interval (the first spread by the agent's number so they do not arrive as one
/// wave), the server's messages read and dropped.
pub(crate) struct Reporter {
    pub i: usize,
    pub pairs: bool,
    pub interval: Duration,
    /// Readings carry their send time from here (the dashboard's latency).
    pub epoch: Instant,
    pub sent: Arc<AtomicUsize>,
    /// Once set, the run ends at this instant and the agent closes its socket.
    pub run_until: Arc<Mutex<Option<Instant>>>,
}

impl Reporter {
    /// Ok when the run ended and the agent closed; Err with the reason when the
    /// session ended any other way (the server closed it, a socket error).
    pub(crate) fn run(&self, ws: &mut WebSocket<TcpStream>) -> Result<(), String> {
        let i = self.i;
        let interval_ms = self.interval.as_millis().max(1) as u64;
        let mut next = Instant::now() + Duration::from_millis((i as u64 * 7) % interval_ms);
        loop {
            let until = *self.run_until.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if until.is_some_and(|u| now >= u) {
                let _ = ws.close(None);
                let _ = ws.flush();
                return Ok(());
            }
            if now >= next {
                let sent_us = self.epoch.elapsed().as_micros() as u64;
                let msg = json!({ "type": "KEEPALIVED_UPDATE", "payload": reading_for(i, self.pairs, sent_us) });
                ws.send(Message::text(msg.to_string()))
                    .map_err(|e| e.to_string())?;
                self.sent.fetch_add(1, Ordering::Relaxed);
                next += self.interval;
            }
            let wait = next
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            ws.get_mut().set_read_timeout(Some(wait)).ok();
            match ws.read() {
                Ok(_) => {}
                Err(tungstenite::Error::Io(e)) if timed_out(&e) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

pub(crate) fn rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub(crate) fn threads(pid: &str) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.count())
}

pub fn run(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("agents needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("agents needs --token (an admin session token)")?;
    let count = number(args, "--agents", 200)?;
    let seconds = number(args, "--seconds", 20)? as u64;
    let interval = Duration::from_millis(number(args, "--interval-ms", 1000)? as u64);
    let server_pid = flag(args, "--server-pid");
    let pairs = args.iter().any(|a| a == "--clusters");
    // How often an agent tries to connect before it counts as failed.
    let attempts = number(args, "--connect-attempts", 1)?.max(1);
    // Agents starting to connect per second (500: one every 2 ms).
    let per_second = number(args, "--connect-per-second", 500)?.clamp(1, 100_000);
    let stagger = Duration::from_secs(1) / per_second as u32;

    // Identities: a registration token and a registration per agent.
    let started = Instant::now();
    let mut identities = Vec::with_capacity(count);
    for i in 0..count {
        let token = post(&addr, "/api/v1/tokens", &cookie, &json!({}))?;
        let token = token["token"].as_str().ok_or("no token")?.to_owned();
        let reg = post(
            &addr,
            "/api/v1/register",
            "",
            &json!({ "token": token, "hostname": format!("load-{i}") }),
        )?;
        identities.push((
            reg["clientId"].as_str().ok_or("no clientId")?.to_owned(),
            reg["token"].as_str().ok_or("no token")?.to_owned(),
        ));
    }
    println!(
        "registered {count} agents in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let before = server_pid.as_deref().and_then(rss_kib);
    let threads_before = server_pid.as_deref().and_then(threads);

    // The measuring dashboard.
    let epoch = Instant::now();
    let latencies = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut dash = ws_connect(&addr, "/ws/dashboard", Some(&cookie))?;
    dash.get_mut()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .ok();
    let dash_thread = {
        let (latencies, stop) = (latencies.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match dash.read() {
                    Ok(Message::Text(t)) => {
                        let now = epoch.elapsed();
                        if let Ok(v) = serde_json::from_str::<Value>(t.as_str()) {
                            if v["type"] == "KEEPALIVED_STATE_UPDATE" {
                                if let Some(sent) = v["payload"]["benchSentUs"].as_u64() {
                                    latencies
                                        .lock()
                                        .unwrap()
                                        .push(now.saturating_sub(Duration::from_micros(sent)));
                                }
                            }
                        }
                    }
                    Ok(Message::Close(_)) => {
                        eprintln!("vrrp-load: the dashboard socket was closed by the server");
                        return;
                    }
                    Ok(_) => {}
                    Err(tungstenite::Error::Io(e))
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => {
                        eprintln!("vrrp-load: dashboard socket: {e}");
                        return;
                    }
                }
            }
        })
    };

    let connected = Arc::new(AtomicUsize::new(0));
    let sent = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let run_until = Arc::new(Mutex::new(None::<Instant>));
    let connect_started = Instant::now();
    let mut handles = Vec::with_capacity(count);
    for (i, (id, token)) in identities.into_iter().enumerate() {
        let (addr, connected, failed) = (addr.clone(), connected.clone(), failed.clone());
        let reporter = Reporter {
            i,
            pairs,
            interval,
            epoch,
            sent: sent.clone(),
            run_until: run_until.clone(),
        };
        let handle = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                // Stagger the connects so the listen backlog is not the thing measured.
                std::thread::sleep(stagger * i as u32);
                let path = format!("/ws/agent?clientId={id}&token={token}");
                let mut attempt = 1;
                let mut ws = loop {
                    match ws_connect(&addr, &path, None) {
                        Ok(ws) => break ws,
                        // Like a real agent, try again later (when asked to), spread
                        // over two seconds so the retries do not arrive as one wave.
                        Err(_) if attempt < attempts => {
                            attempt += 1;
                            std::thread::sleep(Duration::from_millis(
                                1000 + (i as u64 * 37) % 2000,
                            ));
                        }
                        Err(e) => {
                            eprintln!("vrrp-load: agent {i}: {e}");
                            failed.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    }
                };
                if ws.send(auth_message(&format!("load-{i}"))).is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                connected.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = reporter.run(&mut ws) {
                    eprintln!("vrrp-load: agent {i}: {e}");
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            });
        match handle {
            Ok(h) => handles.push(h),
            Err(e) => return Err(format!("cannot start agent thread {i}: {e}")),
        }
    }
    while connected.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < count {
        std::thread::sleep(Duration::from_millis(50));
        // The ramp's own length, plus two minutes for the stragglers.
        if connect_started.elapsed() > stagger * count as u32 + Duration::from_secs(120) {
            return Err("agents did not connect within the ramp and 120 s".into());
        }
    }
    println!(
        "connected {} agents in {:.1} s ({} failed)",
        connected.load(Ordering::Relaxed),
        connect_started.elapsed().as_secs_f64(),
        failed.load(Ordering::Relaxed)
    );
    // Measure a steady window: forget what the ramp-up produced.
    std::thread::sleep(Duration::from_secs(2));
    latencies.lock().unwrap().clear();
    let sent_at_start = sent.load(Ordering::Relaxed);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let elapsed = window.elapsed().as_secs_f64();
    let sent_in_window = sent.load(Ordering::Relaxed) - sent_at_start;
    let mut lat = latencies.lock().unwrap().clone();
    let during = server_pid.as_deref().and_then(rss_kib);
    let threads_during = server_pid.as_deref().and_then(threads);
    // The cluster list while every agent is connected and reporting.
    let mut list_times = Vec::new();
    let mut cluster_count = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let list = get(&addr, "/api/v1/keepalived/clusters", &cookie)?;
        list_times.push(t.elapsed());
        cluster_count = list.as_array().map_or(0, Vec::len);
    }
    list_times.sort();
    *run_until.lock().unwrap() = Some(Instant::now());
    for h in handles {
        let _ = h.join();
    }
    stop.store(true, Ordering::Relaxed);
    let _ = dash_thread.join();

    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "agents:                       {count}, one reading every {} ms each",
        interval.as_millis()
    );
    println!(
        "readings sent per second:     {:.0}",
        sent_in_window as f64 / elapsed
    );
    println!(
        "readings stored per second:   {:.0} (seen by the dashboard)",
        lat.len() as f64 / elapsed
    );
    println!(
        "reading -> dashboard p50:     {:.1} ms",
        pct(0.5).as_secs_f64() * 1e3
    );
    println!(
        "reading -> dashboard p99:     {:.1} ms",
        pct(0.99).as_secs_f64() * 1e3
    );
    if let (Some(b), Some(d)) = (before, during) {
        println!(
            "server resident memory:       {:.1} MiB before, {:.1} MiB with the agents",
            b as f64 / 1024.0,
            d as f64 / 1024.0
        );
        println!(
            "memory per agent connection:  {:.1} KiB",
            (d.saturating_sub(b)) as f64 / count as f64
        );
    }
    println!(
        "cluster list ({cluster_count} clusters): p50 {:.1} ms, max {:.1} ms over 20 GETs",
        list_times[list_times.len() / 2].as_secs_f64() * 1e3,
        list_times.last().map_or(0.0, |t| t.as_secs_f64() * 1e3)
    );
    if let (Some(b), Some(d)) = (threads_before, threads_during) {
        println!("server threads:               {b} before, {d} with the agents");
    }
    Ok(())
}

/// One agent sending an ACTIVITY event every `--every-ms`, timing each ACK: how
/// long ingest waits while something else (a cleanup) works.
/// Registers one agent named `hostname` and connects it over the agent protocol
/// (AUTH sent), for the probes that need a single agent.
pub(crate) fn one_agent(
    addr: &str,
    cookie: &str,
    hostname: &str,
) -> Result<tungstenite::WebSocket<TcpStream>, String> {
    let token = post(addr, "/api/v1/tokens", cookie, &json!({}))?;
    let reg = post(
        addr,
        "/api/v1/register",
        "",
        &json!({ "token": token["token"], "hostname": hostname }),
    )?;
    let (id, auth) = (
        reg["clientId"].as_str().ok_or("no clientId")?,
        reg["token"].as_str().ok_or("no token")?,
    );
    let mut ws = ws_connect(addr, &format!("/ws/agent?clientId={id}&token={auth}"), None)?;
    ws.send(auth_message(hostname)).map_err(|e| e.to_string())?;
    Ok(ws)
}

pub fn activity(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("activity needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("activity needs --token")?;
    let seconds = number(args, "--seconds", 10)? as u64;
    let every = Duration::from_millis(number(args, "--every-ms", 10)? as u64);
    let mut ws = one_agent(&addr, &cookie, "ingest-probe")?;
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut waits = Vec::new();
    let mut n = 0u64;
    println!("probe connected");
    while Instant::now() < until {
        n += 1;
        let event_id = format!("probe-{}-{n}", std::process::id());
        let batch = json!({ "type": "ACTIVITY", "payload": { "events": [{ "id": event_id, "occurredAt": chrono::Utc::now().to_rfc3339(), "kind": "probe", "level": "trace" }] } });
        let sent = Instant::now();
        ws.send(Message::text(batch.to_string()))
            .map_err(|e| e.to_string())?;
        loop {
            match ws.read() {
                Ok(Message::Text(t))
                    if t.as_str().contains("ACTIVITY_ACK") && t.as_str().contains(&event_id) =>
                {
                    break
                }
                Ok(_) => {}
                Err(e) => return Err(format!("probe socket: {e}")),
            }
        }
        waits.push(sent.elapsed());
        std::thread::sleep(every);
    }
    waits.sort();
    let pct = |p: f64| waits[((waits.len() as f64 * p) as usize).min(waits.len() - 1)];
    println!("events acknowledged:  {}", waits.len());
    println!(
        "ack wait p50:         {:.1} ms",
        pct(0.5).as_secs_f64() * 1e3
    );
    println!(
        "ack wait p99:         {:.1} ms",
        pct(0.99).as_secs_f64() * 1e3
    );
    println!(
        "longest ingest stall: {:.1} ms",
        waits.last().map_or(0.0, |w| w.as_secs_f64() * 1e3)
    );
    Ok(())
}
