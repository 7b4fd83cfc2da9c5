//! Bounding what idle HTTP connections cost.
//!
//! tiny_http has no timeouts: every open connection holds one of its threads, even
//! one that never sends a request or sits idle in keep-alive. The `http-reaper`
//! thread looks at the accepted sockets of our port once per tick and shuts down
//! those that carry no request in flight and have been quiet too long; shutting a
//! socket down wakes tiny_http's blocked read and frees its thread. Above
//! [`IdlePolicy::pressure_above`] open connections the allowed quiet time shrinks.
//!
//! Running out of descriptors must not blind it: listing `/proc/self/fd` takes a
//! descriptor, so the tracker keeps one in reserve (`/dev/null`) and spends it
//! when a listing fails, then takes it back. Its counts of open descriptors and
//! threads are what the `http-listen` thread waits on before it accepts again.
//! Threads are the other limit: every connection holds one of tiny_http's, and
//! past the thread ceiling ([`super::sockets::thread_ceiling`]) the process
//! aborts; near it idle connections are closed at once, as near the descriptor
//! limit.
//!
//! It also names tiny_http's threads (`http-accept`, `http-conn`), which inherit
//! the name of the thread that created them, so a thread dump reads like the map.

use super::sockets::{self, Received};
use nix::sys::socket::{shutdown, Shutdown};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct IdlePolicy {
    /// A connection that has sent nothing since it opened.
    pub first_request: Duration,
    /// A request begun (bytes arrived) that no worker has answered: a slow or
    /// stalled sender (slowloris), or a request that waited this long for a worker.
    pub header: Duration,
    /// A keep-alive connection after its last answer.
    pub keep_alive: Duration,
    /// Idle connections (nothing begun) when more than `pressure_above` are open.
    pub pressed: Duration,
    pub pressure_above: usize,
    /// Share of the descriptor limit in use above which idle connections are
    /// closed at once: running out stops tiny_http's accept thread (the
    /// `http-listen` thread starts another once there is room).
    pub descriptor_share: f64,
    /// The same for threads against the thread ceiling: past that the process
    /// aborts, so it must never be reached.
    pub thread_share: f64,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            first_request: Duration::from_secs(10),
            header: Duration::from_secs(10),
            keep_alive: Duration::from_secs(5),
            pressed: Duration::from_secs(1),
            pressure_above: 512,
            descriptor_share: 0.6,
            thread_share: 0.6,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reaped {
    /// Connections without a request in flight (pressure counts these).
    pub without_request: usize,
    pub closed: usize,
    /// Descriptors open, and whether that is above the policy's share of the limit.
    pub descriptors: usize,
    pub descriptor_pressure: bool,
    /// Threads of the process, and whether that is above the policy's share of
    /// the thread ceiling.
    pub threads: usize,
    pub thread_pressure: bool,
}

/// What the HTTP workers tell the reaper: which connections are busy.
pub struct ConnTracker {
    port: u16,
    tracked: Mutex<Tracked>,
    /// Descriptors held by live upgraded sockets (our descriptor of the socket,
    /// its wake-up descriptor; tiny_http's two until the socket is detached from
    /// it): skipped without a system call by lookups and by the reaper.
    live: RwLock<HashSet<RawFd>>,
    /// The highest descriptor the last scan saw.
    high_water: AtomicI32,
    /// Where the last scans saw each peer's descriptors (not held by an upgraded
    /// socket yet). A lookup tries these first and checks them with the kernel;
    /// only a peer not seen yet costs a scan. In a reconnect storm thousands of
    /// connections wait at once, and a scan per upgrade asked the kernel about
    /// every one of them each time.
    seen: Mutex<HashMap<SocketAddr, Vec<RawFd>>>,
    /// The descriptor limit in force (0: unknown).
    limit: AtomicU64,
    /// Descriptors open at the last scan (`usize::MAX`: that scan failed).
    descriptors: AtomicUsize,
    /// The thread ceiling (0: unknown), and threads at the last scan
    /// (`usize::MAX`: unknown).
    thread_limit: AtomicU64,
    threads: AtomicUsize,
    /// Scans done so far: a count taken after an event says whether the figure
    /// above is from after it.
    scans: AtomicU64,
    /// One descriptor held back so that a scan can list `/proc/self/fd` when the
    /// process has no other left (the idle connections it then closes are what
    /// frees descriptors).
    reserve: Mutex<Option<std::fs::File>>,
}

/// Marks a peer's connection busy while alive (a request, or an upgraded socket).
pub struct Busy {
    tracker: Arc<ConnTracker>,
    peer: SocketAddr,
    held: Vec<RawFd>,
}

impl Busy {
    /// Finds the connection's descriptors (tiny_http holds two of the socket) and
    /// notes them as held by an upgraded socket; `None` when none is found.
    pub fn take_socket(&mut self) -> Option<Vec<RawFd>> {
        let port = self.tracker.port;
        let remembered = self.tracker.seen.lock().remove(&self.peer);
        // A scan between tiny_http's accept and its `try_clone` saw one
        // descriptor: only a complete pair is trusted.
        let fds = match remembered.filter(|fds| {
            fds.len() >= sockets::TINY_HTTP_DESCRIPTORS
                && fds
                    .iter()
                    .all(|&fd| sockets::peer_of(fd, port) == Some(self.peer))
        }) {
            Some(fds) => fds,
            None => {
                let live = self.tracker.live.read();
                let high = self.tracker.high_water.load(Ordering::Relaxed);
                let (fds, others) = sockets::find(port, self.peer, &live, high);
                drop(live);
                let mut seen = self.tracker.seen.lock();
                // Added to what the last scan saw: each descriptor once.
                for (fd, peer) in others {
                    let fds = seen.entry(peer).or_default();
                    if !fds.contains(&fd) {
                        fds.push(fd);
                    }
                }
                fds
            }
        };
        let &max = fds.iter().max()?;
        self.tracker.high_water.fetch_max(max, Ordering::Relaxed);
        for &fd in &fds {
            self.hold(fd);
        }
        Some(fds)
    }

    /// The connection now lives in `own` alone (see [`sockets::detach`]). The
    /// descriptors held so far go back to the kernel once tiny_http closes them
    /// and will carry other connections: they must stop being skipped as ours.
    pub fn detached(&mut self, own: RawFd) {
        let mut live = self.tracker.live.write();
        for fd in self.held.drain(..) {
            live.remove(&fd);
        }
        live.insert(own);
        self.held.push(own);
    }

    /// Notes a descriptor as belonging to this connection until the guard drops.
    pub fn hold(&mut self, fd: RawFd) {
        self.tracker.live.write().insert(fd);
        self.held.push(fd);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if !self.held.is_empty() {
            let mut live = self.tracker.live.write();
            for fd in &self.held {
                live.remove(fd);
            }
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
    /// The peer sent data since the quiet time began: a request is being sent,
    /// or waits in tiny_http's queue for a worker.
    pub request_begun: bool,
    /// The peer closed its side: nobody waits for an answer.
    pub hung_up: bool,
}

/// The reaper's rule, without I/O. `open`: connections without a request in
/// flight; `descriptor_pressure`: the process is near its descriptor or thread
/// limit.
pub fn should_close(
    conn: ConnView,
    open: usize,
    descriptor_pressure: bool,
    policy: &IdlePolicy,
) -> bool {
    if conn.busy {
        return false;
    }
    // A client that gave up (an agent's 5 s handshake timeout) must not hold
    // two descriptors and a thread while its request waits for a worker.
    if conn.hung_up {
        return true;
    }
    // A request under way, or waiting for us: it gets the header timeout, never
    // the pressed one (that would close requests queued for a worker in a burst).
    if conn.request_begun || conn.unread > 0 {
        return conn.quiet_for >= policy.header;
    }
    if descriptor_pressure {
        return true;
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

/// Whether the peer sent data since the connection went quiet: for a connection
/// that never completed a request, any byte; after one, data newer than its end
/// (the kernel's clock is coarse: a few ms of margin).
pub fn request_begun(completed: bool, quiet_for: Duration, rx: Option<Received>) -> bool {
    match rx {
        None => false,
        Some(rx) if !completed => rx.bytes > 0,
        Some(rx) => rx.last_ms_ago + 20 < quiet_for.as_millis() as u64,
    }
}

impl ConnTracker {
    pub fn new(port: u16) -> Self {
        ConnTracker {
            port,
            tracked: Mutex::new(Tracked::default()),
            live: RwLock::new(HashSet::new()),
            high_water: AtomicI32::new(0),
            seen: Mutex::new(HashMap::new()),
            limit: AtomicU64::new(0),
            descriptors: AtomicUsize::new(usize::MAX),
            scans: AtomicU64::new(0),
            thread_limit: AtomicU64::new(0),
            threads: AtomicUsize::new(usize::MAX),
            reserve: Mutex::new(take_reserve()),
        }
    }

    /// The thread ceiling the reaper measures pressure against.
    /// Descriptors held by upgraded sockets still open (none: all closed).
    pub fn upgraded_open(&self) -> usize {
        self.live.read().len()
    }

    pub fn set_thread_limit(&self, limit: u64) {
        self.thread_limit.store(limit, Ordering::Relaxed);
    }

    /// Whether the last scan found the threads above `share` of the ceiling
    /// (`false` when unknown).
    pub fn threads_above(&self, share: f64) -> bool {
        let limit = self.thread_limit.load(Ordering::Relaxed);
        let threads = self.threads.load(Ordering::Relaxed);
        limit > 0 && threads != usize::MAX && threads as f64 > limit as f64 * share
    }

    /// How many scans have been done (see [`Self::descriptors_left`]).
    pub fn scans(&self) -> u64 {
        self.scans.load(Ordering::Acquire)
    }

    /// Descriptors left below the limit at the last scan; `None` when unknown
    /// (no limit known, or the scan could not list them).
    pub fn descriptors_left(&self) -> Option<u64> {
        let limit = self.limit.load(Ordering::Relaxed);
        let open = self.descriptors.load(Ordering::Relaxed);
        (limit > 0 && open != usize::MAX).then(|| limit.saturating_sub(open as u64))
    }

    /// Lists our descriptors, spending the reserve when the process has none left
    /// for the listing, and taking it back afterwards.
    fn list_descriptors(&self) -> Option<Vec<RawFd>> {
        self.with_reserve(sockets::open_descriptors)
    }

    /// Runs a look at `/proc` (it opens a file), again with the reserve spent if
    /// it failed, and takes the reserve back afterwards.
    fn with_reserve<T>(&self, look: impl Fn() -> std::io::Result<T>) -> Option<T> {
        let found = look().ok().or_else(|| {
            drop(self.reserve.lock().take());
            look().ok()
        });
        let mut reserve = self.reserve.lock();
        if reserve.is_none() {
            *reserve = take_reserve();
        }
        found
    }

    /// The descriptor limit the reaper measures pressure against.
    pub fn set_descriptor_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub fn busy(self: &Arc<Self>, peer: SocketAddr) -> Busy {
        *self.tracked.lock().in_flight.entry(peer).or_insert(0) += 1;
        Busy {
            tracker: self.clone(),
            peer,
            held: Vec::new(),
        }
    }

    /// Accepted sockets of our port that no upgraded socket holds: (descriptor,
    /// peer); also how many descriptors are open.
    fn scan(&self) -> (Vec<(RawFd, SocketAddr)>, usize) {
        let listed = self.list_descriptors();
        let count = listed.as_ref().map_or(usize::MAX, Vec::len);
        self.descriptors.store(count, Ordering::Relaxed);
        self.scans.fetch_add(1, Ordering::Release);
        let Some(fds) = listed else {
            return (Vec::new(), 0);
        };
        if let Some(&max) = fds.iter().max() {
            self.high_water.store(max, Ordering::Relaxed);
        }
        let live = self.live.read();
        let found: Vec<(RawFd, SocketAddr)> = fds
            .iter()
            .filter(|fd| !live.contains(fd))
            .filter_map(|&fd| Some((fd, sockets::peer_of(fd, self.port)?)))
            .collect();
        drop(live);
        let mut seen: HashMap<SocketAddr, Vec<RawFd>> = HashMap::with_capacity(found.len());
        for &(fd, peer) in &found {
            seen.entry(peer).or_default().push(fd);
        }
        *self.seen.lock() = seen;
        (found, fds.len())
    }

    /// One pass: closes the connections the policy says to.
    pub fn reap(&self, policy: &IdlePolicy) -> Reaped {
        let now = Instant::now();
        let (sockets, descriptors) = self.scan();
        let limit = self.limit.load(Ordering::Relaxed);
        let descriptor_pressure =
            limit > 0 && descriptors as f64 > limit as f64 * policy.descriptor_share;
        let threads = self.with_reserve(sockets::thread_count);
        self.threads
            .store(threads.unwrap_or(usize::MAX), Ordering::Relaxed);
        let thread_pressure = self.threads_above(policy.thread_share);
        let mut t = self.tracked.lock();
        let present: HashSet<SocketAddr> = sockets.iter().map(|s| s.1).collect();
        t.first_seen.retain(|p, _| present.contains(p));
        t.last_done.retain(|p, _| present.contains(p));
        // Upgraded sockets and requests in flight are not what pressure is about.
        // tiny_http's twin descriptor makes each connection appear twice.
        let not_busy = present
            .iter()
            .filter(|p| !t.in_flight.contains_key(p))
            .count();
        let mut to_close = Vec::new();
        for &(fd, peer) in &sockets {
            let first_seen = *t.first_seen.entry(peer).or_insert(now);
            let last_done = t.last_done.get(&peer).copied();
            let busy = t.in_flight.contains_key(&peer);
            let quiet_for = now.saturating_duration_since(last_done.unwrap_or(first_seen));
            let completed = last_done.is_some();
            let view = ConnView {
                busy,
                quiet_for,
                completed_a_request: completed,
                unread: if busy { 0 } else { sockets::unread_bytes(fd) },
                request_begun: !busy && request_begun(completed, quiet_for, sockets::received(fd)),
                // Not looked at by the reaper: a client reconnecting from the
                // port it just used inherits its predecessor's tracked state, and
                // closing on a hang-up then lost fresh requests (5,000 sequential
                // registrations). The upgrade path checks its own descriptor.
                hung_up: false,
            };
            if should_close(
                view,
                not_busy,
                descriptor_pressure || thread_pressure,
                policy,
            ) {
                to_close.push((fd, peer, view.hung_up));
            }
        }
        drop(t);
        let mut closed = HashSet::new();
        for (fd, peer, hung_up) in to_close {
            // Check the descriptor still is that connection: it may have been closed
            // and reused since the scan, even by the same peer address (a client
            // reconnecting from the port it just used): a hung-up one must still be.
            if !closed.contains(&peer)
                && sockets::peer_of(fd, self.port) == Some(peer)
                && (!hung_up || sockets::hung_up(fd))
                && shutdown(fd, Shutdown::Both).is_ok()
            {
                closed.insert(peer);
            }
        }
        Reaped {
            without_request: not_busy,
            closed: closed.len(),
            descriptors,
            descriptor_pressure,
            threads: threads.unwrap_or(0),
            thread_pressure,
        }
    }
}

/// Names tiny_http's threads: its accept thread keeps `http-accept`; the connection
/// threads it spawns inherited that name and become `http-conn`. Only threads not
/// looked at before are read (`seen`): with thousands of connections, reading every
/// thread's name each pass would cost more than the rest of the reaper.
pub fn name_inherited_threads(accept_tid: Option<i32>, seen: &mut HashSet<i32>) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    let mut now = HashSet::with_capacity(seen.len());
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        now.insert(tid);
        if Some(tid) == accept_tid || seen.contains(&tid) {
            continue;
        }
        let comm = task.path().join("comm");
        if std::fs::read_to_string(&comm).is_ok_and(|name| name.trim_end() == ACCEPT_THREAD) {
            let _ = std::fs::write(&comm, CONN_THREAD);
        }
    }
    *seen = now;
}

/// The reserve descriptor (see [`ConnTracker`]).
fn take_reserve() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
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
            request_begun: false,
            hung_up: false,
        }
    }

    #[test]
    fn policy() {
        let p = IdlePolicy::default();
        let close = |v, open| should_close(v, open, false, &p);
        assert!(!close(view(true, 999, true), 10), "busy is never closed");
        assert!(!close(view(false, 4, true), 10));
        assert!(close(view(false, 5, true), 10));
        assert!(!close(view(false, 9, false), 10));
        assert!(close(view(false, 10, false), 10));
        assert!(
            close(view(false, 1, false), 513),
            "pressure shortens the wait"
        );
        assert!(!close(view(true, 1, false), 513));
        assert!(
            should_close(view(false, 0, true), 10, true, &p),
            "near the descriptor limit an idle connection goes at once"
        );
        assert!(!should_close(view(true, 0, true), 10, true, &p));
    }

    #[test]
    fn a_begun_request_gets_the_header_timeout_even_under_pressure() {
        let p = IdlePolicy::default();
        let begun = ConnView {
            request_begun: true,
            ..view(false, 3, false)
        };
        assert!(
            !should_close(begun, 10_000, true, &p),
            "a request queued for a worker in a burst is not idle"
        );
        let slowloris = ConnView {
            quiet_for: p.header,
            ..begun
        };
        assert!(should_close(slowloris, 10, false, &p), "header timeout");
        let gave_up = ConnView {
            hung_up: true,
            ..begun
        };
        assert!(should_close(gave_up, 10, false, &p), "nobody waits for it");
        assert!(!should_close(
            ConnView {
                busy: true,
                ..gave_up
            },
            10,
            false,
            &p
        ));
    }

    #[test]
    fn request_begun_from_the_kernel_counters() {
        let rx = |bytes, last_ms_ago| Some(Received { bytes, last_ms_ago });
        let q = Duration::from_secs(2);
        assert!(!request_begun(false, q, rx(0, 2000)), "connected, silent");
        assert!(
            request_begun(false, q, rx(1, 1500)),
            "one byte of a request"
        );
        assert!(
            !request_begun(true, q, rx(500, 2003)),
            "keep-alive: the last data was the finished request"
        );
        assert!(
            request_begun(true, q, rx(900, 300)),
            "keep-alive: a next request arrived"
        );
        assert!(!request_begun(true, q, None), "not a TCP socket");
    }

    #[test]
    fn a_request_waiting_for_us_is_not_idle() {
        let waiting = ConnView {
            busy: false,
            quiet_for: Duration::from_secs(1),
            completed_a_request: false,
            unread: 80,
            request_begun: true,
            hung_up: false,
        };
        assert!(!should_close(
            waiting,
            10_000,
            false,
            &IdlePolicy::default()
        ));
        assert!(should_close(
            ConnView {
                quiet_for: IdlePolicy::default().header,
                ..waiting
            },
            10_000,
            false,
            &IdlePolicy::default()
        ));
    }

    #[test]
    fn busy_guard_counts_nested_requests_and_releases_held_descriptors() {
        let t = Arc::new(ConnTracker::new(1));
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let mut a = t.busy(peer);
        a.hold(1234);
        let b = t.busy(peer);
        assert!(t.live.read().contains(&1234));
        drop(a);
        assert!(t.tracked.lock().in_flight.contains_key(&peer));
        assert!(!t.live.read().contains(&1234));
        drop(b);
        assert!(!t.tracked.lock().in_flight.contains_key(&peer));
        assert!(t.tracked.lock().last_done.contains_key(&peer));
    }
}
