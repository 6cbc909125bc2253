//! Route regrouping's rows (ROUTE-04, ROUTE-08): the job per site, the pattern
//! texts a site has listed (grouped routes, never moved again), and the
//! bounded reads and moves of each step.

use diesel::QueryResult;
use diesel::prelude::*;

use crate::db::sql::{RawQuery, placeholders};
use crate::db::{AnyConnection, row};

crate::row! {
    #[derive(Debug, Clone)]
    pub struct JobRow in web_regroup_jobs {
        pub site_id: String,
        pub patterns: String,
        pub phase: i64,
        pub cursor: String,
    }
}

crate::row! {
    struct NewJob<'a> in web_regroup_jobs {
        site_id: &'a str,
        patterns: &'a str,
        phase: i64,
        cursor: &'a str,
        started_at: i64,
    }
}

crate::row! {
    struct Group<'a> in web_route_groups {
        site_id: &'a str,
        route: &'a str,
    }
}

crate::row! {
    struct RouteRow {
        route: String,
    }
}

/// Starts (or restarts, with the newer list) a site's job.
pub fn schedule(conn: &mut AnyConnection, site_id: &str, patterns: &str, now: i64) -> QueryResult<usize> {
    let job = NewJob { site_id, patterns, phase: 0, cursor: "", started_at: now };
    row::insert::<NewJob, _>(
        conn,
        &[job],
        " ON CONFLICT (site_id) DO UPDATE SET patterns = excluded.patterns, phase = 0, cursor = '', \
         started_at = excluded.started_at",
    )
}

pub fn add_groups(conn: &mut AnyConnection, site_id: &str, routes: &[String]) -> QueryResult<()> {
    let rows: Vec<Group> = routes.iter().map(|route| Group { site_id, route }).collect();
    row::insert::<Group, _>(conn, &rows, " ON CONFLICT DO NOTHING")?;
    Ok(())
}

