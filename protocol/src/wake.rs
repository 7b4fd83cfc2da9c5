//! The wake-up of a thread that sleeps in poll(2) on a socket: other threads
//! queue a message, then [`Waker::wake`]; the sleeper polls [`Wakeup`]'s
//! descriptor beside its socket and [`Wakeup::clear`]s it before taking the
//! messages. One mechanism for both binaries' socket threads (the server's
//! WebSocket threads, the agent's connection thread).
//!
//! A non-blocking socket pair: a wake is one byte written, never blocking (a
//! full buffer already means "wake up"); the descriptors close on exec.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// The waking side; clones wake the same sleeper.
#[derive(Debug, Clone)]
pub struct Waker(Arc<UnixStream>);

/// The sleeping side: its descriptor turns readable on a wake.
#[derive(Debug)]
pub struct Wakeup(UnixStream);

/// A new waker and the wake-up it wakes.
pub fn pair() -> io::Result<(Waker, Wakeup)> {
    let (a, b) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    Ok((Waker(Arc::new(a)), Wakeup(b)))
}

impl Waker {
    pub fn wake(&self) {
        let _ = (&*self.0).write(&[1]);
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
        let mut buf = [0u8; 256];
        while matches!((&self.0).read(&mut buf), Ok(n) if n > 0) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a wake is waiting (takes at most one byte of it).
    fn readable(w: &Wakeup) -> bool {
        let mut buf = [0u8; 1];
        matches!((&w.0).read(&mut buf), Ok(1))
    }

    #[test]
    fn a_wake_is_seen_once_cleared_and_never_blocks() {
        let (waker, wakeup) = pair().unwrap();
        assert!(!readable(&wakeup));
        let other = waker.clone();
        waker.wake();
        other.wake();
        other.wake();
        assert!(readable(&wakeup));
        wakeup.clear();
        assert!(!readable(&wakeup), "cleared, every wake at once");
        // Far more wakes than the buffer holds: none blocks.
        for _ in 0..1_000_000 {
            waker.wake();
        }
        wakeup.clear();
        assert!(!readable(&wakeup));
    }
}
