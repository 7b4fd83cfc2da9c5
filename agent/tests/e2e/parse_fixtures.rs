//! Parsers against every real keepalived dump in `tests/fixtures` (each folder's
//! README.md says how it was made), plus a fuzz-style test with truncated and garbled dumps.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use vrrp_agent::keepalived::parse::{self, ParsedDump};
use vrrp_protocol::AuthPassword;
use vrrp_protocol::VrrpState::{self, *};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(rel: &str) -> String {
    fs::read_to_string(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn states(d: &ParsedDump) -> Vec<(String, VrrpState)> {
    d.instances
        .iter()
        .map(|i| (i.name.clone(), i.state))
        .collect()
}

/// The scenario table of fixtures/2.2.7/README.md.
const SCENARIOS: &[(&str, VrrpState, VrrpState)] = &[
    ("master", Master, Master),
    ("backup", Backup, Backup),
    ("fault-track-script", Fault, Fault),
    ("fault-track-interface-VI_1_backup-VI_2", Fault, Backup),
    ("fault-VI_1_master-VI_2", Fault, Master),
    ("fault-carrier-lost", Fault, Fault),
    ("splitbrain-isolated-master", Master, Master),
    ("splitbrain-majority-master", Master, Master),
    ("after-splitbrain-backup", Backup, Backup),
    ("after-splitbrain-master", Master, Master),
    ("after-failover-new-master", Master, Master),
    ("syncgroup-master", Master, Master),
    ("syncgroup-backup", Backup, Backup),
    ("syncgroup-fault", Fault, Fault),
    ("syncgroup-master-after-peer-fault", Master, Master),
    ("excluded-vips", Master, Master),
];

/// `virtual_ipaddress_excluded` of VI_1 in the excluded-vips scenario.
const EXCLUDED: [&str; 3] = ["192.0.2.200/24", "198.51.100.200/24", "2001:db8:51::200/64"];

#[test]
fn every_scenario_fixture_covered() {
    // Every .data file of 2.2.7 except the parent's global dump is in the table.
    for entry in fs::read_dir(fixtures().join("2.2.7")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(s) = name.strip_suffix(".keepalived.data") {
            assert!(
                SCENARIOS.iter().any(|(n, _, _)| *n == s),
                "fixture {name} has no expectation"
            );
        }
    }
}

#[test]
fn text_json_and_stats_dumps_agree_on_every_scenario() {
    for (name, vi1, vi2) in SCENARIOS {
        let data = parse::parse_data(&read(&format!("2.2.7/{name}.keepalived.data")))
            .unwrap_or_else(|e| panic!("{name}.data: {e}"));
        let json = parse::parse_json(&read(&format!("2.2.7/{name}.keepalived.json")))
            .unwrap_or_else(|e| panic!("{name}.json: {e}"));
        let stats = parse::parse_stats(&read(&format!("2.2.7/{name}.keepalived.stats")))
            .unwrap_or_else(|e| panic!("{name}.stats: {e}"));
        let want = vec![("VI_1".to_string(), *vi1), ("VI_2".to_string(), *vi2)];
        assert_eq!(states(&data), want, "{name}.data");
        assert_eq!(states(&json), want, "{name}.json");
        // Every entry of a real VIP list is an address: nothing is left out.
        assert!(data.not_addresses.is_empty(), "{name}.data: {data:?}");
        assert!(json.not_addresses.is_empty(), "{name}.json: {json:?}");

        for (d, j) in data.instances.iter().zip(&json.instances) {
            assert_eq!(d.vrid, j.vrid, "{name} vrid");
            assert_eq!(d.interface, j.interface, "{name} interface");
            assert_eq!(d.priority, j.priority, "{name} priority");
            assert_eq!(
                d.effective_priority, j.effective_priority,
                "{name} eff prio"
            );
            assert_eq!(d.advert_interval, j.advert_interval, "{name} advert");
            assert_eq!(d.vips, j.vips, "{name} vips");
            assert_eq!(d.excluded_vips, j.excluded_vips, "{name} excluded vips");
            assert_eq!(
                d.last_transition, j.last_transition,
                "{name} last transition"
            );
            assert_eq!(d.wanted_state.is_some(), j.wanted_state.is_some());
            // The settings the readiness checks compare: the JSON dump has them too
            // (all but flags, source address and config faults).
            assert_eq!(d.vrrp_version, j.vrrp_version, "{name} version");
            assert_eq!(d.auth_type, j.auth_type, "{name} auth type");
            assert_eq!(d.preempt, j.preempt, "{name} preempt");
            assert_eq!(d.preempt_delay, j.preempt_delay, "{name} preempt delay");
            assert_eq!(d.accept_mode, j.accept_mode, "{name} accept");
            assert_eq!(
                d.master_advert_interval, j.master_advert_interval,
                "{name} master advert interval"
            );
            // No auth_pass in these configurations: nothing to fingerprint.
            assert_eq!(d.auth_type.as_deref(), Some("none"), "{name}");
            assert!(d.auth_password.is_none() && j.auth_password.is_none());
            assert!(d.auth_password_masked.is_none() && j.auth_password_masked.is_none());
            assert_eq!(
                (d.preempt, d.preempt_delay, d.accept_mode),
                (Some(true), Some(0.0), Some(true)),
                "{name}"
            );
            assert_eq!(d.config_faults, Some(0), "{name}");
            assert_eq!(d.uses_unicast, Some(false), "{name}: `Flags: none`");
            assert_eq!(j.uses_unicast, None, "{name}: the JSON has no flags");
            // A VRRPv3 backup says what its master announces (2.2.7 prints it twice:
            // `Master advert int = 1.00 sec` and `Master advert interval = 1000 milli-sec`).
            let v3_backup = d.vrrp_version == Some(3) && d.state == VrrpState::Backup;
            assert_eq!(
                d.master_advert_interval,
                v3_backup.then_some(1.0),
                "{name} {}",
                d.name
            );
            let counters = &stats[&d.name];
            assert_eq!(counters.len(), 14, "{name}: {counters:?}");
            // The JSON dump was taken after the stats dump: counters only grow.
            let jc = j.stats.as_ref().unwrap();
            assert_eq!(
                jc.keys().collect::<Vec<_>>(),
                counters.keys().collect::<Vec<_>>(),
                "{name}: JSON and text counters use the same keys"
            );
            for (k, v) in counters {
                assert!(jc[k] >= *v, "{name} {k}: json {} < text {v}", jc[k]);
            }
        }
        let d1 = &data.instances[0];
        assert_eq!(d1.vrid, Some(51));
        assert_eq!(d1.interface.as_deref(), Some("eth0"));
        assert_eq!(d1.vips, ["192.0.2.100/24"]);
        assert_eq!(data.instances[1].vips, ["198.51.100.100/24"]);
        // Excluded addresses are their own list, never among the VIPs.
        let excluded: &[&str] = if *name == "excluded-vips" {
            &EXCLUDED
        } else {
            &[]
        };
        assert_eq!(d1.excluded_vips, excluded, "{name}");
        assert!(data.instances[1].excluded_vips.is_empty(), "{name}");
        assert_eq!(data.instances[1].advert_interval, Some(1.0));
        assert_eq!(d1.vrrp_version, Some(2));
        assert_eq!(data.instances[1].vrrp_version, Some(3));
        // The source address is the host's own: 192.0.2.1N and 198.51.100.1N on hN.
        let src = |i: usize| data.instances[i].source_address.clone().unwrap_or_default();
        let host = src(0).rsplit('.').next().unwrap_or_default().to_string();
        assert!(
            ["11", "12", "13"].contains(&host.as_str()),
            "{name}: {}",
            src(0)
        );
        assert_eq!(src(1), format!("198.51.100.{host}"), "{name}");

        if name.starts_with("syncgroup") {
            assert_eq!(data.sync_groups.len(), 1, "{name}");
            let g = &data.sync_groups[0];
            assert_eq!(g.name, "SG_1");
            assert_eq!(g.state, *vi1, "{name}: group state");
            assert_eq!(g.instances, ["VI_1", "VI_2"]);
            assert!(data
                .instances
                .iter()
                .all(|i| i.sync_group.as_deref() == Some("SG_1")));
        } else {
            assert!(data.sync_groups.is_empty(), "{name}");
            assert!(data.instances.iter().all(|i| i.sync_group.is_none()));
        }
    }
}

#[test]
fn master_fixture_in_detail() {
    let mut d = parse::parse_data(&read("2.2.7/master.keepalived.data")).unwrap();
    let c = parse::parse_stats(&read("2.2.7/master.keepalived.stats")).unwrap();
    parse::attach_counters(&mut d, &c);
    let v = serde_json::to_value(&d.instances[0]).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "name": "VI_1", "state": "MASTER", "wantedState": "MASTER", "interface": "eth0",
            "vrid": 51, "priority": 130, "effectivePriority": 130, "advertInterval": 1.0,
            "vips": ["192.0.2.100/24"], "syncGroup": null,
            "lastTransition": "2026-11-21T09:17:18.973Z",
            "stats": {
                "advertisements_received": 0, "advertisements_sent": 8,
                "authentication_errors_failure": 0, "authentication_errors_invalid_type": 0,
                "authentication_errors_type_mismatch": 0, "became_master": 1,
                "packet_errors_address_list": 0, "packet_errors_advertisement_interval": 0,
                "packet_errors_invalid_type": 0, "packet_errors_length": 0,
                "packet_errors_ttl": 0, "priority_zero_received": 0, "priority_zero_sent": 0,
                "released_master": 0
            },
            "tracked": [
                {"kind": "interface", "name": "trk0", "status": "UP", "value": null, "weight": 0, "ok": true},
                {"kind": "script", "name": "chk_lab", "status": "GOOD", "state": "idle", "value": null, "weight": 0, "ok": true},
                {"kind": "interface", "name": "eth0", "status": "UP", "value": null, "weight": 0, "ok": true}
            ],
            "trackerFaults": 0,
            "vrrpVersion": 2, "authType": "none", "preempt": true, "preemptDelay": 0.0,
            "acceptMode": true, "usesUnicast": false, "sourceAddress": "192.0.2.11",
            "configFaults": 0
        })
    );
    // VI_2 speaks VRRPv3 (no authentication line at all) and states its interval in
    // milliseconds; as a master it prints no master's interval.
    let v = serde_json::to_value(&d.instances[1]).unwrap();
    for (key, want) in [
        ("vrrpVersion", serde_json::json!(3)),
        ("authType", serde_json::json!("none")),
        ("advertInterval", serde_json::json!(1.0)),
        ("sourceAddress", serde_json::json!("198.51.100.11")),
        ("usesUnicast", serde_json::json!(false)),
    ] {
        assert_eq!(v[key], want, "VI_2 {key}");
    }
    assert!(v.get("masterAdvertInterval").is_none());
    assert!(v.get("authFingerprint").is_none() && v.get("authPasswordMasked").is_none());
}

