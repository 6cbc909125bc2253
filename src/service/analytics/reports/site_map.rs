//! `siteMap` (ARPT-19 to ARPT-21): per site, the routes and transitions of the
//! site-map rollups over complete UTC days, with `coverageFrom`; over local
//! days (`timezone`) the partial UTC days come from the pageviews, and with
//! `filters` every day from the kept sessions' pageviews (`site_map_local`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::approximate;
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::site_map_local;
use crate::service::analytics::rollup::site_map;
use crate::service::reporting::filters::Filter;
use crate::service::reporting::timezone;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::site_map as store;

/// Longest range (manifest `maxSiteMapDays`).
pub const MAX_DAYS: i64 = 90;
pub const MAX_ROUTES: usize = 500;
pub const MAX_TRANSITIONS: usize = 2000;

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteMapArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Only the sessions that pass these (REPORTING §3): the map of their
    /// whole paths (a page filter keeps the sessions that saw the page, and
    /// the map shows where they went before and after).
    #[serde(default)]
    pub filters: Vec<Filter>,
}

/// Complete UTC days, at most `max_days` of them (rule ARPT-02).
pub fn complete_days(from: i64, to: i64, max_days: i64) -> Result<()> {
    validate::range(from, to, max_days)?;
    if from.rem_euclid(DAY_MS) != 0 || (to + 1).rem_euclid(DAY_MS) != 0 {
        return Err(Error::invalid("the range needs complete UTC days (from at 00:00, to at 23:59:59.999)"));
    }
    Ok(())
}

/// One route's line: views, entries, exits and bounces (rule ARPT-19).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct RouteLine {
    pub route: String,
    pub views: i64,
    pub entries: i64,
    pub exits: i64,
    pub bounces: i64,
}

/// A site's map over a range: routes by views desc then route, transitions by
/// count desc then (from, to), both cut to their caps (rule ARPT-20).
pub struct SiteLines {
    pub routes: Vec<RouteLine>,
    pub transitions: Vec<store::TransitionRow>,
    pub truncated: bool,
}

/// The lines of the stored rows. A transition or continuation counts on the
/// day of its later pageview, so a range may start after a pageview whose
/// successor is inside it: exits and bounces never go below zero.
pub fn lines(routes: Vec<store::RouteRow>, mut transitions: Vec<store::TransitionRow>) -> SiteLines {
    let mut outgoing: HashMap<&str, i64> = HashMap::new();
    for t in &transitions {
        *outgoing.entry(t.from_route.as_str()).or_default() += t.count;
    }
    let mut lines: Vec<RouteLine> = routes
        .iter()
        .filter(|r| r.views > 0 || r.entries > 0)
        .map(|r| RouteLine {
            route: r.route.clone(),
            views: r.views,
            entries: r.entries,
            exits: (r.views - outgoing.get(r.route.as_str()).copied().unwrap_or(0)).max(0),
            bounces: (r.entries - r.continuations).max(0),
        })
        .collect();
    lines.sort_by(|a, b| b.views.cmp(&a.views).then_with(|| a.route.as_bytes().cmp(b.route.as_bytes())));
    transitions.sort_by(|a, b| {
        b.count.cmp(&a.count).then_with(|| {
            (a.from_route.as_bytes(), a.to_route.as_bytes()).cmp(&(b.from_route.as_bytes(), b.to_route.as_bytes()))
        })
    });
    let truncated = lines.len() > MAX_ROUTES || transitions.len() > MAX_TRANSITIONS;
    lines.truncate(MAX_ROUTES);
    transitions.truncate(MAX_TRANSITIONS);
    SiteLines { routes: lines, transitions, truncated }
}

/// A move from one route to the next, `count` times.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Transition {
    pub from: String,
    pub to: String,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteMapSite {
    pub site_id: String,
    /// The first day the map has complete data for (rule ARPT-21).
    pub coverage_from: i64,
    /// A route-pattern change is regrouping past days.
    pub regrouping: bool,
    pub routes: Vec<RouteLine>,
    pub transitions: Vec<Transition>,
    pub truncated: bool,
}

/// The `siteMap` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteMap {
    pub from: i64,
    pub to: i64,
    /// Per site, its route patterns.
    pub route_patterns: BTreeMap<String, Vec<String>>,
    pub sites: Vec<SiteMapSite>,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The days whose figures read rows retention has deleted (REPORTING §1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_days: Option<Vec<i64>>,
}

