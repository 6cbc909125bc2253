//! The site map's deltas (ARPT-19): what acceptance
//! puts on a pageview's outbox row, and what a report actor adds to the
//! site-map rollups when it applies the row.
//!
//! Per (site, UTC day, route): `views`, `entries` (sessions whose first
//! pageview is there) and `continuations` (sessions whose entry pageview was
//! followed by another pageview); per (site, UTC day, from, to): one
//! transition per consecutive pageview pair of a session, custom events
//! ignored. A transition and a continuation count on the UTC day of the
//! later pageview of their pair (where the outbox row that knows both is).

use std::collections::BTreeMap;

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::rollup::buckets::bucket;
use crate::service::analytics::vocabulary::{Change, Tier};
use crate::service::sites::routes;
use crate::store::analytics::site_map::{self as store, RouteCounts};
use crate::store::analytics::{OutboxRow, SessionRow};

/// The route of the session's previous pageview, before a new pageview is
/// counted in `s` (`None` for its first): its last pageview's path (the
/// session's exit path) under the site's patterns.
pub fn previous_route(s: &SessionRow, patterns: &[String]) -> Option<String> {
    (s.pageviews > 0).then(|| routes::route_of(&s.exit_path, patterns))
}

/// What a pageview's outbox row carries for the map: the previous pageview's
/// route and this pageview's number in its session.
pub fn mark(o: &mut OutboxRow, prev_route: Option<String>, pageview_no: i64) {
    o.prev_route = prev_route;
    o.pageview_no = pageview_no;
}

#[derive(Default)]
struct Deltas {
    routes: BTreeMap<(String, i64, String), RouteCounts>,
    transitions: BTreeMap<(String, i64, String, String), i64>,
}

/// Adds a batch's pageviews to the site-map rollups (in the report actor's transaction).
pub fn apply(conn: &mut AnyConnection, rows: &[OutboxRow]) -> Result<()> {
    let mut d = Deltas::default();
    for o in rows.iter().filter(|o| o.kind == Change::Pageview.as_str()) {
        let day = bucket(Tier::Day, o.at);
        let site = o.site_id.clone();
        d.routes.entry((site.clone(), day, o.route.clone())).or_default().views += 1;
        if o.pageview_no == 1 {
            d.routes.entry((site.clone(), day, o.route.clone())).or_default().entries += 1;
        }
        if let Some(prev) = &o.prev_route {
            *d.transitions.entry((site.clone(), day, prev.clone(), o.route.clone())).or_default() += 1;
            // The entry pageview was followed by this one: a continuation of the entry route.
            if o.pageview_no == 2 {
                d.routes.entry((site, day, prev.clone())).or_default().continuations += 1;
            }
        }
    }
    // One statement per table, in key order (as the other rollups).
    let routes: Vec<_> =
        d.routes.iter().map(|((site, day, route), c)| store::RouteAdded::of(site, *day, route, c)).collect();
    store::add_routes(conn, &routes).map_err(Error::from)?;
    let transitions: Vec<_> = d
        .transitions
        .iter()
        .map(|((site_id, day, from, to), n)| store::TransitionAdded {
            site_id,
            day: *day,
            from_route: from,
            to_route: to,
            count: *n,
        })
        .collect();
    store::add_transitions(conn, &transitions).map_err(Error::from)?;
    Ok(())
}

/// `coverageFrom` (§5.5): the UTC day start from which the map holds a site's
/// pageviews: max(site creation, the upgrade that added the map), lowered to
/// the day of the earliest imported pageview.
pub fn coverage_from(conn: &mut AnyConnection, site_id: &str, created_at: i64) -> Result<i64> {
    let upgraded = store::upgraded_at(conn, "siteMap")?.unwrap_or(0);
    let mut from = created_at.max(upgraded);
    if let Some(imported) = store::imported_since(conn, site_id)? {
        from = from.min(imported);
    }
    Ok(from - from.rem_euclid(DAY_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_route_is_the_last_pageviews_under_the_patterns() {
        let mut s = SessionRow {
            site_id: "x".into(),
            entry_path: "/p/1".into(),
            entry_route: "/p/1".into(),
            exit_path: "/p/1".into(),
            pageviews: 0,
            events: 1,
            ..SessionRow::example("s", "v", 0, 0)
        };
        // A session opened by a custom event has no previous pageview.
        assert_eq!(previous_route(&s, &[]), None);
        s.pageviews = 1;
        assert_eq!(previous_route(&s, &["/p/:id".to_string()]).as_deref(), Some("/p/:id"));
        assert_eq!(previous_route(&s, &[]).as_deref(), Some("/p/1"));
    }
}
