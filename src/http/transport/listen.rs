//! Accepting connections, and accepting again after accepting failed.
//!
//! tiny_http 0.12 gives up on its listener for good: its accept thread ends on
//! the first `accept` error (EMFILE, ENFILE, ENOBUFS, ECONNABORTED: most of them
//! pass), after pushing the error into its request queue (our copy does the same
//! when the `try_clone` it makes of every socket fails: upstream panicked); and
//! it panics when it cannot spawn a thread for a connection. Either way that
//! `tiny_http::Server` accepts nothing
//! more, while the connections it holds (keep-alive ones) go on delivering
//! requests into its queue.
//!
//! So tiny_http runs in *generations*. The `http-listen` thread keeps the listen
//! socket and makes each generation's `Server` from a `try_clone` of it. A
//! generation's accept thread owns that clone, so the clone's descriptor closing
//! (it no longer names our listen socket) says the thread ended, whichever way;
//! the reason arrives from the generation's pump (the queued error) or from the
//! panic observer. `http-listen` then logs one warning per streak of failures,
//! waits until descriptors are free again (the reaper closes idle connections
//! near the limit) and starts the next generation, with backoff.
//!
//! Each generation has an `http-pump-<n>` thread moving its requests into the
//! one channel the `http-worker`s read. An ended generation's pump stays while
//! its connections may still send requests: it retires after [`RETIRE_AFTER`]
//! without one, far past the reaper's longest timeout (10 s), so no connection
//! of it is left by then; the number of old pumps stays small even when
//! accepting fails again and again.
//!
//! An error that says the listen socket itself is unusable (EBADF, ENOTSOCK,
//! EINVAL, EOPNOTSUPP) is fatal: one fatal line, and the server shuts down.

use super::conns::{self, ConnTracker};
use crate::lifecycle::{self, Shutdown};
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::collections::HashSet;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often `http-listen` looks whether the current generation still accepts.
const TICK: Duration = Duration::from_millis(50);
/// How long a pump waits on its queue before looking at the shutdown switch.
const PUMP_WAIT: Duration = Duration::from_millis(200);
/// Backoff between generations in a streak: doubling from the first to the last.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Descriptors that must be free before a new generation accepts: each
/// connection takes two at once, and a generation that starts at the limit dies
/// on its first connection.
const HEADROOM: u64 = 64;
/// Threads must be below this share of the ceiling before a new generation
/// starts. A dead generation's threads linger in its pool for 5 s after their
/// connections end (tiny_http's idle timeout), while its successor's pool grows
/// beside them: starting at once, in a flood of 10,000 reconnecting idle
/// clients, doubled the threads past the ceiling (16,400 here, from
/// `vm.max_map_count`) and the process aborted. At a quarter, the successor has
/// room for the 10,000 connections a 20,000 descriptor limit allows.
const THREAD_SHARE: f64 = 0.25;
/// A generation that accepted this long ends the streak (one info line).
const RECOVERED_AFTER: Duration = Duration::from_secs(10);
/// How long the warning waits for the failure's reason (the pump may be a
/// moment behind the closed descriptor).
const REASON_WAIT: Duration = Duration::from_millis(500);
/// An ended generation's pump leaves after this long without a request.
pub const RETIRE_AFTER: Duration = Duration::from_secs(60);

/// `Listening::accept_tid` while a generation starts: the reaper leaves the
/// `http-accept` threads alone until the new accept thread is found.
pub const TID_LOOKING: i32 = 0;
/// `Listening::accept_tid` when the new accept thread was not found (the lookup
/// needs descriptors): its threads are all named `http-conn`.
pub const TID_NOT_FOUND: i32 = -1;

/// What the rest of the HTTP layer gets: the requests of every generation, and
/// the accept thread of the current one (for the reaper's naming; see
/// [`TID_LOOKING`] and [`TID_NOT_FOUND`]).
pub struct Listening {
    pub requests: Receiver<tiny_http::Request>,
    pub accept_tid: Arc<AtomicI32>,
}

/// Why a generation stopped accepting.
struct Ended {
    generation: u32,
    reason: String,
    fatal: bool,
    /// Said by tiny_http's queue, which it writes only as its accept thread
    /// ends. A panic's report is only a reason: that the thread was the accept
    /// thread is a guess until its clone of the listen socket is seen closed.
    certain: bool,
}

