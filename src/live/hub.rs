//! Connected dashboards and the broadcasts to them.
//!
//! Each dashboard socket has a bounded queue. A broadcast never waits: a socket
//! whose queue is full is dropped from the hub (its thread then closes it), so a
//! slow browser never delays the others or the agents.

use super::queue::{LatestSlot, Outbox, ToSocket, Undelivered};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Messages a dashboard socket may have waiting before it counts as too slow:
/// about 2 s of a 5,000-agent fleet's readings, the time a connecting
/// dashboard takes to receive its snapshot (clients, clusters, readings) while
/// the readings keep coming. The messages are shared by every socket; a socket
/// holds only its queue of pointers to them.
pub const QUEUE: usize = 10_240;

struct Subscriber {
    id: u64,
    user_id: i64,
    outbox: Outbox<ToSocket>,
    latest: LatestSlot,
}

impl Subscriber {
    /// Queues a message; false when the socket is to be dropped from the hub.
    fn deliver(&self, msg: ToSocket) -> bool {
        match self.outbox.send(msg) {
            Ok(()) => true,
            Err(Undelivered::Full) => {
                log::warn!(
                    "Dashboard socket of user {} is not keeping up; dropping it",
                    self.user_id
                );
                false
            }
            Err(Undelivered::Gone) => false,
        }
    }
}

#[derive(Default)]
pub struct Hub {
    subscribers: Mutex<Vec<Subscriber>>,
    next_id: AtomicU64,
}

impl Hub {
    pub fn subscribe(&self, user_id: i64, outbox: Outbox<ToSocket>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.subscribers.lock().push(Subscriber {
            id,
            user_id,
            outbox,
            latest: LatestSlot::default(),
        });
        id
    }

    /// Sends a message where only the newest matters to every dashboard: it
    /// replaces one still waiting, so a dashboard never holds more than one.
    pub fn broadcast_latest(&self, text: Arc<str>) {
        self.subscribers.lock().retain(|s| {
            let was_waiting = s.latest.lock().replace(text.clone()).is_some();
            if was_waiting {
                return true;
            }
            s.deliver(ToSocket::Latest(s.latest.clone()))
        });
    }

    pub fn unsubscribe(&self, id: u64) {
        self.subscribers.lock().retain(|s| s.id != id);
    }

    /// Sends to every dashboard; drops those that cannot keep up.
    pub fn broadcast(&self, text: Arc<str>) {
        self.send_where(|_| true, ToSocket::Text(text));
    }

    /// Sends to every dashboard socket of one user.
    pub fn send_to_user(&self, user_id: i64, text: Arc<str>) {
        self.send_where(|s| s.user_id == user_id, ToSocket::Text(text));
    }

    /// Closes every dashboard socket of one user (sessions revoked).
    pub fn close_user(&self, user_id: i64, code: u16, reason: &'static str) {
        self.subscribers.lock().retain(|s| {
            if s.user_id == user_id {
                let _ = s.outbox.send(ToSocket::Close(code, reason));
                false
            } else {
                true
            }
        });
    }

    /// Tells every dashboard socket to close (a stop: 1001); they unsubscribe
    /// as they end.
    pub fn close_all(&self, code: u16, reason: &'static str) {
        for s in self.subscribers.lock().iter() {
            let _ = s.outbox.send(ToSocket::Close(code, reason));
        }
    }

    pub fn count(&self) -> usize {
        self.subscribers.lock().len()
    }

    fn send_where(&self, to: impl Fn(&Subscriber) -> bool, msg: ToSocket) {
        self.subscribers.lock().retain(|s| {
            if !to(s) {
                return true;
            }
            s.deliver(msg.clone())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::queue::channel;

    #[test]
    fn a_full_socket_is_dropped_and_the_others_still_receive() {
        let hub = Hub::default();
        let (slow_out, slow_in) = channel(2).unwrap();
        let (fast_out, fast_in) = channel(16).unwrap();
        hub.subscribe(1, slow_out);
        hub.subscribe(2, fast_out);
        for i in 0..5 {
            hub.broadcast(format!("m{i}").into());
        }
        assert_eq!(hub.count(), 1);
        assert_eq!(fast_in.drain().unwrap().len(), 5);
        assert_eq!(slow_in.drain().unwrap().len(), 2);
        assert!(
            slow_in.drain().is_none(),
            "the hub let go of the slow socket"
        );
    }

    #[test]
    fn only_the_newest_latest_message_is_held() {
        let hub = Hub::default();
        let (out, inbox) = channel(8).unwrap();
        hub.subscribe(1, out);
        hub.broadcast_latest("list 1".into());
        hub.broadcast_latest("list 2".into());
        hub.broadcast_latest("list 3".into());
        let queued = inbox.drain().unwrap();
        assert_eq!(queued.len(), 1, "one marker for three lists");
        let ToSocket::Latest(slot) = &queued[0] else {
            panic!("{queued:?}")
        };
        assert_eq!(slot.lock().take().as_deref(), Some("list 3"));
        hub.broadcast_latest("list 4".into());
        assert_eq!(
            inbox.drain().unwrap().len(),
            1,
            "a new marker once the slot was taken"
        );
    }

    #[test]
    fn user_messages_and_closing() {
        let hub = Hub::default();
        let (a, a_in) = channel(8).unwrap();
        let (b, b_in) = channel(8).unwrap();
        hub.subscribe(1, a);
        hub.subscribe(2, b);
        hub.send_to_user(2, "only b".into());
        assert_eq!(a_in.drain(), Some(vec![]));
        assert_eq!(b_in.drain(), Some(vec![ToSocket::Text("only b".into())]));
        hub.close_user(1, 4001, "Invalid Token");
        assert_eq!(
            a_in.drain(),
            Some(vec![ToSocket::Close(4001, "Invalid Token")])
        );
        assert_eq!(hub.count(), 1);
    }
}
