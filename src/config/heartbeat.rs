//! The `heartbeat` block: where the server's dead man's switch
//! calls, how often and how. Read at start from the config file, changed at run
//! time through `PUT /api/v1/settings/heartbeat` (written back first, then
//! applied), and read by the `heartbeat` thread before every beat.
//!
//! Everything here is pure: parsing the block, the acceptance rules of an update,
//! and [`mask_url`], the only form of the URL that may reach a log line (a
//! healthchecks.io or Uptime Kuma URL carries its secret in the path).

use serde_json::{Map, Value};

/// The interval when the block names none.
pub const DEFAULT_INTERVAL_SECS: u64 = 60;
/// The interval's bounds (the issue: 10..3600 s).
pub const MIN_INTERVAL_SECS: u64 = 10;
pub const MAX_INTERVAL_SECS: u64 = 3600;
/// The config file's block.
pub const SECTION: &str = "heartbeat";

/// How the heartbeat calls its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// With the JSON summary as the body.
    Post,
    /// Without a body (push monitors that only count calls).
    Get,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Get => "GET",
        }
    }
}

/// The block as the server runs it, and as the API shows it and the config
/// file stores it (serialised).
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct HeartbeatConfig {
    /// Empty: no heartbeat.
    pub url: String,
    pub interval_seconds: u64,
    pub method: Method,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig {
            url: String::new(),
            interval_seconds: DEFAULT_INTERVAL_SECS,
            method: Method::Post,
        }
    }
}

impl std::fmt::Debug for HeartbeatConfig {
    // By hand: the URL may hold a secret token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeartbeatConfig")
            .field("url", &mask_url(&self.url))
            .field("interval_seconds", &self.interval_seconds)
            .field("method", &self.method)
            .finish()
    }
}

impl HeartbeatConfig {
    pub fn enabled(&self) -> bool {
        !self.url.is_empty()
    }
}

/// The block from the config file (absent: the defaults, no heartbeat).
/// Errors name the field (`heartbeat.<key>`) and what is wrong.
pub fn parse_block(v: Option<&Value>) -> Result<HeartbeatConfig, (String, String)> {
    let block = match v {
        None | Some(Value::Null) => return Ok(HeartbeatConfig::default()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err((SECTION.into(), "must be a mapping of keys".into())),
    };
    check(block, HeartbeatConfig::default())
        .map_err(|(field, message)| (format!("{SECTION}.{field}"), message))
}

/// Checks a `PUT /api/v1/settings/heartbeat` body against the values running
/// now (a key left out keeps its value); returns the whole new block, or the
/// field and message of the first mismatch.
pub fn validate_update(
    body: &Map<String, Value>,
    current: &HeartbeatConfig,
) -> Result<HeartbeatConfig, (String, String)> {
    if let Some(key) = body
        .keys()
        .find(|k| !["url", "interval_seconds", "method"].contains(&k.as_str()))
    {
        return Err((key.clone(), "is not a heartbeat setting".into()));
    }
    check(body, current.clone())
}

fn check(
    block: &Map<String, Value>,
    mut out: HeartbeatConfig,
) -> Result<HeartbeatConfig, (String, String)> {
    match block.get("url") {
        None => {}
        Some(Value::Null) => out.url = String::new(),
        Some(Value::String(s)) => out.url = check_url(s.trim()).map_err(|m| ("url".into(), m))?,
        Some(_) => return Err(("url".into(), "must be a string".into())),
    }
    match block.get("interval_seconds") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let n = match v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim().parse::<u64>().ok(),
                _ => None,
            }
            .filter(|n| (MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(n))
            .ok_or_else(|| {
                (
                    "interval_seconds".to_owned(),
                    format!("must be a whole number of seconds from {MIN_INTERVAL_SECS} to {MAX_INTERVAL_SECS}"),
                )
            })?;
            out.interval_seconds = n;
        }
    }
    match block.get("method") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            out.method = match s.trim().to_ascii_uppercase().as_str() {
                "POST" => Method::Post,
                "GET" => Method::Get,
                _ => return Err(("method".into(), "must be POST or GET".into())),
            }
        }
        Some(_) => return Err(("method".into(), "must be POST or GET".into())),
    }
    Ok(out)
}

