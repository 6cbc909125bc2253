//! The raw rows a filtered report reads (REPORTING §3): the rollups count
//! every session, so a report that keeps only some reads the range's events,
//! their sessions and the ledger's rows itself.

use diesel::QueryResult;

use super::{EventRow, SessionRow};
use crate::db::AnyConnection;
use crate::db::row::Row;
use crate::db::sql::{RawQuery, placeholders};

/// The retained pageviews and custom events of the sites in `[from, to]`.
pub fn events_between(conn: &mut AnyConnection, site_ids: &[String], from: i64, to: i64) -> QueryResult<Vec<EventRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE site_id IN {} AND occurred_at >= ? AND occurred_at <= ?",
        placeholders(site_ids.len()),
        cols = EventRow::select_list()
    ));
    q.texts(site_ids).int(from).int(to);
    q.load(conn)
}

/// The sessions of the sites started in `[from, to]`.
pub fn sessions_started_between(
    conn: &mut AnyConnection,
    site_ids: &[String],
    from: i64,
    to: i64,
) -> QueryResult<Vec<SessionRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {} FROM web_sessions WHERE site_id IN {} AND started_at >= ? AND started_at <= ?",
        SessionRow::select_list(),
        placeholders(site_ids.len())
    ));
    q.texts(site_ids).int(from).int(to);
    q.load(conn)
}

crate::row! {
    /// A ledger row: when, how much, in which session.
    #[derive(Debug, Clone)]
    pub struct Sale in web_conversions {
        pub site_id: String,
        pub session_id: Option<String>,
        pub occurred_at: i64,
        pub value_cents: i64,
    }
}

/// The ledger's rows of the sites in `[from, to]`.
pub fn sales_between(conn: &mut AnyConnection, site_ids: &[String], from: i64, to: i64) -> QueryResult<Vec<Sale>> {
    let mut q = RawQuery::new(format!(
        "SELECT site_id, session_id, occurred_at, value_cents FROM web_conversions WHERE site_id IN {} \
         AND occurred_at >= ? AND occurred_at <= ?",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids).int(from).int(to);
    q.load(conn)
}

/// Every retained pageview and custom event of these sessions.
pub fn events_of_sessions(conn: &mut AnyConnection, session_ids: &[String]) -> QueryResult<Vec<EventRow>> {
    if session_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE session_id IN {}",
        placeholders(session_ids.len()),
        cols = EventRow::select_list()
    ));
    q.texts(session_ids);
    q.load(conn)
}
