//! vrrp-agent: the host agent of vrrp-monitor.
//!
//! It finds keepalived, takes readings through signals and dump files, turns differences
//! into activity events kept in a durable queue, and serves a small local web server.
//! See "The agent" in ARCHITECTURE.md for threads, channels and who owns what.
//!
//! By concern: [`keepalived`] (finding, signalling and parsing keepalived, its FIFO),
//! [`reader`] (the reader thread and change detection), [`store`] (the data
//! directory, the event queue and its persistence), [`connection`] (the session
//! with the server, inbound or outbound), [`registration`] (registering with a
//! server, the setup PIN), [`web`] (the local web server), [`actions`] (the server's
//! host actions: draining through keepalived's `track_file`); beside them start-up,
//! configuration, logging, the clock and fatal errors.

pub mod actions;
pub mod cli;
pub mod clock;
pub mod config;
pub mod connection;
pub mod fatal;
pub mod keepalived;
pub mod lifecycle;
pub mod logging;
pub mod reader;
pub mod register_once;
pub mod registration;
pub mod store;
pub mod web;
