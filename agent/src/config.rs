//! Configuration: `config.yaml` plus environment, read once, validated, then frozen.
//!
//! `load` is a function of (environment, file text): it returns the frozen `Config` and
//! the warnings to log, or the one start-up error that stops the agent. It never logs
//! itself, because the logger's level is one of the things it decides.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_yaml_ng::{Mapping, Value};

/// Log levels of the spec: one enum for both binaries, in `vrrp_protocol`.
pub use vrrp_protocol::LogLevel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// A secret string: never printed by `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: String) -> Secret {
        Secret(s)
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl Drop for Secret {
    /// Overwritten before the memory is freed, so a dropped secret (the registration
    /// secret after use) does not linger in the heap.
    fn drop(&mut self) {
        // SAFETY: zero bytes are valid UTF-8, so the String stays well-formed.
        unsafe { self.0.as_bytes_mut() }.fill(0);
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The `keepalived` block.
#[derive(Clone, Debug, PartialEq)]
pub struct KeepalivedConfig {
    /// Seconds; 0 switches the timer off.
    pub poll_interval_secs: f64,
    pub notify_fifo: Option<PathBuf>,
    pub notify_token: Option<Secret>,
    pub data_file: PathBuf,
    pub stats_file: PathBuf,
    pub json_file: PathBuf,
    pub json_signal: Option<i32>,
    pub dump_timeout_ms: u64,
}

impl Default for KeepalivedConfig {
    fn default() -> Self {
        KeepalivedConfig {
            poll_interval_secs: 5.0,
            notify_fifo: None,
            notify_token: None,
            data_file: "/tmp/keepalived.data".into(),
            stats_file: "/tmp/keepalived.stats".into(),
            json_file: "/tmp/keepalived.json".into(),
            json_signal: None,
            dump_timeout_ms: 3000,
        }
    }
}

/// Everything the agent was configured with, frozen after start.
#[derive(Clone, Debug)]
pub struct Config {
    pub config_path: PathBuf,
    pub data_dir: PathBuf,
    pub proc_dir: PathBuf,
    pub log_level: LogLevel,
    pub log_format: LogFormat,
    pub server_url: Option<String>,
    pub keepalived: KeepalivedConfig,
    pub allow_self_signed: bool,
    pub allowed_networks: Vec<ipnet::Ipv4Net>,
    pub listen_port: u16,
    pub enable_status_page: bool,
    pub enable_register_page: bool,
    /// `maxServers`: how many servers may register this agent (1 to
    /// `MAX_SERVERS`, default 1). Above 1, the setup PIN and the register routes stay
    /// open until that many are registered; at 1 nothing differs from before.
    pub max_servers: usize,
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The `actions` block: host actions (drain), off without `drainFile`.
    pub actions: crate::actions::ActionsConfig,
    pub registration_secret: Option<Secret>,
    pub container: bool,
    /// `clientId` / `authToken` found in an older config: to be migrated to identity.json.
    pub legacy_identity: Option<(String, Secret)>,
}

/// Result of loading: the config plus warnings to log once the logger exists.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
}

/// The one problem that stops the start (logged as one line).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub message: String,
    /// Best-known log settings, so the error is logged as the operator asked.
    pub log_level: LogLevel,
    pub log_format: LogFormat,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub const DEFAULT_CONFIG: &str = "/app/client/config.yaml";
pub const CONTAINER_DATA_DIR: &str = "/app/client/data";
pub const MIN_TOKEN_LEN: usize = 16;

/// Where the config file is, from the environment.
pub fn config_path(env: &HashMap<String, String>) -> PathBuf {
    env.get("SVC_CLIENT_CONFIG")
        .filter(|s| !s.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_CONFIG), PathBuf::from)
}

fn log_settings(env: &HashMap<String, String>, file: Option<&Mapping>) -> (LogLevel, LogFormat) {
    let level = env
        .get("LOG_LEVEL")
        .and_then(|s| LogLevel::parse(s))
        .or_else(|| {
            file.and_then(|m| m.get("logLevel"))
                .and_then(Value::as_str)
                .and_then(LogLevel::parse)
        })
        .unwrap_or(LogLevel::Info);
    let format = match env.get("LOG_FORMAT").map(|s| s.to_ascii_lowercase()) {
        Some(f) if f == "json" => LogFormat::Json,
        Some(f) if f == "pretty" => LogFormat::Pretty,
        _ if env.get("NODE_ENV").map(String::as_str) == Some("production") => LogFormat::Json,
        _ => LogFormat::Pretty,
    };
    (level, format)
}

