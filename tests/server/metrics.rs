//! `GET /metrics`: the real server fed by real agent sessions, checked by
//! `promtool check metrics` and scraped by a real Prometheus (Debian's
//! `prometheus` package; `scripts/test.sh` installs it).

use crate::harness::{free_port, http_agent, reading, Launch, Server};
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (status, content type, body) of `GET /metrics` without any credentials.
fn scrape(server: &Server) -> (u16, String, String) {
    let mut answer = http_agent()
        .get(&server.url("/metrics"))
        .call()
        .expect("GET /metrics");
    let status = answer.status().as_u16();
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = answer.body_mut().read_to_string().unwrap_or_default();
    (status, content_type, body)
}

/// Scrapes until `pred` holds (the readings are stored by the agent sessions'
/// threads), at most 10 s; returns the last body.
fn scrape_until(server: &Server, pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _, body) = scrape(server);
        assert_eq!(status, 200, "{body}");
        if pred(&body) || Instant::now() > deadline {
            return body;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Two hosts backing each other up on VRID 51, a third alone on VRID 52.
fn fleet(server: &Server) -> Vec<crate::harness::Ws> {
    let admin = server.admin();
    let mut sockets = Vec::new();
    for (host, instances) in [
        ("lb-1", reading(&[("VI_1", "MASTER")])),
        ("lb-2", {
            // Not a list: an agent of another build; the reading stays usable.
            let mut r = reading(&[("VI_1", "BACKUP")]);
            r["instances"][0]["excludedVips"] = json!("192.0.2.77");
            r
        }),
        ("lb-3", {
            let mut r = reading(&[("VI_9", "MASTER")]);
            r["instances"][0]["vrid"] = json!(52);
            r["instances"][0]["vips"] = json!(["198.51.100.9/24 dev eth1 scope global"]);
            r["instances"][0]["interface"] = json!("eth1");
            // keepalived's virtual_ipaddress_excluded, as the agent reports it.
            r["instances"][0]["excludedVips"] =
                json!(["203.0.113.50/24", "2001:db8::50/64 dev eth2"]);
            r
        }),
    ] {
        let agent = server.register_agent(&admin, host);
        let mut ws = server.connect_agent(&agent);
        ws.send("KEEPALIVED_UPDATE", instances);
        sockets.push(ws);
    }
    sockets
}

fn promtool_check(text: &str) -> (bool, String) {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Prometheus);
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; scripts/test.sh installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && said.trim().is_empty(), said)
}

