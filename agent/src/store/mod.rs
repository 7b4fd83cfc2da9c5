//! What the agent keeps on disk: the data directory and its files
//! ([`datadir`]), the activity queue's policy ([`queue`]) and the thread that
//! writes both ([`persist`]).

pub mod datadir;
pub mod persist;
pub mod queue;
