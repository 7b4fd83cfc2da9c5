//! WebSocket sockets: upgraded from tiny_http's requests, or dialled by us.
//!
//! At the upgrade tiny_http hands the socket over (`Request::upgrade_detached`,
//! our patch): a descriptor of our own, non-blocking, with the bytes it had read
//! past the request, and its connection thread free. One thread per socket
//! (ours) `poll`s it together with its [`Inbox`]'s wake-up descriptor, a
//! message for the socket goes out at once, a read never blocks, and a peer that
//! stops reading only fills our bounded write buffer until we drop it.
//!
//! [`run`] is the loop every session (agent, dashboard) runs; the session decides
//! what a message means, the loop does the heartbeat and the I/O.

use crate::clock::SharedClock;
use crate::live::{Inbox, ToSocket};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

/// A ping every 30 s; a socket whose previous pong never came is dropped.
pub const HEARTBEAT_SECS: i64 = 30;
/// Longest single wait on a driven clock (tests), so that it is looked at often
/// enough.
const MAX_WAIT: Duration = Duration::from_millis(500);
/// Longest single wait on the real clock: a socket thread sleeps until its peer,
/// its inbox (an eventfd) or its next deadline needs it. Waking every 500 ms
/// regardless was 10,000 wake-ups a second at 5,000 agents.
const MAX_WAIT_REAL: Duration = Duration::from_secs(5);
/// Largest frame of a message sent with [`WsSocket::send_text_waiting`]: well
/// under the 4 MiB write buffer, so a fragment always fits once it has drained.
pub const FRAGMENT: usize = 256 * 1024;

/// What a WebSocket runs over: the socket of an upgrade we answered (agents and
/// dashboards opened it) or a stream we dialled (outbound agents).
pub trait ReadWrite: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> ReadWrite for T {}

pub type Stream = Box<dyn ReadWrite + Send>;

/// Small buffers: a thousand agent sockets must cost little memory. The same
/// for sockets we accept and sockets we dial.
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        // Frames gather up to this much before a write; the loop flushes every
        // turn, so this only saves system calls, never delays a message.
        .write_buffer_size(16 * 1024)
        .max_write_buffer_size(4 * 1024 * 1024)
        .max_message_size(Some(4 * 1024 * 1024))
        .max_frame_size(Some(4 * 1024 * 1024))
}

/// A header of a request still in tiny_http's hands (an upgrade is answered before
/// it becomes a [`crate::http::request::Req`]).
pub fn header<'a>(rq: &'a tiny_http::Request, name: &str) -> Option<&'a str> {
    rq.headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// Whether a request asks for a WebSocket.
pub fn is_upgrade(rq: &tiny_http::Request) -> bool {
    let header = |name: &str| header(rq, name);
    header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        && header("connection").is_some_and(|v| v.to_ascii_lowercase().contains("upgrade"))
        && header("sec-websocket-key").is_some()
}

pub struct WsSocket {
    ws: WebSocket<Stream>,
    pub peer: SocketAddr,
    fd: RawFd,
    /// Frames are waiting in the write buffer for the socket to take them.
    pending: bool,
    /// An accepted socket counts in tiny_http's register while it lives (a stop
    /// waits for these to close).
    _counted: Option<tiny_http::Upgraded>,
}

/// What arrived from the peer.
#[derive(Debug, PartialEq)]
pub enum Received {
    Text(String),
    Pong,
    /// The peer closed, or the socket failed.
    Closed,
}

/// Completes the handshake; `None` when it cannot be. The socket leaves
/// tiny_http here: from now on it is ours alone and costs no tiny_http thread;
/// tiny_http counts it as upgraded until the [`WsSocket`] drops.
pub fn accept(rq: tiny_http::Request) -> Option<WsSocket> {
    let peer = *rq.remote_addr()?;
    let key = header(&rq, "sec-websocket-key")?.to_owned();
    let accept_key = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let response = tiny_http::Response::empty(101).with_header(
        tiny_http::Header::from_bytes(&b"Sec-WebSocket-Accept"[..], accept_key.as_bytes()).ok()?,
    );
    let upgraded = match rq.upgrade_detached("websocket", response) {
        Ok(u) => u,
        Err(e) => {
            log::error!("Cannot take over the WebSocket of {peer}: {e}");
            return None;
        }
    };
    let fd = upgraded.stream.as_raw_fd();
    if super::sockets::hung_up(fd) {
        // Gave up waiting (an agent's handshake timeout is 5 s): serving it
        // would only spend a thread on an AUTH window that never ends in AUTH.
        log::debug!("The WebSocket of {peer} hung up before its upgrade was answered");
        return None;
    }
    // Frames are small and latency matters more than packet count (the
    // listener's TCP_NODELAY is inherited; said again for the upgraded socket).
    let _ = upgraded.stream.set_nodelay(true);
    // A client may send its first frame before it has read our 101 (RFC 6455
    // says it must not, but nothing stops it): `early` goes to the WebSocket first.
    let stream: Stream = Box::new(upgraded.stream);
    Some(WsSocket {
        ws: WebSocket::from_partially_read(stream, upgraded.early, Role::Server, Some(ws_config())),
        peer,
        fd,
        pending: false,
        _counted: Some(upgraded.counted),
    })
}