struct Ctx {
    warnings: Vec<String>,
}

fn bool_key(m: &Mapping, key: &str, default: bool, ctx: &mut Ctx) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => default,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            ctx.warnings.push(format!(
                "{key}: {} is not true or false; ignored (using {default})",
                describe(other)
            ));
            default
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => serde_yaml_ng::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "value".into()),
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn path_key(m: &Mapping, key: &str, default: Option<&str>) -> Result<Option<PathBuf>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(default.map(PathBuf::from)),
        Some(Value::String(s)) if s.starts_with('/') && !s.contains('\0') => {
            Ok(Some(PathBuf::from(s)))
        }
        Some(v) => Err(format!(
            "keepalived.{key}: {} is not an absolute path",
            describe(v)
        )),
    }
}

fn token(value: &str, name: &str) -> Result<Secret, String> {
    if value.chars().count() < MIN_TOKEN_LEN {
        return Err(format!(
            "{name} must be at least {MIN_TOKEN_LEN} characters long"
        ));
    }
    Ok(Secret(value.to_string()))
}

fn keepalived_block(
    m: Option<&Value>,
    env: &HashMap<String, String>,
) -> Result<KeepalivedConfig, String> {
    let empty = Mapping::new();
    let m = match m {
        None | Some(Value::Null) => &empty,
        Some(Value::Mapping(m)) => m,
        Some(_) => return Err("keepalived: must be a mapping".into()),
    };
    let mut k = KeepalivedConfig::default();
    if let Some(v) = m.get("pollInterval").filter(|v| !v.is_null()) {
        k.poll_interval_secs = number(v)
            .filter(|n| n.is_finite() && *n >= 0.0 && *n <= 86_400.0)
            .ok_or_else(|| {
                format!(
                    "keepalived.pollInterval: {} is not a number of seconds between 0 and 86400",
                    describe(v)
                )
            })?;
    }
    if let Some(v) = m.get("dumpTimeoutMs").filter(|v| !v.is_null()) {
        k.dump_timeout_ms = number(v)
            .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= 600_000.0)
            .map(|n| n as u64)
            .ok_or_else(|| {
                format!(
                    "keepalived.dumpTimeoutMs: {} is not a whole number of milliseconds between 1 and 600000",
                    describe(v)
                )
            })?;
    }
    if let Some(v) = m.get("jsonSignal").filter(|v| !v.is_null()) {
        let n = number(v)
            .filter(|n| n.fract() == 0.0 && (1.0..=64.0).contains(n))
            .map(|n| n as i32)
            .filter(|n| *n != 9 && *n != 19)
            .ok_or_else(|| {
                format!(
                    "keepalived.jsonSignal: {} is not a signal number (1 to 64, not KILL or STOP)",
                    describe(v)
                )
            })?;
        k.json_signal = Some(n);
    }
    k.data_file = path_key(m, "dataFile", Some("/tmp/keepalived.data"))?.unwrap_or_default();
    k.stats_file = path_key(m, "statsFile", Some("/tmp/keepalived.stats"))?.unwrap_or_default();
    k.json_file = path_key(m, "jsonFile", Some("/tmp/keepalived.json"))?.unwrap_or_default();
    k.notify_fifo = path_key(m, "notifyFifo", None)?;
    if let Some(f) = env.get("SVC_NOTIFY_FIFO").filter(|s| !s.is_empty()) {
        if !f.starts_with('/') {
            return Err(format!("SVC_NOTIFY_FIFO: '{f}' is not an absolute path"));
        }
        k.notify_fifo = Some(PathBuf::from(f));
    }
    k.notify_token = match m.get("notifyToken") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(token(s, "keepalived.notifyToken")?),
        Some(_) => return Err("keepalived.notifyToken: must be a string".into()),
    };
    if let Some(t) = env.get("SVC_NOTIFY_TOKEN").filter(|s| !s.is_empty()) {
        k.notify_token = Some(token(t, "SVC_NOTIFY_TOKEN")?);
    }
    Ok(k)
}

fn port(v: &str) -> Option<u16> {
    v.trim().parse::<u16>().ok().filter(|p| *p >= 1)
}

