//! One provisioning file's text into what it defines (pure), every value
//! checked by the API's own rules; then the files of a directory merged into
//! one [`Provisioned`], a name defined twice refused. Every error names the
//! file and, where the text has one, the line.

use super::lines::{nearest_line, path, Step};
use super::{ProvisionError, Provisioned};
use crate::activity::silences::{self, provisioned::Wanted as WantedSilence};
use crate::config::settings::{parse_overrides, validate_update, OVERRIDES_KEY};
use crate::config::SETTINGS_DEFAULTS;
use crate::webhooks::provisioned::Wanted as WantedWebhook;
use crate::webhooks::{store, target};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The sections a file may hold.
const SECTIONS: [&str; 4] = ["webhooks", "settings", "silences", "apiVersion"];
/// The fields of a webhook (those of the API's body).
const WEBHOOK_FIELDS: [&str; 9] = [
    "name",
    "enabled",
    "url",
    "method",
    "headers",
    "bodyTemplate",
    "minLevel",
    "kinds",
    "timeoutMs",
];
const SILENCE_FIELDS: [&str; 5] = ["name", "matcher", "startsAt", "endsAt", "comment"];
/// A silence's name is its key in the files; it reaches logs and the dashboard.
const NAME_MAX: usize = 100;

/// What one file defines, each item with its line.
#[derive(Debug, Default)]
pub struct FileItems {
    pub webhooks: Vec<(usize, WantedWebhook)>,
    pub settings: Vec<(usize, String, Value)>,
    pub silences: Vec<(usize, WantedSilence)>,
}

/// Reads one file. `allowed` are the config's `webhooks.allowed_networks`: a
/// webhook's URL meets the same target rule as through the API.
pub fn parse_file(
    file: &str,
    text: &str,
    allowed: &[ipnet::IpNet],
) -> Result<FileItems, ProvisionError> {
    let at = |p: &str| nearest_line(text, &path(p));
    let fail = |p: &str, message: String| ProvisionError::new(file, at(p), message);
    if text.trim().is_empty() {
        return Ok(FileItems::default());
    }
    let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| {
        let line = e.location().map(|l| (l.line(), l.column()));
        let mut message = e.to_string();
        if let Some((l, c)) = line {
            message = message.replacen(&format!(" at line {l} column {c}"), "", 1);
        }
        ProvisionError::new(file, line.map(|(l, _)| l), message)
    })?;
    let root = match doc {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => {
            return Err(ProvisionError::new(
                file,
                Some(1),
                "must be a mapping of webhooks, settings and silences".into(),
            ))
        }
    };
    for key in root.keys() {
        if !SECTIONS.contains(&key.as_str()) {
            return Err(fail(
                key,
                format!("\"{key}\" is not a section (webhooks, settings, silences)"),
            ));
        }
    }
    match root.get("apiVersion") {
        None => {}
        Some(v) if v.as_u64() == Some(1) => {}
        Some(_) => return Err(fail("apiVersion", "apiVersion: must be 1".into())),
    }
    Ok(FileItems {
        webhooks: webhooks(file, text, root.get("webhooks"), allowed)?,
        settings: settings(file, text, root.get("settings"))?,
        silences: silences(file, text, root.get("silences"))?,
    })
}

/// The items of a list section, each a mapping.
fn items<'a>(
    file: &str,
    text: &str,
    section: &str,
    v: Option<&'a Value>,
) -> Result<Vec<&'a Map<String, Value>>, ProvisionError> {
    let fail =
        |p: &str, message: String| ProvisionError::new(file, nearest_line(text, &path(p)), message);
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_object().ok_or_else(|| {
                    fail(
                        &format!("{section}[{i}]"),
                        format!("{section}[{i}]: must be a mapping of fields"),
                    )
                })
            })
            .collect(),
        Some(_) => Err(fail(section, format!("{section}: must be a list"))),
    }
}

/// An item's unknown field (a typo would otherwise be a default silently).
fn unknown_field(item: &Map<String, Value>, known: &[&str]) -> Option<String> {
    item.keys().find(|k| !known.contains(&k.as_str())).cloned()
}

