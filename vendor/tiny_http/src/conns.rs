//! vrrp-monitor patch: the one owner of accepted connections.
//!
//! Every socket the accept thread takes is registered here with its descriptor,
//! its peer and what it is doing, and leaves the register before its descriptor
//! closes (the reader half's drop deregisters it first). Upstream tiny_http has
//! no idle timeout: every open connection holds one of its threads, even one that
//! never sends a request or sits idle in keep-alive. The `http-reaper` thread
//! ([`Connections::run_reaper`]) shuts down those the [`IdlePolicy`] says are
//! idle; shutting a socket down wakes the connection thread's blocked read and
//! frees the thread. The reaper shuts a socket down only under the register's
//! lock while it is registered, so the descriptor cannot have been reused.
//!
//! Upgraded sockets ([`crate::Request::upgrade_detached`]) leave the register:
//! their owner bounds them. They are counted while their [`Upgraded`] guard lives.
//!
//! Pressure: near the process's descriptor or thread limit, or while `accept`
//! fails for want of them, idle connections are closed at once: running out stops
//! accepting, and past the thread ceiling the process aborts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When an idle connection is closed.
#[derive(Debug, Clone, Copy)]
pub struct IdlePolicy {
    /// A connection that has sent nothing since it opened.
    pub first_request: Duration,
    /// A request head begun (bytes arrived) and not complete: a slow or stalled
    /// sender (slowloris).
    pub head: Duration,
    /// A keep-alive connection after its last answer.
    pub keep_alive: Duration,
    /// Idle connections when more than `pressure_above` are without a request.
    pub pressed: Duration,
    pub pressure_above: usize,
    /// Share of the descriptor limit (and of the thread ceiling) in use above
    /// which idle connections are closed at once.
    pub limit_share: f64,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            first_request: Duration::from_secs(10),
            head: Duration::from_secs(10),
            keep_alive: Duration::from_secs(5),
            pressed: Duration::from_secs(1),
            pressure_above: 512,
            limit_share: 0.6,
        }
    }
}

/// One registered connection.
pub(crate) struct Entry {
    fd: RawFd,
    /// A TCP socket (not a Unix one), and whether TLS runs over it: only plain
    /// TCP can be handed over by [`crate::Request::upgrade_detached`].
    pub(crate) tcp: bool,
    tls: bool,
    /// Requests handed out and not yet answered (dropped).
    in_flight: AtomicU32,
    /// Milliseconds after the register's epoch: when the connection went quiet
    /// (accepted, last answer done) or when the current head began.
    since_ms: AtomicU64,
    completed: AtomicBool,
    head_begun: AtomicBool,
    /// Handed over: tiny_http's halves close their descriptors without shutting
    /// the socket down.
    pub(crate) detached: AtomicBool,
}

impl Entry {
    pub(crate) fn fd(&self) -> RawFd {
        self.fd
    }

    pub(crate) fn plain_tcp(&self) -> bool {
        self.tcp && !self.tls
    }
}

/// What one reaper pass saw and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reaped {
    /// Registered connections (each holds a tiny_http thread and two descriptors).
    pub open: usize,
    /// Those without a request in flight (pressure counts these).
    pub without_request: usize,
    pub closed: usize,
    /// Descriptors (counted only near the limit) and threads of the process,
    /// when they could be read.
    pub descriptors: Option<usize>,
    pub threads: Option<usize>,
    /// Near a limit, or `accept` failing for want of resources.
    pub pressure: bool,
}

/// One accepted connection as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnView {
    pub busy: bool,
    /// Since the connection went quiet, or since its current head began.
    pub quiet_for: Duration,
    pub completed_a_request: bool,
    pub head_begun: bool,
}

/// The reaper's rule, without I/O. `without_request`: connections without a
/// request in flight; `pressure`: near a limit.
pub fn should_close(
    conn: ConnView,
    without_request: usize,
    pressure: bool,
    policy: &IdlePolicy,
) -> bool {
    if conn.busy {
        return false;
    }
    // A head under way gets the head timeout, never the pressed one.
    if conn.head_begun {
        return conn.quiet_for >= policy.head;
    }
    if pressure {
        return true;
    }
    let allowed = if without_request > policy.pressure_above {
        policy.pressed
    } else if conn.completed_a_request {
        policy.keep_alive
    } else {
        policy.first_request
    };
    conn.quiet_for >= allowed
}

