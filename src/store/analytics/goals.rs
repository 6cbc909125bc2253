//! Goal completions (ARPT-09, ARPT-10): the rows acceptance writes (one per
//! completion, one per (session, goal)) and the counters the report actors
//! keep per (site, tier, bucket, goal).

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::row;
use crate::db::sql::{RawQuery, placeholders};

crate::row! {
    /// A goal completion as [`insert_hits`] writes it.
    pub struct HitRow<'a> in web_goal_hits {
        pub site_id: &'a str,
        pub goal_id: &'a str,
        pub at: i64,
        pub event_id: &'a str,
    }
}

/// Goal completions, a statement per chunk (issue 25).
pub fn insert_hits(conn: &mut AnyConnection, rows: &[HitRow<'_>]) -> QueryResult<usize> {
    row::insert::<HitRow<'_>, _>(conn, rows, " ON CONFLICT DO NOTHING")
}

crate::row! {
    /// A session's first completion of a goal as [`insert_session_goals`] writes it.
    pub struct SessionGoalRow<'a> in web_session_goals {
        pub session_id: &'a str,
        pub goal_id: &'a str,
        pub site_id: &'a str,
        pub started_at: i64,
    }
}

/// Sessions' first completions of goals, a statement per chunk (issue 25).
pub fn insert_session_goals(conn: &mut AnyConnection, rows: &[SessionGoalRow<'_>]) -> QueryResult<usize> {
    row::insert::<SessionGoalRow<'_>, _>(conn, rows, " ON CONFLICT (session_id, goal_id) DO NOTHING")
}

/// The (session, goal) pairs these sessions have completed, in one read per chunk.
pub fn goals_of_sessions(conn: &mut AnyConnection, session_ids: &[String]) -> QueryResult<Vec<(String, String)>> {
    crate::row! {
        struct Pair in web_session_goals {
            session_id: String,
            goal_id: String,
        }
    }
    let mut out = Vec::new();
    for chunk in session_ids.chunks(64) {
        let mut q = row::select::<Pair>(&format!("WHERE session_id IN {}", placeholders(chunk.len())));
        q.texts(chunk);
        out.extend(q.load::<Pair>(conn)?.into_iter().map(|p| (p.session_id, p.goal_id)));
    }
    Ok(out)
}

crate::row! {
    /// Completions and sessions to add to one goal's (site, tier, bucket).
    pub struct CounterAdded<'a> in web_goal_counters {
        pub site_id: &'a str,
        pub tier: &'a str,
        pub bucket: i64,
        pub goal_id: &'a str,
        pub completions: i64,
        pub sessions: i64,
    }
}

/// Adds every row to its goal counter with one statement (per chunk of
/// binds on SQLite), in their order.
pub fn add_counters(conn: &mut AnyConnection, rows: &[CounterAdded<'_>]) -> QueryResult<usize> {
    row::add::<CounterAdded<'_>, _>(conn, rows, "site_id, tier, bucket, goal_id", &["completions", "sessions"])
}

crate::row! {
    /// Completions and sessions per goal, summed over buckets or counted from rows.
    #[derive(Debug, Clone)]
    pub struct GoalCount in web_goal_counters {
        pub goal_id: String,
        pub completions: i64,
        pub sessions: i64,
    }
}

/// Counters of buckets in `[from, to)` of one tier, summed per goal.
pub fn counters(
    conn: &mut AnyConnection,
    site_id: &str,
    tier: &str,
    from: i64,
    to: i64,
) -> QueryResult<Vec<GoalCount>> {
    let mut q = RawQuery::prepared(
        "SELECT goal_id, CAST(SUM(completions) AS BIGINT) AS completions, CAST(SUM(sessions) AS BIGINT) AS sessions \
         FROM web_goal_counters WHERE site_id = ? AND tier = ? AND bucket >= ? AND bucket < ? GROUP BY goal_id",
    );
    q.text(site_id).text(tier).int(from).int(to);
    q.load(conn)
}

/// Completions in `[from, to)` from the rows (a partial hour), per goal.
pub fn hits_between(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<GoalCount>> {
    let mut q = RawQuery::prepared(
        "SELECT goal_id, CAST(COUNT(*) AS BIGINT) AS completions, CAST(0 AS BIGINT) AS sessions \
         FROM web_goal_hits WHERE site_id = ? AND at >= ? AND at < ? GROUP BY goal_id",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}

/// Goal sessions started in `[from, to)` from the rows (a partial hour), per goal.
pub fn sessions_between(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<GoalCount>> {
    let mut q = RawQuery::prepared(
        "SELECT goal_id, CAST(0 AS BIGINT) AS completions, CAST(COUNT(*) AS BIGINT) AS sessions \
         FROM web_session_goals WHERE site_id = ? AND started_at >= ? AND started_at < ? GROUP BY goal_id",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct SessionGoal {
        pub session_id: String,
        pub key: String,
    }
}

/// The keys of the goals each of `session_ids` completed (removed goals left out).
pub fn keys_of_sessions(conn: &mut AnyConnection, session_ids: &[String]) -> QueryResult<Vec<SessionGoal>> {
    if session_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT sg.session_id, g.key FROM web_session_goals sg JOIN web_goals g ON g.id = sg.goal_id \
         WHERE sg.session_id IN {} AND g.removed_at IS NULL",
        placeholders(session_ids.len())
    ));
    q.texts(session_ids);
    q.load(conn)
}

/// Sessions started in `[from, to)` from the rows (a partial hour).
pub fn started_sessions(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<i64> {
    let mut q = RawQuery::prepared(
        "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_sessions WHERE site_id = ? AND started_at >= ? AND started_at < ?",
    );
    q.text(site_id).int(from).int(to);
    Ok(q.load::<crate::db::row::Count>(conn)?.into_iter().next().map_or(0, |c| c.n))
}

/// Sessions counted in one tier's buckets in `[from, to)`.
pub fn counted_sessions(conn: &mut AnyConnection, site_id: &str, tier: &str, from: i64, to: i64) -> QueryResult<i64> {
    let mut q = RawQuery::prepared(
        "SELECT CAST(COALESCE(SUM(sessions), 0) AS BIGINT) AS n FROM web_counters \
         WHERE site_id = ? AND tier = ? AND bucket >= ? AND bucket < ?",
    );
    q.text(site_id).text(tier).int(from).int(to);
    Ok(q.load::<crate::db::row::Count>(conn)?.into_iter().next().map_or(0, |c| c.n))
}
