//! Clusters: VRRP instances of different hosts that back each other up, and the
//! dashboard's health of each.
//!
//! Everything here is a pure function of the stored readings and client records
//! ([`HostView`]): [`group`] forms the clusters, [`dashboard_health`] judges one.
//! The evaluator of cluster events (confirmation, incidents) builds on these.

use crate::clusters::member::{vips_of, Member};
use ipnet::IpNet;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::str::FromStr;
use vrrp_protocol::{Reading, VrrpInstance};

/// One client as grouping sees it.
#[derive(Debug, Clone)]
pub struct HostView {
    pub client_id: String,
    pub site: Option<String>,
    /// Display name, else hostname.
    pub host: String,
    /// Agent connected now.
    pub online: bool,
    /// The last reading came from a running, readable keepalived.
    pub readable: bool,
    /// The last reading's instances when readable, else the last-known ones.
    pub instances: Vec<VrrpInstance>,
    pub read_at: Option<String>,
    /// The last reading's drain state (absent while the agent takes no actions).
    pub drain: Option<vrrp_protocol::DrainState>,
}

impl HostView {
    /// A client as grouping sees it, from its record and its last reading (as the
    /// API shows it): the reading's instances while keepalived is readable, else
    /// the last-known ones.
    pub fn new(
        client: &crate::agents::clients::ClientRecord,
        reading: &Reading,
        online: bool,
    ) -> HostView {
        let readable = reading.readable();
        let instances = if readable {
            reading.instances.clone()
        } else {
            reading.last_known_instances.clone().unwrap_or_default()
        };
        HostView {
            client_id: client.id.clone(),
            site: client.site.clone(),
            host: client.name().to_owned(),
            online,
            readable,
            instances,
            read_at: reading.received_at.clone(),
            drain: reading.drain.clone(),
        }
    }
}

/// The dashboard's health, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Health {
    SplitBrain,
    NoMaster,
    VipMismatch,
    Degraded,
    Unknown,
    Ok,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::SplitBrain => "split-brain",
            Health::NoMaster => "no-master",
            Health::VipMismatch => "vip-mismatch",
            Health::Degraded => "degraded",
            Health::Unknown => "unknown",
            Health::Ok => "ok",
        }
    }
}

/// Serialises as the API's Cluster.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cluster {
    pub key: String,
    pub site: Option<String>,
    pub vrid: u64,
    pub networks: Vec<String>,
    pub vips: Vec<String>,
    pub health: Health,
    /// Would a failover work now ([`crate::clusters::readiness`]).
    pub readiness: crate::clusters::readiness::Readiness,
    pub members: Vec<Member>,
}

impl Cluster {
    /// Equal as the dashboards' list shows it: all but what changes with every
    /// reading and what a dashboard takes from the readings it is sent anyway
    /// (the members' traffic counters, the time of the readiness check). A
    /// change of that alone is not sent as a change of the cluster.
    pub fn same_for_dashboard(&self, other: &Cluster) -> bool {
        let r = (&self.readiness, &other.readiness);
        self.key == other.key
            && self.site == other.site
            && self.vrid == other.vrid
            && self.networks == other.networks
            && self.vips == other.vips
            && self.health == other.health
            && r.0.verdict == r.1.verdict
            && r.0.findings == r.1.findings
            && r.0.checks == r.1.checks
            && self.members.len() == other.members.len()
            && self
                .members
                .iter()
                .zip(&other.members)
                .all(|(a, b)| a.same_for_dashboard(b))
    }

    /// The API's order: the clusters needing attention first.
    pub fn attention_order(a: &&Cluster, b: &&Cluster) -> std::cmp::Ordering {
        a.health.cmp(&b.health).then_with(|| a.key.cmp(&b.key))
    }
}

/// The dashboard's health table, first match wins (split brain and a missing
/// master outrank a VIP mismatch; the mismatch is counted over every member).
pub fn dashboard_health(members: &[Member]) -> Health {
    let live: Vec<&Member> = members.iter().filter(|m| m.live()).collect();
    let masters = live.iter().filter(|m| m.state() == "MASTER").count();
    if masters > 1 {
        return Health::SplitBrain;
    }
    if !live.is_empty() && masters == 0 {
        return Health::NoMaster;
    }
    let mut vip_sets = members.iter().map(Member::vips);
    if let Some(first) = vip_sets.next() {
        if vip_sets.any(|v| v != first) {
            return Health::VipMismatch;
        }
    }
    if masters == 1 {
        let trouble =
            members.len() == 1 || members.iter().any(|m| !m.live() || m.state() == "FAULT");
        return if trouble {
            Health::Degraded
        } else {
            Health::Ok
        };
    }
    Health::Unknown
}

/// The network an address belongs to: with a prefix, its network; without, the
/// address alone (a host route).
pub fn network_of(vip: &str) -> Option<IpNet> {
    let text = vip.split_whitespace().next()?;
    if let Ok(net) = IpNet::from_str(text) {
        return Some(net.trunc());
    }
    IpAddr::from_str(text).ok().map(IpNet::from)
}

