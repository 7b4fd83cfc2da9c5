//! Who may reach the server and how they are known: the `security` block
//! (proxies, networks, the metrics token), the `oidc` block (the provider and
//! the roles its claims give) and the `audit` block (how long entries stay).

use super::fields::{opt_bool, scalar_text, section, string_list, ConfigError};
use super::values::{self, ProxyRule};
use crate::auth::roles::Role;
use ipnet::Ipv4Net;
use serde_json::{Map, Value};
use std::fmt;

pub(super) const KNOWN_SECURITY: [&str; 6] = [
    "metrics_token",
    "allowed_networks",
    "metrics_allowed_networks",
    "trusted_proxies",
    "hsts",
    "allow_self_signed_agent_certificates",
];
pub(super) const KNOWN_OIDC: [&str; 8] = [
    "role_claim",
    "role_map",
    "default_role",
    "enabled",
    "issuer",
    "client_id",
    "client_secret",
    "redirect_uri",
];

#[derive(Clone, Default)]
pub struct OidcConfig {
    pub enabled: bool,
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    pub redirect_uri: String,
    /// The claim whose values pick a user's role at each login (e.g. `groups`);
    /// `None`: the role stays as an administrator set it.
    pub role_claim: Option<String>,
    /// Claim values per role: the highest role with a matching value wins.
    pub role_map: Vec<(Role, Vec<String>)>,
    /// The role of a user whose claim matches nothing.
    pub default_role: Role,
}

impl OidcConfig {
    /// The role the provider's claims give (only while `role_claim` is set).
    pub fn role_from_claims(&self, claims: &Map<String, Value>) -> Option<Role> {
        let claim = self.role_claim.as_deref()?;
        let values: Vec<&str> = match claims.get(claim) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let matched = self
            .role_map
            .iter()
            .filter(|(_, wanted)| wanted.iter().any(|w| values.contains(&w.as_str())))
            .map(|(role, _)| *role)
            .max();
        Some(matched.unwrap_or(self.default_role))
    }
}

impl fmt::Debug for OidcConfig {
    // By hand, so that the client secret cannot reach a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcConfig")
            .field("enabled", &self.enabled)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"****")
            .field("redirect_uri", &self.redirect_uri)
            .field("role_claim", &self.role_claim)
            .field("role_map", &self.role_map)
            .field("default_role", &self.default_role)
            .finish()
    }
}

#[derive(Debug, Clone, Default)]
pub struct SecurityConfig {
    pub hsts: bool,
    pub trusted_proxies: Vec<ProxyRule>,
    pub allowed_networks: Vec<Ipv4Net>,
    /// Who may read `GET /metrics`; empty: everyone.
    pub metrics_allowed_networks: Vec<Ipv4Net>,
    /// `security.metrics_token`: when set, `GET /metrics` needs it as a bearer token.
    pub metrics_token: Option<MetricsToken>,
    pub allow_self_signed_agent_certificates: bool,
}

/// The `/metrics` bearer token. Its `Debug` hides it; comparison takes the
/// same time wherever the first difference is.
#[derive(Clone)]
pub struct MetricsToken(String);

impl MetricsToken {
    pub fn matches(&self, presented: &str) -> bool {
        use sha2::{Digest, Sha256};
        // Hashing both first gives equal lengths, so the loop never stops early.
        let (a, b) = (
            Sha256::digest(self.0.as_bytes()),
            Sha256::digest(presented.as_bytes()),
        );
        a.iter()
            .zip(b.iter())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
    }
}

impl fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetricsToken(****)")
    }
}

pub(super) fn parse_security(
    v: Option<&Value>,
    trusted_proxies_env: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<SecurityConfig, ConfigError> {
    let empty = Map::new();
    let block = section(v, "security", &empty)?;
    for key in block
        .keys()
        .filter(|k| !KNOWN_SECURITY.contains(&k.as_str()))
    {
        warnings.push(format!(
            "Unknown configuration key \"security.{key}\" (kept, not used)"
        ));
    }
    let mut trusted_proxies = Vec::new();
    for (i, item) in string_list(block.get("trusted_proxies"), "security.trusted_proxies")?
        .iter()
        .enumerate()
    {
        let field = format!("security.trusted_proxies[{i}]");
        trusted_proxies.push(ProxyRule::parse(item).map_err(|m| ConfigError::new(field, m))?);
    }
    if let Some(list) = trusted_proxies_env {
        trusted_proxies = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| ProxyRule::parse(s).map_err(|m| ConfigError::new("SVC_TRUSTED_PROXIES", m)))
            .collect::<Result<_, _>>()?;
    }
    let allowed_networks = networks(block, "allowed_networks")?;
    let metrics_allowed_networks = networks(block, "metrics_allowed_networks")?;
    let metrics_token = match block.get("metrics_token") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let token = scalar_text(v, "security.metrics_token")?;
            // A short token can be guessed by anyone the network list lets in.
            if token.chars().count() < 16 {
                return Err(ConfigError::new(
                    "security.metrics_token",
                    "must be at least 16 characters (for example: openssl rand -hex 24)",
                ));
            }
            Some(MetricsToken(token))
        }
    };
    Ok(SecurityConfig {
        metrics_token,
        hsts: opt_bool(block.get("hsts"), "security.hsts")?.unwrap_or(false),
        trusted_proxies,
        allowed_networks,
        metrics_allowed_networks,
        allow_self_signed_agent_certificates: opt_bool(
            block.get("allow_self_signed_agent_certificates"),
            "security.allow_self_signed_agent_certificates",
        )?
        .unwrap_or(false),
    })
}

