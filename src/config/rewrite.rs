//! Adding missing keys to the operator's config file without losing their comments.
//!
//! The file is rewritten only when a known key was missing (a secret generated on
//! first start, a settings key added by an upgrade). A YAML file gets the new lines
//! inserted as text, so every comment and the operator's layout stay; a JSON file
//! has no comments and is re-serialised in its original key order. A block
//! changed at run time (`settings`, `heartbeat`) is written back the same way
//! ([`write_section`]).

use serde_json::{Map, Value};

/// One key the loader found missing, with the value to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Addition {
    /// `None` for a top-level key, else the top-level block it belongs in.
    pub section: Option<&'static str>,
    pub key: String,
    pub value: Value,
}

/// Returns the new file text, or `Err` when the layout is one a textual insertion
/// cannot handle safely (the caller then re-serialises the whole document).
pub fn add_missing(text: &str, additions: &[Addition]) -> Result<String, String> {
    if text.trim_start().starts_with('{') {
        return add_to_json(text, additions);
    }
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for add in additions.iter().filter(|a| a.section.is_none()) {
        lines.push(format!("{}: {}", add.key, yaml_scalar(&add.value)?));
    }
    let mut sections: Vec<&'static str> = additions.iter().filter_map(|a| a.section).collect();
    sections.dedup();
    for section in sections {
        let new_lines = |indent: &str| -> Result<Vec<String>, String> {
            additions
                .iter()
                .filter(|a| a.section == Some(section))
                .map(|a| Ok(format!("{indent}{}: {}", a.key, yaml_scalar(&a.value)?)))
                .collect()
        };
        match find_block_header(&lines, section)? {
            Some(header) => {
                let indent = child_indent(&lines[header + 1..]);
                let insert = new_lines(&indent)?;
                let at = header + 1;
                lines.splice(at..at, insert);
            }
            None => {
                lines.push(format!("{section}:"));
                lines.extend(new_lines("  ")?);
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

fn add_to_json(text: &str, additions: &[Addition]) -> Result<String, String> {
    let mut doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let root = doc.as_object_mut().ok_or("the document is not an object")?;
    for add in additions {
        let target = match add.section {
            None => &mut *root,
            Some(section) => root
                .entry(section)
                .or_insert_with(|| Value::Object(Default::default()))
                .as_object_mut()
                .ok_or_else(|| format!("{section} is not an object"))?,
        };
        target.insert(add.key.clone(), add.value.clone());
    }
    let mut out = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(out)
}

/// Sets keys of one section to new values: a key already in the section has its
/// line replaced (its trailing comment goes with the old value), a new key is
/// added. `Err` when the layout or a value cannot be written as one line of text.
pub fn set_in_section(
    text: &str,
    section: &'static str,
    values: &[(String, Value)],
) -> Result<String, String> {
    if text.trim_start().starts_with('{') {
        let additions: Vec<Addition> = values
            .iter()
            .map(|(k, v)| Addition {
                section: Some(section),
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        return add_to_json(text, &additions);
    }
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut missing = Vec::new();
    for (key, value) in values {
        let scalar = yaml_scalar(value)?;
        let Some(header) = find_block_header(&lines, section)? else {
            missing.push(Addition {
                section: Some(section),
                key: key.clone(),
                value: value.clone(),
            });
            continue;
        };
        let mut found = false;
        for line in lines.iter_mut().skip(header + 1) {
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            if indent == 0 && !trimmed.is_empty() && !trimmed.starts_with('#') {
                break;
            }
            if trimmed
                .strip_prefix(key.as_str())
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
            {
                *line = format!("{}{key}: {scalar}", &line[..indent]);
                found = true;
                break;
            }
        }
        if !found {
            missing.push(Addition {
                section: Some(section),
                key: key.clone(),
                value: value.clone(),
            });
        }
    }
    let text = lines.join("\n") + "\n";
    if missing.is_empty() {
        Ok(text)
    } else {
        add_missing(&text, &missing)
    }
}

/// The line index of `section:` at column 0 holding a block (nothing after the colon
/// but a comment). A flow value on the header line cannot take a textual insertion.
fn find_block_header(lines: &[String], section: &str) -> Result<Option<usize>, String> {
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix(section) else {
            continue;
        };
        let Some(after) = rest.strip_prefix(':') else {
            continue;
        };
        let after = after.trim();
        if after.is_empty() || after.starts_with('#') {
            return Ok(Some(i));
        }
        return Err(format!("{section} is written in flow style"));
    }
    Ok(None)
}

/// The indentation of the first child entry of a block, two spaces when it has none.
fn child_indent(following: &[String]) -> String {
    for line in following {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if indent.is_empty() || trimmed.starts_with('-') {
            break;
        }
        return indent.to_owned();
    }
    "  ".to_owned()
}

fn yaml_scalar(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(format!("'{}'", s.replace('\'', "''"))),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok("null".to_owned()),
        Value::Array(a) if a.is_empty() => Ok("[]".to_owned()),
        other => Err(format!("cannot write {other} as a scalar")),
    }
}

/// Writes changed settings back to the config file: in place where the layout
/// allows (comments kept), else the whole file re-serialised.
pub fn write_settings(path: &std::path::Path, changes: &Map<String, Value>) -> Result<(), String> {
    write_section(path, "settings", changes)
}

/// Writes changed keys of one top-level block (`settings`, `heartbeat`) back to
/// the config file, as [`write_settings`] does.
pub fn write_section(
    path: &std::path::Path,
    section: &'static str,
    changes: &Map<String, Value>,
) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let values: Vec<(String, Value)> = changes
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let in_place = set_in_section(&text, section, &values).ok().filter(|t| {
        serde_yaml_ng::from_str::<Value>(t).ok().is_some_and(|doc| {
            changes
                .iter()
                .all(|(k, v)| doc.get(section).and_then(|s| s.get(k)) == Some(v))
        })
    });
    let new_text = match in_place {
        Some(t) => t,
        None => {
            log::warn!("{} could not take the {section} block in place; it is rewritten whole and loses its comments", path.display());
            let mut root = match serde_yaml_ng::from_str::<Value>(&text) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            };
            let block = root
                .entry(section)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = block {
                for (k, v) in changes {
                    m.insert(k.clone(), v.clone());
                }
            }
            serde_yaml_ng::to_string(&Value::Object(root)).map_err(|e| e.to_string())?
        }
    };
    vrrp_fs::write_private_atomic(path, new_text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn add(section: Option<&'static str>, key: &str, value: Value) -> Addition {
        Addition {
            section,
            key: key.into(),
            value,
        }
    }

    fn reparse(text: &str) -> Value {
        serde_yaml_ng::from_str(text).expect("result parses as YAML")
    }

    #[test]
    fn yaml_keeps_comments_and_adds_top_level_and_section_keys() {
        let text = "# operator notes\nport: 3020 # mine\nsettings:\n    # keep 60 days\n    token_retention_days: '60'\nsecurity:\n  hsts: true\n";
        let out = add_missing(
            text,
            &[
                add(None, "jwtSecret", json!("ab'cd")),
                add(
                    Some("settings"),
                    "notification_retention_count",
                    json!("500"),
                ),
            ],
        )
        .unwrap();
        assert!(out.contains("# operator notes"));
        assert!(out.contains("port: 3020 # mine"));
        assert!(out.contains("    # keep 60 days"));
        assert!(
            out.contains("    notification_retention_count: '500'"),
            "{out}"
        );
        let doc = reparse(&out);
        assert_eq!(doc["jwtSecret"], "ab'cd");
        assert_eq!(doc["port"], 3020);
        assert_eq!(doc["settings"]["token_retention_days"], "60");
        assert_eq!(doc["settings"]["notification_retention_count"], "500");
        assert_eq!(doc["security"]["hsts"], true);
    }

    #[test]
    fn yaml_without_the_section_gets_a_new_block() {
        let out = add_missing("port: 3010\n", &[add(Some("settings"), "a", json!("1"))]).unwrap();
        assert_eq!(reparse(&out)["settings"]["a"], "1");
    }

    #[test]
    fn flow_style_section_is_refused_so_the_caller_reserialises() {
        let r = add_missing(
            "settings: {a: '1'}\n",
            &[add(Some("settings"), "b", json!("2"))],
        );
        assert!(r.is_err());
    }

    #[test]
    fn json_file_stays_json_in_its_key_order() {
        let text = r#"{"port": 3011, "settings": {"token_retention_days": "5"}}"#;
        let out = add_missing(
            text,
            &[
                add(None, "secretKey", json!("k")),
                add(Some("settings"), "x", json!("1")),
            ],
        )
        .unwrap();
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["port"], 3011);
        assert_eq!(doc["secretKey"], "k");
        assert_eq!(doc["settings"]["x"], "1");
        let keys: Vec<_> = doc.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["port", "settings", "secretKey"]);
    }

    #[test]
    fn set_replaces_in_place_and_adds() {
        let text = "# top\nsettings:\n  # keep a month\n  token_retention_days: '30' # old\n  other: x\nport: 1\n";
        let out = set_in_section(
            text,
            "settings",
            &[
                ("token_retention_days".into(), json!("7")),
                ("new_key".into(), json!("v")),
            ],
        )
        .unwrap();
        assert!(out.contains("# top") && out.contains("  # keep a month"));
        assert!(out.contains("  token_retention_days: '7'"), "{out}");
        let doc = reparse(&out);
        assert_eq!(doc["settings"]["token_retention_days"], "7");
        assert_eq!(doc["settings"]["new_key"], "v");
        assert_eq!(doc["settings"]["other"], "x");
        assert_eq!(doc["port"], 1);
        assert!(
            set_in_section(text, "settings", &[("k".into(), json!({"a": 1}))]).is_err(),
            "objects are not one line"
        );
    }

    #[test]
    fn empty_file_gets_keys() {
        let out = add_missing("", &[add(None, "jwtSecret", json!("s"))]).unwrap();
        assert_eq!(reparse(&out)["jwtSecret"], "s");
    }
}
