//! The wake-up of a thread that sleeps in poll(2) on a socket: other threads
//! queue a message, then [`Waker::wake`]; the sleeper polls [`Wakeup`]'s
//! descriptor beside its socket and [`Wakeup::clear`]s it before taking the
//! messages. One mechanism for both binaries' socket threads (the server's
//! WebSocket threads, the agent's connection thread).
//!
//! An eventfd: one descriptor per sleeper (a socket pair took two, and every
//! agent connection holds one), a wake never blocks (non-blocking; a counter
//! at its limit already means "wake up"), and it closes on exec.

use nix::sys::eventfd::{EfdFlags, EventFd};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

/// The waking side; clones wake the same sleeper.
#[derive(Debug, Clone)]
pub struct Waker(Arc<EventFd>);

/// The sleeping side: its descriptor turns readable on a wake.
#[derive(Debug)]
pub struct Wakeup(Arc<EventFd>);

/// A new waker and the wake-up it wakes.
pub fn pair() -> io::Result<(Waker, Wakeup)> {
    let fd = Arc::new(EventFd::from_flags(
        EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC,
    )?);
    Ok((Waker(fd.clone()), Wakeup(fd)))
}

impl Waker {
    pub fn wake(&self) {
        let _ = self.0.write(1);
    }
}

impl Wakeup {
    /// What to poll (POLLIN).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// Takes every wake so far: call before taking the messages, so that one
    /// queued after this wakes the next poll.
    pub fn clear(&self) {
        let _ = self.0.read();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a wake is waiting (and takes them all: an eventfd reads whole).
    fn readable(w: &Wakeup) -> bool {
        w.0.read().is_ok()
    }

    #[test]
    fn a_wake_is_seen_once_cleared_and_never_blocks() {
        let (waker, wakeup) = pair().unwrap();
        assert!(!readable(&wakeup));
        let other = waker.clone();
        waker.wake();
        other.wake();
        other.wake();
        wakeup.clear();
        assert!(!readable(&wakeup), "cleared, every wake at once");
        waker.wake();
        assert!(readable(&wakeup));
        // Many wakes: none blocks.
        for _ in 0..1_000_000 {
            waker.wake();
        }
        wakeup.clear();
        assert!(!readable(&wakeup));
    }
}