/// `oidc.role_map`: `{admin: [..], operator: [..], viewer: [..]}`.
fn parse_role_map(v: Option<&Value>) -> Result<Vec<(Role, Vec<String>)>, ConfigError> {
    let empty = Map::new();
    let block = section(v, "oidc.role_map", &empty)?;
    let mut map = Vec::new();
    for (key, values) in block {
        let field = format!("oidc.role_map.{key}");
        let role = Role::parse(key)
            .ok_or_else(|| ConfigError::new(&field, "is not a role (viewer, operator or admin)"))?;
        map.push((role, string_list(Some(values), &field)?));
    }
    Ok(map)
}

/// The `audit` block: `retention_days` (default 365, at least 1).
pub(super) fn parse_audit(
    v: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<u32, ConfigError> {
    let empty = Map::new();
    let block = section(v, "audit", &empty)?;
    for key in block.keys().filter(|k| k.as_str() != "retention_days") {
        warnings.push(format!(
            "Unknown configuration key \"audit.{key}\" (kept, not used)"
        ));
    }
    match block.get("retention_days") {
        None | Some(Value::Null) => Ok(365),
        Some(v) => {
            let text = scalar_text(v, "audit.retention_days")?;
            text.trim()
                .parse::<u32>()
                .ok()
                .filter(|d| (1..=36_500).contains(d))
                .ok_or_else(|| {
                    ConfigError::new(
                        "audit.retention_days",
                        format!("\"{text}\" is not a number of days from 1 to 36500"),
                    )
                })
        }
    }
}

pub(super) fn parse_oidc(
    v: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<OidcConfig, ConfigError> {
    let empty = Map::new();
    let block = section(v, "oidc", &empty)?;
    for key in block.keys().filter(|k| !KNOWN_OIDC.contains(&k.as_str())) {
        warnings.push(format!(
            "Unknown configuration key \"oidc.{key}\" (kept, not used)"
        ));
    }
    let enabled = opt_bool(block.get("enabled"), "oidc.enabled")?.unwrap_or(false);
    let text = |key: &str| -> Result<String, ConfigError> {
        match block.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(v) => scalar_text(v, &format!("oidc.{key}")),
        }
    };
    let oidc = OidcConfig {
        enabled,
        issuer: text("issuer")?,
        client_id: text("client_id")?,
        client_secret: text("client_secret")?,
        redirect_uri: text("redirect_uri")?,
        role_claim: Some(text("role_claim")?).filter(|c| !c.trim().is_empty()),
        role_map: parse_role_map(block.get("role_map"))?,
        default_role: match block.get("default_role") {
            None | Some(Value::Null) => Role::Viewer,
            Some(v) => {
                let text = scalar_text(v, "oidc.default_role")?;
                Role::parse(&text).ok_or_else(|| {
                    ConfigError::new(
                        "oidc.default_role",
                        format!("\"{text}\" is not a role (viewer, operator or admin)"),
                    )
                })?
            }
        },
    };
    // URLs and credentials matter only while OIDC is switched on.
    if enabled {
        for (key, value) in [
            ("issuer", &oidc.issuer),
            ("client_id", &oidc.client_id),
            ("client_secret", &oidc.client_secret),
            ("redirect_uri", &oidc.redirect_uri),
        ] {
            if value.trim().is_empty() {
                return Err(ConfigError::new(
                    format!("oidc.{key}"),
                    "is required while oidc.enabled is true",
                ));
            }
        }
        for (key, value) in [
            ("issuer", &oidc.issuer),
            ("redirect_uri", &oidc.redirect_uri),
        ] {
            if !(value.starts_with("https://") || value.starts_with("http://")) {
                return Err(ConfigError::new(
                    format!("oidc.{key}"),
                    format!("\"{value}\" is not an http(s) URL"),
                ));
            }
        }
    }
    Ok(oidc)
}

/// `security.<key>`: a list of IPv4 addresses or CIDR networks, each checked.
fn networks(block: &Map<String, Value>, key: &str) -> Result<Vec<Ipv4Net>, ConfigError> {
    let name = format!("security.{key}");
    let mut out = Vec::new();
    for (i, item) in string_list(block.get(key), &name)?.iter().enumerate() {
        out.push(
            values::parse_ipv4_net(item)
                .map_err(|m| ConfigError::new(format!("{name}[{i}]"), m))?,
        );
    }
    Ok(out)
}
