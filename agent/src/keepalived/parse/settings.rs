//! The settings of an instance that decide whether a failover would work, which the
//! server compares across a cluster's members: VRRP version, authentication (its type,
//! and the password the connection turns into a fingerprint), preemption and its delay,
//! accept mode, the master's advert interval, unicast, the source address and the
//! count of configuration faults.
//!
//! One pure function per dump line, from the text dump (`take`, with what a block said
//! in [`BlockNotes`] and what the absence of a line means applied by `finish`) and from
//! the JSON dump (`from_json`). The password is kept only as an [`AuthPassword`], which
//! neither serde nor `Debug` ever shows.

use serde_json::Value;
use vrrp_protocol::{AuthPassword, VrrpInstance, VrrpState};

use super::limits;
use super::shared::{first_number, parse_advert_interval};
use super::trackers::address_of;

/// What an instance block of the text dump said that the instance has no field for.
#[derive(Default)]
pub(super) struct BlockNotes {
    /// A `Flags:` line was printed (keepalived 2.2 and later): every flag of the
    /// instance is listed there, so no `Using unicast` means multicast.
    flags_line: bool,
    using_unicast: bool,
    /// `Preempt = ` was printed: keepalived prints `Preempt delay` whenever the delay
    /// is not 0, in every version.
    preempt_line: bool,
    /// `Authentication type = ` was printed (even with a value not kept).
    auth_line: bool,
}

impl BlockNotes {
    /// `Flags: none`, or `Flags:` with the flags on the indented lines that follow
    /// (each goes to [`BlockNotes::flag`]).
    pub(super) fn flags_line(&mut self, rest: &str) {
        self.flags_line = true;
        self.flag(rest);
    }

    /// One flag as keepalived words it (`Using unicast`, ...).
    pub(super) fn flag(&mut self, entry: &str) {
        if entry.trim() == "Using unicast" {
            self.using_unicast = true;
        }
    }
}

/// keepalived's authentication type → the wire's word: `none`, `pass`
/// (`SIMPLE_PASSWORD`), `ah` (`IPSEC_AH`), any other word lowercased.
pub(super) fn auth_type_word(v: &str) -> Option<String> {
    Some(match limits::word(v.trim())? {
        "none" => "none".to_string(),
        "SIMPLE_PASSWORD" => "pass".to_string(),
        "IPSEC_AH" => "ah".to_string(),
        other => other.to_ascii_lowercase(),
    })
}

/// The `Password = ` value: the password as printed (2.3 and older), or masked
/// (2.4 prints `********`): then no password, and `Some(true)` for the mask. An empty
/// or overlong value is neither.
pub(super) fn password(v: &str) -> (Option<AuthPassword>, Option<bool>) {
    let Some(v) = limits::word(v) else {
        return (None, None);
    };
    if v.chars().all(|c| c == '*') {
        (None, Some(true))
    } else {
        (Some(AuthPassword::new(v)), None)
    }
}

/// `enabled` / `disabled` (keepalived's words for its switches).
pub(super) fn enabled(v: &str) -> Option<bool> {
    match v.trim() {
        "enabled" => Some(true),
        "disabled" => Some(false),
        _ => None,
    }
}

/// `30 secs`, `0.5 secs`, `1.00 sec`, `1000 milli-sec` → seconds.
pub(super) fn seconds(v: &str) -> Option<f64> {
    parse_advert_interval(v)
}

/// Takes one `key = value` line of an instance block; false when the key is none of
/// these settings.
pub(super) fn take(
    inst: &mut VrrpInstance,
    notes: &mut BlockNotes,
    key: &str,
    value: &str,
) -> bool {
    match key {
        "VRRP Version" => inst.vrrp_version = first_number(value),
        "Authentication type" => {
            notes.auth_line = true;
            inst.auth_type = auth_type_word(value);
        }
        "Password" => (inst.auth_password, inst.auth_password_masked) = password(value),
        "Preempt" => {
            notes.preempt_line = true;
            inst.preempt = enabled(value);
        }
        "Preempt delay" => inst.preempt_delay = seconds(value),
        "Accept" => inst.accept_mode = enabled(value),
        // 2.3.2 and later on a VRRPv3 backup; 2.2 prints it as well, after `Advert
        // interval`, besides the coarser `Master advert int = 1.00 sec`.
        "Master advert interval" => inst.master_advert_interval = seconds(value),
        "Master advert int" => {
            if inst.master_advert_interval.is_none() {
                inst.master_advert_interval = seconds(value);
            }
        }
        // `192.0.2.11`, `192.0.2.11 (from configuration)`, `(none)`.
        "Using src_ip" => inst.source_address = address_of(value),
        "Number of config faults" => inst.config_faults = first_number(value),
        _ => return false,
    }
    true
}

