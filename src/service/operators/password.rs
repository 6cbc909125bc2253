//! Operators' passwords: Argon2id with the crate's defaults (19 MiB, 2 passes),
//! stored as PHC strings. CPU-heavy on purpose: callers run it off the async
//! threads.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

use crate::config::Secret;
use crate::error::{Error, Result};

pub const MIN_LEN: usize = 10;
pub const MAX_LEN: usize = 200;

pub fn check(password: &Secret) -> Result<()> {
    let n = password.expose().chars().count();
    if !(MIN_LEN..=MAX_LEN).contains(&n) {
        return Err(Error::invalid(format!("a password has {MIN_LEN}-{MAX_LEN} characters")));
    }
    Ok(())
}

pub fn hash(password: &Secret) -> Result<String> {
    Argon2::default().hash_password(password.expose().as_bytes()).map(|h| h.to_string()).map_err(Error::internal)
}

/// Whether `password` matches the stored PHC string; a malformed one never does.
pub fn verify(password: &Secret, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default().verify_password(password.expose().as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// A hash of no one's password, verified when the name is unknown so a wrong
/// name costs the same time as a wrong password.
pub fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash(&Secret::new("decoy-password-never-used")).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argon2id_round_trip() {
        let h = hash(&Secret::new("correct horse battery")).unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(verify(&Secret::new("correct horse battery"), &h));
        assert!(!verify(&Secret::new("correct horse batterz"), &h));
        assert!(!verify(&Secret::new("x"), "not a phc string"));
        assert!(check(&Secret::new("short")).is_err());
    }
}
