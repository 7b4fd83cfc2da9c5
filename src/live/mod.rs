//! Live state: the dashboards connected right now ([`Hub`]), and the queues that
//! carry messages to every socket thread (agents' and dashboards', [`queue`]).
//!
//! Invariant: nothing here blocks. A message to a socket goes into that socket's
//! bounded [`Outbox`] with `try_send`; a socket that cannot keep up is dropped
//! rather than slowing the sender (the evaluator, an agent, another dashboard).

pub mod hub;
pub mod queue;

pub use hub::Hub;
pub use queue::{channel, envelope, envelope_of, Inbox, LatestSlot, Outbox, ToSocket, Undelivered};
