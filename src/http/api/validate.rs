//! Request validation: bodies parse into typed inputs before anything else runs.
//!
//! A mismatch is a 400 `{error: "<field path>: <message>"}` naming only the first
//! offending field, in the order the route declares its fields.

use crate::http::response::ApiError;
use serde_json::{Map, Value};

/// A JSON object body.
pub struct Body(Map<String, Value>);

impl Body {
    /// Parses a body that must be a JSON object; an empty body reads as `{}`.
    pub fn parse(bytes: &[u8]) -> Result<Body, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body(Map::new()));
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(m)) => Ok(Body(m)),
            Ok(_) => Err(invalid("body", "must be a JSON object")),
            Err(_) => Err(invalid("body", "is not valid JSON")),
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    pub fn object(&self) -> &Map<String, Value> {
        &self.0
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A required, non-empty string.
    pub fn required_text(&self, key: &str) -> Result<String, ApiError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Err(invalid(key, "is required")),
            Some(Value::String(s)) if s.is_empty() => Err(invalid(key, "must not be empty")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(invalid(key, "must be a string")),
        }
    }

    /// An optional string (possibly empty); null counts as absent.
    pub fn optional_string(&self, key: &str) -> Result<Option<String>, ApiError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(key, "must be a string")),
        }
    }
}

/// Names, display names, site names and comments reach thread names, log lines
/// and other people's screens: none may hold a control character (a NUL in a
/// user name once ended the process, a newline forges a log line).
pub fn no_control(path: &str, text: &str) -> Result<(), ApiError> {
    if text.chars().any(char::is_control) {
        return Err(invalid(path, "must not contain control characters"));
    }
    Ok(())
}

/// The spec's validation error: `<field path>: <message>`.
pub fn invalid(path: &str, message: &str) -> ApiError {
    ApiError::bad_request(format!("{path}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            Body::parse(b"[1]").err().unwrap().message,
            "body: must be a JSON object"
        );
        assert_eq!(
            Body::parse(b"{").err().unwrap().message,
            "body: is not valid JSON"
        );
        let b = Body::parse(br#"{"a": "", "b": 3, "c": "x"}"#).unwrap();
        assert_eq!(
            b.required_text("a").unwrap_err().message,
            "a: must not be empty"
        );
        assert_eq!(
            b.required_text("b").unwrap_err().message,
            "b: must be a string"
        );
        assert_eq!(b.required_text("z").unwrap_err().message, "z: is required");
        assert_eq!(b.required_text("c").unwrap(), "x");
        assert_eq!(b.optional_string("z").unwrap(), None);
        assert!(Body::parse(b"").unwrap().is_empty());
        assert_eq!(
            no_control("username", "nul\u{0}user").unwrap_err().message,
            "username: must not contain control characters"
        );
        assert!(no_control("site", "dc-1 Zürich").is_ok());
        assert!(no_control("comment", "a\u{7f}").is_err());
    }
}