/// How an item is named in a message: by its name, else by its place.
fn label(kind: &str, item: &Map<String, Value>, at: &str) -> String {
    match item.get("name").and_then(Value::as_str) {
        Some(n) if !n.trim().is_empty() => format!("{kind} \"{}\"", n.trim().escape_debug()),
        _ => at.to_owned(),
    }
}

fn webhooks(
    file: &str,
    text: &str,
    v: Option<&Value>,
    allowed: &[ipnet::IpNet],
) -> Result<Vec<(usize, WantedWebhook)>, ProvisionError> {
    let mut out = Vec::new();
    for (i, item) in items(file, text, "webhooks", v)?.into_iter().enumerate() {
        let at = format!("webhooks[{i}]");
        let what = label("webhook", item, &at);
        let fail = |field: &str, message: &str| {
            let steps: Vec<Step> = path(&format!("{at}.{field}"));
            ProvisionError::new(
                file,
                nearest_line(text, &steps),
                format!("{what}: {field}: {message}"),
            )
        };
        if let Some(field) = unknown_field(item, &WEBHOOK_FIELDS) {
            return Err(fail(&field, "is not a webhook field"));
        }
        let mut body = item.clone();
        // A body template may be written as YAML: it is the JSON it stands for.
        if let Some(t @ (Value::Object(_) | Value::Array(_))) = body.get("bodyTemplate") {
            let json = serde_json::to_string_pretty(t).unwrap_or_default();
            body.insert("bodyTemplate".into(), Value::String(json));
        }
        let spec = store::validate(&body).map_err(|(field, message)| fail(&field, &message))?;
        target::check_saved(&spec.url, allowed).map_err(|m| fail("url", &m))?;
        let line = nearest_line(text, &path(&at)).unwrap_or(0);
        out.push((
            line,
            WantedWebhook {
                file: file.to_owned(),
                spec,
            },
        ));
    }
    Ok(out)
}

fn settings(
    file: &str,
    text: &str,
    v: Option<&Value>,
) -> Result<Vec<(usize, String, Value)>, ProvisionError> {
    let fail =
        |p: &str, message: String| ProvisionError::new(file, nearest_line(text, &path(p)), message);
    let block = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(fail(
                "settings",
                "settings: must be a mapping of keys".into(),
            ))
        }
    };
    let mut out = Vec::new();
    for (key, value) in block {
        let at = format!("settings.{key}");
        if !SETTINGS_DEFAULTS.iter().any(|(k, _)| k == key) {
            let known: Vec<&str> = SETTINGS_DEFAULTS.iter().map(|(k, _)| *k).collect();
            return Err(fail(
                &at,
                format!("{at}: is not a setting ({})", known.join(", ")),
            ));
        }
        let value = if key == OVERRIDES_KEY {
            overrides(value).map_err(|(kind, m)| match kind {
                Some(kind) => ProvisionError::new(
                    file,
                    nearest_line(
                        text,
                        &[
                            Step::Key("settings".into()),
                            Step::Key(OVERRIDES_KEY.into()),
                            Step::Key(kind),
                        ],
                    ),
                    format!("{at}: {m}"),
                ),
                None => fail(&at, format!("{at}: {m}")),
            })?
        } else {
            value.clone()
        };
        let mut one = Map::new();
        one.insert(key.clone(), value);
        let mut checked =
            validate_update(&one).map_err(|(_, m)| fail(&at, format!("{at}: {m}")))?;
        let line = nearest_line(text, &path(&at)).unwrap_or(0);
        out.push((
            line,
            key.clone(),
            checked.remove(key).unwrap_or(Value::Null),
        ));
    }
    Ok(out)
}

/// `activity_level_overrides` as a mapping `kind: level` (or the config
/// file's one-line `kind=level,…`) into that line; a refused entry names its kind.
fn overrides(v: &Value) -> Result<Value, (Option<String>, String)> {
    match v {
        Value::Null => Ok(Value::String(String::new())),
        Value::String(s) => Ok(Value::String(s.clone())),
        Value::Object(m) => {
            let mut entries = Vec::new();
            for (kind, level) in m {
                let level = match level {
                    Value::String(l) => l.clone(),
                    // `none` written bare is still a word; YAML's null is not a level.
                    _ => {
                        return Err((
                            Some(kind.clone()),
                            format!("{kind}: must be trace, info, warning, error or none"),
                        ))
                    }
                };
                let entry = format!("{kind}={level}");
                parse_overrides(&entry).map_err(|m| (Some(kind.clone()), m))?;
                entries.push(entry);
            }
            Ok(Value::String(entries.join(",")))
        }
        _ => Err((
            None,
            "must be a mapping of kind: level (or kind=level entries)".into(),
        )),
    }
}

