//! Finding and inspecting our accepted sockets by descriptor.
//!
//! tiny_http hides its sockets: an upgraded stream has no descriptor to ask for,
//! and it keeps a second descriptor of every connection (its writer is a
//! `try_clone`). What we know is the peer's address, and that the kernel answers
//! `getpeername`/`getsockname` for any descriptor. The scans here skip the
//! descriptors the caller names as known (live upgraded sockets, their twins and
//! their wake-up descriptors): those are most of the process's descriptors under
//! load, and they cannot be the socket looked for while their owner lives, so a
//! lookup costs a system call per *unknown* descriptor, not per open one.

use nix::sys::socket::{getpeername, getsockname, SockaddrLike, SockaddrStorage};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// tiny_http holds every connection twice: its reader and a `try_clone` of it
/// for its writer.
pub const TINY_HTTP_DESCRIPTORS: usize = 2;

/// Descriptors opened since the last full scan are looked for up to this far
/// above the highest one seen.
const SLACK: RawFd = 512;

/// The descriptors of this process now (one `/proc/self/fd` read). Listing
/// needs a descriptor itself: with none left this fails (EMFILE).
pub fn open_descriptors() -> std::io::Result<Vec<RawFd>> {
    let dir = std::fs::read_dir("/proc/self/fd")?;
    Ok(dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .collect())
}

/// Every descriptor of our accepted socket from `peer` (tiny_http holds two),
/// skipping `known`; and every other accepted socket of `port` met on the way
/// (descriptor, peer), for the caller to remember. `high_water` is the highest
/// descriptor seen lately: the range up to it (plus [`SLACK`]) is probed
/// directly; only when that finds nothing is `/proc/self/fd` listed.
pub fn find(
    port: u16,
    peer: SocketAddr,
    known: &HashSet<RawFd>,
    high_water: RawFd,
) -> (Vec<RawFd>, Vec<(RawFd, SocketAddr)>) {
    let look = |fds: &mut dyn Iterator<Item = RawFd>| {
        let (mut found, mut others) = (Vec::new(), Vec::new());
        for fd in fds {
            if known.contains(&fd) {
                continue;
            }
            let Some(p) = getpeername::<SockaddrStorage>(fd)
                .ok()
                .and_then(|p| socket_addr(&p))
            else {
                continue;
            };
            if local_port(fd) != Some(port) {
                continue;
            }
            if p == peer {
                found.push(fd);
            } else {
                others.push((fd, p));
            }
        }
        (found, others)
    };
    let (found, others) = look(&mut (0..=high_water.saturating_add(SLACK)));
    // Both of tiny_http's descriptors, or the twin may lie above the range.
    if found.len() >= TINY_HTTP_DESCRIPTORS {
        return (found, others);
    }
    look(&mut open_descriptors().unwrap_or_default().into_iter())
}

/// The peer of `fd` when it is a connected socket whose local port is `port`.
pub fn peer_of(fd: RawFd, port: u16) -> Option<SocketAddr> {
    if local_port(fd)? != port {
        return None;
    }
    let peer: SockaddrStorage = getpeername(fd).ok()?;
    socket_addr(&peer)
}

fn local_port(fd: RawFd) -> Option<u16> {
    let local: SockaddrStorage = getsockname(fd).ok()?;
    Some(socket_addr(&local)?.port())
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

/// Bytes in a socket's receive queue.
pub fn unread_bytes(fd: RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer; a bad fd only errors.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    if rc == 0 {
        n.max(0) as usize
    } else {
        0
    }
}

/// What the kernel knows of a connection's received data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes the peer has sent since the connection opened.
    pub bytes: u64,
    /// Milliseconds since the peer last sent data.
    pub last_ms_ago: u64,
}

/// `TCP_INFO` of a socket: how much the peer sent and when it last sent.
pub fn received(fd: RawFd) -> Option<Received> {
    // SAFETY: tcp_info is plain old data; zeroes are a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info`; a bad fd only errors.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(Received {
        bytes: info.tcpi_bytes_received,
        last_ms_ago: u64::from(info.tcpi_last_data_recv),
    })
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

