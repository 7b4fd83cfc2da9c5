//! Load generator for benchmarks and soak tests: speaks to a running server over
//! real sockets. Sends traffic only where it is told (use loopback).
//!
//! ```text
//! vrrp-load http ADDR PATH --token T [--connections 20] [--requests 10000]
//!     authenticated GETs over keep-alive connections; prints req/s and latency
//! vrrp-load idle ADDR [--connections 500] [--hold-ms 2000]
//!     opens idle connections, holds them, prints how many the server closed
//! vrrp-load agents ADDR --token T --agents N [--seconds 20] [--interval-ms 1000] [--server-pid PID]
//!         [--clusters] [--restart-cmd CMD] [--connect-per-second 500]
//!     registers N agents, connects each over the agent protocol and sends a reading
//!     every interval; a dashboard socket measures reading-to-dashboard latency;
//!     `--clusters` pairs them into N/2 clusters. Agents retry like the real agent
//!     (ladder 5, 10, 30, 60 s + up to 3 s jitter). With `--restart-cmd`, the
//!     command (`sh -c`, prints the new server pid) restarts the server once the
//!     fleet is steady, and the agents' way back is measured (time until all are
//!     authenticated again, `/api/health` latency meanwhile); agents start
//!     connecting at the given rate (a ramp, not a storm, when what is measured
//!     is not the connect path)
//! vrrp-load hostile ADDR --token T [--idle 10000] [--kept-alive] [--slowloris 20] [--upgrades 0] [--endless 0] [--agents 50]
//!         [--seconds 60] [--server-pid PID]
//!     idle connections (reopened when closed), slowloris clients and a dashboard
//!     that never reads, while agents report and a dashboard measures; samples
//!     /api/health every 50 ms and prints p50/p99/max and what the server closed
//! vrrp-load soak ADDR --token T [--agents 2000] [--minutes 30] [--checkpoint 5]
//!         [--storm-every-s 60] [--storm-percent 10] [--server-pid PID]
//!     agents in pairs, a failover storm every interval, two dashboards and a
//!     webhook receiver; prints memory/threads/descriptors at the checkpoint and
//!     the end, and checks one vrrp.master_changed per failover
//! vrrp-load outbound ADDR --token T [--agents 500] [--seconds 10] [--interval-ms 1000]
//!         [--server-pid PID] [--secret S]
//!     N outbound agents, each listening on its own port on 127.0.0.1, registered
//!     through POST /api/v1/clients/outbound; once all are online and have reported
//!     for a while, prints the server's memory, threads and fds per outbound client
//! vrrp-load outbound-reconnect ADDR --token T --agent-bin PATH --server-log FILE
//!         [--rounds 10] [--down-ms 1000]
//!     the real agent registered outbound, stopped and started again each round;
//!     prints when it came back, when the server's ladder step was due and dialled,
//!     and when the session authenticated (the server must log at debug)
//! vrrp-load evaluator [--clusters 1000] [--readings 2000]
//!     the cluster evaluator in-process: cost of one reading (regroup + evaluate)
//! vrrp-load activity ADDR --token T [--seconds 10] [--every-ms 10]
//!     one agent sending an ACTIVITY event every few ms; prints how long each ACK took
//! vrrp-load webhooks [ADDR --token T] [--renders 20000] [--events 2000] [--burst 50]
//!     render time of the largest ready-made template; with ADDR, events per second
//!     a running server delivers to a receiver on loopback
//! ```

