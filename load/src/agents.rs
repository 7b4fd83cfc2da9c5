//! Many agents at once, each on its own thread and WebSocket, speaking the real
//! agent protocol; one dashboard socket measures how long a reading takes from
//! the agent's send to the dashboard.

use super::fleet;
use super::{flag, number, read_response};
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};
use vrrp_protocol::messages::{envelope, kind};

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

pub(crate) fn get_json(addr: &str, path: &str, cookie: &str) -> Result<Value, String> {
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

/// The AUTH message a load agent opens its session with (inbound and outbound alike).
pub(crate) fn auth_message(hostname: &str) -> Message {
    let auth = json!({ "hostname": hostname, "version": "load", "capabilities": ["vrrp"] });
    Message::text(envelope::encode(kind::AUTH, &auth))
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
                let msg = envelope::encode(
                    kind::KEEPALIVED_UPDATE,
                    &fleet::pair_reading(i, self.pairs, 0, sent_us),
                );
                ws.send(Message::text(msg)).map_err(|e| e.to_string())?;
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

/// CPU time the process has used so far (user + system), from `/proc/PID/stat`
/// (in USER_HZ ticks, 100 a second on Linux).
pub(crate) fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (which may hold spaces): utime and stime are the
    // 12th and 13th fields.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

pub(crate) fn threads(pid: &str) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.count())
}

pub(crate) fn fds(pid: &str) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The dashboard socket that measures reading-to-dashboard latency; reconnects
/// (after a server restart) until `stop`.
pub(crate) fn measuring_dashboard(
    addr: String,
    cookie: String,
    epoch: Instant,
    latencies: Arc<Mutex<Vec<Duration>>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let mut dash = match fleet::ws_connect(
                &addr,
                "/ws/dashboard",
                Some(&cookie),
                Duration::from_secs(5),
            ) {
                Ok(d) => d,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(250));
                    continue;
                }
            };
            dash.get_mut()
                .set_read_timeout(Some(Duration::from_millis(200)))
                .ok();
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
                    Ok(Message::Close(_)) => break,
                    Ok(_) => {}
                    Err(tungstenite::Error::Io(e))
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
        }
    })
}

/// Registers `count` agents: (client id, token) each.
pub(crate) fn register(
    addr: &str,
    cookie: &str,
    count: usize,
) -> Result<Vec<(String, String)>, String> {
    let mut identities = Vec::with_capacity(count);
    for i in 0..count {
        let token = post(addr, "/api/v1/tokens", cookie, &json!({}))?;
        let token = token["token"].as_str().ok_or("no token")?.to_owned();
        let reg = post(
            addr,
            "/api/v1/register",
            "",
            &json!({ "token": token, "hostname": format!("load-{i}") }),
        )?;
        identities.push((
            reg["clientId"].as_str().ok_or("no clientId")?.to_owned(),
            reg["token"].as_str().ok_or("no token")?.to_owned(),
        ));
    }
    Ok(identities)
}

/// Starts one thread per agent (128 KiB stacks); they start connecting
/// `stagger` apart (2 ms: 500 a second).
pub(crate) fn start_fleet(
    shared: &Arc<fleet::Shared>,
    identities: Vec<(String, String)>,
    stagger: Duration,
) -> Result<Vec<std::thread::JoinHandle<()>>, String> {
    let mut handles = Vec::with_capacity(identities.len());
    for (i, (id, token)) in identities.into_iter().enumerate() {
        let shared = shared.clone();
        let delay = stagger * i as u32;
        let h = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || fleet::agent(shared, i, id, token, delay))
            .map_err(|e| format!("cannot start agent thread {i}: {e}"))?;
        handles.push(h);
    }
    Ok(handles)
}

