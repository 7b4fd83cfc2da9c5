//! The server's configuration: file location, loading, validation, defaults,
//! environment overrides and generated secrets.
//!
//! Loaded once at start into a frozen [`ServerConfig`]; an invalid value is a
//! [`ConfigError`] naming the field, which ends the start with exit code 1.

pub mod access;
mod fields;
pub mod ha;
pub mod heartbeat;
pub mod rewrite;
pub mod settings;
pub mod values;
mod webhooks;

use crate::secrets::random_hex;
use access::{parse_audit, parse_oidc, parse_security};
pub use access::{MetricsToken, OidcConfig, SecurityConfig};
pub use fields::ConfigError;
use fields::{opt_string, scalar_text, section, string_list};
use rewrite::Addition;
pub use rewrite::{write_section, write_settings};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
pub use values::{LogLevel, ProxyRule};
pub use webhooks::WebhooksConfig;

/// Defaults of the settings block, in the order they are written.
pub const SETTINGS_DEFAULTS: [(&str, &str); 7] = [
    ("token_retention_days", "30"),
    ("token_cleanup_interval_hours", "24"),
    ("notification_retention_days", "90"),
    ("notification_retention_count", "500"),
    ("notification_cleanup_interval_hours", "24"),
    // Cluster history, trimmed by the notification cleanup.
    ("history_retention_days", "400"),
    ("activity_level_overrides", ""),
];

const KNOWN_TOP_LEVEL: [&str; 12] = [
    "audit",
    "webhooks",
    "ha",
    "heartbeat",
    "jwtSecret",
    "secretKey",
    "oidc",
    "jwtExpiresIn",
    "settings",
    "logLevel",
    "port",
    "security",
];

/// A snapshot of the environment variables the server reads, so tests can give
/// their own.
#[derive(Debug, Clone, Default)]
pub struct Env(HashMap<String, String>);

