//! The failure codes stored in a `lastError` or `stoppedReason` (account sync,
//! pixel, conversion, connection) and those of the Graph error classes: one
//! enum, its strings written here and nowhere else (like pict-rs
//! `error_code.rs`). A stored text stays `"CODE: human text"` (or the bare code
//! for a stop reason), exactly the wire format the API has always answered, but
//! it is built with [`Fault::with`] and read back with [`Fault::of`], never by
//! comparing text.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Meta refused the token (or there is none to use).
    MetaTokenInvalid,
    /// Meta throttled the calls, or its usage passed the threshold.
    RateLimited,
    /// Meta failed for a while (5xx, timeouts, its temporary errors).
    MetaUnavailable,
    /// A range held more rows than Meta answers.
    MetaTruncated,
    /// A sync run outlived its lease and was replaced.
    RunTimeout,
    /// `RASTRO_SECRETS_KEY` is unset, or a token was sealed under another key.
    SecretsKeyMissing,
    /// Meta refused the app's id or secret.
    MetaLoginUnavailable,
    /// The token cannot read or send to this object.
    PermissionDenied,
    /// Meta refused what was sent (a bad parameter, an unknown id).
    MetaInvalid,
    /// A conversion older than the send window.
    EventTooOld,
    /// The site's pixel is missing, off, or without a usable token.
    PixelUnavailable,
    /// Anything else (a lost attempt, an unreadable answer).
    Unexpected,
    /// The connection's listing no longer holds the linked ad account.
    AdAccountNotGranted,
    /// The connection's listing no longer holds the site's pixel.
    PixelNotGranted,
    /// Trading the login's code for a long-lived token failed.
    TokenExchangeFailed,
    /// Lead Ads: Meta no longer serves this lead (code 100, subcode 33; it keeps leads 90 days).
    LeadExpired,
    /// Lead Ads: Meta refused the Page's token; the Page's receipts wait for a reconnect.
    PageTokenInvalid,
    /// Lead Ads: the Page's token may not read its leads; the receipts wait.
    LeadsPermissionMissing,
    /// Lead Ads: the Page was unlinked before this receipt became a lead.
    PageUnlinked,
    /// Lead Ads: the site has no form-lead handler; its receipts wait for one.
    HandlerMissing,
    /// Lead Ads: the handler refused the lead (a 4xx other than 408/429); only `returnMetaFormLead` sends it again.
    HandlerRefused,
    /// Lead Ads: the handler stayed away (408/429/5xx/timeouts) through every retry.
    HandlerUnavailable,
}

impl Fault {
    pub const ALL: &'static [Fault] = &[
        Fault::MetaTokenInvalid,
        Fault::RateLimited,
        Fault::MetaUnavailable,
        Fault::MetaTruncated,
        Fault::RunTimeout,
        Fault::SecretsKeyMissing,
        Fault::MetaLoginUnavailable,
        Fault::PermissionDenied,
        Fault::MetaInvalid,
        Fault::EventTooOld,
        Fault::PixelUnavailable,
        Fault::Unexpected,
        Fault::AdAccountNotGranted,
        Fault::PixelNotGranted,
        Fault::TokenExchangeFailed,
        Fault::LeadExpired,
        Fault::PageTokenInvalid,
        Fault::LeadsPermissionMissing,
        Fault::PageUnlinked,
        Fault::HandlerMissing,
        Fault::HandlerRefused,
        Fault::HandlerUnavailable,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Fault::MetaTokenInvalid => "META_TOKEN_INVALID",
            Fault::RateLimited => "RATE_LIMITED",
            Fault::MetaUnavailable => "META_UNAVAILABLE",
            Fault::MetaTruncated => "META_TRUNCATED",
            Fault::RunTimeout => "RUN_TIMEOUT",
            Fault::SecretsKeyMissing => "SECRETS_KEY_MISSING",
            Fault::MetaLoginUnavailable => "META_LOGIN_UNAVAILABLE",
            Fault::PermissionDenied => "PERMISSION_DENIED",
            Fault::MetaInvalid => "META_INVALID",
            Fault::EventTooOld => "EVENT_TOO_OLD",
            Fault::PixelUnavailable => "PIXEL_UNAVAILABLE",
            Fault::Unexpected => "UNEXPECTED",
            Fault::AdAccountNotGranted => "AD_ACCOUNT_NOT_GRANTED",
            Fault::PixelNotGranted => "PIXEL_NOT_GRANTED",
            Fault::TokenExchangeFailed => "TOKEN_EXCHANGE_FAILED",
            Fault::LeadExpired => "LEAD_EXPIRED",
            Fault::PageTokenInvalid => "PAGE_TOKEN_INVALID",
            Fault::LeadsPermissionMissing => "LEADS_PERMISSION_MISSING",
            Fault::PageUnlinked => "PAGE_UNLINKED",
            Fault::HandlerMissing => "HANDLER_MISSING",
            Fault::HandlerRefused => "HANDLER_REFUSED",
            Fault::HandlerUnavailable => "HANDLER_UNAVAILABLE",
        }
    }

    /// The code spelled exactly `code` (a stored stop reason).
    pub fn parse(code: &str) -> Option<Fault> {
        Fault::ALL.iter().copied().find(|f| f.as_str() == code)
    }

    /// The stored text: `"CODE: text"`.
    pub fn with(self, text: impl fmt::Display) -> String {
        format!("{}: {text}", self.as_str())
    }

    /// The code a stored `lastError` (or bare stop reason) carries.
    pub fn of(stored: &str) -> Option<Fault> {
        Fault::parse(stored.split_once(": ").map_or(stored, |(code, _)| code))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_from_its_stored_text() {
        for &f in Fault::ALL {
            assert_eq!(Fault::parse(f.as_str()), Some(f));
            assert_eq!(Fault::of(&f.with("some text: with a colon")), Some(f));
            assert_eq!(Fault::of(f.as_str()), Some(f));
        }
        assert_eq!(Fault::RunTimeout.with("x"), "RUN_TIMEOUT: x");
        assert_eq!(Fault::of("RUN_TIMEOUTS: x"), None);
        assert_eq!(Fault::of("free text"), None);
    }

    /// Every `.rs` file under `dir`, recursively.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// A string literal starting with a code (`"CODE"`, `"CODE: text"`) is a
    /// second spelling of it: every other file names the enum instead.
    #[test]
    fn the_codes_are_spelled_here_only() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        assert!(files.len() > 50, "the walk found the sources");
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.ends_with("codes.rs")) {
            let text = std::fs::read_to_string(file).unwrap();
            for &f in Fault::ALL {
                let quoted = format!("\"{}", f.as_str());
                let spelled = text.match_indices(&quoted).any(|(i, _)| {
                    let next = text[i + quoted.len()..].chars().next();
                    !next.is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                });
                if spelled {
                    found.push(format!("{} in {}", f.as_str(), file.display()));
                }
            }
        }
        assert!(found.is_empty(), "spelled outside src/codes.rs: {found:?}");
    }
}
