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
    /// Equal but for the instance's traffic counters (see
    /// [`Cluster::same_for_dashboard`](super::Cluster::same_for_dashboard)).
    pub fn same_for_dashboard(&self, other: &Member) -> bool {
        self.client_id == other.client_id
            && self.host == other.host
            && self.online == other.online
            && self.reporting == other.reporting
            && self.drain == other.drain
            && same_but_counters(&self.instance, &other.instance)
    }

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

/// Two instances equal but for `stats`. Every field is named, so that a field
/// added to [`VrrpInstance`] must be placed here, on one side or the other.
fn same_but_counters(a: &VrrpInstance, b: &VrrpInstance) -> bool {
    let VrrpInstance {
        name,
        state,
        wanted_state,
        interface,
        vrid,
        priority,
        effective_priority,
        advert_interval,
        vips,
        excluded_vips,
        sync_group,
        last_transition,
        stats: _,
        tracked,
        tracker_faults,
        unicast_peers,
        master_router,
        vrrp_version,
        auth_type,
        auth_fingerprint,
        auth_password_masked,
        preempt,
        preempt_delay,
        accept_mode,
        master_advert_interval,
        uses_unicast,
        source_address,
        config_faults,
        auth_password,
        fault_causes,
        fault_reason,
        extra,
    } = a;
    *name == b.name
        && *state == b.state
        && *wanted_state == b.wanted_state
        && *interface == b.interface
        && *vrid == b.vrid
        && *priority == b.priority
        && *effective_priority == b.effective_priority
        && *advert_interval == b.advert_interval
        && *vips == b.vips
        && *excluded_vips == b.excluded_vips
        && *sync_group == b.sync_group
        && *last_transition == b.last_transition
        && *tracked == b.tracked
        && *tracker_faults == b.tracker_faults
        && *unicast_peers == b.unicast_peers
        && *master_router == b.master_router
        && *vrrp_version == b.vrrp_version
        && *auth_type == b.auth_type
        && *auth_fingerprint == b.auth_fingerprint
        && *auth_password_masked == b.auth_password_masked
        && *preempt == b.preempt
        && *preempt_delay == b.preempt_delay
        && *accept_mode == b.accept_mode
        && *master_advert_interval == b.master_advert_interval
        && *uses_unicast == b.uses_unicast
        && *source_address == b.source_address
        && *config_faults == b.config_faults
        && *auth_password == b.auth_password
        && *fault_causes == b.fault_causes
        && *fault_reason == b.fault_reason
        && *extra == b.extra
}
