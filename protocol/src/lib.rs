//! Wire types shared by the server and the agent.
//!
//! Everything here is tolerant by construction: unknown fields are ignored, unknown
//! enum words are normalised, so that a server and an agent of different ages talk.
