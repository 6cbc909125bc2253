//! `web_whatsapp_refs`: the WhatsApp references taps minted (docs/whatsapp.md,
//! WA-02), (site, reference) → the click that minted it. Acceptance writes
//! them from the tracker's `whatsapp_click` events; a lead that hands its
//! reference back looks its click up ([`lookup`]). A reference binds for 7
//! days after its click: the retention actor deletes older ones
//! ([`delete_expired`]), and forgetting a person deletes theirs.

use std::collections::HashMap;

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::sql::{RawQuery, placeholders};

/// A reference binds for 7 days after its click.
pub const REF_VALID_MS: i64 = 7 * 86_400_000;

/// A tap's reference as acceptance writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRef {
    pub site_id: String,
    /// Upper case, 6 characters of the reference alphabet.
    pub reference: String,
    pub visitor_id: String,
    pub session_id: String,
    /// The business number tapped, digits only ("" when the event named none).
    pub number: String,
    /// The stored path of the page tapped on.
    pub path: String,
    pub clicked_at: i64,
}

crate::row! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RefRow in web_whatsapp_refs {
        pub visitor_id: String,
        pub session_id: String,
        pub number: String,
        pub path: String,
        pub clicked_at: i64,
    }
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
    let mut written = 0;
    for round in rounds {
        // Chunks of at most 64 rows: few statement shapes to keep prepared.
        for chunk in round.chunks(64) {
            let mut q = RawQuery::prepared(
                "INSERT INTO web_whatsapp_refs (site_id, ref, visitor_id, session_id, number, path, clicked_at) VALUES ",
            );
            for (i, r) in chunk.iter().enumerate() {
                q.push(if i == 0 { "(?, ?, ?, ?, ?, ?, ?)" } else { ", (?, ?, ?, ?, ?, ?, ?)" });
                q.text(&r.site_id)
                    .text(&r.reference)
                    .text(&r.visitor_id)
                    .text(&r.session_id)
                    .text(&r.number)
                    .text(&r.path)
                    .int(r.clicked_at);
            }
            q.push(
                " ON CONFLICT (site_id, ref) DO UPDATE SET visitor_id = excluded.visitor_id, \
                 session_id = excluded.session_id, number = excluded.number, path = excluded.path, \
                 clicked_at = excluded.clicked_at WHERE web_whatsapp_refs.clicked_at < excluded.clicked_at - ?",
            );
            q.int(REF_VALID_MS);
            written += q.execute(conn)?;
        }
    }
    Ok(written)
}

/// The click behind `reference` on the site when `at` is within the 7 days
/// after it (`clicked_at <= at <= clicked_at + 7 days`).
pub fn lookup(conn: &mut AnyConnection, site_id: &str, reference: &str, at: i64) -> QueryResult<Option<RefRow>> {
    let mut q = RawQuery::prepared(
        "SELECT visitor_id, session_id, number, path, clicked_at FROM web_whatsapp_refs \
         WHERE site_id = ? AND ref = ? AND clicked_at <= ? AND clicked_at >= ?",
    );
    q.text(site_id).text(reference).int(at).int(at.saturating_sub(REF_VALID_MS));
    Ok(q.load::<RefRow>(conn)?.into_iter().next())
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
    let mut n = 0;
    for chunk in visitor_ids.chunks(400) {
        let mut q = RawQuery::new(format!(
            "DELETE FROM web_whatsapp_refs WHERE site_id = ? AND visitor_id IN {}",
            placeholders(chunk.len())
        ));
        q.text(site_id).texts(chunk);
        n += q.execute(conn)?;
    }
    Ok(n)
}