/// The queue of a socket's session: messages for it, and the eventfd that
/// wakes its thread.
pub fn queue(capacity: usize) -> std::io::Result<(crate::live::Outbox<ToSocket>, Inbox<ToSocket>)> {
    crate::live::channel::<ToSocket>(capacity)
}

/// A socket we dialled whose handshake is done (outbound agents): from now on
/// non-blocking and polled like the sockets we accepted.
pub fn dialled(ws: WebSocket<Stream>, fd: RawFd, peer: SocketAddr) -> Result<WsSocket, String> {
    set_nonblocking(fd).map_err(|e| format!("cannot make the socket non-blocking: {e}"))?;
    Ok(WsSocket {
        ws,
        peer,
        fd,
        pending: false,
        _counted: None,
    })
}

fn set_nonblocking(fd: RawFd) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    // SAFETY: the descriptor belongs to the upgraded stream we hold for the socket's life.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let flags = OFlag::from_bits_truncate(fcntl(borrowed, FcntlArg::F_GETFL)?);
    fcntl(borrowed, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

fn would_block(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(io) if io.kind() == std::io::ErrorKind::WouldBlock)
}

/// The socket is gone.
#[derive(Debug)]
pub struct Gone;

impl WsSocket {
    /// Waits until the socket or the inbox (`wake`, its eventfd) has something,
    /// or `timeout`.
    fn wait(&self, wake: BorrowedFd<'_>, timeout: Duration) {
        // SAFETY: the descriptor is open for as long as `self` holds the stream.
        let sock = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let mut events = PollFlags::POLLIN;
        if self.pending {
            events |= PollFlags::POLLOUT;
        }
        let ms = timeout.as_millis().min(u16::MAX as u128) as u16;
        let _ = poll(
            &mut [
                PollFd::new(sock, events),
                PollFd::new(wake, PollFlags::POLLIN),
            ],
            PollTimeout::from(ms),
        );
    }

    /// The next message the peer sent, `None` when nothing more can be read now.
    fn read_one(&mut self) -> Option<Received> {
        loop {
            let read = self.ws.read();
            if read.is_ok() {
                // A ping read queues its pong in the write buffer: the loop's
                // next flush sends it.
                self.pending = true;
            }
            return match read {
                Ok(Message::Text(t)) => Some(Received::Text(t.as_str().to_owned())),
                Ok(Message::Pong(_)) => Some(Received::Pong),
                Ok(Message::Close(_)) => Some(Received::Closed),
                // Pings are answered by tungstenite on the next write or flush;
                // binary frames mean nothing here.
                Ok(_) => continue,
                Err(e) if would_block(&e) => None,
                Err(_) => Some(Received::Closed),
            };
        }
    }

    /// Everything the peer sent that can be read now.
    fn receive(&mut self) -> Vec<Received> {
        let mut out = Vec::new();
        while let Some(received) = self.read_one() {
            let closed = received == Received::Closed;
            out.push(received);
            if closed {
                break;
            }
        }
        out
    }

    /// Waits up to `timeout` for one message, before any session loop runs
    /// (the first AUTH of a new outbound client). `None`: nothing yet.
    pub fn receive_one(&mut self, timeout: Duration) -> Option<Received> {
        // SAFETY: the descriptor is open for as long as `self` holds the stream.
        let sock = unsafe { BorrowedFd::borrow_raw(self.fd) };
        let mut fds = [PollFd::new(sock, PollFlags::POLLIN)];
        let ms = timeout.as_millis().min(u16::MAX as u128) as u16;
        let _ = poll(&mut fds, PollTimeout::from(ms));
        self.read_one()
    }

