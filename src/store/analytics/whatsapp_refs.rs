//! `web_whatsapp_refs`: the WhatsApp references taps minted (docs/whatsapp.md,
//! WA-02), (site, reference) → the click that minted it. Acceptance writes
//! them from the tracker's `whatsapp_click` events; a lead that hands its
//! reference back looks its click up ([`lookup`]). A reference binds for 7
//! days after its click: the retention actor deletes older ones
//! ([`delete_expired`]), and forgetting a person deletes theirs.

use std::collections::HashMap;

use diesel::QueryResult;
use diesel::prelude::*;

use crate::db::sql::RawQuery;
use crate::db::{AnyConnection, row};

/// A reference binds for 7 days after its click.
pub const REF_VALID_MS: i64 = 7 * 86_400_000;

crate::row! {
    /// A tap's reference as acceptance writes it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct NewRef in web_whatsapp_refs {
        pub site_id: String,
        /// Upper case, 6 characters of the reference alphabet (the column
        /// `ref`).
        pub reference: String,
        pub visitor_id: String,
        pub session_id: String,
        /// The business number tapped, digits only ("" when the event named none).
        pub number: String,
        /// The stored path of the page tapped on.
        pub path: String,
        pub clicked_at: i64,
    }
}

crate::row! {
    /// The click behind a reference.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RefRow in web_whatsapp_refs {
        pub visitor_id: String,
        pub session_id: String,
        pub number: String,
        pub path: String,
        pub clicked_at: i64,
    }
}

/// The tail that binds a held reference to a newer click once its own is
/// more than 7 days old.
fn rebind() -> String {
    format!(
        " ON CONFLICT (site_id, ref) DO UPDATE SET visitor_id = excluded.visitor_id, \
         session_id = excluded.session_id, number = excluded.number, path = excluded.path, \
         clicked_at = excluded.clicked_at WHERE web_whatsapp_refs.clicked_at < excluded.clicked_at - {REF_VALID_MS}"
    )
}

/// Writes `rows`, several to a statement (as the events). A reference the
/// site holds keeps its click while that click is 7 days old or less (rule
/// WA-02); an older one is bound to the new click. Among `rows`, the first
/// of a reference goes first, so it wins the same way.
pub fn insert_refs(conn: &mut AnyConnection, rows: &[NewRef]) -> QueryResult<usize> {
    // One statement may not meet its own row again on PostgreSQL ("ON
    // CONFLICT DO UPDATE command cannot affect row a second time"): the
    // n-th row of a (site, reference) goes in the n-th round.
    let mut rounds: Vec<Vec<&NewRef>> = Vec::new();
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    for r in rows {
        let n = seen.entry((r.site_id.as_str(), r.reference.as_str())).or_insert(0);
        if rounds.len() == *n {
            rounds.push(Vec::new());
        }
        rounds[*n].push(r);
        *n += 1;
    }
    let tail = rebind();
    let mut written = 0;
    for round in rounds {
        written += row::insert::<NewRef, _>(conn, &round, &tail)?;
    }
    Ok(written)
}

/// The click behind `reference` on the site when `at` is within the 7 days
/// after it (`clicked_at <= at <= clicked_at + 7 days`).
pub fn lookup(conn: &mut AnyConnection, site_id: &str, reference: &str, at: i64) -> QueryResult<Option<RefRow>> {
    use crate::db::schema::web_whatsapp_refs as w;
    w::table
        .filter(w::site_id.eq(site_id))
        .filter(w::reference.eq(reference))
        .filter(w::clicked_at.le(at))
        .filter(w::clicked_at.ge(at.saturating_sub(REF_VALID_MS)))
        .select(RefRow::as_select())
        .first(conn)
        .optional()
}

/// Deletes at most `limit` references of any site clicked before `cutoff`;
/// answers how many.
pub fn delete_expired(conn: &mut AnyConnection, cutoff: i64, limit: usize) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "DELETE FROM web_whatsapp_refs WHERE (site_id, ref) IN \
         (SELECT site_id, ref FROM web_whatsapp_refs WHERE clicked_at < ? LIMIT ?)",
    );
    q.int(cutoff).int(limit as i64);
    q.execute(conn)
}

/// Deletes the site's references of `visitor_ids` (a person forgotten).
pub fn delete_of_visitors(conn: &mut AnyConnection, site_id: &str, visitor_ids: &[String]) -> QueryResult<usize> {
    use crate::db::schema::web_whatsapp_refs as w;
    let mut n = 0;
    for chunk in visitor_ids.chunks(400) {
        n += diesel::delete(w::table.filter(w::site_id.eq(site_id)).filter(w::visitor_id.eq_any(chunk)))
            .execute(conn)?;
    }
    Ok(n)
}
