//! Retention's rows (RET-01 to RET-05): policies, per-class jobs, and the
//! bounded deletes and backlog counts over the tables of each class.

use diesel::QueryResult;
use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::sql::RawQuery;

crate::row! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PolicyRow in web_retention_policies {
        pub site_id: String,
        pub events_days: i64,
        pub sessions_days: i64,
        pub conversions_days: i64,
        pub profiles_days: i64,
        pub aggregates_days: i64,
        pub enabled_at: i64,
        pub updated_at: i64,
    }
}

pub fn policy(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<PolicyRow>> {
    use crate::db::schema::web_retention_policies as p;
    p::table.find(site_id).select(PolicyRow::as_select()).first(conn).optional()
}

pub fn policies(conn: &mut AnyConnection) -> QueryResult<Vec<PolicyRow>> {
    use crate::db::schema::web_retention_policies as p;
    p::table.order(p::site_id).select(PolicyRow::as_select()).load(conn)
}

/// Sets a site's policy; `enabled_at` stays the first one's.
pub fn put_policy(conn: &mut AnyConnection, p: &PolicyRow) -> QueryResult<usize> {
    crate::db::row::insert::<PolicyRow, _>(
        conn,
        std::slice::from_ref(p),
        " ON CONFLICT (site_id) DO UPDATE SET events_days = excluded.events_days, \
         sessions_days = excluded.sessions_days, conversions_days = excluded.conversions_days, \
         profiles_days = excluded.profiles_days, aggregates_days = excluded.aggregates_days, \
         updated_at = excluded.updated_at",
    )
}

pub fn delete_policy(conn: &mut AnyConnection, site_id: &str) -> QueryResult<usize> {
    use crate::db::schema::web_retention_policies as p;
    diesel::delete(p::table.find(site_id)).execute(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct JobRow in web_retention_jobs {
        pub data_class: String,
        pub cutoff: Option<i64>,
        pub last_run_at: Option<i64>,
        pub next_run_at: Option<i64>,
        pub last_deleted: i64,
        pub last_error: Option<String>,
        pub purged_before: Option<i64>,
    }
}

pub fn jobs(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<JobRow>> {
    let mut q = RawQuery::new(
        "SELECT data_class, cutoff, last_run_at, next_run_at, last_deleted, last_error, purged_before \
         FROM web_retention_jobs WHERE site_id = ?",
    );
    q.text(site_id);
    q.load(conn)
}

/// A run's outcome: its cutoff, time, rows deleted and error; `purged_before`
/// moves to the cutoff once the class has nothing left past it.
#[allow(clippy::too_many_arguments)]
pub fn record_run(
    conn: &mut AnyConnection,
    site_id: &str,
    class: &str,
    cutoff: i64,
    ran_at: i64,
    next_run_at: i64,
    deleted: i64,
    error: Option<&str>,
    purged_before: Option<i64>,
    tracked_since: Option<i64>,
) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "INSERT INTO web_retention_jobs (site_id, data_class, cutoff, last_run_at, next_run_at, last_deleted, \
         last_error, purged_before, tracked_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (site_id, data_class) DO UPDATE SET \
         cutoff = excluded.cutoff, last_run_at = excluded.last_run_at, next_run_at = excluded.next_run_at, \
         last_deleted = excluded.last_deleted, last_error = excluded.last_error, \
         purged_before = COALESCE(excluded.purged_before, web_retention_jobs.purged_before), \
         tracked_since = COALESCE(web_retention_jobs.tracked_since, excluded.tracked_since)",
    );
    q.text(site_id)
        .text(class)
        .int(cutoff)
        .int(ran_at)
        .int(next_run_at)
        .int(deleted)
        .opt_text(error.map(str::to_string))
        .opt_int(purged_before)
        .opt_int(tracked_since);
    q.execute(conn)
}

/// How a `DELETE … WHERE (row) IN (SELECT row …)` names a row of `table`:
/// PostgreSQL's `ctid`; SQLite's `rowid`, or the primary key of the tables
/// stored by their key (`WITHOUT ROWID`, migration 17), which have none.
pub(super) fn row_name(conn: &AnyConnection, table: &str) -> &'static str {
    match table {
        _ if !conn.is_sqlite() => "ctid",
        "web_funnel_days" => "funnel_id, day, visitor_id",
        "web_vital_digests" => "site_id, day, metric, route, device",
        _ => "rowid",
    }
}

