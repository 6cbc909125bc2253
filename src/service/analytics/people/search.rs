//! The people search (rule PPL-11): both sides normalised by NFKD,
//! removal of combining marks and lowercasing; a profile matches when the
//! search prefixes its name from any word start, or its email. The stored
//! terms are the normalised name from each word start and the normalised
//! email, so a search is one byte-order prefix range over an index.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Longest term and search kept, in chars (a search is at most 100 chars).
const MAX_TERM_CHARS: usize = 100;

/// NFKD, combining marks removed, lowercase, words (split on Unicode
/// whitespace) joined by one space.
pub fn normalise(s: &str) -> String {
    let folded: String = s.nfkd().filter(|c| !is_combining_mark(*c)).collect::<String>().to_lowercase();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(s: &str) -> String {
    s.chars().take(MAX_TERM_CHARS).collect()
}

/// A profile's terms: its normalised name from each word start, and its
/// normalised email.
pub fn terms(name: Option<&str>, email: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(name) = name {
        let n = normalise(name);
        let mut from = 0;
        for word in n.split(' ').filter(|w| !w.is_empty()) {
            out.push(cut(&n[from..]));
            from += word.len() + 1;
        }
    }
    if let Some(email) = email {
        let e = normalise(email);
        if !e.is_empty() {
            out.push(cut(&e));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The prefix a search looks up (None for a search that normalises to nothing).
pub fn prefix(search: &str) -> Option<String> {
    let n = cut(&normalise(search));
    (!n.is_empty()).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(search: &str, name: Option<&str>, email: Option<&str>) -> bool {
        let p = prefix(search).unwrap();
        terms(name, email).iter().any(|t| t.starts_with(&p))
    }

    // rule: PPL-11
    #[test]
    fn accents_case_and_word_starts_fold_away() {
        assert_eq!(normalise("  José   SILVA "), "jose silva");
        assert_eq!(normalise("ﬁne Ǆ"), "fine dz");
        assert_eq!(terms(Some("José Silva"), Some("Ze@Example.com")), vec!["jose silva", "silva", "ze@example.com"]);
        for s in ["jose", "José", "silva", "jose si", "JOSE SILVA", "ze@ex"] {
            assert!(matches(s, Some("José Silva"), Some("ze@example.com")), "{s}");
        }
        for s in ["ilva", "jose silvax", "example", "silva jose"] {
            assert!(!matches(s, Some("José Silva"), Some("ze@example.com")), "{s}");
        }
        assert!(prefix("   ").is_none());
        assert!(terms(None, None).is_empty());
    }
}