impl Env {
    pub fn from_process() -> Env {
        Env(std::env::vars()
            .filter(|(k, _)| {
                k.starts_with("SVC_") || k == "LOG_LEVEL" || k == "LOG_FORMAT" || k == "NODE_ENV"
            })
            .collect())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    pub fn with(mut self, key: &str, value: &str) -> Env {
        self.0.insert(key.to_owned(), value.to_owned());
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Pretty,
}

/// `LOG_FORMAT` wins; unset means JSON under `NODE_ENV=production`, else pretty.
pub fn log_format(env: &Env) -> Result<LogFormat, ConfigError> {
    match env.get("LOG_FORMAT") {
        Some("json") => Ok(LogFormat::Json),
        Some("pretty") => Ok(LogFormat::Pretty),
        Some(other) => Err(ConfigError::new(
            "LOG_FORMAT",
            format!("\"{other}\" is not json or pretty"),
        )),
        None if env.get("NODE_ENV") == Some("production") => Ok(LogFormat::Json),
        None => Ok(LogFormat::Pretty),
    }
}

/// `LOG_LEVEL` from the environment, if set.
pub fn env_log_level(env: &Env) -> Result<Option<LogLevel>, ConfigError> {
    env.get("LOG_LEVEL")
        .map(|v| v.parse().map_err(|m| ConfigError::new("LOG_LEVEL", m)))
        .transpose()
}

/// The frozen configuration the server runs with.
#[derive(Clone)]
pub struct ServerConfig {
    pub path: PathBuf,
    pub data_dir: PathBuf,
    pub port: u16,
    pub log_level: LogLevel,
    pub jwt_secret: String,
    pub secret_key: String,
    /// False while a generated `secretKey` could not be written back: outbound
    /// registrations are refused then, since their tokens could never be decrypted
    /// after a restart.
    pub secret_key_persisted: bool,
    pub jwt_expires_in: Duration,
    pub oidc: OidcConfig,
    pub security: SecurityConfig,
    pub webhooks: WebhooksConfig,
    /// The settings block: defaults filled in, hand-added keys as read.
    pub settings: Map<String, Value>,
    /// The `heartbeat` block as read at start; live in `heartbeat::Heartbeat`.
    pub heartbeat: heartbeat::HeartbeatConfig,
    /// The `ha` block: the VIP that makes this server the webhook sender.
    pub ha: ha::HaConfig,
    /// `SVC_TEST_HOOKS=1`: the routes under `/api/v1/test-hooks/` exist (tests
    /// only; see doc/install.md). Off by default.
    pub test_hooks: bool,
    pub admin_username: String,
    pub admin_password: Option<String>,
    /// `audit.retention_days`: audit entries older than this are pruned daily.
    pub audit_retention_days: u32,
}

impl fmt::Debug for ServerConfig {
    // Written by hand so that no secret can reach a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("path", &self.path)
            .field("data_dir", &self.data_dir)
            .field("port", &self.port)
            .field("log_level", &self.log_level)
            .field("jwt_expires_in", &self.jwt_expires_in)
            .finish_non_exhaustive()
    }
}

/// What loading produced besides the config: lines to log once logging is set up.
pub struct Loaded {
    pub config: ServerConfig,
    pub warnings: Vec<String>,
    pub notices: Vec<String>,
}

pub fn data_dir(env: &Env) -> PathBuf {
    PathBuf::from(env.get("SVC_SERVER_DATA_DIR").unwrap_or("./data"))
}

pub fn config_path(env: &Env) -> PathBuf {
    match env.get("SVC_SERVER_CONFIG") {
        Some(p) => PathBuf::from(p),
        None => data_dir(env).join("config.yaml"),
    }
}

/// Reads, validates and (when a known key was missing) writes back the config file.
pub fn load(env: &Env) -> Result<Loaded, ConfigError> {
    let data_dir = data_dir(env);
    let path = config_path(env);
    vrrp_fs::ensure_private_dir(&data_dir).map_err(|e| {
        ConfigError::new(
            "SVC_SERVER_DATA_DIR",
            format!("cannot create {}: {e}", data_dir.display()),
        )
    })?;
    let mut warnings = Vec::new();
    let mut notices = Vec::new();

    let (existing, root) = read_document(&path)?;

    for key in root
        .keys()
        .filter(|k| !KNOWN_TOP_LEVEL.contains(&k.as_str()))
    {
        warnings.push(format!(
            "Unknown configuration key \"{key}\" in {} (kept, not used)",
            path.display()
        ));
    }

    let mut additions = Vec::new();
    let (jwt_secret, secret_key, generated_secret_key) = secrets(&root, &mut additions)?;

    let jwt_expires_in = match root.get("jwtExpiresIn") {
        None | Some(Value::Null) => Duration::from_secs(12 * 3600),
        Some(v) => values::parse_lifetime(&scalar_text(v, "jwtExpiresIn")?)
            .map_err(|m| ConfigError::new("jwtExpiresIn", m))?,
    };

    let mut port = match root.get("port") {
        None | Some(Value::Null) => 3010,
        Some(v) => {
            values::parse_port(&scalar_text(v, "port")?).map_err(|m| ConfigError::new("port", m))?
        }
    };
    if let Some(p) = env.get("SVC_SERVER_PORT") {
        port = values::parse_port(p).map_err(|m| ConfigError::new("SVC_SERVER_PORT", m))?;
    }

    let mut log_level = match root.get("logLevel") {
        None | Some(Value::Null) => LogLevel::Info,
        Some(v) => scalar_text(v, "logLevel")?
            .parse()
            .map_err(|m| ConfigError::new("logLevel", m))?,
    };
    if let Some(level) = env_log_level(env)? {
        log_level = level;
    }
    log_format(env)?;

    let security = parse_security(
        root.get("security"),
        env.get("SVC_TRUSTED_PROXIES"),
        &mut warnings,
    )?;
    let oidc = parse_oidc(root.get("oidc"), &mut warnings)?;
    let audit_retention_days = parse_audit(root.get("audit"), &mut warnings)?;
    let webhooks = parse_webhooks(root.get("webhooks"))?;
    let settings = parse_settings(root.get("settings"), &mut additions, &mut warnings)?;
    let heartbeat = heartbeat::parse_block(root.get(heartbeat::SECTION))
        .map_err(|(field, message)| ConfigError::new(field, message))?;
    let ha = ha::parse_block(root.get(ha::SECTION))
        .map_err(|(field, message)| ConfigError::new(field, message))?;

    let secret_key_persisted = write_back(
        &path,
        existing.as_deref(),
        &root,
        &additions,
        (&jwt_secret, &secret_key, generated_secret_key),
        &mut warnings,
        &mut notices,
    )?;

    Ok(Loaded {
        config: ServerConfig {
            path,
            data_dir,
            port,
            log_level,
            jwt_secret,
            secret_key,
            secret_key_persisted,
            jwt_expires_in,
            oidc,
            security,
            webhooks,
            settings,
            heartbeat,
            ha,
            test_hooks: env.get("SVC_TEST_HOOKS") == Some("1"),
            admin_username: env.get("SVC_ADMIN_USERNAME").unwrap_or("admin").to_owned(),
            admin_password: env.get("SVC_ADMIN_PASSWORD").map(str::to_owned),
            audit_retention_days,
        },
        warnings,
        notices,
    })
}

/// The config file's text (absent on a first run) and its keys.
fn read_document(path: &Path) -> Result<(Option<String>, Map<String, Value>), ConfigError> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(ConfigError::new(
                "config",
                format!("cannot read {}: {e}", path.display()),
            ))
        }
    };
    let doc: Value = match &existing {
        Some(text) if !text.trim().is_empty() => serde_yaml_ng::from_str(text).map_err(|e| {
            ConfigError::new(
                "config",
                format!("{} is not valid YAML or JSON: {e}", path.display()),
            )
        })?,
        _ => Value::Object(Map::new()),
    };
    let root = match doc {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => {
            return Err(ConfigError::new(
                "config",
                format!("{} must hold a mapping of keys", path.display()),
            ))
        }
    };

    Ok((existing, root))
}

