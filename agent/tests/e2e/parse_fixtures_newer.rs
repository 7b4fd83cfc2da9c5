//! Parsers against every real keepalived 2.3.4 and 2.4.3 dump in `tests/fixtures`
//! (each folder's README.md says how they were made and what changed since 2.2.7). One test per file names the whole reading
//! it must give, field by field; the tests after them cover what keepalived tracks
//! (the FAULT causes, the JSON dump joined with the text dump) across 2.2.7 to 2.4.3,
//! and that no configured password or key ever reaches a reading.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use vrrp_agent::keepalived::parse::{self, ParsedDump};
use vrrp_protocol::{AuthPassword, FaultCause, TrackedKind, VrrpState};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(rel: &str) -> String {
    fs::read_to_string(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn expected(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("expectation does not parse: {e}"))
}

/// The text dump gives exactly these instances (no counters: those are in .stats)
/// and sync groups, and no VIP list entry is left out.
fn data_is(rel: &str, instances: &str, groups: &str) {
    let d = parse::parse_data(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(d.not_addresses.is_empty(), "{rel}: {:?}", d.not_addresses);
    assert_eq!(
        serde_json::to_value(&d.instances).unwrap(),
        expected(instances),
        "{rel}: instances"
    );
    assert_eq!(
        serde_json::to_value(&d.sync_groups).unwrap(),
        expected(groups),
        "{rel}: sync groups"
    );
}

/// The counters dump gives exactly these counters per instance.
fn stats_is(rel: &str, counters: &str) {
    let c = parse::parse_stats(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        expected(counters),
        "{rel}"
    );
}

/// The JSON dump gives exactly these instances (with their counters).
fn json_is(rel: &str, instances: &str) {
    let d = parse::parse_json(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(d.not_addresses.is_empty(), "{rel}: {:?}", d.not_addresses);
    assert!(
        d.sync_groups.is_empty(),
        "{rel}: the JSON has no sync groups"
    );
    assert_eq!(
        serde_json::to_value(&d.instances).unwrap(),
        expected(instances),
        "{rel}"
    );
}

fn not_a_state_dump(rel: &str) {
    assert!(parse::parse_data(&read(rel)).is_err(), "{rel}");
}

/// The dump files of the two newer versions, each with its test below.
const FILES: &[&str] = &[
    "2.3.4/syncgroup/after-failover-new-master.keepalived.data",
    "2.3.4/syncgroup/after-failover-new-master.keepalived.json",
    "2.3.4/syncgroup/after-failover-new-master.keepalived.stats",
    "2.3.4/syncgroup/backup-json_version2.keepalived.json",
    "2.3.4/syncgroup/backup.keepalived.data",
    "2.3.4/syncgroup/backup.keepalived.json",
    "2.3.4/syncgroup/backup.keepalived.stats",
    "2.3.4/syncgroup/master-json_version2.keepalived.json",
    "2.3.4/syncgroup/master.keepalived.data",
    "2.3.4/syncgroup/master.keepalived.json",
    "2.3.4/syncgroup/master.keepalived.stats",
    "2.3.4/syncgroup/master.keepalived_parent.data",
    "2.3.4/unicast/backup.keepalived.data",
    "2.3.4/unicast/backup.keepalived.json",
    "2.3.4/unicast/backup.keepalived.stats",
    "2.3.4/unicast/master.keepalived.data",
    "2.3.4/unicast/master.keepalived.json",
    "2.3.4/unicast/master.keepalived.stats",
    "2.4.3/syncgroup/after-failover-new-master.keepalived.data",
    "2.4.3/syncgroup/after-failover-new-master.keepalived.json",
    "2.4.3/syncgroup/after-failover-new-master.keepalived.stats",
    "2.4.3/syncgroup/backup-json_version2.keepalived.json",
    "2.4.3/syncgroup/backup.keepalived.data",
    "2.4.3/syncgroup/backup.keepalived.json",
    "2.4.3/syncgroup/backup.keepalived.stats",
    "2.4.3/syncgroup/master-json_version2.keepalived.json",
    "2.4.3/syncgroup/master.keepalived.data",
    "2.4.3/syncgroup/master.keepalived.json",
    "2.4.3/syncgroup/master.keepalived.stats",
    "2.4.3/syncgroup/master.keepalived_parent.data",
    "2.4.3/unicast/backup.keepalived.data",
    "2.4.3/unicast/backup.keepalived.json",
    "2.4.3/unicast/backup.keepalived.stats",
    "2.4.3/unicast/master.keepalived.data",
    "2.4.3/unicast/master.keepalived.json",
    "2.4.3/unicast/master.keepalived.stats",
    "2.4.3/auth-hmac/backup.keepalived.data",
    "2.4.3/auth-hmac/backup.keepalived.json",
    "2.4.3/auth-hmac/backup.keepalived.stats",
    "2.4.3/auth-hmac/master.keepalived.data",
    "2.4.3/auth-hmac/master.keepalived.json",
    "2.4.3/auth-hmac/master.keepalived.stats",
];

#[test]
fn every_dump_fixture_has_its_test() {
    let mut found = Vec::new();
    for version in ["2.3.4", "2.4.3"] {
        for scenario in fs::read_dir(fixtures().join(version)).unwrap() {
            let scenario = scenario.unwrap().path();
            if !scenario.is_dir() {
                continue;
            }
            for f in fs::read_dir(&scenario).unwrap() {
                let name = f.unwrap().file_name().into_string().unwrap();
                if name.ends_with(".data") || name.ends_with(".stats") || name.ends_with(".json") {
                    let folder = scenario.file_name().unwrap().to_string_lossy().into_owned();
                    found.push(format!("{version}/{folder}/{name}"));
                }
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = FILES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed);
}

#[test]
fn v2_3_4_syncgroup_after_failover_new_master_data() {
    data_is(
        "2.3.4/syncgroup/after-failover-new-master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:29:24.490Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"file","name":"trk_val","status":null,"value":0,"weight":0,"ok":true},{"kind":"process","name":"trk_svcd","status":"quorum","value":1,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:29:24.490Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[
        {"name":"SG_1","state":"MASTER","instances":["VI_1","VI_2"]}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_after_failover_new_master_json() {
    json_is(
        "2.3.4/syncgroup/after-failover-new-master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:24.490Z","stats":{"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:24.490Z","stats":{"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_after_failover_new_master_stats() {
    stats_is(
        "2.3.4/syncgroup/after-failover-new-master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_3_4_syncgroup_backup_json_version2_json() {
    json_is(
        "2.3.4/syncgroup/backup-json_version2.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:36.165Z","stats":{"advertisements_received":3,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:36.165Z","stats":{"advertisements_received":3,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_backup_data() {
    data_is(
        "2.3.4/syncgroup/backup.keepalived.data",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:29:16.331Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"file","name":"trk_val","status":null,"value":0,"weight":0,"ok":true},{"kind":"process","name":"trk_svcd","status":"quorum","value":1,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"masterRouter":"192.0.2.11","vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:29:16.332Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"masterRouter":"198.51.100.11","vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[
        {"name":"SG_1","state":"BACKUP","instances":["VI_1","VI_2"]}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_backup_json() {
    json_is(
        "2.3.4/syncgroup/backup.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:16.331Z","stats":{"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:16.332Z","stats":{"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_backup_stats() {
    stats_is(
        "2.3.4/syncgroup/backup.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_3_4_syncgroup_master_json_version2_json() {
    json_is(
        "2.3.4/syncgroup/master-json_version2.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:39.086Z","stats":{"advertisements_received":0,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:39.085Z","stats":{"advertisements_received":0,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_master_data() {
    data_is(
        "2.3.4/syncgroup/master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:29:19.260Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"file","name":"trk_val","status":null,"value":0,"weight":0,"ok":true},{"kind":"process","name":"trk_svcd","status":"quorum","value":1,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.11","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:29:19.257Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"198.51.100.11","configFaults":0}
    ]"#,
        r#"[
        {"name":"SG_1","state":"MASTER","instances":["VI_1","VI_2"]}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_master_json() {
    json_is(
        "2.3.4/syncgroup/master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:19.260Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:19.257Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_3_4_syncgroup_master_stats() {
    stats_is(
        "2.3.4/syncgroup/master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_3_4_syncgroup_master_parent_data() {
    // The parent process's dump holds the global definitions only.
    not_a_state_dump("2.3.4/syncgroup/master.keepalived_parent.data");
}

#[test]
fn v2_3_4_unicast_backup_data() {
    data_is(
        "2.3.4/unicast/backup.keepalived.data",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":115,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:55.113Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":-30,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":5,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["192.0.2.11"],"masterRouter":"192.0.2.11","vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:55.114Z","stats":null,"tracked":[{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["198.51.100.11"],"masterRouter":"198.51.100.11","vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"masterAdvertInterval":1.0,"usesUnicast":true,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[]"#,
    );
}

#[test]
fn v2_3_4_unicast_backup_json() {
    json_is(
        "2.3.4/unicast/backup.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":115,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:55.113Z","stats":{"advertisements_received":6,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:55.114Z","stats":{"advertisements_received":6,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"masterAdvertInterval":1.0}
    ]"#,
    );
}

#[test]
fn v2_3_4_unicast_backup_stats() {
    stats_is(
        "2.3.4/unicast/backup.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_3_4_unicast_master_data() {
    data_is(
        "2.3.4/unicast/master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":125,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:58.304Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":-30,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":5,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["192.0.2.12"],"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"192.0.2.11","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:58.323Z","stats":null,"tracked":[{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["198.51.100.12"],"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"198.51.100.11","configFaults":0}
    ]"#,
        r#"[]"#,
    );
}

#[test]
fn v2_3_4_unicast_master_json() {
    json_is(
        "2.3.4/unicast/master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":125,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:58.304Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:29:58.323Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_3_4_unicast_master_stats() {
    stats_is(
        "2.3.4/unicast/master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_syncgroup_after_failover_new_master_data() {
    data_is(
        "2.4.3/syncgroup/after-failover-new-master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:27:48.538Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"file","name":"trk_val","status":null,"value":0,"weight":0,"ok":true},{"kind":"process","name":"trk_svcd","status":"quorum","value":1,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:27:48.534Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[
        {"name":"SG_1","state":"MASTER","instances":["VI_1","VI_2"]}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_after_failover_new_master_json() {
    json_is(
        "2.4.3/syncgroup/after-failover-new-master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:27:48.538Z","stats":{"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:27:48.534Z","stats":{"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_after_failover_new_master_stats() {
    stats_is(
        "2.4.3/syncgroup/after-failover-new-master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":6,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":1,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_syncgroup_backup_json_version2_json() {
    json_is(
        "2.4.3/syncgroup/backup-json_version2.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:00.235Z","stats":{"advertisements_received":3,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:00.237Z","stats":{"advertisements_received":3,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_backup_data() {
    data_is(
        "2.4.3/syncgroup/backup.keepalived.data",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:27:40.347Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"file","name":"trk_val","status":null,"value":0,"weight":0,"ok":true},{"kind":"process","name":"trk_svcd","status":"quorum","value":1,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"masterRouter":"192.0.2.11","vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:27:40.347Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"masterRouter":"198.51.100.11","vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[
        {"name":"SG_1","state":"BACKUP","instances":["VI_1","VI_2"]}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_backup_json() {
    json_is(
        "2.4.3/syncgroup/backup.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:27:40.347Z","stats":{"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:27:40.347Z","stats":{"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_backup_stats() {
    stats_is(
        "2.4.3/syncgroup/backup.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":5,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_syncgroup_master_json_version2_json() {
    json_is(
        "2.4.3/syncgroup/master-json_version2.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:03.157Z","stats":{"advertisements_received":0,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:03.156Z","stats":{"advertisements_received":0,"advertisements_sent":3,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_master_data() {
    data_is(
        "2.4.3/syncgroup/master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:27:43.277Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"file","name":"trk_val","status":null,"value":0,"weight":0,"ok":true},{"kind":"process","name":"trk_svcd","status":"quorum","value":1,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.11","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":"SG_1","lastTransition":"2026-11-27T03:27:43.276Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"198.51.100.11","configFaults":0}
    ]"#,
        r#"[
        {"name":"SG_1","state":"MASTER","instances":["VI_1","VI_2"]}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_master_json() {
    json_is(
        "2.4.3/syncgroup/master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:27:43.277Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24","198.51.100.101/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:27:43.276Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_syncgroup_master_stats() {
    stats_is(
        "2.4.3/syncgroup/master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_syncgroup_master_parent_data() {
    // The parent process's dump holds the global definitions only.
    not_a_state_dump("2.4.3/syncgroup/master.keepalived_parent.data");
}

#[test]
fn v2_4_3_unicast_backup_data() {
    data_is(
        "2.4.3/unicast/backup.keepalived.data",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":115,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:20.047Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":-30,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":5,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["192.0.2.11"],"masterRouter":"192.0.2.11","vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:20.047Z","stats":null,"tracked":[{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["198.51.100.11"],"masterRouter":"198.51.100.11","vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"masterAdvertInterval":1.0,"usesUnicast":true,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[]"#,
    );
}

#[test]
fn v2_4_3_unicast_backup_json() {
    json_is(
        "2.4.3/unicast/backup.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":115,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:20.047Z","stats":{"advertisements_received":7,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:20.047Z","stats":{"advertisements_received":7,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"masterAdvertInterval":1.0}
    ]"#,
    );
}

#[test]
fn v2_4_3_unicast_backup_stats() {
    stats_is(
        "2.4.3/unicast/backup.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":7,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":7,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_unicast_master_data() {
    data_is(
        "2.4.3/unicast/master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":125,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:23.192Z","stats":null,"tracked":[{"kind":"interface","name":"trk0","status":"UP","value":null,"weight":-30,"ok":true},{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":5,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["192.0.2.12"],"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"192.0.2.11","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:23.212Z","stats":null,"tracked":[{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["198.51.100.12"],"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"198.51.100.11","configFaults":0}
    ]"#,
        r#"[]"#,
    );
}

#[test]
fn v2_4_3_unicast_master_json() {
    json_is(
        "2.4.3/unicast/master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":125,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:23.192Z","stats":{"advertisements_received":0,"advertisements_sent":5,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"pass","authPasswordMasked":true,"preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:28:23.212Z","stats":{"advertisements_received":0,"advertisements_sent":5,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_unicast_master_stats() {
    stats_is(
        "2.4.3/unicast/master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_auth_hmac_backup_data() {
    data_is(
        "2.4.3/auth-hmac/backup.keepalived.data",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:16.890Z","stats":null,"tracked":[{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"masterRouter":"192.0.2.11","vrrpVersion":2,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.12","configFaults":0},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:16.887Z","stats":null,"tracked":[{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["198.51.100.11"],"masterRouter":"198.51.100.11","vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"masterAdvertInterval":1.0,"usesUnicast":true,"sourceAddress":"198.51.100.12","configFaults":0}
    ]"#,
        r#"[]"#,
    );
}

#[test]
fn v2_4_3_auth_hmac_backup_json() {
    json_is(
        "2.4.3/auth-hmac/backup.keepalived.json",
        r#"[
        {"name":"VI_1","state":"BACKUP","wantedState":"BACKUP","interface":"eth0","vrid":51,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:16.890Z","stats":{"advertisements_received":16,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":4,"authentication_extension_errors_malformed":2,"authentication_extension_errors_missing":1,"authentication_extension_errors_replay":6,"authentication_extension_errors_stale":5,"authentication_extension_errors_unknown_key":3,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"BACKUP","wantedState":"BACKUP","interface":"eth1","vrid":52,"priority":110,"effectivePriority":110,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:16.887Z","stats":{"advertisements_received":16,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":7,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"masterAdvertInterval":1.0}
    ]"#,
    );
}

#[test]
fn v2_4_3_auth_hmac_backup_stats() {
    stats_is(
        "2.4.3/auth-hmac/backup.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":15,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":4,"authentication_extension_errors_malformed":2,"authentication_extension_errors_missing":1,"authentication_extension_errors_replay":6,"authentication_extension_errors_stale":5,"authentication_extension_errors_unknown_key":3,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":15,"advertisements_sent":0,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":7,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":0,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

#[test]
fn v2_4_3_auth_hmac_master_data() {
    data_is(
        "2.4.3/auth-hmac/master.keepalived.data",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:20.084Z","stats":null,"tracked":[{"kind":"script","name":"chk_svc","status":"GOOD","state":"idle","value":null,"weight":0,"ok":true},{"kind":"interface","name":"eth0","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"vrrpVersion":2,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":false,"sourceAddress":"192.0.2.11","configFaults":0},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:20.075Z","stats":null,"tracked":[{"kind":"interface","name":"eth1","status":"UP","value":null,"weight":0,"ok":true}],"trackerFaults":0,"unicastPeers":["198.51.100.12"],"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true,"usesUnicast":true,"sourceAddress":"198.51.100.11","configFaults":0}
    ]"#,
        r#"[]"#,
    );
}

#[test]
fn v2_4_3_auth_hmac_master_json() {
    json_is(
        "2.4.3/auth-hmac/master.keepalived.json",
        r#"[
        {"name":"VI_1","state":"MASTER","wantedState":"MASTER","interface":"eth0","vrid":51,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["192.0.2.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:20.084Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":2,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true},
        {"name":"VI_2","state":"MASTER","wantedState":"MASTER","interface":"eth1","vrid":52,"priority":120,"effectivePriority":120,"advertInterval":1.0,"vips":["198.51.100.100/24"],"syncGroup":null,"lastTransition":"2026-11-27T03:33:20.075Z","stats":{"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},"vrrpVersion":3,"authType":"none","preempt":true,"preemptDelay":0.0,"acceptMode":true}
    ]"#,
    );
}

#[test]
fn v2_4_3_auth_hmac_master_stats() {
    stats_is(
        "2.4.3/auth-hmac/master.keepalived.stats",
        r#"{
        "VI_1": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0},
        "VI_2": {"advertisements_received":0,"advertisements_sent":4,"authentication_errors_failure":0,"authentication_errors_invalid_type":0,"authentication_errors_type_mismatch":0,"authentication_extension_errors_invalid_hmac":0,"authentication_extension_errors_malformed":0,"authentication_extension_errors_missing":0,"authentication_extension_errors_replay":0,"authentication_extension_errors_stale":0,"authentication_extension_errors_unknown_key":0,"became_master":1,"packet_errors_address_list":0,"packet_errors_advertisement_interval":0,"packet_errors_invalid_type":0,"packet_errors_length":0,"packet_errors_ttl":0,"priority_zero_received":0,"priority_zero_sent":0,"released_master":0}
    }"#,
    );
}

/// The reading of a dump as the agent takes it: the text dump, or (an agent configured
/// for JSON) the JSON dump joined with the text dump for what only the latter shows.
fn both_ways(dir: &str, name: &str) -> (ParsedDump, ParsedDump) {
    let data = parse::parse_data(&read(&format!("{dir}/{name}.keepalived.data"))).unwrap();
    let mut json = parse::parse_json(&read(&format!("{dir}/{name}.keepalived.json"))).unwrap();
    parse::merge_text_only(&mut json, &data);
    (data, json)
}

fn causes(d: &ParsedDump, instance: &str) -> Vec<FaultCause> {
    let i = d.instances.iter().find(|i| i.name == instance).unwrap();
    i.fault_causes(&d.sync_groups)
}

fn cause(kind: &str, name: &str, status: Option<&str>) -> FaultCause {
    FaultCause {
        kind: kind.into(),
        name: name.into(),
        status: status.map(str::to_string),
        value: None,
    }
}

/// keepalived 2.2.7 in the lab (the fixture README's scenario table): the reading names
/// what put each instance in FAULT, from the text dump and from the JSON one alike.
#[test]
fn fault_causes_of_the_2_2_7_fault_scenarios() {
    let cases: &[(&str, &str, Vec<FaultCause>)] = &[
        (
            "fault-track-script",
            "VI_1",
            vec![cause("script", "chk_lab", Some("BAD"))],
        ),
        (
            "fault-track-script",
            "VI_2",
            vec![cause("script", "chk_lab", Some("BAD"))],
        ),
        (
            "fault-track-interface-VI_1_backup-VI_2",
            "VI_1",
            vec![cause("interface", "trk0", Some("DOWN"))],
        ),
        ("fault-track-interface-VI_1_backup-VI_2", "VI_2", vec![]),
        (
            "fault-VI_1_master-VI_2",
            "VI_1",
            vec![cause("interface", "trk0", Some("DOWN"))],
        ),
        // Carrier lost on the instance's own interface, which keepalived tracks too.
        (
            "fault-carrier-lost",
            "VI_1",
            vec![cause("interface", "eth0", Some("DOWN"))],
        ),
        (
            "fault-carrier-lost",
            "VI_2",
            vec![cause("interface", "eth1", Some("DOWN"))],
        ),
        (
            "syncgroup-fault",
            "VI_1",
            vec![cause("interface", "trk0", Some("DOWN"))],
        ),
        // Nothing of its own fails: VI_2 is in FAULT through its sync group.
        (
            "syncgroup-fault",
            "VI_2",
            vec![cause("syncGroup", "SG_1", Some("FAULT"))],
        ),
        ("master", "VI_1", vec![]),
    ];
    for (name, instance, want) in cases {
        let (data, json) = both_ways("2.2.7", name);
        assert_eq!(&causes(&data, instance), want, "{name} {instance} (.data)");
        assert_eq!(&causes(&json, instance), want, "{name} {instance} (.json)");
    }
    // 2.2.7 prints the older name of the count.
    let (data, _) = both_ways("2.2.7", "fault-track-script");
    assert_eq!(data.instances[0].tracker_faults, Some(1));
    assert_eq!(data.instances[0].state, VrrpState::Fault);
}

/// The JSON dump alone has no tracker state (track scripts by command, no status); the
/// joined reading has the text dump's, and keeps the JSON's own fields and counters.
#[test]
fn json_reading_takes_trackers_peers_and_master_router_from_the_text_dump() {
    for version in ["2.3.4", "2.4.3"] {
        let dir = format!("{version}/unicast");
        let alone = parse::parse_json(&read(&format!("{dir}/backup.keepalived.json"))).unwrap();
        assert!(alone.instances.iter().all(|i| i.tracked.is_empty()
            && i.unicast_peers.is_empty()
            && i.master_router.is_none()));
        let (data, json) = both_ways(&dir, "backup");
        for (d, j) in data.instances.iter().zip(&json.instances) {
            assert_eq!(d.tracked, j.tracked, "{dir} {}", d.name);
            assert_eq!(d.tracker_faults, j.tracker_faults);
            assert_eq!(d.unicast_peers, j.unicast_peers);
            assert_eq!(d.master_router, j.master_router);
        }
        let vi1 = &json.instances[0];
        assert_eq!(vi1.master_router.as_deref(), Some("192.0.2.11"));
        assert_eq!(vi1.unicast_peers, ["192.0.2.11"]);
        let script = vi1
            .tracked
            .iter()
            .find(|t| t.kind == TrackedKind::Script)
            .unwrap();
        assert_eq!(
            (
                script.name.as_str(),
                script.status.as_deref(),
                script.weight
            ),
            ("chk_svc", Some("GOOD"), Some(5))
        );
        assert!(vi1.stats.as_ref().unwrap()["advertisements_received"] > 0);

        let (data, json) = both_ways(&format!("{version}/syncgroup"), "master");
        assert_eq!(json.sync_groups, data.sync_groups, "{version}: sync groups");
        let kinds: Vec<(TrackedKind, &str)> = json.instances[0]
            .tracked
            .iter()
            .map(|t| (t.kind, t.name.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (TrackedKind::Interface, "trk0"),
                (TrackedKind::Script, "chk_svc"),
                (TrackedKind::File, "trk_val"),
                (TrackedKind::Process, "trk_svcd"),
                (TrackedKind::Interface, "eth0"),
            ]
        );
    }
}

/// The settings a readiness check compares, of every 2.3.4 and 2.4.3 scenario: the
/// JSON reading (joined with the text dump) says what the text dump says; the PASS
/// password of 2.3.4 is kept, hidden, and fingerprints alike on both hosts and from
/// both dumps; 2.4.3 masks it, so there is none, only `authPasswordMasked`.
#[test]
fn settings_and_passwords_of_the_newer_dumps() {
    let key = b"fingerprint key of one server";
    let fp = |p: &str| Some(AuthPassword::new(p).fingerprint(key));
    for version in ["2.3.4", "2.4.3"] {
        for (scenario, name) in [
            ("syncgroup", "master"),
            ("syncgroup", "backup"),
            ("syncgroup", "after-failover-new-master"),
            ("unicast", "master"),
            ("unicast", "backup"),
            ("auth-hmac", "master"),
            ("auth-hmac", "backup"),
        ] {
            let dir = format!("{version}/{scenario}");
            if !fixtures().join(&dir).exists() {
                continue;
            }
            let (data, json) = both_ways(&dir, name);
            let what = format!("{dir}/{name}");
            for (d, j) in data.instances.iter().zip(&json.instances) {
                assert_eq!(d.vrrp_version, j.vrrp_version, "{what} {}", d.name);
                assert_eq!(d.auth_type, j.auth_type, "{what} {}", d.name);
                assert_eq!(d.auth_password, j.auth_password, "{what} {}", d.name);
                assert_eq!(d.auth_password_masked, j.auth_password_masked, "{what}");
                assert_eq!(d.preempt, j.preempt, "{what}");
                assert_eq!(d.preempt_delay, j.preempt_delay, "{what}");
                assert_eq!(d.accept_mode, j.accept_mode, "{what}");
                assert_eq!(d.master_advert_interval, j.master_advert_interval, "{what}");
                assert_eq!(d.uses_unicast, j.uses_unicast, "{what}");
                assert_eq!(d.source_address, j.source_address, "{what}");
                assert_eq!(d.config_faults, j.config_faults, "{what}");
                assert_eq!(j.auth_fingerprint, None, "the parser never fingerprints");
            }
            let fps: Vec<Option<String>> = data
                .instances
                .iter()
                .map(|i| i.auth_password.as_ref().map(|p| p.fingerprint(key)))
                .collect();
            let masked: Vec<Option<bool>> = data
                .instances
                .iter()
                .map(|i| i.auth_password_masked)
                .collect();
            let unicast: Vec<Option<bool>> =
                data.instances.iter().map(|i| i.uses_unicast).collect();
            let (want_fps, want_masked, want_unicast) = match (version, scenario) {
                ("2.3.4", "syncgroup") => (
                    vec![fp("s3cr3t51"), fp("s3cr3t52")],
                    vec![None, None],
                    [Some(false), Some(false)],
                ),
                ("2.3.4", "unicast") => (
                    vec![fp("s3cr3t51"), None],
                    vec![None, None],
                    [Some(true), Some(true)],
                ),
                ("2.4.3", "syncgroup") => (
                    vec![None, None],
                    vec![Some(true), Some(true)],
                    [Some(false), Some(false)],
                ),
                ("2.4.3", "unicast") => (
                    vec![None, None],
                    vec![Some(true), None],
                    [Some(true), Some(true)],
                ),
                // auth_hmac is no PASS authentication: nothing to fingerprint, no key read.
                _ => (
                    vec![None, None],
                    vec![None, None],
                    [Some(false), Some(true)],
                ),
            };
            assert_eq!(fps, want_fps, "{what}");
            assert_eq!(masked, want_masked, "{what}");
            assert_eq!(unicast, want_unicast, "{what}");
        }
    }
    // Equal passwords, equal fingerprints; another key, another fingerprint.
    assert_ne!(fp("s3cr3t51"), fp("s3cr3t52"));
    assert_ne!(
        fp("s3cr3t51"),
        Some(AuthPassword::new("s3cr3t51").fingerprint(b"another server"))
    );
}

/// Every secret of every configuration the fixtures were made with: PASS passwords,
/// HMAC keys (inline and the key file's content) and 2.4's mask.
fn secrets() -> Vec<String> {
    let mut out = vec![
        "lab-vrrp51-key2-from-a-file-0123456789".to_string(),
        "********".to_string(),
    ];
    let mut confs = Vec::new();
    for dir in [
        "2.2.7",
        "2.3.4/syncgroup",
        "2.3.4/unicast",
        "2.4.3/syncgroup",
        "2.4.3/unicast",
        "2.4.3/auth-hmac",
    ] {
        for f in fs::read_dir(fixtures().join(dir)).unwrap() {
            let p = f.unwrap().path();
            if p.to_string_lossy().ends_with(".conf") {
                confs.push(fs::read_to_string(&p).unwrap());
            }
        }
    }
    for conf in confs {
        for line in conf.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["auth_pass", pass, ..] => out.push(pass.to_string()),
                ["key", _id, key, ..] if !key.starts_with("file:") => {
                    let key = key.strip_prefix("hex:").unwrap_or(key);
                    out.push(key.to_string());
                }
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn no_password_or_key_reaches_any_reading() {
    let secrets = secrets();
    for s in [
        "s3cr3t51",
        "s3cr3t52",
        "lab-vrrp52-shared-key-0123456789abcdef",
    ] {
        assert!(secrets.iter().any(|x| x == s), "{s} found in the configs");
    }
    let mut checked = 0;
    let mut dirs: Vec<String> = vec!["2.2.7".into(), "other-versions".into()];
    for version in ["2.3.4", "2.4.3"] {
        for s in fs::read_dir(fixtures().join(version)).unwrap() {
            let p = s.unwrap().path();
            if p.is_dir() {
                dirs.push(format!(
                    "{version}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    for dir in dirs {
        for f in fs::read_dir(fixtures().join(&dir)).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = fs::read_to_string(&p).unwrap();
            let reading = if name.ends_with(".data") {
                parse::parse_data(&text).ok()
            } else if name.ends_with(".json") {
                // As an agent configured for JSON reads it: joined with the text dump.
                let data = name.replace(".json", ".data");
                parse::parse_json(&text).ok().map(|mut j| {
                    if let Ok(d) = fs::read_to_string(p.with_file_name(&data))
                        .map_err(|_| ())
                        .and_then(|t| parse::parse_data(&t).map_err(|_| ()))
                    {
                        parse::merge_text_only(&mut j, &d);
                    }
                    j
                })
            } else {
                continue;
            };
            let Some(reading) = reading else { continue };
            // Debug names the field `auth_password`; the password itself never shows.
            let out = serde_json::to_string(&(&reading.instances, &reading.sync_groups)).unwrap()
                + &format!("{reading:?}").replace("auth_password", "");
            for s in &secrets {
                assert!(!out.contains(s.as_str()), "{dir}/{name}: {s} in {out}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "checked {checked} dumps");
}
