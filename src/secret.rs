//! A value that must never be printed (tokens, keys, secrets, passwords):
//! its `Debug` is redacted, and only `expose` gives the text. The lowest
//! layer: configuration, crypto and services all hold secrets.

/// A value that must never be printed (tokens, keys, secrets).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}
