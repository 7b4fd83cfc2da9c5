//! `vrrp-load soak`: agents in pairs (clusters) for a long run with a failover
//! storm every interval (a share of the clusters swap MASTER and BACKUP), two
//! dashboards connected and one webhook receiver subscribed to
//! `vrrp.master_changed`. Prints the server's resident memory, threads and
//! descriptors at a checkpoint minute and at the end, and checks that every
//! failover produced exactly one `vrrp.master_changed` (per cluster, at the
//! receiver and in the activity list).

use super::agents::{self, fds, post, register, rss_kib, start_fleet, threads};
use super::fleet::{self, Shared};
use super::webhooks::receiver;
use super::{flag, number};
use rand::seq::SliceRandom;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Time a failover needs to be confirmed and delivered before it is counted.
const SETTLE: Duration = Duration::from_secs(20);

pub fn run(args: &[String]) -> Result<(), String> {
    let addr = args.first().ok_or("soak needs ADDR")?.clone();
    let cookie = flag(args, "--token").ok_or("soak needs --token")?;
    let count = number(args, "--agents", 2000)?.max(2) / 2 * 2;
    let minutes = number(args, "--minutes", 30)? as u64;
    let checkpoint = number(args, "--checkpoint", 5)? as u64;
    let storm_every = Duration::from_secs(number(args, "--storm-every-s", 60)? as u64);
    let share = number(args, "--storm-percent", 10)? as f64 / 100.0;
    let pid = flag(args, "--server-pid");

    let (hook_addr, received) = receiver()?;
    // The receiver learns which cluster changed from the new master's name.
    post(
        &addr,
        "/api/v1/webhooks",
        &cookie,
        &json!({ "name": "soak receiver", "url": format!("http://{hook_addr}/hook"),
                 "bodyTemplate": "{\"kind\": \"{{event.kind}}\", \"master\": \"{{event.data.cluster.master}}\"}",
                 "kinds": ["vrrp.master_changed"], "minLevel": "trace", "timeoutMs": 5000 }),
    )?;
    let started = Instant::now();
    let identities = register(&addr, &cookie, count)?;
    println!(
        "registered {count} agents ({} clusters) in {:.1} s",
        count / 2,
        started.elapsed().as_secs_f64()
    );
    let epoch = Instant::now();
    let shared = Arc::new(Shared::new(
        &addr,
        epoch,
        Duration::from_secs(1),
        count,
        true,
    ));
    let latencies = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let dashboards = [
        agents::measuring_dashboard(
            addr.clone(),
            cookie.clone(),
            epoch,
            latencies.clone(),
            stop.clone(),
        ),
        agents::measuring_dashboard(
            addr.clone(),
            cookie.clone(),
            epoch,
            Arc::new(Mutex::new(Vec::new())),
            stop.clone(),
        ),
    ];
    let fleet = start_fleet(&shared, identities, Duration::from_millis(2))?;
    if !agents::wait_for(Duration::from_secs(180), || {
        shared.connected.load(Ordering::Relaxed) == count
    }) {
        return Err(format!(
            "only {} of {count} agents connected within 180 s",
            shared.connected.load(Ordering::Relaxed)
        ));
    }
    // The clusters are first seen and settle before the storms start.
    std::thread::sleep(SETTLE);
    let before_storms = received.lock().map_or(0, |r| r.len());
    // Latency over the soak, not the fleet's ramp-up.
    if let Ok(mut l) = latencies.lock() {
        l.clear();
    }
    let soak_started = Instant::now();
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let figures = |label: &str| -> Option<(u64, usize, usize)> {
        let p = pid.as_deref()?;
        let f = (rss_kib(p)?, threads(p)?, fds(p)?);
        println!(
            "{label}: {:.1} MiB resident, {} threads, {} descriptors; {} agents connected",
            f.0 as f64 / 1024.0,
            f.1,
            f.2,
            shared.connected.load(Ordering::Relaxed)
        );
        Some(f)
    };
    let mut at_checkpoint = None;
    let mut storms = 0;
    let mut failovers = 0;
    let clusters: Vec<usize> = (0..count / 2).collect();
    let per_storm = ((clusters.len() as f64 * share).round() as usize).max(1);
    let end = soak_started + Duration::from_secs(minutes * 60);
    let mut next_storm = soak_started;
    while Instant::now() < end {
        if Instant::now() >= next_storm {
            for &c in clusters.choose_multiple(&mut rand::thread_rng(), per_storm) {
                shared.flips[c].fetch_add(1, Ordering::Relaxed);
            }
            storms += 1;
            failovers += per_storm;
            next_storm += storm_every;
        }
        if at_checkpoint.is_none() && soak_started.elapsed() >= Duration::from_secs(checkpoint * 60)
        {
            at_checkpoint = figures(&format!("minute {checkpoint}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let at_end = figures(&format!("minute {minutes}"));
    if let (Some(a), Some(b)) = (at_checkpoint, at_end) {
        let diff = |x: f64, y: f64| (y - x) / x.max(1.0) * 100.0;
        println!(
            "change minute {checkpoint} -> {minutes}: resident {:+.1}%, threads {:+.1}%, descriptors {:+.1}% (target: each within 5%)",
            diff(a.0 as f64, b.0 as f64),
            diff(a.1 as f64, b.1 as f64),
            diff(a.2 as f64, b.2 as f64)
        );
    }
    // The last storm's failovers are confirmed and delivered.
    std::thread::sleep(SETTLE);
    let mut lat = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    lat.sort();
    let bodies: Vec<Value> = received
        .lock()
        .map(|r| r[before_storms..].to_vec())
        .unwrap_or_default();
    let logged = agents::get_json(
        &addr,
        &format!("/api/v1/activity?kind=vrrp.master_changed&since={since}&count=true"),
        &cookie,
    )?["count"]
        .as_u64()
        .unwrap_or(0);
    shared.stop.store(true, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for h in fleet {
        let _ = h.join();
    }
    for d in dashboards {
        let _ = d.join();
    }

    let mut per_cluster: HashMap<usize, u32> = HashMap::new();
    for b in &bodies {
        if let Some(i) = b["master"]
            .as_str()
            .and_then(|m| m.strip_prefix("load-"))
            .and_then(|n| n.parse::<usize>().ok())
        {
            *per_cluster.entry(i / 2).or_default() += 1;
        }
    }
    let (mut exact, mut missing, mut extra) = (0, 0, 0);
    for (c, flips) in shared.flips.iter().enumerate() {
        let want = flips.load(Ordering::Relaxed);
        let got = per_cluster.get(&c).copied().unwrap_or(0);
        if got == want {
            exact += 1;
        } else if got < want {
            missing += want - got;
        } else {
            extra += got - want;
        }
    }
    println!(
        "storms: {storms} ({per_storm} clusters each, every {} s), {failovers} failovers",
        storm_every.as_secs()
    );
    println!(
        "vrrp.master_changed at the webhook receiver: {} ({} before the first storm); clusters with exactly one per failover: {exact} of {}; missing {missing}, extra {extra}",
        bodies.len(),
        before_storms,
        count / 2
    );
    println!(
        "vrrp.master_changed in the activity list since the first storm: {logged} (want {failovers})"
    );
    println!(
        "agents dropped during the soak: {}; reading -> dashboard p99 over the soak: {:.1} ms",
        shared.dropped.load(Ordering::Relaxed),
        lat.get(((lat.len() as f64 * 0.99) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |d| fleet::ms(*d))
    );
    if missing > 0 || extra > 0 || logged != failovers as u64 {
        return Err("some failovers did not yield exactly one vrrp.master_changed".into());
    }
    Ok(())
}
