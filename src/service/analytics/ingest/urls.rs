//! What a tracker URL leaves behind (TRK-17, TRK-23, SES-11 to SES-14): the host for
//! the domain check, the stored path (no query, redacted, hash routes only in
//! hash mode), the attribution parameters of a landing, and the referrer's
//! host and source. The query string, the full referrer and click ids are
//! never kept as they came: a landing's `fbclid` ([`fbclid`]) is kept only
//! sealed, apart from the session, to send its ledger purchases to the
//! pixel (rule WA-33).

use url::Url;

pub const MAX_URL_BYTES: usize = 2000;
const MAX_PATH_CHARS: usize = 1024;
const MAX_ATTRIBUTION_CHARS: usize = 100;

/// An absolute http(s) URL of at most 2000 bytes.
pub fn parse_page_url(raw: &str) -> Option<Url> {
    if raw.len() > MAX_URL_BYTES {
        return None;
    }
    let url = Url::parse(raw).ok()?;
    matches!(url.scheme(), "http" | "https").then_some(())?;
    url.host_str()?;
    Some(url)
}

/// `host` or `host:port` as a site's domain list spells it (lowercase).
pub fn host_of(url: &Url) -> (String, Option<u16>) {
    (url.host_str().unwrap_or_default().to_ascii_lowercase(), url.port())
}

/// Whether a URL's host is one of the domains: exact host, a port only when
/// the domain names one, no `www.` folding (rule TRK-17).
pub fn on_domains(host: &str, port: Option<u16>, domains: &[String]) -> bool {
    domains.iter().any(|d| match d.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => {
            h == host && port.map(|x| x.to_string()).as_deref() == Some(p)
        }
        _ => d == host,
    })
}

/// The stored path: the pathname as sent (percent-encoding kept), in hash
/// mode plus a `#/` or `#!/` route cut at its first `?` or `&`, redacted,
/// cut to 1024 chars.
pub fn stored_path(url: &Url, hash_mode: bool, redact: bool) -> String {
    let mut path = url.path().to_string();
    if path.is_empty() {
        path.push('/');
    }
    if hash_mode
        && let Some(fragment) = url.fragment()
        && (fragment.starts_with('/') || fragment.starts_with("!/"))
    {
        let route = fragment.split(['?', '&']).next().unwrap_or_default();
        path.push('#');
        path.push_str(route);
    }
    if redact {
        path = redact_path(&path);
    }
    path.chars().take(MAX_PATH_CHARS).collect()
}

/// `:email` for a segment with `@`; `:token` for a UUID, a hex string of ≥ 32
/// chars, or a ≥ 32-char `[A-Za-z0-9_-]` string mixing upper, lower and digits.
pub fn redact_path(path: &str) -> String {
    path.split('/').map(redact_segment).collect::<Vec<_>>().join("/")
}

fn redact_segment(seg: &str) -> &str {
    if seg.contains('@') || seg.contains("%40") {
        return ":email";
    }
    if is_uuid(seg) || (seg.len() >= 32 && seg.chars().all(|c| c.is_ascii_hexdigit())) || is_token_like(seg) {
        return ":token";
    }
    seg
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter()
            .enumerate()
            .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

fn is_token_like(s: &str) -> bool {
    s.len() >= 32
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars().any(|c| c.is_ascii_lowercase())
        && s.chars().any(|c| c.is_ascii_digit())
}

/// A landing's attribution parameters (rule SES-13: form-decoded, trimmed,
/// case kept; empty, over 100 chars or with `@` dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pub utm_source: Option<String>,
    pub utm_medium: Option<String>,
    pub utm_campaign: Option<String>,
    pub utm_term: Option<String>,
    pub utm_content: Option<String>,
    pub source: Option<String>,
    pub referral: Option<String>,
    pub gclid: bool,
    pub fbclid: bool,
}

fn clean(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && v.chars().count() <= MAX_ATTRIBUTION_CHARS && !v.contains('@')).then(|| v.to_string())
}

pub fn params(url: &Url) -> Params {
    let mut p = Params::default();
    for (k, v) in url.query_pairs() {
        let slot = match k.as_ref() {
            "utm_source" => &mut p.utm_source,
            "utm_medium" => &mut p.utm_medium,
            "utm_campaign" => &mut p.utm_campaign,
            "utm_term" => &mut p.utm_term,
            "utm_content" => &mut p.utm_content,
            "source" => &mut p.source,
            "ref" => &mut p.referral,
            "gclid" => {
                p.gclid = true;
                continue;
            }
            "fbclid" => {
                p.fbclid = true;
                continue;
            }
            _ => continue,
        };
        if slot.is_none() {
            *slot = clean(&v);
        }
    }
    p
}

