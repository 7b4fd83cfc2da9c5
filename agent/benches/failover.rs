//! The failover benchmark (scripts/bench-failover.sh): real keepalived in two lab
//! hosts, real agents, the real server. A benchmark, not a test: it runs only under
//! `cargo bench` (which passes `--bench`); `cargo test --all-targets` starts it with
//! nothing to do.

use std::fs;
use std::time::{Duration, Instant};

use serde_json::Value;
use vrrp_test_support::host_agent::*;
use vrrp_test_support::*;

fn main() {
    bench_main(bench_failover);
}

/// The benchmark behind scripts/bench-failover.sh (run by `cargo bench --bench failover`): the time
/// from keepalived's state transition (its own timestamp, taken as it writes the notify
/// FIFO line) to the `vrrp.state_changed` event stored on the server and broadcast to a
/// dashboard, over BENCH_FAILOVERS (default 50) failovers with the FIFO trigger alone.
fn bench_failover() {
    let failovers: usize = std::env::var("BENCH_FAILOVERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let (lab, mut server) = lab_with_server(2, "vbf"); // h1 120 MASTER, h2 110 BACKUP
    server.start();
    let admin = server.admin();
    let mut agents: Vec<HostAgent> = ["h1", "h2"]
        .iter()
        .map(|h| {
            let mut a = HostAgent::new(&lab, h);
            fs::write(
                a.dir.join("config.yaml"),
                "keepalived:\n  pollInterval: 0\n  notifyFifo: /tmp/keepalived_vrrp.fifo\n",
            )
            .unwrap();
            a.log_level = "info";
            a
        })
        .collect();
    for a in &mut agents {
        a.start(&lab);
        register(&lab, &server, &admin, a);
    }
    let mut dash = server.dashboard(&admin);
    // Collect on a thread: receive time (this machine's clock, as keepalived's) per event.
    let (tx, rx) = crossbeam_channel::unbounded::<(chrono::DateTime<chrono::Utc>, Value)>();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let st = stop.clone();
    let reader = std::thread::spawn(move || {
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            match dash.ws.read() {
                Ok(tungstenite::Message::Text(t)) => {
                    let now = chrono::Utc::now();
                    let v: Value = serde_json::from_str(&t).unwrap();
                    if v["type"] == "ACTIVITY_APPENDED" {
                        for e in v["payload"].as_array().unwrap() {
                            if e["kind"] == "vrrp.state_changed" {
                                let _ = tx.send((now, e.clone()));
                            }
                        }
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(_)) => {}
                Err(e) => panic!("dashboard: {e}"),
            }
        }
    });
    let t0 = Instant::now();
    for i in 0..failovers {
        if i % 2 == 0 {
            lab.run(&["fault", "h1", "link"]); // VI_1 on h1 FAULT at once, h2 takes over
            lab.wait_state("h2", "VI_1", "MASTER");
        } else {
            lab.run(&["unfault", "h1"]); // h1 preempts again
            lab.wait_state("h1", "VI_1", "MASTER");
            lab.wait_state("h2", "VI_1", "BACKUP");
        }
    }
    std::thread::sleep(Duration::from_secs(3)); // stragglers
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    let ms = |a: chrono::DateTime<chrono::Utc>, b: chrono::DateTime<chrono::Utc>| {
        (a - b).num_microseconds().unwrap_or(0) as f64 / 1000.0
    };
    let time = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str()?)
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc))
    };
    // (total, keepalived -> server's receivedAt, receivedAt -> dashboard)
    let samples: Vec<(f64, f64, f64)> = rx
        .try_iter()
        .filter_map(|(at, e)| {
            let occurred = time(&e["occurredAt"])?;
            let received = time(&e["receivedAt"])?;
            Some((ms(at, occurred), ms(received, occurred), ms(at, received)))
        })
        .collect();
    assert!(
        samples.len() >= failovers,
        "only {} events for {failovers} failovers",
        samples.len()
    );
    let stats = |f: fn(&(f64, f64, f64)) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (
            percentile(&v, 0.5),
            percentile(&v, 0.99),
            v[0],
            v[v.len() - 1],
        )
    };
    println!(
        "bench-failover: {failovers} failovers in {:.0} s, {} vrrp.state_changed events (both hosts)",
        t0.elapsed().as_secs_f64(),
        samples.len()
    );
    for (what, (med, p99, min, max)) in [
        (
            "keepalived transition -> stored and on the dashboard",
            stats(|s| s.0),
        ),
        (
            "  of which keepalived -> received by the server (agent)",
            stats(|s| s.1),
        ),
        (
            "  of which received -> on the dashboard (server)",
            stats(|s| s.2),
        ),
    ] {
        println!(
            "bench-failover: {what}: median {med:.1} ms, p99 {p99:.1} ms, min {min:.1} ms, max {max:.1} ms"
        );
    }
    for a in &mut agents {
        a.kill(nix::sys::signal::Signal::SIGTERM);
    }
}
