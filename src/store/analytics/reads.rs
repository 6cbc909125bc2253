//! Reads over the raw rows: live visitors, the hourly overview's hits, session sources.

#[allow(unused_imports)]
use super::*;

/// Text keys sort by byte order on both backends (SQLite's BINARY is already).
pub fn byte_order(conn: &AnyConnection) -> &'static str {
    if conn.is_sqlite() { "" } else { " COLLATE \"C\"" }
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct LiveRow in web_visitors {
        pub site_id: String,
        pub visitor_id: String,
        pub last_at: i64,
        pub current_path: String,
        pub current_route: String,
        pub sessions: i64,
        pub session_id: String,
    }
}

/// The live (site, visitor) rows: last pageview or custom event in `[from, to]`;
/// how many, and the `limit` latest (last_at desc, then site and visitor by bytes).
pub fn live(
    conn: &mut AnyConnection,
    site_ids: &[String],
    from: i64,
    to: i64,
    limit: i64,
) -> QueryResult<(i64, Vec<LiveRow>)> {
    if site_ids.is_empty() {
        return Ok((0, Vec::new()));
    }
    // An alias's row whose session identify handed to the person is marked
    // (rule SES-19), so the count is a walk of the (site, last_at,
    // handed_over) index alone. A row without a session (a placeholder the
    // accepting write makes and fills or drops before it commits) is never
    // seen here, and has `last_at` 0 besides.
    // On PostgreSQL the counters kept by its triggers answer most of it.
    let n = match super::live_counts::count(conn, site_ids, from, to)? {
        Some(n) => n,
        None => {
            let mut count = RawQuery::prepared(format!(
                "SELECT COUNT(*) AS n FROM web_visitors WHERE site_id IN {} AND last_at >= ? AND last_at <= ? \
                 AND NOT handed_over",
                placeholders(site_ids.len()),
            ));
            count.texts(site_ids).int(from).int(to);
            count.load::<crate::db::row::Count>(conn)?.first().map_or(0, |r| r.n)
        }
    };
    // Per site: the `limit`-th latest `last_at` walking its (site, last_at)
    // index backwards, then the rows at or after it (ties included), sorted
    // here; never a sort of every live row of every site. The sites' selects
    // go as one statement (a round trip on PostgreSQL, not one per site).
    let offset = (limit - 1).max(0);
    let mut rows: Vec<LiveRow> = Vec::new();
    if conn.is_sqlite() {
        // A compound select, in groups well under SQLite's limit of terms.
        let one = format!(
            "SELECT {} FROM web_visitors WHERE site_id = ? AND last_at <= ? AND NOT handed_over AND last_at >= COALESCE(( \
               SELECT last_at FROM web_visitors w WHERE w.site_id = ? AND w.last_at >= ? AND w.last_at <= ? \
               AND NOT w.handed_over ORDER BY w.last_at DESC LIMIT 1 OFFSET ?), ?)",
            LiveRow::select_list()
        );
        for group in site_ids.chunks(50) {
            let mut q = RawQuery::prepared(vec![one.as_str(); group.len()].join(" UNION ALL "));
            for site in group {
                q.text(site).int(to).text(site).int(from).int(to).int(offset).int(from);
            }
            rows.extend(q.load::<LiveRow>(conn)?);
        }
    } else {
        // PostgreSQL plans a compound select arm by arm, which cost more than
        // running it (about 0.1 ms a site, measured in session 33); the sites
        // as a `VALUES` list joined laterally to one select plan once. The
        // cut is the `limit`-th latest `last_at` of all the sites (from each
        // site's `limit` latest, walking the index alone), so the rows sent
        // are about `limit`, not `limit` per site.
        let sites = vec!["(?::text)"; site_ids.len()].join(", ");
        let mut q = RawQuery::prepared(format!(
            "WITH cut AS (SELECT x.last_at FROM (VALUES {sites}) AS s(site) CROSS JOIN LATERAL ( \
               SELECT last_at FROM web_visitors WHERE site_id = s.site AND last_at >= ? AND last_at <= ? \
               AND NOT handed_over ORDER BY last_at DESC LIMIT ?) AS x ORDER BY x.last_at DESC LIMIT 1 OFFSET ?) \
             SELECT v.* FROM (VALUES {sites}) AS s(site) CROSS JOIN LATERAL ( \
             SELECT {} FROM web_visitors WHERE site_id = s.site AND last_at <= ? AND NOT handed_over \
             AND last_at >= COALESCE((SELECT last_at FROM cut), ?)) AS v",
            LiveRow::select_list()
        ));
        q.texts(site_ids).int(from).int(to).int(limit.max(1)).int(offset);
        q.texts(site_ids).int(to).int(from);
        rows = q.load::<LiveRow>(conn)?;
    }
    rows.sort_by(|a, b| {
        b.last_at
            .cmp(&a.last_at)
            .then_with(|| a.site_id.as_bytes().cmp(b.site_id.as_bytes()))
            .then_with(|| a.visitor_id.as_bytes().cmp(b.visitor_id.as_bytes()))
    });
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((n, rows))
}

crate::row! {
    /// A pageview or custom event as the hourly overview's per-key visitors
    /// count it (rule OVR-09): whose, on which route, in which session.
    #[derive(Debug, Clone)]
    pub struct VisitorHit {
        pub site_id: String,
        pub visitor_id: String,
        pub kind: String,
        pub route: String,
        pub session_id: String,
    }
}

/// The retained pageviews and custom events of some sites in a range, read
/// once for both the pages' and the sources' visitors. Those are the only
/// kinds `web_events` holds (engagement and vitals update a pageview's row),
/// so no kind is named here.
pub fn visitor_hits(conn: &mut AnyConnection, site_ids: &[String], from: i64, to: i64) -> QueryResult<Vec<VisitorHit>> {
    let mut q = RawQuery::new(format!(
        "SELECT site_id, visitor_id, kind, route, session_id FROM web_events WHERE site_id IN {} \
         AND occurred_at >= ? AND occurred_at <= ?",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids).int(from).int(to);
    q.load(conn)
}

/// The source of each of these sessions (by key).
pub fn session_sources(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<(String, String)>> {
    crate::row! {
        struct IdSource {
            id: String,
            source: String,
        }
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!("SELECT id, source FROM web_sessions WHERE id IN {}", placeholders(ids.len())));
    q.texts(ids);
    Ok(q.load::<IdSource>(conn)?.into_iter().map(|r| (r.id, r.source)).collect())
}