/// Waits until `done` holds or `limit` passed; false on the limit.
pub(crate) fn wait_for(limit: Duration, done: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while !done() {
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Server figures now: resident KiB, threads, descriptors.
fn server_figures(pid: Option<&str>) -> (Option<u64>, Option<usize>, Option<usize>) {
    match pid {
        Some(p) => (rss_kib(p), threads(p), fds(p)),
        None => (None, None, None),
    }
}

/// A steady window: readings sent and seen by the dashboard, their latency.
fn steady_window(
    shared: &fleet::Shared,
    latencies: &Mutex<Vec<Duration>>,
    seconds: u64,
) -> (f64, f64, Vec<Duration>) {
    latencies.lock().unwrap().clear();
    let sent_at_start = shared.sent.load(Ordering::Relaxed);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let elapsed = window.elapsed().as_secs_f64();
    let sent = (shared.sent.load(Ordering::Relaxed) - sent_at_start) as f64 / elapsed;
    let mut lat = latencies.lock().unwrap().clone();
    lat.sort();
    (sent, lat.len() as f64 / elapsed, lat)
}

fn pct(v: &[Duration], p: f64) -> f64 {
    v.get(((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1)))
        .map_or(0.0, |d| fleet::ms(*d))
}

pub fn run(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("agents needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("agents needs --token (an admin session token)")?;
    let count = number(args, "--agents", 200)?;
    let seconds = number(args, "--seconds", 20)? as u64;
    let interval = Duration::from_millis(number(args, "--interval-ms", 1000)? as u64);
    let mut server_pid = flag(args, "--server-pid");
    let pairs = args.iter().any(|a| a == "--clusters");
    let restart_cmd = flag(args, "--restart-cmd");
    // Agents starting to connect per second (500: one every 2 ms).
    let per_second = number(args, "--connect-per-second", 500)?.clamp(1, 100_000);
    let stagger = Duration::from_secs(1) / per_second as u32;

    let started = Instant::now();
    let identities = register(&addr, &cookie, count)?;
    println!(
        "registered {count} agents in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (before, threads_before, fds_before) = server_figures(server_pid.as_deref());

    let epoch = Instant::now();
    let shared = Arc::new(fleet::Shared::new(&addr, epoch, interval, count, pairs));
    let latencies = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let dash = measuring_dashboard(
        addr.clone(),
        cookie.clone(),
        epoch,
        latencies.clone(),
        stop.clone(),
    );

    let connect_started = Instant::now();
    let handles = start_fleet(&shared, identities, stagger)?;
    let all = wait_for(Duration::from_secs(180), || {
        shared.connected.load(Ordering::Relaxed) == count
    });
    println!(
        "connected {} of {count} agents in {:.1} s ({} failed attempts){}",
        shared.connected.load(Ordering::Relaxed),
        connect_started.elapsed().as_secs_f64(),
        shared.failed_attempts.load(Ordering::Relaxed),
        if all {
            ""
        } else {
            "; gave up waiting after 180 s"
        }
    );
    // Measure a steady window: forget what the ramp-up produced.
    std::thread::sleep(Duration::from_secs(2));
    let cpu_before = server_pid.as_deref().and_then(cpu_time);
    let (sent, stored, lat) = steady_window(&shared, &latencies, seconds);
    let cpu_after = server_pid.as_deref().and_then(cpu_time);
    let (during, threads_during, fds_during) = server_figures(server_pid.as_deref());
    let health = fleet::HealthProbe::start(&addr, Duration::from_millis(100));
    // The cluster list while every agent is connected and reporting.
    let mut list_times = Vec::new();
    let mut cluster_count = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let list = get_json(&addr, "/api/v1/keepalived/clusters", &cookie)?;
        list_times.push(t.elapsed());
        cluster_count = list.as_array().map_or(0, Vec::len);
    }
    list_times.sort();
    std::thread::sleep(Duration::from_secs(2));
    let samples = health.finish();
    let (n, h50, h99, _, hfail) = fleet::health_summary(&samples, epoch);

    println!(
        "agents:                       {count}, one reading every {} ms each",
        interval.as_millis()
    );
    println!("readings sent per second:     {sent:.0}");
    println!("readings stored per second:   {stored:.0} (seen by the dashboard)");
    println!("reading -> dashboard p50:     {:.1} ms", pct(&lat, 0.5));
    println!("reading -> dashboard p99:     {:.1} ms", pct(&lat, 0.99));
    if let (Some(b), Some(a)) = (cpu_before, cpu_after) {
        // The server's whole CPU over the window (every thread: sockets,
        // parsing, storing, evaluating, the feeds) per reading stored.
        let readings = stored * seconds as f64;
        if readings > 0.0 {
            println!(
                "server CPU per reading:       {:.1} µs ({:.0} ms of CPU over {seconds} s)",
                (a - b).as_secs_f64() * 1e6 / readings,
                (a - b).as_secs_f64() * 1e3
            );
        }
    }
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
        fleet::ms(list_times[list_times.len() / 2]),
        list_times.last().map_or(0.0, |t| fleet::ms(*t))
    );
    println!("health (steady): {n} samples, p50 {h50:.1} ms, p99 {h99:.1} ms, {hfail} failed");
    if let (Some(b), Some(d)) = (threads_before, threads_during) {
        println!("server threads:               {b} before, {d} with the agents");
    }
    if let (Some(b), Some(d)) = (fds_before, fds_during) {
        println!("server descriptors:           {b} before, {d} with the agents");
    }

    if let Some(cmd) = restart_cmd {
        server_pid = restart(&addr, &cmd, &shared, count)?.or(server_pid);
        std::thread::sleep(Duration::from_secs(2));
        let (sent, stored, lat) = steady_window(&shared, &latencies, seconds);
        let (rss, threads_now, fds_now) = server_figures(server_pid.as_deref());
        println!("after the restart, steady:    {sent:.0} readings sent/s, {stored:.0} stored/s, reading -> dashboard p50 {:.1} ms, p99 {:.1} ms", pct(&lat, 0.5), pct(&lat, 0.99));
        if let (Some(r), Some(t), Some(f)) = (rss, threads_now, fds_now) {
            println!(
                "after the restart, server:    {:.1} MiB resident, {:.1} KiB per agent (whole process), {t} threads, {f} descriptors",
                r as f64 / 1024.0,
                r as f64 / count as f64
            );
        }
    }

    shared.stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    stop.store(true, Ordering::Relaxed);
    let _ = dash.join();
    Ok(())
}

/// Restarts the server with `cmd` (run by `sh -c`; it prints the new server's pid
/// last) while the fleet is connected, then follows the agents back along their
/// ladder. Returns the new pid.
fn restart(
    addr: &str,
    cmd: &str,
    shared: &fleet::Shared,
    count: usize,
) -> Result<Option<String>, String> {
    let failed_before = shared.failed_attempts.load(Ordering::Relaxed);
    let probe = fleet::HealthProbe::start(addr, Duration::from_millis(50));
    shared.restarted();
    let restart_at = Instant::now();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map_err(|e| format!("restart command: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "restart command failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let pid = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(|l| l.trim().to_owned());
    let up_after = restart_at.elapsed();
    let all = wait_for(Duration::from_secs(150), || {
        shared.reconnects.lock().unwrap().len() >= count
    });
    std::thread::sleep(Duration::from_secs(1));
    let samples = probe.finish();
    // The server answers again from the first successful sample after the restart.
    let up_at = samples
        .iter()
        .find(|(at, r)| *at >= restart_at + up_after && r.is_ok())
        .map_or(restart_at + up_after, |(at, _)| *at);
    let (n, p50, p99, max, failed) = fleet::health_summary(&samples, up_at);
    let mut times = shared.reconnects.lock().unwrap().clone();
    times.sort();
    let within_30 = times.iter().filter(|t| t.as_secs_f64() <= 30.0).count();
    println!("== server restart with {count} agents connected (ladder 5 s + up to 3 s jitter, handshake timeout 5 s)");
    println!(
        "restart took:                 {:.1} s (stop + start until it answered)",
        up_after.as_secs_f64()
    );
    println!(
        "agents authenticated again:   {} of {count}{}; {within_30} within 30 s of the restart",
        times.len(),
        if all {
            ""
        } else {
            " (gave up waiting after 150 s)"
        }
    );
    println!(
        "time to all authenticated:    {:.1} s (first {:.1} s, median {:.1} s)",
        times.last().map_or(0.0, |t| t.as_secs_f64()),
        times.first().map_or(0.0, |t| t.as_secs_f64()),
        times.get(times.len() / 2).map_or(0.0, |t| t.as_secs_f64())
    );
    println!(
        "failed attempts meanwhile:    {} (refused, handshake over 5 s, or no AUTH_SUCCESS)",
        shared.failed_attempts.load(Ordering::Relaxed) - failed_before
    );
    println!(
        "health while reconnecting:    {n} samples, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms, {failed} failed"
    );
    Ok(pid)
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
    let mut ws = fleet::ws_connect(
        addr,
        &format!("/ws/agent?clientId={id}&token={auth}"),
        None,
        Duration::from_secs(15),
    )?;
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
        let batch = envelope::encode(
            kind::ACTIVITY,
            &json!({ "events": [{ "id": event_id, "occurredAt": chrono::Utc::now().to_rfc3339(), "kind": "probe", "level": "trace" }] }),
        );
        let sent = Instant::now();
        ws.send(Message::text(batch)).map_err(|e| e.to_string())?;
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
