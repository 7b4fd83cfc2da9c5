//! Bounding what idle HTTP connections cost.
//!
//! tiny_http has no timeouts: every open connection holds one of its threads, even
//! one that never sends a request or sits idle in keep-alive. The `http-reaper`
//! thread looks at the accepted sockets of our port once per tick and shuts down
//! those that carry no request in flight and have been quiet too long; shutting a
//! socket down wakes tiny_http's blocked read and frees its thread. Above
//! [`IdlePolicy::pressure_above`] open connections the allowed quiet time shrinks.
//!
//! It also relieves starvation. tiny_http's thread pool can leave a new connection
//! queued with no thread to serve it: it counts a parked thread as free until that
//! thread wakes, so in a burst more connections are queued than threads wake.
//! Such a connection waits until some other connection ends, which for a
//! keep-alive connection is the idle timeout and for a WebSocket may be never
//! (a fleet reconnecting after a restart is such a burst). The reaper spots a
//! connection with bytes waiting that no thread has read for a tick and reports
//! it; the HTTP layer then connects to its own port once per starved connection:
//! with no thread parked, tiny_http spawns a new one for that connection, which
//! ends at once, and the new thread goes on to take a queued connection.
//!
//! It also names tiny_http's threads (`http-accept`, `http-conn`), which inherit
//! the name of the thread that created them, so a thread dump reads like the map.

use nix::sys::socket::{
    getpeername, getsockname, shutdown, Shutdown, SockaddrLike, SockaddrStorage,
};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct IdlePolicy {
    /// A connection that has not completed a request since it opened.
    pub first_request: Duration,
    /// A keep-alive connection after its last answer.
    pub keep_alive: Duration,
    /// Under pressure, either kind.
    pub pressed: Duration,
    pub pressure_above: usize,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            first_request: Duration::from_secs(10),
            keep_alive: Duration::from_secs(5),
            pressed: Duration::from_secs(1),
            pressure_above: 512,
        }
    }
}

#[derive(Default)]
struct Tracked {
    /// Requests (or upgraded sockets) in flight per peer.
    in_flight: HashMap<SocketAddr, u32>,
    /// When the last request of a peer's connection finished.
    last_done: HashMap<SocketAddr, Instant>,
    /// When the reaper first saw a peer's connection.
    first_seen: HashMap<SocketAddr, Instant>,
}

/// What one pass of the reaper saw and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reaped {
    /// Connections without a request in flight (pressure counts these).
    pub without_request: usize,
    pub closed: usize,
    /// Connections whose request no thread has taken.
    pub starved: usize,
}

/// What the HTTP workers tell the reaper: which connections are busy.
pub struct ConnTracker {
    port: u16,
    tracked: Mutex<Tracked>,
    /// Descriptors of upgraded sockets: skipped first when looking for a new one.
    owned: Mutex<HashSet<RawFd>>,
}

/// Marks a peer's connection busy while alive (a request, or an upgraded socket).
pub struct Busy {
    tracker: Arc<ConnTracker>,
    peer: SocketAddr,
    fd: Option<RawFd>,
}

impl Busy {
    /// Finds the connection's descriptor and notes it as taken by an upgraded socket.
    pub fn take_socket(&mut self) -> Option<RawFd> {
        let skip = self.tracker.owned.lock().clone();
        let fd = find_socket(self.tracker.port, self.peer, &skip)?;
        self.tracker.owned.lock().insert(fd);
        self.fd = Some(fd);
        Some(fd)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(fd) = self.fd {
            self.tracker.owned.lock().remove(&fd);
        }
        let mut t = self.tracker.tracked.lock();
        if let Some(n) = t.in_flight.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                t.in_flight.remove(&self.peer);
            }
        }
        t.last_done.insert(self.peer, Instant::now());
    }
}

/// One accepted socket as the reaper sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnView {
    pub busy: bool,
    /// Quiet since: the end of the last request, else when first seen.
    pub quiet_for: Duration,
    pub completed_a_request: bool,
    /// Bytes received and not yet read by anyone.
    pub unread: usize,
}

