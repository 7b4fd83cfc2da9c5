//! The `clients-feed` thread: tells every dashboard the client list when it
//! changed, at most once per window: [`CLIENTS_COALESCE`], or longer when the
//! list is big ([`window_after`]).
//!
//! A thousand agents connecting at once cost one list per window, not a thousand
//! lists of a thousand clients each; a list a slow dashboard has not taken yet is
//! replaced by the newer one. At 5,000 clients one list took tens of ms, and ten
//! a second while a fleet reconnected took a third of a core from the agents'
//! handshakes; the window grows so that the lists take at most a tenth.

use super::{clients, AgentRegistry};
use crate::db::{Db, DbError};
use crate::lifecycle::Shutdown;
use crate::live::{envelope_of, Hub};
use crossbeam_channel::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

/// Changes of the client list within this window go out as one CLIENTS_UPDATE.
pub const CLIENTS_COALESCE: Duration = Duration::from_millis(100);

/// The wait before the next list, after one that took `spent` to make and send.
pub fn window_after(spent: Duration) -> Duration {
    CLIENTS_COALESCE.max(spent * 9)
}

/// Every client with its live status, as the API shows them.
pub fn client_list(db: &Db, agents: &AgentRegistry) -> Result<Vec<clients::ClientView>, DbError> {
    Ok(clients::list(db)?
        .into_iter()
        .map(|c| {
            let capabilities = agents.capabilities(&c.id);
            c.view(capabilities)
        })
        .collect())
}

/// What the `clients-feed` thread uses.
pub struct Handles {
    pub db: Arc<Db>,
    pub agents: Arc<AgentRegistry>,
    pub hub: Arc<Hub>,
}

/// Where changes are told: [`ClientsChanged::notify`] never blocks.
#[derive(Clone)]
pub struct ClientsChanged(Sender<()>);

impl ClientsChanged {
    pub fn notify(&self) {
        let _ = self.0.try_send(());
    }
}

/// Starts the `clients-feed` thread.
pub fn spawn(handles: Handles, shutdown: Shutdown) -> std::io::Result<ClientsChanged> {
    let (tx, changed) = crossbeam_channel::bounded(1);
    std::thread::Builder::new()
        .name("clients-feed".into())
        .spawn(move || run(&handles, &changed, &shutdown))?;
    Ok(ClientsChanged(tx))
}

fn run(handles: &Handles, changed: &Receiver<()>, shutdown: &Shutdown) {
    let mut window = CLIENTS_COALESCE;
    while !shutdown.is_set() {
        if changed.recv_timeout(Duration::from_millis(500)).is_err() {
            continue;
        }
        std::thread::sleep(window);
        let _ = changed.try_recv();
        let started = std::time::Instant::now();
        match client_list(&handles.db, &handles.agents) {
            Ok(list) => handles
                .hub
                .broadcast_latest(envelope_of(vrrp_protocol::kind::CLIENTS_UPDATE, &list)),
            Err(e) => log::error!("Cannot list clients for the dashboards: {e}"),
        }
        window = window_after(started.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_that_takes_long_widens_the_window_to_ten_times_its_cost() {
        assert_eq!(window_after(Duration::from_millis(2)), CLIENTS_COALESCE);
        assert_eq!(window_after(Duration::ZERO), CLIENTS_COALESCE);
        // One list of 60 ms then a wait of 540 ms: a tenth of the time.
        assert_eq!(
            window_after(Duration::from_millis(60)),
            Duration::from_millis(540)
        );
    }
}
