//! Prometheus metrics: what `GET /metrics` shows, in the text exposition format
//! 0.0.4.
//!
//! `render` is pure: it turns a [`Snapshot`] (clusters, clients with their last
//! readings, open incidents, the counters below, process facts) into the text.
//! `Counters` are the only state this module owns: the activity events stored
//! and the webhook delivery outcomes since start, bumped by the activity sink and
//! the webhook threads. `process` reads the server's own RSS, threads and open
//! descriptors from `/proc/self`. The HTTP route (`http::api::metrics`) gathers the
//! snapshot; nothing here knows HTTP.
//!
//! Per-instance series use keepalived-exporter's names and labels
//! (`github.com/mehdy/keepalived-exporter`: `keepalived_vrrp_state{iname,intf,vrid,ip_address}`,
//! `keepalived_advertisements_received_total{iname,intf,vrid}`, …) with one more
//! label, `host`, since one server speaks for many hosts.

mod counters;
pub mod process;
mod render;

pub use counters::{Counters, Outcome};
pub use render::{
    render, render_heartbeat, ClientFacts, ClientLine, ClusterFacts, InstanceFacts, ProcessFacts,
    Snapshot,
};

#[cfg(test)]
mod tests;
