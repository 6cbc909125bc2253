//! `meta` on recordLead/setLeadStage: what the host knows of the contact, every
//! value already a SHA-256 hex digest. Anything else is ignored as a whole: the
//! call succeeds, nothing is queued, and the warning never repeats the value.

use serde_json::Value;

/// SHA-256 of the empty string: matches nobody, so it is left out.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const MAX_PHONES: usize = 10;

#[derive(Clone, PartialEq, Eq)]
pub struct ContactHashes {
    pub ph: Vec<String>,
    pub external_id: Option<String>,
}

impl std::fmt::Debug for ContactHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ContactHashes(<{} redacted>)", self.ph.len() + usize::from(self.external_id.is_some()))
    }
}

fn digest(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    (s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

/// The hashes, or `None` when `meta` is not the accepted shape (CAPI-01) or carries nothing usable.
pub fn parse(meta: &Value) -> Option<ContactHashes> {
    let obj = meta.as_object()?;
    let mut ph = Vec::new();
    let mut external_id = None;
    for (key, value) in obj {
        match key.as_str() {
            "ph" => {
                let items = value.as_array()?;
                if items.len() > MAX_PHONES {
                    return None;
                }
                for item in items {
                    ph.push(digest(item)?);
                }
            }
            "externalId" => external_id = Some(digest(value)?),
            _ => return None,
        }
    }
    ph.retain(|h| h != EMPTY_SHA256);
    ph.dedup();
    external_id = external_id.filter(|h| h != EMPTY_SHA256);
    (!ph.is_empty() || external_id.is_some()).then_some(ContactHashes { ph, external_id })
}

/// Parses `meta` when present, logging (without the value) when it is dropped.
pub fn accept(meta: Option<&Value>, site_id: &str) -> Option<ContactHashes> {
    let meta = meta?;
    let parsed = parse(meta);
    if parsed.is_none() && !meta.is_null() {
        tracing::warn!(site_id, "ignoring `meta`: not SHA-256 hex digests in the expected shape");
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const H: &str = "a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3";

    // rule: CAPI-01
    #[test]
    fn only_the_seed_shape_is_accepted() {
        let ok = parse(&json!({"ph": [H], "externalId": H.to_uppercase()})).unwrap();
        assert_eq!(ok.ph, vec![H.to_string()]);
        assert_eq!(ok.external_id.as_deref(), Some(H));
        assert!(parse(&json!({"ph": ["5511999991234"]})).is_none(), "a plain phone");
        assert!(parse(&json!({"ph": vec![H; 11]})).is_none(), "more than 10 phones");
        assert!(parse(&json!({"ph": H})).is_none(), "a wrong type");
        assert!(parse(&json!({"ph": [H], "email": H})).is_none(), "an unknown key");
        assert!(parse(&json!({"ph": [EMPTY_SHA256]})).is_none(), "only the hash of an empty string");
        let dropped = parse(&json!({"ph": [EMPTY_SHA256, H]})).unwrap();
        assert_eq!(dropped.ph, vec![H.to_string()]);
        assert!(!format!("{dropped:?}").contains(H));
    }
}