/// Reads the configuration. `file_text` is `None` when the config file does not exist
/// (the defaults apply); `agent_dir` resolves relative tls paths and the default data dir.
pub fn load(
    env: &HashMap<String, String>,
    file_text: Option<&str>,
    agent_dir: &Path,
) -> Result<Loaded, ConfigError> {
    let config_path = config_path(env);
    let parsed = parse_file(file_text, &config_path);
    let (log_level, log_format) = log_settings(env, parsed.as_ref().ok());
    let fail = |message: String| ConfigError {
        message,
        log_level,
        log_format,
    };
    let m = parsed.map_err(fail)?;
    let mut ctx = Ctx {
        warnings: Vec::new(),
    };
    warn_unknown_levels(&m, env, &mut ctx);
    let server_url = server_url_key(&m).map_err(fail)?;
    let keepalived = keepalived_block(m.get("keepalived"), env).map_err(fail)?;
    let allow_self_signed = bool_key(&m, "allowSelfSignedCertificates", false, &mut ctx);
    let enable_status_page = bool_key(&m, "enableStatusPage", true, &mut ctx);
    let enable_register_page = bool_key(&m, "enableRegisterPage", true, &mut ctx);
    let allowed_networks = allowed_networks_key(&m).map_err(fail)?;
    let listen_port = listen_port_key(&m, env).map_err(fail)?;
    let max_servers = max_servers_key(&m).map_err(fail)?;
    let tls = tls_block(&m, agent_dir).map_err(fail)?;
    let registration_secret = registration_secret(&m, env, &mut ctx).map_err(fail)?;
    let container = env.get("SVC_CONTAINER").map(String::as_str) == Some("true");
    let data_dir = env
        .get("SVC_CLIENT_DATA_DIR")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            if container {
                PathBuf::from(CONTAINER_DATA_DIR)
            } else {
                agent_dir.join("data")
            }
        });
    let actions = crate::actions::config_block(m.get("actions"), &data_dir).map_err(fail)?;
    let proc_dir = env
        .get("SVC_PROC_DIR")
        .filter(|s| !s.is_empty())
        .map_or_else(|| PathBuf::from("/proc"), PathBuf::from);

    let legacy_identity = legacy_identity(&m, &mut ctx);

    let config = Config {
        config_path,
        data_dir,
        proc_dir,
        log_level,
        log_format,
        server_url,
        keepalived,
        allow_self_signed,
        allowed_networks,
        listen_port,
        enable_status_page,
        enable_register_page,
        max_servers,
        tls,
        actions,
        registration_secret,
        container,
        legacy_identity,
    };
    if config.keepalived.poll_interval_secs == 0.0
        && config.keepalived.notify_fifo.is_none()
        && config.keepalived.notify_token.is_none()
    {
        return Err(fail(
            "keepalived: all triggers are off (pollInterval is 0, no notifyFifo, no notifyToken); nothing would ever read keepalived"
                .into(),
        ));
    }
    Ok(Loaded {
        config,
        warnings: ctx.warnings,
    })
}

/// The config file's keys; no file (or an empty one) is no keys.
fn parse_file(file_text: Option<&str>, config_path: &Path) -> Result<Mapping, String> {
    match file_text {
        None => Ok(Mapping::new()),
        Some(t) if t.trim().is_empty() => Ok(Mapping::new()),
        Some(t) => match serde_yaml_ng::from_str::<Value>(t) {
            Ok(Value::Mapping(m)) => Ok(m),
            Ok(Value::Null) => Ok(Mapping::new()),
            Ok(_) => Err(format!(
                "{}: the config file must be a mapping of keys",
                config_path.display()
            )),
            Err(e) => Err(format!(
                "{}: the config file does not parse: {e}",
                config_path.display()
            )),
        },
    }
}

/// A level that is no level is a warning, never a failed start (logging has
/// to start before anything can be said).
fn warn_unknown_levels(m: &Mapping, env: &HashMap<String, String>, ctx: &mut Ctx) {
    if let Some(v) = m.get("logLevel") {
        if v.as_str().and_then(LogLevel::parse).is_none() {
            ctx.warnings
                .push(format!("logLevel: {} is not a level; ignored", describe(v)));
        }
    }
    if let Some(v) = env.get("LOG_LEVEL") {
        if LogLevel::parse(v).is_none() {
            ctx.warnings
                .push(format!("LOG_LEVEL: '{v}' is not a level; ignored"));
        }
    }
}

fn server_url_key(m: &Mapping) -> Result<Option<String>, String> {
    Ok(match m.get("serverUrl") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) if s.starts_with("http://") || s.starts_with("https://") => {
            Some(s.trim_end_matches('/').to_string())
        }
        Some(v) => {
            return Err(format!(
                "serverUrl: {} is not an http or https URL",
                describe(v)
            ))
        }
    })
}

