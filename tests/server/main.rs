//! Integration tests of the server: the real binary on a free port, real HTTP.

mod harness;

mod agents;
mod auth;
mod backup;
mod config;
mod contract;
mod dashboard;
mod drills;
mod fault_causes;
mod first_sighting;
mod full_disk;
mod ha;
mod heartbeat;
mod history;
mod hostile;
mod hostile_input;
mod http;
mod import;
mod kill9;
mod metrics;
mod oidc;
mod outbound;
mod outbound_load;
mod package;
mod packages;
mod provisioning;
mod roles;
mod settings;
mod silences;
mod static_tarballs;
mod threads;
mod timing;
mod users;
mod webhooks;
