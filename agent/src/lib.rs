//! vrrp-agent: the host agent of vrrp-monitor.
//!
//! It finds keepalived, takes readings through signals and dump files, turns differences
//! into activity events kept in a durable queue, and serves a small local web server.
//! See "The agent" in ARCHITECTURE.md for threads, channels and who owns what.

pub mod cli;
pub mod clock;
pub mod config;
pub mod connection;
pub mod datadir;
pub mod events;
pub mod fatal;
pub mod fifo;
pub mod keepalived;
pub mod lifecycle;
pub mod logging;
pub mod once;
pub mod outbound;
pub mod parse;
pub mod persist;
pub mod pin;
pub mod queue;
pub mod reader;
pub mod register;
pub mod serverapi;
pub mod web;
