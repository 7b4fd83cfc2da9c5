//! The REST API: the route table ([`routes`]) and one module of handlers per
//! domain, each validating its input and calling the domain; the dashboard's
//! embedded files and `/metrics` are served from here too.

pub mod activity;
pub mod agents;
pub mod api_tokens;
pub mod audit;
pub mod auth;
pub mod drains;
pub mod drills;
pub mod ha;
pub mod heartbeat;
pub mod history;
pub mod metrics;
pub mod provisioning;
pub mod routes;
pub mod settings;
pub mod silences;
pub mod static_files;
pub mod users;
pub mod validate;
pub mod webhooks;
