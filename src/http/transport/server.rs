//! The server's start: the listen socket's options, the `http-worker` pool that
//! answers requests, and the `http-reaper` that closes idle connections and
//! names tiny_http's threads. What a request means is not known
//! here: the workers call the function they are given.

use super::conns::{self, ConnTracker, IdlePolicy, Reaped};
use super::{listen, sockets};
use crate::lifecycle::Shutdown;
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};
use std::net::TcpListener;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads answering requests. Handlers are short (the slowest is an Argon2 hash,
/// ~15 ms of CPU), so a few per core keep both cores busy.
const WORKERS: usize = 8;
/// The listen backlog (the kernel caps it at `net.core.somaxconn`): a fleet
/// reconnecting after a restart arrives faster than one accept thread takes it.
const BACKLOG: i32 = 4096;
/// How long the kernel keeps a new connection to itself until its first bytes
/// arrive (TCP_DEFER_ACCEPT, rounded up by Linux to its SYN-ACK retransmission
/// steps: 1 + 2 + 4 + 8 + 16 s). Every HTTP client speaks first, so a request
/// is accepted the moment it arrives; a connection that says nothing costs a
/// kernel request socket instead of tiny_http's thread and two descriptors.
/// 10,000 such connections were the limit of this design; with the
/// deferral up to the backlog's worth of them never reach us. When it runs
/// out the kernel hands the connection over all the same, and the reaper's
/// first-request timeout applies from there.
const DEFER_ACCEPT_SECS: i32 = 30;
/// How often the reaper looks at the connections: a slowloris is closed a tick
/// past its timeout. Longer when a look is costly ([`reap_tick_after`]).
const REAP_TICK: Duration = Duration::from_millis(100);

/// The reaper's next tick after a pass that took `spent` and saw `reaped`: at
/// most a twentieth of a core while all is calm. A pass lists every descriptor;
/// at 5,000 agents that is 6,000 entries of `/proc/self/fd`, and ten passes a
/// second took a tenth of the server's CPU. Under pressure (many idle
/// connections, a limit near) it stays at [`REAP_TICK`]:
/// closing is what frees room, and backing off there doubled health's p99 with
/// 10,000 idle connections (`scripts/bench-hostile.sh`).
fn reap_tick_after(spent: Duration, reaped: &Reaped, policy: &IdlePolicy) -> Duration {
    let pressed = reaped.without_request > policy.pressure_above
        || reaped.descriptor_pressure
        || reaped.thread_pressure;
    if pressed {
        REAP_TICK
    } else {
        REAP_TICK.max(spent * 20)
    }
}
/// At most one "near the descriptor limit" warning this often.
const PRESSURE_WARN_EVERY: Duration = Duration::from_secs(60);
/// How often tiny_http's new threads are renamed.
const NAMING_EVERY: Duration = Duration::from_secs(1);

pub struct HttpServer {
    workers: Vec<JoinHandle<()>>,
    done: Receiver<()>,
    tracker: Arc<ConnTracker>,
}

/// Listens on `listener` and hands every request to `serve` on one of the
/// [`WORKERS`] threads, until `shutdown`; a reaper thread closes idle
/// connections and names tiny_http's threads.
pub fn start<S>(listener: TcpListener, shutdown: Shutdown, serve: S) -> std::io::Result<HttpServer>
where
    S: Fn(tiny_http::Request, &Arc<ConnTracker>) + Clone + Send + 'static,
{
    let local = listener.local_addr()?;
    let port = local.port();
    {
        use std::os::fd::AsRawFd;
        if let Err(e) = sockets::set_backlog(listener.as_raw_fd(), BACKLOG) {
            log::warn!("Cannot raise the listen backlog to {BACKLOG}: {e}");
        }
        if let Err(e) = sockets::set_defer_accept(listener.as_raw_fd(), DEFER_ACCEPT_SECS) {
            log::warn!("Cannot have the kernel hold HTTP connections until their first bytes: {e}");
        }
        if let Err(e) = sockets::set_nodelay(listener.as_raw_fd()) {
            log::warn!("Cannot turn Nagle's algorithm off for HTTP connections: {e}");
        }
    }
    let descriptor_limit = sockets::raise_descriptor_limit();
    let tracker = Arc::new(ConnTracker::new(port));
    if let Some(limit) = descriptor_limit {
        tracker.set_descriptor_limit(limit);
        log::debug!("Open descriptor limit: {limit}");
    }
    if let Some(ceiling) = sockets::thread_ceiling() {
        tracker.set_thread_limit(ceiling);
        log::debug!("Thread ceiling: {ceiling}");
    }
    let listening = listen::start(listener, tracker.clone(), shutdown.clone())?;
    let accept_tid = listening.accept_tid;

    let (done_tx, done) = bounded(WORKERS);
    let mut workers = Vec::new();
    for i in 0..WORKERS {
        let (requests, serve, tracker, shutdown, done_tx) = (
            listening.requests.clone(),
            serve.clone(),
            tracker.clone(),
            shutdown.clone(),
            done_tx.clone(),
        );
        workers.push(
            std::thread::Builder::new()
                .name(format!("http-worker-{i}"))
                .spawn(move || {
                    while !shutdown.is_set() {
                        match requests.recv_timeout(Duration::from_millis(200)) {
                            Ok(rq) => serve(rq, &tracker),
                            Err(RecvTimeoutError::Timeout) => {}
                            // Every pump is gone: only at shutdown.
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                    let _ = done_tx.send(());
                })?,
        );
    }

    let reaper_shutdown = shutdown.clone();
    let ours = tracker.clone();
    std::thread::Builder::new()
        .name("http-reaper".into())
        .spawn(move || {
            let policy = IdlePolicy::default();
            let mut pressed = false;
            let mut short_of_descriptors = false;
            let mut pressure_warned: Option<Instant> = None;
            let mut named = std::collections::HashSet::new();
            let mut last_naming = Instant::now() - NAMING_EVERY;
            let mut tick = REAP_TICK;
            while !reaper_shutdown.wait_timeout(tick) {
                let started = Instant::now();
                let reaped = tracker.reap(&policy);
                let idle = reaped.without_request;
                if idle > policy.pressure_above && !pressed {
                    log::warn!(
                        "{idle} HTTP connections without a request: closing idle ones after {:?}",
                        policy.pressed
                    );
                }
                pressed = idle > policy.pressure_above;
                let near_a_limit = reaped.descriptor_pressure || reaped.thread_pressure;
                if near_a_limit && !short_of_descriptors {
                    // Running out comes in bursts (closing frees room, the backlog
                    // fills it again): one warning a minute says it.
                    if pressure_warned.is_none_or(|t: Instant| t.elapsed() >= PRESSURE_WARN_EVERY) {
                        log::warn!(
                            "{} descriptors and {} threads open, near a limit: closing idle HTTP connections at once",
                            reaped.descriptors,
                            reaped.threads
                        );
                        pressure_warned = Some(Instant::now());
                    } else {
                        log::debug!(
                            "{} descriptors and {} threads open, near a limit again",
                            reaped.descriptors,
                            reaped.threads
                        );
                    }
                }
                short_of_descriptors = near_a_limit;
                if reaped.closed > 0 {
                    log::debug!("Closed {} idle HTTP connections", reaped.closed);
                }
                let tid = accept_tid.load(std::sync::atomic::Ordering::Relaxed);
                if last_naming.elapsed() >= NAMING_EVERY && tid != listen::TID_LOOKING {
                    conns::name_inherited_threads((tid > 0).then_some(tid), &mut named);
                    last_naming = Instant::now();
                }
                tick = reap_tick_after(started.elapsed(), &reaped, &policy);
            }
        })?;
    Ok(HttpServer {
        workers,
        done,
        tracker: ours,
    })
}

impl HttpServer {
    /// Waits until no upgraded socket (agent or dashboard) is open, or
    /// `deadline`: at a stop they were told to close (1001) and need a moment
    /// to send their close frames.
    pub fn wait_sockets_closed(&self, deadline: Instant) -> bool {
        while self.tracker.upgraded_open() > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Waits up to `grace` for the workers to finish the requests they hold.
    pub fn drain(self, grace: Duration) -> bool {
        let deadline = Instant::now() + grace;
        let mut finished = 0;
        while finished < self.workers.len() {
            match self.done.recv_deadline(deadline) {
                Ok(()) => finished += 1,
                Err(_) => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costly_reaper_pass_spaces_the_next_one_out_unless_pressed() {
        let policy = IdlePolicy::default();
        let calm = Reaped::default();
        assert_eq!(
            reap_tick_after(Duration::from_millis(1), &calm, &policy),
            REAP_TICK
        );
        let costly = Duration::from_millis(15);
        assert_eq!(
            reap_tick_after(costly, &calm, &policy),
            Duration::from_millis(300)
        );
        for pressed in [
            Reaped {
                without_request: policy.pressure_above + 1,
                ..calm
            },
            Reaped {
                descriptor_pressure: true,
                ..calm
            },
            Reaped {
                thread_pressure: true,
                ..calm
            },
        ] {
            assert_eq!(reap_tick_after(costly, &pressed, &policy), REAP_TICK);
        }
    }
}
