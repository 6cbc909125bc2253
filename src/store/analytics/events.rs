//! Pageview and custom event rows.

#[allow(unused_imports)]
use super::*;

crate::row! {
    /// A pageview or custom event as stored.
    #[derive(Debug, Clone)]
    pub struct EventRow in web_events, written by copy {
        pub id: String,
        pub site_id: String,
        pub session_id: String,
        pub visitor_id: String,
        pub kind: String,
        pub name: Option<String>,
        pub path: String,
        pub route: String,
        pub occurred_at: i64,
        pub pageview_id: Option<String>,
        pub properties: Option<String>,
        pub engaged_ms: Option<i64>,
        pub lcp: Option<i64>,
        pub inp: Option<i64>,
        pub cls: Option<i64>,
        pub fcp: Option<i64>,
        pub ttfb: Option<i64>,
    }
}

/// Stored pageviews of a site by their `pageviewId`.
pub fn pageviews(conn: &mut AnyConnection, site_id: &str, pageview_ids: &[String]) -> QueryResult<Vec<EventRow>> {
    if pageview_ids.is_empty() {
        return Ok(Vec::new());
    }
    pageviews_query(conn, site_id, pageview_ids).load(conn)
}

/// The read of [`pageviews`] (public for the test that reads its plan).
///
/// On PostgreSQL each id probes the unique index `(site_id, pageview_id)`
/// from a lateral join. With an `IN` list the planner weighs the index on
/// `(site_id, occurred_at)` against it by the table's statistics, and while
/// those undercount a site's events (a table not yet analyzed, a new site
/// missing from the statistics) it took that index and filtered every
/// event of the site: 95 ms for 307,000 events in `loadgen events`, once
/// per combined write, so ingest slowed as the table grew. A lateral
/// subquery with `LIMIT 1` (the index is unique) is not folded into a join,
/// so each probe is an equality on the whole unique key, which the planner
/// takes whatever the statistics say. SQLite picks the unique index for the
/// `IN` list by itself. The ids are distinct (a repeated one would answer
/// its row twice).
pub fn pageviews_query(conn: &AnyConnection, site_id: &str, pageview_ids: &[String]) -> RawQuery {
    if conn.is_sqlite() {
        let list = InList::on(conn, pageview_ids.len());
        let mut q = list.query(format!(
            "SELECT {} FROM web_events WHERE site_id = ? AND pageview_id IN {}",
            EventRow::select_list(),
            list.placeholders()
        ));
        q.text(site_id);
        list.texts(&mut q, pageview_ids);
        return q;
    }
    let wanted = vec!["(?::text)"; pageview_ids.len()].join(", ");
    let mut q = RawQuery::new(format!(
        "SELECT e.* FROM (VALUES {wanted}) AS w(pageview) CROSS JOIN LATERAL \
         (SELECT {} FROM web_events WHERE site_id = ? AND pageview_id = w.pageview LIMIT 1) AS e",
        EventRow::select_list()
    ));
    q.texts(pageview_ids).text(site_id);
    q
}

/// Many events: on PostgreSQL one statement (a `COPY` from 32 rows), on
/// SQLite a statement per chunk of binds.
pub fn insert_events<B: std::borrow::Borrow<EventRow>>(conn: &mut AnyConnection, rows: &[B]) -> QueryResult<usize> {
    row::insert_copied::<EventRow, B>(conn, rows)
}

/// Stored pageviews' engagement and vitals after later events, a statement
/// per chunk (issue 25): an upsert on the `(site_id, pageview_id)` of rows
/// that all exist, so each is an update of the measures alone (an event's id
/// has no index of its own: migration 35).
pub fn update_measures(conn: &mut AnyConnection, rows: &[&EventRow]) -> QueryResult<usize> {
    row::insert::<EventRow, _>(
        conn,
        rows,
        " ON CONFLICT (site_id, pageview_id) DO UPDATE SET engaged_ms = excluded.engaged_ms, lcp = excluded.lcp, inp = excluded.inp, \
         cls = excluded.cls, fcp = excluded.fcp, ttfb = excluded.ttfb",
    )
}
