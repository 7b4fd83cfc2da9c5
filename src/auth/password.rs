//! Password hashing (Argon2id, PHC strings).
//!
//! Hashes imported from keepalived-status-monitor are bcrypt (`$2a$`, `$2b$`,
//! `$2y$`): they are only verified, never made, and `needs_rehash` tells the
//! login to replace one with an Argon2id hash once the password was right.
//!
//! A login for an unknown user, or for an account without a local password, still
//! verifies against a dummy hash, so the answer takes as long as a wrong password
//! and timing does not tell which usernames exist.

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;
use std::sync::OnceLock;

#[derive(Debug)]
pub struct HashError(String);

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot hash password: {}", self.0)
    }
}

impl std::error::Error for HashError {}

pub fn hash(password: &str) -> Result<String, HashError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| HashError(e.to_string()))
}

/// Verifies `password` against `stored`; with no stored hash it verifies against a
/// dummy one (same cost) and answers false.
pub fn verify(password: &str, stored: Option<&str>) -> bool {
    match stored {
        Some(phc) => check(password, phc),
        None => {
            let _ = check(password, dummy_hash());
            false
        }
    }
}

/// True for a stored hash that is not ours (bcrypt from an import): the login
/// that just verified it replaces it with an Argon2id hash.
pub fn needs_rehash(stored: &str) -> bool {
    !stored.starts_with("$argon2")
}

fn is_bcrypt(stored: &str) -> bool {
    ["$2a$", "$2b$", "$2y$"]
        .iter()
        .any(|p| stored.starts_with(p))
}

fn check(password: &str, phc: &str) -> bool {
    if is_bcrypt(phc) {
        return match bcrypt::verify(password, phc) {
            Ok(ok) => ok,
            Err(e) => {
                log::error!("A stored bcrypt hash does not parse: {e}");
                false
            }
        };
    }
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(e) => {
            log::error!("A stored password hash does not parse: {e}");
            false
        }
    }
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        hash(&uuid::Uuid::new_v4().to_string()).unwrap_or_else(|_| {
            // Argon2 with default parameters cannot fail on a short input; a fixed
            // valid PHC string keeps the timing equaliser working regardless.
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$RdescudvJCsgt3ub+b+dWRWJTmaaJObG"
                .to_owned()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_and_verify() {
        let h = hash("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse", Some(&h)));
        assert!(!verify("wrong horse", Some(&h)));
        assert!(!verify("correct horse", None));
        assert!(!verify("x", Some("not a hash")));
        assert!(!needs_rehash(&h));
    }

    #[test]
    fn bcrypt_hashes_verify_and_ask_for_a_rehash() {
        // crypt_blowfish's test vector, as $2a$ and $2b$.
        let a = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";
        assert!(verify("U*U", Some(a)));
        assert!(verify("U*U", Some(&a.replace("$2a$", "$2b$"))));
        assert!(!verify("U*V", Some(a)));
        assert!(needs_rehash(a));
        assert!(!verify("U*U", Some("$2b$05$broken")));
    }
}
