//! The transport: the listen socket's options and the worker pool that serves
//! requests ([`server`]), raw socket options ([`sockets`]), WebSocket upgrades
//! and framing ([`ws`]). Accepting, per-connection limits and idle reaping
//! belong to the vendored tiny_http (`tiny_http::conns`), where the sockets
//! are. Nothing here knows a route.

pub mod server;
pub(crate) mod sockets;
pub mod ws;
