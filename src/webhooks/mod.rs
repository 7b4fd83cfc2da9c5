//! Webhooks: templated deliveries of activity events to chat, paging and any
//! HTTP endpoint. The template language lives in [`template`]; the definitions
//! are held in memory, compiled when saved, by [`live`]; webhooks that
//! provisioning files define are kept in line with them by [`provisioned`].

pub mod delivery;
pub mod live;
pub mod provisioned;
pub mod ready;
pub mod store;
pub mod target;
pub mod template;
