//! The authentication password of a VRRP instance, held by the agent and never
//! shown, and its fingerprint: HMAC-SHA256 under a key the server hands every
//! agent it accepts (the same key for all of one server's agents), so that the
//! server can tell whether two members use the same password without seeing it.

use std::fmt;

use sha2::{Digest, Sha256};

/// A password read from keepalived's dump. `Debug` prints no part of it, and it
/// is skipped by serde wherever it sits.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthPassword(String);

impl AuthPassword {
    pub fn new(password: impl Into<String>) -> AuthPassword {
        AuthPassword(password.into())
    }

    /// Hex of the first 128 bits of HMAC-SHA256(`key`, password).
    pub fn fingerprint(&self, key: &[u8]) -> String {
        hmac_sha256(key, self.0.as_bytes())[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl fmt::Debug for AuthPassword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthPassword(<redacted>)")
    }
}

/// RFC 2104 over SHA-256 (block size 64 bytes).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block_key = [0u8; BLOCK];
    if key.len() > BLOCK {
        block_key[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block_key[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block_key.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2: a short key.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn equal_passwords_give_equal_fingerprints_and_nothing_shows_the_password() {
        let a = AuthPassword::new("s3cret-pw");
        let b = AuthPassword::new("s3cret-pw");
        let c = AuthPassword::new("other-pw");
        assert_eq!(a.fingerprint(b"k"), b.fingerprint(b"k"));
        assert_ne!(a.fingerprint(b"k"), c.fingerprint(b"k"));
        assert_ne!(a.fingerprint(b"k"), a.fingerprint(b"another key"));
        assert_eq!(a.fingerprint(b"k").len(), 32);
        assert!(!format!("{a:?}").contains("s3cret"));
    }
}
