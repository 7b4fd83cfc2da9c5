//! vrrp-monitor, the control plane: watches keepalived (VRRP) fleets through host
//! agents. See ARCHITECTURE.md for the map.

pub mod activity;
pub mod app;
pub mod auth;
pub mod clients;
pub mod clock;
pub mod cluster_eval;
pub mod clusters;
pub mod config;
pub mod db;
pub mod evaluation;
pub mod evaluator;
pub mod http;
pub mod lifecycle;
pub mod live;
pub mod logging;
pub mod messages;
pub mod readings;
pub mod registration;
pub mod schedulers;
pub mod secrets;
pub mod settings;
pub mod users;
pub mod webhooks;
