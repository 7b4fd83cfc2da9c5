//! Host actions: what a server may ask an agent to do on its host, and the drain
//! state a reading carries.
//!
//! The only action there is: drain a host through keepalived's own `track_file`
//! (the agent writes `1` into the one file its config names, keepalived lowers the
//! instances' priority by the tracked weight, a backup takes over) and undrain it
//! (`0`). HOST_ACTION carries the request ([`HostAction`]), HOST_ACTION_RESULT the
//! answer ([`HostActionResult`]); every reading of an agent with actions enabled
//! carries [`DrainState`] as `drain`.
//!
//! The text rules of a request ([`HostAction::check`]) live here so that the server
//! can apply the very rules the agent applies before it sends anything.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::lenient;

/// `action` of a drain request.
pub const DRAIN: &str = "drain";
/// `action` of an undrain request.
pub const UNDRAIN: &str = "undrain";

/// Longest `reason` (and `by`), in characters.
pub const MAX_REASON_CHARS: usize = 200;
/// Longest request `id`, in characters.
pub const MAX_ID_CHARS: usize = 128;

/// The refusal of an agent whose config names no drain file, exactly.
pub const ACTIONS_DISABLED: &str =
    "actions are disabled on this host; set actions.drainFile (see the host guide)";

/// The reason reported for a drain the agent did not make (the file says non-zero
/// and the agent holds no drain of its own for it).
pub const OUTSIDE_REASON: &str = "drained outside vrrp-monitor";

/// Payload of the server's HOST_ACTION.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostAction {
    /// The server's request id, echoed in the result.
    pub id: String,
    /// [`DRAIN`] or [`UNDRAIN`]; any other word is answered with an error.
    pub action: String,
    /// Why (shown with the drain); at most [`MAX_REASON_CHARS`], no control characters.
    pub reason: String,
    /// Who asked (a user name); the same rules as `reason`, and not empty.
    pub by: String,
}

/// What a [`HostAction`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostActionKind {
    Drain,
    Undrain,
}

impl HostAction {
    /// The action asked for; `None` for a word this build does not know.
    pub fn kind(&self) -> Option<HostActionKind> {
        match self.action.as_str() {
            DRAIN => Some(HostActionKind::Drain),
            UNDRAIN => Some(HostActionKind::Undrain),
            _ => None,
        }
    }

    /// The rules a request must meet, as one sentence naming the field that breaks
    /// them: a known action, `reason` and `by` at most [`MAX_REASON_CHARS`] characters
    /// without control characters, `by` not empty.
    pub fn check(&self) -> Result<HostActionKind, String> {
        let kind = self.kind().ok_or_else(|| {
            format!(
                "unknown action {:?}; this agent knows \"{DRAIN}\" and \"{UNDRAIN}\"",
                crate::escape_controls(&cut(&self.action, 40))
            )
        })?;
        check_text("reason", &self.reason)?;
        check_text("by", &self.by)?;
        if self.by.trim().is_empty() {
            return Err("by: must name who asked".into());
        }
        Ok(kind)
    }
}

/// A request id the agent can answer to: a string of 1 to [`MAX_ID_CHARS`]
/// characters without control characters. `None`: the payload has none, and there
/// is nothing to answer.
pub fn request_id(payload: &Value) -> Option<&str> {
    let id = payload.get("id")?.as_str()?;
    let fits =
        !id.is_empty() && id.chars().count() <= MAX_ID_CHARS && !id.chars().any(char::is_control);
    fits.then_some(id)
}

fn check_text(field: &str, text: &str) -> Result<(), String> {
    if text.chars().count() > MAX_REASON_CHARS {
        return Err(format!(
            "{field}: longer than {MAX_REASON_CHARS} characters"
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(format!("{field}: holds a control character"));
    }
    Ok(())
}

/// `text` cut to at most `max` characters.
pub fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Payload of the agent's HOST_ACTION_RESULT.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostActionResult {
    /// The request's `id`.
    pub id: String,
    /// The host is now in the state asked for.
    pub ok: bool,
    /// Why not (`ok` false), or what went wrong although it is (`ok` true: the
    /// drain's reason could not be kept); null when everything worked.
    pub error: Option<String>,
    /// The drain as read back after the action (all false and null when actions
    /// are disabled).
    pub drain: DrainState,
}

/// Whether the host is drained, as the drain file says, with the drain's story.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DrainState {
    /// The drain file holds a number other than 0.
    #[serde(deserialize_with = "lenient")]
    pub drained: bool,
    /// The drain's reason; null when not drained.
    #[serde(deserialize_with = "lenient")]
    pub reason: Option<String>,
    /// Who drained it; null when not drained or drained outside vrrp-monitor.
    #[serde(deserialize_with = "lenient")]
    pub by: Option<String>,
    /// Since when, ISO 8601 UTC with milliseconds; null when not drained.
    #[serde(deserialize_with = "lenient")]
    pub since: Option<String>,
    /// Fields this build does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action(action: &str, reason: &str, by: &str) -> HostAction {
        HostAction {
            id: "r1".into(),
            action: action.into(),
            reason: reason.into(),
            by: by.into(),
        }
    }

    #[test]
    fn the_text_rules_name_the_field() {
        assert_eq!(
            action("drain", "kernel update", "alice").check(),
            Ok(HostActionKind::Drain)
        );
        assert_eq!(
            action("undrain", "", "alice").check(),
            Ok(HostActionKind::Undrain)
        );
        let long = "é".repeat(MAX_REASON_CHARS);
        assert!(action("drain", &long, "alice").check().is_ok(), "200 chars");
        let longer = format!("{long}x");
        assert!(action("drain", &longer, "alice")
            .check()
            .unwrap_err()
            .starts_with("reason: longer than 200"));
        assert!(action("drain", "a\nb", "alice")
            .check()
            .unwrap_err()
            .starts_with("reason: holds a control"));
        assert!(action("drain", "ok", "al\u{1b}[31m")
            .check()
            .unwrap_err()
            .starts_with("by:"));
        assert!(action("drain", "ok", " ")
            .check()
            .unwrap_err()
            .starts_with("by:"));
        let e = action("reboot", "ok", "alice").check().unwrap_err();
        assert!(e.contains("unknown action \"reboot\""), "{e}");
        let e = action("x\ny", "ok", "alice").check().unwrap_err();
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn request_ids_that_can_be_answered() {
        assert_eq!(request_id(&json!({"id": "a-1"})), Some("a-1"));
        assert_eq!(request_id(&json!({"id": ""})), None);
        assert_eq!(request_id(&json!({"id": 5})), None);
        assert_eq!(request_id(&json!({"id": "a\nb"})), None);
        assert_eq!(request_id(&json!({"id": "x".repeat(129)})), None);
        assert_eq!(request_id(&json!("nope")), None);
    }

    #[test]
    fn drain_state_is_tolerant_and_writes_its_nulls() {
        let d: DrainState =
            serde_json::from_value(json!({"drained": "yes", "reason": 5, "later": 1})).unwrap();
        assert!(!d.drained && d.reason.is_none());
        assert_eq!(d.extra["later"], 1);
        let out = serde_json::to_value(DrainState::default()).unwrap();
        assert_eq!(
            out,
            json!({"drained": false, "reason": null, "by": null, "since": null})
        );
        let r = HostActionResult {
            id: "r1".into(),
            ok: false,
            error: Some(ACTIONS_DISABLED.into()),
            drain: DrainState::default(),
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["error"], ACTIONS_DISABLED);
        assert_eq!(serde_json::from_value::<HostActionResult>(v).unwrap(), r);
    }
}
