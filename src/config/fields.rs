//! Reading the config document's fields: the error that names a field, and
//! the typed readers every block uses (a mapping, a string, a flag, a scalar
//! as text, a list of strings).

use serde_json::{Map, Value};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

pub(super) fn section<'a>(
    v: Option<&'a Value>,
    name: &str,
    empty: &'a Map<String, Value>,
) -> Result<&'a Map<String, Value>, ConfigError> {
    match v {
        None | Some(Value::Null) => Ok(empty),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(ConfigError::new(name, "must be a mapping of keys")),
    }
}

pub(super) fn opt_string(
    root: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, ConfigError> {
    match root.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ConfigError::new(key, "must be a string")),
    }
}

pub(super) fn opt_bool(v: Option<&Value>, field: &str) -> Result<Option<bool>, ConfigError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ConfigError::new(
            field,
            format!("{other} is not true or false"),
        )),
    }
}

/// A scalar as text: strings as they are, numbers and booleans written out.
pub(super) fn scalar_text(v: &Value, field: &str) -> Result<String, ConfigError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(ConfigError::new(field, "must be a single value")),
    }
}

pub(super) fn string_list(v: Option<&Value>, field: &str) -> Result<Vec<String>, ConfigError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(ConfigError::new(
                    format!("{field}[{i}]"),
                    "must be a string",
                )),
            })
            .collect(),
        Some(_) => Err(ConfigError::new(field, "must be a list")),
    }
}
