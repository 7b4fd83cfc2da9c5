//! Agents as the server knows them: stored client records ([`clients`]), how an
//! inbound agent gets its identity ([`registration`]), the last reading of each
//! ([`readings`]) and which agents are connected now ([`registry`]).
//!
//! The sockets themselves are served by `http::sessions::agent`; everything an agent
//! session decides lives here, so that both connection directions share it.

pub mod actions;
pub mod clients;
pub mod feed;
pub mod outbound;
pub mod readings;
pub mod registration;
pub mod registry;
pub mod session;

pub use registry::AgentRegistry;
