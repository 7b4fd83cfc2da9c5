//! The settings block: retention and scheduler intervals, and the activity level
//! overrides. Read at start from the config file, changed at run time through the
//! API (and written back), applied without restart; provisioning files may set
//! keys over it ([`Settings::provision`]).
//!
//! The parsing and acceptance rules are pure functions here; [`Settings`] is the
//! live copy every reader shares.

use crate::activity::LevelPolicy;
use parking_lot::RwLock;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use vrrp_protocol::ActivityLevel;

/// Days of cluster history kept; 0 falls back to the default, as
/// `notification_retention_days` does: history is never kept "forever" by accident.
pub const HISTORY_RETENTION_KEY: &str = "history_retention_days";
pub const HISTORY_RETENTION_DEFAULT: u64 = 400;

/// Kinds that must always be recorded: an incident nobody hears of is worse than noise.
pub const NEVER_NONE: [&str; 2] = ["vrrp.incident_opened", "vrrp.incident_resolved"];
pub const OVERRIDES_KEY: &str = "activity_level_overrides";

/// What an override does to a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    Level(ActivityLevel),
    /// Do not record the kind.
    Drop,
}

/// `kind=level` entries separated by commas or line breaks; each kind once.
pub fn parse_overrides(text: &str) -> Result<BTreeMap<String, Override>, String> {
    let mut out = BTreeMap::new();
    for entry in text
        .split([',', '\n', '\r'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        let Some((kind, level)) = entry.split_once('=') else {
            return Err(format!("\"{entry}\" is not kind=level"));
        };
        let (kind, level) = (kind.trim(), level.trim());
        if kind.is_empty() {
            return Err(format!("\"{entry}\" names no kind"));
        }
        let value = match level {
            "trace" => Override::Level(ActivityLevel::Trace),
            "info" => Override::Level(ActivityLevel::Info),
            "warning" => Override::Level(ActivityLevel::Warning),
            "error" => Override::Level(ActivityLevel::Error),
            "none" if NEVER_NONE.contains(&kind) => {
                return Err(format!("{kind} cannot be set to none"))
            }
            "none" => Override::Drop,
            other => {
                return Err(format!(
                    "\"{other}\" is not a level (trace, info, warning, error, none)"
                ))
            }
        };
        if out.insert(kind.to_owned(), value).is_some() {
            return Err(format!("{kind} is listed twice"));
        }
    }
    Ok(out)
}

/// The overrides written back in one line, as the config stores them.
pub fn format_overrides(overrides: &BTreeMap<String, Override>) -> String {
    overrides
        .iter()
        .map(|(kind, o)| match o {
            Override::Level(l) => format!("{kind}={}", l.as_str()),
            Override::Drop => format!("{kind}=none"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The largest value a numeric setting takes: ten years of hours for an
/// interval, a hundred years of days for a retention, a billion for a count.
/// Beyond them the schedulers' date arithmetic would overflow (a stored value
/// of 2^41 hours stopped the server).
pub fn largest(key: &str) -> u64 {
    if key.ends_with("_hours") {
        87_600
    } else if key.ends_with("_days") {
        36_500
    } else {
        1_000_000_000
    }
}

/// A numeric setting's value, within [`largest`]; the message otherwise.
pub fn bounded(key: &str, n: u64) -> Result<u64, String> {
    let max = largest(key);
    if n > max {
        return Err(format!("must be at most {max}"));
    }
    Ok(n)
}

fn whole_number(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => n.as_u64().map(|n| n.to_string()),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse::<u64>().ok().map(|n| n.to_string())
        }
        _ => None,
    }
}

/// Checks a `PUT /api/v1/settings/cleanup` body; returns the values to store, or
/// the field and message of the first mismatch.
pub fn validate_update(body: &Map<String, Value>) -> Result<Map<String, Value>, (String, String)> {
    if body.contains_key("security") {
        return Err((
            "security".into(),
            "cannot be changed through the settings API".into(),
        ));
    }
    let mut out = Map::new();
    for (key, value) in body {
        let stored = if key.starts_with("token_")
            || key.starts_with("notification_")
            || key == HISTORY_RETENTION_KEY
        {
            let n = whole_number(value).ok_or_else(|| {
                (
                    key.clone(),
                    "must be a non-negative whole number".to_owned(),
                )
            })?;
            let n = n.parse::<u64>().map_err(|_| {
                (
                    key.clone(),
                    "must be a non-negative whole number".to_owned(),
                )
            })?;
            Value::String(bounded(key, n).map_err(|m| (key.clone(), m))?.to_string())
        } else if key == OVERRIDES_KEY {
            let text = match value {
                Value::String(s) => s.as_str(),
                Value::Null => "",
                _ => return Err((key.clone(), "must be a string of kind=level entries".into())),
            };
            let parsed = parse_overrides(text).map_err(|m| (key.clone(), m))?;
            Value::String(format_overrides(&parsed))
        } else {
            // Keys this build does not know are accepted and written as given.
            value.clone()
        };
        out.insert(key.clone(), stored);
    }
    Ok(out)
}

/// The live settings: the map as the API shows it, and the parsed overrides.
///
/// Two layers: the config file's block (changed by the API, written back) and
/// the values provisioning files set (`provisioning`), which win and are never
/// written to the config file. Taking a key out of its file brings the config
/// file's value back.
pub struct Settings {
    inner: RwLock<Layers>,
}

struct Layers {
    /// The config file's block, as read at start and changed through the API.
    values: Map<String, Value>,
    /// key → (validated value, the provisioning file that sets it).
    provisioned: BTreeMap<String, (Value, String)>,
    /// Parsed from the effective `activity_level_overrides`.
    overrides: BTreeMap<String, Override>,
}

impl Layers {
    fn effective(&self) -> Map<String, Value> {
        let mut out = self.values.clone();
        for (k, (v, _)) in &self.provisioned {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.provisioned
            .get(key)
            .map(|(v, _)| v)
            .or_else(|| self.values.get(key))
    }

    fn reparse_overrides(&mut self) {
        let text = self
            .get(OVERRIDES_KEY)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Ok(parsed) = parse_overrides(&text) {
            self.overrides = parsed;
        }
    }
}

impl Settings {
    /// From the config's settings block (already validated at load).
    pub fn new(values: Map<String, Value>) -> Result<Settings, String> {
        let text = values
            .get(OVERRIDES_KEY)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let overrides = parse_overrides(&text)?;
        Ok(Settings {
            inner: RwLock::new(Layers {
                values,
                provisioned: BTreeMap::new(),
                overrides,
            }),
        })
    }

    /// Every setting as it applies now (provisioned values over the file's).
    pub fn snapshot(&self) -> Map<String, Value> {
        self.inner.read().effective()
    }

    /// A whole-number setting; `default` when missing or unreadable.
    pub fn number(&self, key: &str, default: u64) -> u64 {
        self.inner
            .read()
            .get(key)
            .and_then(whole_number)
            .and_then(|s| s.parse::<u64>().ok())
            .map_or(default, |n| n.min(largest(key)))
    }

    /// Applies validated values (the config file's layer).
    pub fn apply(&self, changes: &Map<String, Value>) {
        let mut inner = self.inner.write();
        for (k, v) in changes {
            inner.values.insert(k.clone(), v.clone());
        }
        inner.reparse_overrides();
    }

    /// The provisioning file that sets `key`, if one does.
    pub fn provisioned_from(&self, key: &str) -> Option<String> {
        self.inner
            .read()
            .provisioned
            .get(key)
            .map(|(_, f)| f.clone())
    }

    /// Every provisioned key with its file.
    pub fn provisioned(&self) -> BTreeMap<String, String> {
        self.inner
            .read()
            .provisioned
            .iter()
            .map(|(k, (_, f))| (k.clone(), f.clone()))
            .collect()
    }

    /// Replaces the provisioned layer with validated values; returns each key
    /// whose value or file changed, with a sentence saying how.
    pub fn provision(&self, next: BTreeMap<String, (Value, String)>) -> Vec<(String, String)> {
        let mut inner = self.inner.write();
        let mut changes = Vec::new();
        for (key, (value, file)) in &next {
            if inner.provisioned.get(key) != Some(&(value.clone(), file.clone())) {
                changes.push((key.clone(), format!("setting {key} = {value} from {file}")));
            }
        }
        for (key, (_, file)) in &inner.provisioned {
            if !next.contains_key(key) {
                let back = inner.values.get(key).cloned().unwrap_or(Value::Null);
                changes.push((
                    key.clone(),
                    format!("setting {key} no longer in {file}: back to the config file's {back}"),
                ));
            }
        }
        if !changes.is_empty() {
            inner.provisioned = next;
            inner.reparse_overrides();
        }
        changes
    }
}

impl LevelPolicy for Settings {
    fn level_for(&self, kind: &str, level: ActivityLevel) -> Option<ActivityLevel> {
        match self.inner.read().overrides.get(kind) {
            None => Some(level),
            Some(Override::Level(l)) => Some(*l),
            Some(Override::Drop) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overrides() {
        let o = parse_overrides(
            "client.connected=none, vrrp.state_changed = error\nkeepalived.stopped=info\n\n",
        )
        .unwrap();
        assert_eq!(o["client.connected"], Override::Drop);
        assert_eq!(
            o["vrrp.state_changed"],
            Override::Level(ActivityLevel::Error)
        );
        assert_eq!(
            format_overrides(&o),
            "client.connected=none,keepalived.stopped=info,vrrp.state_changed=error"
        );
        assert!(parse_overrides("").unwrap().is_empty());
        for bad in [
            "x",
            "=info",
            "a=loud",
            "a=info,a=error",
            "vrrp.incident_opened=none",
            "vrrp.incident_resolved=none",
        ] {
            assert!(parse_overrides(bad).is_err(), "{bad}");
        }
        assert!(parse_overrides("vrrp.incident_opened=error").is_ok());
        assert!(parse_overrides("vrrp.incident_updated=none").is_ok());
    }

    #[test]
    fn update_rules() {
        // Bounded: beyond these the schedulers' date arithmetic overflowed.
        for (key, over) in [
            ("token_cleanup_interval_hours", json!("2562047788016")),
            ("notification_retention_days", json!(106_751_991_168_u64)),
            (
                "notification_retention_count",
                json!("99999999999999999999999"),
            ),
        ] {
            let err = validate_update(json!({ key: over }).as_object().unwrap()).unwrap_err();
            assert_eq!(err.0, key);
        }
        assert_eq!(
            validate_update(
                json!({"token_cleanup_interval_hours": 87_600})
                    .as_object()
                    .unwrap()
            )
            .unwrap()["token_cleanup_interval_hours"],
            "87600"
        );
        let ok = validate_update(json!({"token_retention_days": 7, "notification_retention_count": "12", "my_key": {"a": 1}}).as_object().unwrap()).unwrap();
        assert_eq!(ok["token_retention_days"], "7");
        assert_eq!(ok["notification_retention_count"], "12");
        let history =
            validate_update(json!({"history_retention_days": 30}).as_object().unwrap()).unwrap();
        assert_eq!(history["history_retention_days"], "30");
        assert_eq!(ok["my_key"], json!({"a": 1}), "unlisted keys as given");
        for (body, field) in [
            (json!({"security": {}}), "security"),
            (json!({"token_retention_days": -1}), "token_retention_days"),
            (
                json!({"notification_retention_days": "1.5"}),
                "notification_retention_days",
            ),
            (json!({"token_whatever": "x"}), "token_whatever"),
            (
                json!({"history_retention_days": "-3"}),
                "history_retention_days",
            ),
            (
                json!({"history_retention_days": 1.5}),
                "history_retention_days",
            ),
            (
                json!({"activity_level_overrides": "vrrp.incident_resolved=none"}),
                "activity_level_overrides",
            ),
            (
                json!({"activity_level_overrides": 5}),
                "activity_level_overrides",
            ),
        ] {
            assert_eq!(
                validate_update(body.as_object().unwrap()).unwrap_err().0,
                field,
                "{body}"
            );
        }
    }

    #[test]
    fn provisioned_values_are_a_layer_over_the_files() {
        let s = Settings::new(
            json!({"token_retention_days": "30", "activity_level_overrides": ""})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap();
        let layer = |pairs: &[(&str, &str)]| -> BTreeMap<String, (Value, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), (json!(v), "a.yaml".to_owned())))
                .collect()
        };
        let changed = s.provision(layer(&[
            ("token_retention_days", "7"),
            (OVERRIDES_KEY, "client.connected=none"),
        ]));
        assert_eq!(changed.len(), 2);
        assert_eq!(s.number("token_retention_days", 0), 7);
        assert_eq!(s.snapshot()["token_retention_days"], "7");
        assert_eq!(s.level_for("client.connected", ActivityLevel::Info), None);
        assert_eq!(
            s.provisioned_from("token_retention_days").as_deref(),
            Some("a.yaml")
        );
        // The API's layer changes underneath; the file's value still wins.
        s.apply(json!({"token_retention_days": "12"}).as_object().unwrap());
        assert_eq!(s.number("token_retention_days", 0), 7);
        assert!(s
            .provision(layer(&[
                ("token_retention_days", "7"),
                (OVERRIDES_KEY, "client.connected=none"),
            ]))
            .is_empty());
        let changed = s.provision(BTreeMap::new());
        assert_eq!(changed.len(), 2, "{changed:?}");
        assert_eq!(
            s.number("token_retention_days", 0),
            12,
            "the config file's value again"
        );
        assert_eq!(
            s.level_for("client.connected", ActivityLevel::Info),
            Some(ActivityLevel::Info)
        );
        assert!(s.provisioned().is_empty());
    }

    #[test]
    fn live_policy() {
        let s = Settings::new(
            json!({"activity_level_overrides": "a=none,b=error"})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap();
        assert_eq!(s.level_for("a", ActivityLevel::Info), None);
        assert_eq!(
            s.level_for("b", ActivityLevel::Info),
            Some(ActivityLevel::Error)
        );
        assert_eq!(
            s.level_for("c", ActivityLevel::Warning),
            Some(ActivityLevel::Warning)
        );
        s.apply(
            json!({"activity_level_overrides": "c=trace"})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            s.level_for("a", ActivityLevel::Info),
            Some(ActivityLevel::Info)
        );
        assert_eq!(
            s.level_for("c", ActivityLevel::Warning),
            Some(ActivityLevel::Trace)
        );
    }
}