/// The threads of this process now (the `Threads:` line of `/proc/self/status`;
/// reading it needs a descriptor). Not `/proc/self/stat`: that one sums the CPU
/// time of every thread under a lock, which showed in the reaper's profile at
/// 10,000 threads.
pub fn thread_count() -> std::io::Result<usize> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:")?.trim().parse().ok())
        .ok_or_else(|| std::io::Error::other("no Threads: line in /proc/self/status"))
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

/// Takes an upgraded connection away from tiny_http and returns a descriptor of
/// our own for it. `theirs` are tiny_http's descriptors of the socket (its reader
/// and its writer).
///
/// Why: tiny_http shuts the socket down when its streams drop, and one of its
/// pool threads stays parked until the upgraded stream drops (dropping the
/// connection waits to be handed the reader back): a thread per WebSocket for
/// the socket's whole life, which at 5,000 agents doubled the threads. So the
/// socket gets a descriptor of ours, and tiny_http's descriptors are pointed at
/// `/dev/null` (`dup3` swaps them atomically): when the caller then drops the
/// upgraded stream, tiny_http shuts down and closes `/dev/null`, its thread goes
/// back to the pool, and the connection lives on in our descriptor alone.
/// Nothing of tiny_http's reads or writes those descriptors meanwhile: its
/// thread only waits for the stream.
pub fn detach(theirs: &[RawFd]) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let first = *theirs
        .first()
        .ok_or_else(|| std::io::Error::other("no descriptor to detach"))?;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    // SAFETY: F_DUPFD_CLOEXEC only creates a new descriptor.
    let own = unsafe { libc::fcntl(first, libc::F_DUPFD_CLOEXEC, 0) };
    if own < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `own` was just created and nothing else holds it.
    let own = unsafe { std::os::fd::OwnedFd::from_raw_fd(own) };
    for &fd in theirs {
        // SAFETY: `fd` is tiny_http's descriptor of this socket; replacing what it
        // refers to is the point, and no thread is using it (see above).
        if unsafe { libc::dup3(null.as_raw_fd(), fd, libc::O_CLOEXEC) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(own)
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
    fn counts_our_threads_and_knows_the_ceiling() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        // This test's thread and the one just started.
        assert!(thread_count().expect("/proc/self/status") >= 2);
        drop(tx);
        t.join().expect("join");
        assert!(thread_ceiling().is_some_and(|c| c > 100));
    }

    #[test]
    fn a_detached_connection_outlives_the_descriptors_it_was_taken_from() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        // What tiny_http holds: the accepted socket and a clone of it.
        let (reader, _) = listener.accept().expect("accept");
        let writer = reader.try_clone().expect("clone");
        let own = detach(&[reader.as_raw_fd(), writer.as_raw_fd()]).expect("detach");
        // What tiny_http does when its streams drop.
        let _ = reader.shutdown(std::net::Shutdown::Read);
        let _ = writer.shutdown(std::net::Shutdown::Write);
        drop((reader, writer));
        let mut ours = std::net::TcpStream::from(own);
        client.write_all(b"ping").expect("client writes");
        let mut got = [0u8; 4];
        ours.read_exact(&mut got).expect("we still read");
        assert_eq!(&got, b"ping");
        ours.write_all(b"pong").expect("we still write");
        client.read_exact(&mut got).expect("client reads");
        assert_eq!(&got, b"pong");
        // Without the detach, the same shutdowns end the connection.
        let mut client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (plain, _) = listener.accept().expect("accept");
        let mut twin = plain.try_clone().expect("clone");
        let _ = plain.shutdown(std::net::Shutdown::Write);
        assert_eq!(
            client.read(&mut got).expect("read"),
            0,
            "the peer sees an end"
        );
        assert!(twin.write_all(b"x").is_err() || twin.flush().is_err());
    }
}
