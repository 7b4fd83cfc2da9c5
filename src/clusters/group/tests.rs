//! Tests of grouping and the dashboard's health.

use super::*;
use serde_json::json;

fn inst(name: &str, vrid: u64, state: &str, vips: &[&str]) -> VrrpInstance {
    serde_json::from_value(json!({ "name": name, "vrid": vrid, "state": state, "vips": vips }))
        .expect("an instance")
}

fn host(
    id: &str,
    site: Option<&str>,
    online: bool,
    readable: bool,
    instances: Vec<VrrpInstance>,
) -> HostView {
    HostView {
        client_id: id.into(),
        site: site.map(str::to_owned),
        host: id.into(),
        online,
        readable,
        instances,
        read_at: None,
        drain: None,
    }
}

fn member(state: &str, online: bool, reporting: bool, vips: &[&str]) -> Member {
    Member {
        client_id: "c".into(),
        host: "h".into(),
        online,
        reporting,
        instance: inst("VI_1", 51, state, vips),
        read_at: None,
        drain: None,
    }
}

const V: &[&str] = &["192.0.2.100/24"];

#[test]
fn every_row_of_the_dashboard_health_table() {
    let m = member;
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V), m("MASTER", true, true, V)]),
        Health::SplitBrain
    );
    assert_eq!(
        dashboard_health(&[m("BACKUP", true, true, V), m("BACKUP", true, true, V)]),
        Health::NoMaster
    );
    assert_eq!(
        dashboard_health(&[m("BACKUP", true, true, V), m("FAULT", true, true, V)]),
        Health::NoMaster
    );
    // An outage above a VIP mismatch keeps its place.
    assert_eq!(
        dashboard_health(&[
            m("MASTER", true, true, V),
            m("MASTER", true, true, &["192.0.2.101/24"])
        ]),
        Health::SplitBrain
    );
    assert_eq!(
        dashboard_health(&[
            m("MASTER", true, true, V),
            m("BACKUP", true, true, &["192.0.2.101/24"])
        ]),
        Health::VipMismatch
    );
    // Counted over every member, offline included.
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V), m("BACKUP", false, true, &[])]),
        Health::VipMismatch
    );
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V), m("FAULT", true, true, V)]),
        Health::Degraded
    );
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V), m("BACKUP", false, true, V)]),
        Health::Degraded,
        "a member offline"
    );
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V), m("BACKUP", true, false, V)]),
        Health::Degraded,
        "keepalived not reporting"
    );
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V)]),
        Health::Degraded,
        "the only member"
    );
    assert_eq!(
        dashboard_health(&[m("MASTER", false, true, V), m("BACKUP", true, false, V)]),
        Health::Unknown
    );
    assert_eq!(
        dashboard_health(&[m("MASTER", true, true, V), m("BACKUP", true, true, V)]),
        Health::Ok
    );
}