/// A network as an address range: (is IPv6, first, last).
fn range_of(net: &IpNet) -> (bool, u128, u128) {
    match net {
        IpNet::V4(n) => (
            false,
            u32::from(n.network()) as u128,
            u32::from(n.broadcast()) as u128,
        ),
        IpNet::V6(n) => (true, u128::from(n.network()), u128::from(n.broadcast())),
    }
}

/// One instance of one host, before grouping.
struct Entry {
    member: Member,
    site: String,
    vrid: u64,
    networks: Vec<IpNet>,
    name: String,
    /// The unicast group it belongs to ([`unicast_groups`]); `None` for the
    /// multicast world and for what cannot be placed.
    unicast_group: Option<usize>,
}

/// At most this many peers of one instance are looked at: a reading with
/// thousands of peers is hostile or broken, and grouping must stay linear.
const MAX_PEERS_LOOKED_AT: usize = 64;

/// keepalived lets one VRID on one network serve separate unicast groups: pairs
/// whose members list each other as peers and nobody else. Instances that name
/// each other's source addresses (either way, transitively) form one group; a
/// group needs two members, so that an instance whose peers are not known yet
/// (an agent without source addresses, a peer without an agent) is grouped the
/// way it always was, by its networks. Returns each entry's group (the index of
/// one of its entries), `None` outside any group.
fn unicast_groups(entries: &[Entry]) -> Vec<Option<usize>> {
    let mut parent: Vec<usize> = (0..entries.len()).collect();
    let mut by_source: BTreeMap<(&str, u64, &str), Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(src) = e.member.instance.source_address.as_deref() {
            by_source.entry((&e.site, e.vrid, src)).or_default().push(i);
        }
    }
    for (i, e) in entries.iter().enumerate() {
        let inst = &e.member.instance;
        if inst.uses_unicast != Some(true) || inst.source_address.is_none() {
            continue;
        }
        for peer in inst.unicast_peers.iter().take(MAX_PEERS_LOOKED_AT) {
            for &j in by_source
                .get(&(e.site.as_str(), e.vrid, peer.as_str()))
                .into_iter()
                .flatten()
            {
                let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                parent[ri] = rj;
            }
        }
    }
    let roots: Vec<usize> = (0..entries.len()).map(|i| find(&mut parent, i)).collect();
    let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
    for r in &roots {
        *sizes.entry(*r).or_default() += 1;
    }
    roots
        .into_iter()
        .map(|r| (sizes.get(&r).copied().unwrap_or(0) > 1).then_some(r))
        .collect()
}

fn find(parent: &mut [usize], i: usize) -> usize {
    let mut root = i;
    while parent[root] != root {
        root = parent[root];
    }
    let mut i = i;
    while parent[i] != root {
        let next = parent[i];
        parent[i] = root;
        i = next;
    }
    root
}

