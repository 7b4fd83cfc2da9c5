//! The cluster list as `cluster-eval` last published it: what the API's list,
//! the metrics, the heartbeat and the dashboards' feed read without waiting on
//! that thread.
//!
//! The thread publishes after each evaluation (and, while the start-up guard
//! holds evaluation, after each regrouping), so the list shows only what the
//! evaluator has judged and persisted: a server stopped right after the list
//! showed a cluster restores its roles. A snapshot shares every unchanged
//! cluster with the one before ([`Arc`]); a publication copies only the
//! clusters patched since the last.
//!
//! The board also says how many of the thread's messages its list covers, so
//! that a reader can wait (briefly) for what was sent before it asked: the API
//! answers a list that includes the reading an agent just had acknowledged,
//! without asking the thread for anything.

use super::Cluster;
use parking_lot::{Condvar, Mutex, RwLock};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::sync::{Arc, OnceLock};

/// A published cluster and its JSON, written once, by the first reader that
/// needs it (the list route, the feed): a cluster unchanged between
/// publications is not written again, and a list of 2,500 is mostly copied.
#[derive(Debug)]
pub struct Shown {
    pub cluster: Cluster,
    json: OnceLock<Box<RawValue>>,
}

impl Shown {
    pub fn new(cluster: Cluster) -> Shown {
        Shown {
            cluster,
            json: OnceLock::new(),
        }
    }

    /// The cluster as the API writes it.
    pub fn json(&self) -> &RawValue {
        self.json.get_or_init(|| {
            serde_json::value::to_raw_value(&self.cluster)
                .unwrap_or_else(|_| RawValue::NULL.to_owned())
        })
    }
}

impl std::ops::Deref for Shown {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

impl PartialEq for Shown {
    fn eq(&self, other: &Shown) -> bool {
        self.cluster == other.cluster
    }
}

impl Serialize for Shown {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(s)
    }
}

/// One published cluster list, in the API's order (attention first).
#[derive(Debug, Default)]
pub struct Snapshot {
    pub clusters: Vec<Arc<Shown>>,
}

impl Serialize for Snapshot {
    /// As `GET /api/v1/keepalived/clusters` answers: the list.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.clusters.iter().map(|c| &**c))
    }
}

/// Where the latest snapshot is kept, and who hears of a new one.
pub struct Board {
    current: RwLock<Arc<Snapshot>>,
    /// How many messages sent to the thread the current list has taken in.
    covers: Mutex<u64>,
    covered: Condvar,
    published: crossbeam_channel::Sender<()>,
    wakes: crossbeam_channel::Receiver<()>,
}

impl Default for Board {
    fn default() -> Board {
        let (published, wakes) = crossbeam_channel::bounded(1);
        Board {
            current: RwLock::new(Arc::new(Snapshot::default())),
            covers: Mutex::new(0),
            covered: Condvar::new(),
            published,
            wakes,
        }
    }
}

impl Board {
    /// The latest published list: never waits on the cluster thread.
    pub fn latest(&self) -> Arc<Snapshot> {
        self.current.read().clone()
    }

    /// Publishes a list (sorted here into the API's order) and wakes the feed.
    pub fn publish(&self, mut clusters: Vec<Arc<Shown>>) {
        let order =
            |a: &Arc<Shown>, b: &Arc<Shown>| Cluster::attention_order(&&a.cluster, &&b.cluster);
        // Mostly in order already (a publication changes a few clusters'
        // health): a look, without the sort's scratch copy of the list.
        if !clusters.is_sorted_by(|a, b| order(a, b).is_le()) {
            clusters.sort_by(order);
        }
        *self.current.write() = Arc::new(Snapshot { clusters });
        let _ = self.published.try_send(());
    }

    /// The list now covers the first `taken` messages sent to the thread
    /// (whether or not they changed it).
    pub fn cover(&self, taken: u64) {
        let mut covers = self.covers.lock();
        if taken > *covers {
            *covers = taken;
            self.covered.notify_all();
        }
    }

    /// Waits until the list covers the first `sent` messages, at most
    /// `timeout`; false when it did not in time.
    pub fn wait_covering(&self, sent: u64, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut covers = self.covers.lock();
        while *covers < sent {
            if self.covered.wait_until(&mut covers, deadline).timed_out() {
                return *covers >= sent;
            }
        }
        true
    }

    /// Waits up to `timeout` for a publication since the last wake; true if one came.
    pub fn wait_published(&self, timeout: std::time::Duration) -> bool {
        self.wakes.recv_timeout(timeout).is_ok()
    }
}
