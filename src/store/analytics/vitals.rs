//! Vitals digests (for ARPT-17, ARPT-18): per (site, UTC day,
//! metric, route, device) a sparse value → count map, one row per value
//! (integer ms; CLS × 10⁴), so a p75 over any range of days is exact. The
//! device '' is the unknown device.

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::row;
use crate::db::sql::RawQuery;

/// One digest cell's key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cell {
    pub site_id: String,
    pub day: i64,
    pub metric: String,
    pub route: String,
    pub device: String,
    pub value: i64,
}

/// Adds `delta` samples (negative: a value a later vitals event replaced);
/// a cell that reaches zero goes.
pub fn add(conn: &mut AnyConnection, c: &Cell, delta: i64) -> QueryResult<usize> {
    crate::row! {
        struct Added<'a> in web_vital_digests {
            site_id: &'a str,
            day: i64,
            metric: &'a str,
            route: &'a str,
            device: &'a str,
            value: i64,
            count: i64,
        }
    }
    let row = Added {
        site_id: &c.site_id,
        day: c.day,
        metric: &c.metric,
        route: &c.route,
        device: &c.device,
        value: c.value,
        count: delta,
    };
    let n = row::add::<Added<'_>, _>(conn, &[row], "site_id, day, metric, route, device, value", &["count"])?;
    if delta < 0 {
        let mut q = RawQuery::prepared(
            "DELETE FROM web_vital_digests WHERE site_id = ? AND day = ? AND metric = ? AND route = ? AND device = ? \
             AND value = ? AND count <= 0",
        );
        q.text(&c.site_id).int(c.day).text(&c.metric).text(&c.route).text(&c.device).int(c.value);
        q.execute(conn)?;
    }
    Ok(n)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct DigestRow in web_vital_digests {
        pub metric: String,
        pub route: String,
        pub device: String,
        pub value: i64,
        pub count: i64,
    }
}

/// What the digests hold for the pageviews (events of kind `pageview`) of
/// `[from, to)` (any instants), from the rows: one row per (pageview, metric
/// it has), count 1, the device its session's ('' when unknown), as the
/// report actor files them.
pub fn digest_rows_between(
    conn: &mut AnyConnection,
    site_id: &str,
    pageview: &str,
    from: i64,
    to: i64,
) -> QueryResult<Vec<DigestRow>> {
    let mut q = RawQuery::prepared(
        "SELECT m.metric, e.route, COALESCE(s.device, '') AS device, \
         CASE m.metric WHEN 'lcp' THEN e.lcp WHEN 'inp' THEN e.inp WHEN 'cls' THEN e.cls WHEN 'fcp' THEN e.fcp \
         ELSE e.ttfb END AS value, CAST(1 AS BIGINT) AS count \
         FROM web_events e JOIN web_sessions s ON s.id = e.session_id \
         CROSS JOIN (SELECT 'lcp' AS metric UNION ALL SELECT 'inp' UNION ALL SELECT 'cls' UNION ALL SELECT 'fcp' \
         UNION ALL SELECT 'ttfb') m \
         WHERE e.site_id = ? AND e.kind = ? AND e.occurred_at >= ? AND e.occurred_at < ? \
         AND (CASE m.metric WHEN 'lcp' THEN e.lcp WHEN 'inp' THEN e.inp WHEN 'cls' THEN e.cls WHEN 'fcp' THEN e.fcp \
         ELSE e.ttfb END) IS NOT NULL",
    );
    q.text(site_id).text(pageview).int(from).int(to);
    q.load(conn)
}

/// A site's digest cells over days `[from, to]`, one row per (day, cell), in
/// key order: the caller merges the days. (A GROUP BY here sorted every
/// cell of the range by text, which cost more than the walk itself.)
pub fn digests(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<DigestRow>> {
    let mut q = RawQuery::prepared(
        "SELECT metric, route, device, value, count FROM web_vital_digests \
         WHERE site_id = ? AND day >= ? AND day <= ? AND count > 0",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}
