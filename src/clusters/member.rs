//! One member of a cluster: an instance of one host as grouping, readiness and
//! evaluation see it. A leaf of `clusters`, so that the pure judgements of a
//! cluster (`group`, `readiness`) share it without importing each other.

use std::collections::BTreeSet;
use vrrp_protocol::{DrainState, VrrpInstance};

/// One instance of one host in a cluster; serialises as the API's Member.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub client_id: String,
    #[serde(skip)]
    pub host: String,
    pub online: bool,
    /// keepalived on the host reports the instance now (false while the agent is
    /// offline: nothing is known of now).
    pub reporting: bool,
    pub instance: VrrpInstance,
    #[serde(skip)]
    pub read_at: Option<String>,
    /// The host's drain (its reading's `drain`), when its agent takes actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<DrainState>,
}

impl Member {
    pub fn live(&self) -> bool {
        self.online && self.reporting
    }

    pub fn state(&self) -> &str {
        self.instance.state.as_str()
    }

    /// The host is drained now (a drain or drill, or by hand): a planned
    /// absence, not a fault.
    pub fn drained(&self) -> bool {
        self.drain.as_ref().is_some_and(|d| d.drained)
    }

    pub fn vips(&self) -> BTreeSet<String> {
        vips_of(&self.instance).into_iter().collect()
    }
}

/// The virtual addresses of an instance, as written.
pub fn vips_of(instance: &VrrpInstance) -> Vec<String> {
    instance.vips.clone()
}
