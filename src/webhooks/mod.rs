//! Webhooks: templated deliveries of activity events to chat, paging and any
//! HTTP endpoint. The template language lives in [`template`].

pub mod delivery;
pub mod ready;
pub mod store;
pub mod target;
pub mod template;
