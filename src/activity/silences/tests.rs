//! The silence matcher and body rules (pure).

use super::matcher::*;
use crate::activity::Event;
use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use vrrp_protocol::ActivityLevel;

fn cluster_event(kind: &str, client: &str) -> Event {
    let now = Utc.with_ymd_and_hms(2026, 11, 25, 8, 0, 0).unwrap();
    Event::server(
        kind,
        ActivityLevel::Warning,
        Some(client.into()),
        json!({ "cluster": { "site": "dc-1", "vrid": 51, "networks": ["10.0.1.0/24"],
            "members": [{ "clientId": "c-1" }, { "clientId": "c-2" }] } }),
        now,
    )
}

#[test]
fn kind_patterns() {
    assert!(kind_matches("vrrp.*", "vrrp.incident_opened"));
    assert!(kind_matches("*", "anything"));
    assert!(kind_matches("vrrp.incident_*", "vrrp.incident_"));
    assert!(kind_matches("*.stopped", "keepalived.stopped"));
    assert!(kind_matches("vrrp.*_opened", "vrrp.incident_opened"));
    assert!(kind_matches("client.connected", "client.connected"));
    assert!(!kind_matches("client.connected", "client.connected2"));
    assert!(!kind_matches("vrrp.*", "keepalived.stopped"));
    assert!(!kind_matches("a*b*c", "ab"));
    assert!(kind_matches("a*b*c", "a-b-c"));
    assert!(
        !kind_matches("ab*ba", "aba"),
        "the two ends may not overlap"
    );
}

#[test]
fn every_part_given_must_match() {
    let e = cluster_event("vrrp.incident_opened", "c-2");
    let by_cluster = Matcher {
        cluster_key: Some("dc-1|51|10.0.1.0/24".into()),
        ..Matcher::default()
    };
    assert!(by_cluster.matches(&e));
    let other_cluster = Matcher {
        cluster_key: Some("dc-2|51|10.0.1.0/24".into()),
        ..Matcher::default()
    };
    assert!(!other_cluster.matches(&e));
    // A host matches events naming it and the cluster events of its clusters.
    let host = |id: &str| Matcher {
        client_id: Some(id.into()),
        ..Matcher::default()
    };
    assert!(host("c-2").matches(&e));
    assert!(host("c-1").matches(&e), "c-1 is a member of the cluster");
    assert!(!host("c-3").matches(&e));
    let mut agent = cluster_event("keepalived.stopped", "c-3");
    agent.data.clear();
    assert!(host("c-3").matches(&agent));
    assert!(!host("c-1").matches(&agent));
    // Combined: all must hold.
    let both = Matcher {
        cluster_key: Some("dc-1|51|10.0.1.0/24".into()),
        kind: Some("vrrp.master_*".into()),
        ..Matcher::default()
    };
    assert!(!both.matches(&e));
    assert!(both.matches(&cluster_event("vrrp.master_changed", "c-1")));
}

#[test]
fn bodies_are_checked_naming_the_field() {
    let now = Utc.with_ymd_and_hms(2026, 11, 25, 8, 0, 0).unwrap();
    let later = |h: i64| (now + Duration::hours(h)).to_rfc3339();
    let ok = validate(
        json!({ "matcher": { "kind": "vrrp.*" }, "endsAt": later(4), "comment": " kernel update " })
            .as_object()
            .unwrap(),
        now,
    )
    .unwrap();
    assert_eq!(ok.starts_at, now);
    assert_eq!(ok.comment, "kernel update");
    for (body, error) in [
        (json!({}), ("matcher", "is required")),
        (json!({ "matcher": 3 }), ("matcher", "must be an object")),
        (
            json!({ "matcher": { "clientId": 3 } }),
            ("matcher.clientId", "must be a string"),
        ),
        (
            json!({ "matcher": { "kind": "" } }),
            ("matcher.kind", "must not be empty"),
        ),
        (
            json!({ "matcher": { "kind": "a" }, "startsAt": "soon" }),
            ("startsAt", "must be an ISO 8601 timestamp"),
        ),
        (
            json!({ "matcher": { "kind": "a" } }),
            ("endsAt", "is required"),
        ),
        (
            json!({ "matcher": { "kind": "a" }, "endsAt": later(1) }),
            ("comment", "is required"),
        ),
        (
            json!({ "matcher": {}, "endsAt": later(1), "comment": "x" }),
            (
                "matcher",
                "needs at least one of clusterKey, clientId, kind",
            ),
        ),
        (
            json!({ "matcher": { "kind": "a" }, "endsAt": later(-1), "comment": "x" }),
            ("endsAt", "must be later than startsAt and now"),
        ),
        (
            json!({ "matcher": { "kind": "a" }, "endsAt": later(7 * 24 + 1), "comment": "x" }),
            ("endsAt", "must be at most 7 days after startsAt"),
        ),
    ] {
        let got = validate(body.as_object().unwrap(), now).unwrap_err();
        assert_eq!((got.0.as_str(), got.1.as_str()), error, "{body}");
    }
}
