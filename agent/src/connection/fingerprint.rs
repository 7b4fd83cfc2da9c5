//! The password fingerprint, per server: AUTH_SUCCESS may carry `fingerprintKey` (hex),
//! the key this server fingerprints every agent's passwords with, so that it can tell
//! whether two members of a cluster share a password without seeing it. Each server
//! connection keeps its own key; just before a reading goes to that server, each
//! instance's `authFingerprint` is made from its password with that key. The shared
//! reading never holds a fingerprint, and the password itself never leaves the host.
//!
//! A server that sends no key (older than the fingerprint), or one that is not hex,
//! gets readings without fingerprints; nothing else changes.

use std::fmt;

use serde_json::Value;
use vrrp_protocol::Reading;

/// Longest key taken, in hex characters: HMAC takes any length, but a key is a few
/// dozen bytes and anything far beyond is no key.
const MAX_KEY_HEX: usize = 1024;

/// One server's fingerprint key. `Debug` shows no part of it.
#[derive(Clone, PartialEq, Eq)]
pub struct FingerprintKey(Vec<u8>);

impl fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FingerprintKey(<redacted>)")
    }
}

/// Why AUTH_SUCCESS brought no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoKey {
    /// No `fingerprintKey` (an older server), or `null`.
    Absent,
    /// A `fingerprintKey` that is no hex string of whole bytes (or is empty or too long).
    Invalid,
}

impl FingerprintKey {
    /// The key of an AUTH_SUCCESS payload.
    pub fn from_auth_success(payload: &Value) -> Result<FingerprintKey, NoKey> {
        match payload.get("fingerprintKey") {
            None | Some(Value::Null) => Err(NoKey::Absent),
            Some(Value::String(hex)) => decode_hex(hex).map(FingerprintKey).ok_or(NoKey::Invalid),
            Some(_) => Err(NoKey::Invalid),
        }
    }

    /// A key from its bytes (tests, and a server's own derivation).
    pub fn from_bytes(bytes: &[u8]) -> FingerprintKey {
        FingerprintKey(bytes.to_vec())
    }
}

/// `00ff..` → bytes; `None` for an empty or odd-length string, a non-hex character or
/// more than `MAX_KEY_HEX` characters.
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) || hex.len() > MAX_KEY_HEX {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16);
    hex.as_bytes()
        .chunks_exact(2)
        .map(|pair| Some((digit(pair[0])? << 4 | digit(pair[1])?) as u8))
        .collect()
}

/// The reading as this server gets it: every instance's `authFingerprint` made from
/// its password with this server's key (none without a key or a password).
pub fn payload(reading: &Reading, key: Option<&FingerprintKey>) -> serde_json::Result<Value> {
    let nothing_to_fill = reading
        .instances
        .iter()
        .all(|i| i.auth_password.is_none() && i.auth_fingerprint.is_none());
    if nothing_to_fill {
        return serde_json::to_value(reading);
    }
    let mut r = reading.clone();
    for i in &mut r.instances {
        i.auth_fingerprint = match (key, &i.auth_password) {
            (Some(k), Some(p)) => Some(p.fingerprint(&k.0)),
            _ => None,
        };
    }
    serde_json::to_value(&r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vrrp_protocol::{AuthPassword, VrrpInstance};

    #[test]
    fn the_key_of_auth_success() {
        let k = FingerprintKey::from_auth_success(
            &json!({"clientId": "c1", "fingerprintKey": "00fFa0"}),
        );
        assert_eq!(k, Ok(FingerprintKey::from_bytes(&[0x00, 0xff, 0xa0])));
        assert!(!format!("{:?}", k.unwrap()).contains("ff"));
        for (payload, why) in [
            (
                json!({"clientId": "c1", "lastSyncTime": null}),
                NoKey::Absent,
            ),
            (json!({"fingerprintKey": null}), NoKey::Absent),
            (json!(null), NoKey::Absent),
            (json!({"fingerprintKey": ""}), NoKey::Invalid),
            (json!({"fingerprintKey": "abc"}), NoKey::Invalid),
            (json!({"fingerprintKey": "zz"}), NoKey::Invalid),
            (json!({"fingerprintKey": "é0"}), NoKey::Invalid),
            (json!({"fingerprintKey": 42}), NoKey::Invalid),
            (json!({"fingerprintKey": "ab".repeat(513)}), NoKey::Invalid),
        ] {
            assert_eq!(
                FingerprintKey::from_auth_success(&payload),
                Err(why),
                "{payload}"
            );
        }
        assert!(
            FingerprintKey::from_auth_success(&json!({"fingerprintKey": "ab".repeat(512)})).is_ok()
        );
    }

    fn reading() -> Reading {
        Reading {
            collected_at: "t".into(),
            running: true,
            instances: vec![
                VrrpInstance {
                    name: "VI_1".into(),
                    auth_type: Some("pass".into()),
                    auth_password: Some(AuthPassword::new("s3cr3t51")),
                    ..Default::default()
                },
                VrrpInstance {
                    name: "VI_2".into(),
                    auth_type: Some("none".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn each_server_gets_the_fingerprint_under_its_own_key() {
        let r = reading();
        let (a, b) = (
            FingerprintKey::from_bytes(b"server A"),
            FingerprintKey::from_bytes(b"server B"),
        );
        let for_a = payload(&r, Some(&a)).unwrap();
        let for_b = payload(&r, Some(&b)).unwrap();
        let want_a = AuthPassword::new("s3cr3t51").fingerprint(b"server A");
        assert_eq!(for_a["instances"][0]["authFingerprint"], want_a.as_str());
        assert_ne!(
            for_a["instances"][0]["authFingerprint"],
            for_b["instances"][0]["authFingerprint"]
        );
        assert!(for_a["instances"][1].get("authFingerprint").is_none());
        // Without a key: no fingerprint, the rest unchanged.
        let plain = payload(&r, None).unwrap();
        assert!(plain["instances"][0].get("authFingerprint").is_none());
        let mut without = for_a.clone();
        without["instances"][0]
            .as_object_mut()
            .unwrap()
            .remove("authFingerprint");
        assert_eq!(without, plain);
        // The shared reading is left as it was; the password is in no payload.
        assert_eq!(r, reading());
        assert!(r.instances[0].auth_fingerprint.is_none());
        for p in [&for_a, &for_b, &plain] {
            assert!(!p.to_string().contains("s3cr3t51"));
        }
    }
}
