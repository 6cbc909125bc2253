//! The funnel step index and its rebuilds (ARPT-11,
//! ARPT-13): one row per (funnel, event) matching any step, the matched steps
//! as bits.

use diesel::QueryResult;

use super::EventRow;
use crate::db::AnyConnection;
use crate::db::row::Row;
use crate::db::sql::{RawQuery, placeholders};

crate::row! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct StepRow in web_funnel_steps {
        pub funnel_id: String,
        pub visitor_id: String,
        pub at: i64,
        pub event_id: String,
        /// Bit i: the event matches step i + 1.
        pub steps: i64,
    }
}

crate::row! {
    /// A step row as [`insert_steps`] writes it: a [`StepRow`] of one site.
    struct StepWrite<'a> in web_funnel_steps {
        funnel_id: &'a str,
        site_id: &'a str,
        visitor_id: &'a str,
        at: i64,
        event_id: &'a str,
        steps: i64,
    }
}

pub fn insert_steps(conn: &mut AnyConnection, site_id: &str, rows: &[StepRow]) -> QueryResult<usize> {
    let rows: Vec<StepWrite<'_>> = rows
        .iter()
        .map(|r| StepWrite {
            funnel_id: &r.funnel_id,
            site_id,
            visitor_id: &r.visitor_id,
            at: r.at,
            event_id: &r.event_id,
            steps: r.steps,
        })
        .collect();
    crate::db::row::insert::<StepWrite<'_>, _>(conn, &rows, " ON CONFLICT (funnel_id, at, event_id) DO NOTHING")
}

crate::row! {
    /// What a report needs of a step row: whose, when, which steps.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct StepHit in web_funnel_steps {
        pub visitor_id: String,
        pub at: i64,
        pub steps: i64,
    }
}

/// A funnel's rows with `at` in `[from, to]`, by `(at, event_id)`, `limit` at
/// most (only the columns a report reads: a 90-day range is many rows).
pub fn steps_between(
    conn: &mut AnyConnection,
    funnel_id: &str,
    from: i64,
    to: i64,
    limit: usize,
) -> QueryResult<Vec<StepHit>> {
    let mut q = RawQuery::prepared(
        "SELECT visitor_id, at, steps FROM web_funnel_steps \
         WHERE funnel_id = ? AND at >= ? AND at <= ? ORDER BY at, event_id LIMIT ?",
    );
    q.text(funnel_id).int(from).int(to).int(limit as i64);
    q.load(conn)
}

/// The rows of some visitors of some sites, every funnel, by `(at, event_id)`:
/// one read for every site of a live answer. A visitor id asked for one site
/// may bring another site's rows too; each row's funnel names its site.
pub fn steps_of_visitors(
    conn: &mut AnyConnection,
    site_ids: &[String],
    visitor_ids: &[String],
) -> QueryResult<Vec<StepRow>> {
    if site_ids.is_empty() || visitor_ids.is_empty() {
        return Ok(Vec::new());
    }
    // Sorted here: an ORDER BY at would tempt the planner into the (site, at)
    // index and a walk over every step row of the site.
    let mut q = RawQuery::new(format!(
        "SELECT funnel_id, visitor_id, at, event_id, steps FROM web_funnel_steps \
         WHERE site_id IN {} AND visitor_id IN {}",
        placeholders(site_ids.len()),
        placeholders(visitor_ids.len())
    ));
    q.texts(site_ids).texts(visitor_ids);
    let mut rows: Vec<StepRow> = q.load(conn)?;
    rows.sort_by(|a, b| (a.at, &a.event_id).cmp(&(b.at, &b.event_id)));
    Ok(rows)
}

/// A funnel's rows go (its definition changed, or it was removed).
pub fn delete_steps(conn: &mut AnyConnection, funnel_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_funnel_steps WHERE funnel_id = ?");
    q.text(funnel_id);
    q.execute(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct Rebuild in web_funnel_rebuilds {
        pub funnel_id: String,
        pub site_id: String,
        pub after_at: i64,
        pub after_id: String,
    }
}

/// Starts (or restarts from the beginning) a funnel's rebuild.
pub fn start_rebuild(conn: &mut AnyConnection, funnel_id: &str, site_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "INSERT INTO web_funnel_rebuilds (funnel_id, site_id, after_at, after_id) VALUES (?, ?, ?, '') \
         ON CONFLICT (funnel_id) DO UPDATE SET after_at = excluded.after_at, after_id = excluded.after_id",
    );
    q.text(funnel_id).text(site_id).int(i64::MIN);
    q.execute(conn)
}

/// One pending rebuild, locked and skipped by other processes on PostgreSQL.
pub fn next_rebuild(conn: &mut AnyConnection) -> QueryResult<Option<Rebuild>> {
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE SKIP LOCKED" };
    let q = RawQuery::new(format!(
        "SELECT funnel_id, site_id, after_at, after_id FROM web_funnel_rebuilds ORDER BY funnel_id LIMIT 1{lock}"
    ));
    Ok(q.load(conn)?.into_iter().next())
}

pub fn rebuilding(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<String>> {
    crate::row! {
        struct Id {
            funnel_id: String,
        }
    }
    let mut q = RawQuery::new("SELECT funnel_id FROM web_funnel_rebuilds WHERE site_id = ?");
    q.text(site_id);
    Ok(q.load::<Id>(conn)?.into_iter().map(|r| r.funnel_id).collect())
}

pub fn move_rebuild(conn: &mut AnyConnection, funnel_id: &str, after_at: i64, after_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("UPDATE web_funnel_rebuilds SET after_at = ?, after_id = ? WHERE funnel_id = ?");
    q.int(after_at).text(after_id).text(funnel_id);
    q.execute(conn)
}

pub fn end_rebuild(conn: &mut AnyConnection, funnel_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_funnel_rebuilds WHERE funnel_id = ?");
    q.text(funnel_id);
    q.execute(conn)
}

/// A site's pageviews and custom events after `(after_at, after_id)`, by `(occurred_at, id)`.
pub fn events_after(
    conn: &mut AnyConnection,
    site_id: &str,
    after_at: i64,
    after_id: &str,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE site_id = ? AND (occurred_at > ? OR (occurred_at = ? AND id > ?)) \
         ORDER BY occurred_at, id LIMIT ?",
        cols = EventRow::select_list()
    ));
    q.text(site_id).int(after_at).int(after_at).text(after_id).int(limit as i64);
    q.load(conn)
}

/// A site's pageviews and custom events with a time in `[from, to]` (a funnel
/// being rebuilt is read from them), `limit` at most.
pub fn events_between(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE site_id = ? AND occurred_at >= ? AND occurred_at <= ? \
         ORDER BY occurred_at, id LIMIT ?",
        cols = EventRow::select_list()
    ));
    q.text(site_id).int(from).int(to).int(limit as i64);
    q.load(conn)
}
