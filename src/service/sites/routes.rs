//! Path patterns (ROUTE-01 to ROUTE-03): one grammar for route patterns and
//! goal/funnel path matchers. Segments are literals, `:name` or `*` (one
//! non-empty segment), with an optional last `**` (one or more segments).

const MAX_PATTERN_CHARS: usize = 256;

fn is_param(seg: &str) -> bool {
    seg.strip_prefix(':').is_some_and(|name| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.len() <= 32
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Whether `pattern` is in the grammar (rule ROUTE-01).
pub fn is_valid(pattern: &str) -> bool {
    if pattern.chars().count() > MAX_PATTERN_CHARS || !pattern.starts_with('/') {
        return false;
    }
    if pattern == "/" {
        return true;
    }
    let segs: Vec<&str> = pattern[1..].split('/').collect();
    segs.iter().enumerate().all(|(i, seg)| match *seg {
        "" => false,
        "*" => true,
        "**" => i + 1 == segs.len(),
        s if s.starts_with(':') => is_param(s),
        s => !s.contains('*'),
    })
}

/// One trailing slash is ignored, except on `/` itself.
fn trimmed(path: &str) -> &str {
    if path.len() > 1 { path.strip_suffix('/').unwrap_or(path) } else { path }
}

/// Whether a stored path matches a pattern (rule ROUTE-02); a pattern outside
/// the grammar (stored before it) matches its whole path literally (ROUTE-10).
pub fn matches(pattern: &str, path: &str) -> bool {
    if !is_valid(pattern) {
        return pattern == path;
    }
    let path = trimmed(path);
    if pattern == "/" {
        return path == "/";
    }
    let Some(rest) = path.strip_prefix('/') else { return false };
    let want: Vec<&str> = pattern[1..].split('/').collect();
    let have: Vec<&str> = rest.split('/').collect();
    for (i, w) in want.iter().enumerate() {
        if *w == "**" {
            return have.len() > i && have[i..].iter().all(|s| !s.is_empty());
        }
        let Some(h) = have.get(i) else { return false };
        let ok = match *w {
            "*" => !h.is_empty(),
            s if s.starts_with(':') => !h.is_empty(),
            s => s == *h,
        };
        if !ok {
            return false;
        }
    }
    have.len() == want.len()
}

/// A pageview's route: the first matching pattern's text, else its path (rule ROUTE-03).
pub fn route_of(path: &str, patterns: &[String]) -> String {
    patterns.iter().find(|p| matches(p, path)).cloned().unwrap_or_else(|| path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: ROUTE-01
    #[test]
    fn the_grammar() {
        for ok in ["/", "/pedido/:codigo", "/p/*", "/blog/**", "/a/:b/c/*/**", "/#/checkout"] {
            assert!(is_valid(ok), "{ok}");
        }
        for bad in ["", "pedido", "/a//b", "/**/x", "/a/:1x", "/a/b*", "/a/", &format!("/{}", "a".repeat(256))] {
            assert!(!is_valid(bad), "{bad}");
        }
    }

    // rule: ROUTE-02
    #[test]
    fn matching_is_segment_by_segment() {
        assert!(matches("/pedido/:codigo", "/pedido/123"));
        assert!(matches("/pedido/:codigo", "/pedido/123/"));
        assert!(!matches("/pedido/:codigo", "/pedido/123/x"));
        assert!(!matches("/Pedido/:codigo", "/pedido/123"));
        assert!(matches("/blog/**", "/blog/a/b"));
        assert!(!matches("/blog/**", "/blog"));
        assert!(!matches("/blog/**", "/blog/"));
        assert!(matches("/", "/"));
        assert!(!matches("/", "/x"));
        assert!(matches("/p/*", "/p/%C3%A9"));
    }

    // rule: ROUTE-03
    #[test]
    fn the_first_match_wins() {
        let patterns = vec!["/p/novo".to_string(), "/p/:id".to_string()];
        assert_eq!(route_of("/p/novo", &patterns), "/p/novo");
        assert_eq!(route_of("/p/7", &patterns), "/p/:id");
        assert_eq!(route_of("/sobre", &patterns), "/sobre");
    }

    // rule: ROUTE-10
    #[test]
    fn old_patterns_match_literally() {
        assert!(matches("/promo*", "/promo*"));
        assert!(!matches("/promo*", "/promo1"));
    }
}
