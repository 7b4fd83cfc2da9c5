//! Connected agents: one current connection per client id.

use crate::live::{Outbox, ToSocket};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use vrrp_protocol::{close, Refusal};

struct Connection {
    id: u64,
    outbox: Outbox<ToSocket>,
    capabilities: Vec<String>,
}

#[derive(Default)]
pub struct AgentRegistry {
    current: Mutex<HashMap<String, Connection>>,
    next_id: AtomicU64,
}

pub const REPLACED: Refusal = Refusal::new(close::SESSION_ENDED, "Replaced by new connection");
pub const DELETED: Refusal = Refusal::new(close::SESSION_ENDED, "Client deleted");

impl AgentRegistry {
    /// Makes a newly authenticated connection the client's current one; an older
    /// one is told to close with 4000. Returns the connection's id.
    pub fn register(
        &self,
        client_id: &str,
        capabilities: Vec<String>,
        outbox: Outbox<ToSocket>,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let old = self.current.lock().insert(
            client_id.to_owned(),
            Connection {
                id,
                outbox,
                capabilities,
            },
        );
        if let Some(old) = old {
            let _ = old
                .outbox
                .send(ToSocket::Close(REPLACED.code, REPLACED.reason));
        }
        id
    }

    /// Forgets a connection when it ends; false when a newer one had replaced it
    /// already (the client stays online then).
    pub fn unregister(&self, client_id: &str, connection: u64) -> bool {
        let mut current = self.current.lock();
        if current.get(client_id).is_some_and(|c| c.id == connection) {
            current.remove(client_id);
            true
        } else {
            false
        }
    }

    /// The capabilities of the connected agent; `None` while offline.
    pub fn capabilities(&self, client_id: &str) -> Option<Vec<String>> {
        self.current
            .lock()
            .get(client_id)
            .map(|c| c.capabilities.clone())
    }

    pub fn is_online(&self, client_id: &str) -> bool {
        self.current.lock().contains_key(client_id)
    }

    /// Queues a message for a connected agent; false when it is offline or not
    /// keeping up.
    pub fn send(&self, client_id: &str, msg: ToSocket) -> bool {
        match self.current.lock().get(client_id) {
            Some(c) => c.outbox.send(msg).is_ok(),
            None => false,
        }
    }

    /// Closes a client's connection (client deleted) and forgets it.
    pub fn close(&self, client_id: &str, refusal: Refusal) {
        if let Some(c) = self.current.lock().remove(client_id) {
            let _ = c.outbox.send(ToSocket::Close(refusal.code, refusal.reason));
        }
    }

    /// Closes every connection (a stop: 1001) and forgets them, as `close`
    /// does: their ends record no disconnect and change no cluster, since the
    /// server, not the agents, is going away.
    pub fn close_all(&self, refusal: Refusal) {
        for (_, c) in self.current.lock().drain() {
            let _ = c.outbox.send(ToSocket::Close(refusal.code, refusal.reason));
        }
    }

    pub fn online_count(&self) -> usize {
        self.current.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::channel;

    #[test]
    fn a_second_connection_replaces_the_first() {
        let reg = AgentRegistry::default();
        let (out1, in1) = channel(8).unwrap();
        let (out2, _in2) = channel(8).unwrap();
        let first = reg.register("c", vec!["vrrp".into()], out1);
        let second = reg.register("c", vec![], out2);
        assert_eq!(
            in1.drain(),
            Some(vec![ToSocket::Close(4000, "Replaced by new connection")])
        );
        assert!(
            !reg.unregister("c", first),
            "the replaced one does not take the client offline"
        );
        assert_eq!(reg.capabilities("c"), Some(vec![]));
        assert!(reg.unregister("c", second));
        assert_eq!(reg.capabilities("c"), None);
    }
}
