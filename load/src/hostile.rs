//! Slow and hostile clients (faults item 6) while agents and a
//! dashboard go on: many idle TCP connections (reopened as the server closes
//! them, so the pressure stays), slowloris clients that trickle a request's
//! headers a byte at a time, and a dashboard WebSocket that never reads. Issue
//! 31 adds `Connection: upgrade` requests that are no handshake (each held open,
//! reopened once answered) and headers without end (64 KiB writes until the
//! server refuses them, then again). Samples `/api/health` throughout and prints
//! what the server did, with its RSS growth over the run.

use super::agents::{self, fds, register, rss_kib, start_fleet, threads};
use super::fleet::{self, ms, HealthProbe, Shared};
use super::{flag, number};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Counts {
    idle_opened: AtomicUsize,
    idle_closed_by_server: AtomicUsize,
    idle_connect_failures: AtomicUsize,
    slowloris_closed: AtomicUsize,
    upgrades_answered: AtomicUsize,
    endless_refused: AtomicUsize,
    endless_bytes: AtomicUsize,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("hostile needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("hostile needs --token")?;
    let idle = number(args, "--idle", 10_000)?;
    let slowloris = number(args, "--slowloris", 20)?;
    let upgrades = number(args, "--upgrades", 0)?;
    let endless = number(args, "--endless", 0)?;
    let agent_count = number(args, "--agents", 50)?;
    let seconds = number(args, "--seconds", 60)? as u64;
    let pid = flag(args, "--server-pid");
    // Idle connections that asked one thing first (a browser's kept-alive
    // connection), rather than ones that never speak.
    let kept_alive = args.iter().any(|a| a == "--kept-alive");

    let identities = register(&addr, &cookie, agent_count)?;
    let epoch = Instant::now();
    let shared = Arc::new(Shared::new(
        &addr,
        epoch,
        Duration::from_secs(1),
        agent_count,
        false,
    ));
    let latencies = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let dash = agents::measuring_dashboard(
        addr.clone(),
        cookie.clone(),
        epoch,
        latencies.clone(),
        stop.clone(),
    );
    let fleet = start_fleet(&shared, identities, Duration::from_millis(2))?;
    if !agents::wait_for(Duration::from_secs(60), || {
        shared.connected.load(Ordering::Relaxed) == agent_count
    }) {
        return Err("the agents did not connect within 60 s".into());
    }
    // The dashboard that never reads: its socket's buffers fill, then the server
    // must drop it without anyone else waiting.
    let deaf = fleet::ws_connect(
        &addr,
        "/ws/dashboard",
        Some(&cookie),
        Duration::from_secs(5),
    )?;
    let rss_before = pid.as_deref().and_then(rss_kib).unwrap_or(0);
    let health = HealthProbe::start(&addr, Duration::from_millis(50));
    let started = Instant::now();
    let counts = Arc::new(Counts::default());
    let (peak_threads, peak_fds, peak_rss) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let mut helpers = Vec::new();
    // Idle connections, spread over a few threads; each keeps its share open.
    let openers = 8.min(idle.max(1));
    for k in 0..openers {
        let share = idle / openers + usize::from(k < idle % openers);
        let (addr, counts, stop) = (addr.clone(), counts.clone(), stop.clone());
        helpers.push(std::thread::spawn(move || {
            hold_idle(&addr, share, kept_alive, &counts, &stop)
        }));
    }
    for _ in 0..slowloris {
        let (addr, counts, stop) = (addr.clone(), counts.clone(), stop.clone());
        helpers.push(std::thread::spawn(move || trickle(&addr, &counts, &stop)));
    }
    for _ in 0..upgrades {
        let (addr, counts, stop) = (addr.clone(), counts.clone(), stop.clone());
        helpers.push(std::thread::spawn(move || {
            upgrade_again(&addr, &counts, &stop)
        }));
    }
    for _ in 0..endless {
        let (addr, counts, stop) = (addr.clone(), counts.clone(), stop.clone());
        helpers.push(std::thread::spawn(move || {
            endless_header(&addr, &counts, &stop)
        }));
    }
    if let Some(pid) = pid.clone() {
        let (t, f, r, stop) = (
            peak_threads.clone(),
            peak_fds.clone(),
            peak_rss.clone(),
            stop.clone(),
        );
        helpers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                t.fetch_max(threads(&pid).unwrap_or(0), Ordering::Relaxed);
                f.fetch_max(fds(&pid).unwrap_or(0), Ordering::Relaxed);
                r.fetch_max(rss_kib(&pid).unwrap_or(0) as usize, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(200));
            }
        }));
    }
    latencies.lock().unwrap().clear();
    let sent_before = shared.sent.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(seconds));
    let elapsed = started.elapsed().as_secs_f64();
    let sent = shared.sent.load(Ordering::Relaxed) - sent_before;
    let mut lat = latencies.lock().unwrap().clone();
    lat.sort();
    let samples = health.finish();
    let deaf_dropped = deaf_was_dropped(deaf);
    let connected_at_end = shared.connected.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    shared.stop.store(true, Ordering::Relaxed);
    for h in helpers.into_iter().chain(fleet) {
        let _ = h.join();
    }
    let _ = dash.join();

    let (n, p50, p99, max, failed) = fleet::health_summary(&samples, started);
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |d| ms(*d))
    };
    let kind = if kept_alive {
        "kept alive after one request"
    } else {
        "silent"
    };
    println!("hostile clients for {seconds} s: {idle} idle connections ({kind}) kept open (reopened when closed), {slowloris} slowloris, {upgrades} upgrade requests, {endless} endless headers, 1 dashboard that never reads");
    println!(
        "idle connections:        {} opened, {} closed by the server, {} connects failed",
        counts.idle_opened.load(Ordering::Relaxed),
        counts.idle_closed_by_server.load(Ordering::Relaxed),
        counts.idle_connect_failures.load(Ordering::Relaxed)
    );
    println!(
        "slowloris connections:   {} closed by the server (each reopened)",
        counts.slowloris_closed.load(Ordering::Relaxed)
    );
    println!(
        "upgrade requests:        {} answered (each reopened)",
        counts.upgrades_answered.load(Ordering::Relaxed)
    );
    println!(
        "endless headers:         {} refused, {:.1} MiB offered",
        counts.endless_refused.load(Ordering::Relaxed),
        counts.endless_bytes.load(Ordering::Relaxed) as f64 / 1048576.0
    );
    println!(
        "non-reading dashboard:   {}",
        if deaf_dropped {
            "dropped by the server"
        } else {
            "still open"
        }
    );
    println!("health:                  {n} samples, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms, {failed} failed");
    println!(
        "agents:                  {connected_at_end} of {agent_count} connected at the end, {} dropped, {:.0} readings sent/s, {:.0} seen by the dashboard/s, reading -> dashboard p99 {:.1} ms",
        shared.dropped.load(Ordering::Relaxed),
        sent as f64 / elapsed,
        lat.len() as f64 / elapsed,
        pct(0.99)
    );
    if pid.is_some() {
        println!(
            "server peak:             {} threads, {} descriptors, {:.1} MiB resident",
            peak_threads.load(Ordering::Relaxed),
            peak_fds.load(Ordering::Relaxed),
            peak_rss.load(Ordering::Relaxed) as f64 / 1024.0
        );
        let grown = (peak_rss.load(Ordering::Relaxed) as u64).saturating_sub(rss_before);
        println!(
            "server RSS growth:       {:.1} MiB (peak over the {:.1} MiB before the hostile load)",
            grown as f64 / 1024.0,
            rss_before as f64 / 1024.0
        );
    }
    Ok(())
}

