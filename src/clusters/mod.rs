//! Clusters: VRRP instances of different hosts that back each other up, what can
//! be said of them now, and the confirmed changes (events, incidents) they go
//! through. Run by the `cluster-eval` thread ([`thread`]).
//!
//! - [`group`]: forming clusters from the hosts' readings, and the dashboard's
//!   health of each (pure); [`member`] one member as they all see it.
//! - [`readiness`]: would a failover work now (pure).
//! - [`observe`]: what one cluster shows at one moment: roles, incident health,
//!   findings (pure).
//! - [`confirm`]: the confirmation state machine that turns observations into
//!   confirmed changes and their events (pure, on a driven clock).
//! - [`history`]: the intervals each cluster's confirmed state held, and the
//!   availability figures summed from them (pure, with their table in `store`
//!   and the copy in memory the endpoints read in `mirror`).
//! - [`thread`]: the `cluster-eval` thread that feeds them and carries out what
//!   they return (records events, asks agents for readings, persists states),
//!   and publishes the list it judged on the [`board`];
//! - [`feed`]: the `clusters-feed` thread that tells the dashboards what
//!   changed on the board (CLUSTERS_UPDATE).

pub mod board;
pub mod confirm;
pub mod feed;
pub mod group;
pub mod history;
pub mod member;
pub mod observe;
pub mod readiness;
pub mod thread;

pub use group::*;
pub use member::{vips_of, Member};

/// Every cluster grouped anew from the stored readings (the client records,
/// the last readings, who is online now): what a drill watches, apart from
/// the evaluator's batching.
pub fn from_stored(
    db: &crate::db::Db,
    readings: &crate::agents::readings::Latest,
    agents: &crate::agents::AgentRegistry,
) -> Result<Vec<Cluster>, crate::db::DbError> {
    let hosts: Vec<HostView> = crate::agents::clients::list(db)?
        .into_iter()
        .filter_map(|c| {
            let reading = readings.get(&c.id)?;
            Some(HostView::new(&c, &reading, agents.is_online(&c.id)))
        })
        .collect();
    Ok(group(&hosts))
}
