//! Unit tests of the dump parsers: VIP lists, units, odd and older tracker forms.

use super::stats::snake;
use super::*;
use vrrp_protocol::TrackedKind;

#[test]
fn advert_interval_units() {
    assert_eq!(parse_advert_interval("1 sec"), Some(1.0));
    assert_eq!(parse_advert_interval("1000 milli-sec"), Some(1.0));
    assert_eq!(parse_advert_interval("250 milli-sec"), Some(0.25));
    assert_eq!(parse_advert_interval("x"), None);
}

#[test]
fn epoch_formatting() {
    assert_eq!(
        epoch_to_iso(1795252638.973332).as_deref(),
        Some("2026-11-21T09:17:18.973Z")
    );
    assert_eq!(epoch_to_iso(0.0), None);
    assert_eq!(epoch_to_iso(f64::NAN), None);
}

#[test]
fn snake_keys() {
    assert_eq!(snake("Packet Errors"), "packet_errors");
    assert_eq!(snake("Advertisement Interval"), "advertisement_interval");
}

#[test]
fn an_entry_counts_only_when_it_starts_with_an_address() {
    for (entry, want) in [
        (
            "192.0.2.100/24 dev eth0 scope global set",
            Some("192.0.2.100/24"),
        ),
        ("192.0.2.100", Some("192.0.2.100")),
        ("192.0.2.100,", Some("192.0.2.100")),
        ("2001:db8::10", Some("2001:db8::10")),
        (
            "2001:db8::1/64 dev eth0 scope global",
            Some("2001:db8::1/64"),
        ),
        ("::ffff:192.0.2.7", Some("::ffff:192.0.2.7")),
        (
            "::ffff:192.0.2.7/128 dev eth0",
            Some("::ffff:192.0.2.7/128"),
        ),
        ("not set", None),
        ("Unicast peer = 192.0.2.2", None),
        ("(none)", None),
        ("", None),
        ("   ", None),
        ("192.0.2.1/33", None),
        ("192.0.2.1/", None),
        ("192.0.2", None),
        ("word/24", None),
        ("192.0.2.1,192.0.2.2", None),
    ] {
        assert_eq!(vip_of(entry), want, "{entry:?}");
    }
}

/// What every VIP list below holds, and what of it must be read.
const WORDS: [&str; 4] = ["not set", "Unicast peer = 192.0.2.2", "(none)", ""];
const ADDRESSES: [&str; 5] = [
    "2001:db8::10",
    "192.0.2.100/24",
    "2001:db8::1/64",
    "::ffff:192.0.2.7",
    "fe80::1/64",
];

fn assert_only_addresses(d: &ParsedDump, form: &str) {
    let vips = &d.instances[0].vips;
    assert_eq!(vips, &ADDRESSES, "{form}: every address, in order");
    for word in [
        "not",
        "set",
        "Unicast",
        "peer",
        "=",
        "192.0.2.2",
        "(none)",
        "",
    ] {
        assert!(
            !vips.iter().any(|v| v == word),
            "{form}: {word:?} read as a VIP"
        );
    }
    assert!(
        !vips.iter().any(|v| v.starts_with("10.10.")),
        "{form}: excluded VIP read as a VIP"
    );
    assert_eq!(d.instances[0].excluded_vips, ["10.10.0.1"], "{form}");
    assert!(d.instances[1].excluded_vips.is_empty(), "{form}");
    assert_eq!(
        d.instances[1].vips,
        ["198.51.100.100/24"],
        "{form}: next instance"
    );
}

#[test]
fn text_dump_reads_only_addresses_from_a_vip_list() {
    let text = "------< VRRP Topology >------
 VRRP Instance = VI_1
   State = MASTER
   Virtual IP (9):
     not set
     Unicast peer = 192.0.2.2
     (none)
     \n     2001:db8::10
     192.0.2.100/24 dev eth0 scope global set
     2001:db8::1/64 dev eth0 scope global
     ::ffff:192.0.2.7,
     fe80::1/64 dev eth0 scope link
   Virtual IP Excluded (1):
     10.10.0.1 dev eth0 scope global set
   Interface = eth0
 VRRP Instance = VI_2
   State = BACKUP
   Virtual IP (1):
     198.51.100.100/24 dev eth1 scope global
";
    let d = parse_data(text).unwrap();
    assert_only_addresses(&d, "text");
    assert_eq!(d.instances[0].interface.as_deref(), Some("eth0"));
    // A blank line in the list is no entry at all; the other words are handed back.
    let left_out: Vec<(&str, &str)> = d
        .not_addresses
        .iter()
        .map(|(i, e)| (i.as_str(), e.as_str()))
        .collect();
    assert_eq!(
        left_out,
        [("VI_1", WORDS[0]), ("VI_1", WORDS[1]), ("VI_1", WORDS[2])]
    );
}

