//! Sites: the host's own records, one per product site it reports leads for.

pub mod api;
pub mod routes;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::validate;
use crate::store::leads::sites::{self as store, SiteRow};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSite {
    pub site_id: String,
    pub name: String,
    /// ISO 4217; cannot change after creation.
    pub currency: String,
    /// IANA zone.
    pub timezone: String,
    /// The host's opaque owner of the site (federation grants check it).
    pub owner_id: String,
    #[serde(default)]
    pub domains: Option<Vec<String>>,
    /// Web analytics without identifiers on the browser (rules SES-02, TRK-07).
    #[serde(default)]
    pub cookieless: Option<bool>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateSite {
    pub name: Option<String>,
    pub timezone: Option<String>,
    pub domains: Option<Vec<String>>,
    /// Ordered full-path patterns such as `/pedido/:codigo` (≤ 32, ≤ 256 chars each).
    pub route_patterns: Option<Vec<String>>,
    /// Accepted only when equal to the current currency: it is immutable.
    pub currency: Option<String>,
    /// Later tracker batches follow it (never through `updateSite`).
    pub cookieless: Option<bool>,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Site {
    pub site_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub owner_id: String,
    pub domains: Vec<String>,
    pub route_patterns: Vec<String>,
    pub cookieless: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<SiteRow> for Site {
    fn from(r: SiteRow) -> Self {
        Site {
            site_id: r.id,
            name: r.name,
            currency: r.currency,
            timezone: r.timezone,
            owner_id: r.owner_id,
            domains: serde_json::from_str(&r.domains).unwrap_or_default(),
            route_patterns: serde_json::from_str(&r.route_patterns).unwrap_or_default(),
            cookieless: r.cookieless,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// 0–50 unique lowercase host names with an optional `:port`; no scheme,
/// path, userinfo or wildcard (rule CFG-03): the tracker compares hosts exactly.
pub fn check_domains(domains: &[String]) -> Result<()> {
    if domains.len() > 50 {
        return Err(Error::invalid("domains may list at most 50 hosts"));
    }
    for (i, d) in domains.iter().enumerate() {
        let (host, port) = d.split_once(':').map_or((d.as_str(), None), |(h, p)| (h, Some(p)));
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && !host.starts_with(['.', '-'])
            && !host.ends_with(['.', '-'])
            && host.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-'));
        let port_ok = port.is_none_or(|p| (1..=5).contains(&p.len()) && p.parse::<u16>().is_ok_and(|n| n > 0));
        if !host_ok || !port_ok {
            return Err(Error::invalid(
                "each domain must be a lowercase host name such as app.example.com, with an optional :port",
            ));
        }
        if domains[..i].contains(d) {
            return Err(Error::invalid("domains must not repeat a host"));
        }
    }
    Ok(())
}

fn check_route_patterns(patterns: &[String]) -> Result<()> {
    if patterns.len() > 32 {
        return Err(Error::invalid("routePatterns may list at most 32 patterns"));
    }
    for p in patterns {
        validate::text("routePatterns[]", p, 1, 256)?;
        if !p.starts_with('/') {
            return Err(Error::invalid("each route pattern must be a full path starting with /"));
        }
        // The one grammar of goal and funnel matchers too (ROUTE-01): a pattern
        // outside it would only ever match itself literally (ROUTE-10).
        if !crate::service::sites::routes::is_valid(p) {
            return Err(Error::invalid(
                "each route pattern must be /, or segments that are literals (without *), :name \
                 ([A-Za-z_][A-Za-z0-9_]{0,31}) or *, with an optional last ** (ROUTE-01)",
            ));
        }
    }
    Ok(())
}

/// Checks a create request without touching the database.
pub fn check_create(input: &CreateSite) -> Result<()> {
    validate::site_id(&input.site_id)?;
    validate::text("name", &input.name, 1, 200)?;
    validate::currency(&input.currency)?;
    validate::timezone(&input.timezone)?;
    validate::text("ownerId", &input.owner_id, 1, 200)?;
    check_domains(input.domains.as_deref().unwrap_or_default())
}

pub fn create(conn: &mut AnyConnection, now: i64, input: CreateSite) -> Result<Site> {
    check_create(&input)?;
    if store::find(conn, &input.site_id)?.is_some() {
        return Err(Error::conflict("a site with this siteId exists"));
    }
    let row = SiteRow {
        id: input.site_id,
        name: input.name,
        currency: input.currency,
        timezone: input.timezone,
        owner_id: input.owner_id,
        domains: serde_json::to_string(&input.domains.unwrap_or_default()).map_err(Error::internal)?,
        route_patterns: "[]".into(),
        cookieless: input.cookieless.unwrap_or(false),
        send_lead_event: false,
        created_at: now,
        updated_at: now,
    };
    store::insert(conn, &row)?;
    Ok(row.into())
}

pub fn get(conn: &mut AnyConnection, site_id: &str) -> Result<Site> {
    Ok(require(conn, site_id)?.into())
}

pub fn list(conn: &mut AnyConnection) -> Result<Vec<Site>> {
    Ok(store::list(conn)?.into_iter().map(Site::from).collect())
}

pub fn check_update(input: &UpdateSite) -> Result<()> {
    if let Some(name) = &input.name {
        validate::text("name", name, 1, 200)?;
    }
    if let Some(tz) = &input.timezone {
        validate::timezone(tz)?;
    }
    if let Some(d) = &input.domains {
        check_domains(d)?;
    }
    if let Some(p) = &input.route_patterns {
        check_route_patterns(p)?;
    }
    Ok(())
}

/// A site after an update, and its route patterns' change for the contexts
/// that keep routes (web analytics regroups them in the same transaction).
pub struct Updated {
    pub site: Site,
    pub routes_changed: Option<RoutesChanged>,
}

pub struct RoutesChanged {
    pub old: Vec<String>,
    pub new: Vec<String>,
}

pub fn update(conn: &mut AnyConnection, now: i64, site_id: &str, input: UpdateSite) -> Result<Updated> {
    check_update(&input)?;
    let mut row = require(conn, site_id)?;
    if let Some(c) = &input.currency
        && *c != row.currency
    {
        return Err(Error::invalid("currency cannot change after the site is created"));
    }
    if let Some(name) = input.name {
        row.name = name;
    }
    if let Some(tz) = input.timezone {
        row.timezone = tz;
    }
    if let Some(d) = input.domains {
        row.domains = serde_json::to_string(&d).map_err(Error::internal)?;
    }
    let old_patterns: Vec<String> = serde_json::from_str(&row.route_patterns).unwrap_or_default();
    if let Some(p) = &input.route_patterns {
        row.route_patterns = serde_json::to_string(p).map_err(Error::internal)?;
    }
    if let Some(c) = input.cookieless {
        row.cookieless = c;
    }
    row.updated_at = now;
    store::update(conn, &row)?;
    let routes_changed = input.route_patterns.map(|new| RoutesChanged { old: old_patterns, new });
    Ok(Updated { site: row.into(), routes_changed })
}

/// The site, or NOT_FOUND.
pub fn require(conn: &mut AnyConnection, site_id: &str) -> Result<SiteRow> {
    validate::site_id(site_id)?;
    store::find(conn, site_id)?.ok_or_else(|| Error::not_found("unknown site"))
}

/// The sites of `ids` in request order, or NOT_FOUND naming none of them.
/// How many a reader may name is its caller's rule (ten on the API, more on
/// the dashboard); here only their form and uniqueness.
pub fn require_many(conn: &mut AnyConnection, ids: &[String]) -> Result<Vec<SiteRow>> {
    validate::site_ids_up_to(ids, 10_000)?;
    let mut rows = store::find_many(conn, ids)?;
    let mut ordered = Vec::with_capacity(ids.len());
    for id in ids {
        let pos = rows.iter().position(|r| &r.id == id).ok_or_else(|| Error::not_found("unknown site"))?;
        ordered.push(rows.swap_remove(pos));
    }
    Ok(ordered)
}