/// The two generated secrets, taken from the file or made now (and added to
/// `additions`); whether the secret key was made now.
fn secrets(
    root: &Map<String, Value>,
    additions: &mut Vec<Addition>,
) -> Result<(String, String, bool), ConfigError> {
    let mut generated_secret_key = false;
    let jwt_secret = match opt_string(root, "jwtSecret")? {
        Some(s) => s,
        None => {
            let s = random_hex(64);
            additions.push(Addition {
                section: None,
                key: "jwtSecret".into(),
                value: Value::String(s.clone()),
            });
            s
        }
    };
    let secret_key = match opt_string(root, "secretKey")? {
        Some(s) => s,
        None => {
            generated_secret_key = true;
            let s = random_hex(32);
            additions.push(Addition {
                section: None,
                key: "secretKey".into(),
                value: Value::String(s.clone()),
            });
            s
        }
    };

    Ok((jwt_secret, secret_key, generated_secret_key))
}

/// Writes what the start added: the whole file on a first run, the missing
/// keys in place otherwise (whole when in place fails); tightens a loose mode.
/// Returns whether the secret key is on disk (outbound tokens are sealed with
/// it, so a key that dies with the process must not seal any).
fn write_back(
    path: &Path,
    existing: Option<&str>,
    root: &Map<String, Value>,
    additions: &[Addition],
    (jwt_secret, secret_key, generated_secret_key): (&str, &str, bool),
    warnings: &mut Vec<String>,
    notices: &mut Vec<String>,
) -> Result<bool, ConfigError> {
    let mut secret_key_persisted = true;
    if existing.is_none() {
        let text = first_run_file(jwt_secret, secret_key);
        match vrrp_fs::write_private_atomic(path, text.as_bytes()) {
            Ok(()) => notices.push(format!(
                "Created configuration file {} with generated secrets",
                path.display()
            )),
            Err(e) => {
                secret_key_persisted = false;
                warnings.push(format!("Cannot write configuration file {}: {e}; generated secrets live only until the next restart, outbound registrations are refused", path.display()));
            }
        }
    } else if !additions.is_empty() {
        let original = existing.unwrap_or_default();
        let text = match rewrite::add_missing(original, additions) {
            Ok(t) if verify_additions(&t, additions) => t,
            _ => {
                warnings.push(format!("{} could not take the missing keys in place; it is rewritten whole and loses its comments", path.display()));
                reserialise(root.clone(), additions)?
            }
        };
        let names: Vec<String> = additions
            .iter()
            .map(|a| match a.section {
                Some(s) => format!("{s}.{}", a.key),
                None => a.key.clone(),
            })
            .collect();
        match vrrp_fs::write_private_atomic(path, text.as_bytes()) {
            Ok(()) => notices.push(format!(
                "Added missing keys to {}: {}",
                path.display(),
                names.join(", ")
            )),
            Err(e) => {
                if generated_secret_key {
                    secret_key_persisted = false;
                }
                warnings.push(format!("Cannot write configuration file {}: {e}; missing keys ({}) live only until the next restart", path.display(), names.join(", ")));
            }
        }
    } else if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
                Ok(()) => warnings.push(format!(
                    "{} was readable by others; its mode is now 0600",
                    path.display()
                )),
                Err(e) => warnings.push(format!(
                    "{} is readable by others and its mode cannot be changed: {e}",
                    path.display()
                )),
            }
        }
    }

    Ok(secret_key_persisted)
}

