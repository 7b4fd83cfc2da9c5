//! Webhook definitions: the acceptance rules of the API (pure) and storage.

use super::template::{compile, compile_text};
use crate::clock::iso;
use crate::db::{Db, DbError};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};
use serde_json::{json, Map, Value};

/// A body template is at most this long.
pub const BODY_TEMPLATE_MAX: usize = 64 * 1024;
pub const TIMEOUT_MIN_MS: u64 = 1000;
pub const TIMEOUT_MAX_MS: u64 = 60_000;
pub const TIMEOUT_DEFAULT_MS: u64 = 10_000;
const LEVELS: [&str; 4] = ["trace", "info", "warning", "error"];

/// A webhook's configuration as the API takes it (everything but id and the
/// read-only outcome fields).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSpec {
    pub name: String,
    pub enabled: bool,
    pub url: String,
    pub method: String,
    pub headers: Map<String, Value>,
    pub body_template: String,
    pub min_level: String,
    pub kinds: Vec<String>,
    pub timeout_ms: u64,
}

/// The first mismatch of a body: (field path, message).
pub type Invalid = (String, String);

fn invalid(path: &str, message: impl Into<String>) -> Invalid {
    (path.to_owned(), message.into())
}

/// Checks a create/update body: shape first, then the templates compile.
pub fn validate(body: &Map<String, Value>) -> Result<WebhookSpec, Invalid> {
    let text = |key: &str| -> Result<String, Invalid> {
        match body.get(key) {
            None | Some(Value::Null) => Err(invalid(key, "is required")),
            Some(Value::String(s)) if s.trim().is_empty() => Err(invalid(key, "must not be empty")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(invalid(key, "must be a string")),
        }
    };
    let name = text("name")?.trim().to_owned();
    // A name reaches log lines and the dashboard: no control characters.
    if name.chars().any(char::is_control) {
        return Err(invalid("name", "must not contain control characters"));
    }
    let url = text("url")?.trim().to_owned();
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(invalid("url", "must start with http:// or https://"));
    }
    let method = match body.get("method") {
        None | Some(Value::Null) => "POST".to_owned(),
        Some(Value::String(m))
            if m.eq_ignore_ascii_case("POST") || m.eq_ignore_ascii_case("PUT") =>
        {
            m.to_ascii_uppercase()
        }
        Some(_) => return Err(invalid("method", "must be POST or PUT")),
    };
    let headers = match body.get("headers") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(h)) => {
            for (k, v) in h {
                if !v.is_string() {
                    return Err(invalid(&format!("headers.{k}"), "must be a string"));
                }
                if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                    return Err(invalid(&format!("headers.{k}"), "is not a header name"));
                }
            }
            h.clone()
        }
        Some(_) => return Err(invalid("headers", "must be an object of strings")),
    };
    let body_template = text("bodyTemplate")?;
    if body_template.len() > BODY_TEMPLATE_MAX {
        return Err(invalid("bodyTemplate", "must be at most 64 KiB"));
    }
    let min_level = match body.get("minLevel") {
        None | Some(Value::Null) => "warning".to_owned(),
        Some(Value::String(l)) if LEVELS.contains(&l.as_str()) => l.clone(),
        Some(_) => {
            return Err(invalid(
                "minLevel",
                "must be one of trace, info, warning, error",
            ))
        }
    };
    let kinds = match body.get("kinds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, k)| match k {
                Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
                _ => Err(invalid(
                    &format!("kinds[{i}]"),
                    "must be a kind pattern (text, * as wildcard)",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid("kinds", "must be a list of kind patterns")),
    };
    let timeout_ms = match body.get("timeoutMs") {
        None | Some(Value::Null) => TIMEOUT_DEFAULT_MS,
        Some(v) => match v.as_u64() {
            Some(n) if (TIMEOUT_MIN_MS..=TIMEOUT_MAX_MS).contains(&n) => n,
            _ => {
                return Err(invalid(
                    "timeoutMs",
                    "must be a whole number from 1000 to 60000",
                ))
            }
        },
    };
    let enabled = match body.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("enabled", "must be true or false")),
    };
    // Combinations after the shape: the templates must compile.
    compile(&body_template).map_err(|e| invalid("bodyTemplate", e.to_string()))?;
    compile_text(&url, "url").map_err(|e| invalid("url", e.message))?;
    for (k, v) in &headers {
        let loc = format!("headers.{k}");
        compile_text(v.as_str().unwrap_or_default(), &loc).map_err(|e| invalid(&loc, e.message))?;
    }
    Ok(WebhookSpec {
        name,
        enabled,
        url,
        method,
        headers,
        body_template,
        min_level,
        kinds,
        timeout_ms,
    })
}

