//! `web_click_ids`: the fbclid a session landed with, sealed (rule WA-33).
//! Acceptance writes a row only for a session that landed with one; the
//! pixel's sender reads it to send the session's ledger purchases with
//! `fbc`; the sessions' retention class (`landed_at` is the session's start)
//! and forgetting a person delete it.

use crate::db::AnyConnection;
use crate::db::row;
use crate::db::sql::{RawQuery, placeholders};

crate::row! {
    #[derive(Clone)]
    pub struct ClickIdRow in web_click_ids {
        pub site_id: String,
        pub session_id: String,
        /// `crypto::SecretsKey::seal` of the fbclid, bound to (site, session).
        pub sealed_fbclid: String,
        /// The session's start: when it landed.
        pub landed_at: i64,
        /// The same seal of the landing's raw user agent (Meta's
        /// `client_user_agent`); None for rows kept before it was.
        pub sealed_user_agent: Option<String>,
    }
}

/// Never prints the sealed value.
impl std::fmt::Debug for ClickIdRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickIdRow")
            .field("site_id", &self.site_id)
            .field("session_id", &self.session_id)
            .field("landed_at", &self.landed_at)
            .finish_non_exhaustive()
    }
}

/// Inserts `rows`, several to a statement (as the events); a session that
/// has its row already keeps it.
pub fn insert_many(conn: &mut AnyConnection, rows: &[ClickIdRow]) -> diesel::QueryResult<usize> {
    row::insert::<ClickIdRow, _>(conn, rows, " ON CONFLICT (site_id, session_id) DO NOTHING")
}

/// The session's row, if it landed with an fbclid still kept.
pub fn find(conn: &mut AnyConnection, site_id: &str, session_id: &str) -> diesel::QueryResult<Option<ClickIdRow>> {
    use crate::db::schema::web_click_ids as c;
    use diesel::prelude::*;
    c::table.find((site_id, session_id)).select(ClickIdRow::as_select()).first(conn).optional()
}

/// Deletes the rows of the site's `session_ids` (a person forgotten).
pub fn delete_of_sessions(
    conn: &mut AnyConnection,
    site_id: &str,
    session_ids: &[String],
) -> diesel::QueryResult<usize> {
    let mut n = 0;
    for chunk in session_ids.chunks(400) {
        let mut q = RawQuery::new(format!(
            "DELETE FROM web_click_ids WHERE site_id = ? AND session_id IN {}",
            placeholders(chunk.len())
        ));
        q.text(site_id).texts(chunk);
        n += q.execute(conn)?;
    }
    Ok(n)
}
