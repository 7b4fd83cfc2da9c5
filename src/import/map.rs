//! Pure mapping of the original's rows to ours: what comes over, in which form,
//! and why a record is left behind. No I/O: `source` reads the rows, `target`
//! writes what these functions return.

use crate::agents::readings;
use crate::auth::sealed::{OpenError, SealKey};
use crate::auth::users::AuthMethods;
use crate::clock::iso;
use crate::webhooks::store::{self, WebhookSpec};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{json, Map, Value};

/// A record left behind, with the reason the summary prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub kind: &'static str,
    pub id: String,
    pub reason: String,
}

fn skip(kind: &'static str, id: &str, reason: impl Into<String>) -> Skip {
    Skip {
        kind,
        id: id.to_owned(),
        reason: reason.into(),
    }
}

/// A `clients` row of the original (1.0: one `auth_token` column, a SHA-256 hash
/// for inbound clients, sealed for outbound ones, by its migration 11).
#[derive(Default)]
pub struct KasmClient {
    pub id: String,
    pub hostname: Option<String>,
    pub display_name: Option<String>,
    pub site: Option<String>,
    pub connection_mode: Option<String>,
    pub auth_token: Option<String>,
    pub inbound_allowed_ip: Option<String>,
    pub inbound_last_ip: Option<String>,
    pub outbound_target_address: Option<String>,
    pub version: Option<String>,
    pub last_seen: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// How an agent proves itself here. No `Debug`: it holds a token in the clear.
#[derive(PartialEq, Eq)]
pub enum Credential {
    /// An inbound agent's token as its SHA-256 hex, the same form as ours.
    Hash(String),
    /// An outbound agent's token, opened with the original's key, to be sealed
    /// with ours.
    Plain(String),
    None,
}

pub struct Client {
    pub id: String,
    pub hostname: String,
    pub display_name: Option<String>,
    pub site: Option<String>,
    pub outbound: bool,
    pub credential: Credential,
    pub inbound_allowed_ip: Option<String>,
    pub inbound_last_ip: Option<String>,
    pub outbound_target_address: Option<String>,
    pub version: Option<String>,
    pub last_seen: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
}

/// Why an outbound token cannot be opened: the whole import stops on these,
/// since a wrong or missing key would leave every outbound agent behind.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyProblem {
    NoKey,
    WrongKey,
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One client. `Ok(Err(skip))` leaves this record behind; `Err` stops the import.
pub fn client(row: KasmClient, key: Option<&SealKey>) -> Result<Result<Client, Skip>, KeyProblem> {
    let outbound = match row.connection_mode.as_deref() {
        Some("inbound") => false,
        Some("outbound") => true,
        other => {
            return Ok(Err(skip(
                "client",
                &row.id,
                format!(
                    "connection mode {:?} is neither inbound nor outbound",
                    other.unwrap_or("")
                ),
            )))
        }
    };
    let credential = match (row.auth_token, outbound) {
        (None, _) => Credential::None,
        (Some(hash), false) if is_sha256_hex(&hash) => Credential::Hash(hash),
        (Some(_), false) => {
            return Ok(Err(skip(
                "client",
                &row.id,
                "its stored token is not a SHA-256 hash (a database from before 1.0?)",
            )))
        }
        (Some(sealed), true) => match key.ok_or(KeyProblem::NoKey)?.open(&sealed) {
            Ok(plain) => Credential::Plain(plain),
            Err(OpenError::WrongKey) => return Err(KeyProblem::WrongKey),
            Err(OpenError::Malformed) => {
                return Ok(Err(skip(
                    "client",
                    &row.id,
                    "its stored outbound token is not iv:tag:ciphertext",
                )))
            }
        },
    };
    let created_at = row.created_at.unwrap_or_default();
    Ok(Ok(Client {
        id: row.id,
        hostname: row.hostname.unwrap_or_default(),
        display_name: row.display_name,
        site: row.site,
        outbound,
        credential,
        inbound_allowed_ip: row.inbound_allowed_ip,
        inbound_last_ip: row.inbound_last_ip,
        outbound_target_address: row.outbound_target_address,
        version: row.version,
        last_seen: row.last_seen,
        created_at,
        updated_at: row.updated_at,
    }))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub username: String,
    pub password_hash: Option<String>,
    pub auth_methods: &'static str,
    pub token_version: i64,
    pub created_at: String,
    pub updated_at: String,
}

/// The original's `users` row: (id, username, password_hash, auth_methods,
/// token_version, created_at, updated_at). Its password hashes are bcrypt and
/// stay as they are (see `auth::password`).
pub type KasmUser = (
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
);

pub fn user(row: KasmUser) -> Result<User, Skip> {
    let (id, username, password_hash, methods, token_version, created_at, updated_at) = row;
    let Some(username) = username.filter(|u| !u.trim().is_empty()) else {
        return Err(skip("user", &id.to_string(), "it has no user name"));
    };
    let methods_text = methods.unwrap_or_else(|| "local".into());
    let Some(auth_methods) = AuthMethods::parse(&methods_text) else {
        return Err(skip(
            "user",
            &username,
            format!("login methods {methods_text:?} are not local, oidc or local,oidc"),
        ));
    };
    let created_at = created_at.unwrap_or_default();
    Ok(User {
        id,
        username,
        password_hash,
        auth_methods: auth_methods.as_str(),
        token_version,
        updated_at: updated_at.unwrap_or_else(|| created_at.clone()),
        created_at,
    })
}

/// A time as the original wrote it: ISO 8601, or SQLite's `CURRENT_TIMESTAMP`.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
                .ok()
                .map(|t| t.and_utc())
        })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub token_hash: String,
    pub created_at: String,
    pub expires_at: String,
    pub display_name: Option<String>,
    pub allowed_ip: Option<String>,
}