#[test]
fn counters_under_different_headers_stay_apart() {
    let c = parse::parse_stats(&read("other-versions/v1.3.5-keepalived.stats")).unwrap();
    let vi = &c["VI_1"];
    let want: BTreeMap<&str, u64> = [
        ("advertisements_received", 1),
        ("advertisements_sent", 17),
        ("became_master", 1),
        ("released_master", 1),
        ("packet_errors_length", 10),
        ("packet_errors_ttl", 1),
        ("packet_errors_invalid_type", 5),
        ("packet_errors_advertisement_interval", 4),
        ("packet_errors_address_list", 3),
        ("authentication_errors_invalid_type", 3),
        ("authentication_errors_type_mismatch", 6),
        ("authentication_errors_failure", 7),
        ("priority_zero_received", 9),
        ("priority_zero_sent", 2),
    ]
    .into_iter()
    .collect();
    let got: BTreeMap<&str, u64> = vi.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, want);
    let c = parse::parse_stats(&read("other-versions/v2.1.5-keepalived.stats")).unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!(c["VI_EXT_2"]["advertisements_sent"], 158);
}

#[test]
fn older_versions_parse_and_never_leak_the_password() {
    /// name, state, vrid, interface, first VIP ("" = not checked), advert interval
    type Want = (
        &'static str,
        VrrpState,
        u32,
        &'static str,
        &'static str,
        f64,
    );
    let cases: &[(&str, &[Want])] = &[
        (
            "v1.3.5",
            &[("VI_1", Master, 51, "eth0", "10.32.75.200/32", 1.0)],
        ),
        (
            "v2.0.10",
            &[("VI_1", Master, 52, "ens192", "2.2.2.2/32", 1.0)],
        ),
        (
            "v2.1.5",
            &[
                ("VI_EXT_1", Master, 10, "ens192", "192.168.2.1", 1.0),
                ("VI_EXT_2", Backup, 20, "ens192", "192.168.2.2", 1.0),
                ("VI_EXT_3", Backup, 30, "ens192", "192.168.2.3", 1.0),
            ],
        ),
        (
            "v2.2.7",
            &[("VI_227_1", Master, 52, "ens3", "10.1.0.1/24", 4.0)],
        ),
    ];
    for (ver, want) in cases {
        let text = read(&format!("other-versions/{ver}-keepalived.data"));
        let d = parse::parse_data(&text).unwrap_or_else(|e| panic!("{ver}: {e}"));
        assert_eq!(d.instances.len(), want.len(), "{ver}");
        assert!(d.not_addresses.is_empty(), "{ver}: {:?}", d.not_addresses);
        for (i, (name, state, vrid, ifname, vip, adv)) in d.instances.iter().zip(want.iter()) {
            assert_eq!(&i.name, name, "{ver}");
            assert_eq!(i.state, *state, "{ver} {name}");
            assert_eq!(i.vrid, Some(*vrid), "{ver} {name}");
            assert_eq!(i.interface.as_deref(), Some(*ifname), "{ver} {name}");
            assert_eq!(i.advert_interval, Some(*adv), "{ver} {name}");
            if !vip.is_empty() {
                assert_eq!(
                    i.vips.first().map(String::as_str),
                    Some(*vip),
                    "{ver} {name}"
                );
            }
            assert!(i.last_transition.is_some(), "{ver} {name}");
        }
        // Excluded virtual addresses are not virtual addresses of the instance.
        if *ver == "v2.2.7" {
            assert_eq!(d.instances[0].vips, ["10.1.0.1/24"]);
            assert_eq!(d.instances[0].excluded_vips, ["10.10.0.1"]);
            assert_eq!(d.instances[0].effective_priority, Some(150));
        }
        // What decides a failover, as these older formats print it: no `Flags` line
        // before 2.2 (unicast only from the peers), no config faults before 2.2.
        type Settings<'a> = (
            Option<u8>,
            Option<&'a str>,
            Option<bool>,
            Option<&'a str>,
            Option<u32>,
        );
        let got: Vec<Settings> = d
            .instances
            .iter()
            .map(|i| {
                (
                    i.vrrp_version,
                    i.auth_type.as_deref(),
                    i.uses_unicast,
                    i.source_address.as_deref(),
                    i.config_faults,
                )
            })
            .collect();
        let want: Vec<Settings> = match *ver {
            "v1.3.5" => vec![(Some(2), Some("pass"), None, Some("192.168.2.2"), None)],
            "v2.0.10" => vec![(Some(2), Some("none"), None, Some("1.1.1.1"), None)],
            "v2.1.5" => vec![(Some(2), Some("pass"), Some(true), Some("192.168.1.1"), None); 3],
            _ => vec![(
                Some(3),
                Some("none"),
                Some(false),
                Some("10.1.0.166"),
                Some(0),
            )],
        };
        assert_eq!(got, want, "{ver}");
        for i in &d.instances {
            assert_eq!(
                (i.preempt, i.preempt_delay, i.accept_mode),
                (Some(true), Some(0.0), Some(true)),
                "{ver} {}",
                i.name
            );
        }
        // The clear passwords are kept, hidden, to be fingerprinted: equal passwords
        // (VI_EXT_2 and VI_EXT_3 of 2.1.5) give equal fingerprints.
        let fingerprints: Vec<Option<String>> = d
            .instances
            .iter()
            .map(|i| i.auth_password.as_ref().map(|p| p.fingerprint(b"key")))
            .collect();
        match *ver {
            "v1.3.5" => assert_eq!(
                d.instances[0].auth_password,
                Some(AuthPassword::new("test"))
            ),
            "v2.1.5" => {
                assert_eq!(
                    fingerprints[0],
                    Some(AuthPassword::new("bacbefe5").fingerprint(b"key"))
                );
                assert_eq!(fingerprints[1], fingerprints[2]);
                assert_ne!(fingerprints[0], fingerprints[1]);
            }
            _ => assert!(fingerprints.iter().all(Option::is_none), "{ver}"),
        }
        let out = serde_json::to_string(&d.instances).unwrap();
        // Debug names the field `auth_password`; the password itself never shows.
        let debug = format!("{d:?}").replace("auth_password", "");
        for password in ["test", "bacbefe5", "password"] {
            if text.contains(&format!("Password = {password}")) {
                assert!(
                    !out.contains(&format!("\"{password}\"")) && !out.contains(password),
                    "{ver}: password {password} leaked: {out}"
                );
                assert!(
                    !debug.contains(password),
                    "{ver}: password {password} in Debug: {debug}"
                );
            }
        }
    }
}

