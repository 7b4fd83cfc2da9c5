//! What the web server's handlers share: the routes decided at start (`Routes`, `Bind`)
//! and the state they read and act on (`WebState`). Its own module so that the page
//! handlers (`web`) and the WebSocket routes (`web::ws`) both depend on it and not on
//! each other.

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::config::{Config, Mode};
use crate::connection::Slots;
use crate::reader::{SharedStatus, Trigger};
use crate::registration::RegShared;
use crate::store::datadir::DataDir;

/// Which routes exist, decided once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes {
    pub status_page: bool,
    /// `/register` and `POST /api/register` (closed at run time once registered).
    pub register_page: bool,
    /// `enableRegisterPage` itself: once registered, `/register` still redirects.
    pub register_configured: bool,
    pub notify: bool,
    pub health: bool,
    /// Outbound mode: `/ws/register` and `/ws/agent` (no `serverUrl`).
    pub outbound: bool,
}

/// Where to listen, or why not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    All(u16),
    LoopbackOnly(u16),
    None(&'static str),
}

impl Routes {
    pub fn from_config(cfg: &Config, mode: Mode) -> Routes {
        Routes::for_servers(cfg, mode, usize::from(mode != Mode::Unregistered), false)
    }

    /// With `registered` servers known, `outbound_server` when one of them dials the
    /// agent. Registration stays possible while fewer than `maxServers` are known.
    pub fn for_servers(
        cfg: &Config,
        mode: Mode,
        registered: usize,
        outbound_server: bool,
    ) -> Routes {
        let full = registered >= cfg.max_servers;
        Routes {
            status_page: cfg.enable_status_page,
            register_page: cfg.enable_register_page && !full,
            register_configured: cfg.enable_register_page,
            notify: cfg.keepalived.notify_token.is_some(),
            health: cfg.container,
            // A server with room for more (`maxServers` above 1) may also be dialled
            // by a server that registers it outbound.
            outbound: (cfg.server_url.is_none() && mode != Mode::Inbound)
                || outbound_server
                || (cfg.max_servers > 1 && !full),
        }
    }

    /// With no page, no notify endpoint and no outbound mode, only the container's health
    /// route would remain: loopback in the container, nothing at all outside it.
    pub fn bind(&self, cfg: &Config) -> Bind {
        if self.status_page || self.register_page || self.notify || self.outbound {
            Bind::All(cfg.listen_port)
        } else if self.health {
            Bind::LoopbackOnly(cfg.listen_port)
        } else {
            Bind::None("no status page, no notify endpoint and no outbound mode")
        }
    }
}

/// Everything handlers read.
pub struct WebState {
    pub routes: Routes,
    pub config: Arc<Config>,
    pub mode: Mode,
    pub status: SharedStatus,
    pub trigger: Trigger,
    pub reg: Arc<RegShared>,
    /// The connection thread of every server slot (one for a one-server agent).
    pub conns: Slots,
    pub dir: DataDir,
    pub hostname: String,
    /// Sent in AUTH on `/ws/agent`.
    pub version: String,
    /// The registration timeout and the AUTH window of `/ws/agent` read this clock.
    pub clock: SharedClock,
    /// Shown on the status page: how many events wait, and whether they are on disk.
    pub queue: crate::store::queue::ActivityQueue,
    pub save_status: crate::store::persist::SaveStatus,
}
