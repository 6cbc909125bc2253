//! `web_click_ids`: the fbclid a session landed with, sealed (rule WA-33).
//! Acceptance writes a row only for a session that landed with one; the
//! pixel's sender reads it to send the session's ledger purchases with
//! `fbc`; the sessions' retention class (`landed_at` is the session's start)
//! and forgetting a person delete it.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};

use crate::db::AnyConnection;
use crate::db::sql::{RawQuery, placeholders};

#[derive(Clone, QueryableByName)]
pub struct ClickIdRow {
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub session_id: String,
    /// `crypto::SecretsKey::seal` of the fbclid, bound to (site, session).
    #[diesel(sql_type = Text)]
    pub sealed_fbclid: String,
    /// The session's start: when it landed.
    #[diesel(sql_type = BigInt)]
    pub landed_at: i64,
    /// The same seal of the landing's raw user agent (Meta's
    /// `client_user_agent`); None for rows kept before it was.
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    pub sealed_user_agent: Option<String>,
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
    let mut n = 0;
    for chunk in rows.chunks(64) {
        let mut q = RawQuery::prepared(
            "INSERT INTO web_click_ids (site_id, session_id, sealed_fbclid, landed_at, sealed_user_agent) VALUES ",
        );
        for (i, r) in chunk.iter().enumerate() {
            q.push(if i == 0 { "(?, ?, ?, ?, ?)" } else { ", (?, ?, ?, ?, ?)" });
            q.text(&r.site_id).text(&r.session_id).text(&r.sealed_fbclid).int(r.landed_at);
            q.opt_text(r.sealed_user_agent.clone());
        }
        q.push(" ON CONFLICT (site_id, session_id) DO NOTHING");
        n += q.execute(conn)?;
    }
    Ok(n)
}

/// The session's row, if it landed with an fbclid still kept.
pub fn find(conn: &mut AnyConnection, site_id: &str, session_id: &str) -> diesel::QueryResult<Option<ClickIdRow>> {
    let mut q = RawQuery::new(
        "SELECT site_id, session_id, sealed_fbclid, landed_at, sealed_user_agent FROM web_click_ids \
         WHERE site_id = ? AND session_id = ?",
    );
    q.text(site_id).text(session_id);
    Ok(q.load::<ClickIdRow>(conn)?.into_iter().next())
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
