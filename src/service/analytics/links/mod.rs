//! Tracked links (TLINK-01 to TLINK-04): `listTrackedLinks` and the three
//! writes. A link's destination must stay on one of its site's domains (no
//! open redirect): checked on every write here and again on every redirect
//! (`redirect`).

pub mod api;
pub mod redirect;

use std::collections::HashMap;

use serde::{Deserialize, Deserializer, Serialize};
use url::Url;

use crate::clock::{DAY_MS, utc_day_start};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::links::{self as store, LinkRow};

/// Most links of one site (the manifest's `maxTrackedLinks`).
pub const MAX_LINKS: i64 = 500;
/// Longest destination, in bytes.
pub const MAX_DESTINATION_BYTES: usize = 2000;

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListArgs {
    pub site_id: String,
    pub now: i64,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
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

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkArgs {
    pub site_id: String,
    pub link_id: String,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub total: i64,
    pub last30d: i64,
}

/// One row of `listTrackedLinks`.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
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

pub use crate::service::api::Removed;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
