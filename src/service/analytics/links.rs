//! Tracked links (ANALYTICS.md §5.10): `listTrackedLinks`, the three writes,
//! and what the redirect `GET /rastro/l/{siteId}/{slug}` answers. A link's
//! destination must stay on one of its site's domains (no open redirect):
//! checked on every write and again on every redirect.

use std::collections::HashMap;

use serde::{Deserialize, Deserializer, Serialize};
use url::Url;

use crate::clock::{DAY_MS, utc_day_start};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::leads::sites;
use crate::service::validate;
use crate::store::analytics::links::{self as store, Hits, LinkRow};

/// Most links of one site (the manifest's `maxTrackedLinks`).
pub const MAX_LINKS: i64 = 500;
/// Longest destination, in bytes.
pub const MAX_DESTINATION_BYTES: usize = 2000;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListArgs {
    pub site_id: String,
    pub now: i64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateArgs {
    pub site_id: String,
    pub slug: String,
    pub destination: String,
    pub platform: String,
    pub channel: String,
    pub campaign: Option<String>,
    pub created_by: String,
}

/// A present key, `null` included (`campaign: null` clears the campaign).
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `slug` is not a field: a link keeps its slug (rule TLINK-03).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateArgs {
    pub site_id: String,
    pub link_id: String,
    pub destination: Option<String>,
    pub platform: Option<String>,
    pub channel: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub campaign: Option<Option<String>>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkArgs {
    pub site_id: String,
    pub link_id: String,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub total: i64,
    pub last30d: i64,
}

/// One row of `listTrackedLinks`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrackedLink {
    pub link_id: String,
    pub slug: String,
    pub path: String,
    pub destination: String,
    pub platform: String,
    pub channel: String,
    pub campaign: Option<String>,
    pub disabled: bool,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub clicks: Counts,
    pub bot_hits: Counts,
}

/// The redirect's path of a link.
pub fn path_of(site_id: &str, slug: &str) -> String {
    format!("/rastro/l/{site_id}/{slug}")
}

/// `[a-z0-9][a-z0-9-]{0,63}`.
pub fn check_slug(slug: &str) -> Result<()> {
    let ok = (1..=64).contains(&slug.len())
        && slug.bytes().enumerate().all(|(i, b)| b.is_ascii_lowercase() || b.is_ascii_digit() || (i > 0 && b == b'-'));
    if !ok {
        return Err(Error::invalid("slug must match [a-z0-9][a-z0-9-]{0,63}"));
    }
    Ok(())
}

/// `platform`, `channel`: `[a-z0-9_-]{1,32}`.
fn check_tag(field: &str, v: &str) -> Result<()> {
    let ok = (1..=32).contains(&v.len())
        && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(Error::invalid(format!("{field} must match [a-z0-9_-]{{1,32}}")));
    }
    Ok(())
}

fn check_campaign(campaign: &Option<String>) -> Result<()> {
    validate::opt_text("campaign", campaign, 100)
}

/// Whether `url` is on one of `domains`: its IDNA-ASCII lowercase host equal
/// to a domain's, with a port only when that domain names the same one.
fn on_site(url: &Url, domains: &[String]) -> bool {
    let Some(host) = url.host_str().map(str::to_ascii_lowercase) else { return false };
    let explicit = url.port().map(|p| format!("{host}:{p}"));
    let default = url.port_or_known_default().map(|p| format!("{host}:{p}"));
    domains.iter().any(|d| match &explicit {
        Some(with_port) => d == with_port,
        None => *d == host || default.as_ref() == Some(d),
    })
}

