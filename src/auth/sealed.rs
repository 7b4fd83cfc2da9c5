//! Secrets the server must be able to read back: the auth tokens of outbound
//! clients, which it presents to the agent on every dial.
//!
//! Sealed with AES-256-GCM under a key derived from the config's `secretKey`
//! (never `jwtSecret`, so leaking one does not give away the other), stored as
//! `iv:tag:ciphertext` in hex. A fresh 96-bit IV per seal.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore;
use sha2::{Digest, Sha256};

const IV_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// The key, derived once from `secretKey`. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(****)")
    }
}

impl SealKey {
    /// SHA-256 over a purpose label and the secret: a key for this use only.
    pub fn from_secret_key(secret_key: &str) -> SealKey {
        let mut h = Sha256::new();
        h.update(b"vrrp-monitor outbound auth token v1\0");
        h.update(secret_key.as_bytes());
        SealKey(h.finalize().into())
    }

    /// A key derived elsewhere: the importer opens the original project's sealed
    /// tokens, which use the same `iv:tag:ciphertext` form under its own
    /// derivation (`import::kasm_key`).
    pub fn from_bytes(key: [u8; 32]) -> SealKey {
        SealKey(key)
    }

    fn cipher(&self) -> Aes256Gcm {
        // A 32-byte key is always the right length for AES-256.
        Aes256Gcm::new_from_slice(&self.0).expect("a 32-byte key")
    }

    /// `iv:tag:ciphertext` in hex.
    pub fn seal(&self, plaintext: &str) -> String {
        let mut iv = [0u8; IV_LEN];
        rand::thread_rng().fill_bytes(&mut iv);
        let nonce = Nonce::try_from(&iv[..]).expect("a 12-byte IV");
        // Encryption with a valid key and nonce cannot fail for a short input.
        let sealed = self
            .cipher()
            .encrypt(&nonce, plaintext.as_bytes())
            .expect("AES-GCM encryption");
        let (ciphertext, tag) = sealed.split_at(sealed.len() - TAG_LEN);
        format!(
            "{}:{}:{}",
            hex::encode(iv),
            hex::encode(tag),
            hex::encode(ciphertext)
        )
    }

    /// The plaintext, or why it cannot be had (another key, a damaged value).
    pub fn open(&self, sealed: &str) -> Result<String, OpenError> {
        let mut parts = sealed.split(':');
        let (Some(iv), Some(tag), Some(ciphertext), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(OpenError::Malformed);
        };
        let iv = hex::decode(iv).map_err(|_| OpenError::Malformed)?;
        let tag = hex::decode(tag).map_err(|_| OpenError::Malformed)?;
        let mut data = hex::decode(ciphertext).map_err(|_| OpenError::Malformed)?;
        if iv.len() != IV_LEN || tag.len() != TAG_LEN {
            return Err(OpenError::Malformed);
        }
        data.extend_from_slice(&tag);
        let nonce = Nonce::try_from(&iv[..]).map_err(|_| OpenError::Malformed)?;
        let plain = self
            .cipher()
            .decrypt(&nonce, data.as_slice())
            .map_err(|_| OpenError::WrongKey)?;
        String::from_utf8(plain).map_err(|_| OpenError::Malformed)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Not `iv:tag:ciphertext` in hex.
    Malformed,
    /// Sealed under another key (a changed `secretKey`) or altered.
    WrongKey,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpenError::Malformed => "the stored token is not iv:tag:ciphertext in hex",
            OpenError::WrongKey => {
                "the stored token does not decrypt with this secretKey (was it changed?)"
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_token_opens_with_its_key_only() {
        let key = SealKey::from_secret_key("k1");
        let sealed = key.seal("the token");
        let parts: Vec<&str> = sealed.split(':').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!((parts[0].len(), parts[1].len()), (24, 32));
        assert!(!sealed.contains("the token"));
        assert_ne!(sealed, key.seal("the token"), "a fresh IV each time");
        assert_eq!(key.open(&sealed).unwrap(), "the token");
        assert_eq!(
            SealKey::from_secret_key("k2").open(&sealed),
            Err(OpenError::WrongKey)
        );
    }

    #[test]
    fn damaged_values_are_refused() {
        let key = SealKey::from_secret_key("k1");
        let sealed = key.seal("t");
        let mut flipped = sealed.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(key.open(&flipped), Err(OpenError::WrongKey));
        for bad in [
            "",
            "a:b",
            "zz:zz:zz",
            "00:00:00:00",
            &sealed.replace(':', ";"),
        ] {
            assert_eq!(key.open(bad), Err(OpenError::Malformed), "{bad}");
        }
        assert_eq!(format!("{key:?}"), "SealKey(****)");
    }
}
