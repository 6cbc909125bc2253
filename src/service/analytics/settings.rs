//! A site's settings as web analytics sees them: `siteSettings` and
//! `updateSite` (no owner, currency and cookieless left alone), and the one
//! composition every transport uses to change a site: the site's row and,
//! when its route patterns changed, the regrouping scheduled in the same
//! transaction (rule ROUTE-04).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::rollup::regroup;
use crate::service::api::Caller;
use crate::service::api::decode::SiteArgs;
use crate::service::context::Context;
use crate::service::sites::{self, Site, UpdateSite};

/// Updates a site and schedules the regrouping its new route patterns need.
pub fn update(conn: &mut AnyConnection, now: i64, site_id: &str, input: UpdateSite) -> Result<Site> {
    let updated = sites::update(conn, now, site_id, input)?;
    if let Some(routes) = &updated.routes_changed {
        regroup::schedule(conn, site_id, &routes.old, &routes.new, now)?;
    }
    Ok(updated.site)
}

/// `siteSettings` (and what `updateSite` answers): no owner.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSettings {
    pub name: String,
    pub domains: Vec<String>,
    pub timezone: String,
    pub currency: String,
    pub cookieless: bool,
    pub route_patterns: Vec<String>,
    /// A `routePatterns` change is still regrouping stored routes (ROUTE-04).
    pub regrouping: bool,
}

/// A site's settings with its regrouping state.
fn settings(conn: &mut AnyConnection, s: Site) -> Result<SiteSettings> {
    let regrouping = regroup::regrouping(conn, &s.site_id)?;
    Ok(SiteSettings {
        name: s.name,
        domains: s.domains,
        timezone: s.timezone,
        currency: s.currency,
        cookieless: s.cookieless,
        route_patterns: s.route_patterns,
        regrouping,
    })
}

pub async fn site_settings(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<SiteSettings> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| {
        let site = sites::get(c, &a.site_id)?;
        settings(c, site)
    })
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateSiteArgs {
    pub site_id: String,
    pub name: Option<String>,
    pub domains: Option<Vec<String>>,
    pub timezone: Option<String>,
    pub route_patterns: Option<Vec<String>>,
}

pub async fn update_site(cx: &Context, caller: &Caller, a: UpdateSiteArgs) -> Result<SiteSettings> {
    caller.check_site(&a.site_id)?;
    // Only name, domains, timezone and routePatterns: currency and cookieless stay outside.
    let input = UpdateSite {
        name: a.name,
        timezone: a.timezone,
        domains: a.domains,
        route_patterns: a.route_patterns,
        currency: None,
        cookieless: None,
    };
    sites::check_update(&input)?;
    let now = cx.now();
    cx.write_plain(move |c| {
        let site = update(c, now, &a.site_id, input)?;
        settings(c, site)
    })
    .await
}