#[test]
fn parent_global_dump_has_no_instances() {
    let d = parse::parse_data(&read("2.2.7/master.keepalived_parent.data"));
    // The parent's dump holds global definitions only: either no instances or not a dump.
    if let Ok(d) = d {
        assert!(d.instances.is_empty());
    }
}

/// Every fixture, cut at many points and garbled at random: the parsers may return an
/// error or a partial result, but never panic.
#[test]
fn truncated_and_garbled_dumps_never_panic() {
    let mut files = Vec::new();
    for dir in [
        "2.2.7",
        "other-versions",
        "2.3.4/syncgroup",
        "2.3.4/unicast",
        "2.4.3/syncgroup",
        "2.4.3/unicast",
        "2.4.3/auth-hmac",
    ] {
        for e in fs::read_dir(fixtures().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if n.contains("keepalived")
                && (n.ends_with(".data") || n.ends_with(".stats") || n.ends_with(".json"))
            {
                files.push(fs::read(&p).unwrap());
            }
        }
    }
    assert!(files.len() >= 90, "found {} dump fixtures", files.len());
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let all = |b: &[u8]| {
        let t = String::from_utf8_lossy(b);
        let _ = parse::parse_data(&t);
        let _ = parse::parse_stats(&t);
        let _ = parse::parse_json(&t);
    };
    for f in &files {
        // Truncations: every 7th byte plus the last 64 positions.
        for cut in (0..f.len())
            .step_by(7)
            .chain(f.len().saturating_sub(64)..f.len())
        {
            all(&f[..cut]);
        }
        for _ in 0..200 {
            let mut g = f.clone();
            for _ in 0..rng.gen_range(1..20) {
                let i = rng.gen_range(0..g.len());
                match rng.gen_range(0..4) {
                    0 => g[i] = rng.gen(),
                    1 => g[i] = b"=:\n ,{}[]\"-0123456789"[rng.gen_range(0..21)],
                    2 => {
                        g.remove(i);
                    }
                    _ => {
                        let j = rng.gen_range(0..g.len());
                        let chunk = g[i.min(j)..i.max(j)].to_vec();
                        let at = rng.gen_range(0..g.len());
                        g.splice(at..at, chunk);
                    }
                }
                if g.is_empty() {
                    break;
                }
            }
            all(&g);
        }
    }
    // Hostile shapes.
    for t in [
        "VRRP Instance = \n",
        "------< VRRP Topology >------\n VRRP Instance = X\n   Last transition = 1e308\n   Priority = 99999999999999\n   Virtual IP (1):\n",
        "[{\"data\": {\"iname\": \"X\", \"state\": 1e99, \"vrid\": -1, \"last_transition\": -5, \"vips\": [1, null]}, \"stats\": []}]",
        "{\"vrrp\": 5}",
        "VRRP Instance: X\n  a:\n    b: 18446744073709551616\n",
    ] {
        all(t.as_bytes());
    }
    let d = parse::parse_json("[{\"data\": {\"iname\": \"X\", \"state\": 1e99, \"vrid\": -1}}]")
        .unwrap();
    assert_eq!(d.instances[0].state, VrrpState::Unknown);
    assert_eq!(d.instances[0].vrid, None);
}

