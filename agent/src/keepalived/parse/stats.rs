//! The counters dump (`keepalived.stats`, SIGUSR2): `Key: value` lines under
//! sub-headers, per instance, flattened to snake_case keys. Bounded like the rest
//! (`limits`): long lines, names and keys are left out or cut, and an instance keeps
//! at most `MAX_LIST` counters.

use super::limits::{self, MAX_INSTANCES, MAX_LINE, MAX_WORD};
use super::shared::{Counters, ParseError};

/// `Packet Errors` → `packet_errors`.
pub(super) fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// Parses the counters dump (`keepalived.stats`): `Key: value` lines under sub-headers,
/// flattened to `header_key` (`Priority Zero:` / `Received: 0` → `priority_zero_received`).
pub fn parse_stats(text: &str) -> Result<Counters, ParseError> {
    let mut out = Counters::new();
    let mut current: Option<String> = None;
    let mut header: Option<(usize, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.len() > MAX_LINE {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(name) = trimmed.strip_prefix("VRRP Instance:") {
            let name = limits::name(name.trim());
            if !out.contains_key(&name) && out.len() >= MAX_INSTANCES {
                // No room: its counters are not kept.
                current = None;
                continue;
            }
            out.entry(name.clone()).or_default();
            current = Some(name);
            header = None;
            continue;
        }
        let Some(name) = &current else { continue };
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if let Some((h_indent, _)) = &header {
            if indent <= *h_indent {
                header = None;
            }
        }
        if value.is_empty() {
            header = Some((indent, snake(key)));
            continue;
        }
        let Ok(n) = value.parse::<u64>() else {
            continue;
        };
        let key = match &header {
            Some((_, h)) => format!("{h}_{}", snake(key)),
            None => snake(key),
        };
        if key.len() > MAX_WORD {
            continue;
        }
        if let Some(m) = out.get_mut(name) {
            if m.contains_key(&key) || limits::room(m.len()) {
                m.insert(key, n);
            }
        }
    }
    if out.is_empty() && !text.trim().is_empty() && !text.contains("VRRP Instance") {
        return Err(ParseError(
            "not a keepalived counters dump (no VRRP Instance)".into(),
        ));
    }
    Ok(out)
}