/// The register (see the module's doc).
pub struct Connections {
    epoch: Instant,
    open: Mutex<HashMap<u64, Arc<Entry>>>,
    next_id: AtomicU64,
    upgraded: AtomicUsize,
    /// Set while `accept` (or starting a connection's thread) fails for want of
    /// descriptors, memory or threads; cleared by the next connection accepted.
    starved: AtomicBool,
    accept_failures: AtomicU64,
    /// The process's descriptor limit and thread ceiling (0: unknown).
    descriptor_limit: AtomicU64,
    thread_limit: AtomicU64,
}

impl Connections {
    pub(crate) fn new() -> Arc<Connections> {
        Arc::new(Connections {
            epoch: Instant::now(),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            upgraded: AtomicUsize::new(0),
            starved: AtomicBool::new(false),
            accept_failures: AtomicU64::new(0),
            descriptor_limit: AtomicU64::new(soft_descriptor_limit().unwrap_or(0)),
            thread_limit: AtomicU64::new(0),
        })
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Registers an accepted socket; it leaves the register when the returned
    /// handle drops (before its descriptor closes: see [`Registration`]).
    pub(crate) fn register(self: &Arc<Self>, fd: RawFd, tcp: bool, tls: bool) -> Registration {
        let entry = Arc::new(Entry {
            fd,
            tcp,
            tls,
            in_flight: AtomicU32::new(0),
            since_ms: AtomicU64::new(self.now_ms()),
            completed: AtomicBool::new(false),
            head_begun: AtomicBool::new(false),
            detached: AtomicBool::new(false),
        });
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.open).insert(id, entry.clone());
        Registration {
            conns: self.clone(),
            id,
            entry,
        }
    }

    /// A request head's first byte arrived.
    pub(crate) fn head_begun(&self, entry: &Entry) {
        entry.since_ms.store(self.now_ms(), Ordering::Relaxed);
        entry.head_begun.store(true, Ordering::Relaxed);
    }

    /// A request was handed out; the connection is busy until the guard drops.
    pub(crate) fn in_flight(self: &Arc<Self>, entry: &Arc<Entry>) -> InFlight {
        entry.in_flight.fetch_add(1, Ordering::AcqRel);
        entry.head_begun.store(false, Ordering::Relaxed);
        InFlight {
            conns: self.clone(),
            entry: entry.clone(),
        }
    }

    /// Connections registered now (each holds a tiny_http thread).
    pub fn open(&self) -> usize {
        lock(&self.open).len()
    }

    /// Upgraded sockets handed over and not yet dropped.
    pub fn upgraded(&self) -> usize {
        self.upgraded.load(Ordering::Acquire)
    }

    /// `accept` errors since the start (descriptors, memory, threads).
    pub fn accept_failures(&self) -> u64 {
        self.accept_failures.load(Ordering::Relaxed)
    }

    /// Whether accepting currently fails for want of resources.
    pub fn starved(&self) -> bool {
        self.starved.load(Ordering::Relaxed)
    }

    pub(crate) fn set_starved(&self, starved: bool) {
        if starved {
            self.accept_failures.fetch_add(1, Ordering::Relaxed);
        }
        self.starved.store(starved, Ordering::Relaxed);
    }

    /// The thread ceiling pressure is measured against (the caller knows how it
    /// is bounded on this host; 0: not at all).
    pub fn set_thread_limit(&self, limit: u64) {
        self.thread_limit.store(limit, Ordering::Relaxed);
    }

    /// The descriptor limit pressure is measured against (read at the start;
    /// set it again after raising it).
    pub fn set_descriptor_limit(&self, limit: u64) {
        self.descriptor_limit.store(limit, Ordering::Relaxed);
    }

