//! The key keepalived-status-monitor seals its outbound agent tokens with.
//!
//! Its `SecretCrypto.ts` derives it as HKDF-SHA256 over the config's `secretKey`
//! (salt `kasm`, info `kasm-stored-secret`, 32 bytes) and stores AES-256-GCM
//! values as `iv:tag:ciphertext` in hex, the same form as ours (`auth::sealed`),
//! so only the derivation is written here. HKDF is two HMAC steps over the
//! `sha2` the server already uses, rather than a second crate for one call.

use crate::auth::sealed::SealKey;
use sha2::{Digest, Sha256};

const SALT: &[u8] = b"kasm";
const INFO: &[u8] = b"kasm-stored-secret";

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// The original's sealing key for its `secretKey` (RFC 5869 with one block of
/// output, which is all 32 bytes need).
pub fn derive(secret_key: &str) -> SealKey {
    let prk = hmac_sha256(SALT, &[secret_key.as_bytes()]);
    SealKey::from_bytes(hmac_sha256(&prk, &[INFO, &[1u8][..]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn opens_a_token_sealed_by_the_original() {
        // Made with node's crypto.hkdfSync and aes-256-gcm, as SecretCrypto.ts does.
        let sealed = "00112233445566778899aabb:80a5154cb19c60063f7c113567deade5:35ecd38f6d68f65dacc16916824528a99d5a82b2be9ae98fa0dda1efcb4c6fb8579714345c";
        let key = derive("kasm-original-secret-key-for-tests");
        assert_eq!(
            key.open(sealed).unwrap(),
            "outbound-agent-token-0123456789abcdef"
        );
        assert!(derive("another key").open(sealed).is_err());
    }
}