mod agents;
mod fleet;
mod hostile;
mod outbound;
mod reconnect;
mod soak;
mod webhooks;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Every command; each says its own flags when they are wrong.
const USAGE: &str = "usage: vrrp-load COMMAND ARGS..., COMMAND one of: http ADDR PATH --token T \
[--connections N] [--requests N] | idle ADDR [--connections N] [--hold-ms MS] | agents | activity \
| outbound | outbound-reconnect | hostile | soak | evaluator | webhooks (the benchmarks under \
scripts/ show each one's arguments)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("http") => http(&args[1..]),
        Some("idle") => idle(&args[1..]),
        Some("agents") => agents::run(&args[1..]),
        Some("activity") => agents::activity(&args[1..]),
        Some("outbound") => outbound::run(&args[1..]),
        Some("outbound-reconnect") => reconnect::run(&args[1..]),
        Some("hostile") => hostile::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("evaluator") => evaluator(&args[1..]),
        Some("webhooks") => webhooks::run(&args[1..]),
        _ => Err(USAGE.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vrrp-load: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

pub(crate) fn number(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match flag(args, name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| format!("{name} takes a whole number, not {v}")),
    }
}

fn http(args: &[String]) -> Result<(), String> {
    let addr = args
        .first()
        .ok_or("http needs ADDR (e.g. 127.0.0.1:3010)")?
        .clone();
    let path = args
        .get(1)
        .ok_or("http needs PATH (e.g. /api/v1/me)")?
        .clone();
    let token = flag(args, "--token").unwrap_or_default();
    let connections = number(args, "--connections", 20)?.max(1);
    let requests = number(args, "--requests", 10_000)?;
    let per_conn = requests.div_ceil(connections);
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: svc_session={token}\r\n\r\n");
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let (addr, request) = (addr.clone(), request.clone());
            std::thread::spawn(move || -> Result<(Vec<Duration>, usize), String> {
                let stream =
                    TcpStream::connect(&addr).map_err(|e| format!("connect {addr}: {e}"))?;
                stream.set_nodelay(true).ok();
                let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
                let mut writer = stream;
                let mut latencies = Vec::with_capacity(per_conn);
                let mut failures = 0;
                for _ in 0..per_conn {
                    let t = Instant::now();
                    writer
                        .write_all(request.as_bytes())
                        .map_err(|e| e.to_string())?;
                    let (status, _) = read_response(&mut reader)?;
                    latencies.push(t.elapsed());
                    if status != 200 {
                        failures += 1;
                    }
                }
                Ok((latencies, failures))
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut failures = 0;
    for w in workers {
        let (l, f) = w.join().map_err(|_| "a worker panicked")??;
        latencies.extend(l);
        failures += f;
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!("requests:        {}", latencies.len());
    println!("non-200 answers: {failures}");
    println!("connections:     {connections} (keep-alive)");
    println!("elapsed:         {:.2} s", elapsed.as_secs_f64());
    println!(
        "requests/s:      {:.0}",
        latencies.len() as f64 / elapsed.as_secs_f64()
    );
    println!("latency p50:     {:.2} ms", pct(0.5).as_secs_f64() * 1e3);
    println!("latency p99:     {:.2} ms", pct(0.99).as_secs_f64() * 1e3);
    Ok(())
}

/// Reads one HTTP/1.1 response with a Content-Length body; returns its status and body.
pub(crate) fn read_response(reader: &mut BufReader<TcpStream>) -> Result<(u16, Vec<u8>), String> {
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {line:?}"))?;
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().map_err(|_| "bad content-length")?;
            }
            if k.eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
            {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        // Large answers come chunked: size line (hex), data, CRLF; a 0 size ends it.
        loop {
            line.clear();
            reader.read_line(&mut line).map_err(|e| e.to_string())?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|_| format!("bad chunk size {line:?}"))?;
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    }
    Ok((status, body))
}

fn idle(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("idle needs ADDR")?.clone();
    let connections = number(args, "--connections", 500)?;
    let hold = Duration::from_millis(number(args, "--hold-ms", 2000)? as u64);
    let mut streams = Vec::with_capacity(connections);
    for _ in 0..connections {
        streams.push(TcpStream::connect(&addr).map_err(|e| format!("connect {addr}: {e}"))?);
    }
    println!("opened {connections} idle connections");
    std::thread::sleep(hold);
    let closed = streams
        .iter_mut()
        .map(|s| {
            s.set_read_timeout(Some(Duration::from_millis(20))).ok();
            let mut b = [0u8; 1];
            matches!(s.read(&mut b), Ok(0))
        })
        .filter(|closed| *closed)
        .count();
    println!(
        "closed by the server after {} ms: {closed}",
        hold.as_millis()
    );
    Ok(())
}

/// The evaluator's cost per reading, as the cluster-eval thread pays it: a reading
/// that keeps the host's place in the grouping patches its clusters and evaluates
/// just those; the full regroup and evaluation is printed for comparison.
fn evaluator(args: &[String]) -> Result<(), String> {
    use vrrp_monitor::clusters::confirm::Evaluator;
    use vrrp_monitor::clusters::{group, patch, HostView};
    use vrrp_protocol::VrrpState;
    let clusters = number(args, "--clusters", 1000)?;
    let readings = number(args, "--readings", 2000)?;
    let start = chrono::Utc::now();
    let mut hosts: Vec<HostView> = (0..clusters * 2)
        .map(|i| {
            let pair = i / 2;
            HostView {
                client_id: format!("c{i}"),
                site: None,
                host: format!("h{i}"),
                online: true,
                readable: true,
                instances: vec![vrrp_protocol::VrrpInstance {
                    name: "VI_1".into(),
                    vrid: Some(51),
                    state: if i % 2 == 0 {
                        VrrpState::Master
                    } else {
                        VrrpState::Backup
                    },
                    priority: Some(100),
                    advert_interval: Some(1.0),
                    vips: vec![format!("10.{}.{}.100/24", pair / 256, pair % 256)],
                    ..Default::default()
                }],
                read_at: Some(vrrp_monitor::clock::iso(start)),
                drain: None,
            }
        })
        .collect();
    let mut grouped = group(&hosts);
    let mut by_host: std::collections::HashMap<String, Vec<usize>> =
        std::collections::HashMap::new();
    for (i, c) in grouped.iter().enumerate() {
        for m in &c.members {
            by_host.entry(m.client_id.clone()).or_default().push(i);
        }
    }
    let mut evaluator = Evaluator::default();
    evaluator.evaluate(&grouped, start);
    let (mut incremental, mut full) = (Vec::with_capacity(readings), Vec::with_capacity(readings));
    // Readings of clusters already known: their first interval (4 s) is over.
    let known = start + chrono::Duration::seconds(5);
    for r in 0..readings {
        let now = known + chrono::Duration::milliseconds(r as i64);
        // One host's fresh reading, and now and then a failover to evaluate.
        let i = (r * 7919) % hosts.len();
        hosts[i].read_at = Some(vrrp_monitor::clock::iso(now));
        if r % 100 == 0 {
            let state = if hosts[i].instances[0].state == VrrpState::Master {
                VrrpState::Backup
            } else {
                VrrpState::Master
            };
            hosts[i].instances[0].state = state;
        }
        let t = Instant::now();
        let mut subset = Vec::new();
        for &ci in by_host
            .get(&hosts[i].client_id)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            patch(&mut grouped[ci], &hosts[i]);
            subset.push(grouped[ci].clone());
        }
        std::hint::black_box(evaluator.evaluate_some(&subset, now));
        incremental.push(t.elapsed());
        if r % 10 == 0 {
            let mut fresh = Evaluator::default();
            let t = Instant::now();
            std::hint::black_box(fresh.evaluate(&group(&hosts), now));
            full.push(t.elapsed());
        }
    }
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        v[((v.len() as f64 * p) as usize).min(v.len() - 1)].as_secs_f64() * 1e3
    };
    println!(
        "clusters:                       {clusters} of 2 members ({} hosts)",
        hosts.len()
    );
    println!("readings evaluated:             {readings}");
    println!("cost per reading p50 / p99:     {:.3} / {:.3} ms (patch the host's clusters, evaluate those)", pct(&mut incremental, 0.5), pct(&mut incremental, 0.99));
    println!(
        "full regroup + evaluate p50:    {:.2} ms (when a host's networks or names change)",
        pct(&mut full, 0.5)
    );
    Ok(())
}
