//! The takeover benchmark (scripts/bench-clusters.sh, its lab part): real keepalived
//! in two lab hosts, real agents, the real server. It measures the time from
//! keepalived's own takeover (the new master's last transition, which the event
//! carries as `occurredAt`) to the `vrrp.master_changed` stored by the server and
//! broadcast to a dashboard, minus the spec's master-down interval (3 x advert_int
//! + 1 s = 4 s here), over BENCH_TAKEOVERS (default 10) takeovers.
//!
//! A benchmark, not a test: it runs only under `cargo bench` (which passes
//! `--bench`); `cargo test --all-targets` starts it with nothing to do.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::Value;
use support::inbound::*;
use support::*;

/// The lab's VI_1: advert_int 1 s, so 3 x 1 s + 1 s.
const MASTER_DOWN_MS: f64 = 4000.0;

fn main() {
    bench_main(bench_takeover);
}

fn bench_takeover() {
    let takeovers: usize = std::env::var("BENCH_TAKEOVERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let (lab, mut server) = lab_with_server(2, "vbt"); // h1 120 MASTER, h2 110 BACKUP
    server.log_level = "warn";
    server.start();
    let admin = server.admin();
    let mut agents: Vec<HostAgent> = ["h1", "h2"]
        .iter()
        .map(|h| {
            let mut a = HostAgent::new(&lab, h);
            a.log_level = "info";
            a
        })
        .collect();
    let mut ids = Vec::new();
    for a in &mut agents {
        a.start(&lab);
        ids.push(register(&lab, &server, &admin, a));
    }
    let mut dash = server.dashboard(&admin);
    // The clusters are known (first interval over) before the first takeover.
    wait_for("the clusters confirmed", 30, || {
        let list = server.get(&admin, "/api/v1/keepalived/clusters");
        (list.as_array()?.len() == 2).then_some(())
    });
    std::thread::sleep(std::time::Duration::from_secs(5));

    let time = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str()?)
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc))
    };
    let mut beyond = Vec::new();
    let mut stored_beyond = Vec::new();
    let t0 = std::time::Instant::now();
    for i in 0..takeovers {
        let new_master = if i % 2 == 0 {
            lab.run(&["fault", "h1", "link"]); // VI_1 on h1 FAULT at once, h2 takes over
            &ids[1]
        } else {
            lab.run(&["unfault", "h1"]); // h1 preempts again
            &ids[0]
        };
        let appended = dash.wait("ACTIVITY_APPENDED", 30, |p| {
            p.as_array().unwrap().iter().any(|e| {
                e["kind"] == "vrrp.master_changed"
                    && e["data"]["cluster"]["vrid"] == 51
                    && e["clientId"] == new_master.as_str()
            })
        });
        let on_dashboard = chrono::Utc::now();
        let e = appended
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "vrrp.master_changed")
            .unwrap();
        let (Some(takeover), Some(received)) = (time(&e["occurredAt"]), time(&e["receivedAt"]))
        else {
            panic!("an event without its times: {e}");
        };
        let ms = |d: chrono::TimeDelta| d.num_microseconds().unwrap_or(0) as f64 / 1000.0;
        beyond.push(ms(on_dashboard - takeover) - MASTER_DOWN_MS);
        stored_beyond.push(ms(received - takeover) - MASTER_DOWN_MS);
    }
    let elapsed = t0.elapsed().as_secs_f64();
    for v in [&mut beyond, &mut stored_beyond] {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    println!(
        "bench-takeover: {takeovers} takeovers of VI_1 (fault h1 link / unfault h1) in {elapsed:.0} s; master-down interval {MASTER_DOWN_MS:.0} ms"
    );
    for (what, v) in [
        (
            "keepalived takeover -> vrrp.master_changed on the dashboard, beyond the interval",
            &beyond,
        ),
        (
            "  of which keepalived takeover -> recorded by the server (receivedAt), beyond the interval",
            &stored_beyond,
        ),
    ] {
        println!(
            "bench-takeover: {what}: median {:.0} ms, p99 {:.0} ms, min {:.0} ms, max {:.0} ms",
            percentile(v, 0.5),
            percentile(v, 0.99),
            v[0],
            v[v.len() - 1]
        );
    }
    for a in &mut agents {
        a.kill(nix::sys::signal::Signal::SIGTERM);
    }
}