/// `siteMap` for sites already checked against the caller's scope.
pub fn site_map(conn: &mut AnyConnection, a: SiteMapArgs) -> Result<SiteMap> {
    validate::site_ids(&a.site_ids)?;
    if a.timezone.is_none() {
        complete_days(a.from, a.to, MAX_DAYS)?;
    }
    let rules = dims::rules(&a.filters)?;
    let rows = sites::require_many(conn, &a.site_ids)?;
    let zones: Vec<&str> = rows.iter().map(|s| s.timezone.as_str()).collect();
    let zone = timezone::checked_range(a.timezone.as_deref(), &zones, (a.from, a.to), MAX_DAYS)?;
    let read = approximate::rows_read(zone, !rules.is_empty(), (a.from, a.to));
    let approximate_days = approximate::days(conn, &a.site_ids, zone, (a.from, a.to), &read)?;
    let mut patterns = BTreeMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for site in rows {
        let p: Vec<String> = serde_json::from_str(&site.route_patterns).unwrap_or_default();
        patterns.insert(site.id.clone(), p);
        let coverage_from = site_map::coverage_from(conn, &site.id, site.created_at)?;
        let (routes, transitions) = if !rules.is_empty() {
            let kept = kept::read(conn, std::slice::from_ref(&site), (a.from, a.to), &rules, &[])?;
            let sessions: Vec<String> = kept.sessions.into_keys().collect();
            site_map_local::rows_of_sessions(conn, &sessions, (a.from, a.to))?
        } else if zone.is_some() {
            site_map_local::rows(conn, &site.id, (a.from, a.to))?
        } else {
            (store::routes(conn, &site.id, a.from, a.to)?, store::transitions(conn, &site.id, a.from, a.to)?)
        };
        let l = lines(routes, transitions);
        let regrouping = crate::service::analytics::rollup::regroup::regrouping(conn, &site.id)?;
        out.push(SiteMapSite {
            site_id: site.id,
            coverage_from,
            regrouping,
            transitions: l
                .transitions
                .into_iter()
                .map(|t| Transition { from: t.from_route, to: t.to_route, count: t.count })
                .collect(),
            routes: l.routes,
            truncated: l.truncated,
        });
    }
    Ok(SiteMap {
        from: a.from,
        to: a.to,
        route_patterns: patterns,
        sites: out,
        timezone: zone.map(|z| z.name().to_string()),
        approximate_days,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(r: &str, views: i64, entries: i64, continuations: i64) -> store::RouteRow {
        store::RouteRow { route: r.into(), views, entries, continuations }
    }

    fn pair(f: &str, t: &str, count: i64) -> store::TransitionRow {
        store::TransitionRow { from_route: f.into(), to_route: t.into(), count }
    }

    // rule: ARPT-19
    // rule: ARPT-20
    #[test]
    fn exits_and_bounces_are_derived_and_the_orders_break_ties() {
        let l = lines(
            vec![route("/b", 2, 0, 0), route("/", 3, 3, 1), route("/a", 2, 0, 0)],
            vec![pair("/", "/a", 1), pair("/a", "/b", 1), pair("/", "/b", 1)],
        );
        let got: Vec<(&str, i64, i64, i64, i64)> =
            l.routes.iter().map(|r| (r.route.as_str(), r.views, r.entries, r.exits, r.bounces)).collect();
        assert_eq!(got, vec![("/", 3, 3, 1, 2), ("/a", 2, 0, 1, 0), ("/b", 2, 0, 2, 0)]);
        let pairs: Vec<(&str, &str)> =
            l.transitions.iter().map(|t| (t.from_route.as_str(), t.to_route.as_str())).collect();
        assert_eq!(pairs, vec![("/", "/a"), ("/", "/b"), ("/a", "/b")]);
        assert!(!l.truncated);
        let many = lines((0..501).map(|i| route(&format!("/r{i:03}"), 1, 0, 0)).collect(), vec![]);
        assert!(many.truncated);
        assert_eq!(many.routes.len(), 500);
        assert_eq!(many.routes[499].route, "/r499");
    }

    // rule: ARPT-02
    #[test]
    fn ranges_are_complete_utc_days_up_to_ninety() {
        let d = 1_796_000_000_000 - 1_796_000_000_000 % DAY_MS;
        assert!(complete_days(d, d + 90 * DAY_MS - 1, 90).is_ok());
        assert!(complete_days(d, d + 91 * DAY_MS - 1, 90).is_err());
        assert!(complete_days(d + 1, d + DAY_MS - 1, 90).is_err());
        assert!(complete_days(d, d + DAY_MS - 2, 90).is_err());
    }
}
