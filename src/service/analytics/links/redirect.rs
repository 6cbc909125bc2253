//! The tracked-link redirect `GET /rastro/l/{siteId}/{slug}` (rules
//! TLINK-05 to TLINK-08): where a link goes (its destination, still on the site's domains,
//! plus UTM and the request's own parameters), the click window that counts
//! one click per client address, and the hits' write.

use std::collections::HashMap;
use std::net::IpAddr;

use url::Url;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::links::{check_destination, check_slug};
use crate::service::validate;
pub use crate::store::analytics::links::Hits;
use crate::store::analytics::links::{self as store, LinkRow};

/// Where a redirect goes: the link's id and the full target URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub link_id: String,
    pub location: String,
}

/// The redirect's target for `slug` on the site, with `query` (the request's
/// own query string) merged in; None (404) for an unknown or disabled link, or
/// one whose destination left the site's domains (rules TLINK-05, TLINK-08).
pub fn resolve(conn: &mut AnyConnection, site_id: &str, slug: &str, query: &str) -> Result<Option<Target>> {
    if validate::site_id(site_id).is_err() || check_slug(slug).is_err() {
        return Ok(None);
    }
    let Some(link) = store::by_slug(conn, site_id, slug)? else { return Ok(None) };
    if link.disabled {
        return Ok(None);
    }
    let Some(site) = crate::store::leads::sites::find(conn, site_id)? else { return Ok(None) };
    let domains: Vec<String> = serde_json::from_str(&site.domains).unwrap_or_default();
    let Ok(url) = check_destination(&link.destination, &domains) else { return Ok(None) };
    let location = with_parameters(url, &link, query);
    Ok(Some(Target { link_id: link.id, location }))
}

/// The destination plus `utm_source`, `utm_medium`, `utm_campaign`, then the
/// request's own parameters, each only where the URL lacks it.
fn with_parameters(mut url: Url, link: &LinkRow, query: &str) -> String {
    let mut have: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
    let mut added: Vec<(String, String)> = Vec::new();
    let utm = [
        ("utm_source", Some(link.platform.as_str())),
        ("utm_medium", Some(link.channel.as_str())),
        ("utm_campaign", link.campaign.as_deref()),
    ];
    let own = url::form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), Some(v.into_owned())));
    let utm = utm.into_iter().map(|(k, v)| (k.to_string(), v.map(str::to_string)));
    for (k, v) in utm.chain(own) {
        if let Some(v) = v
            && !k.is_empty()
            && !have.contains(&k)
        {
            have.push(k.clone());
            added.push((k, v));
        }
    }
    if !added.is_empty() {
        url.query_pairs_mut().extend_pairs(added);
    }
    url.to_string()
}

/// The hits of one redirect, added through the group-commit writer.
pub fn record(conn: &mut AnyConnection, hits: &Hits) -> Result<()> {
    store::add_hits(conn, hits)?;
    Ok(())
}

/// One counted click per (link, client address) within the window (rule
/// TLINK-06). Addresses stay in this process's memory only.
pub struct ClickWindow {
    window_ms: i64,
    seen: std::sync::Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// (link, address) → the time of its last counted click.
    clicks: HashMap<(String, IpAddr), i64>,
    /// When the expired entries were last dropped.
    pruned_at: i64,
}

/// Past this many remembered clicks, the expired ones are dropped (at most
/// once per window, so a burst of distinct addresses never rescans each time).
const PRUNE_AT: usize = 50_000;

impl ClickWindow {
    pub fn new(window: std::time::Duration) -> ClickWindow {
        ClickWindow { window_ms: window.as_millis() as i64, seen: Default::default() }
    }

    /// Whether a human click at `now` counts (and if so, it opens a new window).
    pub fn admit(&self, link_id: &str, ip: IpAddr, now: i64) -> bool {
        let w = self.window_ms;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.clicks.len() >= PRUNE_AT && (now - seen.pruned_at >= w || now < seen.pruned_at) {
            seen.clicks.retain(|_, at| now >= *at && now - *at < w);
            seen.pruned_at = now;
        }
        let key = (link_id.to_string(), ip);
        if seen.clicks.get(&key).is_some_and(|at| now >= *at && now - *at < w) {
            return false;
        }
        seen.clicks.insert(key, now);
        true
    }

    /// How many (link, address) pairs are remembered.
    pub fn len(&self) -> usize {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clicks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(platform: &str, channel: &str, campaign: Option<&str>) -> LinkRow {
        LinkRow {
            id: "l_1".into(),
            site_id: "s".into(),
            slug: "x".into(),
            destination: String::new(),
            platform: platform.into(),
            channel: channel.into(),
            campaign: campaign.map(Into::into),
            disabled: false,
            created_by: "me".into(),
            created_at: 0,
            updated_at: 0,
            clicks_total: 0,
            bot_hits_total: 0,
        }
    }

    #[test]
    fn parameters_are_added_only_where_missing() {
        let url = Url::parse("https://loja.example.com/p?utm_source=keep&a=1#frag").unwrap();
        let out = with_parameters(url, &link("instagram", "bio", Some("black friday")), "fbclid=F1&a=2&utm_medium=x");
        assert_eq!(
            out,
            "https://loja.example.com/p?utm_source=keep&a=1&utm_medium=bio&utm_campaign=black+friday&fbclid=F1#frag"
        );
        let url = Url::parse("https://loja.example.com/").unwrap();
        assert_eq!(
            with_parameters(url, &link("ig", "bio", None), ""),
            "https://loja.example.com/?utm_source=ig&utm_medium=bio"
        );
    }

    #[test]
    fn one_counted_click_per_address_and_window() {
        let w = ClickWindow::new(std::time::Duration::from_secs(10));
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        let other: IpAddr = "203.0.113.8".parse().unwrap();
        assert!(w.admit("l_1", ip, 1_000));
        assert!(!w.admit("l_1", ip, 10_999));
        assert!(w.admit("l_2", ip, 10_999));
        assert!(w.admit("l_1", other, 10_999));
        assert!(w.admit("l_1", ip, 11_000));
        // Past PRUNE_AT pairs, the expired ones go (once a window).
        for i in 0..PRUNE_AT as u32 {
            w.admit("l_3", IpAddr::from(i.to_be_bytes()), 20_000);
        }
        assert!(w.len() >= PRUNE_AT);
        assert!(w.admit("l_3", ip, 40_000));
        assert_eq!(w.len(), 1);
    }
}