/// A kind pattern with `*` wildcards against a kind.
pub fn kind_matches(pattern: &str, kind: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == kind;
    }
    let mut rest = kind;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

fn level_rank(level: &str) -> usize {
    LEVELS.iter().position(|l| *l == level).unwrap_or(1)
}

impl WebhookSpec {
    /// What the audit log says of a webhook: its name, method and where it
    /// goes, the URL masked past the host (Slack-style URLs carry their secret
    /// in the path), and never its headers (which carry tokens).
    pub fn described(&self) -> String {
        format!(
            "\"{}\" ({} {}, {})",
            self.name.escape_debug(),
            self.method,
            crate::config::heartbeat::mask_url(&self.url),
            if self.enabled { "on" } else { "off" }
        )
    }

    /// Whether an event of this kind and level is offered to the webhook.
    pub fn wants(&self, kind: &str, level: &str) -> bool {
        self.enabled
            && level_rank(level) >= level_rank(&self.min_level)
            && (self.kinds.is_empty() || self.kinds.iter().any(|p| kind_matches(p, kind)))
    }
}

/// A stored webhook, as the API shows it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: String,
    #[serde(flatten)]
    pub spec: WebhookSpec,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
    /// The provisioning file that defines it (`webhooks.yaml`); `None` when
    /// made through the API. A provisioned webhook is changed only by its file.
    pub provisioned_from: Option<String>,
}

pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<Webhook> {
    let headers: String = r.get("headers")?;
    let kinds: String = r.get("kinds")?;
    Ok(Webhook {
        id: r.get("id")?,
        spec: WebhookSpec {
            name: r.get("name")?,
            enabled: r.get::<_, i64>("enabled")? != 0,
            url: r.get("url")?,
            method: r.get("method")?,
            headers: serde_json::from_str(&headers).unwrap_or_default(),
            body_template: r.get("body_template")?,
            min_level: r.get("min_level")?,
            kinds: serde_json::from_str(&kinds).unwrap_or_default(),
            timeout_ms: r.get::<_, i64>("timeout_ms")?.max(0) as u64,
        },
        last_status: r.get("last_status")?,
        last_error: r.get("last_error")?,
        last_attempt_at: r.get("last_attempt_at")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
        provisioned_from: r.get("provisioned_from")?,
    })
}