fn silences(
    file: &str,
    text: &str,
    v: Option<&Value>,
) -> Result<Vec<(usize, WantedSilence)>, ProvisionError> {
    let mut out = Vec::new();
    for (i, item) in items(file, text, "silences", v)?.into_iter().enumerate() {
        let at = format!("silences[{i}]");
        let what = label("silence", item, &at);
        let fail = |field: &str, message: &str| {
            let steps = path(&format!("{at}.{field}"));
            ProvisionError::new(
                file,
                nearest_line(text, &steps),
                format!("{what}: {field}: {message}"),
            )
        };
        if let Some(field) = unknown_field(item, &SILENCE_FIELDS) {
            return Err(fail(&field, "is not a silence field"));
        }
        let name = match item.get("name") {
            Some(Value::String(n)) if n.trim().is_empty() => {
                return Err(fail("name", "must not be empty"))
            }
            Some(Value::String(n)) if n.chars().any(char::is_control) => {
                return Err(fail("name", "must not contain control characters"))
            }
            Some(Value::String(n)) if n.trim().chars().count() > NAME_MAX => {
                return Err(fail("name", "must be at most 100 characters"))
            }
            Some(Value::String(n)) => n.trim().to_owned(),
            None | Some(Value::Null) => {
                return Err(fail(
                    "name",
                    "is required (the key that finds the silence again at the next reload)",
                ))
            }
            Some(_) => return Err(fail("name", "must be a string")),
        };
        // A start is required: one left to "now" would move at every reload.
        let starts_at =
            match item.get("startsAt") {
                Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| fail("startsAt", "must be an ISO 8601 timestamp"))?,
                None | Some(Value::Null) => return Err(fail(
                    "startsAt",
                    "is required in a file (a start left to \"now\" would move at every reload)",
                )),
                Some(_) => return Err(fail("startsAt", "must be an ISO 8601 timestamp")),
            };
        let mut body = item.clone();
        body.remove("name");
        // Judged against its own start, not the clock: a window in the past
        // stays valid (it is stored as ended), so an old file keeps loading.
        let silence =
            silences::validate(&body, starts_at).map_err(|(field, m)| fail(&field, &m))?;
        let line = nearest_line(text, &path(&at)).unwrap_or(0);
        out.push((
            line,
            WantedSilence {
                file: file.to_owned(),
                name,
                silence,
            },
        ));
    }
    Ok(out)
}

/// The files of a directory, in name order, into one set: a webhook, setting
/// or silence defined twice is refused, naming both places.
pub fn merge(files: Vec<(String, FileItems)>) -> Result<Provisioned, ProvisionError> {
    let mut out = Provisioned::default();
    let mut hooks: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut keys: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut names: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let twice = |file: &str, line: usize, what: String, first: &(String, usize)| {
        ProvisionError::new(
            file,
            Some(line).filter(|l| *l > 0),
            format!("{what} is also defined at {}:{}", first.0, first.1),
        )
    };
    for (file, items) in files {
        for (line, w) in items.webhooks {
            let name = w.spec.name.clone();
            if let Some(first) = hooks.get(&name) {
                return Err(twice(
                    &file,
                    line,
                    format!("webhook \"{}\"", name.escape_debug()),
                    first,
                ));
            }
            hooks.insert(name, (file.clone(), line));
            out.webhooks.push(w);
        }
        for (line, key, value) in items.settings {
            if let Some(first) = keys.get(&key) {
                return Err(twice(&file, line, format!("setting {key}"), first));
            }
            keys.insert(key.clone(), (file.clone(), line));
            out.settings.insert(key, (value, file.clone()));
        }
        for (line, s) in items.silences {
            if let Some(first) = names.get(&s.name) {
                return Err(twice(
                    &file,
                    line,
                    format!("silence \"{}\"", s.name.escape_debug()),
                    first,
                ));
            }
            names.insert(s.name.clone(), (file.clone(), line));
            out.silences.push(s);
        }
        out.files.push(file);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
