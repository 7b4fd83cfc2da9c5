use ascii::AsciiString;

use std::io::Error as IoError;
use std::io::Result as IoResult;
use std::io::{BufReader, BufWriter, ErrorKind, Read};

use std::net::SocketAddr;
use std::str::FromStr;

use crate::common::{HTTPVersion, Method};
use crate::util::RefinedTcpStream;
use crate::util::{SequentialReader, SequentialReaderBuilder, SequentialWriterBuilder};
use crate::Request;

/// A ClientConnection is an object that will store a socket to a client
/// and return Request objects.
pub struct ClientConnection {
    // address of the client
    remote_addr: IoResult<Option<SocketAddr>>,

    // sequence of Readers to the stream, so that the data is not read in
    //  the wrong order
    source: SequentialReaderBuilder<BufReader<RefinedTcpStream>>,

    // sequence of Writers to the stream, to avoid writing response #2 before
    //  response #1
    sink: SequentialWriterBuilder<BufWriter<RefinedTcpStream>>,

    // Reader to read the next header from
    next_header_source: SequentialReader<BufReader<RefinedTcpStream>>,

    // set to true if we know that the previous request is the last one
    no_more_requests: bool,

    // true if the connection goes through SSL
    secure: bool,

    // vrrp-monitor patch: how long a request's head may take from its first byte
    head_deadline: Option<std::time::Duration>,

    // vrrp-monitor patch: bodies up to this size are read before the request is
    // handed out (see `Request::prebuffer`); 0: not at all
    prebuffer: usize,

    // vrrp-monitor patch: the last request's body was left unread; before the
    // connection ends, discard what the client still sends (see `linger`)
    linger: bool,

    // vrrp-monitor patch: this connection's place in the register, told when a
    // head begins and when a request is handed out (see `crate::conns`)
    registered: Option<(
        std::sync::Arc<crate::conns::Connections>,
        std::sync::Arc<crate::conns::Entry>,
    )>,
}

/// vrrp-monitor patch: a lingering close. After answering a request whose body
/// it did not read (413), the server reads and discards at most this much, for
/// at most `LINGER_FOR`, before it closes: closing with the client's bytes
/// unread makes the kernel send a reset, and a client still writing its body
/// then never reads the answer (it sees "broken pipe" or "connection reset").
const LINGER_BYTES: usize = 4 * 1024 * 1024;
const LINGER_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// Error that can happen when reading a request.
#[derive(Debug)]
enum ReadError {
    WrongRequestLine,
    WrongHeader(HTTPVersion),
    /// the client sent an unrecognized `Expect` header
    ExpectationFailed(HTTPVersion),
    ReadIoError(IoError),
    /// vrrp-monitor patch: request line and headers beyond `MAX_HEAD` bytes
    HeadTooLarge,
}

/// Where a request's head stands while it arrives (vrrp-monitor patch).
struct HeadBudget {
    used: usize,
    started: Option<std::time::Instant>,
    deadline: Option<std::time::Duration>,
}

impl ClientConnection {
    /// Creates a new `ClientConnection` that takes ownership of the `TcpStream`.
    pub fn new(
        write_socket: RefinedTcpStream,
        mut read_socket: RefinedTcpStream,
    ) -> ClientConnection {
        let remote_addr = read_socket.peer_addr();
        let secure = read_socket.secure();

        let mut source = SequentialReaderBuilder::new(BufReader::with_capacity(1024, read_socket));
        let first_header = source.next().unwrap();

        ClientConnection {
            source,
            sink: SequentialWriterBuilder::new(BufWriter::with_capacity(1024, write_socket)),
            remote_addr,
            next_header_source: first_header,
            no_more_requests: false,
            secure,
            head_deadline: None,
            prebuffer: 0,
            linger: false,
            registered: None,
        }
    }

    /// vrrp-monitor patch: the connection's entry in the register.
    pub(crate) fn with_entry(
        mut self,
        conns: std::sync::Arc<crate::conns::Connections>,
        entry: std::sync::Arc<crate::conns::Entry>,
    ) -> Self {
        self.registered = Some((conns, entry));
        self
    }

    /// vrrp-monitor patch: the socket's read timeout, for the lingering close.
    /// Set through the write half: both halves are one socket, and its
    /// receive timeout is the socket's.
    fn bound_reads(&self, left: std::time::Duration) {
        let left = left.max(std::time::Duration::from_millis(1));
        self.sink.with_inner(|w| w.get_ref().set_read_timeout(Some(left)));
    }