/// The rows of `table` of a site whose `column` is before `cutoff`: at most
/// `limit` deleted, in one statement.
pub fn delete_before(
    conn: &mut AnyConnection,
    table: &str,
    column: &str,
    site_id: &str,
    cutoff: i64,
    limit: usize,
) -> QueryResult<usize> {
    let row = row_name(conn, table);
    let mut q = RawQuery::new(format!(
        "DELETE FROM {table} WHERE ({row}) IN (SELECT {row} FROM {table} WHERE site_id = ? AND {column} < ? LIMIT ?)"
    ));
    q.text(site_id).int(cutoff).int(limit as i64);
    q.execute(conn)
}

/// How many rows of `table` of a site have `column` before `cutoff`.
pub fn count_before(
    conn: &mut AnyConnection,
    table: &str,
    column: &str,
    site_id: &str,
    cutoff: i64,
) -> QueryResult<i64> {
    let mut q =
        RawQuery::new(format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM {table} WHERE site_id = ? AND {column} < ?"));
    q.text(site_id).int(cutoff);
    Ok(q.load::<crate::db::row::Count>(conn)?.into_iter().next().map_or(0, |c| c.n))
}

/// (site, visitor) state rows whose session is gone (`sessions` class).
pub fn delete_orphan_visitors(
    conn: &mut AnyConnection,
    site_id: &str,
    cutoff: i64,
    limit: usize,
) -> QueryResult<usize> {
    let row = row_name(conn, "web_visitors");
    let mut q = RawQuery::new(format!(
        "DELETE FROM web_visitors WHERE ({row}) IN (SELECT {row} FROM web_visitors WHERE site_id = ? \
         AND session_started_at < ? AND last_at < ? LIMIT ?)"
    ));
    q.text(site_id).int(cutoff).int(cutoff).int(limit as i64);
    q.execute(conn)
}

pub fn count_orphan_visitors(conn: &mut AnyConnection, site_id: &str, cutoff: i64) -> QueryResult<i64> {
    let mut q = RawQuery::new(
        "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_visitors WHERE site_id = ? AND session_started_at < ? AND last_at < ?",
    );
    q.text(site_id).int(cutoff).int(cutoff);
    Ok(q.load::<crate::db::row::Count>(conn)?.into_iter().next().map_or(0, |c| c.n))
}

/// Up to `limit` profiles of a site last seen (as stored) before `cutoff`.
pub fn profiles_before(conn: &mut AnyConnection, site_id: &str, cutoff: i64, limit: usize) -> QueryResult<Vec<String>> {
    crate::row! {
        struct Id {
            visitor_id: String,
        }
    }
    let mut q = RawQuery::new(
        "SELECT visitor_id FROM web_profiles WHERE site_id = ? AND last_seen_at < ? ORDER BY last_seen_at LIMIT ?",
    );
    q.text(site_id).int(cutoff).int(limit as i64);
    Ok(q.load::<Id>(conn)?.into_iter().map(|r| r.visitor_id).collect())
}

/// A profile seen later than its stored `last_seen_at` (a session after its last identify).
pub fn touch_profile(conn: &mut AnyConnection, site_id: &str, visitor_id: &str, seen: i64) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_profiles SET last_seen_at = ? WHERE site_id = ? AND visitor_id = ? AND last_seen_at < ?",
    );
    q.int(seen).text(site_id).text(visitor_id).int(seen);
    q.execute(conn)
}