#[test]
#[cfg_attr(
    not(feature = "test-prometheus"),
    ignore = "prometheus tier: prometheus and promtool; --features test-prometheus (scripts/test.sh)"
)]
fn metrics_show_clusters_agents_and_instances_and_pass_promtool() {
    let server = Launch::new().start();
    let _sockets = fleet(&server);
    let body = scrape_until(&server, |b| {
        b.matches("keepalived_vrrp_state{").count() == 3
    });
    let (status, content_type, _) = scrape(&server);
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");

    assert!(
        body.contains(r#"keepalived_vrrp_state{host="lb-1",iname="VI_1",intf="",vrid="51",ip_address="192.0.2.100"} 2"#),
        "{body}"
    );
    assert!(body.contains(r#"keepalived_vrrp_state{host="lb-2",iname="VI_1",intf="",vrid="51",ip_address="192.0.2.100"} 1"#));
    assert!(body.contains(r#"keepalived_vrrp_state{host="lb-3",iname="VI_9",intf="eth1",vrid="52",ip_address="198.51.100.9"} 2"#));
    assert!(body.contains(
        r#"keepalived_advertisements_sent_total{host="lb-1",iname="VI_1",intf="",vrid="51"} 3"#
    ));
    // keepalived-exporter's keepalived_vrrp_excluded_state: one series per excluded VIP,
    // the instance's state, its labels those of keepalived_vrrp_state.
    assert!(
        body.contains("# TYPE keepalived_vrrp_excluded_state gauge\n"),
        "{body}"
    );
    assert!(body.contains(r#"keepalived_vrrp_excluded_state{host="lb-3",iname="VI_9",intf="eth1",vrid="52",ip_address="203.0.113.50"} 2"#), "{body}");
    assert!(body.contains(r#"keepalived_vrrp_excluded_state{host="lb-3",iname="VI_9",intf="eth2",vrid="52",ip_address="2001:db8::50"} 2"#), "{body}");
    assert_eq!(
        body.matches("keepalived_vrrp_excluded_state{").count(),
        2,
        "{body}"
    );
    let agents_up = body
        .lines()
        .filter(|l| l.starts_with("vrrp_agent_up{") && l.ends_with("} 1"))
        .count();
    assert_eq!(agents_up, 3, "{body}");
    assert!(
        body.contains(
            r#"vrrp_cluster_health{site="",vrid="51",network="192.0.2.0/24",health="ok"} 1"#
        ),
        "{body}"
    );
    assert!(body.contains(r#"vrrp_cluster_masters{site="",vrid="51",network="192.0.2.0/24"} 1"#));
    assert!(body.contains(
        r#"vrrp_cluster_members{site="",vrid="51",network="192.0.2.0/24",state="BACKUP"} 1"#
    ));
    assert!(body.contains("vrrp_incidents_open 0\n"));
    // The three registrations were stored as activity.
    assert!(
        body.contains(r#"vrrp_activity_events_total{kind="client.registered",level="info"} 3"#),
        "{body}"
    );
    assert!(body.contains("process_threads "));
    assert!(body.contains("process_resident_memory_bytes "));

    let (clean, said) = promtool_check(&body);
    assert!(clean, "promtool check metrics: {said}");
}

#[test]
#[cfg_attr(
    not(feature = "test-prometheus"),
    ignore = "prometheus tier: prometheus and promtool; --features test-prometheus (scripts/test.sh)"
)]
fn promtool_rejects_what_the_test_would_miss() {
    // The check above is only worth something if promtool finds faults.
    let (clean, said) = promtool_check("# TYPE requests counter\nrequests 1\n");
    assert!(!clean, "promtool found nothing: {said}");
}

#[test]
#[cfg_attr(
    not(feature = "test-prometheus"),
    ignore = "prometheus tier: prometheus and promtool; --features test-prometheus (scripts/test.sh)"
)]
fn the_example_alert_rules_pass_promtool() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Prometheus);
    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/doc/prometheus-alerts.yml");
    let out = Command::new("promtool")
        .args(["check", "rules", rules])
        .output()
        .expect("promtool (Debian package prometheus)");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("SUCCESS: 10 rules found"), "{said}");
}

#[test]
fn metrics_are_refused_outside_metrics_allowed_networks() {
    let server = Launch::new()
        .config("security:\n  metrics_allowed_networks: ['10.0.0.0/8']\n")
        .start();
    let (status, _, body) = scrape(&server);
    assert_eq!(status, 403);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "Access denied");
    drop(server);

    let server = Launch::new()
        .config("security:\n  metrics_allowed_networks: ['10.0.0.0/8', '127.0.0.1']\n")
        .start();
    assert_eq!(scrape(&server).0, 200);
}

/// Prometheus's HTTP API: the `data.result` of an instant query.
fn query(port: u16, q: &str) -> Vec<Value> {
    let mut answer = match http_agent()
        .get(&format!("http://127.0.0.1:{port}/api/v1/query"))
        .query("query", q)
        .call()
    {
        Ok(a) => a,
        Err(_) => return Vec::new(),
    };
    let body: Value = answer.body_mut().read_json().unwrap_or_default();
    body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(feature = "test-prometheus"),
    ignore = "prometheus tier: prometheus and promtool; --features test-prometheus (scripts/test.sh)"
)]
fn a_real_prometheus_scrapes_the_server() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Prometheus);
    let server = Launch::new().start();
    let _sockets = fleet(&server);
    scrape_until(&server, |b| {
        b.matches("keepalived_vrrp_state{").count() == 3
    });

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: vrrp-monitor\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            server.port()
        ),
    )
    .unwrap();
    let web = free_port();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _prometheus = Kill(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian package prometheus; scripts/test.sh installs it)"),
    );

    // Prometheus starts, then scrapes once a second: wait for a scrape that saw
    // every instance.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut up, mut states) = (Vec::new(), Vec::new());
    while Instant::now() < deadline {
        up = query(web, "up{job=\"vrrp-monitor\"}");
        states = query(web, "keepalived_vrrp_state");
        if up.first().is_some_and(|u| u["value"][1] == "1") && states.len() == 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(up[0]["value"][1], "1", "target not up: {up:?}");
    let mut seen: Vec<String> = states
        .iter()
        .map(|s| {
            format!(
                "{}/{}",
                s["metric"]["host"].as_str().unwrap_or(""),
                s["metric"]["iname"].as_str().unwrap_or("")
            )
        })
        .collect();
    seen.sort();
    assert_eq!(seen, ["lb-1/VI_1", "lb-2/VI_1", "lb-3/VI_9"]);
    let took = query(web, "scrape_duration_seconds{job=\"vrrp-monitor\"}");
    eprintln!(
        "metrics scrape by prometheus: scrape_duration_seconds = {}",
        took.first()
            .map_or("?".into(), |t| t["value"][1].to_string())
    );
}

/// Keepalived-exporter's track script families from the readings'
/// `tracked` scripts, with `host`, through the real server, and promtool.
#[test]
#[cfg_attr(
    not(feature = "test-prometheus"),
    ignore = "prometheus tier: prometheus and promtool; --features test-prometheus (scripts/test.sh)"
)]
fn track_scripts_are_exported_as_keepalived_exporter_does() {
    let server = Launch::new().start();
    let admin = server.admin();
    let agent = server.register_agent(&admin, "h2");
    let mut ws = server.connect_agent(&agent);
    let mut r = reading(&[("VI_1", "FAULT")]);
    r["instances"][0]["tracked"] = json!([
        { "kind": "script", "name": "chk_lab", "status": "BAD", "state": "idle", "ok": false },
        { "kind": "script", "name": "chk_dns", "status": "GOOD", "weight": -10, "ok": true },
        { "kind": "interface", "name": "trk0", "status": "UP", "ok": true }
    ]);
    ws.send("KEEPALIVED_UPDATE", r);
    let body = scrape_until(&server, |b| b.contains("keepalived_script_status{"));
    assert!(
        body.contains("keepalived_script_status{host=\"h2\",name=\"chk_lab\"} 0\n"),
        "{body}"
    );
    assert!(body.contains("keepalived_script_status{host=\"h2\",name=\"chk_dns\"} 1\n"));
    assert!(body.contains("keepalived_script_state{host=\"h2\",name=\"chk_lab\"} 0\n"));
    assert!(!body.contains("name=\"trk0\""), "an interface is no script");
    let (clean, said) = promtool_check(&body);
    assert!(clean, "promtool check metrics: {said}");
    // The agent goes away: its scripts' last words are no longer claimed.
    drop(ws);
    let body = scrape_until(&server, |b| !b.contains("keepalived_script_status{"));
    assert!(!body.contains("keepalived_script_status{"), "{body}");
}
