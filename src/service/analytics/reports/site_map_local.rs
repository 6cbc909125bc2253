//! `siteMap` over local days (REPORTING §1, rule REP-02): the rollups keep
//! UTC days, so the whole UTC days inside the range come from them and the
//! hours around them from the pageviews themselves, each placed in its
//! session's order as the report actor places it (a view; an entry when it
//! is the session's first; a transition from the one before; a continuation
//! of the entry when it is the second).

use std::collections::{BTreeMap, HashSet};

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::rollup::buckets::DAY_MS;
use crate::service::analytics::vocabulary::EventKind;
use crate::service::reporting::timezone::utc_days_inside;
use crate::store::analytics::{self as events, site_map as store};

/// A site's route and transition rows over `[from, to]`, any instants.
pub fn rows(
    conn: &mut AnyConnection,
    site_id: &str,
    (from, to): (i64, i64),
) -> Result<(Vec<store::RouteRow>, Vec<store::TransitionRow>)> {
    let (days, edges) = utc_days_inside(from, to);
    let mut routes: BTreeMap<String, store::RouteRow> = BTreeMap::new();
    let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
    if let Some((start, end)) = days {
        for r in store::routes(conn, site_id, start, end - DAY_MS)? {
            routes.insert(r.route.clone(), r);
        }
        for t in store::transitions(conn, site_id, start, end - DAY_MS)? {
            *pairs.entry((t.from_route, t.to_route)).or_default() += t.count;
        }
    }
    let pageview = EventKind::Pageview.as_str();
    let site = [site_id.to_string()];
    let mut sessions: HashSet<String> = HashSet::new();
    for (a, b) in &edges {
        sessions.extend(
            events::events_between(conn, &site, *a, *b)?
                .into_iter()
                .filter(|e| e.kind == pageview)
                .map(|e| e.session_id),
        );
    }
    let sessions: Vec<String> = sessions.into_iter().collect();
    let in_edges = |t: i64| edges.iter().any(|(a, b)| (*a..=*b).contains(&t));
    let mut seq: Vec<store::SessionPageview> = Vec::new();
    for chunk in sessions.chunks(400) {
        seq.extend(store::session_pageviews(conn, chunk, pageview)?);
    }
    let mut at = 0;
    while at < seq.len() {
        let end = at + seq[at..].iter().take_while(|p| p.session_id == seq[at].session_id).count();
        let session = &seq[at..end];
        for (i, p) in session.iter().enumerate().filter(|(_, p)| in_edges(p.occurred_at)) {
            let row = routes.entry(p.route.clone()).or_insert_with(|| store::RouteRow {
                route: p.route.clone(),
                views: 0,
                entries: 0,
                continuations: 0,
            });
            row.views += 1;
            if i == 0 {
                row.entries += 1;
            } else {
                *pairs.entry((session[i - 1].route.clone(), p.route.clone())).or_default() += 1;
                if i == 1 {
                    let entry = &session[0].route;
                    routes
                        .entry(entry.clone())
                        .or_insert_with(|| store::RouteRow {
                            route: entry.clone(),
                            views: 0,
                            entries: 0,
                            continuations: 0,
                        })
                        .continuations += 1;
                }
            }
        }
        at = end;
    }
    let transitions = pairs
        .into_iter()
        .map(|((from_route, to_route), count)| store::TransitionRow { from_route, to_route, count })
        .collect();
    Ok((routes.into_values().collect(), transitions))
}