    /// vrrp-monitor patch: close a connection whose request head takes longer.
    pub(crate) fn with_head_deadline(mut self, d: Option<std::time::Duration>) -> Self {
        self.head_deadline = d;
        self
    }

    /// vrrp-monitor patch: read bodies up to `limit` bytes before handing a request out.
    pub(crate) fn with_prebuffer(mut self, limit: usize) -> Self {
        self.prebuffer = limit;
        self
    }

    /// true if the connection is HTTPS
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// vrrp-monitor patch: reads and drops what follows the unread body, once
    /// the request's own reader is done (the sequence waits for it, so the
    /// answer is written by then), within `LINGER_BYTES` and `LINGER_FOR` (each
    /// read bounded by the time left).
    fn discard_rest(&mut self) {
        let until = std::time::Instant::now() + LINGER_FOR;
        let mut buf = [0u8; 8192];
        let mut left = LINGER_BYTES;
        while left > 0 && std::time::Instant::now() < until {
            // Each read gets only the time left: the socket's own read timeout
            // (the header timeout) would hold a silent client's connection open
            // far past LINGER_FOR.
            self.bound_reads(until.saturating_duration_since(std::time::Instant::now()));
            match self.next_header_source.read(&mut buf[..left.min(8192)]) {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n,
            }
        }
    }

    /// Reads the next line from self.next_header_source.
    ///
    /// Reads until `CRLF` is reached. The next read will start
    ///  at the first byte of the new line. vrrp-monitor patch: counts every byte
    ///  against the head's budget (size and deadline).
    fn read_next_line(&mut self, budget: &mut HeadBudget) -> Result<AsciiString, ReadError> {
        let mut buf = Vec::new();
        let mut prev_byte_was_cr = false;

        loop {
            let byte = self.next_header_source.by_ref().bytes().next();

            let byte = match byte {
                Some(b) => b.map_err(ReadError::ReadIoError)?,
                None => {
                    return Err(ReadError::ReadIoError(IoError::new(
                        ErrorKind::ConnectionAborted,
                        "Unexpected EOF",
                    )))
                }
            };
            let started = match budget.started {
                Some(t) => t,
                None => {
                    if let Some((conns, entry)) = &self.registered {
                        conns.head_begun(entry);
                    }
                    *budget.started.insert(std::time::Instant::now())
                }
            };
            budget.used += 1;
            if budget.used > crate::MAX_HEAD {
                return Err(ReadError::HeadTooLarge);
            }
            if let Some(d) = budget.deadline {
                if started.elapsed() > d {
                    return Err(ReadError::ReadIoError(IoError::new(
                        ErrorKind::TimedOut,
                        "request head took too long",
                    )));
                }
            }

            if byte == b'\n' && prev_byte_was_cr {
                buf.pop(); // removing the '\r'
                return AsciiString::from_ascii(buf).map_err(|_| {
                    ReadError::ReadIoError(IoError::new(
                        ErrorKind::InvalidInput,
                        "Header is not in ASCII",
                    ))
                });
            }

            prev_byte_was_cr = byte == b'\r';

            buf.push(byte);
        }
    }

