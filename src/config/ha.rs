//! The `ha` block (doc/ha.md): a server pair behind a VIP that
//! keepalived moves. `vip` (empty: no pair, this server sends webhooks as
//! always) is the address whose presence on a local interface makes this server
//! the one that sends webhooks; `handover_seconds` (default 30) is how far back
//! a new holder looks for events it has not delivered. Pure parsing only.

use serde_json::Value;
use std::net::IpAddr;

pub const SECTION: &str = "ha";
pub const DEFAULT_HANDOVER_SECS: u64 = 30;
pub const MAX_HANDOVER_SECS: u64 = 3600;

/// The block as the server runs it (a restart applies a change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaConfig {
    pub vip: Option<IpAddr>,
    pub handover_seconds: u64,
}

impl Default for HaConfig {
    fn default() -> Self {
        HaConfig {
            vip: None,
            handover_seconds: DEFAULT_HANDOVER_SECS,
        }
    }
}

/// The block from the config file; errors name `ha.<key>`.
pub fn parse_block(v: Option<&Value>) -> Result<HaConfig, (String, String)> {
    let block = match v {
        None | Some(Value::Null) => return Ok(HaConfig::default()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err((SECTION.into(), "must be a mapping of keys".into())),
    };
    let mut out = HaConfig::default();
    match block.get("vip") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.trim().is_empty() => {}
        Some(Value::String(s)) => {
            // `10.0.0.5/24` as keepalived writes it is accepted: the address counts.
            let addr = s.trim().split('/').next().unwrap_or_default();
            out.vip = Some(
                addr.parse()
                    .map_err(|_| ("ha.vip".to_owned(), format!("\"{s}\" is not an IP address")))?,
            );
        }
        Some(_) => return Err(("ha.vip".into(), "must be an IP address".into())),
    }
    match block.get("handover_seconds") {
        None | Some(Value::Null) => {}
        Some(v) => {
            out.handover_seconds = match v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
            .filter(|n| *n <= MAX_HANDOVER_SECS)
            .ok_or_else(|| {
                (
                    "ha.handover_seconds".to_owned(),
                    format!("must be a whole number of seconds up to {MAX_HANDOVER_SECS}"),
                )
            })?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block() {
        assert_eq!(parse_block(None).unwrap(), HaConfig::default());
        let ha = parse_block(Some(
            &json!({"vip": "203.0.113.100/24", "handover_seconds": "45"}),
        ))
        .unwrap();
        assert_eq!(ha.vip, Some("203.0.113.100".parse().unwrap()));
        assert_eq!(ha.handover_seconds, 45);
        assert_eq!(parse_block(Some(&json!({"vip": ""}))).unwrap().vip, None);
        for (block, field) in [
            (json!({"vip": "host.example"}), "ha.vip"),
            (json!({"vip": 5}), "ha.vip"),
            (json!({"handover_seconds": -1}), "ha.handover_seconds"),
            (json!({"handover_seconds": 3601}), "ha.handover_seconds"),
            (json!([]), "ha"),
        ] {
            assert_eq!(parse_block(Some(&block)).unwrap_err().0, field, "{block}");
        }
    }
}
