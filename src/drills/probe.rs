//! The server's [`Probe`]: the cluster grouped anew from the stored readings,
//! host actions through the agent sessions, progress stored and sent to every
//! dashboard (`DRILL_UPDATE`), and the `drill:<id>` thread that runs a drill.

use super::drill::{Drill, Status};
use super::run::{run, Limits, Probe};
use super::{store, Running};
use crate::activity::Event;
use crate::agents::actions::{ActionError, ANSWER_WITHIN};
use crate::agents::session::SessionHandles;
use crate::clusters::Cluster;
use crate::live::envelope_of;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;
use vrrp_protocol::{ActivityLevel, HostAction};

/// What dashboards are sent as a drill moves on (older ones ignore the kind).
pub const DRILL_UPDATE: &str = "DRILL_UPDATE";

pub struct ServerProbe {
    pub handles: SessionHandles,
}

/// Every cluster as the stored readings show it now.
pub fn clusters_now(h: &SessionHandles) -> Vec<Cluster> {
    crate::clusters::from_stored(&h.db, &h.readings, &h.agents).unwrap_or_default()
}

/// Asks a client's agent to drain or undrain its host, in words when it fails.
pub fn act(
    h: &SessionHandles,
    client_id: &str,
    action: &str,
    reason: &str,
    by: &str,
) -> Result<vrrp_protocol::HostActionResult, ActionError> {
    let ask = HostAction {
        id: uuid::Uuid::new_v4().to_string(),
        action: action.to_owned(),
        // Both bounded as the agent bounds them: a user name has no limit of its own.
        reason: vrrp_protocol::actions::cut(reason, vrrp_protocol::actions::MAX_REASON_CHARS),
        by: vrrp_protocol::actions::cut(by, vrrp_protocol::actions::MAX_REASON_CHARS),
    };
    h.actions.request(&h.agents, client_id, ask, ANSWER_WITHIN)
}

impl Probe for ServerProbe {
    fn now(&self) -> DateTime<Utc> {
        self.handles.clock.utc()
    }

    fn cluster(&self, key: &str) -> Option<Cluster> {
        clusters_now(&self.handles)
            .into_iter()
            .find(|c| c.key == key)
    }

    fn act(&self, client_id: &str, action: &str, reason: &str, by: &str) -> Result<(), String> {
        match act(&self.handles, client_id, action, reason, by) {
            Ok(r) if r.ok => Ok(()),
            Ok(r) => Err(r.error.unwrap_or_else(|| "refused".into())),
            Err(ActionError::Offline) => Err("its agent is offline".into()),
            Err(ActionError::NoAnswer) => Err(format!(
                "its agent did not answer within {} s",
                ANSWER_WITHIN.as_secs()
            )),
            Err(ActionError::Invalid(why)) => Err(why),
        }
    }

    fn pause(&self) {
        std::thread::sleep(Duration::from_millis(100));
    }

    fn progress(&self, drill: &Drill) {
        if let Err(e) = store::save(&self.handles.db, drill) {
            log::error!("Cannot store drill {}: {e}", drill.id);
        }
        self.handles.hub.broadcast(envelope_of(DRILL_UPDATE, drill));
    }
}

/// The event a finished drill leaves: info when it passed, error otherwise.
pub fn finished_event(
    drill: &Drill,
    cluster: Option<&Cluster>,
    master_client: Option<String>,
    now: DateTime<Utc>,
) -> Event {
    let level = if drill.status == Status::Passed {
        ActivityLevel::Info
    } else {
        ActivityLevel::Error
    };
    Event::server(
        "cluster.drill_finished",
        level,
        master_client,
        serde_json::json!({
            "drill": drill,
            // The cluster as events carry it (`data.cluster.key` names it).
            "cluster": cluster.map_or_else(
                || serde_json::json!({ "key": drill.cluster }),
                crate::clusters::confirm::cluster_data,
            ),
        }),
        now,
    )
}

/// Runs a drill whose preflight passed on its own thread; the cluster is
/// released and the event recorded when it ends, however it ends.
pub fn start(
    handles: SessionHandles,
    running: Arc<Running>,
    mut drill: Drill,
    old: (String, String),
) -> std::io::Result<()> {
    let name = format!("drill:{}", &drill.id[..8]);
    std::thread::Builder::new()
        .name(name)
        .stack_size(256 * 1024)
        .spawn(move || {
            let probe = ServerProbe {
                handles: handles.clone(),
            };
            let master_client = Some(old.0.clone());
            let ran = crate::lifecycle::contain_panics(|| {
                run(&mut drill, old, &probe, Limits::default());
            });
            if ran.is_none() {
                drill
                    .findings
                    .push("The drill stopped on an internal error".into());
                drill.finish(Status::Failed, probe.now());
                probe.progress(&drill);
            }
            running.release(&drill.cluster);
            log::info!(
                "Drill {} of {} ended: {}",
                drill.id,
                drill.cluster,
                drill.status.as_str()
            );
            let cluster = probe.cluster(&drill.cluster);
            handles.activity.record(vec![finished_event(
                &drill,
                cluster.as_ref(),
                master_client,
                probe.now(),
            )]);
        })
        .map(|_| ())
}
