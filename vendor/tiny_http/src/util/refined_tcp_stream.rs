use std::io::Result as IoResult;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};

use crate::connection::Connection;
#[cfg(feature = "ssl-rustls")]
use crate::ssl::SslStream;

pub(crate) enum Stream {
    Http(Connection),
    #[cfg(feature = "ssl-rustls")]
    Https(SslStream),
}

impl Stream {
    // vrrp-monitor patch: upstream's `Clone` unwrapped `try_clone`, so a process
    // out of descriptors panicked its accept thread; now that is an accept error.
    fn try_clone(&self) -> IoResult<Self> {
        Ok(match self {
            Stream::Http(tcp_stream) => Stream::Http(tcp_stream.try_clone()?),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => Stream::Https(ssl_stream.clone()),
        })
    }
}

impl From<Connection> for Stream {
    fn from(tcp_stream: Connection) -> Self {
        Stream::Http(tcp_stream)
    }
}

impl Stream {
    fn secure(&self) -> bool {
        match self {
            Stream::Http(_) => false,
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(_) => true,
        }
    }

    fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.peer_addr(),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.peer_addr(),
        }
    }

    fn shutdown(&mut self, how: Shutdown) -> IoResult<()> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.shutdown(how),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.shutdown(how),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.read(buf),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.write(buf),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.write(buf),
        }
    }

    fn flush(&mut self) -> IoResult<()> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.flush(),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.flush(),
        }
    }
}

pub struct RefinedTcpStream {
    stream: Stream,
    close_read: bool,
    close_write: bool,
    // vrrp-monitor patch: the reader half holds the connection's place in the
    // register (`crate::conns`), left before the descriptor closes; both halves
    // see whether the socket was handed over (then nothing shuts it down).
    registration: Option<crate::conns::Registration>,
    entry: Option<std::sync::Arc<crate::conns::Entry>>,
}

impl RefinedTcpStream {
    pub(crate) fn new<S>(stream: S) -> IoResult<(RefinedTcpStream, RefinedTcpStream)>
    where
        S: Into<Stream>,
    {
        let stream: Stream = stream.into();

        let (read, write) = (stream.try_clone()?, stream);

        let read = RefinedTcpStream {
            stream: read,
            close_read: true,
            close_write: false,
            registration: None,
            entry: None,
        };

        let write = RefinedTcpStream {
            stream: write,
            close_read: false,
            close_write: true,
            registration: None,
            entry: None,
        };

        Ok((read, write))
    }

    /// vrrp-monitor patch: the reader half takes the connection's registration,
    /// the writer half only looks at its entry.
    pub(crate) fn registered(mut self, r: crate::conns::Registration) -> Self {
        self.entry = Some(r.entry.clone());
        self.registration = Some(r);
        self
    }

    pub(crate) fn watched(mut self, e: std::sync::Arc<crate::conns::Entry>) -> Self {
        self.entry = Some(e);
        self
    }

    /// vrrp-monitor patch: bounds the socket's reads (both halves: one socket).
    /// Over TLS the stream is left as it is.
    // Without the TLS feature `Stream` has only the plain variant.
    #[allow(irrefutable_let_patterns)]
    pub(crate) fn set_read_timeout(&self, t: Option<std::time::Duration>) {
        if let Stream::Http(c) = &self.stream {
            let _ = c.set_read_timeout(t);
        }
    }

    pub(crate) fn secure(&self) -> bool {
        self.stream.secure()
    }

    pub(crate) fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        self.stream.peer_addr()
    }
}

impl Drop for RefinedTcpStream {
    fn drop(&mut self) {
        // vrrp-monitor patch: out of the register before the descriptor closes
        // (the reaper shuts down only registered sockets, under its lock).
        drop(self.registration.take());
        let handed_over = self
            .entry
            .as_ref()
            .is_some_and(|e| e.detached.load(std::sync::atomic::Ordering::Acquire));
        if handed_over {
            return;
        }
        if self.close_read {
            self.stream.shutdown(Shutdown::Read).ok();
        }

        if self.close_write {
            self.stream.shutdown(Shutdown::Write).ok();
        }
    }
}

impl Read for RefinedTcpStream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        self.stream.read(buf)
    }
}

impl Write for RefinedTcpStream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> IoResult<()> {
        self.stream.flush()
    }
}
