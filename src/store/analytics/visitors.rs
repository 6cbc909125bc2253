//! The (site, visitor) state rows.

#[allow(unused_imports)]
use super::*;

crate::row! {
    /// What acceptance reads of a visitor's state.
    #[derive(Debug, Clone, Default)]
    pub struct VisitorRow in web_visitors {
        pub session_id: String,
        pub session_started_at: i64,
        pub last_at: i64,
        pub sessions: i64,
    }
}

/// Whether a visitor has a state row (the cookieless midnight rule looks).
pub fn visitor(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<Option<VisitorRow>> {
    let mut q = row::select::<VisitorRow>("WHERE site_id = ? AND visitor_id = ?");
    q.text(site_id).text(visitor_id);
    Ok(q.load::<VisitorRow>(conn)?.into_iter().next())
}

crate::row! {
    /// A visitor's state after a write, as [`update_visitors`] writes it.
    pub struct VisitorUpdate<'a> in web_visitors {
        pub site_id: &'a str,
        pub visitor_id: &'a str,
        pub session_id: &'a str,
        pub session_started_at: i64,
        pub last_at: i64,
        pub current_path: &'a str,
        pub current_route: &'a str,
        pub sessions: i64,
        pub handed_over: bool,
    }
}

/// A placeholder left by a batch that stored nothing goes again. Only
/// PostgreSQL makes placeholders ([`lock_visitors`]); on SQLite there is
/// nothing to delete.
pub fn drop_empty_visitor(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<usize> {
    if conn.is_sqlite() {
        return Ok(0);
    }
    let mut q = RawQuery::prepared("DELETE FROM web_visitors WHERE site_id = ? AND visitor_id = ? AND session_id = ''");
    q.text(site_id).text(visitor_id);
    q.execute(conn)
}

/// A visitor's state with its id, as [`lock_visitors`] answers it.
#[derive(Debug, Clone, QueryableByName)]
#[diesel(table_name = crate::db::schema::web_visitors)]
pub struct KeyedVisitor {
    pub visitor_id: String,
    /// SQLite only: the stored version of the visitor's current session
    /// (None: it has none, or it is gone), read in the lock's own statement
    /// (rule STORE-12); one writer runs at a time there, so it is current.
    /// Always None on PostgreSQL, where that statement's snapshot can be
    /// older than the row it locked (a session another process committed
    /// while the lock waited would look gone): there
    /// [`super::session_versions`] reads them after the lock.
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
    pub session_version: Option<i64>,
    // Last: the derive binds each field to a local of its name, and a field
    // named `row` before another would hide the row it reads that one from.
    #[diesel(embed)]
    pub row: VisitorRow,
}

/// SQLite: each locked visitor's current session's version, in the lock's
/// read (see [`KeyedVisitor::session_version`]).
const SESSION_VERSION: &str = ", CASE WHEN session_id = '' THEN NULL ELSE \
    (SELECT s.version FROM web_sessions s WHERE s.id = web_visitors.session_id) END AS session_version";

/// At most this many rows per multi-row statement of the acceptance's
/// per-visitor tables: few statement shapes to keep prepared, far under
/// either backend's limit on binds.
const CHUNK: usize = 64;

/// The (site, visitor) state of many visitors of one site, each made as a
/// placeholder row when new and locked for this transaction on PostgreSQL,
/// so two processes accepting one visitor's batches take turns instead of
/// both opening a session (rule STORE-07). SQLite has one writer, whose
/// transaction already excludes every other, so there the rows are only
/// read and a new visitor answers the placeholder's values without it being
/// written: [`update_visitors`] inserts the row with its first state, so a
/// new visitor's row and its two indexes are written once, not twice. One
/// combined write reads every visitor's state at once (issue 25), on SQLite
/// each with its current session's version (rule STORE-12). The ids are
/// taken in order, so two processes locking overlapping sets take the rows
/// in the same order and never deadlock.
pub fn lock_visitors(
    conn: &mut AnyConnection,
    site_id: &str,
    visitor_ids: &[String],
) -> QueryResult<Vec<KeyedVisitor>> {
    let mut ids: Vec<&String> = visitor_ids.iter().collect();
    ids.sort();
    ids.dedup();
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(CHUNK) {
        out.extend(if conn.is_sqlite() {
            read_chunk(conn, site_id, chunk)?
        } else {
            lock_chunk(conn, site_id, chunk)?
        });
    }
    Ok(out)
}

/// PostgreSQL: one multi-row `INSERT … ON CONFLICT DO UPDATE … RETURNING`
/// (the update takes the rows' locks, the insert makes the placeholders).
fn lock_chunk(conn: &mut AnyConnection, site_id: &str, chunk: &[&String]) -> QueryResult<Vec<KeyedVisitor>> {
    let mut q = RawQuery::prepared(format!("INSERT INTO web_visitors ({}) VALUES ", VisitorUpdate::columns()));
    for (i, id) in chunk.iter().enumerate() {
        q.push(if i == 0 { "(?, ?, '', 0, 0, '', '', 0, FALSE)" } else { ", (?, ?, '', 0, 0, '', '', 0, FALSE)" });
        q.text(site_id).text(id.as_str());
    }
    q.push(" ON CONFLICT (site_id, visitor_id) DO UPDATE SET sessions = web_visitors.sessions RETURNING visitor_id, ");
    q.push(VisitorRow::select_list());
    q.push(", CAST(NULL AS BIGINT) AS session_version");
    q.load::<KeyedVisitor>(conn)
}

/// SQLite: the stored rows with their current sessions' versions, one read;
/// a visitor without a row answers the placeholder's values.
fn read_chunk(conn: &mut AnyConnection, site_id: &str, chunk: &[&String]) -> QueryResult<Vec<KeyedVisitor>> {
    let list = InList::on(conn, chunk.len());
    let mut read = list.query(format!(
        "SELECT visitor_id, {}{SESSION_VERSION} FROM web_visitors WHERE site_id = ? AND visitor_id IN {}",
        VisitorRow::select_list(),
        list.placeholders()
    ));
    read.text(site_id);
    list.texts(&mut read, chunk);
    let mut rows = read.load::<KeyedVisitor>(conn)?;
    let known: std::collections::HashSet<String> = rows.iter().map(|k| k.visitor_id.clone()).collect();
    rows.extend(chunk.iter().filter(|id| !known.contains(id.as_str())).map(|id| KeyedVisitor {
        visitor_id: id.to_string(),
        session_version: None,
        row: VisitorRow::default(),
    }));
    Ok(rows)
}

/// The visitors' state after their batches, in a statement per chunk: an
/// upsert, each an update of a row [`lock_visitors`] locked, except a new
/// visitor's on SQLite, which it inserts.
pub fn update_visitors(conn: &mut AnyConnection, rows: &[VisitorUpdate<'_>]) -> QueryResult<usize> {
    row::insert::<VisitorUpdate<'_>, _>(
        conn,
        rows,
        " ON CONFLICT (site_id, visitor_id) DO UPDATE SET session_id = excluded.session_id, \
         session_started_at = excluded.session_started_at, last_at = excluded.last_at, \
         current_path = excluded.current_path, current_route = excluded.current_route, \
         sessions = excluded.sessions, handed_over = excluded.handed_over",
    )
}
