//! The rollup outbox: one row per accepted event, applied once.

#[allow(unused_imports)]
use super::*;

crate::row! {
    /// One accepted event's effect on the rollups, applied once by a report actor.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct OutboxRow in web_outbox, generated id, written by copy {
        pub site_id: String,
        pub visitor_id: String,
        pub session_id: String,
        pub kind: String,
        pub at: i64,
        pub session_start: i64,
        pub route: String,
        pub name: Option<String>,
        pub new_session: i64,
        pub d_bounces: i64,
        pub d_duration: i64,
        pub d_engaged_sum: i64,
        pub d_engaged_count: i64,
        /// The goals the event completed, space-separated ids (rule ARPT-10).
        pub goals: Option<String>,
        /// Those of `goals` its session completed for the first time.
        pub new_goals: Option<String>,
        /// Site map (a pageview): the route of the session's previous pageview, and
        /// this pageview's number in its session (0 on rows from before the map).
        pub prev_route: Option<String>,
        pub pageview_no: i64,
        /// Vitals (kind `vital`, the metric in `name`): the pageview's value before and after.
        pub vital_old: Option<i64>,
        pub vital_new: Option<i64>,
    }
}

/// Many outbox rows, written as [`insert_events`] writes events.
pub fn insert_outbox<B: std::borrow::Borrow<OutboxRow>>(conn: &mut AnyConnection, rows: &[B]) -> QueryResult<usize> {
    row::insert_copied::<OutboxRow, B>(conn, rows)
}

/// The oldest `limit` outbox rows, locked and skipped by other processes on
/// PostgreSQL so each row is applied once (rule STORE-04).
pub fn take_outbox(conn: &mut AnyConnection, limit: usize) -> QueryResult<Vec<OutboxRow>> {
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE SKIP LOCKED" };
    let mut q = row::select::<OutboxRow>(&format!("ORDER BY id LIMIT ?{lock}"));
    q.int(limit as i64);
    q.load(conn)
}

pub fn delete_outbox(conn: &mut AnyConnection, ids: &[i64]) -> QueryResult<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let list = InList::on(conn, ids.len());
    let mut q = list.query(format!("DELETE FROM web_outbox WHERE id IN {}", list.placeholders()));
    list.ints(&mut q, ids);
    q.execute(conn)
}

pub fn outbox_len(conn: &mut AnyConnection) -> QueryResult<i64> {
    Ok(RawQuery::new("SELECT COUNT(*) AS n FROM web_outbox")
        .load::<crate::db::row::Count>(conn)?
        .first()
        .map_or(0, |r| r.n))
}
