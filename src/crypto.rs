//! Sealing of Meta tokens at rest: AES-256-GCM under `RASTRO_SECRETS_KEY`.
//!
//! Stored form: `v1:<key id>:<base64(nonce ‖ ciphertext ‖ tag)>`. The nonce is
//! 96 random bits per seal. The row's identity (the kind of token and its
//! owner key or site id) is the associated data, so a ciphertext copied into
//! another row does not open. The key id (8 hex chars of SHA-256 of the key)
//! tells a rotated key apart from tampering: a new key cannot read the tokens
//! sealed under the old one, and the status says so.
//!
//! Identify (PPL-04) keys its HMAC of external ids with a separate
//! key derived from the same secret: HKDF-SHA256, empty salt, info
//! `"rastro identify v1"`.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::secret::Secret;

const VERSION: &str = "v1";

/// What a token is and whose: the associated data of its seal.
#[derive(Debug, Clone, Copy)]
pub enum Identity<'a> {
    /// A Meta connection's token, by owner key.
    Connection(&'a str),
    /// A pixel's own Conversions API token, by site id.
    Pixel(&'a str),
    /// A Facebook Page's token (Lead Ads), by owner key and Page id.
    Page(&'a str, &'a str),
    /// A site's form-lead handler secret (Lead Ads), by site id.
    FormHandler(&'a str),
    /// The fbclid a session landed with (WA-33), by site id and session id.
    WebClickId(&'a str, &'a str),
}

impl Identity<'_> {
    fn aad(&self) -> String {
        match self {
            Identity::Connection(owner) => format!("rastrod:connection:{owner}"),
            Identity::Pixel(site) => format!("rastrod:pixel:{site}"),
            Identity::Page(owner, page) => format!("rastrod:page:{owner}:{page}"),
            Identity::FormHandler(site) => format!("rastrod:form-handler:{site}"),
            Identity::WebClickId(site, session) => format!("rastrod:fbclid:{site}:{session}"),
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
    identity: [u8; 32],
}

/// HKDF's info for the identity key (rule PPL-04).
pub const IDENTIFY_INFO: &[u8] = b"rastro identify v1";

/// HKDF-SHA256 (empty salt) of `ikm` with `info`, 32 bytes.
/// `sha256=<hex HMAC-SHA256(secret, body)>`: how Meta signs its webhooks and
/// rastrod its form-lead deliveries.
pub fn signature_sha256(secret: &[u8], body: &[u8]) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(body);
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

pub fn derive_key(ikm: &[u8], info: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(None, ikm).expand(info, &mut out).expect("32 bytes is a valid HKDF-SHA256 length");
    out
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
        let identity = derive_key(&bytes, IDENTIFY_INFO);
        Ok(SecretsKey { cipher, id, identity })
    }

    /// The key's public fingerprint, stored beside each seal.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// HMAC-SHA256 of `ownerId ‖ 0x00 ‖ externalId` under the identity key,
    /// hex: all identify ever stores of an external id (rule PPL-04).
    pub fn identity_hash(&self, owner_id: &str, external_id: &str) -> String {
        use hmac::{Hmac, KeyInit, Mac};
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.identity).expect("HMAC takes any key length");
        mac.update(owner_id.as_bytes());
        mac.update(&[0]);
        mac.update(external_id.as_bytes());
        mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
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

    // rule: PPL-04
    #[test]
    fn the_identity_key_is_hkdf_of_the_secret_and_hashes_by_owner() {
        // RFC 5869 test case 3 (SHA-256, empty salt and info).
        let okm = derive_key(&[0x0b; 22], b"");
        let want = "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d";
        assert_eq!(okm.iter().map(|b| format!("{b:02x}")).collect::<String>(), want);
        let raw = [9u8; 32];
        let k = SecretsKey::from_base64(&Secret::new(STANDARD.encode(raw))).unwrap();
        let hash = k.identity_hash("o1", "user-42");
        use hmac::{Hmac, KeyInit, Mac};
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&derive_key(&raw, IDENTIFY_INFO)).unwrap();
        mac.update(b"o1\0user-42");
        let want: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hash, want);
        assert_ne!(hash, k.identity_hash("o2", "user-42"));
        assert!(!hash.contains("user-42") && !format!("{k:?}").contains(&hash[..8]));
    }

    #[test]
    fn bad_keys_are_refused() {
        assert_eq!(SecretsKey::from_base64(&Secret::new("short")).unwrap_err(), CryptoError::BadKey);
        assert_eq!(SecretsKey::from_base64(&Secret::new(STANDARD.encode([1u8; 16]))).unwrap_err(), CryptoError::BadKey);
    }
}