/// An absolute http(s) URL of ≤ 2000 bytes without userinfo on a site domain (rule TLINK-02).
pub fn check_destination(raw: &str, domains: &[String]) -> Result<Url> {
    let refuse = || {
        Error::invalid(
            "destination must be an absolute http(s) URL of at most 2000 bytes, without userinfo, on one of the site's domains",
        )
    };
    if raw.len() > MAX_DESTINATION_BYTES {
        return Err(refuse());
    }
    let url = Url::parse(raw).map_err(|_| refuse())?;
    if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() || url.password().is_some() {
        return Err(refuse());
    }
    if !on_site(&url, domains) {
        return Err(refuse());
    }
    Ok(url)
}

/// The arguments' own checks, before the database is read.
pub fn check_create(a: &CreateArgs) -> Result<()> {
    check_slug(&a.slug)?;
    check_tag("platform", &a.platform)?;
    check_tag("channel", &a.channel)?;
    check_campaign(&a.campaign)?;
    validate::text("createdBy", &a.created_by, 1, 128)
}

pub fn check_update(a: &UpdateArgs) -> Result<()> {
    if let Some(p) = &a.platform {
        check_tag("platform", p)?;
    }
    if let Some(c) = &a.channel {
        check_tag("channel", c)?;
    }
    if let Some(c) = &a.campaign {
        check_campaign(c)?;
    }
    Ok(())
}

/// `createTrackedLink`: the new link's id (rules TLINK-02, TLINK-09).
pub fn create(conn: &mut AnyConnection, now: i64, a: CreateArgs) -> Result<String> {
    let site = sites::get(conn, &a.site_id)?;
    let destination = check_destination(&a.destination, &site.domains)?;
    if store::count(conn, &a.site_id)? >= MAX_LINKS {
        return Err(Error::invalid(format!("a site may have at most {MAX_LINKS} tracked links")));
    }
    if store::by_slug(conn, &a.site_id, &a.slug)?.is_some() {
        return Err(Error::conflict("this slug is already used by another link of the site"));
    }
    let row = LinkRow {
        id: crate::ids::time_ordered("l_", now)?,
        site_id: a.site_id,
        slug: a.slug,
        destination: destination.to_string(),
        platform: a.platform,
        channel: a.channel,
        campaign: a.campaign,
        disabled: false,
        created_by: a.created_by,
        created_at: now,
        updated_at: now,
        clicks_total: 0,
        bot_hits_total: 0,
    };
    store::insert(conn, &row)?;
    Ok(row.id)
}

/// `updateTrackedLink`: the link's id; unknown or another site's → NOT_FOUND (rules TLINK-03, CFG-07).
pub fn update(conn: &mut AnyConnection, now: i64, a: UpdateArgs) -> Result<String> {
    let site = sites::get(conn, &a.site_id)?;
    let mut row = store::get(conn, &a.site_id, &a.link_id)?.ok_or_else(|| Error::not_found("no such tracked link"))?;
    if let Some(d) = &a.destination {
        row.destination = check_destination(d, &site.domains)?.to_string();
    }
    if let Some(p) = a.platform {
        row.platform = p;
    }
    if let Some(c) = a.channel {
        row.channel = c;
    }
    if let Some(c) = a.campaign {
        row.campaign = c;
    }
    if let Some(d) = a.disabled {
        row.disabled = d;
    }
    row.updated_at = now;
    store::update(conn, &row)?;
    Ok(row.id)
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Removed {
    pub removed: bool,
}

/// `deleteTrackedLink`: frees the slug and purges the counters (rule TLINK-04).
pub fn delete(conn: &mut AnyConnection, a: LinkArgs) -> Result<Removed> {
    sites::require(conn, &a.site_id)?;
    Ok(Removed { removed: store::delete(conn, &a.site_id, &a.link_id)? })
}

/// `listTrackedLinks` (rule TLINK-01): `last30d` over the UTC day of `now` and the 29 before.
pub fn list(conn: &mut AnyConnection, a: ListArgs) -> Result<Vec<TrackedLink>> {
    validate::time("now", a.now)?;
    sites::require(conn, &a.site_id)?;
    let rows = store::list(conn, &a.site_id)?;
    let today = utc_day_start(a.now);
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let window: HashMap<String, (i64, i64)> = store::window(conn, &ids, today - 29 * DAY_MS, today)?
        .into_iter()
        .map(|w| (w.link_id, (w.clicks, w.bot_hits)))
        .collect();
    Ok(rows
        .into_iter()
        .map(|r| {
            let (clicks, bots) = window.get(&r.id).copied().unwrap_or((0, 0));
            TrackedLink {
                path: path_of(&r.site_id, &r.slug),
                link_id: r.id,
                slug: r.slug,
                destination: r.destination,
                platform: r.platform,
                channel: r.channel,
                campaign: r.campaign,
                disabled: r.disabled,
                created_by: r.created_by,
                created_at: r.created_at,
                updated_at: r.updated_at,
                clicks: Counts { total: r.clicks_total, last30d: clicks },
                bot_hits: Counts { total: r.bot_hits_total, last30d: bots },
            }
        })
        .collect())
}

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
    seen: std::sync::Mutex<HashMap<(String, std::net::IpAddr), i64>>,
}

