//! Every check of the readiness judgement on members built in the test: its
//! pass, its failure with the sentence, and its unknown with the reason.

use super::*;
use serde_json::{json, Value};

/// A live member `host` of VI_1 (VRID 51) in `state`, with a newer agent's
/// readiness fields (all equal across hosts) overlaid by `extra`.
fn member(host: &str, state: &str, extra: Value) -> Member {
    let mut inst = json!({
        "name": "VI_1", "vrid": 51, "state": state, "priority": 100,
        "advertInterval": 1.0, "vips": ["192.0.2.100/24"],
        "vrrpVersion": 2, "authType": "none", "usesUnicast": false,
        "sourceAddress": format!("192.0.2.{}", 10 + host.len()), "configFaults": 0,
    });
    if let (Some(o), Some(e)) = (inst.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            o.insert(k.clone(), v.clone());
        }
    }
    Member {
        client_id: format!("id-{host}"),
        host: host.into(),
        online: true,
        reporting: true,
        instance: serde_json::from_value(inst).expect("an instance"),
        read_at: Some(format!("2026-11-29T10:00:0{}.000Z", host.len() % 10)),
        drain: None,
    }
}

/// The usual pair: `a` MASTER heard by `b`, priorities 110 and 100.
fn pair() -> Vec<Member> {
    let a = member(
        "lb-a",
        "MASTER",
        json!({ "priority": 110, "sourceAddress": "192.0.2.11" }),
    );
    let b = member(
        "lb-b",
        "BACKUP",
        json!({ "priority": 100, "sourceAddress": "192.0.2.12", "masterRouter": "192.0.2.11" }),
    );
    vec![a, b]
}

fn outcome(r: &Readiness, check: Check) -> &CheckOutcome {
    r.checks
        .iter()
        .find(|c| c.check == check)
        .expect("every check is listed")
}

fn set(m: &mut Member, field: &str, value: Value) {
    let mut v = serde_json::to_value(&m.instance).unwrap();
    v[field] = value;
    m.instance = serde_json::from_value(v).unwrap();
}

#[test]
fn a_healthy_pair_is_ready_with_every_check_passed() {
    let r = judge(&pair());
    assert_eq!(r.verdict, Verdict::Ready, "{r:#?}");
    assert!(r.findings.is_empty());
    assert_eq!(r.checks.len(), Check::ALL.len());
    for c in &r.checks {
        assert_eq!(c.status, Status::Pass, "{c:?}");
    }
    assert_eq!(
        outcome(&r, Check::NoReadyBackup).message,
        "lb-b is ready to take over from lb-a"
    );
    assert_eq!(r.checked_at.as_deref(), Some("2026-11-29T10:00:04.000Z"));
}

#[test]
fn an_advert_interval_of_its_own_names_the_host_and_both_values() {
    let mut ms = pair();
    ms.push(member(
        "lb-c",
        "BACKUP",
        json!({ "priority": 90, "sourceAddress": "192.0.2.13", "masterRouter": "192.0.2.11" }),
    ));
    set(&mut ms[1], "advertInterval", json!(2.0));
    let r = judge(&ms);
    assert_eq!(r.verdict, Verdict::NotReady);
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    let f = &r.findings[0];
    assert_eq!(f.check, Check::AdvertIntervalMismatch);
    assert_eq!(f.severity, Severity::Blocking);
    assert_eq!(f.hosts, vec!["lb-b"]);
    assert_eq!(
        f.message,
        "lb-b advertises every 2 s, lb-a and lb-c advertise every 1 s: a member with another interval discards the master's adverts"
    );
}

#[test]
fn no_ready_backup_covers_fault_offline_and_a_lone_master() {
    let mut ms = pair();
    set(&mut ms[1], "state", json!("FAULT"));
    set(
        &mut ms[1],
        "faultReason",
        json!("track script chk_lab failed"),
    );
    let r = judge(&ms);
    assert_eq!(r.verdict, Verdict::NotReady);
    let f = r
        .findings
        .iter()
        .find(|f| f.check == Check::NoReadyBackup)
        .unwrap();
    assert_eq!(f.hosts, vec!["lb-b"]);
    assert_eq!(
        f.message,
        "lb-b is in FAULT (track script chk_lab failed): no backup could take over from lb-a"
    );

    let mut ms = pair();
    ms[1].online = false;
    let f = judge(&ms)
        .findings
        .into_iter()
        .find(|f| f.check == Check::NoReadyBackup)
        .unwrap();
    assert_eq!(
        f.message,
        "lb-b is offline: no backup could take over from lb-a"
    );

    let lone = vec![pair().remove(0)];
    let r = judge(&lone);
    assert_eq!(r.verdict, Verdict::NotReady);
    assert_eq!(
        r.findings[0].message,
        "lb-a is the only member: nothing could take over if it fails"
    );
    // Comparisons need two members: unknown, not a pass and not a finding.
    assert_eq!(outcome(&r, Check::VersionMismatch).status, Status::Unknown);
}

