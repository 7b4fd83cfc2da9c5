//! The dashboard benchmark (`scripts/bench-dashboard.sh` runs it; ignored in
//! normal test runs): a server with 2,000 agents in 1,000 two-host clusters
//! (the load generator, real agent protocol, one reading every 4 s each = 500
//! readings/s) and 50,000 stored activity events; headless Chromium with a fresh
//! profile. Prints bytes of the first load, time until the overview shows
//! everything, and main-thread busy time per second while the readings flow
//! (Chromium's Performance domain through chromedriver's CDP endpoint).

use crate::harness::Server;
use crate::webdriver::Browser;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Agents (two per cluster); `BENCH_AGENTS` changes it for a smaller machine.
fn agents() -> usize {
    std::env::var("BENCH_AGENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}
const EVENTS: usize = 50_000;

/// Agents starting to connect per second. 2,000 agents connecting at once make
/// the server refuse sockets (its connect-storm path): this figure is
/// the dashboard's, so the agents ramp up. `BENCH_CONNECT_PER_SECOND` changes it.
fn connect_per_second() -> usize {
    std::env::var("BENCH_CONNECT_PER_SECOND")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100)
}

/// 50,000 events like a busy fleet's: mostly agent state changes and connection
/// bookkeeping, one in ten a cluster event naming a cluster with its members.
fn store_events(server: &Server) {
    let path = server.launch.data_dir().join("vrrp-monitor.db");
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO activity (id, occurred_at, received_at, source, client_id, kind, level, correlation_id, subject, data)
                 VALUES (?1, ?2, ?2, ?3, NULL, ?4, ?5, ?6, ?7, ?8)",
            )
            .unwrap();
        let start = chrono::Utc::now() - chrono::Duration::days(30);
        for i in 0..EVENTS {
            let at = (start + chrono::Duration::seconds(i as i64 * 50))
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string();
            let pair = i % (agents() / 2).max(1);
            let cluster = json!({ "site": null, "vrid": 51, "networks": [format!("10.{}.{}.0/24", pair / 256, pair % 256)],
                "vips": [format!("10.{}.{}.100/24", pair / 256, pair % 256)], "health": "degraded",
                "master": format!("load-{}", pair * 2), "masters": [format!("load-{}", pair * 2)],
                "members": [
                    { "host": format!("load-{}", pair * 2), "clientId": null, "instanceName": "VI_1", "state": "MASTER", "priority": 100, "effectivePriority": 100, "online": true, "reporting": true, "readAt": at, "vips": [] },
                    { "host": format!("load-{}", pair * 2 + 1), "clientId": null, "instanceName": "VI_1", "state": "FAULT", "priority": 100, "effectivePriority": 100, "online": true, "reporting": true, "readAt": at, "vips": [] }
                ] });
            let (source, kind, level, corr, subject, data) = match i % 10 {
                0 => (
                    "server",
                    "vrrp.incident_opened",
                    "warning",
                    Some(format!("inc-{i}")),
                    json!({}),
                    json!({ "cluster": cluster, "incident": { "id": format!("inc-{i}"), "health": "degraded", "previousHealth": "ok",
                        "reasons": [{ "type": "fault", "host": format!("load-{}", pair * 2 + 1), "text": format!("load-{} is in FAULT.", pair * 2 + 1) }],
                        "history": ["degraded"], "openedAt": at, "confirmedAt": at } }),
                ),
                1 => (
                    "server",
                    "vrrp.incident_resolved",
                    "info",
                    Some(format!("inc-{}", i - 1)),
                    json!({}),
                    json!({ "cluster": cluster, "incident": { "id": format!("inc-{}", i - 1), "health": "ok", "previousHealth": "degraded",
                        "reasons": [], "history": ["degraded"], "openedAt": at, "confirmedAt": at, "resolvedAt": at, "durationSeconds": 50, "resolution": "recovered" } }),
                ),
                2 | 3 => (
                    "server",
                    "client.connected",
                    "trace",
                    None,
                    json!({}),
                    json!({ "connectionMode": "inbound", "version": "1.0", "clientName": format!("load-{pair}") }),
                ),
                4 => (
                    "agent",
                    "keepalived.stopped",
                    "warning",
                    None,
                    json!({}),
                    json!({ "pid": 100, "version": "2.2.7" }),
                ),
                _ => (
                    "agent",
                    "vrrp.state_changed",
                    "info",
                    None,
                    json!({ "instanceName": "VI_1", "vrid": 51, "interface": "eth0" }),
                    json!({ "from": "BACKUP", "to": "MASTER", "priority": 100, "effectivePriority": 100 }),
                ),
            };
            stmt.execute(rusqlite::params![
                format!("bench-{i}"),
                at,
                source,
                kind,
                level,
                corr,
                subject.to_string(),
                data.to_string()
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn cdp(b: &Browser, cmd: &str, params: Value) -> Value {
    b.cmd(
        "POST",
        "/goog/cdp/execute",
        json!({ "cmd": cmd, "params": params }),
    )
}

fn metric(metrics: &Value, name: &str) -> f64 {
    metrics["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|x| x["name"] == name))
        .and_then(|x| x["value"].as_f64())
        .unwrap_or(0.0)
}

#[test]
#[ignore = "benchmark: run by scripts/bench-dashboard.sh"]
fn bench_dashboard() {
    // Logging at warn, as the other benchmarks run the server: the test
    // harness's debug log of 2,000 connecting agents is not what is measured.
    let server = crate::harness::Launch::new()
        .env("LOG_LEVEL", "warn")
        .start();
    let admin = server.admin();
    let t = Instant::now();
    store_events(&server);
    println!(
        "stored {EVENTS} activity events in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // 2,000 agents, two per cluster, a reading every 4 s each (500/s).
    let mut load = Command::new(crate::harness::load_binary())
        .args([
            "agents",
            &format!("127.0.0.1:{}", server.port()),
            "--token",
            &admin,
            "--agents",
            &agents().to_string(),
            "--clusters",
            "--interval-ms",
            // 500 readings per second whatever the number of agents.
            &(agents() * 2).to_string(),
            "--seconds",
            "90",
            "--connect-attempts",
            "20",
            "--connect-per-second",
            &connect_per_second().to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("vrrp-load starts");
    println!(
        "connect ramp: {} agents per second (not a storm: the figures are the dashboard's)",
        connect_per_second()
    );
    let mut lines = BufReader::new(load.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        println!("vrrp-load: {line}");
        if line.starts_with("connected") {
            break;
        }
    }
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            println!("vrrp-load: {line}");
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = server
            .http
            .get(server.url("/api/v1/keepalived/clusters"))
            .header("cookie", format!("svc_session={admin}"))
            .call();
        let n = match answer {
            Ok(mut r) => r
                .body_mut()
                .read_json::<Value>()
                .ok()
                .and_then(|v| v.as_array().map(Vec::len))
                .unwrap_or(0),
            Err(e) => {
                let log = server.log_text();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                panic!(
                    "the server stopped answering ({e}); its log ends:\n{}",
                    tail.join("\n")
                );
            }
        };
        if n == agents() / 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{n} clusters, not {}",
            agents() / 2
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // First load with a fresh profile: the session cookie is set on a page that
    // loads nothing (the ping answer), then the overview is opened.
    let b = Browser::start(1280, 900);
    b.goto(&server.url("/api/v1/ping"));
    b.cmd(
        "POST",
        "/cookie",
        json!({ "cookie": { "name": "svc_session", "value": admin, "path": "/", "httpOnly": true } }),
    );
    let profiling = std::env::var_os("BENCH_PROFILE").is_some();
    if profiling {
        cdp(&b, "Profiler.enable", json!({}));
        cdp(
            &b,
            "Profiler.setSamplingInterval",
            json!({ "interval": 200 }),
        );
        cdp(&b, "Profiler.start", json!({}));
    }
    b.goto(&server.url("/"));
    let ready = b.wait_js(
        "the overview with every cluster",
        "const m = performance.getEntriesByName('vrrp:ready')[0];
         return m && document.querySelector('.stats') ? m.startTime : 0",
        json!([]),
    );
    let sizes = b.js(
        "const out = { assets: 0, assetsRaw: 0, api: 0, apiRaw: 0, files: 0 };
         const nav = performance.getEntriesByType('navigation')[0];
         out.assets += nav.transferSize; out.assetsRaw += nav.decodedBodySize; out.files += 1;
         for (const r of performance.getEntriesByType('resource')) {
           const api = new URL(r.name).pathname.startsWith('/api/');
           if (api) { out.api += r.transferSize; out.apiRaw += r.decodedBodySize; }
           else { out.assets += r.transferSize; out.assetsRaw += r.decodedBodySize; out.files += 1; }
         }
         out.messages = window.vrrpLive.messages;
         return out;",
        json!([]),
    );
    let overview = b.body_text();
    assert!(overview.contains(&format!("/ {}", agents())), "{overview}");
    b.screenshot("bench-overview");
    let stages = b.js(
        "return performance.getEntriesByType('mark').filter((m) => m.name.startsWith('vrrp:'))
           .map((m) => [m.name.slice(5), Math.round(m.startTime)])",
        json!([]),
    );
    let waterfall = b.js(
        "const nav = performance.getEntriesByType('navigation')[0];
         const rows = [['index.html', 0, Math.round(nav.responseEnd)],
           ['DOMContentLoaded', 0, Math.round(nav.domContentLoadedEventEnd)]];
         for (const r of performance.getEntriesByType('resource'))
           rows.push([new URL(r.name).pathname, Math.round(r.startTime), Math.round(r.responseEnd)]);
         return rows;",
        json!([]),
    );
    let first_load_profile = profiling.then(|| {
        let p = cdp(&b, "Profiler.stop", json!({}));
        cdp(&b, "Profiler.start", json!({}));
        p
    });

    // Main-thread time while 500 readings per second arrive.
    cdp(&b, "Performance.enable", json!({}));
    let before = cdp(&b, "Performance.getMetrics", json!({}));
    let count_before = b.js("return window.vrrpLive.messages", json!([]));
    let window = Duration::from_secs(10);
    let started = Instant::now();
    std::thread::sleep(window);
    let after = cdp(&b, "Performance.getMetrics", json!({}));
    let count_after = b.js("return window.vrrpLive.messages", json!([]));
    let load_profile = profiling.then(|| cdp(&b, "Profiler.stop", json!({})));
    let secs = started.elapsed().as_secs_f64();
    let busy = |name: &str| (metric(&after, name) - metric(&before, name)) / secs * 1000.0;
    let messages =
        (count_after.as_f64().unwrap_or(0.0) - count_before.as_f64().unwrap_or(0.0)) / secs;
    // The page still answers: a click on Clusters renders the list.
    if profiling {
        cdp(&b, "Profiler.start", json!({}));
    }
    let t = Instant::now();
    b.click("nav a[href='/clusters']");
    b.wait("article.cluster");
    let nav_ms = t.elapsed().as_secs_f64() * 1000.0;
    let clusters_profile = profiling.then(|| {
        let p = cdp(&b, "Profiler.stop", json!({}));
        cdp(&b, "Profiler.start", json!({}));
        p
    });
    b.screenshot("bench-clusters");

    // A cluster's detail: the first page that needs uPlot (imported on first
    // use), its timeline drawn from the cluster's stored events under load.
    let t = Instant::now();
    b.click("article.cluster a.cluster-name");
    b.wait("#master-timeline .timeline-chart[data-ready='1'] canvas");
    let detail_ms = t.elapsed().as_secs_f64() * 1000.0;
    let detail_profile = profiling.then(|| cdp(&b, "Profiler.stop", json!({})));
    let uplot = b.js(
        "const out = { transfer: 0, raw: 0 };
         for (const r of performance.getEntriesByType('resource')) {
           const p = new URL(r.name).pathname; if (p.startsWith('/vendor/uPlot') && p.endsWith('.js')) { out.transfer += r.transferSize; out.raw += r.decodedBodySize; }
         }
         return out;",
        json!([]),
    );
    b.screenshot("bench-cluster-detail");

    let kb = |v: &Value| v.as_f64().unwrap_or(0.0) / 1024.0;
    println!(
        "--- dashboard benchmark: {} clusters, {} agents, {EVENTS} stored events ---",
        agents() / 2,
        agents()
    );
    println!(
        "first load, dashboard files: {:.1} KB transferred ({:.1} KB raw, {} files, no compression)",
        kb(&sizes["assets"]), kb(&sizes["assetsRaw"]), sizes["files"]
    );
    println!(
        "first load, REST data:       {:.1} KB (cluster list, incidents, counts)",
        kb(&sizes["apiRaw"])
    );
    println!("time to interactive:         {:.0} ms (navigation start to the overview showing every cluster, the socket snapshot applied)", ready.as_f64().unwrap_or(0.0));
    let stages: Vec<String> = stages
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| format!("{} {}", m[0].as_str().unwrap_or("?"), m[1]))
                .collect()
        })
        .unwrap_or_default();
    println!("first load stages (ms):      {}", stages.join(", "));
    if profiling {
        println!("--- first load waterfall (ms from navigation start: started, finished) ---");
        for r in waterfall.as_array().into_iter().flatten() {
            println!(
                "  {:>5} {:>5}  {}",
                r[1],
                r[2],
                r[0].as_str().unwrap_or("?")
            );
        }
    }
    println!("messages applied:            {messages:.0} per second over {secs:.1} s");
    println!(
        "main thread under load:      {:.0} ms/s busy (tasks), of it {:.0} ms/s script, {:.0} ms/s layout",
        busy("TaskDuration"),
        busy("ScriptDuration"),
        busy("LayoutDuration")
    );
    println!("overview -> clusters click:  {nav_ms:.0} ms until the list shows (WebDriver round trips included)");
    println!(
        "cluster detail click:        {detail_ms:.0} ms until the uPlot timeline is drawn; uPlot loaded then: {:.1} KB transferred ({:.1} KB raw; cached for a year after)",
        kb(&uplot["transfer"]), kb(&uplot["raw"])
    );
    if let Some(p) = first_load_profile {
        print_profile("first load", &p);
    }
    if let Some(p) = load_profile {
        print_profile("under load", &p);
    }
    if let Some(p) = clusters_profile {
        print_profile("clusters click", &p);
    }
    if let Some(p) = detail_profile {
        print_profile("cluster detail click", &p);
    }
    let _ = load.kill();
    let _ = load.wait();
}

/// Self time per function of a CDP `Profiler.stop` answer, the heaviest first
/// (`BENCH_PROFILE=1`): where the page's main thread spends its time.
fn print_profile(what: &str, answer: &Value) {
    let profile = &answer["profile"];
    let nodes = profile["nodes"].as_array().cloned().unwrap_or_default();
    let name_of: std::collections::HashMap<u64, String> = nodes
        .iter()
        .filter_map(|n| {
            let f = &n["callFrame"];
            let url = f["url"].as_str().unwrap_or("");
            let file = url.rsplit('/').next().unwrap_or(url);
            let name = match f["functionName"].as_str() {
                Some("") | None => "(anonymous)",
                Some(s) => s,
            };
            Some((
                n["id"].as_u64()?,
                format!(
                    "{name} {file}:{}",
                    f["lineNumber"].as_i64().unwrap_or(0) + 1
                ),
            ))
        })
        .collect();
    let samples = profile["samples"].as_array().cloned().unwrap_or_default();
    let deltas = profile["timeDeltas"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut self_us: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    let mut total = 0.0;
    for (s, d) in samples
        .iter()
        .zip(deltas.iter().skip(1).chain(std::iter::once(&json!(0))))
    {
        let (Some(id), Some(d)) = (s.as_u64(), d.as_f64()) else {
            continue;
        };
        let name = name_of.get(&id).map(String::as_str).unwrap_or("?");
        *self_us.entry(name).or_default() += d;
        total += d;
    }
    let mut rows: Vec<_> = self_us.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!(
        "--- profile, {what}: {:.0} ms sampled; self time by function ---",
        total / 1000.0
    );
    for (name, us) in rows.iter().take(25) {
        println!("  {:>8.1} ms  {name}", us / 1000.0);
    }
}