/// (token_hash, created_at, expires_at, used_at, display_name, allowed_ip)
pub type KasmToken = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A registration token comes over only while it could still register an agent.
pub fn token(row: KasmToken, now: DateTime<Utc>) -> Result<Token, Skip> {
    let (token_hash, created_at, expires_at, used_at, display_name, allowed_ip) = row;
    // The hash names the record in the summary: a short prefix, not a secret.
    let name: String = token_hash.chars().take(8).collect();
    if used_at.is_some() {
        return Err(skip("registration token", &name, "already used"));
    }
    let Some(expires) = expires_at.as_deref().and_then(parse_time) else {
        return Err(skip("registration token", &name, "no readable expiry"));
    };
    if expires <= now {
        return Err(skip("registration token", &name, "expired"));
    }
    if !is_sha256_hex(&token_hash) {
        return Err(skip("registration token", &name, "not a SHA-256 hash"));
    }
    Ok(Token {
        token_hash,
        created_at: created_at
            .as_deref()
            .and_then(parse_time)
            .map(iso)
            .unwrap_or_else(|| iso(now)),
        expires_at: iso(expires),
        display_name,
        allowed_ip,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub client_id: String,
    pub received_at: String,
    pub payload: String,
    pub last_known_instances: Option<String>,
}

/// (client_id, status, received_at, last_instances)
pub type KasmReading = (String, String, String, Option<String>);

/// A client's last reading, checked as an agent's would be (`readings::parse`).
pub fn reading(row: KasmReading) -> Result<Reading, Skip> {
    let (client_id, status, received_at, last) = row;
    let parsed: Value =
        serde_json::from_str(&status).map_err(|_| skip("reading", &client_id, "it is not JSON"))?;
    let normalised = readings::parse(parsed).map_err(|e| {
        skip(
            "reading",
            &client_id,
            format!("it is not a reading: {}", e.0),
        )
    })?;
    let last_known_instances = match last {
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Array(_)) => Some(v.to_string()),
            _ => {
                return Err(skip(
                    "reading",
                    &client_id,
                    "its last known instances are not a JSON list",
                ))
            }
        },
        None => None,
    };
    let payload = serde_json::to_string(&normalised)
        .map_err(|e| skip("reading", &client_id, e.to_string()))?;
    Ok(Reading {
        client_id,
        received_at,
        payload,
        last_known_instances,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub occurred_at: String,
    pub received_at: String,
    pub source: String,
    pub client_id: Option<String>,
    pub kind: String,
    pub level: String,
    pub correlation_id: Option<String>,
    pub subject: String,
    pub data: String,
}

const LEVELS: [&str; 4] = ["trace", "info", "warning", "error"];

fn json_object(text: Option<String>) -> Option<String> {
    match text {
        None => Some("{}".into()),
        Some(t) => match serde_json::from_str::<Value>(&t) {
            Ok(v @ Value::Object(_)) => Some(v.to_string()),
            Ok(Value::Null) => Some("{}".into()),
            _ => None,
        },
    }
}

/// An activity event, id kept: an agent that still queues it is acknowledged
/// here without a second copy.
pub fn event(mut e: Event, subject: Option<String>, data: Option<String>) -> Result<Event, Skip> {
    if !LEVELS.contains(&e.level.as_str()) {
        return Err(skip(
            "activity event",
            &e.id,
            format!("level {:?} is not trace, info, warning or error", e.level),
        ));
    }
    e.subject = json_object(subject)
        .ok_or_else(|| skip("activity event", &e.id, "its subject is not a JSON object"))?;
    e.data = json_object(data)
        .ok_or_else(|| skip("activity event", &e.id, "its data is not a JSON object"))?;
    Ok(e)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub id: String,
    pub spec: WebhookSpec,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
}

/// The original's webhook columns as text and numbers, before any check.
pub struct KasmWebhook {
    pub id: String,
    pub name: String,
    pub enabled: i64,
    pub url: String,
    pub method: String,
    pub headers: String,
    pub body_template: String,
    pub min_level: String,
    pub kinds: String,
    pub timeout_ms: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
}

/// A webhook passes the same check as one created through the API: the
/// template language is the same, so a template that fails here failed there.
pub fn webhook(row: KasmWebhook) -> Result<Webhook, Skip> {
    let headers: Value = serde_json::from_str(&row.headers)
        .map_err(|_| skip("webhook", &row.id, "its headers are not JSON"))?;
    let kinds: Value = serde_json::from_str(&row.kinds)
        .map_err(|_| skip("webhook", &row.id, "its kinds are not JSON"))?;
    let body = json!({
        "name": row.name, "enabled": row.enabled != 0, "url": row.url, "method": row.method,
        "headers": headers, "bodyTemplate": row.body_template, "minLevel": row.min_level,
        "kinds": kinds, "timeoutMs": row.timeout_ms,
    });
    let Value::Object(body) = body else {
        return Err(skip("webhook", &row.id, "cannot be read"));
    };
    let spec = store::validate(&body)
        .map_err(|(field, message)| skip("webhook", &row.id, format!("{field}: {message}")))?;
    Ok(Webhook {
        id: row.id,
        spec,
        last_status: row.last_status,
        last_error: row.last_error,
        last_attempt_at: row.last_attempt_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// The settings block of the original's config: the keys this server knows,
/// checked as a settings update would be; the rest is reported.
pub fn settings(block: &Map<String, Value>, known: &[&str]) -> (Map<String, Value>, Vec<Skip>) {
    let mut accepted = Map::new();
    let mut skipped = Vec::new();
    for (key, value) in block {
        if !known.contains(&key.as_str()) {
            skipped.push(skip("setting", key, "not a setting of this server"));
            continue;
        }
        let one: Map<String, Value> = [(key.clone(), value.clone())].into_iter().collect();
        match crate::config::settings::validate_update(&one) {
            Ok(values) => accepted.extend(values),
            Err((_, message)) => skipped.push(skip("setting", key, message)),
        }
    }
    (accepted, skipped)
}

#[cfg(test)]
#[path = "map_tests.rs"]
mod tests;