/// The longest `fbclid` kept (Meta's are far shorter).
const MAX_FBCLID_CHARS: usize = 500;

/// A landing's `fbclid` as Meta's `fbc` carries it (rule WA-33): the first
/// one, as given; None when absent, empty, longer than 500 characters or
/// holding anything but visible ASCII.
pub fn fbclid(url: &Url) -> Option<String> {
    let (_, v) = url.query_pairs().find(|(k, _)| k == "fbclid")?;
    let ok = !v.is_empty() && v.len() <= MAX_FBCLID_CHARS && v.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| v.into_owned())
}

/// A referrer's host: lowercased, `www.` stripped; None when unparsable.
pub fn referrer_host(raw: &str) -> Option<String> {
    if raw.is_empty() || raw.len() > MAX_URL_BYTES {
        return None;
    }
    let host = match Url::parse(raw) {
        Ok(u) => u.host_str()?.to_ascii_lowercase(),
        // The import takes a bare host too.
        Err(_) if raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-') && raw.contains('.') => {
            raw.to_ascii_lowercase()
        }
        Err(_) => return None,
    };
    let host = host.strip_prefix("www.").unwrap_or(&host).to_string();
    (!host.is_empty()).then_some(host)
}

/// A host equal to a site domain or a subdomain of one is internal (rule SES-14).
pub fn is_internal(host: &str, domains: &[String]) -> bool {
    domains.iter().any(|d| {
        let d = d.split(':').next().unwrap_or(d);
        let d = d.strip_prefix("www.").unwrap_or(d);
        host == d || host.ends_with(&format!(".{d}"))
    })
}

/// A referrer host grouped into one source (§3.6): `*.` entries take
/// subdomains too, the others only the exact host.
pub fn source_of(host: &str) -> String {
    let labels: Vec<&str> = host.split('.').collect();
    if (2..=3).contains(&labels.len()) && labels[0] == "google" {
        return "Google".into();
    }
    const GROUPS: &[(&str, &[&str])] = &[
        ("Facebook", &["*.facebook.com", "fb.me"]),
        ("Instagram", &["*.instagram.com"]),
        ("WhatsApp", &["wa.me", "*.whatsapp.com"]),
        ("YouTube", &["*.youtube.com", "youtu.be"]),
        ("TikTok", &["*.tiktok.com"]),
        ("X", &["t.co", "x.com", "twitter.com"]),
        ("LinkedIn", &["*.linkedin.com", "lnkd.in"]),
        ("Bing", &["*.bing.com"]),
        ("DuckDuckGo", &["duckduckgo.com"]),
    ];
    let matches = |entry: &str| match entry.strip_prefix("*.") {
        Some(d) => host == d || host.ends_with(&format!(".{d}")),
        None => host == entry,
    };
    GROUPS
        .iter()
        .find(|(_, entries)| entries.iter().any(|e| matches(e)))
        .map_or_else(|| host.to_string(), |(name, _)| (*name).to_string())
}