pub fn list(db: &Db) -> Result<Vec<Webhook>, DbError> {
    db.read(|c| {
        let mut stmt =
            c.prepare_cached("SELECT * FROM webhooks ORDER BY name COLLATE NOCASE, id")?;
        let rows = stmt
            .query_map([], from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    })
}

pub fn get(db: &Db, id: &str) -> Result<Option<Webhook>, DbError> {
    db.read(|c| {
        Ok(
            c.query_row("SELECT * FROM webhooks WHERE id = ?1", [id], from_row)
                .optional()?,
        )
    })
}

pub fn create(db: &Db, spec: WebhookSpec, now: DateTime<Utc>) -> Result<Webhook, DbError> {
    let id = uuid::Uuid::new_v4().to_string();
    let at = iso(now);
    let (wid, s) = (id.clone(), spec);
    db.write(move |c| {
        c.execute(
            "INSERT INTO webhooks (id, name, enabled, url, method, headers, body_template, min_level, kinds, timeout_ms, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![wid, s.name, s.enabled as i64, s.url, s.method, Value::Object(s.headers.clone()).to_string(), s.body_template, s.min_level, json!(s.kinds).to_string(), s.timeout_ms as i64, at],
        )?;
        Ok::<_, DbError>(c.query_row("SELECT * FROM webhooks WHERE id = ?1", [&wid], from_row)?)
    })
}

/// Replaces a webhook's configuration; `None` when it does not exist or is
/// provisioned (its file owns it: `super::provisioned`).
pub fn update(
    db: &Db,
    id: &str,
    spec: WebhookSpec,
    now: DateTime<Utc>,
) -> Result<Option<Webhook>, DbError> {
    let (wid, s, at) = (id.to_owned(), spec, iso(now));
    db.write(move |c| {
        let n = c.execute(
            "UPDATE webhooks SET name = ?2, enabled = ?3, url = ?4, method = ?5, headers = ?6, body_template = ?7,
                 min_level = ?8, kinds = ?9, timeout_ms = ?10, updated_at = ?11
             WHERE id = ?1 AND provisioned_from IS NULL",
            params![wid, s.name, s.enabled as i64, s.url, s.method, Value::Object(s.headers.clone()).to_string(), s.body_template, s.min_level, json!(s.kinds).to_string(), s.timeout_ms as i64, at],
        )?;
        if n == 0 {
            return Ok::<_, DbError>(None);
        }
        Ok(Some(c.query_row("SELECT * FROM webhooks WHERE id = ?1", [&wid], from_row)?))
    })
}

/// Deletes a webhook made through the API; false when there is none (a
/// provisioned one is left to its file).
pub fn delete(db: &Db, id: &str) -> Result<bool, DbError> {
    let id = id.to_owned();
    db.write(move |c| {
        Ok::<_, DbError>(
            c.execute(
                "DELETE FROM webhooks WHERE id = ?1 AND provisioned_from IS NULL",
                [id],
            )? > 0,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_and_refusals() {
        let ok = validate(&body(json!({ "name": "chat", "url": "https://hooks.example/{{client.hostname}}", "bodyTemplate": "{\"text\": \"{{event.message}}\"}" }))).unwrap();
        assert_eq!(
            (
                ok.method.as_str(),
                ok.min_level.as_str(),
                ok.timeout_ms,
                ok.enabled
            ),
            ("POST", "warning", 10_000, true)
        );
        assert!(ok.kinds.is_empty() && ok.headers.is_empty());
        let base = json!({ "name": "chat", "url": "https://h/x", "bodyTemplate": "{}" });
        let with = |k: &str, v: Value| {
            let mut b = body(base.clone());
            b.insert(k.into(), v);
            validate(&b).unwrap_err()
        };
        assert_eq!(
            validate(&body(json!({ "url": "https://h", "bodyTemplate": "{}" })))
                .unwrap_err()
                .0,
            "name"
        );
        assert_eq!(with("url", json!("ftp://h")).0, "url");
        assert_eq!(with("method", json!("GET")).0, "method");
        assert_eq!(with("headers", json!({ "X-A": 5 })).0, "headers.X-A");
        assert_eq!(with("minLevel", json!("loud")).0, "minLevel");
        let mut lower = body(base.clone());
        lower.insert("method".into(), json!("put"));
        assert_eq!(
            validate(&lower).unwrap().method,
            "PUT",
            "the method's case does not matter"
        );
        assert_eq!(with("timeoutMs", json!(999)).0, "timeoutMs");
        assert_eq!(with("timeoutMs", json!(60_001)).0, "timeoutMs");
        assert_eq!(with("kinds", json!(["vrrp.*", 3])).0, "kinds[1]");
        assert_eq!(with("bodyTemplate", json!("{nope")).0, "bodyTemplate");
        let e = with(
            "bodyTemplate",
            json!(r#"{"tags": ["a", "{{event.kind | shout}}"]}"#),
        );
        assert_eq!(e.0, "bodyTemplate");
        assert!(e.1.starts_with("tags[1]: unknown filter"), "{}", e.1);
        assert_eq!(
            with(
                "bodyTemplate",
                json!(format!("\"{}\"", "x".repeat(BODY_TEMPLATE_MAX)))
            )
            .1,
            "must be at most 64 KiB"
        );
        assert_eq!(
            with("headers", json!({ "X-T": "{{event.kind" })).0,
            "headers.X-T"
        );
    }

    #[test]
    fn kind_patterns_and_levels() {
        assert!(kind_matches("vrrp.*", "vrrp.incident_opened"));
        assert!(kind_matches("*", "anything"));
        assert!(kind_matches("vrrp.incident_*", "vrrp.incident_resolved"));
        assert!(kind_matches("*.stopped", "keepalived.stopped"));
        assert!(kind_matches("vrrp.*_changed", "vrrp.master_changed"));
        assert!(!kind_matches("vrrp.*", "client.connected"));
        assert!(!kind_matches(
            "vrrp.master_changed",
            "vrrp.master_changed.x"
        ));
        let spec = validate(&body(json!({ "name": "x", "url": "https://h", "bodyTemplate": "{}", "kinds": ["vrrp.*"], "minLevel": "info" }))).unwrap();
        assert!(spec.wants("vrrp.master_changed", "info"));
        assert!(!spec.wants("vrrp.master_changed", "trace"));
        assert!(!spec.wants("client.connected", "error"));
    }
}
