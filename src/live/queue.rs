//! The queues that carry messages to every socket thread: a bounded [`Outbox`]
//! that never blocks its sender, the [`Inbox`] a socket thread polls (with an
//! eventfd to wake it), what travels on them ([`ToSocket`]) and the envelope
//! every message is wrapped in.

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use vrrp_protocol::wake::{self, Waker, Wakeup};

/// The sending end of a socket thread's queue; wakes the thread on every message.
pub struct Outbox<T> {
    tx: Sender<T>,
    waker: Waker,
}

impl<T> Clone for Outbox<T> {
    fn clone(&self) -> Self {
        Outbox {
            tx: self.tx.clone(),
            waker: self.waker.clone(),
        }
    }
}

/// The receiving end, polled together with the socket.
pub struct Inbox<T> {
    rx: Receiver<T>,
    wakeup: Wakeup,
}

/// A queue whose receiver is woken at once (`vrrp_protocol::wake`): broadcasts
/// and orders go out as they happen, and an idle socket thread sleeps.
pub fn channel<T>(capacity: usize) -> std::io::Result<(Outbox<T>, Inbox<T>)> {
    let (waker, wakeup) = wake::pair()?;
    let (tx, rx) = bounded(capacity);
    Ok((Outbox { tx, waker }, Inbox { rx, wakeup }))
}

/// Why a message could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// The socket is not keeping up.
    Full,
    /// The socket thread has ended.
    Gone,
}

impl<T> Outbox<T> {
    pub fn send(&self, msg: T) -> Result<(), Undelivered> {
        match self.tx.try_send(msg) {
            Ok(()) => {
                self.waker.wake();
                Ok(())
            }
            Err(TrySendError::Full(_)) => Err(Undelivered::Full),
            Err(TrySendError::Disconnected(_)) => Err(Undelivered::Gone),
        }
    }
}

impl<T> Inbox<T> {
    /// The descriptor that becomes readable when a message arrives.
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wakeup.fd()
    }

    /// Takes every waiting message; `None` when every sender is gone.
    pub fn drain(&self) -> Option<Vec<T>> {
        self.wakeup.clear();
        let mut out = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(m) => out.push(m),
                Err(crossbeam_channel::TryRecvError::Empty) => return Some(out),
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    return if out.is_empty() { None } else { Some(out) }
                }
            }
        }
    }
}

/// A message where only the newest matters (the full client list): a new one
/// replaces one not sent yet, so a slow socket holds at most one.
pub type LatestSlot = Arc<parking_lot::Mutex<Option<Arc<str>>>>;

/// What a socket thread is asked to do.
#[derive(Debug, Clone)]
pub enum ToSocket {
    /// A JSON text frame, shared by every receiver of a broadcast.
    Text(Arc<str>),
    /// Send what the slot holds now, if anything.
    Latest(LatestSlot),
    /// Close with this code and reason.
    Close(u16, &'static str),
}

impl PartialEq for ToSocket {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ToSocket::Text(a), ToSocket::Text(b)) => a == b,
            (ToSocket::Latest(a), ToSocket::Latest(b)) => Arc::ptr_eq(a, b),
            (ToSocket::Close(a, r), ToSocket::Close(b, s)) => a == b && r == s,
            _ => false,
        }
    }
}

/// One message in the `{type, payload}` envelope (design.md).
pub fn envelope(kind: &str, payload: serde_json::Value) -> Arc<str> {
    envelope_of(kind, &payload)
}

/// [`envelope`] of a payload the caller keeps.
/// Generic over the payload so a typed reading is written straight into the
/// frame, without a `Value` in between.
pub fn envelope_of<T: serde::Serialize + ?Sized>(kind: &str, payload: &T) -> Arc<str> {
    vrrp_protocol::messages::envelope::encode(kind, payload).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_gone() {
        let (out, inbox) = channel::<u8>(2).unwrap();
        assert_eq!(out.send(1), Ok(()));
        assert_eq!(out.send(2), Ok(()));
        assert_eq!(out.send(3), Err(Undelivered::Full));
        assert_eq!(inbox.drain(), Some(vec![1, 2]));
        assert_eq!(inbox.drain(), Some(vec![]));
        drop(inbox);
        assert_eq!(out.send(4), Err(Undelivered::Gone));
    }
}