#[test]
fn grouping_by_site_vrid_and_shared_network() {
    let hosts = vec![
        host(
            "a",
            None,
            true,
            true,
            vec![
                inst("VI_1", 51, "MASTER", &["192.0.2.100/24"]),
                inst("VI_2", 52, "MASTER", &["198.51.100.100/24"]),
            ],
        ),
        host(
            "b",
            None,
            true,
            true,
            vec![
                inst("VI_1", 51, "BACKUP", &["192.0.2.100/24"]),
                inst("VI_2", 52, "BACKUP", &["198.51.100.100/24"]),
            ],
        ),
        // Same VRID in another broadcast domain: another cluster.
        host(
            "c",
            None,
            true,
            true,
            vec![inst("VI_9", 51, "MASTER", &["203.0.113.5/24"])],
        ),
        // Same VRID and network on another site: another cluster.
        host(
            "d",
            Some("dc-2"),
            true,
            true,
            vec![inst("VI_1", 51, "MASTER", &["192.0.2.100/24"])],
        ),
    ];
    let clusters = group(&hosts);
    assert_eq!(clusters.len(), 4);
    let by_key: BTreeMap<&str, &Cluster> = clusters.iter().map(|c| (c.key.as_str(), c)).collect();
    let vi1 = by_key["|51|192.0.2.0/24"];
    assert_eq!(
        vi1.members
            .iter()
            .map(|m| m.client_id.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(
        (vi1.vrid, vi1.site.clone(), vi1.health),
        (51, None, Health::Ok)
    );
    assert_eq!(vi1.networks, ["192.0.2.0/24"]);
    assert_eq!(vi1.vips, ["192.0.2.100/24"]);
    assert!(by_key.contains_key("|52|198.51.100.0/24"));
    assert!(by_key.contains_key("|51|203.0.113.0/24"));
    assert_eq!(by_key["dc-2|51|192.0.2.0/24"].site.as_deref(), Some("dc-2"));
    // Worst first: the single-host clusters are degraded.
    assert_eq!(clusters[0].health, Health::Degraded);
    assert_eq!(clusters.last().unwrap().health, Health::Ok);
}

#[test]
fn host_routes_overlap_and_transitive_joins() {
    let hosts = vec![
        // A /32 matches only itself...
        host(
            "a",
            None,
            true,
            true,
            vec![inst("X", 7, "MASTER", &["10.0.0.5"])],
        ),
        host(
            "b",
            None,
            true,
            true,
            vec![inst("X", 7, "BACKUP", &["10.0.0.6"])],
        ),
        // ...but a /24 covering both joins them, transitively.
        host(
            "c",
            None,
            true,
            true,
            vec![inst("Y", 8, "MASTER", &["10.1.0.5"])],
        ),
        host(
            "d",
            None,
            true,
            true,
            vec![inst("Y", 8, "BACKUP", &["10.1.0.0/16"])],
        ),
        host(
            "e",
            None,
            true,
            true,
            vec![inst("Y", 8, "BACKUP", &["10.1.200.1/24"])],
        ),
    ];
    let clusters = group(&hosts);
    let sizes: BTreeMap<String, usize> = clusters
        .iter()
        .map(|c| (c.key.clone(), c.members.len()))
        .collect();
    assert_eq!(sizes["|7|10.0.0.5/32"], 1);
    assert_eq!(sizes["|7|10.0.0.6/32"], 1);
    assert_eq!(sizes.values().filter(|&&n| n == 3).count(), 1, "{sizes:?}");
    let joined = clusters.iter().find(|c| c.members.len() == 3).unwrap();
    assert_eq!(
        joined.networks,
        ["10.1.0.0/16", "10.1.0.5/32", "10.1.200.0/24"]
    );
    // Members disagree about the addresses: the cluster says so.
    assert_eq!(joined.health, Health::VipMismatch);
}

#[test]
fn no_address_instances_group_by_vrid_and_name_and_silent_hosts_stay() {
    let hosts = vec![
        host("a", None, true, true, vec![inst("VI_X", 60, "MASTER", &[])]),
        host("b", None, true, true, vec![inst("VI_X", 60, "BACKUP", &[])]),
        host("c", None, true, true, vec![inst("VI_Y", 60, "MASTER", &[])]),
        // keepalived stopped on d: it stays in with its last-known instance.
        host(
            "d",
            None,
            true,
            false,
            vec![inst("VI_X", 60, "BACKUP", &[])],
        ),
    ];
    let clusters = group(&hosts);
    let x = clusters.iter().find(|c| c.key == "|60|VI_X").unwrap();
    assert_eq!(x.members.len(), 3);
    let d = x.members.iter().find(|m| m.client_id == "d").unwrap();
    assert!(!d.reporting && d.online);
    assert_eq!(x.health, Health::Degraded);
    assert!(clusters.iter().any(|c| c.key == "|60|VI_Y"));
}

#[test]
fn a_thousand_pairs_on_one_vrid_group_quickly() {
    let hosts: Vec<HostView> = (0..2000)
        .map(|i| {
            let vip = format!("10.{}.{}.100/24", (i / 2) / 256, (i / 2) % 256);
            host(
                &format!("h{i}"),
                None,
                true,
                true,
                vec![inst(
                    "VI_1",
                    51,
                    if i % 2 == 0 { "MASTER" } else { "BACKUP" },
                    &[vip.as_str()],
                )],
            )
        })
        .collect();
    let clusters = group(&hosts);
    assert_eq!(clusters.len(), 1000);
    assert!(clusters
        .iter()
        .all(|c| c.members.len() == 2 && c.health == Health::Ok));
}

#[test]
fn signature_follows_what_grouping_depends_on_and_patch_rejudges() {
    let a = host(
        "a",
        None,
        true,
        true,
        vec![inst("VI_1", 51, "MASTER", &["192.0.2.100/24"])],
    );
    let same_net = host(
        "a",
        None,
        true,
        true,
        vec![inst("VI_1", 51, "BACKUP", &["192.0.2.101/24"])],
    );
    let other_net = host(
        "a",
        None,
        true,
        true,
        vec![inst("VI_1", 51, "MASTER", &["198.51.100.1/24"])],
    );
    let other_site = host(
        "a",
        Some("x"),
        true,
        true,
        vec![inst("VI_1", 51, "MASTER", &["192.0.2.100/24"])],
    );
    assert_eq!(
        signature(&a),
        signature(&same_net),
        "a state or an address in the same network keeps the grouping"
    );
    assert_ne!(signature(&a), signature(&other_net));
    assert_ne!(signature(&a), signature(&other_site));
    let b = host(
        "b",
        None,
        true,
        true,
        vec![inst("VI_1", 51, "BACKUP", &["192.0.2.100/24"])],
    );
    let mut cluster = group(&[a, b.clone()]).remove(0);
    assert_eq!(cluster.health, Health::Ok);
    patch(
        &mut cluster,
        &host(
            "b",
            None,
            true,
            true,
            vec![inst("VI_1", 51, "MASTER", &["192.0.2.100/24"])],
        ),
    );
    assert_eq!(cluster.health, Health::SplitBrain);
    patch(
        &mut cluster,
        &host(
            "b",
            None,
            false,
            true,
            vec![inst(
                "VI_1",
                51,
                "BACKUP",
                &["192.0.2.100/24", "192.0.2.9/24"],
            )],
        ),
    );
    assert_eq!(cluster.health, Health::VipMismatch);
    assert_eq!(cluster.vips, ["192.0.2.100/24", "192.0.2.9/24"]);
    assert!(
        !cluster
            .members
            .iter()
            .find(|m| m.client_id == "b")
            .unwrap()
            .online
    );
}

#[test]
fn serialised_shape() {
    let c = &group(&[host(
        "a",
        None,
        true,
        true,
        vec![inst("VI_1", 51, "MASTER", V)],
    )])[0];
    let v = serde_json::to_value(c).unwrap();
    let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "health",
            "key",
            "members",
            "networks",
            "readiness",
            "site",
            "vips",
            "vrid"
        ]
    );
    assert_eq!(v["readiness"]["verdict"], "not_ready", "a lone master");
    assert_eq!(v["readiness"]["findings"][0]["check"], "no_ready_backup");
    assert_eq!(
        v["members"][0],
        json!({ "clientId": "a", "online": true, "reporting": true, "instance": inst("VI_1", 51, "MASTER", V) })
    );
}

