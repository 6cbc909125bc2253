//! Session rows: read, inserted, moved by later events.

#[allow(unused_imports)]
use super::*;

crate::row! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SessionRow in web_sessions {
        pub id: String,
        pub site_id: String,
        pub visitor_id: String,
        pub started_at: i64,
        pub last_at: i64,
        pub end_at: i64,
        pub entry_path: String,
        pub entry_route: String,
        pub exit_path: String,
        pub referrer: Option<String>,
        pub source: String,
        pub medium: String,
        pub campaign: Option<String>,
        pub term: Option<String>,
        pub content: Option<String>,
        pub affiliate_id: Option<String>,
        pub country: Option<String>,
        pub region: Option<String>,
        pub device: Option<String>,
        pub browser: Option<String>,
        pub os: Option<String>,
        pub language: Option<String>,
        pub pageviews: i64,
        pub events: i64,
        pub is_returning: bool,
        pub conversions: i64,
        pub revenue_cents: i64,
    }
}

#[cfg(test)]
impl SessionRow {
    /// A direct session of `visitor_id` on `loja` with one pageview of `/`,
    /// from `start` to `last`: the unit tests' starting point.
    pub fn example(id: &str, visitor_id: &str, start: i64, last: i64) -> SessionRow {
        SessionRow {
            id: id.into(),
            site_id: "loja".into(),
            visitor_id: visitor_id.into(),
            started_at: start,
            last_at: last,
            end_at: last,
            entry_path: "/".into(),
            entry_route: "/".into(),
            exit_path: "/".into(),
            referrer: None,
            source: "(direct)".into(),
            medium: "(none)".into(),
            campaign: None,
            term: None,
            content: None,
            affiliate_id: None,
            country: None,
            region: None,
            device: None,
            browser: None,
            os: None,
            language: None,
            pageviews: 1,
            events: 0,
            is_returning: false,
            conversions: 0,
            revenue_cents: 0,
        }
    }
}

pub fn session(conn: &mut AnyConnection, id: &str) -> QueryResult<Option<SessionRow>> {
    let mut q = row::select::<SessionRow>("WHERE id = ?");
    q.text(id);
    Ok(q.load::<SessionRow>(conn)?.into_iter().next())
}

pub fn sessions(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<SessionRow>> {
    by_ids(conn, ids)
}

/// Sessions by id as `R` reads them: the list padded and prepared on
/// SQLite ([`InList`]), so a list of a new length each call (a rollup
/// batch's, up to a thousand ids) is not a new statement each time.
fn by_ids<R>(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<R>>
where
    R: Row + QueryableByName<row::Backend> + QueryableByName<diesel::sqlite::Sqlite> + 'static,
{
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list = InList::on(conn, ids.len());
    let mut q =
        list.query(format!("SELECT {} FROM web_sessions WHERE id IN {}", R::select_list(), list.placeholders()));
    list.texts(&mut q, ids);
    q.load(conn)
}

crate::row! {
    /// What the rollups read of a session: the keys of the breakdowns its
    /// start counts, its source for the visitor sets and its device for the
    /// vitals. The rest of the row (paths, counts, the visitor) is not read.
    #[derive(Debug, Clone)]
    pub struct RolledSession in web_sessions {
        pub id: String,
        pub site_id: String,
        pub started_at: i64,
        pub entry_route: String,
        pub referrer: Option<String>,
        pub source: String,
        pub medium: String,
        pub campaign: Option<String>,
        pub affiliate_id: Option<String>,
        pub country: Option<String>,
        pub device: Option<String>,
        pub browser: Option<String>,
    }
}

/// Sessions by id as the rollups read them.
pub fn rolled_sessions(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<RolledSession>> {
    by_ids(conn, ids)
}

/// A session with its version (rule STORE-12).
#[derive(Debug, Clone, QueryableByName)]
pub struct VersionedSession {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub version: i64,
    #[diesel(embed)]
    pub session: SessionRow,
}

/// Sessions by id, each with the version it was read at (rule STORE-12).
pub fn versioned_sessions(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<VersionedSession>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::prepared(format!(
        "SELECT version, {} FROM web_sessions WHERE id IN {}",
        SessionRow::select_list(),
        placeholders(ids.len())
    ));
    q.texts(ids);
    q.load(conn)
}

#[derive(Debug, Clone, QueryableByName)]
pub struct SessionVersion {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub id: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub version: i64,
}

/// The stored versions of these sessions (a deleted one has none), which
/// confirm the copies the tracker keeps without reading the rows (rule
/// STORE-12). A statement of its own, after the visitors' lock: on
/// PostgreSQL each statement sees what committed before it began, and a
/// read inside the lock's own statement could miss a session another
/// process committed while the lock waited.
pub fn session_versions(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<SessionVersion>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q =
        RawQuery::prepared(format!("SELECT id, version FROM web_sessions WHERE id IN {}", placeholders(ids.len())));
    q.texts(ids);
    q.load(conn)
}

/// New sessions and moved ones of a combined acceptance, in a statement per
/// chunk (issue 25): a new row is inserted whole; a stored one (`id`
/// conflicts) takes only what a later event moves (its end, exit and
/// counts), so the columns other
/// writes keep (conversions, revenue) are left as they are. An id appears
/// once (a statement may not change a row twice on PostgreSQL). A new row
/// starts at version 0 and a moved one goes one version up (rule STORE-12),
/// so what the tracker keeps of it names its version without reading it.
pub fn write_sessions(conn: &mut AnyConnection, rows: &[&SessionRow]) -> QueryResult<usize> {
    row::insert::<SessionRow, _>(
        conn,
        rows,
        " ON CONFLICT (id) DO UPDATE SET last_at = excluded.last_at, end_at = excluded.end_at, \
         exit_path = excluded.exit_path, pageviews = excluded.pageviews, events = excluded.events, \
         version = web_sessions.version + 1",
    )
}
