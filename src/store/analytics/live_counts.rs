//! The count of live visitors as PostgreSQL keeps it (migration 31, issue
//! 25 item 4): per site and 10-second bucket of last activity, the number
//! of visitor rows not handed over, moved by statement triggers on
//! `web_visitors` whatever statement changes a row. A window's count is
//! the sum of its whole buckets and a count of the rows of its two partial
//! edge buckets only, so it no longer checks every live row in the table.
//! SQLite counts its rows (an index walk there, with nothing to check).

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::row::Count;
use crate::db::sql::{RawQuery, placeholders};

/// A bucket's width, as migration 31's triggers compute it.
pub const BUCKET_MS: i64 = 10_000;

/// The live count of `site_ids` over `[from, to]` from the counters; `None`
/// on SQLite, for a window of less than a whole bucket, or for one that
/// starts before the counters' horizon (the caller then counts the rows).
pub fn count(conn: &mut AnyConnection, site_ids: &[String], from: i64, to: i64) -> QueryResult<Option<i64>> {
    // (A window before the epoch, which no caller asks, is left to the rows
    // rather than to bucket arithmetic on negative times.)
    if conn.is_sqlite() || site_ids.is_empty() || from < 0 {
        return Ok(None);
    }
    // Whole buckets [lo, hi); the rows of [from, lo) and [hi, to] are counted.
    let lo = from + (BUCKET_MS - from % BUCKET_MS) % BUCKET_MS;
    let hi = to - to.rem_euclid(BUCKET_MS);
    if hi <= lo {
        return Ok(None);
    }
    let sites = placeholders(site_ids.len());
    let rows = format!("SELECT COUNT(*) FROM web_visitors WHERE site_id IN {sites} AND NOT handed_over");
    // One statement, so the horizon, the counters and the rows are one snapshot.
    let mut q = RawQuery::prepared(format!(
        "SELECT CAST(COALESCE((SELECT SUM(n) FROM web_live_counts WHERE site_id IN {sites} \
           AND bucket >= ? AND bucket < ?), 0) \
         + ({rows} AND last_at >= ? AND last_at < ?) + ({rows} AND last_at >= ? AND last_at <= ?) AS BIGINT) AS n \
         FROM web_live_horizon WHERE since <= ?"
    ));
    q.texts(site_ids).int(lo).int(hi);
    q.texts(site_ids).int(from).int(lo);
    q.texts(site_ids).int(hi).int(to);
    q.int(lo);
    Ok(q.load::<Count>(conn)?.first().map(|c| c.n))
}

/// Deletes the buckets before `before` (a bucket start) and moves the
/// horizon there, in the caller's transaction; nothing on SQLite, nothing
/// when the horizon is already there. Answers the buckets deleted.
pub fn prune(conn: &mut AnyConnection, before: i64) -> QueryResult<usize> {
    if conn.is_sqlite() {
        return Ok(0);
    }
    let mut q = RawQuery::prepared("UPDATE web_live_horizon SET since = ? WHERE since < ?");
    q.int(before).int(before);
    if q.execute(conn)? == 0 {
        return Ok(0);
    }
    let mut q = RawQuery::prepared("DELETE FROM web_live_counts WHERE bucket < ?");
    q.int(before);
    q.execute(conn)
}