/// `language`: lowercase primary subtag plus uppercase region, else None (rule TRK-35).
pub fn language(raw: &str) -> Option<String> {
    if raw.is_empty() || raw.len() > 35 {
        return None;
    }
    let mut parts = raw.split(['-', '_']);
    let primary = parts.next()?;
    if !(2..=3).contains(&primary.len()) || !primary.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let mut out = primary.to_ascii_lowercase();
    for part in parts {
        if !(1..=8).contains(&part.len()) || !part.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        if part.len() == 2 && part.chars().all(|c| c.is_ascii_alphabetic()) && !out.contains('-') {
            out.push('-');
            out.push_str(&part.to_ascii_uppercase());
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        parse_page_url(s).unwrap()
    }

    // rule: TRK-23
    #[test]
    fn the_stored_path_has_no_query_and_a_fragment_only_in_hash_mode() {
        let u = url("https://loja.example.com/p/1?utm_source=ig&gclid=abc#/checkout?step=2");
        assert_eq!(stored_path(&u, false, true), "/p/1");
        assert_eq!(stored_path(&u, true, true), "/p/1#/checkout");
        assert_eq!(stored_path(&url("https://a.com/app#!/x&y"), true, true), "/app#!/x");
        // Any other fragment (OAuth tokens) is dropped.
        assert_eq!(stored_path(&url("https://a.com/cb#access_token=abc"), true, true), "/cb");
        let long = format!("https://a.com/{}", "x".repeat(1500));
        assert_eq!(stored_path(&url(&long), false, true).chars().count(), 1024);
        assert!(parse_page_url(&format!("https://a.com/{}", "a".repeat(2000))).is_none());
        assert!(parse_page_url("ftp://a.com/").is_none());
        assert!(parse_page_url("/relative").is_none());
    }

    // rule: TRK-24
    #[test]
    fn emails_and_tokens_in_paths_are_redacted() {
        assert_eq!(redact_path("/u/ana@example.com/x"), "/u/:email/x");
        assert_eq!(redact_path("/o/123e4567-e89b-12d3-a456-426614174000"), "/o/:token");
        assert_eq!(redact_path("/h/0123456789abcdef0123456789abcdef"), "/h/:token");
        assert_eq!(redact_path("/t/AbCdEfGhIjKlMnOpQrStUvWxYz012345"), "/t/:token");
        // Lowercase slugs stay.
        assert_eq!(
            redact_path("/blog/como-escolher-a-melhor-racao-para-caes"),
            "/blog/como-escolher-a-melhor-racao-para-caes"
        );
        let u = url("https://a.com/u/ana@example.com");
        assert_eq!(stored_path(&u, false, false), "/u/ana@example.com");
    }

    // rule: SES-13
    #[test]
    fn attribution_params_are_decoded_trimmed_and_bounded() {
        let p = params(&url(&format!(
            "https://a.com/?utm_source=+Insta+gram+&utm_medium=a%40b&utm_campaign={}&utm_term=&ref=Gio&gclid=x",
            "c".repeat(101)
        )));
        assert_eq!(p.utm_source.as_deref(), Some("Insta gram"));
        assert_eq!(p.utm_medium, None);
        assert_eq!(p.utm_campaign, None);
        assert_eq!(p.utm_term, None);
        assert_eq!(p.referral.as_deref(), Some("Gio"));
        assert!(p.gclid && !p.fbclid);
    }

    // rule: WA-33
    #[test]
    fn a_landings_fbclid_is_read_as_given() {
        let f = |q: &str| fbclid(&url(&format!("https://a.com/p?{q}")));
        assert_eq!(f("a=1&fbclid=IwAR2x_Yz-09&fbclid=second").as_deref(), Some("IwAR2x_Yz-09"));
        assert_eq!(f("fbclid=a%2Eb").as_deref(), Some("a.b"), "decoded");
        for bad in ["a=1", "fbclid=", "fbclid=a+b", "fbclid=%C3%A9"] {
            assert_eq!(f(bad), None, "{bad}");
        }
        assert_eq!(f(&format!("fbclid={}", "x".repeat(501))), None);
        assert_eq!(f(&format!("fbclid={}", "x".repeat(500))).map(|s| s.len()), Some(500));
    }

    #[test]
    fn referrers_group_into_sources() {
        let cases = [
            ("https://www.google.com.br/", "Google"),
            ("https://google.co.uk/search", "Google"),
            ("https://l.instagram.com/", "Instagram"),
            ("https://m.facebook.com/", "Facebook"),
            ("https://wa.me/55", "WhatsApp"),
            ("https://t.co/x", "X"),
            ("https://www.youtube.com/watch", "YouTube"),
            ("https://blog.example.org/post", "blog.example.org"),
        ];
        for (raw, source) in cases {
            assert_eq!(source_of(&referrer_host(raw).unwrap()), source, "{raw}");
        }
        assert!(is_internal("shop.loja.com", &["loja.com".into()]));
        assert!(!is_internal("outra.com", &["loja.com".into()]));
    }

    // rule: TRK-17
    #[test]
    fn domains_match_exactly_with_ports_only_when_named() {
        let domains = vec!["loja.example.com".to_string(), "localhost:8080".to_string()];
        assert!(on_domains("loja.example.com", None, &domains));
        assert!(on_domains("loja.example.com", Some(8443), &domains));
        assert!(!on_domains("www.loja.example.com", None, &domains));
        assert!(on_domains("localhost", Some(8080), &domains));
        assert!(!on_domains("localhost", Some(9090), &domains));
        assert!(!on_domains("loja.example.com", None, &[]));
    }

    // rule: TRK-35
    #[test]
    fn languages_are_normalised() {
        assert_eq!(language("pt-br").as_deref(), Some("pt-BR"));
        assert_eq!(language("PT_br").as_deref(), Some("pt-BR"));
        assert_eq!(language("en").as_deref(), Some("en"));
        assert_eq!(language("zh-Hant-TW").as_deref(), Some("zh-TW"));
        assert_eq!(language("not a language"), None);
        assert_eq!(language("x"), None);
    }
}
