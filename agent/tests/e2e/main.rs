//! The agent's integration tests, one test binary: the real `vrrp-agent` (and the
//! real `vrrp-monitor` where a server is needed) on free ports, its dump parsers
//! against real keepalived dumps (`tests/fixtures/`), and, in the lab tier
//! (`--features test-lab`: root and real keepalived in `scripts/lab`'s network
//! namespaces), the agent beside real keepalived. What the tests share comes from
//! the `vrrp-test-support` crate.

// What the tests below share.
mod agent_process;
mod in_process;

// Needs nothing but the built binaries.
mod cli;
mod connection_clock;
mod connection_fingerprint;
mod fatal;
mod host_actions;
mod hostile_web;
mod inbound;
mod outbound;
mod outbound_clock;
mod outbound_server;
mod parse_fixtures;
mod parse_fixtures_newer;
mod two_servers;

// The lab tier: root and real keepalived.
mod demo;
mod demo_ha;
mod host_guide;
mod lab;
mod lab_agent_kill;
mod lab_ansible;
mod lab_clusters;
mod lab_drain;
mod lab_drill;
mod lab_fault_causes;
mod lab_full_disk;
mod lab_inbound;
mod lab_nonroot;
mod lab_outbound;
mod lab_partition;
mod lab_readiness;