fn allowed_networks_key(m: &Mapping) -> Result<Vec<ipnet::Ipv4Net>, String> {
    let mut allowed_networks = Vec::new();
    match m.get("allowedNetworks") {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(items)) => {
            for item in items {
                let s = match item {
                    Value::String(s) => s.trim().to_string(),
                    other => describe(other),
                };
                let net = s
                    .parse::<ipnet::Ipv4Net>()
                    .or_else(|_| s.parse::<std::net::Ipv4Addr>().map(ipnet::Ipv4Net::from));
                match net {
                    Ok(n) => allowed_networks.push(n),
                    Err(_) => {
                        return Err(format!(
                            "allowedNetworks: '{s}' is not an IPv4 address or CIDR network"
                        ))
                    }
                }
            }
        }
        Some(v) => return Err(format!("allowedNetworks: {} is not a list", describe(v))),
    }

    Ok(allowed_networks)
}

/// `listenPort`, where `SVC_CLIENT_PORT` wins.
/// Most servers one agent reports to (a server pair needs 2; a few more cost nothing).
pub const MAX_SERVERS: usize = 4;

/// `maxServers`: a whole number from 1 to `MAX_SERVERS`; anything else ends the start.
fn max_servers_key(m: &Mapping) -> Result<usize, String> {
    match m.get("maxServers").filter(|v| !v.is_null()) {
        None => Ok(1),
        Some(v) => number(v)
            .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= MAX_SERVERS as f64)
            .map(|n| n as usize)
            .ok_or_else(|| {
                format!(
                    "maxServers: {} is not a number of servers (1 to {MAX_SERVERS})",
                    describe(v)
                )
            }),
    }
}

fn listen_port_key(m: &Mapping, env: &HashMap<String, String>) -> Result<u16, String> {
    let mut listen_port = 3011;
    if let Some(v) = m.get("listenPort").filter(|v| !v.is_null()) {
        listen_port = number(v)
            .filter(|n| n.fract() == 0.0)
            .and_then(|n| port(&format!("{}", n as i64)))
            .ok_or_else(|| format!("listenPort: {} is not a port (1 to 65535)", describe(v)))?;
    }
    if let Some(v) = env.get("SVC_CLIENT_PORT") {
        listen_port =
            port(v).ok_or_else(|| format!("SVC_CLIENT_PORT: '{v}' is not a port (1 to 65535)"))?;
    }

    Ok(listen_port)
}

/// The `tls` block: both files must exist and be PEM (relative paths are the
/// agent's folder's).
fn tls_block(m: &Mapping, agent_dir: &Path) -> Result<Option<(PathBuf, PathBuf)>, String> {
    Ok(match m.get("tls") {
        None | Some(Value::Null) => None,
        Some(Value::Mapping(t)) => {
            let get = |k: &str| -> Result<PathBuf, String> {
                match t.get(k) {
                    Some(Value::String(s)) if !s.is_empty() => {
                        let p = PathBuf::from(s);
                        Ok(if p.is_relative() {
                            agent_dir.join(p)
                        } else {
                            p
                        })
                    }
                    _ => Err(format!("tls.{k}: a file path is required")),
                }
            };
            let (cert, key) = (get("cert")?, get("key")?);
            for (name, p) in [("tls.cert", &cert), ("tls.key", &key)] {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| format!("{name}: cannot read {}: {e}", p.display()))?;
                if !text.contains("-----BEGIN ") {
                    return Err(format!("{name}: {} is not a PEM file", p.display()));
                }
            }
            Some((cert, key))
        }
        Some(_) => return Err("tls: must be a mapping with cert and key".into()),
    })
}

/// The registration secret, from the environment or a file it names; never
/// from the config file.
fn registration_secret(
    m: &Mapping,
    env: &HashMap<String, String>,
    ctx: &mut Ctx,
) -> Result<Option<Secret>, String> {
    if m.get("registrationSecret").is_some() {
        ctx.warnings.push(
            "registrationSecret in the config file is ignored; set SVC_REGISTRATION_SECRET or SVC_REGISTRATION_SECRET_FILE instead"
                .into(),
        );
    }
    let registration_secret = match (
        env.get("SVC_REGISTRATION_SECRET").filter(|s| !s.is_empty()),
        env.get("SVC_REGISTRATION_SECRET_FILE")
            .filter(|s| !s.is_empty()),
    ) {
        (Some(_), Some(_)) => return Err(
            "SVC_REGISTRATION_SECRET and SVC_REGISTRATION_SECRET_FILE are both set; set only one"
                .into(),
        ),
        (Some(s), None) => Some(Secret(s.clone())),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("SVC_REGISTRATION_SECRET_FILE: cannot read {path}: {e}"))?;
            let s = text.trim();
            if s.is_empty() {
                return Err(format!("SVC_REGISTRATION_SECRET_FILE: {path} is empty"));
            }
            Some(Secret(s.to_string()))
        }
        (None, None) => None,
    };

    Ok(registration_secret)
}

