//! Unit tests of the renderer: families, one-hot health, exporter names, escaping.

use super::render::{split_vip_for_tests, state_number};
use super::*;
use chrono::{TimeZone, Utc};
use serde_json::{json, Value};

/// A client as the scrape names it.
fn line(id: &str, name: &str, site: &str, online: bool) -> ClientLine {
    ClientLine {
        id: id.into(),
        name: name.into(),
        site: site.into(),
        online,
    }
}

/// A stored reading from its JSON (as an agent sends it).
fn reading(mut v: Value) -> vrrp_protocol::Reading {
    v["collectedAt"] = json!("2026-01-01T00:00:00.000Z");
    serde_json::from_value(v).expect("a reading")
}

fn sample() -> Snapshot {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 30).unwrap();
    let line = line("c1", "lb-1", "fra", true);
    let reading = reading(json!({
        "receivedAt": "2026-01-01T00:00:00.000Z", "running": true, "error": null,
        "instances": [{"name": "VI_1", "state": "MASTER", "interface": "eth0", "vrid": 51,
            "priority": 120, "effectivePriority": 110, "vips": ["192.0.2.100/24 dev eth1 scope global", "192.0.2.101/24"],
            "excludedVips": ["10.10.0.1", "2001:db8::1/64 dev eth2", 7],
            "stats": {"advertisements_received": 7, "became_master": 2}}]
    }));
    let cluster = ClusterFacts::new(
        "fra",
        51,
        &["192.0.2.0/24".into()],
        "split-brain",
        [(true, "MASTER"), (true, "MASTER"), (false, "BACKUP")],
        false,
        [],
    );
    Snapshot {
        clusters: vec![cluster],
        clients: vec![ClientFacts::new(line, Some(&reading), now)],
        incidents_open: 1,
        activity: vec![(("vrrp.master_changed".into(), "warning".into()), 3)],
        webhooks: vec![(("ops \"chat\"".into(), "delivered".into()), 2)],
        process: Some(ProcessFacts {
            resident_memory_bytes: 4096,
            threads: 12,
            open_fds: 9,
            max_fds: Some(1024),
        }),
        queues: vec![("sqlite-writer", 3), ("cluster-eval", 0)],
    }
}

#[test]
fn cluster_health_is_one_hot_and_members_count_offline_apart() {
    let text = render(&sample());
    let base = r#"site="fra",vrid="51",network="192.0.2.0/24""#;
    assert!(text.contains(&format!(
        "vrrp_cluster_health{{{base},health=\"split-brain\"}} 1\n"
    )));
    assert!(text.contains(&format!("vrrp_cluster_health{{{base},health=\"ok\"}} 0\n")));
    assert_eq!(text.matches("vrrp_cluster_health{").count(), 6);
    assert!(text.contains(&format!("vrrp_cluster_masters{{{base}}} 2\n")));
    assert!(text.contains(&format!(
        "vrrp_cluster_members{{{base},state=\"MASTER\"}} 2\n"
    )));
    assert!(text.contains(&format!(
        "vrrp_cluster_members{{{base},state=\"OFFLINE\"}} 1\n"
    )));
}

#[test]
fn readiness_is_one_gauge_and_a_finding_gauge_per_check() {
    let cluster = ClusterFacts::new(
        "fra",
        52,
        &["198.51.100.0/24".into()],
        "ok",
        [],
        false,
        [
            ("no_ready_backup", false),
            ("advert_interval_mismatch", true),
            ("auth_mismatch", false),
        ],
    );
    let mut snapshot = sample();
    snapshot.clusters.push(cluster);
    let text = render(&snapshot);
    let base = r#"site="fra",vrid="52",network="198.51.100.0/24""#;
    assert!(
        text.contains(&format!("vrrp_monitor_cluster_ready{{{base}}} 0\n")),
        "{text}"
    );
    for (check, n) in [
        ("no_ready_backup", 0),
        ("advert_interval_mismatch", 1),
        ("auth_mismatch", 0),
    ] {
        assert!(
            text.contains(&format!(
                "vrrp_monitor_cluster_readiness_findings{{{base},check=\"{check}\"}} {n}\n"
            )),
            "{check}: {text}"
        );
    }
    let ready = ClusterFacts::new("", 53, &[], "ok", [], true, []);
    assert!(render(&Snapshot {
        clusters: vec![ready],
        ..Snapshot::default()
    })
    .contains("vrrp_monitor_cluster_ready{site=\"\",vrid=\"53\",network=\"\"} 1\n"));
}