/// Past this many remembered clicks, the expired ones are dropped.
const PRUNE_AT: usize = 50_000;

impl ClickWindow {
    pub fn new(window: std::time::Duration) -> ClickWindow {
        ClickWindow { window_ms: window.as_millis() as i64, seen: Default::default() }
    }

    /// Whether a human click at `now` counts (and if so, it opens a new window).
    pub fn admit(&self, link_id: &str, ip: std::net::IpAddr, now: i64) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= PRUNE_AT {
            let w = self.window_ms;
            seen.retain(|_, at| now - *at < w);
        }
        let key = (link_id.to_string(), ip);
        if seen.get(&key).is_some_and(|at| now >= *at && now - *at < self.window_ms) {
            return false;
        }
        seen.insert(key, now);
        true
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
    fn slugs_and_tags() {
        for ok in ["a", "0", "a-b", "promo-2026", &"a".repeat(64)] {
            assert!(check_slug(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "A", "a_b", "a b", "á", &"a".repeat(65)] {
            assert!(check_slug(bad).is_err(), "{bad}");
        }
        assert!(check_tag("platform", "meta_ads-1").is_ok());
        assert!(check_tag("platform", "Meta").is_err());
        assert!(check_tag("platform", &"a".repeat(33)).is_err());
    }

    #[test]
    fn destinations_stay_on_the_site() {
        let domains = vec!["loja.example.com".to_string(), "localhost:8080".to_string(), "xn--loj-gla.com".to_string()];
        for ok in [
            "https://loja.example.com/p?x=1#top",
            "http://LOJA.example.com",
            "https://loja.example.com:443/",
            "http://localhost:8080/a",
            "https://lojá.com/",
        ] {
            assert!(check_destination(ok, &domains).is_ok(), "{ok}");
        }
        for bad in [
            "loja.example.com/p",
            "/p",
            "ftp://loja.example.com/",
            "javascript:alert(1)",
            "https://user:pw@loja.example.com/",
            "https://user@loja.example.com/",
            "https://loja.example.com:8443/",
            "http://localhost/",
            "http://localhost:8081/",
            "https://evil.com/",
            "https://loja.example.com.evil.com/",
        ] {
            assert!(check_destination(bad, &domains).is_err(), "{bad}");
        }
        let long = format!("https://loja.example.com/{}", "a".repeat(2000));
        assert!(check_destination(&long, &domains).is_err());
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
        let ip: std::net::IpAddr = "203.0.113.7".parse().unwrap();
        let other: std::net::IpAddr = "203.0.113.8".parse().unwrap();
        assert!(w.admit("l_1", ip, 1_000));
        assert!(!w.admit("l_1", ip, 10_999));
        assert!(w.admit("l_2", ip, 10_999));
        assert!(w.admit("l_1", other, 10_999));
        assert!(w.admit("l_1", ip, 11_000));
    }
}