    fn write(&mut self, msg: Message) -> Result<(), Gone> {
        match self.ws.write(msg) {
            Ok(()) => {}
            Err(e) if would_block(&e) => {}
            Err(tungstenite::Error::WriteBufferFull(_)) => {
                log::warn!(
                    "WebSocket of {} is not keeping up (write buffer full); dropping it",
                    self.peer
                );
                return Err(Gone);
            }
            Err(_) => return Err(Gone),
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Gone> {
        match self.ws.flush() {
            Ok(()) => {
                self.pending = false;
                Ok(())
            }
            Err(e) if would_block(&e) => {
                self.pending = true;
                Ok(())
            }
            Err(_) => Err(Gone),
        }
    }

    pub fn send_text(&mut self, text: &str) -> Result<(), Gone> {
        self.write(Message::text(text))?;
        self.flush()
    }

    /// Queues a message without flushing: the loop writes a turn's messages
    /// with one flush (a dashboard under 5,000 readings a second made a system
    /// call per reading).
    fn queue_text(&mut self, text: &str) -> Result<(), Gone> {
        self.write(Message::text(text))?;
        self.pending = true;
        Ok(())
    }

    /// Sends one text message of any size, waiting for the peer to take it
    /// instead of counting a full write buffer as "not keeping up": for the
    /// connect snapshot, whose activity list can be tens of MB while the write
    /// buffer holds 4 MiB. Above [`FRAGMENT`] bytes it goes out as fragments
    /// (one WebSocket message: continuation frames, RFC 6455 §5.4), so no frame
    /// exceeds the buffer. A peer that cannot take a buffer's worth within the
    /// heartbeat interval (by `clock`) is as gone as one that misses a pong.
    pub fn send_text_waiting(&mut self, text: &str, clock: &SharedClock) -> Result<(), Gone> {
        use tungstenite::protocol::frame::coding::{Data, OpCode};
        use tungstenite::protocol::frame::Frame;
        let mut start = 0;
        loop {
            let mut end = (start + FRAGMENT).min(text.len());
            // Fragments of a text message may split a character; ours do not,
            // so every frame is valid UTF-8 on its own.
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let opcode = OpCode::Data(if start == 0 {
                Data::Text
            } else {
                Data::Continue
            });
            let mut frame = Frame::message(
                text.as_bytes()[start..end].to_vec(),
                opcode,
                end == text.len(),
            );
            loop {
                match self.ws.write(Message::Frame(frame)) {
                    Ok(()) => break,
                    Err(e) if would_block(&e) => break, // queued; the socket takes it later
                    Err(tungstenite::Error::WriteBufferFull(back)) => match *back {
                        Message::Frame(f) => {
                            frame = f;
                            self.drain(clock)?;
                        }
                        _ => return Err(Gone),
                    },
                    Err(_) => return Err(Gone),
                }
            }
            if end == text.len() {
                break;
            }
            start = end;
        }
        self.flush()
    }

    /// Writes out the write buffer, waiting for the socket to accept it: until
    /// empty, or gone when the peer has not taken it all within the heartbeat
    /// interval (4 MiB in 30 s: a peer slower than that is not a dashboard).
    fn drain(&mut self, clock: &SharedClock) -> Result<(), Gone> {
        let deadline = clock.utc() + ChronoDuration::seconds(HEARTBEAT_SECS);
        loop {
            match self.ws.flush() {
                Ok(()) => {
                    self.pending = false;
                    return Ok(());
                }
                Err(e) if would_block(&e) => {}
                Err(_) => return Err(Gone),
            }
            if clock.utc() >= deadline {
                log::warn!(
                    "WebSocket of {} did not take a large message's next 4 MiB within {HEARTBEAT_SECS} s; dropping it",
                    self.peer
                );
                return Err(Gone);
            }
            // SAFETY: the descriptor is open for as long as `self` holds the stream.
            let sock = unsafe { BorrowedFd::borrow_raw(self.fd) };
            let mut fds = [PollFd::new(sock, PollFlags::POLLOUT)];
            let _ = poll(&mut fds, PollTimeout::from(MAX_WAIT.as_millis() as u16));
        }
    }

    fn ping(&mut self) -> Result<(), Gone> {
        self.write(Message::Ping(Vec::new().into()))?;
        self.flush()
    }

    /// Sends a close frame (best effort) and ends the socket.
    pub fn close(mut self, code: u16, reason: &str) {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: reason.to_owned().into(),
        };
        let _ = self.ws.close(Some(frame));
        // Give the close frame a moment to leave a slow socket.
        for _ in 0..20 {
            match self.ws.flush() {
                Err(e) if would_block(&e) => std::thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
    }
}

/// The ping/pong heartbeat, without I/O.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    next_ping: DateTime<Utc>,
    awaiting_pong: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Beat {
    Nothing,
    Ping,
    Dead,
}

impl Heartbeat {
    pub fn new(now: DateTime<Utc>) -> Self {
        Heartbeat {
            next_ping: now + ChronoDuration::seconds(HEARTBEAT_SECS),
            awaiting_pong: false,
        }
    }

    pub fn tick(&mut self, now: DateTime<Utc>) -> Beat {
        if now < self.next_ping {
            return Beat::Nothing;
        }
        if self.awaiting_pong {
            return Beat::Dead;
        }
        self.awaiting_pong = true;
        self.next_ping = now + ChronoDuration::seconds(HEARTBEAT_SECS);
        Beat::Ping
    }

    pub fn pong(&mut self) {
        self.awaiting_pong = false;
    }

    pub fn next_at(&self) -> DateTime<Utc> {
        self.next_ping
    }
}

/// What a session wants after handling something.
pub enum Flow {
    Continue,
    /// Close with this code and reason.
    Close(u16, &'static str),
    /// The socket is gone or done; nothing more to send.
    End,
}

/// The part of a socket's life that differs between agents and dashboards.
pub trait Session {
    fn on_text(&mut self, socket: &mut WsSocket, text: String) -> Flow;
    /// Called on every turn of the loop with the current time (e.g. the AUTH window).
    fn on_time(&mut self, _now: DateTime<Utc>) -> Flow {
        Flow::Continue
    }
    /// When `on_time` next needs to run.
    fn deadline(&self) -> Option<DateTime<Utc>> {
        None
    }
}

/// Runs a socket until it ends: heartbeat, inbox, the peer's messages.
pub fn run(
    mut socket: WsSocket,
    inbox: &Inbox<ToSocket>,
    clock: &SharedClock,
    session: &mut dyn Session,
) {
    let mut heartbeat = Heartbeat::new(clock.utc());
    let close = |socket: WsSocket, code, reason| socket.close(code, reason);
    loop {
        // Messages first: tungstenite may hold bytes the socket no longer shows.
        for received in socket.receive() {
            let flow = match received {
                Received::Text(text) => session.on_text(&mut socket, text),
                Received::Pong => {
                    heartbeat.pong();
                    Flow::Continue
                }
                Received::Closed => Flow::End,
            };
            match flow {
                Flow::Continue => {}
                Flow::Close(code, reason) => return close(socket, code, reason),
                Flow::End => return,
            }
        }
        match inbox.drain() {
            None => return close(socket, 1001, "Server shutting down"),
            Some(messages) => {
                for m in messages {
                    match m {
                        ToSocket::Text(text) => {
                            if socket.queue_text(&text).is_err() {
                                return;
                            }
                        }
                        ToSocket::Latest(slot) => {
                            let newest = slot.lock().take();
                            if let Some(text) = newest {
                                if socket.queue_text(&text).is_err() {
                                    return;
                                }
                            }
                        }
                        ToSocket::Close(code, reason) => return close(socket, code, reason),
                    }
                }
            }
        }
        if socket.pending && socket.flush().is_err() {
            return;
        }
        let now = clock.utc();
        match heartbeat.tick(now) {
            Beat::Nothing => {}
            Beat::Ping => {
                if socket.ping().is_err() {
                    return;
                }
            }
            Beat::Dead => {
                log::info!(
                    "WebSocket of {} missed its pong; terminating it",
                    socket.peer
                );
                return;
            }
        }
        match session.on_time(now) {
            Flow::Continue => {}
            Flow::Close(code, reason) => return close(socket, code, reason),
            Flow::End => return,
        }
        let next = session
            .deadline()
            .map_or(heartbeat.next_at(), |d| d.min(heartbeat.next_at()));
        let cap = if clock.is_driven() {
            MAX_WAIT
        } else {
            MAX_WAIT_REAL
        };
        let until = (next - now).to_std().unwrap_or_default().min(cap);
        socket.wait(inbox.wake_fd(), until.max(Duration::from_millis(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn heartbeat_pings_every_30_s_and_declares_a_silent_peer_dead() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap();
        let mut hb = Heartbeat::new(t0);
        assert_eq!(hb.tick(t0 + ChronoDuration::seconds(29)), Beat::Nothing);
        assert_eq!(hb.tick(t0 + ChronoDuration::seconds(30)), Beat::Ping);
        hb.pong();
        assert_eq!(hb.tick(t0 + ChronoDuration::seconds(59)), Beat::Nothing);
        assert_eq!(hb.tick(t0 + ChronoDuration::seconds(60)), Beat::Ping);
        assert_eq!(
            hb.tick(t0 + ChronoDuration::seconds(90)),
            Beat::Dead,
            "no pong since the last ping"
        );
    }
}
