//! The `clusters-feed` thread: tells every dashboard what changed in the
//! cluster list (CLUSTERS_UPDATE), at most once per window, so that a
//! dashboard keeps its list without fetching it again.
//!
//! A message carries `seq` (one more than the message before), the clusters
//! that changed, whole, and the keys of those that are gone. A connecting
//! dashboard gets the whole list as last told, with its `seq` and
//! `full: true`; it is subscribed before that list is taken, so a change told
//! in between reaches it too, and it skips a message whose `seq` is not past
//! the list's. The hub drops a dashboard that cannot keep up rather than a
//! message, so a connected dashboard misses none: it reconnects and starts
//! from a whole list again.

use super::board::{Board, Shown};
use crate::lifecycle::Shutdown;
use crate::live::{envelope_of, Hub};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vrrp_protocol::kind;

/// Changes within this window go out as one message.
pub const CLUSTERS_COALESCE: Duration = Duration::from_millis(250);

/// What a dashboard is sent of cluster changes at most, on average: when a
/// fleet reconnects every cluster changes several times over, and a message of
/// thousands of whole clusters every 250 ms would crowd out the readings on a
/// dashboard's socket (the hub drops a socket that falls behind). Waiting
/// longer after a large message lets the changes meanwhile go out as one.
pub const BYTES_PER_SECOND: usize = 2 * 1024 * 1024;

/// A message holds at most about this many bytes of clusters; more changes go
/// out as several messages, one `seq` each: a socket's write buffer (4 MiB)
/// must always take a whole message.
pub const MESSAGE_BYTES: usize = 512 * 1024;

/// The wait before the next message, after one of `bytes` that took `spent`
/// to make: the feed takes at most a tenth of a core however large the list,
/// and sends at most [`BYTES_PER_SECOND`] on average.
pub fn window_after(spent: Duration, bytes: usize) -> Duration {
    let sending = Duration::from_secs_f64(bytes as f64 / BYTES_PER_SECOND as f64);
    CLUSTERS_COALESCE.max(spent * 9).max(sending)
}

/// A CLUSTERS_UPDATE payload.
#[derive(Debug, Serialize)]
pub struct ClustersUpdate<'a> {
    pub seq: u64,
    /// The whole list (on connect): a dashboard replaces what it holds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub full: bool,
    pub changed: Vec<&'a Shown>,
    pub removed: Vec<&'a str>,
}

/// What the dashboards were last told.
#[derive(Default)]
struct Told {
    seq: u64,
    /// In the API's order.
    list: Vec<Arc<Shown>>,
}

/// The changes from `before` to `now`: changed (or new) clusters and the keys
/// of removed ones. Pure.
pub fn diff<'a>(before: &'a [Arc<Shown>], now: &'a [Arc<Shown>]) -> (Vec<&'a Shown>, Vec<&'a str>) {
    let old: HashMap<&str, &Arc<Shown>> = before.iter().map(|c| (c.key.as_str(), c)).collect();
    let changed = now
        .iter()
        .filter(|c| {
            old.get(c.key.as_str())
                .is_none_or(|o| !Arc::ptr_eq(o, c) && !o.same_for_dashboard(c))
        })
        .map(|c| &**c)
        .collect();
    let present: std::collections::HashSet<&str> = now.iter().map(|c| c.key.as_str()).collect();
    let removed = before
        .iter()
        .map(|c| c.key.as_str())
        .filter(|k| !present.contains(k))
        .collect();
    (changed, removed)
}

/// The changed clusters in parts of at most about `most` bytes of JSON each
/// (a larger cluster is a part of its own), each with whether it is the last.
fn parts(changed: Vec<&Shown>, most: usize) -> Vec<(Vec<&Shown>, bool)> {
    let mut out: Vec<Vec<&Shown>> = Vec::new();
    let mut size = 0;
    for c in changed {
        let len = c.json().get().len();
        match out.last_mut() {
            Some(part) if size + len <= most => part.push(c),
            _ => {
                out.push(vec![c]);
                size = 0;
            }
        }
        size += len;
    }
    let n = out.len();
    out.into_iter()
        .enumerate()
        .map(|(i, p)| (p, i + 1 == n))
        .collect()
}

