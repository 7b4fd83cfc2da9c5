//! vrrp-monitor, the control plane: watches keepalived (VRRP) fleets through host
//! agents. See ARCHITECTURE.md for the map.
//!
//! One folder per domain; only `http` knows tiny_http and tungstenite, and only
//! `http` and `app` (start-up) see the shared [`app::App`]. Long-lived threads are
//! handed the narrow handles they use.

pub mod activity;
pub mod agents;
pub mod app;
pub mod audit;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod clusters;
pub mod config;
pub mod db;
pub mod drills;
pub mod ha;
pub mod heartbeat;
pub mod http;
pub mod import;
pub mod lifecycle;
pub mod live;
pub mod logging;
pub mod metrics;
pub mod provisioning;
pub mod schedulers;
pub mod secrets;
pub mod webhooks;
