//! Requests for fresh readings across clusters: one per agent and pending change.

use super::*;

#[test]
fn an_agent_owing_readings_to_two_clusters_is_asked_once() {
    let t0 = Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap();
    let view = |h: &str, s1: &str, s2: &str| HostView {
        client_id: format!("id-{h}"),
        site: None,
        host: h.into(),
        online: true,
        readable: true,
        instances: vec![
            inst(json!({ "name": "VI_1", "vrid": 51, "state": s1, "vips": ["192.0.2.100/24"] })),
            inst(json!({ "name": "VI_2", "vrid": 52, "state": s2, "vips": ["198.51.100.100/24"] })),
        ],
        read_at: Some(iso(t0)),
        drain: None,
    };
    let mut ev = Evaluator::default();
    let known = group(&[view("a", "MASTER", "MASTER"), view("b", "BACKUP", "BACKUP")]);
    ev.evaluate(&known, t0 - Duration::seconds(5));
    ev.evaluate(&known, t0);
    // VI_1 fails over, VI_2 half a second later; nobody sends a reading.
    let first = group(&[view("a", "BACKUP", "MASTER"), view("b", "MASTER", "BACKUP")]);
    assert!(ev.evaluate(&first, t0).requests.is_empty());
    let both = group(&[view("a", "BACKUP", "BACKUP"), view("b", "MASTER", "MASTER")]);
    assert!(ev
        .evaluate(&both, t0 + Duration::milliseconds(500))
        .requests
        .is_empty());
    let out = ev.evaluate(&both, t0 + Duration::seconds(4));
    assert_eq!(out.requests, ["id-a", "id-b"], "VI_1's interval is over");
    let out = ev.evaluate(&both, t0 + Duration::milliseconds(4500));
    assert!(
        out.requests.is_empty(),
        "VI_2's interval is over too, but both were asked 0.5 s ago"
    );
    assert!(
        ev.evaluate(&both, t0 + Duration::seconds(6))
            .requests
            .is_empty(),
        "once per pending change"
    );
}
