//! The site map's rollups (ARPT-19, ARPT-20): per (site, UTC day,
//! route) views, entries and entry continuations; per (site, UTC day, from
//! route, to route) transitions; the earliest imported pageview per site and
//! the time of the upgrade that added the map (its `coverageFrom`).

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::row;
use crate::db::sql::RawQuery;

/// Additions to one (site, day, route) row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteCounts {
    pub views: i64,
    pub entries: i64,
    pub continuations: i64,
}

pub fn add_route(
    conn: &mut AnyConnection,
    site_id: &str,
    day: i64,
    route: &str,
    c: &RouteCounts,
) -> QueryResult<usize> {
    add_routes(conn, &[RouteAdded::of(site_id, day, route, c)])
}

crate::row! {
    /// Views, entries and continuations to add to one (site, day, route).
    pub struct RouteAdded<'a> in web_map_routes {
        site_id: &'a str,
        day: i64,
        route: &'a str,
        views: i64,
        entries: i64,
        continuations: i64,
    }
}

impl<'a> RouteAdded<'a> {
    pub fn of(site_id: &'a str, day: i64, route: &'a str, c: &RouteCounts) -> Self {
        RouteAdded { site_id, day, route, views: c.views, entries: c.entries, continuations: c.continuations }
    }
}

/// Adds every row to its route's day with one statement (per chunk of binds
/// on SQLite), in their order.
pub fn add_routes(conn: &mut AnyConnection, rows: &[RouteAdded<'_>]) -> QueryResult<usize> {
    row::add::<RouteAdded<'_>, _>(conn, rows, "site_id, day, route", &["views", "entries", "continuations"])
}

pub fn add_transition(
    conn: &mut AnyConnection,
    site_id: &str,
    day: i64,
    from: &str,
    to: &str,
    count: i64,
) -> QueryResult<usize> {
    add_transitions(conn, &[TransitionAdded { site_id, day, from_route: from, to_route: to, count }])
}

crate::row! {
    /// Moves from one route to another to add to a (site, day).
    pub struct TransitionAdded<'a> in web_map_transitions {
        pub site_id: &'a str,
        pub day: i64,
        pub from_route: &'a str,
        pub to_route: &'a str,
        pub count: i64,
    }
}

/// Adds every row to its transition's day with one statement (per chunk of
/// binds on SQLite), in their order.
pub fn add_transitions(conn: &mut AnyConnection, rows: &[TransitionAdded<'_>]) -> QueryResult<usize> {
    row::add::<TransitionAdded<'_>, _>(conn, rows, "site_id, day, from_route, to_route", &["count"])
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct RouteRow in web_map_routes {
        pub route: String,
        pub views: i64,
        pub entries: i64,
        pub continuations: i64,
    }
}

/// A site's route counts over days `[from, to]`, summed per route.
pub fn routes(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<RouteRow>> {
    let mut q = RawQuery::prepared(
        "SELECT route, CAST(SUM(views) AS BIGINT) AS views, CAST(SUM(entries) AS BIGINT) AS entries, \
         CAST(SUM(continuations) AS BIGINT) AS continuations FROM web_map_routes \
         WHERE site_id = ? AND day >= ? AND day <= ? GROUP BY route",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct TransitionRow in web_map_transitions {
        pub from_route: String,
        pub to_route: String,
        pub count: i64,
    }
}

/// A site's transitions over days `[from, to]`, summed per pair.
pub fn transitions(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<TransitionRow>> {
    let mut q = RawQuery::prepared(
        "SELECT from_route, to_route, CAST(SUM(count) AS BIGINT) AS count FROM web_map_transitions \
         WHERE site_id = ? AND day >= ? AND day <= ? GROUP BY from_route, to_route",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}

/// Notes an imported pageview's time: the earliest one lowers `coverageFrom`.
pub fn note_imported(conn: &mut AnyConnection, site_id: &str, at: i64) -> QueryResult<usize> {
    let least = if conn.is_sqlite() { "MIN" } else { "LEAST" };
    let mut q = RawQuery::new(format!(
        "INSERT INTO web_map_imported (site_id, earliest) VALUES (?, ?) ON CONFLICT (site_id) \
         DO UPDATE SET earliest = {least}(web_map_imported.earliest, excluded.earliest)"
    ));
    q.text(site_id).int(at);
    q.execute(conn)
}

crate::row! {
    struct Time {
        t: Option<i64>,
    }
}

/// The earliest imported pageview of a site, if any.
pub fn imported_since(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<i64>> {
    let mut q = RawQuery::new("SELECT earliest AS t FROM web_map_imported WHERE site_id = ?");
    q.text(site_id);
    Ok(q.load::<Time>(conn)?.into_iter().next().and_then(|r| r.t))
}

/// When the upgrade named `name` ran (its migration's time).
pub fn upgraded_at(conn: &mut AnyConnection, name: &str) -> QueryResult<Option<i64>> {
    let mut q = RawQuery::new("SELECT at AS t FROM web_upgrades WHERE name = ?");
    q.text(name);
    Ok(q.load::<Time>(conn)?.into_iter().next().and_then(|r| r.t))
}

crate::row! {
    /// A pageview's place in its session, for the map of partial days.
    #[derive(Debug, Clone)]
    pub struct SessionPageview in web_events {
        pub session_id: String,
        pub route: String,
        pub occurred_at: i64,
    }
}

/// Every retained event of kind `pageview` of these sessions, in each
/// session's order (time, then id).
pub fn session_pageviews(
    conn: &mut AnyConnection,
    session_ids: &[String],
    pageview: &str,
) -> QueryResult<Vec<SessionPageview>> {
    if session_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT session_id, route, occurred_at FROM web_events WHERE session_id IN {} AND kind = ? \
         ORDER BY session_id, occurred_at, id",
        crate::db::sql::placeholders(session_ids.len())
    ));
    q.texts(session_ids).text(pageview);
    q.load(conn)
}