#[test]
fn json_dump_reads_only_addresses_from_a_vip_list() {
    let vips = [
        WORDS[0],
        WORDS[1],
        WORDS[2],
        WORDS[3],
        "2001:db8::10",
        "192.0.2.100/24 dev eth0 scope global set",
        "2001:db8::1/64 dev eth0 scope global",
        "::ffff:192.0.2.7,",
        "fe80::1/64 dev eth0 scope link",
    ];
    let text = serde_json::json!([
        {"data": {"iname": "VI_1", "state": 2, "vips": vips,
                  "evips": ["10.10.0.1 dev eth0 scope global set"]}},
        {"data": {"iname": "VI_2", "state": 1,
                  "vips": ["198.51.100.100/24 dev eth1 scope global", 7, null]}},
    ])
    .to_string();
    let d = parse_json(&text).unwrap();
    assert_only_addresses(&d, "json");
    let left_out: Vec<(&str, &str)> = d
        .not_addresses
        .iter()
        .map(|(i, e)| (i.as_str(), e.as_str()))
        .collect();
    assert_eq!(
        left_out,
        [
            ("VI_1", WORDS[0]),
            ("VI_1", WORDS[1]),
            ("VI_1", WORDS[2]),
            ("VI_1", WORDS[3]),
            ("VI_2", "7"),
            ("VI_2", "null"),
        ]
    );
}

#[test]
fn trackers_of_older_dumps_and_odd_entries() {
    // keepalived 1.3 prints the script's own block inside the instance.
    let old = "------< VRRP Topology >------
 VRRP Instance = VI_1
   State = FAULT
   Tracked scripts = 1
 VRRP Script = check_haproxy
   Weight = 0
   Status = BAD
   Virtual IP = 1
     10.32.75.200/32 dev eth0 scope global
";
    let d = parse_data(old).unwrap();
    let t = &d.instances[0].tracked;
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].kind, t[0].name.as_str(), t[0].status.as_deref()),
        (TrackedKind::Script, "check_haproxy", Some("BAD"))
    );
    assert_eq!((t[0].weight, t[0].ok), (Some(0), false));
    assert_eq!(d.instances[0].vips, ["10.32.75.200/32"]);

    // A script the sections do not describe stays ok with no status; a peer or
    // master router that is no address is not taken; a weighted track file is bad
    // only below -253, an unweighted one whenever it is not 0.
    let text = "------< VRRP Topology >------
 VRRP Instance = VI_1
   State = BACKUP
   Master router = somewhere
   Unicast Peer :
     not-an-address min_ttl 0
     2001:db8::2 min_ttl 0 max_ttl 255
   Tracked scripts :
     ghost weight
   Tracked files :
     f0, weight 0
     f10, weight 10
     f30, weight -10
------< VRRP Track files >------
 Track file = f0
   Status = 3
 Track file = f10
   Status = -26
 Track file = f30
   Status = 30
";
    let d = parse_data(text).unwrap();
    let i = &d.instances[0];
    assert_eq!(i.master_router, None);
    assert_eq!(i.unicast_peers, ["2001:db8::2"]);
    let got: Vec<(&str, Option<i64>, Option<i64>, bool)> = i
        .tracked
        .iter()
        .map(|t| (t.name.as_str(), t.value, t.weight, t.ok))
        .collect();
    assert_eq!(
        got,
        [
            ("ghost", None, None, true),
            ("f0", Some(3), Some(0), false),
            ("f10", Some(-26), Some(10), false),
            ("f30", Some(30), Some(-10), false),
        ]
    );
}

#[test]
fn not_a_dump_is_an_error() {
    assert!(parse_data("hello\nworld\n").is_err());
    assert!(parse_data("").is_err());
    assert!(parse_json("[1,").is_err());
    assert!(parse_stats("garbage: here\n").is_err());
}