/// What a finished instance block means by the lines it did not print:
/// - unicast when its flags say so or it lists unicast peers; multicast when it printed
///   its flags without `Using unicast`; unknown from a dump that prints no flags;
/// - a preempt delay of 0 when `Preempt` was printed without `Preempt delay`;
/// - no authentication when the block names its VRRP version but prints no
///   authentication type: keepalived prints the type whenever one is set (and `none` only for VRRPv2
///   from 2.0 on; VRRPv3 has no authentication).
pub(super) fn finish(inst: &mut VrrpInstance, notes: &BlockNotes) {
    if notes.using_unicast || !inst.unicast_peers.is_empty() {
        inst.uses_unicast = Some(true);
    } else if notes.flags_line {
        inst.uses_unicast = Some(false);
    }
    if notes.preempt_line && inst.preempt_delay.is_none() {
        inst.preempt_delay = Some(0.0);
    }
    if !notes.auth_line && inst.vrrp_version.is_some() {
        inst.auth_type = Some("none".to_string());
    }
}

/// A switch of the JSON dump: a boolean, or a number (`accept` is `0`/`1`).
fn json_switch(data: &Value, key: &str) -> Option<bool> {
    match data.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_u64().map(|n| n != 0),
        _ => None,
    }
}

/// Seconds of the JSON dump: finite and not negative.
fn json_seconds(data: &Value, key: &str) -> Option<f64> {
    data.get(key)?
        .as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0)
}

/// The same settings from one instance's `data` of the JSON dump. keepalived's JSON
/// has no flags, source address or config faults (the text dump gives them, see
/// `merge_text_only`); its `master_adver_int` is written for every instance, but is
/// the master's only on a VRRPv3 backup (what the text dump prints), so only that is
/// kept. `preempt_delay` comes in whole seconds.
pub(super) fn from_json(inst: &mut VrrpInstance, data: &Value) {
    inst.vrrp_version = data
        .get("version")
        .and_then(Value::as_u64)
        .and_then(|v| u8::try_from(v).ok());
    let auth = data.get("auth_type").and_then(Value::as_u64);
    inst.auth_type = match auth {
        Some(0) => Some("none".to_string()),
        Some(1) => Some("pass".to_string()),
        Some(2) => Some("ah".to_string()),
        _ => None,
    };
    if let Some(pass) = data.get("auth_data").and_then(Value::as_str) {
        (inst.auth_password, inst.auth_password_masked) = password(pass);
    }
    inst.preempt = json_switch(data, "nopreempt").map(|no| !no);
    inst.preempt_delay = json_seconds(data, "preempt_delay");
    inst.accept_mode = json_switch(data, "accept");
    if inst.vrrp_version == Some(3) && inst.state == VrrpState::Backup {
        inst.master_advert_interval = json_seconds(data, "master_adver_int");
    }
}