fn parse_settings(
    v: Option<&Value>,
    additions: &mut Vec<Addition>,
    warnings: &mut Vec<String>,
) -> Result<Map<String, Value>, ConfigError> {
    let empty = Map::new();
    let block = section(v, "settings", &empty)?;
    let mut out = Map::new();
    for (key, default) in SETTINGS_DEFAULTS {
        let value = match block.get(key) {
            None => {
                additions.push(Addition {
                    section: Some("settings"),
                    key: key.into(),
                    value: Value::String(default.into()),
                });
                default.to_owned()
            }
            Some(Value::Null) => String::new(),
            Some(v) => scalar_text(v, &format!("settings.{key}"))?,
        };
        if key == crate::config::settings::OVERRIDES_KEY {
            crate::config::settings::parse_overrides(&value)
                .map_err(|m| ConfigError::new(format!("settings.{key}"), m))?;
        } else if !is_whole_number(&value) {
            return Err(ConfigError::new(
                format!("settings.{key}"),
                format!("\"{value}\" is not a non-negative whole number"),
            ));
        } else {
            let n = value.parse::<u64>().unwrap_or(u64::MAX);
            crate::config::settings::bounded(key, n)
                .map_err(|m| ConfigError::new(format!("settings.{key}"), m))?;
        }
        out.insert(key.to_owned(), Value::String(value));
    }
    for (key, value) in block {
        if !out.contains_key(key) {
            warnings.push(format!(
                "Unknown settings key \"settings.{key}\" (kept, not used)"
            ));
            out.insert(key.clone(), value.clone());
        }
    }
    Ok(out)
}

fn parse_webhooks(v: Option<&Value>) -> Result<WebhooksConfig, ConfigError> {
    let empty = Map::new();
    let block = section(v, "webhooks", &empty)?;
    let items = string_list(block.get("allowed_networks"), "webhooks.allowed_networks")?;
    let allowed_networks = webhooks::networks(&items).map_err(|i| {
        ConfigError::new(
            format!("webhooks.allowed_networks[{i}]"),
            webhooks::NETWORK_RULE,
        )
    })?;
    Ok(WebhooksConfig { allowed_networks })
}

fn is_whole_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn verify_additions(text: &str, additions: &[Addition]) -> bool {
    let Ok(doc) = serde_yaml_ng::from_str::<Value>(text) else {
        return false;
    };
    additions.iter().all(|a| {
        let parent = match a.section {
            None => Some(&doc),
            Some(s) => doc.get(s),
        };
        parent.and_then(|p| p.get(&a.key)) == Some(&a.value)
    })
}

fn reserialise(
    mut root: Map<String, Value>,
    additions: &[Addition],
) -> Result<String, ConfigError> {
    for a in additions {
        let target = match a.section {
            None => &mut root,
            Some(s) => match root.entry(s).or_insert_with(|| Value::Object(Map::new())) {
                Value::Object(m) => m,
                _ => return Err(ConfigError::new(s, "must be a mapping of keys")),
            },
        };
        target.insert(a.key.clone(), a.value.clone());
    }
    serde_yaml_ng::to_string(&Value::Object(root))
        .map_err(|e| ConfigError::new("config", e.to_string()))
}

fn first_run_file(jwt_secret: &str, secret_key: &str) -> String {
    let mut settings = String::new();
    for (key, default) in SETTINGS_DEFAULTS {
        settings.push_str(&format!("  {key}: '{default}'\n"));
    }
    format!(
        "# vrrp-monitor server configuration, created on first start.\n\
         # The secrets below were generated on this machine. Keep this file private\n\
         # (mode 0600); never copy secretKey to another installation.\n\
         port: 3010\n\
         logLevel: info\n\
         # Session lifetime: seconds, or e.g. 30m, 12h, 7d.\n\
         jwtExpiresIn: 12h\n\
         jwtSecret: '{jwt_secret}'\n\
         secretKey: '{secret_key}'\n\
         security:\n\
         \x20 # Send Strict-Transport-Security (restart needed).\n\
         \x20 hsts: false\n\
         \x20 # Proxies whose X-Forwarded-For/-Proto are believed: addresses, CIDR\n\
         \x20 # networks (v4 or v6), loopback, linklocal, uniquelocal. Restart needed.\n\
         \x20 trusted_proxies: []\n\
         \x20 # IPv4 addresses or CIDR networks agents may connect from; empty allows all.\n\
         \x20 allowed_networks: []\n\
         \x20 # IPv4 addresses or CIDR networks that may read GET /metrics; empty allows all.\n\
         \x20 metrics_allowed_networks: []\n\
         \x20 allow_self_signed_agent_certificates: false\n\
         oidc:\n\
         \x20 enabled: false\n\
         webhooks:\n\
         \x20 # Link-local networks (169.254.0.0/16, fe80::/10) webhooks may reach;\n\
         \x20 # refused otherwise. Private and loopback targets are always allowed.\n\
         \x20 allowed_networks: []\n\
         settings:\n{settings}"
    )
}