impl ConnView {
    /// Sent a request that no thread has read for at least one tick: queued in
    /// tiny_http's pool with no thread.
    pub fn starved(&self, tick: Duration) -> bool {
        !self.busy && !self.completed_a_request && self.unread > 0 && self.quiet_for >= tick
    }
}

/// The reaper's rule, without I/O.
pub fn should_close(conn: ConnView, open: usize, policy: &IdlePolicy) -> bool {
    // Busy, or holding a request no thread has taken yet: waiting for us, not idle.
    if conn.busy || conn.unread > 0 {
        return false;
    }
    let allowed = if open > policy.pressure_above {
        policy.pressed
    } else if conn.completed_a_request {
        policy.keep_alive
    } else {
        policy.first_request
    };
    conn.quiet_for >= allowed
}

impl ConnTracker {
    pub fn new(port: u16) -> Self {
        ConnTracker {
            port,
            tracked: Mutex::new(Tracked::default()),
            owned: Mutex::new(HashSet::new()),
        }
    }

    pub fn busy(self: &Arc<Self>, peer: SocketAddr) -> Busy {
        *self.tracked.lock().in_flight.entry(peer).or_insert(0) += 1;
        Busy {
            tracker: self.clone(),
            peer,
            fd: None,
        }
    }

    /// One pass: closes the connections the policy says to.
    pub fn reap(&self, policy: &IdlePolicy, tick: Duration) -> Reaped {
        let now = Instant::now();
        let sockets = accepted_sockets(self.port);
        let mut t = self.tracked.lock();
        let present: HashSet<SocketAddr> = sockets.iter().map(|s| s.1).collect();
        t.first_seen.retain(|p, _| present.contains(p));
        t.last_done.retain(|p, _| present.contains(p));
        // Upgraded sockets and requests in flight are not what pressure is about.
        let not_busy = sockets
            .iter()
            .filter(|(_, p)| !t.in_flight.contains_key(p))
            .count();
        let mut to_close = Vec::new();
        let mut starved = 0;
        for &(fd, peer) in &sockets {
            let first_seen = *t.first_seen.entry(peer).or_insert(now);
            let last_done = t.last_done.get(&peer).copied();
            let busy = t.in_flight.contains_key(&peer);
            let view = ConnView {
                busy,
                quiet_for: now.saturating_duration_since(last_done.unwrap_or(first_seen)),
                completed_a_request: last_done.is_some(),
                unread: if busy { 0 } else { unread_bytes(fd) },
            };
            if should_close(view, not_busy, policy) {
                to_close.push((fd, peer));
            } else if view.starved(tick) {
                starved += 1;
            }
        }
        drop(t);
        let mut closed = 0;
        for (fd, peer) in to_close {
            // Check the descriptor still is that connection: it may have been closed
            // and reused since the scan.
            if peer_of(fd, self.port) == Some(peer) && shutdown(fd, Shutdown::Both).is_ok() {
                closed += 1;
            }
        }
        Reaped {
            without_request: not_busy,
            closed,
            starved,
        }
    }
}

/// Bytes in a socket's receive queue.
fn unread_bytes(fd: RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer; a bad fd only errors.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    if rc == 0 {
        n.max(0) as usize
    } else {
        0
    }
}

/// Accepted TCP sockets of this process on `port`: (descriptor, peer).
fn accepted_sockets(port: u16) -> Vec<(RawFd, SocketAddr)> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .filter_map(|fd| Some((fd, peer_of(fd, port)?)))
        .collect()
}

/// The descriptor of our accepted socket from `peer`. Runs once per WebSocket
/// upgrade, so it must stay cheap with thousands of sockets open: descriptors in
/// `skip` (live upgraded sockets) are looked at only when nothing else matched,
/// the newest descriptors come first, and the peer is asked before the port.
fn find_socket(port: u16, peer: SocketAddr, skip: &HashSet<RawFd>) -> Option<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return None;
    };
    let mut fds: Vec<RawFd> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable_by(|a, b| b.cmp(a));
    let matches = |fd: &RawFd| {
        let Ok(p) = getpeername::<SockaddrStorage>(*fd) else {
            return false;
        };
        socket_addr(&p) == Some(peer) && peer_of(*fd, port) == Some(peer)
    };
    let fresh = fds
        .iter()
        .filter(|fd| !skip.contains(fd))
        .find(|fd| matches(fd));
    fresh
        .or_else(|| {
            fds.iter()
                .filter(|fd| skip.contains(fd))
                .find(|fd| matches(fd))
        })
        .copied()
}

