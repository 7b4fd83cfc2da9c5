//! The takeover benchmark (scripts/bench-takeover.sh, and the lab part of
//! scripts/bench-clusters.sh): real keepalived in two lab hosts, real agents, the real
//! server. It measures the time from keepalived's own takeover (the new master's last
//! transition, which the event carries as `occurredAt`) to the `vrrp.master_changed`
//! stored by the server (its `receivedAt`) and broadcast to a dashboard, minus the
//! spec's master-down interval (3 x advert_int + 1 s = 4 s here), over BENCH_TAKEOVERS
//! (default 10) takeovers per scenario. Scenarios (BENCH_SCENARIOS, comma-separated,
//! default all three), each taking VI_1 from h1 to h2 and giving it back before the
//! next round:
//! - `graceful`: `failover h1` (SIGTERM to keepalived), back with `start h1`;
//! - `kill`: `failover h1 --kill` (SIGKILL to keepalived), back with `start h1`;
//! - `link`: `fault h1 link` (VI_1 FAULT on h1), back with `unfault h1`.
//!
//! Only the takeover by h2 is measured; the way back is waited for (its
//! `vrrp.master_changed` naming h1) so that rounds do not overlap.
//!
//! A benchmark, not a test: it runs only under `cargo bench` (which passes
//! `--bench`); `cargo test --all-targets` starts it with nothing to do.

use serde_json::Value;
use vrrp_test_support::host_agent::*;
use vrrp_test_support::lab::Lab;
use vrrp_test_support::*;

/// The lab's VI_1: advert_int 1 s, so 3 x 1 s + 1 s.
const MASTER_DOWN_MS: f64 = 4000.0;

/// A way to take VI_1 from h1, and the way to give it back.
struct Scenario {
    name: &'static str,
    take: &'static [&'static str],
    give_back: &'static [&'static str],
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "graceful",
        take: &["failover", "h1"],
        give_back: &["start", "h1"],
    },
    Scenario {
        name: "kill",
        take: &["failover", "h1", "--kill"],
        give_back: &["start", "h1"],
    },
    Scenario {
        name: "link",
        take: &["fault", "h1", "link"],
        give_back: &["unfault", "h1"],
    },
];

fn main() {
    bench_main(bench_takeover);
}

fn time(v: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// Waits for the `vrrp.master_changed` of VI_1 naming `new_master`; returns it with the
/// time it reached the dashboard.
fn master_changed(
    dash: &mut Dashboard,
    new_master: &str,
) -> (Value, chrono::DateTime<chrono::Utc>) {
    let appended = dash.wait("ACTIVITY_APPENDED", 60, |p| {
        p.as_array().unwrap().iter().any(|e| {
            e["kind"] == "vrrp.master_changed"
                && e["data"]["cluster"]["vrid"] == 51
                && e["clientId"] == new_master
        })
    });
    let on_dashboard = chrono::Utc::now();
    let e = appended
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "vrrp.master_changed" && e["data"]["cluster"]["vrid"] == 51)
        .unwrap()
        .clone();
    (e, on_dashboard)
}

/// Gives VI_1 back to h1. A keepalived started again right after a SIGKILL can
/// refuse to start (its stale pid files): then they are removed and it is started once
/// more, with a note.
fn give_back(lab: &Lab, s: &Scenario) {
    let out = lab
        .cmd(s.give_back)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    if out.status.success() {
        return;
    }
    println!(
        "bench-takeover: note: `{}` failed once; stale pid files removed, started again",
        s.give_back.join(" ")
    );
    lab.run(&[
        "exec",
        "h1",
        "rm",
        "-f",
        "/run/keepalived/keepalived.pid",
        "/run/keepalived/vrrp.pid",
    ]);
    lab.run(s.give_back);
}

/// (on the dashboard, stored by the server), both beyond the interval, in ms.
fn run_scenario(
    lab: &Lab,
    dash: &mut Dashboard,
    ids: &[String],
    s: &Scenario,
    takeovers: usize,
) -> (Vec<f64>, Vec<f64>) {
    let ms = |d: chrono::TimeDelta| d.num_microseconds().unwrap_or(0) as f64 / 1000.0;
    let mut beyond = Vec::new();
    let mut stored_beyond = Vec::new();
    for _ in 0..takeovers {
        lab.run(s.take);
        let (e, on_dashboard) = master_changed(dash, &ids[1]);
        let (Some(takeover), Some(received)) = (time(&e["occurredAt"]), time(&e["receivedAt"]))
        else {
            panic!("an event without its times: {e}");
        };
        beyond.push(ms(on_dashboard - takeover) - MASTER_DOWN_MS);
        stored_beyond.push(ms(received - takeover) - MASTER_DOWN_MS);
        give_back(lab, s);
        master_changed(dash, &ids[0]);
    }
    for v in [&mut beyond, &mut stored_beyond] {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    (beyond, stored_beyond)
}

fn bench_takeover() {
    let takeovers: usize = std::env::var("BENCH_TAKEOVERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let wanted = std::env::var("BENCH_SCENARIOS").unwrap_or_else(|_| "graceful,kill,link".into());
    let scenarios: Vec<&Scenario> = wanted
        .split(',')
        .map(|w| {
            SCENARIOS
                .iter()
                .find(|s| s.name == w.trim())
                .unwrap_or_else(|| panic!("unknown scenario {w:?} (graceful, kill, link)"))
        })
        .collect();
    let (lab, mut server) = lab_with_server(2, "vbt"); // h1 120 MASTER, h2 110 BACKUP
    server.log_level = match std::env::var("BENCH_SERVER_LOG").as_deref() {
        Ok("debug") => "debug",
        Ok("info") => "info",
        _ => "warn",
    };
    server.start();
    let admin = server.admin();
    let agent_log = std::env::var("BENCH_AGENT_LOG").unwrap_or_else(|_| "info".into());
    let mut agents: Vec<HostAgent> = ["h1", "h2"]
        .iter()
        .map(|h| {
            let mut a = HostAgent::new(&lab, h);
            a.log_level = if agent_log == "debug" {
                "debug"
            } else {
                "info"
            };
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

    println!(
        "bench-takeover: {takeovers} takeovers of VI_1 (h1 -> h2) per scenario; master-down interval {MASTER_DOWN_MS:.0} ms; figures are beyond that interval, counted from keepalived's own takeover on h2"
    );
    for s in scenarios {
        let t0 = std::time::Instant::now();
        let (beyond, stored) = run_scenario(&lab, &mut dash, &ids, s, takeovers);
        let elapsed = t0.elapsed().as_secs_f64();
        for (what, v) in [
            ("stored (receivedAt)", &stored),
            ("on the dashboard", &beyond),
        ] {
            println!(
                "bench-takeover: {:<8} {what:<20}: median {:>4.0} ms, p99 {:>4.0} ms, min {:>4.0} ms, max {:>4.0} ms (n={}, {elapsed:.0} s; `{}`)",
                s.name,
                percentile(v, 0.5),
                percentile(v, 0.99),
                v[0],
                v[v.len() - 1],
                v.len(),
                s.take.join(" "),
            );
        }
    }
    if std::env::var("BENCH_KEEP_LOGS").is_ok() {
        for a in &agents {
            let _ = std::fs::copy(
                a.log_path(a.runs),
                format!("/tmp/bench-takeover-agent-{}.log", a.host),
            );
        }
        let _ = std::fs::copy(&server.log, "/tmp/bench-takeover-server.log");
    }
    for a in &mut agents {
        a.kill(nix::sys::signal::Signal::SIGTERM);
    }
}
