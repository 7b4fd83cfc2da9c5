//! Raw socket and process facts the transport needs: listen socket options,
//! the descriptor limit, the thread ceiling, whether a peer hung up.

use std::os::fd::RawFd;

/// Whether the peer has closed its side of the connection (a client that gave up).
pub fn hung_up(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, zero timeout; a closed descriptor only reports POLLNVAL.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// The soft and hard limits on open descriptors.
pub fn descriptor_limit() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through the pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (rc == 0).then_some((lim.rlim_cur, lim.rlim_max))
}

/// Memory mappings a thread costs: its stack and guard page, and the signal
/// stack std gives every thread and its guard page (measured: 400 connection
/// threads added 1,600 mappings).
const MAPS_PER_THREAD: u64 = 4;

/// How many threads this process can have before creating one fails. Past it a
/// new thread's start-up (std's signal stack) panics where it cannot unwind, and
/// the process aborts: what bounds the connection threads is mostly
/// `vm.max_map_count` (65,530 by default: about 16,000 threads), then
/// `kernel.threads-max`.
pub fn thread_ceiling() -> Option<u64> {
    let read =
        |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let maps = read("/proc/sys/vm/max_map_count").map(|m| m / MAPS_PER_THREAD);
    let threads = read("/proc/sys/kernel/threads-max");
    match (maps, threads) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Raises the soft descriptor limit to the hard one: every connection costs
/// descriptors (tiny_http keeps two per socket), and running out of them stops
/// tiny_http's accept thread for good. Returns the limit now in force.
pub fn raise_descriptor_limit() -> Option<u64> {
    let (soft, hard) = descriptor_limit()?;
    if soft < hard {
        let lim = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads one rlimit through the pointer.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == 0 {
            return Some(hard);
        }
    }
    Some(soft)
}

/// Sets the listening socket's accept queue: a fleet reconnecting at once must
/// wait in the queue, not have its SYNs dropped (std listens with 128).
pub fn set_backlog(fd: RawFd, backlog: i32) -> std::io::Result<()> {
    // SAFETY: listen on a listening socket only changes its backlog.
    if unsafe { libc::listen(fd, backlog) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Turns Nagle's algorithm off on the listening socket; Linux hands the setting
/// on to every connection accepted from it, which tiny_http gives us no hook to
/// set. Without it an answer written in more than one piece (head, then body
/// chunks) and a WebSocket frame after another wait for the peer's delayed ACK:
/// up to 40 ms each.
pub fn set_nodelay(fd: RawFd) -> std::io::Result<()> {
    set_tcp_int(fd, libc::TCP_NODELAY, 1)
}

/// Has the kernel hold a new connection until its first bytes arrive, for at
/// most about `seconds` (TCP_DEFER_ACCEPT): `accept` does not return it before.
/// A connection the kernel holds is a request socket, with no descriptor here.
pub fn set_defer_accept(fd: RawFd, seconds: i32) -> std::io::Result<()> {
    set_tcp_int(fd, libc::TCP_DEFER_ACCEPT, seconds)
}

/// Sets a TCP-level socket option whose value is an int.
fn set_tcp_int(fd: RawFd, option: libc::c_int, value: libc::c_int) -> std::io::Result<()> {
    // SAFETY: both options set here take an int; `value` outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_accepted_from_a_nodelay_listener_have_nagle_off() {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        set_nodelay(listener.as_raw_fd()).expect("setsockopt");
        let addr = listener.local_addr().expect("addr");
        let _client = std::net::TcpStream::connect(addr).expect("connect");
        let (accepted, _) = listener.accept().expect("accept");
        // What this module relies on: the kernel copies the option to the
        // accepted socket.
        assert!(accepted.nodelay().expect("getsockopt"));
        let plain = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let _c = std::net::TcpStream::connect(plain.local_addr().expect("addr")).expect("connect");
        let (a, _) = plain.accept().expect("accept");
        assert!(!a.nodelay().expect("getsockopt"), "off unless asked for");
    }

    #[test]
    fn a_deferring_listener_hands_over_a_connection_only_once_it_speaks() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        set_defer_accept(listener.as_raw_fd(), 30).expect("setsockopt");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        // Established for the client, the handshake done.
        let mut quiet = std::net::TcpStream::connect(addr).expect("connect");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let early = listener.accept();
        assert!(
            early
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
            "a silent connection was handed over: {early:?}"
        );
        quiet.write_all(b"GET / HTTP/1.1\r\n").expect("write");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match listener.accept() {
                Ok((_, peer)) => {
                    assert_eq!(peer, quiet.local_addr().expect("addr"));
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(std::time::Instant::now() < deadline, "never handed over");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
    }

    #[test]
    fn knows_the_thread_ceiling() {
        assert!(thread_ceiling().is_some_and(|c| c > 100));
    }
}
