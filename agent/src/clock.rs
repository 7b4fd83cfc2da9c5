//! The clock the connection's timing reads (handshake timeout, ping deadline, resend,
//! re-offer, ladder): the one clock of both binaries, in `vrrp_protocol`. The
//! process uses `SystemClock`; tests drive a `ManualClock` so no test sleeps for a
//! spec interval.

pub use vrrp_protocol::clock::{Clock, ManualClock, SharedClock, SystemClock};
