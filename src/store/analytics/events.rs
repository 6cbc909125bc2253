//! Pageview and custom event rows.

#[allow(unused_imports)]
use super::*;

/// A pageview or custom event as stored.
#[derive(Debug, Clone, QueryableByName)]
pub struct EventRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub session_id: String,
    #[diesel(sql_type = Text)]
    pub visitor_id: String,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = Text)]
    pub path: String,
    #[diesel(sql_type = Text)]
    pub route: String,
    #[diesel(sql_type = BigInt)]
    pub occurred_at: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub pageview_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub properties: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub engaged_ms: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub lcp: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub inp: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub cls: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub fcp: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub ttfb: Option<i64>,
}

pub(crate) const EVENT_COLUMNS: &str = "id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at, pageview_id, \
    properties, engaged_ms, lcp, inp, cls, fcp, ttfb";

/// Stored pageviews of a site by their `pageviewId`.
pub fn pageviews(conn: &mut AnyConnection, site_id: &str, pageview_ids: &[String]) -> QueryResult<Vec<EventRow>> {
    if pageview_ids.is_empty() {
        return Ok(Vec::new());
    }
    // Not prepared: PostgreSQL would keep the generic plan it chose while the
    // table was empty (a scan), and each lookup would read the whole site.
    let mut q = RawQuery::new(format!(
        "SELECT {EVENT_COLUMNS} FROM web_events WHERE site_id = ? AND pageview_id IN {}",
        placeholders(pageview_ids.len())
    ));
    q.text(site_id).texts(pageview_ids);
    q.load(conn)
}

/// Many events in one statement.
pub fn insert_events(conn: &mut AnyConnection, rows: &[EventRow]) -> QueryResult<usize> {
    let mut n = 0;
    // Chunks of at most 64 rows: few statement shapes to keep prepared, and
    // far under either backend's limit on binds.
    for chunk in rows.chunks(64) {
        n += insert_event_chunk(conn, chunk)?;
    }
    Ok(n)
}

fn insert_event_chunk(conn: &mut AnyConnection, rows: &[EventRow]) -> QueryResult<usize> {
    let mut q = RawQuery::prepared(format!("INSERT INTO web_events ({EVENT_COLUMNS}) VALUES "));
    q.rows(rows.len(), 17);
    for e in rows {
        bind_event(&mut q, e);
    }
    q.execute(conn)
}

fn bind_event(q: &mut RawQuery, e: &EventRow) {
    q.text(&e.id)
        .text(&e.site_id)
        .text(&e.session_id)
        .text(&e.visitor_id)
        .text(&e.kind)
        .opt_text(e.name.clone())
        .text(&e.path)
        .text(&e.route)
        .int(e.occurred_at)
        .opt_text(e.pageview_id.clone())
        .opt_text(e.properties.clone())
        .opt_int(e.engaged_ms)
        .opt_int(e.lcp)
        .opt_int(e.inp)
        .opt_int(e.cls)
        .opt_int(e.fcp)
        .opt_int(e.ttfb);
}

/// Stored pageviews' engagement and vitals after later events, a statement
/// per chunk (issue 25): an upsert on the id of rows that all exist, so each is
/// an update of the measures alone.
pub fn update_measures(conn: &mut AnyConnection, rows: &[&EventRow]) -> QueryResult<usize> {
    let mut n = 0;
    for chunk in rows.chunks(64) {
        let mut q = RawQuery::prepared(format!("INSERT INTO web_events ({EVENT_COLUMNS}) VALUES "));
        q.rows(chunk.len(), 17);
        for e in chunk {
            bind_event(&mut q, e);
        }
        q.push(
            " ON CONFLICT (id) DO UPDATE SET engaged_ms = excluded.engaged_ms, lcp = excluded.lcp, inp = excluded.inp, \
             cls = excluded.cls, fcp = excluded.fcp, ttfb = excluded.ttfb",
        );
        n += q.execute(conn)?;
    }
    Ok(n)
}