/// A newer agent's unicast instance: its source address and the peers it names.
fn unicast(state: &str, src: &str, peers: &[&str]) -> VrrpInstance {
    serde_json::from_value(
        json!({ "name": "VI_1", "vrid": 51, "state": state, "vips": V,
        "usesUnicast": true, "sourceAddress": src, "unicastPeers": peers }),
    )
    .expect("an instance")
}

#[test]
fn unicast_pairs_on_one_vrid_and_network_are_clusters_of_their_own() {
    let hosts = [
        host(
            "a1",
            None,
            true,
            true,
            vec![unicast("MASTER", "192.0.2.11", &["192.0.2.12"])],
        ),
        host(
            "a2",
            None,
            true,
            true,
            vec![unicast("BACKUP", "192.0.2.12", &["192.0.2.11"])],
        ),
        host(
            "b1",
            None,
            true,
            true,
            vec![unicast("MASTER", "192.0.2.13", &["192.0.2.14"])],
        ),
        host(
            "b2",
            None,
            true,
            true,
            vec![unicast("BACKUP", "192.0.2.14", &["192.0.2.13"])],
        ),
    ];
    let clusters = group(&hosts);
    assert_eq!(clusters.len(), 2, "{clusters:#?}");
    let mut keys: Vec<&str> = clusters.iter().map(|c| c.key.as_str()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "|51|192.0.2.0/24|unicast 192.0.2.11",
            "|51|192.0.2.0/24|unicast 192.0.2.13"
        ]
    );
    for c in &clusters {
        assert_eq!(c.health, Health::Ok, "not a split brain: {}", c.key);
        assert_eq!(c.members.len(), 2);
    }
}

#[test]
fn a_member_named_as_a_peer_stays_in_its_cluster_whatever_it_sends() {
    // a2 forgot unicast: a1 still names it, so they are one cluster, and the
    // readiness check says what is wrong rather than two clusters hiding it.
    let mut a2 = unicast("BACKUP", "192.0.2.12", &[]);
    a2.uses_unicast = Some(false);
    let hosts = [
        host(
            "a1",
            None,
            true,
            true,
            vec![unicast("MASTER", "192.0.2.11", &["192.0.2.12"])],
        ),
        host("a2", None, true, true, vec![a2]),
    ];
    let clusters = group(&hosts);
    assert_eq!(clusters.len(), 1);
    assert!(clusters[0]
        .readiness
        .findings
        .iter()
        .any(|f| f.check == crate::clusters::readiness::Check::UnicastMismatch));
}

#[test]
fn instances_whose_peers_are_unknown_group_by_network_as_before() {
    // A newer agent naming a peer whose agent reports no source address (an
    // older agent), and that older agent: one cluster, as before unicast groups.
    let mut old = inst("VI_1", 51, "BACKUP", V);
    old.unicast_peers = vec!["192.0.2.11".into()];
    let hosts = [
        host(
            "a1",
            None,
            true,
            true,
            vec![unicast("MASTER", "192.0.2.11", &["192.0.2.12"])],
        ),
        host("a2", None, true, true, vec![old]),
    ];
    assert_eq!(group(&hosts).len(), 1);
}

#[test]
fn a_patched_member_takes_its_hosts_drain_too() {
    let a = host(
        "a",
        None,
        true,
        true,
        vec![inst("VI_1", 51, "MASTER", &["192.0.2.1/24"])],
    );
    let mut cluster = group(std::slice::from_ref(&a)).remove(0);
    assert!(!cluster.members[0].drained());
    let mut drained = a;
    drained.instances = vec![inst("VI_1", 51, "BACKUP", &["192.0.2.1/24"])];
    drained.drain = Some(
        serde_json::from_value(json!({ "drained": true, "reason": "r", "by": "b", "since": null }))
            .unwrap(),
    );
    patch_member(&mut cluster.members[0], &drained);
    assert!(
        cluster.members[0].drained(),
        "the drain arrives with the reading"
    );
    assert_eq!(cluster.members[0].state(), "BACKUP");
}