/// A dump, however large its lines and lists, makes the parsers keep only so much: a
/// line beyond 4096 bytes is not read, a name is cut to 256 bytes, a value longer than
/// that (a password, an authentication type) is left out, a list keeps 4096 entries,
/// a dump 4096 instances.
#[test]
fn what_a_dump_can_make_the_parsers_keep_is_bounded() {
    let mut t = String::from("------< VRRP Topology >------\n");
    let long_name = "N".repeat(1000);
    t.push_str(&format!(" VRRP Instance = {long_name}\n"));
    t.push_str("   VRRP Version = 2\n");
    t.push_str(&format!("   Interface = {}\n", "i".repeat(300)));
    t.push_str(&format!("   Authentication type = {}\n", "X".repeat(300)));
    t.push_str(&format!("   Password = {}\n", "p".repeat(300)));
    t.push_str(&format!(
        "   Using src_ip = 192.0.2.1 {}\n",
        "x".repeat(5000)
    ));
    t.push_str(&format!(
        "   Virtual Router ID = 51 {}\n",
        "x".repeat(1 << 20)
    ));
    t.push_str("   Unicast Peer :\n");
    for n in 0..5000u32 {
        t.push_str(&format!(
            "     10.{}.{}.{} min_ttl 0\n",
            n >> 16,
            (n >> 8) & 255,
            n & 255
        ));
    }
    t.push_str("   Virtual IP (5000):\n");
    for n in 0..5000u32 {
        t.push_str(&format!("     10.1.{}.{}/32 dev eth0\n", n >> 8, n & 255));
    }
    for n in 0..5000 {
        t.push_str(&format!(" VRRP Instance = VI_{n}\n   VRRP Version = 3\n"));
    }
    let d = parse::parse_data(&t).unwrap();
    assert_eq!(d.instances.len(), 4096);
    let i = &d.instances[0];
    assert_eq!(i.name, "N".repeat(256));
    assert_eq!(i.vrrp_version, Some(2));
    assert_eq!(i.interface, None);
    assert_eq!(i.auth_type, None, "an overlong type is no type");
    assert_eq!(
        (i.auth_password.is_some(), i.auth_password_masked),
        (false, None)
    );
    assert_eq!(i.vrid, None, "the megabyte line is not read");
    assert_eq!(i.source_address, None, "nor the one of 5000 bytes");
    assert_eq!(i.unicast_peers.len(), 4096);
    assert_eq!(i.uses_unicast, Some(true));
    assert_eq!(i.vips.len(), 4096);
    assert_eq!(d.instances[4095].name, "VI_4094");

    let vips: Vec<String> = (0..5000u32)
        .map(|n| format!("10.2.{}.{}/32", n >> 8, n & 255))
        .collect();
    let json = serde_json::json!([{"data": {"iname": "X".repeat(1000), "vips": vips,
        "auth_type": 1, "auth_data": "p".repeat(300), "ifp_ifname": "i".repeat(300)}}]);
    let d = parse::parse_json(&json.to_string()).unwrap();
    assert_eq!(d.instances[0].name.len(), 256);
    assert_eq!(d.instances[0].vips.len(), 4096);
    assert_eq!(d.instances[0].interface, None);
    assert_eq!(d.instances[0].auth_type.as_deref(), Some("pass"));
    assert!(d.instances[0].auth_password.is_none());

    let mut s = String::new();
    for n in 0..5000 {
        s.push_str(&format!(
            "VRRP Instance: VI_{n}\n  Advertisements:\n    Received: 1\n"
        ));
    }
    s.push_str(&format!("VRRP Instance: VI_0\n  {}: 1\n", "k".repeat(300)));
    let c = parse::parse_stats(&s).unwrap();
    assert_eq!(c.len(), 4096);
    assert_eq!(c["VI_0"].len(), 1, "an overlong counter name is not kept");
}
