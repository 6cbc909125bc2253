//! `siteMap` over local days (REPORTING §1, rule REP-02): the rollups keep
//! UTC days, so the whole UTC days inside the range come from them and the
//! hours around them from the pageviews themselves, each placed in its
//! session's order as the report actor places it (a view; an entry when it
//! is the session's first; a transition from the one before; a continuation
//! of the entry when it is the second). With `filters`, the kept sessions'
//! pageviews alone make the map, placed the same way.

use std::collections::{BTreeMap, HashSet};

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::vocabulary::EventKind;
use crate::service::reporting::timezone::utc_days_inside;
use crate::store::analytics::{self as events, site_map as store};

/// A site's route and transition rows over `[from, to]`, any instants.
pub fn rows(conn: &mut AnyConnection, site_id: &str, (from, to): (i64, i64)) -> Result<Rows> {
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
    place(conn, &sessions, in_edges, &mut routes, &mut pairs)?;
    Ok(finish(routes, pairs))
}

/// A site's route and transition rows over `[from, to]` from the pageviews
/// of `sessions` alone (the sessions `filters` keep, REP-06, REP-07): their
/// whole paths, each pageview in the range placed as the rollup places it.
pub fn rows_of_sessions(conn: &mut AnyConnection, sessions: &[String], (from, to): (i64, i64)) -> Result<Rows> {
    let mut routes: BTreeMap<String, store::RouteRow> = BTreeMap::new();
    let mut pairs: BTreeMap<(String, String), i64> = BTreeMap::new();
    place(conn, sessions, |t| (from..=to).contains(&t), &mut routes, &mut pairs)?;
    Ok(finish(routes, pairs))
}

/// Adds the pageviews of `sessions` at the instants `counted` to the rows, in
/// their session's order: a view; an entry when it is the session's first; a
/// transition from the one before; a continuation of the entry when second.
fn place(
    conn: &mut AnyConnection,
    sessions: &[String],
    counted: impl Fn(i64) -> bool,
    routes: &mut BTreeMap<String, store::RouteRow>,
    pairs: &mut BTreeMap<(String, String), i64>,
) -> Result<()> {
    let pageview = EventKind::Pageview.as_str();
    let mut seq: Vec<store::SessionPageview> = Vec::new();
    for chunk in sessions.chunks(400) {
        seq.extend(store::session_pageviews(conn, chunk, pageview)?);
    }
    let mut at = 0;
    while at < seq.len() {
        let end = at + seq[at..].iter().take_while(|p| p.session_id == seq[at].session_id).count();
        let session = &seq[at..end];
        for (i, p) in session.iter().enumerate().filter(|(_, p)| counted(p.occurred_at)) {
            let line = entry(routes, &p.route);
            line.views += 1;
            if i == 0 {
                line.entries += 1;
            } else {
                *pairs.entry((session[i - 1].route.clone(), p.route.clone())).or_default() += 1;
                if i == 1 {
                    entry(routes, &session[0].route).continuations += 1;
                }
            }
        }
        at = end;
    }
    Ok(())
}

type Rows = (Vec<store::RouteRow>, Vec<store::TransitionRow>);

fn finish(routes: BTreeMap<String, store::RouteRow>, pairs: BTreeMap<(String, String), i64>) -> Rows {
    let transitions = pairs
        .into_iter()
        .map(|((from_route, to_route), count)| store::TransitionRow { from_route, to_route, count })
        .collect();
    (routes.into_values().collect(), transitions)
}

/// A route's row, made empty on its first use.
fn entry<'a>(routes: &'a mut BTreeMap<String, store::RouteRow>, route: &str) -> &'a mut store::RouteRow {
    routes.entry(route.to_string()).or_insert_with(|| store::RouteRow {
        route: route.to_string(),
        views: 0,
        entries: 0,
        continuations: 0,
    })
}
