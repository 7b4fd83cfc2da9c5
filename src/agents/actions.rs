//! Host actions asked of agents (drain, undrain): the request goes out over the
//! client's current session as HOST_ACTION, the caller waits for the agent's
//! HOST_ACTION_RESULT with that request's id, up to a deadline.
//!
//! An agent that does not know the kind (older than actions) never answers: the
//! deadline says so. An answer is taken only from the client that was asked, and
//! only once; a late one (after the deadline) is dropped.

use super::AgentRegistry;
use crate::live::{envelope_of, ToSocket};
use crossbeam_channel::{bounded, Sender};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;
use vrrp_protocol::{kind, HostAction, HostActionResult};

/// How long an agent gets to answer: a drain is one file write and a reading.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// Requests sent and not answered yet: request id → (client id, the waiter).
#[derive(Default)]
pub struct HostActions {
    waiting: Mutex<HashMap<String, (String, Sender<HostActionResult>)>>,
}

/// Why an action got no result.
#[derive(Debug, PartialEq)]
pub enum ActionError {
    /// The request breaks the rules both sides share (`HostAction::check`).
    Invalid(String),
    /// The client has no session now.
    Offline,
    /// No answer within the deadline (an agent without actions never answers).
    NoAnswer,
}

impl HostActions {
    /// Sends `action` to `client_id` and waits for its result.
    pub fn request(
        &self,
        agents: &AgentRegistry,
        client_id: &str,
        action: HostAction,
        within: Duration,
    ) -> Result<HostActionResult, ActionError> {
        action.check().map_err(ActionError::Invalid)?;
        let (tx, rx) = bounded(1);
        let id = action.id.clone();
        self.waiting
            .lock()
            .insert(id.clone(), (client_id.to_owned(), tx));
        let sent = agents.send(
            client_id,
            ToSocket::Text(envelope_of(kind::HOST_ACTION, &action)),
        );
        let result = if sent {
            rx.recv_timeout(within).map_err(|_| ActionError::NoAnswer)
        } else {
            Err(ActionError::Offline)
        };
        self.waiting.lock().remove(&id);
        result
    }

    /// An agent's HOST_ACTION_RESULT: handed to the waiter of that id when the
    /// same client was asked. Returns whether anyone was waiting.
    pub fn answered(&self, client_id: &str, result: HostActionResult) -> bool {
        let waiter = {
            let mut waiting = self.waiting.lock();
            match waiting.get(&result.id) {
                Some((asked, _)) if asked == client_id => waiting.remove(&result.id),
                _ => None,
            }
        };
        match waiter {
            Some((_, tx)) => tx.try_send(result).is_ok(),
            None => {
                log::debug!(
                    "Client {client_id} answered host action {:?}, which nobody waits for",
                    vrrp_protocol::escape_controls(&vrrp_protocol::actions::cut(&result.id, 64))
                );
                false
            }
        }
    }
}
