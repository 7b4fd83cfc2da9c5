//! Failover drills: drain a cluster's master through its agent, watch a backup
//! take over, measure the takeover from the agents' own keepalived timestamps,
//! undrain, measure the way back (preempt), report.
//!
//! `run` is the drill itself, written against [`Probe`] (the clock, the cluster
//! as it is now, the host actions, progress), so tests drive it on a manual
//! clock; `store` keeps every drill (refused ones too) in the `drills` table.
//! A drill runs on its own `drill:<id>` thread; one at a time per cluster
//! ([`Running`]). A drill never undrains a host it did not drain.

pub mod drill;
pub mod probe;
pub mod run;
pub mod store;

use parking_lot::Mutex;
use std::collections::HashMap;

pub use drill::{Drill, Status, Step};
pub use run::{preflight, Limits, Probe, Refusal};

/// The clusters with a drill under way: one at a time per cluster.
#[derive(Default)]
pub struct Running {
    by_cluster: Mutex<HashMap<String, String>>,
}

impl Running {
    /// Claims the cluster for drill `id`; the id of the drill already there otherwise.
    pub fn claim(&self, cluster: &str, id: &str) -> Result<(), String> {
        let mut map = self.by_cluster.lock();
        if let Some(other) = map.get(cluster) {
            return Err(other.clone());
        }
        map.insert(cluster.to_owned(), id.to_owned());
        Ok(())
    }

    pub fn release(&self, cluster: &str) {
        self.by_cluster.lock().remove(cluster);
    }
}