pub fn groups(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<String>> {
    use crate::db::schema::web_route_groups as g;
    g::table.filter(g::site_id.eq(site_id)).select(g::route).load(conn)
}

/// The oldest job, locked and skipped by other processes on PostgreSQL.
pub fn next_job(conn: &mut AnyConnection) -> QueryResult<Option<JobRow>> {
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE SKIP LOCKED" };
    let q = row::select::<JobRow>(&format!("ORDER BY started_at, site_id LIMIT 1{lock}"));
    Ok(q.load::<JobRow>(conn)?.into_iter().next())
}

pub fn set_position(conn: &mut AnyConnection, site_id: &str, phase: i64, cursor: &str) -> QueryResult<usize> {
    use crate::db::schema::web_regroup_jobs as j;
    diesel::update(j::table.find(site_id)).set((j::phase.eq(phase), j::cursor.eq(cursor))).execute(conn)
}

pub fn finish(conn: &mut AnyConnection, site_id: &str) -> QueryResult<usize> {
    use crate::db::schema::web_regroup_jobs as j;
    diesel::delete(j::table.find(site_id)).execute(conn)
}

/// Whether a site's job is still running.
pub fn active(conn: &mut AnyConnection, site_id: &str) -> QueryResult<bool> {
    use crate::db::schema::web_regroup_jobs as j;
    diesel::select(diesel::dsl::exists(j::table.find(site_id))).get_result(conn)
}

// ---------------------------------------------------------------- rows with a raw path beside their route

/// A table whose rows keep the raw path beside the route, scanned per site in
/// the order of an index that starts with the site (`time`, then `key`, when
/// the table has a time column).
pub struct PathTable {
    pub table: &'static str,
    pub key: &'static str,
    pub time: Option<&'static str>,
    pub path: &'static str,
    pub route: &'static str,
}

pub const EVENTS: PathTable =
    PathTable { table: "web_events", key: "id", time: Some("occurred_at"), path: "path", route: "route" };
pub const SESSIONS: PathTable =
    PathTable { table: "web_sessions", key: "id", time: Some("started_at"), path: "entry_path", route: "entry_route" };
pub const VISITORS: PathTable =
    PathTable { table: "web_visitors", key: "visitor_id", time: None, path: "current_path", route: "current_route" };

crate::row! {
    #[derive(Debug)]
    pub struct PathRow {
        pub t: i64,
        pub key: String,
        pub path: String,
        pub route: String,
    }
}

/// The next `limit` rows of a site after the position `(t, key)`.
pub fn path_rows(
    conn: &mut AnyConnection,
    t: &PathTable,
    site_id: &str,
    after: (i64, &str),
    limit: usize,
) -> QueryResult<Vec<PathRow>> {
    let (k, p, r, tb) = (t.key, t.path, t.route, t.table);
    let c = super::byte_order(conn);
    let mut q = match t.time {
        Some(time) => {
            let mut q = RawQuery::new(format!(
                "SELECT {time} AS t, {k} AS key, {p} AS path, {r} AS route FROM {tb} WHERE site_id = ? \
                 AND ({time} > ? OR ({time} = ? AND {k}{c} > ?)) ORDER BY {time}, {k}{c} LIMIT ?"
            ));
            q.text(site_id).int(after.0).int(after.0).text(after.1);
            q
        }
        None => {
            let mut q = RawQuery::new(format!(
                "SELECT CAST(0 AS BIGINT) AS t, {k} AS key, {p} AS path, {r} AS route FROM {tb} WHERE site_id = ? AND {k}{c} > ? \
                 ORDER BY {k}{c} LIMIT ?"
            ));
            q.text(site_id).text(after.1);
            q
        }
    };
    q.int(limit as i64);
    q.load(conn)
}

/// Rewrites the route of the row `row` read by [`path_rows`]. A table with a
/// time is found by `(site_id, time, key)`: the index on the site and time
/// finds an event, whose id has no index of its own (migration 35).
pub fn set_route(
    conn: &mut AnyConnection,
    t: &PathTable,
    site_id: &str,
    row: &PathRow,
    route: &str,
) -> QueryResult<usize> {
    let at = t.time.map(|time| format!(" AND {time} = ?")).unwrap_or_default();
    let mut q =
        RawQuery::new(format!("UPDATE {} SET {} = ? WHERE site_id = ?{at} AND {} = ?", t.table, t.route, t.key));
    q.text(route).text(site_id);
    if t.time.is_some() {
        q.int(row.t);
    }
    q.text(&row.key);
    q.execute(conn)
}

// ---------------------------------------------------------------- rollup rows keyed by route

/// The distinct routes of a site in a rollup (`sql` selects one `route` column).
pub fn distinct_routes(conn: &mut AnyConnection, sql: &str, site_id: &str) -> QueryResult<Vec<String>> {
    let mut q = RawQuery::new(sql);
    q.text(site_id);
    Ok(q.load::<RouteRow>(conn)?.into_iter().map(|r| r.route).collect())
}

/// The distinct keys of a site's breakdown rows of these dimensions.
pub fn breakdown_keys(conn: &mut AnyConnection, site_id: &str, dims: &[&str]) -> QueryResult<Vec<String>> {
    let mut q = RawQuery::new(format!(
        "SELECT DISTINCT key AS route FROM web_breakdowns WHERE site_id = ? AND dim IN {}",
        placeholders(dims.len())
    ));
    q.text(site_id).texts(dims);
    Ok(q.load::<RouteRow>(conn)?.into_iter().map(|r| r.route).collect())
}

/// The distinct keys of a site's visitor sets of one dimension.
pub fn set_keys(conn: &mut AnyConnection, site_id: &str, dim: &str) -> QueryResult<Vec<String>> {
    let mut q = RawQuery::new("SELECT DISTINCT key AS route FROM web_visitor_sets WHERE site_id = ? AND dim = ?");
    q.text(site_id).text(dim);
    Ok(q.load::<RouteRow>(conn)?.into_iter().map(|r| r.route).collect())
}

pub const MAP_ROUTES: &str = "SELECT DISTINCT route FROM web_map_routes WHERE site_id = ?";
pub const TRANSITION_ROUTES: &str = "SELECT from_route AS route FROM web_map_transitions WHERE site_id = ? \
    UNION SELECT to_route AS route FROM web_map_transitions WHERE site_id = ?";
pub const DIGEST_ROUTES: &str = "SELECT DISTINCT route FROM web_vital_digests WHERE site_id = ?";

/// The distinct `from` and `to` routes of a site's transitions.
pub fn transition_routes(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<String>> {
    let mut q = RawQuery::new(TRANSITION_ROUTES);
    q.text(site_id).text(site_id);
    Ok(q.load::<RouteRow>(conn)?.into_iter().map(|r| r.route).collect())
}

crate::row! {
    #[derive(Debug)]
    pub struct BreakdownRow in web_breakdowns {
        pub tier: String,
        pub bucket: i64,
        pub dim: String,
        pub key: String,
        pub count: i64,
    }
}

/// Up to `limit` breakdown rows of these dimensions under these keys.
pub fn breakdowns(
    conn: &mut AnyConnection,
    site_id: &str,
    dims: &[&str],
    keys: &[String],
    limit: usize,
) -> QueryResult<Vec<BreakdownRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT tier, bucket, dim, key, count FROM web_breakdowns WHERE site_id = ? AND dim IN {} \
         AND key IN {} LIMIT ?",
        placeholders(dims.len()),
        placeholders(keys.len())
    ));
    q.text(site_id).texts(dims).texts(keys).int(limit as i64);
    q.load(conn)
}