    pub(crate) fn upgrade(self: &Arc<Self>) -> Upgraded {
        self.upgraded.fetch_add(1, Ordering::AcqRel);
        Upgraded {
            conns: self.clone(),
        }
    }

    /// One pass: closes the connections the policy says to.
    pub fn reap(&self, policy: &IdlePolicy) -> Reaped {
        let descriptor_limit = self.descriptor_limit.load(Ordering::Relaxed);
        // Counted only when the descriptor table is larger than the share of
        // the limit: below that the count cannot be above it, and a pass stays
        // a read of one small file (5,000 agents: a 16,384-slot table).
        let usage = process_usage_above((descriptor_limit as f64 * policy.limit_share) as usize);
        let above = |used: Option<usize>, limit: u64| {
            limit > 0 && used.is_some_and(|u| u as f64 > limit as f64 * policy.limit_share)
        };
        let pressure = self.starved()
            || above(usage.descriptors, descriptor_limit)
            || above(usage.threads, self.thread_limit.load(Ordering::Relaxed));
        let now = self.now_ms();
        let open = lock(&self.open);
        let registered = open.len();
        let without_request = open
            .values()
            .filter(|e| e.in_flight.load(Ordering::Acquire) == 0)
            .count();
        // Under the lock only a `dup` of each socket to close: the register's
        // lock is what every accept and every connection's end takes, and
        // shutting a thousand sockets down under it held a crowd's accepts
        // (health p99 18-32 ms with 10,000 idle clients). Our duplicate keeps
        // the socket, so the shutdown below cannot reach a reused descriptor.
        let mut to_close = Vec::new();
        let mut closed_here = 0;
        for entry in open.values() {
            let view = ConnView {
                busy: entry.in_flight.load(Ordering::Acquire) > 0,
                quiet_for: Duration::from_millis(
                    now.saturating_sub(entry.since_ms.load(Ordering::Relaxed)),
                ),
                completed_a_request: entry.completed.load(Ordering::Relaxed),
                head_begun: entry.head_begun.load(Ordering::Relaxed),
            };
            if entry.fd >= 0 && should_close(view, without_request, pressure, policy) {
                // SAFETY: the entry is registered and the lock is held, so its
                // descriptor is still this connection's (it deregisters under
                // this lock before it closes); F_DUPFD_CLOEXEC only makes a new one.
                let dup = unsafe { libc::fcntl(entry.fd, libc::F_DUPFD_CLOEXEC, 0) };
                if dup >= 0 {
                    // SAFETY: just made, held by nothing else.
                    to_close.push(unsafe { std::os::fd::OwnedFd::from_raw_fd(dup) });
                } else if unsafe { libc::shutdown(entry.fd, libc::SHUT_RDWR) } == 0 {
                    // Out of descriptors for the duplicate: shut down here,
                    // under the lock (SAFETY as above). Closing is what frees room.
                    closed_here += 1;
                }
            }
        }
        drop(open);
        let mut closed = closed_here;
        for socket in to_close {
            // SAFETY: our own descriptor of the socket; shutdown only ends it.
            if unsafe { libc::shutdown(socket.as_raw_fd(), libc::SHUT_RDWR) } == 0 {
                closed += 1;
            }
        }
        Reaped {
            open: registered,
            without_request,
            closed,
            descriptors: usage.descriptors,
            threads: usage.threads,
            pressure,
        }
    }

