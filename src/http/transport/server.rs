//! The server's start: the listen socket's options, tiny_http with the limits
//! and idle policy every connection gets, and the `http-worker` pool that
//! answers requests. What a request means is not known here: the workers call
//! the function they are given.
//!
//! tiny_http (our copy, `vendor/tiny_http/VENDORED.md`) owns the connections:
//! its accept thread goes on after `accept` fails for want of descriptors or
//! threads, its register knows each connection's state, and its `http-reaper`
//! closes idle ones. This file only gives it the numbers.

use super::sockets;
use crate::lifecycle::{self, Shutdown};
use crossbeam_channel::{bounded, Receiver};
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
/// When the backlog runs out the kernel hands the connection over all the
/// same, and the first-request timeout applies from there.
const DEFER_ACCEPT_SECS: i32 = 30;
/// A request head must arrive within this of its first byte, and no read (a
/// stalled body included) blocks longer.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpServer {
    workers: Vec<JoinHandle<()>>,
    done: Receiver<()>,
    server: Arc<tiny_http::Server>,
}

/// The limits every connection gets (both binaries' web servers use the same
/// kind; see `vendor/tiny_http/VENDORED.md`).
pub fn limits() -> tiny_http::Limits {
    tiny_http::Limits {
        read_timeout: Some(HEADER_TIMEOUT),
        head_deadline: Some(HEADER_TIMEOUT),
        // Bodies are read before a worker sees the request: eight slow
        // senders cannot hold the eight workers.
        prebuffer_body: crate::http::request::MAX_BODY,
        // One policy for both binaries; its head timeout is HEADER_TIMEOUT.
        idle: Some(tiny_http::IdlePolicy::default()),
    }
}

/// Listens on `listener` and hands every request to `serve` on one of the
/// [`WORKERS`] threads, until `shutdown`.
pub fn start<S>(listener: TcpListener, shutdown: Shutdown, serve: S) -> std::io::Result<HttpServer>
where
    S: Fn(tiny_http::Request) + Clone + Send + 'static,
{
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
    observe_panics();
    let server = tiny_http::Server::from_listener_with_limits(listener, None, limits())
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let server = Arc::new(server);
    if let Some(limit) = descriptor_limit {
        server.connections().set_descriptor_limit(limit);
        log::debug!("Open descriptor limit: {limit}");
    }
    if let Some(ceiling) = sockets::thread_ceiling() {
        server.connections().set_thread_limit(ceiling);
        log::debug!("Thread ceiling: {ceiling}");
    }

    let (done_tx, done) = bounded(WORKERS);
    let mut workers = Vec::new();
    for i in 0..WORKERS {
        let (server, serve, shutdown, done_tx) = (
            server.clone(),
            serve.clone(),
            shutdown.clone(),
            done_tx.clone(),
        );
        workers.push(
            std::thread::Builder::new()
                .name(format!("http-worker-{i}"))
                .spawn(move || {
                    while !shutdown.is_set() {
                        match server.recv_timeout(Duration::from_millis(200)) {
                            Ok(Some(rq)) => serve(rq),
                            Ok(None) => {}
                            // Only an error that says the listen socket itself
                            // is unusable reaches us (the accept thread ended).
                            Err(e) => {
                                crate::fatal!("The HTTP listener failed: {e}");
                                shutdown.trigger();
                            }
                        }
                    }
                    let _ = done_tx.send(());
                })?,
        );
    }
    Ok(HttpServer {
        workers,
        done,
        server,
    })
}

/// tiny_http's threads carry kernel names only (`http-accept`, `http-conn`,
/// `http-reaper`). A panic in one ends that connection (its pool catches it)
/// or that accept step (the loop goes on): tiny_http keeps no state of ours,
/// so the process need not end.
fn observe_panics() {
    lifecycle::on_foreign_panic(Arc::new(|_tid, comm, message| {
        if !matches!(comm, "http-accept" | "http-conn" | "http-reaper") {
            return false;
        }
        log::error!("A tiny_http thread ({comm}) panicked: {message} (that connection ends)");
        true
    }));
}

impl HttpServer {
    /// Waits until no upgraded socket (agent or dashboard) is open, or
    /// `deadline`: at a stop they were told to close (1001) and need a moment
    /// to send their close frames.
    pub fn wait_sockets_closed(&self, deadline: Instant) -> bool {
        while self.server.connections().upgraded() > 0 {
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