#[test]
fn instances_use_keepalived_exporter_names_and_labels() {
    let text = render(&sample());
    assert!(text.contains(r#"keepalived_vrrp_state{host="lb-1",iname="VI_1",intf="eth1",vrid="51",ip_address="192.0.2.100"} 2"#));
    assert!(text.contains(r#"keepalived_vrrp_state{host="lb-1",iname="VI_1",intf="eth0",vrid="51",ip_address="192.0.2.101"} 2"#));
    assert!(text.contains("# TYPE keepalived_advertisements_received_total counter\n"));
    assert!(text.contains(r#"keepalived_advertisements_received_total{host="lb-1",iname="VI_1",intf="eth0",vrid="51"} 7"#));
    assert!(text.contains(
        r#"keepalived_become_master_total{host="lb-1",iname="VI_1",intf="eth0",vrid="51"} 2"#
    ));
    assert!(text.contains(
        r#"vrrp_instance_effective_priority{host="lb-1",iname="VI_1",intf="eth0",vrid="51"} 110"#
    ));
    // Excluded VIPs: their own family, the instance's state, a non-string skipped.
    assert!(text.contains(r#"keepalived_vrrp_excluded_state{host="lb-1",iname="VI_1",intf="eth0",vrid="51",ip_address="10.10.0.1"} 2"#));
    assert!(text.contains(r#"keepalived_vrrp_excluded_state{host="lb-1",iname="VI_1",intf="eth2",vrid="51",ip_address="2001:db8::1"} 2"#));
    assert_eq!(text.matches("keepalived_vrrp_excluded_state{").count(), 2);
    assert_eq!(text.matches("keepalived_vrrp_state{").count(), 2);
    // A counter the reading did not carry is left out, not reported as 0.
    assert!(!text.contains("keepalived_advertisements_sent_total"));
}

#[test]
fn agents_incidents_counters_and_process() {
    let text = render(&sample());
    assert!(text.contains(r#"vrrp_agent_up{client_id="c1",host="lb-1",site="fra"} 1"#));
    assert!(text
        .contains(r#"vrrp_agent_reading_age_seconds{client_id="c1",host="lb-1",site="fra"} 30"#));
    assert!(text.contains(r#"vrrp_keepalived_running{client_id="c1",host="lb-1",site="fra"} 1"#));
    assert!(text.contains("vrrp_incidents_open 1\n"));
    assert!(text
        .contains(r#"vrrp_activity_events_total{kind="vrrp.master_changed",level="warning"} 3"#));
    // Label values are escaped.
    assert!(text.contains(
        r#"vrrp_webhook_deliveries_total{webhook="ops \"chat\"",outcome="delivered"} 2"#
    ));
    assert!(
        text.contains("process_resident_memory_bytes 4096\nprocess_threads 12\n")
            || text.contains("process_threads 12\n")
    );
    assert!(text.contains("process_open_fds 9\n"));
    assert!(text.contains(r#"vrrp_monitor_queue_length{queue="sqlite-writer"} 3"#));
    assert!(text.contains(r#"vrrp_monitor_queue_length{queue="cluster-eval"} 0"#));
}

#[test]
fn every_family_has_help_and_type_once_and_its_samples_together() {
    let text = render(&sample());
    let mut seen = Vec::<String>::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap().to_owned();
            assert!(!seen.contains(&name), "{name} declared twice");
            seen.push(name.clone());
            current = name;
        } else if !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap();
            assert_eq!(name, current, "sample outside its family: {line}");
        }
    }
    assert!(text.ends_with('\n'));
}

#[test]
fn an_offline_agent_shows_no_instances() {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 30).unwrap();
    let client = line("c1", "lb-1", "", false);
    let reading = reading(
        json!({"receivedAt": "2026-01-01T00:00:00Z", "running": true, "error": null,
        "instances": [{"name": "VI_1", "state": "MASTER", "vrid": 51}]}),
    );
    let facts = ClientFacts::new(client.clone(), Some(&reading), now);
    assert!(facts.instances.is_empty());
    let text = render(&Snapshot {
        clients: vec![facts],
        ..Snapshot::default()
    });
    assert!(!text.contains("keepalived_vrrp_state"));
    assert!(text.contains(r#"vrrp_agent_up{client_id="c1",host="lb-1",site=""} 0"#));
    assert!(text.contains("keepalived_up{host=\"lb-1\"} 0"));
}

#[test]
fn states_are_keepalived_numbers_and_vips_split() {
    assert_eq!(state_number("MASTER"), 2.0);
    assert_eq!(state_number("FAULT"), 3.0);
    assert_eq!(state_number("UNKNOWN"), -1.0);
    assert_eq!(
        split_vip_for_tests("10.0.0.1/24 dev eth2 scope global", "eth0"),
        ("10.0.0.1", "eth2")
    );
    assert_eq!(
        split_vip_for_tests("10.0.0.1", "eth0"),
        ("10.0.0.1", "eth0")
    );
}

#[test]
fn the_shipped_alert_rules_and_dashboard_name_only_series_we_serve() {
    let mut full = sample();
    let reading = reading(
        json!({"receivedAt": "2026-01-01T00:00:00Z", "running": true, "error": null,
        "instances": [{"name": "VI_1", "state": "FAULT", "vrid": 51,
            "stats": {"authentication_errors_failure": 1, "advertisements_received": 1}}]}),
    );
    let client = line("c2", "lb-2", "", true);
    full.clients
        .push(ClientFacts::new(client, Some(&reading), Utc::now()));
    let text = render(&full);
    let served: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for (file, doc) in [
        (
            "prometheus-alerts.yml",
            include_str!("../../doc/prometheus-alerts.yml"),
        ),
        (
            "grafana-dashboard.json",
            include_str!("../../doc/grafana-dashboard.json"),
        ),
    ] {
        let mut named = 0;
        for word in doc.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let ours = ["vrrp_", "keepalived_", "process_"]
                .iter()
                .any(|p| word.starts_with(p));
            if ours && word != "vrrp_monitor" {
                named += 1;
                assert!(
                    served.contains(&word),
                    "{file} names {word}, which /metrics does not serve"
                );
            }
        }
        assert!(named > 5, "{file} names only {named} of our series");
    }
}

#[test]
fn track_scripts_use_keepalived_exporters_names_values_and_labels() {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 30).unwrap();
    let client = line("c1", "lb-1", "", true);
    // chk_lab is tracked by two instances: keepalived runs it once, one series.
    let reading = reading(
        json!({"receivedAt": "2026-01-01T00:00:00Z", "running": true, "error": null,
        "instances": [
            {"name": "VI_1", "state": "FAULT", "vrid": 51, "tracked": [
                {"kind": "script", "name": "chk_lab", "status": "BAD", "state": "idle", "ok": false},
                {"kind": "interface", "name": "trk0", "status": "DOWN", "ok": false},
                {"kind": "script", "name": "chk_new", "status": "INIT", "ok": false}]},
            {"name": "VI_2", "state": "FAULT", "vrid": 52, "tracked": [
                {"kind": "script", "name": "chk_lab", "status": "BAD", "state": "idle", "ok": false},
                {"kind": "script", "name": "chk_up", "status": "GOOD", "ok": true}]}]}),
    );
    let text = render(&Snapshot {
        clients: vec![ClientFacts::new(client.clone(), Some(&reading), now)],
        ..Snapshot::default()
    });
    assert!(text.contains("# TYPE keepalived_script_status gauge\n"));
    assert!(text.contains("keepalived_script_status{host=\"lb-1\",name=\"chk_lab\"} 0\n"));
    assert!(text.contains("keepalived_script_status{host=\"lb-1\",name=\"chk_up\"} 1\n"));
    assert_eq!(
        text.matches("keepalived_script_status{").count(),
        2,
        "INIT is no word of the exporter's: no sample, and trk0 is no script"
    );
    assert!(text.contains("keepalived_script_state{host=\"lb-1\",name=\"chk_lab\"} 0\n"));
    assert_eq!(
        text.matches("keepalived_script_state{").count(),
        1,
        "a script without a run state has no state sample"
    );

    // Offline: a stale BAD must not page anyone.
    let offline = line("c1", "lb-1", "", false);
    let text = render(&Snapshot {
        clients: vec![ClientFacts::new(offline, Some(&reading), now)],
        ..Snapshot::default()
    });
    assert!(!text.contains("keepalived_script_status"));
}

#[test]
fn heartbeat_family_only_after_a_success() {
    assert_eq!(crate::metrics::render_heartbeat(None), "");
    let text = crate::metrics::render_heartbeat(Some(1_764_223_200.5));
    assert!(text.contains("# TYPE vrrp_monitor_heartbeat_last_success_timestamp_seconds gauge"));
    assert!(
        text.contains("\nvrrp_monitor_heartbeat_last_success_timestamp_seconds 1764223200.5\n"),
        "{text}"
    );
}
