//! Imports: their ids and first answers.

#[allow(unused_imports)]
use super::*;

crate::row! {
    #[derive(Debug)]
    pub struct ImportRow in web_imports {
        pub body_sha256: String,
        pub answer: String,
    }
}

pub fn import(conn: &mut AnyConnection, site_id: &str, import_id: &str) -> QueryResult<Option<ImportRow>> {
    let mut q = RawQuery::new("SELECT body_sha256, answer FROM web_imports WHERE site_id = ? AND import_id = ?");
    q.text(site_id).text(import_id);
    Ok(q.load::<ImportRow>(conn)?.into_iter().next())
}

pub fn insert_import(
    conn: &mut AnyConnection,
    site_id: &str,
    import_id: &str,
    sha: &str,
    answer: &str,
    now: i64,
) -> QueryResult<usize> {
    crate::row! {
        struct Import<'a> in web_imports {
            site_id: &'a str,
            import_id: &'a str,
            body_sha256: &'a str,
            answer: &'a str,
            created_at: i64,
        }
    }
    let row = Import { site_id, import_id, body_sha256: sha, answer, created_at: now };
    crate::db::row::insert::<Import<'_>, _>(conn, &[row], "")
}

/// A site's events in `[from, to]` after a position, `(occurredAt, id)` asc (the export).
pub fn events_page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let select = format!("SELECT {cols} FROM web_events", cols = EventRow::select_list());
    let page = Keyset { select, scope: ("site_id", site_id), time: "occurred_at", from, to, after, limit, desc: false };
    page.query(conn).load(conn)
}

/// The time of a site's earliest stored pageview or custom event (its
/// earliest session's start): `dataCoverage`'s `trackingSince`.
pub fn tracking_since(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<i64>> {
    crate::row! {
        struct Since {
            t: Option<i64>,
        }
    }
    // Sessions and conversions, and what retention noted before deleting the oldest.
    let mut q = RawQuery::new(
        "SELECT MIN(t) AS t FROM (SELECT MIN(started_at) AS t FROM web_sessions WHERE site_id = ? \
         UNION ALL SELECT MIN(occurred_at) AS t FROM web_conversions WHERE site_id = ? \
         UNION ALL SELECT MIN(tracked_since) AS t FROM web_retention_jobs WHERE site_id = ?) AS x",
    );
    q.text(site_id).text(site_id).text(site_id);
    Ok(q.load::<Since>(conn)?.into_iter().next().and_then(|r| r.t))
}

/// A site's live state: its visitor rows whose last pageview or custom event
/// is at or after `since`, with their sessions (the live read cache's fill).
/// An alias's row whose session identify handed to the person is not one
/// (rule SES-19): the person's row is.
pub fn live_since(conn: &mut AnyConnection, site_id: &str, since: i64) -> QueryResult<Vec<(LiveRow, SessionRow)>> {
    let mut q = RawQuery::prepared(
        "SELECT site_id, visitor_id, last_at, current_path, current_route, sessions, session_id FROM web_visitors \
         WHERE site_id = ? AND last_at >= ? AND session_id <> '' AND NOT handed_over",
    );
    q.text(site_id).int(since);
    let rows: Vec<LiveRow> = q.load(conn)?;
    let mut out = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(500) {
        let ids: Vec<String> = chunk.iter().map(|r| r.session_id.clone()).collect();
        let found: std::collections::HashMap<String, SessionRow> =
            sessions(conn, &ids)?.into_iter().map(|s| (s.id.clone(), s)).collect();
        out.extend(chunk.iter().filter_map(|r| found.get(&r.session_id).cloned().map(|s| (r.clone(), s))));
    }
    Ok(out)
}
