//! The confirmed state as stored: a row an earlier build wrote reads back.

use super::*;
use crate::clusters::observe::Finding;

/// A row written before the confirmed state was typed (by hand-written
/// conversions) reads back as the same state: an upgrade keeps every cluster's
/// confirmed roles and open incident.
#[test]
fn a_confirmed_state_stored_by_an_earlier_build_reads_back() {
    let row = r#"{"roles":{"kind":"several","ids":["c1","c2"]},"masterAlone":["c1","a"],
        "health":"split-brain","incident":{"id":"i-1","history":["split-brain"],
        "openedAt":"2026-11-21T08:00:00.000Z","findings":[
        {"type":"split-brain","text":"a and b are both MASTER at once (split brain).","hosts":["a","b"]},
        {"type":"fault","text":"b is in FAULT.","host":"b"},
        {"type":"from-a-later-build","text":"?"}]},
        "cluster":{"key":"|51|192.0.2.0/24"},"readiness":{"verdict":"not-a-verdict"}}"#;
    let c: Confirmed = serde_json::from_str(row).expect("an earlier row reads");
    assert_eq!(c.roles, Roles::Several(vec!["c1".into(), "c2".into()]));
    assert_eq!(c.master_alone, Some(("c1".into(), "a".into())));
    assert_eq!(c.health, IncidentHealth::SplitBrain);
    assert_eq!(c.readiness, None, "a verdict that does not read is none");
    let incident = c.incident.as_ref().expect("the open incident");
    assert_eq!(iso(incident.opened_at), "2026-11-21T08:00:00.000Z");
    let findings: Vec<&Finding> = incident.findings.values().collect();
    assert_eq!(
        findings.len(),
        2,
        "the unknown kind is left out: {findings:?}"
    );
    assert!(findings.contains(&&Finding::Fault {
        host: "b".into(),
        causes: json!([])
    }));
    // Written again, it is the same shape (the reasons with their sentences).
    let again: Value = serde_json::to_value(&c).unwrap();
    assert_eq!(
        again["roles"],
        json!({"kind": "several", "ids": ["c1", "c2"]})
    );
    assert_eq!(
        again["incident"]["findings"][1]["text"],
        "b is in FAULT; keepalived reports no cause."
    );
    assert_eq!(serde_json::from_value::<Confirmed>(again).unwrap(), c);
    let one: Value = serde_json::to_value(Roles::One("c1".into())).unwrap();
    assert_eq!(one, json!({"kind": "one", "ids": ["c1"]}));
    assert!(serde_json::from_value::<Roles>(json!({"kind": "one"})).is_err());
}
