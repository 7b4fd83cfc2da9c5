//! `App`: what every HTTP request handler shares, built once by start-up
//! (`app::run`) and shared read-only through an `Arc`.
//!
//! Only the HTTP layer sees it: long-lived threads are handed the few parts they
//! use (see the `Handles` structs of `clusters::thread`, `schedulers`,
//! `agents::feed`, and `agents::session::SessionHandles`).

use crate::activity::{ActivitySink, Event};
use crate::agents::feed::{self, ClientsChanged};
use crate::agents::readings::Latest;
use crate::agents::session::SessionHandles;
use crate::agents::AgentRegistry;
use crate::auth::oidc::Oidc;
use crate::auth::rate_limit::RateLimiter;
use crate::auth::session::SessionKeys;
use crate::clock::SharedClock;
use crate::clusters::thread::{EvalMsg, EvalSender};
use crate::config::settings::Settings;
use crate::config::ServerConfig;
use crate::db::{Db, DbError};
use crate::live::Hub;
use crate::schedulers::Scheduler;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a cluster list request waits for the `cluster-eval` thread.
pub const LIST_WAIT: Duration = Duration::from_secs(2);

/// What every request handler shares. Built once at start; only the HTTP layer
/// and start-up see it. Long-lived threads get the few handles they use.
pub struct App {
    pub config: ServerConfig,
    pub db: Arc<Db>,
    pub clock: SharedClock,
    pub sessions: SessionKeys,
    pub login_limiter: RateLimiter,
    /// OIDC login, when configured and discovered at start.
    pub oidc: Option<Oidc>,
    /// The port we listen on: how an upgraded connection's socket is found.
    pub port: u16,
    pub hub: Arc<Hub>,
    pub agents: Arc<AgentRegistry>,
    /// Every client's last reading, mirrored from the database.
    pub readings: Arc<Latest>,
    /// The settings block, live: retention, intervals, level overrides.
    pub settings: Arc<Settings>,
    /// The one way into the activity list.
    pub activity: ActivitySink,
    /// Maintenance windows.
    pub silences: Arc<crate::activity::silences::Silences>,
    /// The webhook definitions, compiled when saved: every change goes through it.
    pub webhooks: Arc<crate::webhooks::live::Webhooks>,
    pub token_cleanup: Arc<Scheduler>,
    pub notification_cleanup: Arc<Scheduler>,
    /// One writer of the config file at a time.
    pub config_file: Mutex<()>,
    pub(crate) clients_changed: ClientsChanged,
    /// To the `cluster-eval` thread.
    pub(crate) evaluate: EvalSender,
    /// The parts an agent session uses, in either direction.
    pub(crate) session: SessionHandles,
    /// The `dial:<client>` threads of outbound agents.
    pub outbound: Arc<super::sessions::outbound::Dialer>,
    /// The first-run administrator and the file holding its generated password,
    /// removed once that password is changed.
    pub(crate) initial_password: Mutex<Option<(i64, PathBuf)>>,
    /// Activity and webhook counters since start, for `GET /metrics`.
    pub counters: Arc<crate::metrics::Counters>,
    /// The cluster list as `cluster-eval` last published it.
    pub board: Arc<crate::clusters::board::Board>,
    /// What the dashboards were told of the cluster list.
    pub clusters_feed: Arc<crate::clusters::feed::ClustersFeed>,
    /// The cluster history held in memory, what its endpoints read.
    pub history: crate::clusters::history::store::SharedMirror,
    /// The heartbeat's block and last outcome.
    pub heartbeat: Arc<crate::heartbeat::Heartbeat>,
    /// The clusters with a failover drill under way.
    pub drills: Arc<crate::drills::Running>,
    /// Active or standby in a server pair.
    pub ha: Arc<crate::ha::Role>,
    /// The provisioning directory and its last reading's outcome.
    pub provisioning: Arc<crate::provisioning::Provisioning>,
}

impl App {
    /// Every client with its live status, as the API shows them.
    pub fn client_list(&self) -> Result<Vec<crate::agents::clients::ClientView>, DbError> {
        feed::client_list(&self.db, &self.agents)
    }

    /// `GET /api/v1/keepalived/clusters`: the list `cluster-eval` last
    /// published, judged and persisted (it keeps the grouping up to date anyway;
    /// a reader never waits behind the readings it is taking in).
    /// It covers every message sent to that thread before the request (the
    /// reading an agent just had acknowledged among them), waiting at most
    /// [`LIST_WAIT`] for it: behind a stuck thread the list as last published.
    pub fn cluster_snapshot(&self) -> Arc<crate::clusters::board::Snapshot> {
        if !self.board.wait_covering(self.evaluate.sent(), LIST_WAIT) {
            log::warn!(
                "The cluster evaluator did not take in what came before this request within {} s; the list is as it last published it",
                LIST_WAIT.as_secs()
            );
        }
        self.board.latest()
    }

    /// What an agent session uses (see `agents::session`).
    pub fn session_handles(&self) -> SessionHandles {
        self.session.clone()
    }

    /// Tells the cluster evaluator something changed; never blocks.
    pub fn tell_evaluator(&self, msg: EvalMsg) {
        self.evaluate.tell(msg);
    }

    /// Tells every dashboard the client list changed (see [`feed`]).
    pub fn broadcast_clients(&self) {
        self.clients_changed.notify();
    }

    /// Stores events whose ids are new and passes them on (see [`ActivitySink`]).
    pub fn record_activity(&self, events: Vec<Event>) -> bool {
        self.activity.record(events)
    }

    pub fn first_admin_id(&self) -> i64 {
        self.initial_password
            .lock()
            .as_ref()
            .map_or(-1, |(id, _)| *id)
    }

    pub fn forget_initial_password(&self) {
        if let Some((_, path)) = self.initial_password.lock().take() {
            if std::fs::remove_file(&path).is_ok() {
                log::info!(
                    "The first-run administrator changed its password; removed {}",
                    path.display()
                );
            }
        }
    }
}