/// Keeps `share` idle connections open: connects (and asks for `/api/v1/ping`
/// first when `kept_alive`), and replaces each one the server closes.
fn hold_idle(addr: &str, share: usize, kept_alive: bool, counts: &Counts, stop: &AtomicBool) {
    let Ok(sa) = fleet::resolve(addr) else {
        return;
    };
    let mut open: Vec<TcpStream> = Vec::with_capacity(share);
    while !stop.load(Ordering::Relaxed) {
        while open.len() < share && !stop.load(Ordering::Relaxed) {
            match TcpStream::connect_timeout(&sa, Duration::from_secs(2)) {
                Ok(mut s) => {
                    if kept_alive {
                        // The answer is read (and ignored) by the check below.
                        let _ = s.write_all(b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n");
                    }
                    s.set_nonblocking(true).ok();
                    counts.idle_opened.fetch_add(1, Ordering::Relaxed);
                    open.push(s);
                }
                Err(_) => {
                    counts.idle_connect_failures.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                }
            }
        }
        let before = open.len();
        open.retain_mut(|s| {
            let mut b = [0u8; 64];
            match s.read(&mut b) {
                Ok(0) => false,
                Ok(_) => true,
                Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
            }
        });
        counts
            .idle_closed_by_server
            .fetch_add(before - open.len(), Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A slowloris: sends a request line and then a header byte every 500 ms, never
/// ending the headers; reconnects when the server closes it.
fn trickle(addr: &str, counts: &Counts, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        if s.write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .is_err()
        {
            continue;
        }
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(500));
            if s.write_all(b"a").is_err() {
                counts.slowloris_closed.fetch_add(1, Ordering::Relaxed);
                break;
            }
            s.set_nonblocking(true).ok();
            let mut b = [0u8; 256];
            let closed = match s.read(&mut b) {
                Ok(_) => true,
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            };
            s.set_nonblocking(false).ok();
            if closed {
                counts.slowloris_closed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
    }
}

/// An upgrade request that is no WebSocket handshake, held open; once the
/// server answers (or closes), another.
fn upgrade_again(addr: &str, counts: &Counts, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        if s.write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n\r\n")
            .is_err()
        {
            continue;
        }
        s.set_read_timeout(Some(Duration::from_millis(500))).ok();
        let mut b = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            match s.read(&mut b) {
                Ok(_) => {
                    counts.upgrades_answered.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        // Not at once: a held-open request is the attack, not a connect storm.
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A header without end: 64 KiB writes until the server refuses, then again.
fn endless_header(addr: &str, counts: &Counts, stop: &AtomicBool) {
    let chunk = vec![b'x'; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        s.set_write_timeout(Some(Duration::from_secs(2))).ok();
        if s.write_all(b"GET /api/health HTTP/1.1\r\nX-Endless: ")
            .is_err()
        {
            continue;
        }
        while !stop.load(Ordering::Relaxed) {
            if s.write_all(&chunk).is_err() {
                counts.endless_refused.fetch_add(1, Ordering::Relaxed);
                break;
            }
            counts
                .endless_bytes
                .fetch_add(chunk.len(), Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether the server dropped the socket that never read (seen by reading now).
fn deaf_was_dropped(mut ws: tungstenite::WebSocket<TcpStream>) -> bool {
    ws.get_mut()
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok();
    // Drain what is buffered; a dropped socket ends in an error or close.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        match ws.read() {
            Ok(tungstenite::Message::Close(_)) => return true,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
    false
}
