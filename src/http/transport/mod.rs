//! The transport: the listen socket and its accept generations ([`listen`]),
//! the connections tiny_http holds and the reaper's rules ([`conns`]), raw
//! socket options ([`sockets`]), WebSocket upgrades and framing ([`ws`]), and
//! the worker pool that serves requests ([`server`]). Nothing here knows a route.

pub mod conns;
pub mod listen;
pub mod server;
pub(crate) mod sockets;
pub mod ws;