/// An identity that older agents kept in the config file, to be migrated.
fn legacy_identity(m: &Mapping, ctx: &mut Ctx) -> Option<(String, Secret)> {
    match (m.get("clientId"), m.get("authToken")) {
        (Some(Value::String(c)), Some(Value::String(t))) if !c.is_empty() && !t.is_empty() => {
            Some((c.clone(), Secret(t.clone())))
        }
        (None, None) => None,
        _ => {
            ctx.warnings
                .push("clientId/authToken in the config file are incomplete; not migrated".into());
            None
        }
    }
}

/// Removes the migrated `clientId` / `authToken` keys from the config text, keeping the
/// order of the other keys. (Comments are not kept: serde_yaml_ng does not carry them.)
pub fn without_legacy_identity(file_text: &str) -> Result<String, String> {
    let mut v: Value = serde_yaml_ng::from_str(file_text).map_err(|e| e.to_string())?;
    if let Value::Mapping(m) = &mut v {
        m.shift_remove("clientId");
        m.shift_remove("authToken");
    }
    serde_yaml_ng::to_string(&v).map_err(|e| e.to_string())
}

/// The agent mode, derived in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Unregistered,
    Inbound,
    Outbound,
}

impl Mode {
    /// No identity: unregistered; identity and `serverUrl`: inbound; identity alone: outbound.
    pub fn derive(has_identity: bool, has_server_url: bool) -> Mode {
        match (has_identity, has_server_url) {
            (false, _) => Mode::Unregistered,
            (true, true) => Mode::Inbound,
            (true, false) => Mode::Outbound,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Unregistered => "unregistered",
            Mode::Inbound => "inbound",
            Mode::Outbound => "outbound",
        }
    }
}