/// The feed: what it told, and where it tells it.
pub struct ClustersFeed {
    board: Arc<Board>,
    hub: Arc<Hub>,
    told: Mutex<Told>,
}

impl ClustersFeed {
    pub fn new(board: Arc<Board>, hub: Arc<Hub>) -> ClustersFeed {
        ClustersFeed {
            board,
            hub,
            told: Mutex::new(Told::default()),
        }
    }

    /// A connecting dashboard's list: everything told so far, as one message.
    pub fn whole(&self) -> Arc<str> {
        let told = self.told.lock();
        envelope_of(
            kind::CLUSTERS_UPDATE,
            &ClustersUpdate {
                seq: told.seq,
                full: true,
                changed: told.list.iter().map(|c| &**c).collect(),
                removed: Vec::new(),
            },
        )
    }

    /// Tells the dashboards what changed since the last message, if anything;
    /// returns the message's size. Under the lock, so that
    /// [`ClustersFeed::whole`] and the messages agree on `seq`.
    pub fn tell(&self) -> usize {
        let latest = self.board.latest();
        let mut told = self.told.lock();
        let (changed, removed) = diff(&told.list, &latest.clusters);
        let mut seq = told.seq;
        let mut bytes = 0;
        let mut send = |changed: Vec<&Shown>, removed: Vec<&str>| {
            seq += 1;
            let text = envelope_of(
                kind::CLUSTERS_UPDATE,
                &ClustersUpdate {
                    seq,
                    full: false,
                    changed,
                    removed,
                },
            );
            bytes += text.len();
            self.hub.broadcast(text);
        };
        let split = parts(changed, MESSAGE_BYTES);
        if split.is_empty() && !removed.is_empty() {
            send(Vec::new(), removed);
        } else {
            // The removed keys with the last part: few, and small.
            let mut removed = Some(removed);
            for (part, last) in split {
                let gone = if last { removed.take() } else { None };
                send(part, gone.unwrap_or_default());
            }
        }
        told.seq = seq;
        // The newest copies, counter changes included: a dashboard connecting
        // later gets them with the whole list.
        told.list = latest.clusters.clone();
        bytes
    }
}