/// Groups every instance of every host into clusters: same site, same VRID and a
/// shared network, transitively; an instance without addresses by VRID and name.
/// The list comes worst health first.
pub fn group(hosts: &[HostView]) -> Vec<Cluster> {
    let mut entries = Vec::new();
    for h in hosts {
        for inst in &h.instances {
            let Some(vrid) = inst.vrid.map(u64::from) else {
                continue;
            };
            let networks: Vec<IpNet> = vips_of(inst).iter().filter_map(|v| network_of(v)).collect();
            entries.push(Entry {
                member: Member {
                    client_id: h.client_id.clone(),
                    host: h.host.clone(),
                    online: h.online,
                    // Unknown while the agent is away: not claimed.
                    reporting: h.online && h.readable,
                    instance: inst.clone(),
                    read_at: h.read_at.clone(),
                    drain: h.drain.clone(),
                },
                site: h.site.clone().unwrap_or_default(),
                vrid,
                networks,
                name: inst.name.clone(),
                unicast_group: None,
            });
        }
    }
    let groups = unicast_groups(&entries);
    for (e, g) in entries.iter_mut().zip(groups) {
        e.unicast_group = g;
    }
    // Union-find within each (site, VRID, unicast group): entries sharing a
    // network, or (without addresses) an instance name, end in one set.
    let mut parent: Vec<usize> = (0..entries.len()).collect();
    let mut by_scope: BTreeMap<(&str, u64, Option<usize>), Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        by_scope
            .entry((e.site.as_str(), e.vrid, e.unicast_group))
            .or_default()
            .push(i);
    }
    for indices in by_scope.values() {
        // Two CIDR networks overlap exactly when their address ranges do: sort the
        // ranges by start and sweep, joining each to the run it starts inside.
        let mut ranges: Vec<(bool, u128, u128, usize)> = Vec::new();
        let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in indices {
            let e = &entries[i];
            if e.networks.is_empty() {
                if let Some(&other) = by_name.get(e.name.as_str()) {
                    let (ra, rb) = (find(&mut parent, i), find(&mut parent, other));
                    parent[ra] = rb;
                } else {
                    by_name.insert(e.name.as_str(), i);
                }
            }
            ranges.extend(e.networks.iter().map(|n| {
                let (v6, start, end) = range_of(n);
                (v6, start, end, i)
            }));
        }
        ranges.sort_unstable();
        let mut run: Option<(bool, u128, usize)> = None;
        for (v6, start, end, i) in ranges {
            match run {
                Some((run_v6, run_end, run_entry)) if run_v6 == v6 && start <= run_end => {
                    let (ra, rb) = (find(&mut parent, i), find(&mut parent, run_entry));
                    parent[ra] = rb;
                    run = Some((v6, run_end.max(end), run_entry));
                }
                _ => run = Some((v6, end, i)),
            }
        }
    }
    let mut sets: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..entries.len() {
        let root = find(&mut parent, i);
        sets.entry(root).or_default().push(i);
    }
    let mut clusters: Vec<Cluster> = sets
        .into_values()
        .map(|indices| {
            let first = &entries[indices[0]];
            let networks: BTreeSet<String> = indices
                .iter()
                .flat_map(|&i| entries[i].networks.iter().map(|n| n.to_string()))
                .collect();
            let vips: BTreeSet<String> = indices
                .iter()
                .flat_map(|&i| vips_of(&entries[i].member.instance))
                .collect();
            let mut members: Vec<Member> =
                indices.iter().map(|&i| entries[i].member.clone()).collect();
            members.sort_by(|a, b| {
                a.host
                    .cmp(&b.host)
                    .then_with(|| a.client_id.cmp(&b.client_id))
            });
            let mut identity = networks
                .iter()
                .next()
                .cloned()
                .unwrap_or_else(|| first.name.clone());
            // Unicast groups sharing a network are told apart by their lowest
            // source address (a member's own, so the key stays while it does).
            if first.unicast_group.is_some() {
                if let Some(src) = indices
                    .iter()
                    .filter_map(|&i| entries[i].member.instance.source_address.as_deref())
                    .min()
                {
                    identity = format!("{identity}|unicast {src}");
                }
            }
            Cluster {
                key: format!("{}|{}|{}", first.site, first.vrid, identity),
                site: (!first.site.is_empty()).then(|| first.site.clone()),
                vrid: first.vrid,
                networks: networks.into_iter().collect(),
                vips: vips.into_iter().collect(),
                health: dashboard_health(&members),
                readiness: crate::clusters::readiness::judge(&members),
                members,
            }
        })
        .collect();
    clusters.sort_by(|a, b| Cluster::attention_order(&a, &b));
    clusters
}

/// What a host's place in the grouping depends on.
pub fn signature(host: &HostView) -> String {
    let mut parts: Vec<String> = host
        .instances
        .iter()
        .map(|i| {
            let mut nets: Vec<String> = vips_of(i)
                .iter()
                .filter_map(|v| network_of(v))
                .map(|n| n.to_string())
                .collect();
            nets.sort();
            // Unicast groups depend on who names whom.
            let mut peers: Vec<&str> = i
                .unicast_peers
                .iter()
                .take(MAX_PEERS_LOOKED_AT)
                .map(String::as_str)
                .collect();
            peers.sort_unstable();
            format!(
                "{:?}|{:?}|{}|{:?}|{:?}|{}",
                i.vrid,
                i.name,
                nets.join(","),
                i.uses_unicast,
                i.source_address,
                peers.join(",")
            )
        })
        .collect();
    parts.sort();
    format!("{:?}#{}", host.site, parts.join(";"))
}

/// Updates a host's members of `cluster` from its fresh view (a reading or a
/// connection change that left its place in the grouping as it was), and judges
/// the cluster again.
pub fn patch(cluster: &mut Cluster, host: &HostView) {
    for member in cluster
        .members
        .iter_mut()
        .filter(|m| m.client_id == host.client_id)
    {
        patch_member(member, host);
    }
    rejudge(cluster);
}

/// One member from its host's fresh view; the cluster needs [`rejudge`] after.
pub fn patch_member(member: &mut Member, host: &HostView) {
    if let Some(inst) = host
        .instances
        .iter()
        .find(|i| i.name == member.instance.name)
    {
        member.instance = inst.clone();
    }
    member.online = host.online;
    member.reporting = host.online && host.readable;
    member.read_at = host.read_at.clone();
    member.drain = host.drain.clone();
}

/// The cluster's addresses and health from its members as they are now.
pub fn rejudge(cluster: &mut Cluster) {
    let mut vips: Vec<String> = cluster
        .members
        .iter()
        .flat_map(|m| vips_of(&m.instance))
        .collect();
    vips.sort();
    vips.dedup();
    cluster.vips = vips;
    cluster.health = dashboard_health(&cluster.members);
    cluster.readiness = crate::clusters::readiness::judge(&cluster.members);
}

#[cfg(test)]
mod tests;