/// The parts every generation's threads share.
#[derive(Clone)]
struct Shared {
    requests: Sender<tiny_http::Request>,
    ended: Sender<Ended>,
    shutdown: Shutdown,
    /// The current generation and its accept thread, for the panic observer and
    /// the reaper.
    generation: Arc<AtomicU32>,
    accept_tid: Arc<AtomicI32>,
}

struct Generation {
    n: u32,
    /// The descriptor of the listener clone its accept thread owns.
    fd: RawFd,
    started: Instant,
    /// Set when its accept thread ended: the pump may retire.
    over: Arc<AtomicBool>,
}

/// Starts the first generation (an error here fails the start) and the
/// `http-listen` thread that keeps one accepting.
pub fn start(
    listener: TcpListener,
    tracker: Arc<ConnTracker>,
    shutdown: Shutdown,
) -> io::Result<Listening> {
    let (requests_tx, requests) = unbounded();
    let (ended_tx, ended) = unbounded();
    let shared = Shared {
        requests: requests_tx,
        ended: ended_tx,
        shutdown,
        generation: Arc::new(AtomicU32::new(0)),
        accept_tid: Arc::new(AtomicI32::new(0)),
    };
    let socket = socket_id(listener.as_raw_fd())
        .ok_or_else(|| io::Error::other("the listen socket cannot be inspected"))?;
    // tiny_http's only line above debug is "Error accepting new client", once
    // per failure; `http-listen` says it once per streak instead.
    crate::logging::mute("tiny_http");
    let first = start_generation(&listener, 0, &shared)?;
    observe_panics(&shared);
    let accept_tid = shared.accept_tid.clone();
    std::thread::Builder::new()
        .name("http-listen".into())
        .spawn(move || supervise(listener, socket, first, &shared, &tracker, &ended))?;
    Ok(Listening {
        requests,
        accept_tid,
    })
}

/// tiny_http's threads are unnamed to Rust and carry our kernel names
/// (`http-accept`, `http-conn`). A panic in the current accept thread is an
/// accept failure like any other; one in a connection thread ends that
/// connection. Neither needs the process to end: tiny_http keeps no state of ours.
fn observe_panics(shared: &Shared) {
    let (generation, accept_tid, ended) = (
        shared.generation.clone(),
        shared.accept_tid.clone(),
        shared.ended.clone(),
    );
    lifecycle::on_foreign_panic(Arc::new(move |tid, comm, message| {
        if comm != conns::ACCEPT_THREAD && comm != conns::CONN_THREAD {
            return false;
        }
        // Only the accept thread clones sockets and spawns threads, so a panic for
        // want of descriptors or threads is its, even before its id is known (a
        // burst can use the last descriptor before the lookup below is done).
        if tid == accept_tid.load(Ordering::Relaxed) || short_of_resources(message) {
            log::debug!("tiny_http's accept thread panicked: {message}");
            let _ = ended.send(Ended {
                generation: generation.load(Ordering::Relaxed),
                reason: format!("the accept thread panicked: {message}"),
                fatal: false,
                certain: false,
            });
        } else {
            log::error!("A tiny_http connection thread panicked: {message} (that connection ends)");
        }
        true
    }));
}

/// Whether a panic message is tiny_http's `unwrap` of an error that says the
/// process or the system is short of descriptors, memory or threads.
fn short_of_resources(message: &str) -> bool {
    let codes = [
        libc::EMFILE,
        libc::ENFILE,
        libc::ENOMEM,
        libc::EAGAIN,
        libc::ENOBUFS,
    ];
    message.contains("failed to spawn thread")
        || codes
            .iter()
            .any(|c| message.contains(&format!("Os {{ code: {c},")))
}