    /// The `http-reaper` loop: a pass every `tick` (longer while a pass is
    /// costly and nothing presses), until `closed` is set. Says once when
    /// pressure begins and when it ends.
    pub(crate) fn run_reaper(&self, policy: IdlePolicy, closed: &AtomicBool) {
        const TICK: Duration = Duration::from_millis(100);
        /// At most one pressure warning this often: near a limit pressure comes
        /// and goes in bursts.
        const WARN_EVERY: Duration = Duration::from_secs(60);
        let mut tick = TICK;
        let mut pressed = false;
        let mut warned: Option<Instant> = None;
        let mut crowded = false;
        while !closed.load(Ordering::Relaxed) {
            std::thread::sleep(tick);
            let started = Instant::now();
            let reaped = self.reap(&policy);
            let now_crowded = reaped.without_request > policy.pressure_above;
            if now_crowded && !crowded {
                log::warn!(
                    "{} HTTP connections without a request: closing idle ones after {:?}",
                    reaped.without_request,
                    policy.pressed
                );
            }
            crowded = now_crowded;
            if reaped.pressure && !pressed && warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                warned = Some(Instant::now());
                log::warn!(
                    "{} descriptors and {} threads open{}: closing idle HTTP connections at once",
                    reaped.descriptors.map_or("?".to_owned(), |n| n.to_string()),
                    reaped.threads.map_or("?".to_owned(), |n| n.to_string()),
                    if self.starved() {
                        ", accepting fails"
                    } else {
                        ", near a limit"
                    }
                );
            } else if pressed && !reaped.pressure {
                log::debug!(
                    "HTTP connections back below the limits ({} accept failures so far)",
                    self.accept_failures()
                );
            }
            pressed = reaped.pressure;
            if reaped.closed > 0 {
                log::debug!("Closed {} idle HTTP connections", reaped.closed);
            }
            tick = next_tick(TICK, started.elapsed(), &reaped, &policy);
        }
    }
}

