//! The funnel step rows of complete days laid out in key order, on
//! PostgreSQL only (migration 36): see
//! `service::analytics::reports::funnel_layout` for why and when.

use std::collections::BTreeMap;

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::sql::RawQuery;

crate::row! {
    struct Through {
        laid_through: i64,
    }
}

crate::row! {
    struct Day {
        day: Option<i64>,
    }
}

crate::row! {
    struct SiteFunnel {
        site_id: String,
        id: String,
    }
}

/// Every site's funnels (a few per site), by site.
pub fn funnels_by_site(conn: &mut AnyConnection) -> QueryResult<BTreeMap<String, Vec<String>>> {
    let q = RawQuery::new("SELECT site_id, id FROM web_funnels");
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in q.load::<SiteFunnel>(conn)? {
        out.entry(f.site_id).or_default().push(f.id);
    }
    Ok(out)
}

/// The last day of the site laid out (`i64::MIN`: none yet), its row locked
/// until the transaction ends, so two processes lay out a day one after the
/// other, the second from where the first left.
pub fn lock(conn: &mut AnyConnection, site_id: &str) -> QueryResult<i64> {
    let mut q = RawQuery::new(
        "INSERT INTO web_funnel_layouts (site_id, laid_through) VALUES (?, ?) ON CONFLICT (site_id) DO NOTHING",
    );
    q.text(site_id).int(i64::MIN);
    q.execute(conn)?;
    let mut q = RawQuery::new("SELECT laid_through FROM web_funnel_layouts WHERE site_id = ? FOR UPDATE");
    q.text(site_id);
    Ok(q.load::<Through>(conn)?.first().map_or(i64::MIN, |t| t.laid_through))
}

/// The first day after `after` and not after `last` holding a row of one of
/// `funnel_ids`: one probe of the key's index per funnel.
pub fn next_day(conn: &mut AnyConnection, funnel_ids: &[String], after: i64, last: i64) -> QueryResult<Option<i64>> {
    if funnel_ids.is_empty() || after >= last {
        return Ok(None);
    }
    let mut q = RawQuery::new(format!(
        "SELECT MIN(d.day) AS day FROM (VALUES {}) AS f(id) CROSS JOIN LATERAL \
         (SELECT day FROM web_funnel_days WHERE funnel_id = f.id AND day > ? AND day <= ? ORDER BY day LIMIT 1) AS d",
        vec!["(?::text)"; funnel_ids.len()].join(", ")
    ));
    q.texts(funnel_ids).int(after).int(last);
    Ok(q.load::<Day>(conn)?.first().and_then(|d| d.day))
}

/// Rewrites the rows of `funnel_ids` on `day` in key order, with one
/// statement: each row is deleted and inserted again as it was, and the
/// inserts fill pages one after the other. A writer appending to one of
/// them meanwhile waits for the row and then appends to the moved row.
pub fn lay_out(conn: &mut AnyConnection, funnel_ids: &[String], day: i64) -> QueryResult<usize> {
    if funnel_ids.is_empty() {
        return Ok(0);
    }
    const COLUMNS: &str = "funnel_id, day, visitor_id, site_id, first_at, entries";
    let mut q = RawQuery::new(format!(
        "WITH moved AS (DELETE FROM web_funnel_days WHERE funnel_id IN ({}) AND day = ? RETURNING {COLUMNS}) \
         INSERT INTO web_funnel_days ({COLUMNS}) SELECT {COLUMNS} FROM moved ORDER BY funnel_id, visitor_id",
        vec!["?"; funnel_ids.len()].join(", ")
    ));
    q.texts(funnel_ids).int(day);
    q.execute(conn)
}

/// Records that the site's days through `day` are laid out.
pub fn set(conn: &mut AnyConnection, site_id: &str, day: i64) -> QueryResult<usize> {
    let mut q = RawQuery::new("UPDATE web_funnel_layouts SET laid_through = ? WHERE site_id = ?");
    q.int(day).text(site_id);
    q.execute(conn)
}

/// The site's days from `from_day` on are to be laid out again (rows were
/// added to them): the mark moves back to the day before, never forward.
pub fn reopen(conn: &mut AnyConnection, site_id: &str, from_day: i64) -> QueryResult<usize> {
    let mut q = RawQuery::new("UPDATE web_funnel_layouts SET laid_through = ? WHERE site_id = ? AND laid_through >= ?");
    q.int(from_day.saturating_sub(crate::clock::DAY_MS)).text(site_id).int(from_day);
    q.execute(conn)
}

/// The site is to be laid out from its first day again.
pub fn forget(conn: &mut AnyConnection, site_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_funnel_layouts WHERE site_id = ?");
    q.text(site_id);
    q.execute(conn)
}