#[test]
fn without_a_single_master_the_backup_checks_are_unknown_not_failed() {
    let mut ms = pair();
    set(&mut ms[0], "state", json!("BACKUP"));
    let r = judge(&ms);
    assert_eq!(outcome(&r, Check::NoReadyBackup).status, Status::Unknown);
    assert_eq!(
        outcome(&r, Check::BackupHearsOtherMaster).status,
        Status::Unknown
    );
    assert_eq!(r.verdict, Verdict::Ready, "the configuration checks passed");
}

#[test]
fn a_backup_hearing_another_master_is_named_with_the_address() {
    let mut ms = pair();
    set(&mut ms[1], "masterRouter", json!("192.0.2.99"));
    let f = judge(&ms).findings.remove(0);
    assert_eq!(f.check, Check::BackupHearsOtherMaster);
    assert_eq!(
        f.message,
        "lb-b hears 192.0.2.99 as master, not lb-a (192.0.2.11): a backup that follows another master will not take over from this one"
    );
}

#[test]
fn versions_authentication_and_passwords_are_compared() {
    let mut ms = pair();
    set(&mut ms[1], "vrrpVersion", json!(3));
    let f = judge(&ms).findings.remove(0);
    assert_eq!(f.check, Check::VersionMismatch);
    assert!(
        f.message
            .starts_with("lb-b speaks VRRPv3, lb-a speaks VRRPv2: "),
        "{}",
        f.message
    );

    let mut ms = pair();
    for m in &mut ms {
        set(m, "authType", json!("pass"));
        set(
            m,
            "authFingerprint",
            json!("00112233445566778899aabbccddeeff"),
        );
    }
    assert_eq!(judge(&ms).verdict, Verdict::Ready);
    set(
        &mut ms[1],
        "authFingerprint",
        json!("ffeeddccbbaa99887766554433221100"),
    );
    let f = judge(&ms).findings.remove(0);
    assert_eq!(f.check, Check::AuthMismatch);
    assert_eq!(f.hosts, vec!["lb-b"]);
    assert!(
        f.message.starts_with("lb-b has another password than lb-a"),
        "{}",
        f.message
    );

    set(&mut ms[1], "authType", json!("ah"));
    let f = judge(&ms).findings.remove(0);
    assert!(
        f.message.contains("uses authentication ah"),
        "{}",
        f.message
    );
}

#[test]
fn a_masked_password_or_an_older_agent_makes_the_auth_check_unknown_and_says_why() {
    let mut ms = pair();
    for m in &mut ms {
        set(m, "authType", json!("pass"));
    }
    set(
        &mut ms[0],
        "authFingerprint",
        json!("00112233445566778899aabbccddeeff"),
    );
    set(&mut ms[1], "authPasswordMasked", json!(true));
    let r = judge(&ms);
    let c = outcome(&r, Check::AuthMismatch);
    assert_eq!(c.status, Status::Unknown);
    assert_eq!(
        c.message,
        "keepalived on lb-b masks the password in its dump (2.4 and later), so the passwords cannot be compared"
    );
    assert!(r.findings.is_empty());
    assert_eq!(r.verdict, Verdict::Ready);
}

#[test]
fn todays_agent_feeds_some_checks_and_leaves_the_rest_unknown_without_a_finding() {
    // What an agent without the readiness fields sends.
    let old = |host: &str, state: &str, prio: u32, heard: Option<&str>| {
        let mut m = member(host, state, json!({}));
        m.instance = serde_json::from_value(json!({
            "name": "VI_1", "vrid": 51, "state": state, "priority": prio,
            "advertInterval": 1.0, "vips": ["192.0.2.100/24"], "masterRouter": heard,
        }))
        .unwrap();
        m
    };
    let ms = vec![
        old("lb-a", "MASTER", 110, None),
        old("lb-b", "BACKUP", 100, Some("192.0.2.11")),
    ];
    let r = judge(&ms);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.verdict, Verdict::Ready);
    for check in [
        Check::BackupHearsOtherMaster,
        Check::VersionMismatch,
        Check::AuthMismatch,
        Check::UnicastMismatch,
        Check::ConfigFaults,
    ] {
        let c = outcome(&r, check);
        assert_eq!(c.status, Status::Unknown, "{c:?}");
        assert!(c.message.contains("older agent"), "{c:?}");
    }
    for check in [
        Check::NoReadyBackup,
        Check::AdvertIntervalMismatch,
        Check::VipMismatch,
        Check::PriorityTie,
    ] {
        assert_eq!(outcome(&r, check).status, Status::Pass, "{check:?}");
    }
}