/// Makes a generation: a `tiny_http::Server` on a clone of the listener, created
/// from a thread named `http-accept` so that tiny_http's threads inherit the
/// name, and its pump.
fn start_generation(listener: &TcpListener, n: u32, shared: &Shared) -> io::Result<Generation> {
    let clone = listener.try_clone()?;
    let fd = clone.as_raw_fd();
    // Before tiny_http starts: its accept thread may fail at once.
    shared.generation.store(n, Ordering::Relaxed);
    shared.accept_tid.store(TID_LOOKING, Ordering::Relaxed);
    let (server, accept_tid) = std::thread::Builder::new()
        .name(conns::ACCEPT_THREAD.into())
        .spawn(move || {
            let me = nix::unistd::gettid().as_raw();
            // Threads of older generations may still bear the name (the reaper
            // renames them once a second): the new accept thread is the first
            // of those that appear now.
            let before: HashSet<i32> = conns::tids_named(conns::ACCEPT_THREAD)
                .into_iter()
                .collect();
            // Per-connection deadlines inside tiny_http (our patch, see
            // vendor/tiny_http/VENDORED.md): a request head must arrive within
            // the header timeout, and no read (a stalled body on a worker
            // included) blocks longer. Idle connections stay the reaper's.
            let header = conns::IdlePolicy::default().header;
            let limits = tiny_http::Limits {
                read_timeout: Some(header),
                head_deadline: Some(header),
                // Bodies are read before a worker sees the request: eight slow
                // senders cannot hold the eight workers.
                prebuffer_body: crate::http::request::MAX_BODY,
            };
            let server = tiny_http::Server::from_listener_with_limits(clone, None, limits);
            let accept_tid = conns::tids_named(conns::ACCEPT_THREAD)
                .into_iter()
                .filter(|t| *t != me && !before.contains(t))
                .min();
            (server, accept_tid)
        })?
        .join()
        .map_err(|_| io::Error::other("starting tiny_http panicked"))?;
    let server = server.map_err(|e| io::Error::other(e.to_string()))?;
    shared
        .accept_tid
        .store(accept_tid.unwrap_or(TID_NOT_FOUND), Ordering::Relaxed);
    let over = Arc::new(AtomicBool::new(false));
    let (shared, pump_over) = (shared.clone(), over.clone());
    std::thread::Builder::new()
        .name(format!("http-pump-{n}"))
        .spawn(move || pump(&server, n, &shared, &pump_over))?;
    Ok(Generation {
        n,
        fd,
        started: Instant::now(),
        over,
    })
}

/// Moves one generation's requests to the workers; reports its accept error.
fn pump(server: &tiny_http::Server, n: u32, shared: &Shared, over: &AtomicBool) {
    let mut last_request = Instant::now();
    while !shared.shutdown.is_set() {
        match server.recv_timeout(PUMP_WAIT) {
            Ok(Some(rq)) => {
                last_request = Instant::now();
                if shared.requests.send(rq).is_err() {
                    return;
                }
            }
            Ok(None) => {
                if over.load(Ordering::Relaxed) && last_request.elapsed() >= RETIRE_AFTER {
                    log::debug!("Retired HTTP generation {n}: no request for {RETIRE_AFTER:?}");
                    return;
                }
            }
            Err(e) => {
                let _ = shared.ended.send(Ended {
                    generation: n,
                    fatal: listener_unusable(&e),
                    reason: e.to_string(),
                    certain: true,
                });
            }
        }
    }
}

/// Errors that say the listen socket itself is unusable, not that the process
/// or the system is short of something for a while.
fn listener_unusable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EBADF | libc::ENOTSOCK | libc::EINVAL | libc::EOPNOTSUPP | libc::EFAULT)
    )
}

/// The socket a descriptor names (device and inode; every clone of a socket
/// shares them), if it is a listening socket.
fn socket_id(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: stat is plain old data; zeroes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one stat through the pointer; a bad fd only errors.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    let mut listening: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_ACCEPTCONN writes one c_int; a descriptor that is no socket errors.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&mut listening as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0 && listening != 0).then_some((st.st_dev, st.st_ino))
}

/// A streak of accept failures, from the first until a generation held.
struct Streak {
    since: Instant,
    failures: u32,
    warned: bool,
}