/// The peer of `fd` when it is a connected socket whose local port is `port`.
fn peer_of(fd: RawFd, port: u16) -> Option<SocketAddr> {
    let local: SockaddrStorage = getsockname(fd).ok()?;
    if socket_addr(&local)?.port() != port {
        return None;
    }
    let peer: SockaddrStorage = getpeername(fd).ok()?;
    socket_addr(&peer)
}

fn socket_addr(s: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = s.as_sockaddr_in() {
        return Some(SocketAddr::from((v4.ip(), v4.port())));
    }
    if let Some(v6) = s.as_sockaddr_in6() {
        return Some(SocketAddr::from((v6.ip(), v6.port())));
    }
    let _ = s.family();
    None
}

/// Names tiny_http's threads: its accept thread keeps `http-accept`; the connection
/// threads it spawns inherited that name and become `http-conn`.
pub fn name_inherited_threads(accept_tid: Option<i32>) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if Some(tid) == accept_tid {
            continue;
        }
        let comm = task.path().join("comm");
        if std::fs::read_to_string(&comm).is_ok_and(|name| name.trim_end() == ACCEPT_THREAD) {
            let _ = std::fs::write(&comm, CONN_THREAD);
        }
    }
}

pub const ACCEPT_THREAD: &str = "http-accept";
pub const CONN_THREAD: &str = "http-conn";

/// The thread ids of this process now named `name`.
pub fn tids_named(name: &str) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse::<i32>().ok()?;
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            (comm.trim_end() == name).then_some(tid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(busy: bool, quiet: u64, completed: bool) -> ConnView {
        ConnView {
            busy,
            quiet_for: Duration::from_secs(quiet),
            completed_a_request: completed,
            unread: 0,
        }
    }

    #[test]
    fn policy() {
        let p = IdlePolicy::default();
        assert!(
            !should_close(view(true, 999, true), 10, &p),
            "busy is never closed"
        );
        assert!(!should_close(view(false, 4, true), 10, &p));
        assert!(should_close(view(false, 5, true), 10, &p));
        assert!(!should_close(view(false, 9, false), 10, &p));
        assert!(should_close(view(false, 10, false), 10, &p));
        assert!(
            should_close(view(false, 1, false), 513, &p),
            "pressure shortens the wait"
        );
        assert!(!should_close(view(true, 1, false), 513, &p));
    }

    #[test]
    fn starved_connections() {
        let tick = Duration::from_millis(250);
        let waiting = ConnView {
            busy: false,
            quiet_for: tick,
            completed_a_request: false,
            unread: 80,
        };
        assert!(waiting.starved(tick));
        assert!(
            !ConnView {
                quiet_for: Duration::from_millis(10),
                ..waiting
            }
            .starved(tick),
            "give its thread a tick"
        );
        assert!(
            !ConnView {
                unread: 0,
                ..waiting
            }
            .starved(tick),
            "a silent client is just slow"
        );
        assert!(
            !ConnView {
                completed_a_request: true,
                ..waiting
            }
            .starved(tick),
            "has its thread"
        );
        assert!(
            !should_close(waiting, 10_000, &IdlePolicy::default()),
            "waiting for us is not idle"
        );
    }

    #[test]
    fn busy_guard_counts_nested_requests() {
        let t = Arc::new(ConnTracker::new(1));
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let a = t.busy(peer);
        let b = t.busy(peer);
        drop(a);
        assert!(t.tracked.lock().in_flight.contains_key(&peer));
        drop(b);
        assert!(!t.tracked.lock().in_flight.contains_key(&peer));
        assert!(t.tracked.lock().last_done.contains_key(&peer));
    }
}
