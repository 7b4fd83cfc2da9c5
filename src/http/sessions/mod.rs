//! The long-lived sockets: an inbound agent's (`/ws/agent`), a dashboard's
//! (`/ws/dashboard`), and the dialer that opens outbound agents' sockets. Each
//! runs on a thread of its own for the life of the socket.

pub mod agent;
pub mod agent_socket;
pub mod dashboard;
pub mod outbound;
