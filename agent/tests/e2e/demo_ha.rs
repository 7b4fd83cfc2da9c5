//! `scripts/demo-ha --measure`: a server pair in the lab, server A in
//! h1 and B in h2 with keepalived moving `ha.vip` between them, agents on h3, h4,
//! h5 registered with both. During a keepalived failover on the hosts (h5's track
//! script fails) both servers record the same agent events, each once; A, holding
//! the VIP, sends them and B sends nothing. A's machine dies (server and
//! keepalived killed); keepalived gives B the VIP and B sends the events of the
//! handover window within seconds. h5 recovers while A is down; A's server starts
//! again (standby: its keepalived stays down) and catches up to B's activity list
//! (the same agent event ids, each once). The receiver got every event of the
//! scenario at least once, and none from both servers outside the handover
//! window. Nothing of the lab is left afterwards.
//!
//! Needs root, keepalived, iproute2, util-linux, curl, python3.

use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

#[test]
#[cfg_attr(
    not(feature = "test-lab"),
    ignore = "lab tier: root and real keepalived; --features test-lab (scripts/test.sh)"
)]
fn the_standby_takes_over_the_webhooks_when_the_active_server_dies() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Lab);
    let _slot = vrrp_test_support::lab::exclusive();
    let prefix = format!("vha{}", std::process::id() % 100_000);
    let dir = format!("/var/tmp/vrrp-demo-ha-test-{prefix}");
    let out = Command::new(format!("{ROOT}/scripts/demo-ha"))
        .arg("--measure")
        .env("VRRP_DEMO_PREFIX", &prefix)
        .env("VRRP_DEMO_DIR", &dir)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"role\":\"active\""), "{text}");
    assert!(
        text.contains("webhooks from B so far: 0"),
        "standby sent: {text}"
    );
    let seconds: f64 = text
        .lines()
        .find_map(|l| l.split(": ").nth(1)?.strip_suffix(" s after A's death."))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no measurement: {text}"));
    assert!(
        seconds < 10.0,
        "{seconds} s from A's death to B's first webhook"
    );
    assert!(text.contains("missing: 0;"), "{text}");
    assert!(text.contains("from both outside the window: 0"), "{text}");
    assert!(
        text.contains("both servers record the same") && text.contains("A caught up in"),
        "{text}"
    );
    assert!(text.contains("holds the VIP 192.0.2.100 now"), "{text}");
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let netns = String::from_utf8_lossy(&netns.stdout);
    assert!(!netns.lines().any(|l| l.starts_with(&prefix)), "{netns}");
    assert!(!std::path::Path::new(&dir).exists());
    println!("A's death to B's first webhook: {seconds:.2} s");
    for l in text.lines().filter(|l| {
        l.contains("caught up") || l.contains("Scenario events") || l.contains("record the same")
    }) {
        println!("{l}");
    }
}