/// Empty, or an absolute http(s) URL with a host.
fn check_url(url: &str) -> Result<String, String> {
    if url.is_empty() {
        return Ok(String::new());
    }
    let parsed: ureq::http::Uri = url
        .parse()
        .map_err(|_| "is not a URL (http://… or https://…)".to_owned())?;
    match (parsed.scheme_str(), parsed.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(url.to_owned()),
        _ => Err("must be an http:// or https:// URL with a host".into()),
    }
}

/// The URL as a log line may show it: scheme, host and port; the path and
/// query, where services put their secret tokens, become `/…`.
pub fn mask_url(url: &str) -> String {
    if url.is_empty() {
        return String::new();
    }
    match url.parse::<ureq::http::Uri>() {
        Ok(u) => {
            let scheme = u.scheme_str().unwrap_or("?");
            let host = u.host().unwrap_or("?");
            let port = u.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{scheme}://{host}{port}/…")
        }
        Err(_) => "(unreadable URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn block_defaults_and_values() {
        assert_eq!(parse_block(None).unwrap(), HeartbeatConfig::default());
        assert!(!HeartbeatConfig::default().enabled());
        let hb = parse_block(Some(
            &json!({"url": "https://hc-ping.com/abc", "interval_seconds": "30", "method": "get"}),
        ))
        .unwrap();
        assert_eq!(hb.url, "https://hc-ping.com/abc");
        assert_eq!(hb.interval_seconds, 30);
        assert_eq!(hb.method, Method::Get);
        for (block, field) in [
            (json!("x"), "heartbeat"),
            (json!({"interval_seconds": 9}), "heartbeat.interval_seconds"),
            (
                json!({"interval_seconds": 3601}),
                "heartbeat.interval_seconds",
            ),
            (
                json!({"interval_seconds": "1m"}),
                "heartbeat.interval_seconds",
            ),
            (json!({"method": "PUT"}), "heartbeat.method"),
            (json!({"url": "ftp://x/y"}), "heartbeat.url"),
            (json!({"url": "not a url"}), "heartbeat.url"),
            (json!({"url": 5}), "heartbeat.url"),
        ] {
            assert_eq!(parse_block(Some(&block)).unwrap_err().0, field, "{block}");
        }
    }

    #[test]
    fn update_keeps_what_it_does_not_name() {
        let current = HeartbeatConfig {
            url: "http://kuma:3001/api/push/tok".into(),
            interval_seconds: 120,
            method: Method::Get,
        };
        let new = validate_update(&obj(json!({"interval_seconds": 10})), &current).unwrap();
        assert_eq!(new.url, current.url);
        assert_eq!(new.interval_seconds, 10);
        let off = validate_update(&obj(json!({"url": ""})), &current).unwrap();
        assert!(!off.enabled());
        assert_eq!(
            validate_update(&obj(json!({"token": 1})), &current)
                .unwrap_err()
                .0,
            "token"
        );
        assert_eq!(
            validate_update(&obj(json!({"method": true})), &current)
                .unwrap_err()
                .0,
            "method"
        );
    }

    #[test]
    fn masked_urls_keep_no_token() {
        assert_eq!(
            mask_url("https://hc-ping.com/0f3c-secret-uuid?x=1"),
            "https://hc-ping.com/…"
        );
        assert_eq!(
            mask_url("http://127.0.0.1:3001/api/push/SeCrEt?status=up"),
            "http://127.0.0.1:3001/…"
        );
        let debug = format!(
            "{:?}",
            HeartbeatConfig {
                url: "https://h/secret".into(),
                ..HeartbeatConfig::default()
            }
        );
        assert!(!debug.contains("secret"), "{debug}");
    }
}