/// Compares in constant time (for equal lengths; the length is not secret).
pub fn secret_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_compare() {
        assert!(secret_eq(b"abcdef", b"abcdef"));
        assert!(!secret_eq(b"abcdef", b"abcdeg"));
        assert!(!secret_eq(b"abc", b"abcdef"));
    }

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn ok(e: &[(&str, &str)], text: &str) -> Loaded {
        load(&env(e), Some(text), Path::new("/opt/agent")).expect("config should load")
    }

    fn err(e: &[(&str, &str)], text: &str) -> String {
        load(&env(e), Some(text), Path::new("/opt/agent"))
            .expect_err("config should fail")
            .message
    }

    #[test]
    fn defaults() {
        let l = load(&env(&[]), None, Path::new("/opt/agent")).unwrap();
        let c = l.config;
        assert_eq!(c.keepalived, KeepalivedConfig::default());
        assert_eq!(c.listen_port, 3011);
        assert!(c.enable_status_page && c.enable_register_page && !c.allow_self_signed);
        assert_eq!(c.data_dir, Path::new("/opt/agent/data"));
        assert_eq!(c.proc_dir, Path::new("/proc"));
        assert_eq!(c.config_path, Path::new(DEFAULT_CONFIG));
        assert_eq!(c.log_level, LogLevel::Info);
        assert_eq!(c.log_format, LogFormat::Pretty);
        assert_eq!(c.actions.drain_file, None, "actions are opt-in");
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn env_overrides_win() {
        let l = ok(
            &[
                ("SVC_CLIENT_PORT", "4000"),
                ("SVC_NOTIFY_FIFO", "/tmp/f"),
                ("SVC_NOTIFY_TOKEN", "0123456789abcdefX"),
                ("LOG_LEVEL", "debug"),
                ("NODE_ENV", "production"),
                ("SVC_CONTAINER", "true"),
                ("SVC_PROC_DIR", "/host/proc"),
            ],
            "listenPort: 5000\nlogLevel: error\nkeepalived:\n  notifyFifo: /x\n  notifyToken: aaaaaaaaaaaaaaaaaaaa\n",
        );
        let c = l.config;
        assert_eq!(c.listen_port, 4000);
        assert_eq!(
            c.keepalived.notify_fifo.as_deref(),
            Some(Path::new("/tmp/f"))
        );
        assert_eq!(
            c.keepalived.notify_token.as_ref().unwrap().expose(),
            "0123456789abcdefX"
        );
        assert_eq!(c.log_level, LogLevel::Debug);
        assert_eq!(c.log_format, LogFormat::Json);
        assert!(c.container);
        assert_eq!(c.data_dir, Path::new(CONTAINER_DATA_DIR));
        assert_eq!(c.proc_dir, Path::new("/host/proc"));
        assert!(!format!("{c:?}").contains("0123456789abcdefX"));
    }

    #[test]
    fn invalid_values_stop_with_the_problem_named() {
        assert!(err(&[], "keepalived:\n  pollInterval: -1\n").contains("keepalived.pollInterval"));
        assert!(
            err(&[], "keepalived:\n  dumpTimeoutMs: abc\n").contains("keepalived.dumpTimeoutMs")
        );
        assert!(err(&[], "keepalived:\n  jsonSignal: 9\n").contains("keepalived.jsonSignal"));
        assert!(err(&[], "keepalived:\n  dataFile: relative\n").contains("keepalived.dataFile"));
        assert!(err(&[], "keepalived:\n  notifyToken: short\n").contains("keepalived.notifyToken"));
        assert!(err(&[("SVC_NOTIFY_TOKEN", "short")], "").contains("SVC_NOTIFY_TOKEN"));
        assert!(err(&[], "keepalived:\n  pollInterval: 0\n").contains("all triggers are off"));
        assert!(err(&[], "listenPort: 70000\n").contains("listenPort"));
        assert!(err(&[], "maxServers: 0\n").contains("maxServers"));
        assert!(err(&[], "maxServers: 9\n").contains("maxServers"));
        assert!(err(&[("SVC_CLIENT_PORT", "0")], "").contains("SVC_CLIENT_PORT"));
        assert!(err(&[], "allowedNetworks: [10.0.0.0/8, nonsense]\n").contains("'nonsense'"));
        assert!(err(
            &[],
            "tls:\n  cert: /nonexistent/c.pem\n  key: /nonexistent/k.pem\n"
        )
        .contains("tls.cert"));
        assert!(err(
            &[
                ("SVC_REGISTRATION_SECRET", "a"),
                ("SVC_REGISTRATION_SECRET_FILE", "/x")
            ],
            ""
        )
        .contains("both set"));
        assert!(err(
            &[("SVC_REGISTRATION_SECRET_FILE", "/nonexistent/secret")],
            ""
        )
        .contains("cannot read"));
        assert!(err(&[], "serverUrl: ftp://x\n").contains("serverUrl"));
        assert!(err(&[], "actions:\n  drainFile: drain\n").contains("actions.drainFile"));
        assert!(err(&[], "[1, 2]\n").contains("mapping"));
        assert!(err(&[], "a: [\n").contains("does not parse"));
    }

    #[test]
    fn soft_problems_are_warnings() {
        let l = ok(
            &[],
            "logLevel: loud\nallowSelfSignedCertificates: maybe\nregistrationSecret: s\nkeepalived:\n  pollInterval: 0\n  notifyFifo: /tmp/fifo\n",
        );
        assert_eq!(l.warnings.len(), 3, "{:?}", l.warnings);
        assert!(!l.config.allow_self_signed);
        assert!(l.config.registration_secret.is_none());
        assert_eq!(l.config.keepalived.poll_interval_secs, 0.0);
        let l = ok(&[], "allowedNetworks: [10.0.0.1, 192.168.0.0/16]\n");
        assert_eq!(l.config.allowed_networks.len(), 2);
    }

    #[test]
    fn legacy_identity_is_found_and_removed_from_text() {
        let text = "serverUrl: http://s:3000\nclientId: c1\nauthToken: tok\nlistenPort: 3012\n";
        let l = ok(&[], text);
        let (c, t) = l.config.legacy_identity.unwrap();
        assert_eq!((c.as_str(), t.expose()), ("c1", "tok"));
        let rest = without_legacy_identity(text).unwrap();
        assert!(!rest.contains("clientId") && !rest.contains("tok"));
        assert!(rest.find("serverUrl").unwrap() < rest.find("listenPort").unwrap());
    }
}