/// The reaper's next tick after a pass that took `spent`: at most a twentieth
/// of a core while all is calm; under pressure every `base`, since closing is
/// what frees room.
pub fn next_tick(
    base: Duration,
    spent: Duration,
    reaped: &Reaped,
    policy: &IdlePolicy,
) -> Duration {
    if reaped.pressure || reaped.without_request > policy.pressure_above {
        base
    } else {
        base.max(spent * 20)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Nothing panics while holding it; a poisoned lock still holds a consistent map.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Held by a connection's reader half: leaves the register on drop.
pub(crate) struct Registration {
    conns: Arc<Connections>,
    id: u64,
    pub(crate) entry: Arc<Entry>,
}

impl Registration {
    pub(crate) fn conns(&self) -> &Arc<Connections> {
        &self.conns
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.conns.open).remove(&self.id);
    }
}

/// A request in flight on its connection: the reaper leaves it alone.
pub(crate) struct InFlight {
    conns: Arc<Connections>,
    pub(crate) entry: Arc<Entry>,
}

impl InFlight {
    pub(crate) fn conns(&self) -> &Arc<Connections> {
        &self.conns
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let e = &self.entry;
        e.since_ms.store(self.conns.now_ms(), Ordering::Relaxed);
        e.completed.store(true, Ordering::Relaxed);
        e.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts an upgraded socket (see [`Connections::upgraded`]) while it lives.
pub struct Upgraded {
    conns: Arc<Connections>,
}

impl Drop for Upgraded {
    fn drop(&mut self) {
        self.conns.upgraded.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What the process uses now.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub descriptors: Option<usize>,
    pub threads: Option<usize>,
}

/// Descriptors and threads of this process now. Threads from the `Threads:`
/// line of `/proc/self/status`; descriptors by one `poll` over the descriptor
/// table (its size is that file's `FDSize:`): a closed slot answers `POLLNVAL`.
/// Reading the file needs a descriptor: with none left, both are unknown.
pub fn process_usage() -> Usage {
    process_usage_above(0)
}

/// [`process_usage`], but descriptors are counted only when the table has
/// more than `table_above` slots (else `None`).
fn process_usage_above(table_above: usize) -> Usage {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return Usage::default();
    };
    let field = |name: &str| -> Option<usize> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .parse()
            .ok()
    };
    Usage {
        threads: field("Threads:"),
        descriptors: field("FDSize:")
            .filter(|&table| table > table_above)
            .and_then(count_open_descriptors),
    }
}

/// Open descriptors below `table` (see [`process_usage`]).
fn count_open_descriptors(table: usize) -> Option<usize> {
    // poll refuses more entries than the soft limit.
    let n = table.min(soft_descriptor_limit()? as usize);
    let mut fds: Vec<libc::pollfd> = (0..n)
        .map(|fd| libc::pollfd {
            fd: fd as RawFd,
            events: 0,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` holds `n` initialised pollfds; a zero timeout never blocks,
    // and events 0 only reports errors, hang-ups and invalid descriptors.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), n as libc::nfds_t, 0) };
    if rc < 0 {
        return None;
    }
    Some(
        fds.iter()
            .filter(|p| p.revents & libc::POLLNVAL == 0)
            .count(),
    )
}

/// The soft limit on open descriptors.
pub fn soft_descriptor_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through the pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (rc == 0).then_some(lim.rlim_cur as u64)
}

/// Whether an accept error says the process or the system is short of
/// something for a while (rather than the listen socket being unusable).
pub(crate) fn transient(e: &std::io::Error) -> bool {
    !matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::ENOTSOCK | libc::EINVAL | libc::EOPNOTSUPP | libc::EFAULT)
    )
}

/// Names the calling thread for the kernel only (thread dumps, `top -H`): a
/// name given through `std::thread::Builder` would also make a panic in it
/// look like one of the embedding program's own threads.
pub(crate) fn name_thread(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(busy: bool, quiet: u64, completed: bool) -> ConnView {
        ConnView {
            busy,
            quiet_for: Duration::from_secs(quiet),
            completed_a_request: completed,
            head_begun: false,
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
            "crowding shortens the wait"
        );
        assert!(!close(view(true, 1, false), 513));
        assert!(
            should_close(view(false, 0, true), 10, true, &p),
            "near a limit an idle connection goes at once"
        );
        assert!(!should_close(view(true, 0, true), 10, true, &p));
    }

    #[test]
    fn a_begun_head_gets_the_head_timeout_even_under_pressure() {
        let p = IdlePolicy::default();
        let begun = ConnView {
            head_begun: true,
            ..view(false, 3, false)
        };
        assert!(!should_close(begun, 10_000, true, &p));
        let slowloris = ConnView {
            quiet_for: p.head,
            ..begun
        };
        assert!(should_close(slowloris, 10, false, &p));
    }

    #[test]
    fn a_costly_pass_spaces_the_next_one_out_unless_pressed() {
        let p = IdlePolicy::default();
        let base = Duration::from_millis(100);
        let calm = Reaped::default();
        assert_eq!(next_tick(base, Duration::from_millis(1), &calm, &p), base);
        let costly = Duration::from_millis(15);
        assert_eq!(
            next_tick(base, costly, &calm, &p),
            Duration::from_millis(300)
        );
        let pressed = Reaped {
            pressure: true,
            ..calm
        };
        assert_eq!(next_tick(base, costly, &pressed, &p), base);
        let crowded = Reaped {
            without_request: p.pressure_above + 1,
            ..calm
        };
        assert_eq!(next_tick(base, costly, &crowded, &p), base);
    }

    #[test]
    fn counts_descriptors_as_they_open_and_close() {
        let before = process_usage().descriptors.expect("a count");
        let files: Vec<std::fs::File> = (0..20)
            .map(|_| std::fs::File::open("/dev/null").expect("open"))
            .collect();
        let during = process_usage().descriptors.expect("a count");
        drop(files);
        // Other tests open and close descriptors meanwhile: a margin.
        assert!(during >= before + 15, "{} then {}", before, during);
        assert!(process_usage().threads.is_some_and(|t| t >= 1));
        // Far below the limit the table is not even walked.
        assert_eq!(process_usage_above(usize::MAX).descriptors, None);
        assert!(process_usage_above(0).descriptors.is_some());
    }

    #[test]
    fn the_reaper_closes_idle_connections_and_leaves_busy_ones() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let conns = Connections::new();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut idle_client = std::net::TcpStream::connect(addr).expect("connect");
        let (idle, _) = listener.accept().expect("accept");
        let mut busy_client = std::net::TcpStream::connect(addr).expect("connect");
        let (busy, _) = listener.accept().expect("accept");
        let idle_reg = conns.register(idle.as_raw_fd(), true, false);
        let busy_reg = conns.register(busy.as_raw_fd(), true, false);
        let guard = conns.in_flight(&busy_reg.entry);
        let policy = IdlePolicy {
            first_request: Duration::ZERO,
            ..IdlePolicy::default()
        };
        let reaped = conns.reap(&policy);
        assert_eq!((reaped.open, reaped.without_request), (2, 1));
        assert_eq!(reaped.closed, 1);
        let mut buf = [0u8; 1];
        assert_eq!(idle_client.read(&mut buf).expect("read"), 0, "closed");
        busy_client
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        assert!(busy_client.read(&mut buf).is_err(), "still open");
        drop(guard);
        drop((idle_reg, busy_reg));
        assert_eq!(conns.open(), 0, "dropping a registration deregisters");
        assert_eq!(conns.reap(&policy).closed, 0);
    }

    #[test]
    fn a_server_hands_upgrades_over_and_reaps_idle_keep_alive_connections() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let quick = IdlePolicy {
            first_request: Duration::from_millis(300),
            keep_alive: Duration::from_millis(300),
            ..IdlePolicy::default()
        };
        let limits = crate::Limits {
            read_timeout: Some(Duration::from_secs(10)),
            head_deadline: Some(Duration::from_secs(10)),
            prebuffer_body: 1024,
            idle: Some(quick),
        };
        let server = Arc::new(
            crate::Server::from_listener_with_limits(listener, None, limits).expect("server"),
        );
        let worker = {
            let server = server.clone();
            std::thread::spawn(move || {
                let mut upgraded = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline {
                    if upgraded.len() == 1 && server.connections().open() == 0 {
                        break;
                    }
                    let rq = match server.recv_timeout(Duration::from_millis(20)) {
                        Ok(Some(rq)) => rq,
                        _ => continue,
                    };
                    if rq.url() == "/upgrade" {
                        let mut socket = rq
                            .upgrade_detached("test", crate::Response::empty(101))
                            .expect("handed over");
                        socket.stream.set_nonblocking(false).expect("blocking");
                        socket.stream.write_all(b"hello").expect("write");
                        upgraded.push(socket);
                    } else {
                        rq.respond(crate::Response::from_string("ok"))
                            .expect("respond");
                    }
                }
                upgraded
            })
        };
        let mut keep_alive = std::net::TcpStream::connect(addr).expect("connect");
        keep_alive
            .write_all(b"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        let mut upgrade = std::net::TcpStream::connect(addr).expect("connect");
        // The first bytes of the new protocol ride in with the request.
        upgrade
            .write_all(b"GET /upgrade HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: test\r\n\r\nearly")
            .expect("write");
        let read_some = |s: &mut std::net::TcpStream| {
            s.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            String::from_utf8_lossy(&buf[..n]).into_owned()
        };
        let answer = read_some(&mut keep_alive);
        assert!(answer.starts_with("HTTP/1.1 200"), "{}", answer);
        let mut switched = read_some(&mut upgrade);
        while !switched.contains("hello") {
            let more = read_some(&mut upgrade);
            assert!(!more.is_empty(), "no bytes after the 101: {}", switched);
            switched.push_str(&more);
        }
        assert!(switched.starts_with("HTTP/1.1 101"), "{}", switched);
        // Once the keep-alive connection is reaped and the upgraded one left
        // tiny_http, the register holds neither; the upgraded one is counted.
        let started = Instant::now();
        let upgraded = worker.join().expect("worker");
        assert_eq!(server.connections().open(), 0, "the idle one was reaped");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(upgraded[0].early, b"early", "bytes read past the request");
        assert_eq!(server.connections().upgraded(), 1);
        assert_eq!(read_some(&mut keep_alive), "", "the idle one was closed");
        // The upgraded socket outlives tiny_http's halves and the reaper.
        std::thread::sleep(Duration::from_millis(600));
        upgrade.write_all(b"ping").expect("client writes");
        let mut socket = upgraded.into_iter().next().expect("one");
        socket
            .stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut got = [0u8; 4];
        socket.stream.read_exact(&mut got).expect("we still read");
        assert_eq!(&got, b"ping");
        drop(socket);
        assert_eq!(server.connections().upgraded(), 0, "uncounted on drop");
    }
}
