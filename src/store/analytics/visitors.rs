//! The (site, visitor) state rows.

#[allow(unused_imports)]
use super::*;

#[derive(Debug, Clone, Default, QueryableByName)]
pub struct VisitorRow {
    #[diesel(sql_type = Text)]
    pub session_id: String,
    #[diesel(sql_type = BigInt)]
    pub session_started_at: i64,
    #[diesel(sql_type = BigInt)]
    pub last_at: i64,
    #[diesel(sql_type = BigInt)]
    pub sessions: i64,
}

/// The (site, visitor) state, made as a placeholder row when new and locked
/// for this transaction on PostgreSQL, so two processes accepting one
/// visitor's batches take turns instead of both opening a session (rule
/// STORE-07). PostgreSQL does it in one `INSERT … ON CONFLICT DO UPDATE …
/// RETURNING` (the update takes the row's lock); SQLite has one writer, and
/// there a no-op insert and a read cost less than rewriting the row.
pub fn lock_visitor(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<VisitorRow> {
    let insert = "INSERT INTO web_visitors (site_id, visitor_id, session_id, session_started_at, last_at, current_path, \
         current_route, sessions) VALUES (?, ?, '', 0, 0, '', '', 0) ON CONFLICT (site_id, visitor_id)";
    if !conn.is_sqlite() {
        let mut q = RawQuery::prepared(format!(
            "{insert} DO UPDATE SET sessions = web_visitors.sessions \
             RETURNING session_id, session_started_at, last_at, sessions"
        ));
        q.text(site_id).text(visitor_id);
        return q.load::<VisitorRow>(conn)?.into_iter().next().ok_or(diesel::result::Error::NotFound);
    }
    let mut q = RawQuery::prepared(format!("{insert} DO NOTHING"));
    q.text(site_id).text(visitor_id);
    q.execute(conn)?;
    visitor(conn, site_id, visitor_id)?.ok_or(diesel::result::Error::NotFound)
}

/// Whether a visitor has a state row (the cookieless midnight rule looks).
pub fn visitor(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<Option<VisitorRow>> {
    let mut q = RawQuery::prepared(
        "SELECT session_id, session_started_at, last_at, sessions FROM web_visitors WHERE site_id = ? AND visitor_id = ?",
    );
    q.text(site_id).text(visitor_id);
    Ok(q.load::<VisitorRow>(conn)?.into_iter().next())
}

pub struct VisitorUpdate<'a> {
    pub site_id: &'a str,
    pub visitor_id: &'a str,
    pub session_id: &'a str,
    pub session_started_at: i64,
    pub last_at: i64,
    pub current_path: &'a str,
    pub current_route: &'a str,
    pub sessions: i64,
}

pub fn update_visitor(conn: &mut AnyConnection, v: &VisitorUpdate<'_>) -> QueryResult<usize> {
    let mut q = RawQuery::prepared(
        "UPDATE web_visitors SET session_id = ?, session_started_at = ?, last_at = ?, current_path = ?, \
         current_route = ?, sessions = ? WHERE site_id = ? AND visitor_id = ?",
    );
    q.text(v.session_id)
        .int(v.session_started_at)
        .int(v.last_at)
        .text(v.current_path)
        .text(v.current_route)
        .int(v.sessions)
        .text(v.site_id)
        .text(v.visitor_id);
    q.execute(conn)
}

/// A placeholder left by a batch that stored nothing goes again.
pub fn drop_empty_visitor(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::prepared("DELETE FROM web_visitors WHERE site_id = ? AND visitor_id = ? AND session_id = ''");
    q.text(site_id).text(visitor_id);
    q.execute(conn)
}