/// The `http-listen` loop: notices when the current generation stopped
/// accepting and starts the next.
fn supervise(
    listener: TcpListener,
    socket: (u64, u64),
    first: Generation,
    shared: &Shared,
    tracker: &ConnTracker,
    ended: &Receiver<Ended>,
) {
    let mut current = first;
    // When the current generation was seen to have ended, and why.
    let mut ended_at: Option<Instant> = None;
    let mut reason: Option<String> = None;
    let mut certain = false;
    let mut streak: Option<Streak> = None;
    let mut backoff = FIRST_BACKOFF;
    let mut next_attempt = Instant::now();
    let mut scans_at_end = 0;
    while !shared.shutdown.is_set() {
        if let Ok(e) = ended.recv_timeout(TICK) {
            if e.fatal {
                crate::fatal!("The HTTP listener failed: {}", e.reason);
                shared.shutdown.trigger();
                return;
            }
            if e.generation == current.n {
                reason.get_or_insert(e.reason);
                certain |= e.certain;
            }
        }
        let now = Instant::now();
        if ended_at.is_none() && (certain || socket_id(current.fd) != Some(socket)) {
            ended_at = Some(now);
            // The reaper's count from before the failure says nothing.
            scans_at_end = tracker.scans();
            current.over.store(true, Ordering::Relaxed);
            let s = streak.get_or_insert(Streak {
                since: now,
                failures: 0,
                warned: false,
            });
            s.failures += 1;
        }
        let Some(since) = ended_at else {
            if let Some(s) = streak.take_if(|_| current.started.elapsed() >= RECOVERED_AFTER) {
                log::info!(
                    "Accepting HTTP connections again: {} accept failures in {:.1} s",
                    s.failures,
                    s.since.elapsed().as_secs_f64()
                );
                backoff = FIRST_BACKOFF;
            }
            continue;
        };
        if let Some(s) = streak.as_mut().filter(|s| !s.warned) {
            if reason.is_some() || since.elapsed() >= REASON_WAIT {
                log::warn!(
                    "Accepting HTTP connections failed ({}); closing idle connections and accepting again as descriptors free up (one warning until it holds)",
                    reason.as_deref().unwrap_or("its accept thread ended")
                );
                s.warned = true;
            }
        }
        // Wait for a scan that began after the failure (it closed idle
        // connections), and for the room it found.
        if now < next_attempt
            || tracker.scans() < scans_at_end + 2
            || tracker
                .descriptors_left()
                .is_some_and(|left| left < HEADROOM)
            || tracker.threads_above(THREAD_SHARE)
        {
            continue;
        }
        if socket_id(listener.as_raw_fd()) != Some(socket) {
            crate::fatal!("The HTTP listen socket is gone: cannot accept connections");
            shared.shutdown.trigger();
            return;
        }
        next_attempt = now + backoff;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        match start_generation(&listener, current.n + 1, shared) {
            Ok(next) => {
                log::debug!("Started HTTP generation {}", next.n);
                current = next;
                ended_at = None;
                reason = None;
                certain = false;
            }
            Err(e) if listener_unusable(&e) => {
                crate::fatal!("The HTTP listener failed: {e}");
                shared.shutdown.trigger();
                return;
            }
            Err(e) => log::debug!("Cannot start HTTP generation {} yet: {e}", current.n + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_of_the_listener_names_the_same_socket_and_nothing_else_does() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let id = socket_id(listener.as_raw_fd()).expect("a listening socket");
        let clone = listener.try_clone().expect("clone");
        assert_eq!(socket_id(clone.as_raw_fd()), Some(id));
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (accepted, _) = listener.accept().expect("accept");
        assert_eq!(socket_id(accepted.as_raw_fd()), None, "not listening");
        assert_eq!(socket_id(client.as_raw_fd()), None);
        let fd = clone.as_raw_fd();
        drop(clone);
        assert_ne!(socket_id(fd), Some(id), "closed with its owner");
    }

    #[test]
    fn which_failures_are_transient() {
        for code in [
            libc::EMFILE,
            libc::ENFILE,
            libc::ENOBUFS,
            libc::ENOMEM,
            libc::ECONNABORTED,
        ] {
            assert!(
                !listener_unusable(&io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
        for code in [libc::EBADF, libc::ENOTSOCK, libc::EINVAL] {
            assert!(
                listener_unusable(&io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
        assert!(!listener_unusable(&io::Error::other("no code")));
    }

    #[test]
    fn panics_for_want_of_resources_are_recognised() {
        let emfile = format!(
            "called `Result::unwrap()` on an `Err` value: {:?}",
            io::Error::from_raw_os_error(libc::EMFILE)
        );
        assert!(short_of_resources(&emfile), "{emfile}");
        assert!(short_of_resources(
            "failed to spawn thread: Os { code: 11, kind: WouldBlock }"
        ));
        assert!(!short_of_resources("index out of bounds"));
        let eacces = format!("{:?}", io::Error::from_raw_os_error(libc::EACCES));
        assert!(!short_of_resources(&eacces));
    }
}