pub fn delete_breakdown(conn: &mut AnyConnection, site_id: &str, r: &BreakdownRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "DELETE FROM web_breakdowns WHERE site_id = ? AND tier = ? AND bucket = ? AND dim = ? AND key = ?",
    );
    q.text(site_id).text(r.tier.as_str()).int(r.bucket).text(r.dim.as_str()).text(r.key.as_str());
    q.execute(conn)
}

crate::row! {
    #[derive(Debug)]
    pub struct SetRow in web_visitor_sets {
        pub tier: String,
        pub bucket: i64,
        pub key: String,
        pub bits: Vec<u8>,
    }
}

/// Up to `limit` visitor sets of one dimension under these keys.
pub fn sets(
    conn: &mut AnyConnection,
    site_id: &str,
    dim: &str,
    keys: &[String],
    limit: usize,
) -> QueryResult<Vec<SetRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT tier, bucket, key, bits FROM web_visitor_sets WHERE site_id = ? AND dim = ? AND key IN {} LIMIT ?",
        placeholders(keys.len())
    ));
    q.text(site_id).text(dim).texts(keys).int(limit as i64);
    q.load(conn)
}

pub fn delete_set(conn: &mut AnyConnection, site_id: &str, dim: &str, r: &SetRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "DELETE FROM web_visitor_sets WHERE site_id = ? AND tier = ? AND bucket = ? AND dim = ? AND key = ?",
    );
    q.text(site_id).text(r.tier.as_str()).int(r.bucket).text(dim).text(r.key.as_str());
    q.execute(conn)
}

crate::row! {
    #[derive(Debug)]
    pub struct MapRouteRow in web_map_routes {
        pub day: i64,
        pub route: String,
        pub views: i64,
        pub entries: i64,
        pub continuations: i64,
    }
}

pub fn map_routes(
    conn: &mut AnyConnection,
    site_id: &str,
    keys: &[String],
    limit: usize,
) -> QueryResult<Vec<MapRouteRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT day, route, views, entries, continuations FROM web_map_routes WHERE site_id = ? AND route IN {} LIMIT ?",
        placeholders(keys.len())
    ));
    q.text(site_id).texts(keys).int(limit as i64);
    q.load(conn)
}

pub fn delete_map_route(conn: &mut AnyConnection, site_id: &str, day: i64, route: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_map_routes WHERE site_id = ? AND day = ? AND route = ?");
    q.text(site_id).int(day).text(route);
    q.execute(conn)
}

crate::row! {
    #[derive(Debug)]
    pub struct TransitionRow in web_map_transitions {
        pub day: i64,
        pub from_route: String,
        pub to_route: String,
        pub count: i64,
    }
}

pub fn transitions(
    conn: &mut AnyConnection,
    site_id: &str,
    keys: &[String],
    limit: usize,
) -> QueryResult<Vec<TransitionRow>> {
    let list = placeholders(keys.len());
    let mut q = RawQuery::new(format!(
        "SELECT day, from_route, to_route, count FROM web_map_transitions WHERE site_id = ? \
         AND (from_route IN {list} OR to_route IN {list}) LIMIT ?"
    ));
    q.text(site_id).texts(keys).texts(keys).int(limit as i64);
    q.load(conn)
}

pub fn delete_transition(conn: &mut AnyConnection, site_id: &str, r: &TransitionRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "DELETE FROM web_map_transitions WHERE site_id = ? AND day = ? AND from_route = ? AND to_route = ?",
    );
    q.text(site_id).int(r.day).text(r.from_route.as_str()).text(r.to_route.as_str());
    q.execute(conn)
}

crate::row! {
    #[derive(Debug)]
    pub struct DigestRow in web_vital_digests {
        pub day: i64,
        pub metric: String,
        pub route: String,
        pub device: String,
        pub pairs: Vec<u8>,
    }
}

/// Up to `limit` digest cells of the site whose route is one of `keys`.
pub fn digests(conn: &mut AnyConnection, site_id: &str, keys: &[String], limit: usize) -> QueryResult<Vec<DigestRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT day, metric, route, device, pairs FROM web_vital_digests WHERE site_id = ? AND route IN {} LIMIT ?",
        placeholders(keys.len())
    ));
    q.text(site_id).texts(keys).int(limit as i64);
    q.load(conn)
}