/// Fills what the JSON dump lacks from the text dump's instance of the same name:
/// unicast, source address and config faults always; the others only where the JSON
/// has none (`accept` exists only in builds with a firewall). The preempt delay is the
/// text dump's when it has one: the JSON cuts it to whole seconds.
pub(super) fn merge(json: &mut VrrpInstance, text: &VrrpInstance) {
    json.uses_unicast = text.uses_unicast;
    json.source_address = text.source_address.clone();
    json.config_faults = text.config_faults;
    json.vrrp_version = json.vrrp_version.or(text.vrrp_version);
    json.auth_type = json.auth_type.take().or_else(|| text.auth_type.clone());
    if json.auth_password.is_none() && json.auth_password_masked.is_none() {
        json.auth_password = text.auth_password.clone();
        json.auth_password_masked = text.auth_password_masked;
    }
    json.preempt = json.preempt.or(text.preempt);
    json.preempt_delay = text.preempt_delay.or(json.preempt_delay);
    json.accept_mode = json.accept_mode.or(text.accept_mode);
    json.master_advert_interval = json.master_advert_interval.or(text.master_advert_interval);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authentication_words() {
        assert_eq!(auth_type_word("none").as_deref(), Some("none"));
        assert_eq!(auth_type_word("SIMPLE_PASSWORD").as_deref(), Some("pass"));
        assert_eq!(auth_type_word("IPSEC_AH").as_deref(), Some("ah"));
        assert_eq!(auth_type_word(" HMAC_X ").as_deref(), Some("hmac_x"));
        assert_eq!(auth_type_word(""), None);
        assert_eq!(auth_type_word(&"A".repeat(limits::MAX_WORD + 1)), None);
    }

    #[test]
    fn a_password_is_kept_hidden_and_a_mask_is_no_password() {
        let (p, masked) = password("s3cr3t51");
        assert_eq!(p, Some(AuthPassword::new("s3cr3t51")));
        assert_eq!(masked, None);
        assert!(!format!("{p:?}").contains("s3cr3t51"));
        assert_eq!(password("********"), (None, Some(true)));
        assert_eq!(password("*"), (None, Some(true)));
        assert_eq!(password(""), (None, None));
        assert_eq!(password(&"p".repeat(limits::MAX_WORD + 1)), (None, None));
    }

    #[test]
    fn switches_and_seconds() {
        assert_eq!(enabled("enabled"), Some(true));
        assert_eq!(enabled("disabled"), Some(false));
        assert_eq!(enabled("maybe"), None);
        assert_eq!(seconds("30 secs"), Some(30.0));
        assert_eq!(seconds("0.5 secs"), Some(0.5));
        assert_eq!(seconds("1e+06 secs"), Some(1e6));
        assert_eq!(seconds("1.00 sec"), Some(1.0));
        assert_eq!(seconds("1000 milli-sec"), Some(1.0));
        assert_eq!(seconds("-1 secs"), None);
        assert_eq!(seconds("inf secs"), None);
        assert_eq!(seconds("NaN sec"), None);
    }

    fn block(lines: &[(&str, &str)], flags: Option<&[&str]>) -> VrrpInstance {
        let mut inst = VrrpInstance::default();
        let mut notes = BlockNotes::default();
        for (k, v) in lines {
            assert!(take(&mut inst, &mut notes, k, v), "{k}");
        }
        if let Some(flags) = flags {
            notes.flags_line("");
            for f in flags {
                notes.flag(f);
            }
        }
        finish(&mut inst, &notes);
        inst
    }

    #[test]
    fn what_an_absent_line_means() {
        // 2.3 and later, multicast VRRPv2 without authentication.
        let i = block(
            &[
                ("VRRP Version", "2"),
                ("Number of config faults", "0"),
                ("Using src_ip", "192.0.2.11"),
                ("Accept", "enabled"),
                ("Preempt", "disabled"),
                ("Authentication type", "none"),
            ],
            Some(&[]),
        );
        assert_eq!(i.vrrp_version, Some(2));
        assert_eq!(i.config_faults, Some(0));
        assert_eq!(i.source_address.as_deref(), Some("192.0.2.11"));
        assert_eq!((i.accept_mode, i.preempt), (Some(true), Some(false)));
        assert_eq!(i.preempt_delay, Some(0.0), "no delay line: no delay");
        assert_eq!(i.uses_unicast, Some(false), "flags without unicast");
        assert_eq!(i.auth_type.as_deref(), Some("none"));
        assert_eq!(i.master_advert_interval, None);

        // A unicast VRRPv3 backup with a delay: no authentication line at all.
        let i = block(
            &[
                ("VRRP Version", "3"),
                ("Master advert int", "1.00 sec"),
                ("Using src_ip", "198.51.100.12 (from configuration)"),
                ("Master advert interval", "250 milli-sec"),
                ("Preempt", "enabled"),
                ("Preempt delay", "30 secs"),
            ],
            Some(&["Using unicast"]),
        );
        assert_eq!(i.master_advert_interval, Some(0.25), "the finer line wins");
        assert_eq!(i.source_address.as_deref(), Some("198.51.100.12"));
        assert_eq!(i.preempt_delay, Some(30.0));
        assert_eq!(i.uses_unicast, Some(true));
        assert_eq!(i.auth_type.as_deref(), Some("none"));

        // A dump without flags (2.1 and older) says unicast only by its peers.
        let mut peers = VrrpInstance {
            unicast_peers: vec!["192.0.2.2".into()],
            ..Default::default()
        };
        finish(&mut peers, &BlockNotes::default());
        assert_eq!(peers.uses_unicast, Some(true));
        let i = block(&[("Using src_ip", "(none)")], None);
        assert_eq!(i.uses_unicast, None, "no flags, no peers: unknown");
        assert_eq!(i.source_address, None);
        assert_eq!(i.preempt_delay, None, "no Preempt line: unknown");
        assert_eq!(
            i.auth_type, None,
            "no version line: not an instance we know"
        );

        // A password, then its type.
        let i = block(
            &[
                ("Authentication type", "SIMPLE_PASSWORD"),
                ("Password", "s3cr3t51"),
            ],
            None,
        );
        assert_eq!(i.auth_type.as_deref(), Some("pass"));
        assert_eq!(i.auth_password, Some(AuthPassword::new("s3cr3t51")));
        let out = serde_json::to_string(&i).unwrap() + &format!("{i:?}");
        assert!(!out.contains("s3cr3t51"), "{out}");
        assert!(!take(
            &mut VrrpInstance::default(),
            &mut BlockNotes::default(),
            "Priority",
            "1"
        ));
    }

    #[test]
    fn json_settings() {
        let data = serde_json::json!({
            "version": 3, "auth_type": 1, "auth_data": "s3cr3t51", "nopreempt": true,
            "preempt_delay": 30, "accept": 0, "master_adver_int": 0.5
        });
        let mut i = VrrpInstance {
            state: VrrpState::Backup,
            ..Default::default()
        };
        from_json(&mut i, &data);
        assert_eq!(i.vrrp_version, Some(3));
        assert_eq!(i.auth_type.as_deref(), Some("pass"));
        assert_eq!(i.auth_password, Some(AuthPassword::new("s3cr3t51")));
        assert_eq!((i.preempt, i.preempt_delay), (Some(false), Some(30.0)));
        assert_eq!(i.accept_mode, Some(false));
        assert_eq!(i.master_advert_interval, Some(0.5));
        // A master's (or a VRRPv2 instance's) master_adver_int is its own setting.
        let mut m = VrrpInstance {
            state: VrrpState::Master,
            ..Default::default()
        };
        from_json(&mut m, &data);
        assert_eq!(m.master_advert_interval, None);
        // 2.4 masks the password; odd values read as absent.
        let odd = serde_json::json!({
            "version": 999, "auth_type": 7, "auth_data": "********", "nopreempt": "no",
            "preempt_delay": -1, "accept": true
        });
        let mut o = VrrpInstance::default();
        from_json(&mut o, &odd);
        assert_eq!((o.vrrp_version, o.auth_type.as_deref()), (None, None));
        assert_eq!(
            (o.auth_password, o.auth_password_masked),
            (None, Some(true))
        );
        assert_eq!(
            (o.preempt, o.preempt_delay, o.accept_mode),
            (None, None, Some(true))
        );
    }

    #[test]
    fn the_json_keeps_its_own_and_takes_what_only_the_text_has() {
        let mut json = VrrpInstance {
            vrrp_version: Some(2),
            auth_type: Some("pass".into()),
            auth_password: Some(AuthPassword::new("from-json")),
            preempt: Some(true),
            preempt_delay: Some(0.0),
            ..Default::default()
        };
        let text = VrrpInstance {
            vrrp_version: Some(3),
            auth_type: Some("none".into()),
            auth_password: Some(AuthPassword::new("from-text")),
            preempt: Some(false),
            preempt_delay: Some(0.5),
            accept_mode: Some(true),
            uses_unicast: Some(true),
            source_address: Some("192.0.2.11".into()),
            config_faults: Some(0),
            ..Default::default()
        };
        merge(&mut json, &text);
        assert_eq!(json.vrrp_version, Some(2));
        assert_eq!(json.auth_type.as_deref(), Some("pass"));
        assert_eq!(json.auth_password, Some(AuthPassword::new("from-json")));
        assert_eq!(json.preempt, Some(true));
        assert_eq!(json.preempt_delay, Some(0.5), "the text's is exact");
        assert_eq!(json.accept_mode, Some(true));
        assert_eq!(json.uses_unicast, Some(true));
        assert_eq!(json.source_address.as_deref(), Some("192.0.2.11"));
        assert_eq!(json.config_faults, Some(0));
    }
}