#[test]
fn unicast_members_must_name_each_other() {
    let mut ms = pair();
    for m in &mut ms {
        set(m, "usesUnicast", json!(true));
    }
    set(&mut ms[0], "unicastPeers", json!(["192.0.2.12"]));
    set(&mut ms[1], "unicastPeers", json!(["192.0.2.11"]));
    assert_eq!(judge(&ms).verdict, Verdict::Ready);
    set(&mut ms[1], "unicastPeers", json!(["192.0.2.77"]));
    let f = judge(&ms).findings.remove(0);
    assert_eq!(f.check, Check::UnicastMismatch);
    assert_eq!(f.hosts, vec!["lb-b"]);
    assert!(
        f.message.starts_with("lb-b's peers lack lb-a (192.0.2.11)"),
        "{}",
        f.message
    );

    set(&mut ms[1], "usesUnicast", json!(false));
    let f = judge(&ms).findings.remove(0);
    assert!(f.message.contains("uses multicast"), "{}", f.message);
}

#[test]
fn warnings_alone_put_the_cluster_at_risk() {
    let mut ms = pair();
    set(&mut ms[0], "priority", json!(100));
    set(&mut ms[1], "configFaults", json!(2));
    let r = judge(&ms);
    assert_eq!(r.verdict, Verdict::AtRisk);
    let checks: Vec<Check> = r.findings.iter().map(|f| f.check).collect();
    assert_eq!(checks, vec![Check::PriorityTie, Check::ConfigFaults]);
    assert!(r.findings.iter().all(|f| f.severity == Severity::Warning));
    assert_eq!(
        r.findings[0].message,
        "lb-a and lb-b have priority 100: a tie goes to the highest address, rarely what was meant"
    );
    assert!(r.findings[1]
        .message
        .starts_with("keepalived on lb-b counts 2 configuration faults"));
}

#[test]
fn nobody_reporting_is_unknown_and_offline_members_feed_no_comparison() {
    let mut ms = pair();
    for m in &mut ms {
        m.online = false;
    }
    let r = judge(&ms);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert!(r.checks.iter().all(|c| c.status == Status::Unknown));

    // An offline member's last-known interval is not held against the others.
    let mut ms = pair();
    ms.push(member(
        "lb-c",
        "BACKUP",
        json!({ "advertInterval": 5.0, "priority": 90 }),
    ));
    ms[2].online = false;
    assert_eq!(
        outcome(&judge(&ms), Check::AdvertIntervalMismatch).status,
        Status::Pass
    );
}

#[test]
fn hostile_values_give_short_sentences() {
    let mut ms = pair();
    let long = "x".repeat(1_000_000);
    set(&mut ms[1], "masterRouter", json!(long));
    let f = judge(&ms).findings.remove(0);
    assert!(f.message.len() < 400, "{} bytes", f.message.len());
    let mut ms = pair();
    let many: Vec<String> = (0..10_000)
        .map(|i| format!("10.0.{}.{}/32", i / 256, i % 256))
        .collect();
    set(&mut ms[1], "vips", json!(many));
    let f = judge(&ms).findings.remove(0);
    assert_eq!(f.check, Check::VipMismatch);
    assert!(f.message.len() < 400, "{}", f.message);
}

#[test]
fn the_api_shape_uses_the_spec_names() {
    let mut ms = pair();
    set(&mut ms[1], "advertInterval", json!(2.0));
    let v = serde_json::to_value(judge(&ms)).unwrap();
    assert_eq!(v["verdict"], "not_ready");
    assert_eq!(v["findings"][0]["check"], "advert_interval_mismatch");
    assert_eq!(v["findings"][0]["severity"], "blocking");
    assert_eq!(v["findings"][0]["hosts"], json!(["lb-b"]));
    assert_eq!(v["checks"][0]["status"], "pass");
    assert!(v["checkedAt"].is_string());
}