    /// Reads a request from the stream.
    /// Blocks until the header has been read.
    fn read(&mut self) -> Result<Request, ReadError> {
        let mut budget = HeadBudget {
            used: 0,
            started: None,
            deadline: self.head_deadline,
        };
        let (method, path, version, headers) = {
            // reading the request line
            let (method, path, version) = {
                let line = self.read_next_line(&mut budget)?;

                parse_request_line(
                    line.as_str().trim(), // TODO: remove this conversion
                )?
            };

            // getting all headers
            let headers = {
                let mut headers = Vec::new();
                loop {
                    let line = self.read_next_line(&mut budget)?;

                    if line.is_empty() {
                        break;
                    };
                    headers.push(match FromStr::from_str(line.as_str().trim()) {
                        // TODO: remove this conversion
                        Ok(h) => h,
                        _ => return Err(ReadError::WrongHeader(version)),
                    });
                }

                headers
            };

            (method, path, version, headers)
        };

        // building the writer for the request
        let writer = self.sink.next().unwrap();

        // follow-up for next potential request
        let mut data_source = self.source.next().unwrap();
        std::mem::swap(&mut self.next_header_source, &mut data_source);

        // building the next reader
        let request = crate::request::new_request(
            self.secure,
            method,
            path,
            version.clone(),
            headers,
            *self.remote_addr.as_ref().unwrap(),
            data_source,
            writer,
            // vrrp-monitor patch: with bodies read ahead, an unread rest is never
            // drained (the connection ends instead)
            if self.prebuffer > 0 { 0 } else { 64 * 1024 },
        )
        .map_err(|e| {
            use crate::request;
            match e {
                request::RequestCreationError::CreationIoError(e) => ReadError::ReadIoError(e),
                request::RequestCreationError::ExpectationFailed => {
                    ReadError::ExpectationFailed(version)
                }
            }
        })?;

        // vrrp-monitor patch: busy from here until the request is answered
        let mut request = match &self.registered {
            Some((conns, entry)) => request.in_flight(conns.in_flight(entry)),
            None => request,
        };
        // vrrp-monitor patch: the body on this thread, within the head's deadline
        if self.prebuffer > 0 {
            let deadline = budget
                .started
                .zip(self.head_deadline)
                .map(|(start, d)| start + d);
            let complete = request
                .prebuffer(self.prebuffer, deadline)
                .map_err(ReadError::ReadIoError)?;
            if !complete {
                // The rest of this body is still on the socket: never parse
                // it as a request (smuggling), and never drain it unbounded.
                self.no_more_requests = true;
                self.linger = true;
                request.close_after();
            }
        }

        // return the request
        Ok(request)
    }
}

/// vrrp-monitor patch: the answers tiny_http writes itself (400, 408, 417, 431,
/// 505) carry the `Referrer-Policy` every answer of both binaries carries.
fn no_referrer() -> crate::Header {
    crate::Header::from_bytes(&b"Referrer-Policy"[..], &b"no-referrer"[..])
        .expect("a constant, valid header")
}

impl Iterator for ClientConnection {
    type Item = Request;

    /// Blocks until the next Request is available.
    /// Returns None when no new Requests will come from the client.
    fn next(&mut self) -> Option<Request> {
        use crate::{Response, StatusCode};

        // the client sent a "connection: close" header in this previous request
        //  or is using HTTP 1.0, meaning that no new request will come
        if self.no_more_requests {
            if std::mem::take(&mut self.linger) {
                self.discard_rest();
            }
            return None;
        }

        loop {
            let rq = match self.read() {
                Err(ReadError::WrongRequestLine) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(400))
                        .with_header(no_referrer())
                        .closing();
                    response
                        .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                        .ok();
                    return None; // we don't know where the next request would start,
                                 // se we have to close
                }

                Err(ReadError::WrongHeader(ver)) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(400))
                        .with_header(no_referrer())
                        .closing();
                    response.raw_print(writer, ver, &[], false, None).ok();
                    return None; // we don't know where the next request would start,
                                 // se we have to close
                }

                Err(ReadError::HeadTooLarge) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::from_string(
                        "{\"error\":\"request line and headers: at most 16 KiB\"}",
                    )
                    .with_status_code(StatusCode(431))
                    .with_header(
                        "Content-Type: application/json"
                            .parse::<crate::Header>()
                            .unwrap(),
                    )
                    .with_header(no_referrer())
                    .closing();
                    response
                        .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                        .ok();
                    return None; // the rest of the head is never read: close
                }

                Err(ReadError::ReadIoError(ref err)) if err.kind() == ErrorKind::TimedOut => {
                    // request timeout
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(408))
                        .with_header(no_referrer())
                        .closing();
                    response
                        .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                        .ok();
                    return None; // closing the connection
                }

                Err(ReadError::ExpectationFailed(ver)) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(417))
                        .with_header(no_referrer())
                        .closing();
                    response.raw_print(writer, ver, &[], true, None).ok();
                    return None; // TODO: should be recoverable, but needs handling in case of body
                }

                Err(ReadError::ReadIoError(_)) => return None,

                Ok(rq) => rq,
            };

            // checking HTTP version
            if *rq.http_version() > (1, 1) {
                // vrrp-monitor patch: upstream wrote the 505 through the next
                // writer while `rq` still held the previous one, and a writer
                // waits for the one before it: the connection's thread hung
                // forever on one `GET / HTTP/2.0` (found by the fuzz target).
                // Answer through the request's own writer, then close.
                let writer = rq.into_writer();
                let response = Response::from_string(
                    "This server only supports HTTP versions 1.0 and 1.1".to_owned(),
                )
                .with_status_code(StatusCode(505))
                .with_header(no_referrer())
                .closing();
                response
                    .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                    .ok();
                return None;
            }

            // updating the status of the connection
            let connection_header = rq
                .headers()
                .iter()
                .find(|h| h.field.equiv("Connection"))
                .map(|h| h.value.as_str());

            let lowercase = connection_header.map(|h| h.to_ascii_lowercase());

            match lowercase {
                Some(ref val) if val.contains("close") => self.no_more_requests = true,
                Some(ref val) if val.contains("upgrade") => self.no_more_requests = true,
                Some(ref val)
                    if !val.contains("keep-alive") && *rq.http_version() == HTTPVersion(1, 0) =>
                {
                    self.no_more_requests = true
                }
                None if *rq.http_version() == HTTPVersion(1, 0) => self.no_more_requests = true,
                _ => (),
            };

            // returning the request
            return Some(rq);
        }
    }
}