/// Starts the `clusters-feed` thread.
pub fn spawn(feed: Arc<ClustersFeed>, shutdown: Shutdown) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("clusters-feed".into())
        .spawn(move || {
            let mut window = CLUSTERS_COALESCE;
            while !shutdown.is_set() {
                if !feed.board.wait_published(Duration::from_millis(500)) {
                    continue;
                }
                std::thread::sleep(window);
                let started = Instant::now();
                let bytes = feed.tell();
                window = window_after(started.elapsed(), bytes);
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clusters::{group, HostView};
    use serde_json::json;
    use vrrp_protocol::VrrpInstance;

    fn host(id: &str, state: &str, sent: u64, read_at: &str) -> HostView {
        let instance: VrrpInstance = serde_json::from_value(json!({
            "name": "VI_1", "vrid": 51, "state": state, "vips": ["192.0.2.100/24"],
            "stats": { "advertisements_sent": sent } }))
        .expect("an instance");
        HostView {
            client_id: id.into(),
            site: None,
            host: id.into(),
            online: true,
            readable: true,
            instances: vec![instance],
            read_at: Some(read_at.into()),
            drain: None,
        }
    }

    fn list(hosts: &[HostView]) -> Vec<Arc<Shown>> {
        group(hosts)
            .into_iter()
            .map(|c| Arc::new(Shown::new(c)))
            .collect()
    }

    #[test]
    fn many_changes_go_out_in_parts_each_under_the_bound() {
        // Names and VRIDs of one length: every cluster's JSON is as long.
        let hosts: Vec<HostView> = (10..50)
            .map(|i| {
                let mut h = host(&format!("h{i}"), "MASTER", 0, "t1");
                h.instances[0].vrid = Some(i);
                h
            })
            .collect();
        let all = list(&hosts);
        assert_eq!(all.len(), 40);
        let one = all[0].json().get().len();
        let shown: Vec<&Shown> = all.iter().map(|c| &**c).collect();
        let split = parts(shown.clone(), one * 10);
        assert_eq!(split.len(), 4, "ten clusters a part");
        assert!(split.iter().all(|(p, _)| p.len() == 10));
        assert_eq!(
            split.iter().filter(|(_, last)| *last).count(),
            1,
            "one last part"
        );
        assert!(split[3].1);
        // A bound below one cluster: each on its own, none lost.
        assert_eq!(parts(shown.clone(), 1).len(), 40);
        assert!(parts(Vec::new(), 10).is_empty());
    }

    #[test]
    fn a_large_message_or_a_slow_diff_widens_the_window() {
        let ms = Duration::from_millis;
        assert_eq!(window_after(ms(1), 10_000), CLUSTERS_COALESCE);
        assert_eq!(window_after(ms(100), 0), ms(900), "a tenth of a core");
        assert_eq!(
            window_after(ms(1), 4 * BYTES_PER_SECOND),
            Duration::from_secs(4),
            "8 MiB at 2 MiB a second"
        );
    }

    #[test]
    fn only_what_a_dashboard_shows_counts_as_a_change() {
        let before = list(&[host("a", "MASTER", 1, "t1"), host("b", "BACKUP", 0, "t1")]);
        // The same list: nothing to tell.
        assert_eq!(diff(&before, &before), (vec![], vec![]));
        // A reading that moved only the counters and the check's time: nothing.
        let counters = list(&[host("a", "MASTER", 9, "t2"), host("b", "BACKUP", 0, "t2")]);
        assert_ne!(before[0], counters[0], "the clusters do differ");
        assert_eq!(diff(&before, &counters), (vec![], vec![]));
        // A failover is a change, told whole.
        let failover = list(&[host("a", "BACKUP", 9, "t3"), host("b", "MASTER", 1, "t3")]);
        let (changed, removed) = diff(&counters, &failover);
        assert_eq!(changed, vec![&*failover[0]]);
        assert!(removed.is_empty());
        // A cluster gone is a removed key; a new one is a change.
        let other = list(&[host("c", "MASTER", 0, "t4")]);
        let mut moved = other[0].cluster.clone();
        moved.key = "|52|192.0.2.0/24".into();
        let other_key = Arc::new(Shown::new(moved));
        let (changed, removed) = diff(&failover, std::slice::from_ref(&other_key));
        assert_eq!(changed, vec![&*other_key]);
        assert_eq!(removed, vec![failover[0].key.as_str()]);
    }

    #[test]
    fn a_dashboard_gets_the_whole_list_then_each_change_once_in_order() {
        let board = Arc::new(Board::default());
        let hub = Arc::new(Hub::default());
        let (outbox, inbox) = crate::live::channel(16).unwrap();
        hub.subscribe(1, outbox);
        let feed = ClustersFeed::new(board.clone(), hub);
        let texts = || -> Vec<serde_json::Value> {
            inbox
                .drain()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|m| match m {
                    crate::live::ToSocket::Text(t) => serde_json::from_str(&t).ok(),
                    _ => None,
                })
                .collect()
        };
        board.publish(list(&[
            host("a", "MASTER", 1, "t1"),
            host("b", "BACKUP", 0, "t1"),
        ]));
        feed.tell();
        let told = texts();
        assert_eq!(told.len(), 1);
        assert_eq!(told[0]["type"], "CLUSTERS_UPDATE");
        assert_eq!(told[0]["payload"]["seq"], 1);
        assert_eq!(told[0]["payload"]["changed"][0]["health"], "ok");
        // Counters only: nothing told, but a dashboard connecting now gets them.
        board.publish(list(&[
            host("a", "MASTER", 7, "t2"),
            host("b", "BACKUP", 0, "t2"),
        ]));
        feed.tell();
        assert!(texts().is_empty());
        let whole: serde_json::Value = serde_json::from_str(&feed.whole()).unwrap();
        assert_eq!(whole["payload"]["seq"], 1);
        assert_eq!(whole["payload"]["full"], true);
        // A failover: seq 2, the cluster whole.
        board.publish(list(&[
            host("a", "BACKUP", 7, "t3"),
            host("b", "MASTER", 1, "t3"),
        ]));
        feed.tell();
        let told = texts();
        assert_eq!(told.len(), 1);
        assert_eq!(told[0]["payload"]["seq"], 2);
        let members = &told[0]["payload"]["changed"][0]["members"];
        assert_eq!(members[1]["instance"]["state"], "MASTER", "{members}");
        assert!(told[0]["payload"].get("full").is_none());
    }
}
