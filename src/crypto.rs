//! Sealing of Meta tokens at rest: AES-256-GCM under `RASTRO_SECRETS_KEY`.
//!
//! Stored form: `v1:<key id>:<base64(nonce ‖ ciphertext ‖ tag)>`. The nonce is
//! 96 random bits per seal. The row's identity (the kind of token and its
//! owner key or site id) is the associated data, so a ciphertext copied into
//! another row does not open. The key id (8 hex chars of SHA-256 of the key)
//! tells a rotated key apart from tampering: a new key cannot read the tokens
//! sealed under the old one, and the status says so.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::config::Secret;

const VERSION: &str = "v1";

/// What a token is and whose: the associated data of its seal.
#[derive(Debug, Clone, Copy)]
pub enum Identity<'a> {
    /// A Meta connection's token, by owner key.
    Connection(&'a str),
    /// A pixel's own Conversions API token, by site id.
    Pixel(&'a str),
}

impl Identity<'_> {
    fn aad(&self) -> String {
        match self {
            Identity::Connection(owner) => format!("rastrod:connection:{owner}"),
            Identity::Pixel(site) => format!("rastrod:pixel:{site}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    #[error("RASTRO_SECRETS_KEY must be 32 bytes, base64-encoded")]
    BadKey,
    #[error("sealed under another RASTRO_SECRETS_KEY: connect again")]
    KeyMismatch,
    #[error("the sealed token is damaged or belongs to another row")]
    Tampered,
}

/// The secrets key, parsed once. Debug never prints it.
#[derive(Clone)]
pub struct SecretsKey {
    cipher: Aes256Gcm,
    id: String,
}

impl std::fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretsKey(id {})", self.id)
    }
}

impl SecretsKey {
    pub fn from_base64(encoded: &Secret) -> Result<SecretsKey, CryptoError> {
        let bytes = STANDARD.decode(encoded.expose().trim()).map_err(|_| CryptoError::BadKey)?;
        if bytes.len() != 32 {
            return Err(CryptoError::BadKey);
        }
        let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| CryptoError::BadKey)?;
        let digest = Sha256::digest(&bytes);
        let id = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        Ok(SecretsKey { cipher, id })
    }

    /// The key's public fingerprint, stored beside each seal.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn seal(&self, token: &Secret, who: Identity<'_>) -> crate::error::Result<String> {
        let nonce_bytes: [u8; 12] = crate::ids::random_bytes()?;
        let nonce = Nonce::try_from(&nonce_bytes[..]).expect("12 bytes");
        let aad = who.aad();
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: token.expose().as_bytes(), aad: aad.as_bytes() })
            .expect("AES-GCM encryption of a short token");
        let mut blob = nonce_bytes.to_vec();
        blob.extend_from_slice(&sealed);
        Ok(format!("{VERSION}:{}:{}", self.id, STANDARD.encode(blob)))
    }

    pub fn open(&self, stored: &str, who: Identity<'_>) -> Result<Secret, CryptoError> {
        let mut parts = stored.splitn(3, ':');
        let (Some(VERSION), Some(kid), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(CryptoError::Tampered);
        };
        if kid != self.id {
            return Err(CryptoError::KeyMismatch);
        }
        let blob = STANDARD.decode(body).map_err(|_| CryptoError::Tampered)?;
        if blob.len() < 12 + 16 {
            return Err(CryptoError::Tampered);
        }
        let nonce = Nonce::try_from(&blob[..12]).map_err(|_| CryptoError::Tampered)?;
        let aad = who.aad();
        let plain = self
            .cipher
            .decrypt(&nonce, Payload { msg: &blob[12..], aad: aad.as_bytes() })
            .map_err(|_| CryptoError::Tampered)?;
        String::from_utf8(plain).map(Secret::new).map_err(|_| CryptoError::Tampered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "EAAB-canary-token-7f3a9c";

    fn key() -> SecretsKey {
        SecretsKey::from_base64(&Secret::new(crate::ids::secrets_key().unwrap())).unwrap()
    }

    // rule: SEC-01
    #[test]
    fn a_seal_opens_only_in_its_own_row_and_never_shows_the_token() {
        let k = key();
        let token = Secret::new(CANARY);
        let sealed = k.seal(&token, Identity::Connection("owner-a")).unwrap();
        assert!(!sealed.contains(CANARY));
        assert!(sealed.starts_with("v1:"));
        assert_eq!(k.open(&sealed, Identity::Connection("owner-a")).unwrap().expose(), CANARY);
        assert_eq!(k.open(&sealed, Identity::Connection("owner-b")).unwrap_err(), CryptoError::Tampered);
        assert_eq!(k.open(&sealed, Identity::Pixel("owner-a")).unwrap_err(), CryptoError::Tampered);
        let again = k.seal(&token, Identity::Connection("owner-a")).unwrap();
        assert_ne!(sealed, again, "a fresh nonce per seal");
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(k.open(&tampered, Identity::Connection("owner-a")).unwrap_err(), CryptoError::Tampered);
        assert!(!format!("{k:?}").contains(&crate::ids::secrets_key().unwrap()[..8]));
    }

    // rule: SEC-02
    #[test]
    fn a_new_key_cannot_open_old_tokens_and_says_why() {
        let (old, new) = (key(), key());
        let sealed = old.seal(&Secret::new(CANARY), Identity::Pixel("site-1")).unwrap();
        assert_eq!(new.open(&sealed, Identity::Pixel("site-1")).unwrap_err(), CryptoError::KeyMismatch);
    }

    #[test]
    fn bad_keys_are_refused() {
        assert_eq!(SecretsKey::from_base64(&Secret::new("short")).unwrap_err(), CryptoError::BadKey);
        assert_eq!(SecretsKey::from_base64(&Secret::new(STANDARD.encode([1u8; 16]))).unwrap_err(), CryptoError::BadKey);
    }
}