/// Parses a "HTTP/1.1" string.
fn parse_http_version(version: &str) -> Result<HTTPVersion, ReadError> {
    let (major, minor) = match version {
        "HTTP/0.9" => (0, 9),
        "HTTP/1.0" => (1, 0),
        "HTTP/1.1" => (1, 1),
        "HTTP/2.0" => (2, 0),
        "HTTP/3.0" => (3, 0),
        _ => return Err(ReadError::WrongRequestLine),
    };

    Ok(HTTPVersion(major, minor))
}

/// Parses the request line of the request.
/// eg. GET / HTTP/1.1
fn parse_request_line(line: &str) -> Result<(Method, String, HTTPVersion), ReadError> {
    let mut parts = line.split(' ');

    let method = parts.next().and_then(|w| w.parse().ok());
    let path = parts.next().map(ToOwned::to_owned);
    let version = parts.next().and_then(|w| parse_http_version(w).ok());

    method
        .and_then(|method| Some((method, path?, version?)))
        .ok_or(ReadError::WrongRequestLine)
}

#[cfg(test)]
mod test {
    #[test]
    fn test_parse_request_line() {
        let (method, path, ver) = super::parse_request_line("GET /hello HTTP/1.1").unwrap();

        assert!(method == crate::Method::Get);
        assert!(path == "/hello");
        assert!(ver == crate::common::HTTPVersion(1, 1));

        assert!(super::parse_request_line("GET /hello").is_err());
        assert!(super::parse_request_line("qsd qsd qsd").is_err());
    }
}

/// vrrp-monitor patch: runs a connection over `data` (through a Unix socket pair,
/// the same code path as a TCP connection) and reads each request's body as
/// its framing says. For the fuzz target and its replay test.
pub(crate) fn fuzz_parse(data: &[u8]) -> Vec<Result<(String, String, Vec<u8>), String>> {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let (ours, theirs) = match UnixStream::pair() {
        Ok(p) => p,
        Err(e) => return vec![Err(e.to_string())],
    };
    let data = data.to_vec();
    let peer = std::thread::spawn(move || {
        let mut theirs = theirs;
        let _ = theirs.write_all(&data);
        let _ = theirs.shutdown(std::net::Shutdown::Write);
        let mut answers = Vec::new();
        let _ = theirs.read_to_end(&mut answers);
    });
    let conn = crate::connection::Connection::from(ours);
    let (read, write) = match RefinedTcpStream::new(conn) {
        Ok(pair) => pair,
        Err(e) => return vec![Err(e.to_string())],
    };
    let client = ClientConnection::new(write, read).with_prebuffer(64 * 1024);
    let mut out = Vec::new();
    for mut rq in client {
        let mut body = Vec::new();
        // An upgrade's body is the rest of the socket: bounded here as the
        // servers bound theirs (they never read it).
        let r = rq.as_reader().take(2 * 1024 * 1024).read_to_end(&mut body);
        out.push(match r {
            Ok(_) => Ok((rq.method().to_string(), rq.url().to_owned(), body)),
            Err(e) => Err(e.to_string()),
        });
        let _ = rq.respond(crate::Response::empty(204));
        if out.len() > 1000 {
            break;
        }
    }
    let _ = peer.join();
    out
}
