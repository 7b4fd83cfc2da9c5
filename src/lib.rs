//! vrrp-monitor, the control plane: watches keepalived (VRRP) fleets through host
//! agents. See ARCHITECTURE.md for the map.

pub mod app;
pub mod auth;
pub mod clock;
pub mod config;
pub mod db;
pub mod fsutil;
pub mod http;
pub mod lifecycle;
pub mod logging;
pub mod users;
