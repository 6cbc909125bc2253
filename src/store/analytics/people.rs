//! Identified people's rows (PPL-01 to PPL-13): the owner's identity
//! map (HMACs of external ids → canonical `u_` ids), profiles per (site,
//! canonical id), aliases per (site, anonymous id) and the search terms.
//! `canonical_of` and `ids_of_person` are what other readers (journeys,
//! conversion attribution) use to see a person through its aliases.

use diesel::QueryResult;
use diesel::prelude::*;

use super::byte_order;
use crate::db::AnyConnection;
use crate::db::row::{self, Row};
use crate::db::sql::{RawQuery, placeholders};

// ---------------------------------------------------------------- identity map

/// The canonical id an owner's external-id hash names, if any.
pub fn identity(conn: &mut AnyConnection, owner_id: &str, hash: &str) -> QueryResult<Option<String>> {
    use crate::db::schema::web_identities as i;
    i::table.find((owner_id, hash)).select(i::visitor_id).first(conn).optional()
}

/// The owner's canonical id for a hash: the stored one, else `fresh` (made
/// once for every process: insert-or-nothing, then read).
pub fn identity_or_insert(
    conn: &mut AnyConnection,
    owner_id: &str,
    hash: &str,
    fresh: &str,
    now: i64,
) -> QueryResult<String> {
    crate::row! {
        struct Identity<'a> in web_identities {
            owner_id: &'a str,
            external_hash: &'a str,
            visitor_id: &'a str,
            created_at: i64,
        }
    }
    let row = Identity { owner_id, external_hash: hash, visitor_id: fresh, created_at: now };
    crate::db::row::insert::<Identity<'_>, _>(conn, &[row], " ON CONFLICT (owner_id, external_hash) DO NOTHING")?;
    identity(conn, owner_id, hash)?.ok_or(diesel::result::Error::NotFound)
}

/// Forgets a canonical id's identity row (no site of its owner keeps it).
pub fn delete_identity(conn: &mut AnyConnection, visitor_id: &str) -> QueryResult<usize> {
    use crate::db::schema::web_identities as i;
    diesel::delete(i::table.filter(i::visitor_id.eq(visitor_id))).execute(conn)
}

/// Whether any site of `owner_id` keeps a profile of `visitor_id`.
pub fn owner_keeps(conn: &mut AnyConnection, owner_id: &str, visitor_id: &str) -> QueryResult<bool> {
    let mut q = RawQuery::new(
        "SELECT p.site_id AS id FROM web_profiles p JOIN sites s ON s.id = p.site_id \
         WHERE p.visitor_id = ? AND s.owner_id = ? LIMIT 1",
    );
    q.text(visitor_id).text(owner_id);
    Ok(!q.load::<crate::db::row::Id>(conn)?.is_empty())
}

// ---------------------------------------------------------------- profiles

crate::row! {
    #[derive(Debug, Clone, PartialEq)]
    pub struct ProfileRow in web_profiles {
        pub site_id: String,
        pub visitor_id: String,
        pub name: Option<String>,
        pub email: Option<String>,
        /// A JSON object.
        pub attributes: String,
        pub identified_at: i64,
        pub first_seen_at: i64,
        pub last_seen_at: i64,
    }
}

pub fn profile(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<Option<ProfileRow>> {
    use crate::db::schema::web_profiles as p;
    p::table.find((site_id, visitor_id)).select(ProfileRow::as_select()).first(conn).optional()
}

/// The profiles of these canonical ids on a site.
pub fn profiles(conn: &mut AnyConnection, site_id: &str, visitor_ids: &[String]) -> QueryResult<Vec<ProfileRow>> {
    if visitor_ids.is_empty() {
        return Ok(Vec::new());
    }
    use crate::db::schema::web_profiles as p;
    p::table
        .filter(p::site_id.eq(site_id))
        .filter(p::visitor_id.eq_any(visitor_ids))
        .select(ProfileRow::as_select())
        .load(conn)
}

pub fn insert_profile(conn: &mut AnyConnection, p: &ProfileRow) -> QueryResult<usize> {
    // A profile another process made meanwhile stays (0 rows: the caller updates it instead).
    crate::db::row::insert::<ProfileRow, _>(
        conn,
        std::slice::from_ref(p),
        " ON CONFLICT (site_id, visitor_id) DO NOTHING",
    )
}

/// What a later identify changes (never `identified_at`).
pub fn update_profile(conn: &mut AnyConnection, p: &ProfileRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_profiles SET name = ?, email = ?, attributes = ?, first_seen_at = ?, last_seen_at = ? \
         WHERE site_id = ? AND visitor_id = ?",
    );
    q.opt_text(p.name.clone())
        .opt_text(p.email.clone())
        .text(&p.attributes)
        .int(p.first_seen_at)
        .int(p.last_seen_at)
        .text(&p.site_id)
        .text(&p.visitor_id);
    q.execute(conn)
}

pub fn delete_profile(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_profiles WHERE site_id = ? AND visitor_id = ?");
    q.text(site_id).text(visitor_id);
    q.execute(conn)
}

// ---------------------------------------------------------------- aliases

/// The canonical id an anonymous id of a site is an alias of.
pub fn alias_of(conn: &mut AnyConnection, site_id: &str, alias_id: &str) -> QueryResult<Option<String>> {
    use crate::db::schema::web_aliases as a;
    a::table.find((site_id, alias_id)).select(a::visitor_id).first(conn).optional()
}

/// Makes `alias_id` an alias of `visitor_id` unless it is one already (the
/// first alias wins); answers the canonical id it is an alias of now.
pub fn alias_or_keep(
    conn: &mut AnyConnection,
    site_id: &str,
    alias_id: &str,
    visitor_id: &str,
    now: i64,
) -> QueryResult<String> {
    crate::row! {
        struct Alias<'a> in web_aliases {
            site_id: &'a str,
            alias_id: &'a str,
            visitor_id: &'a str,
            created_at: i64,
        }
    }
    let row = Alias { site_id, alias_id, visitor_id, created_at: now };
    crate::db::row::insert::<Alias<'_>, _>(conn, &[row], " ON CONFLICT (site_id, alias_id) DO NOTHING")?;
    alias_of(conn, site_id, alias_id)?.ok_or(diesel::result::Error::NotFound)
}

crate::row! {
    pub struct AliasRow in web_aliases {
        pub alias_id: String,
        pub visitor_id: String,
    }
}

/// Which of these ids of a site are aliases, and of whom.
pub fn aliases_in(conn: &mut AnyConnection, site_id: &str, ids: &[String]) -> QueryResult<Vec<AliasRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    use crate::db::schema::web_aliases as a;
    a::table.filter(a::site_id.eq(site_id)).filter(a::alias_id.eq_any(ids)).select(AliasRow::as_select()).load(conn)
}

/// The aliases of these canonical ids on a site.
pub fn aliases_of(conn: &mut AnyConnection, site_id: &str, canonical: &[String]) -> QueryResult<Vec<AliasRow>> {
    if canonical.is_empty() {
        return Ok(Vec::new());
    }
    let c = byte_order(conn);
    let mut q = RawQuery::new(format!(
        "SELECT alias_id, visitor_id FROM web_aliases WHERE site_id = ? AND visitor_id IN {} ORDER BY alias_id{c}",
        placeholders(canonical.len())
    ));
    q.text(site_id).texts(canonical);
    q.load(conn)
}

pub fn delete_aliases(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_aliases WHERE site_id = ? AND visitor_id = ?");
    q.text(site_id).text(visitor_id);
    q.execute(conn)
}

/// The canonical id behind a visitor id of a site: itself when it has a
/// profile there, the id it is an alias of, else None.
pub fn canonical_of(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<Option<String>> {
    if profile(conn, site_id, visitor_id)?.is_some() {
        return Ok(Some(visitor_id.to_string()));
    }
    alias_of(conn, site_id, visitor_id)
}

/// A person's ids on a site: the canonical id, then its aliases in byte order.
pub fn ids_of_person(conn: &mut AnyConnection, site_id: &str, canonical_id: &str) -> QueryResult<Vec<String>> {
    let mut ids = vec![canonical_id.to_string()];
    ids.extend(aliases_of(conn, site_id, &[canonical_id.to_string()])?.into_iter().map(|a| a.alias_id));
    Ok(ids)
}

// ---------------------------------------------------------------- search terms

crate::row! {
    struct Term<'a> in web_profile_terms {
        site_id: &'a str,
        term: &'a str,
        visitor_id: &'a str,
    }
}

/// Replaces a profile's search terms.
pub fn set_terms(conn: &mut AnyConnection, site_id: &str, visitor_id: &str, terms: &[String]) -> QueryResult<()> {
    delete_terms(conn, site_id, visitor_id)?;
    let rows: Vec<Term> = terms.iter().map(|term| Term { site_id, term, visitor_id }).collect();
    row::insert::<Term, _>(conn, &rows, " ON CONFLICT (site_id, term, visitor_id) DO NOTHING")?;
    Ok(())
}

pub fn delete_terms(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<usize> {
    use crate::db::schema::web_profile_terms as t;
    diesel::delete(t::table.filter(t::site_id.eq(site_id)).filter(t::visitor_id.eq(visitor_id))).execute(conn)
}

/// Whether at least `n` terms of a site fall in a search's prefix range.
pub fn terms_at_least(conn: &mut AnyConnection, site_id: &str, prefix: &str, n: usize) -> QueryResult<bool> {
    let c = byte_order(conn);
    let mut q = RawQuery::new(format!(
        "SELECT CAST(COUNT(*) AS BIGINT) AS number FROM (SELECT 1 AS one FROM web_profile_terms WHERE site_id = ? \
         AND term{c} >= ? AND term{c} <= ? LIMIT ?) sub"
    ));
    q.text(site_id).text(prefix).text(format!("{prefix}\u{10FFFF}")).int(n as i64);
    Ok(q.load::<NumberOf>(conn)?.into_iter().next().is_some_and(|r| r.number >= n as i64))
}

/// How a search finds its page: from the matching terms (few match: they
/// are read and sorted), or by walking the profiles in list order and
/// checking each one's terms (many match: the page fills early).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search<'a> {
    None,
    FromTerms(&'a str),
    Walk(&'a str),
}

/// One page of a site's profiles, `identifiedAt` desc, `visitorId` desc,
/// after a position; with a search, only those with a term in its
/// byte-order prefix range (`[prefix, prefix + U+10FFFF]`).
pub fn people_page(
    conn: &mut AnyConnection,
    site_id: &str,
    search: Search<'_>,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<ProfileRow>> {
    if let Search::FromTerms(p) = search {
        return page_from_terms(conn, site_id, p, after, limit);
    }
    let c = byte_order(conn);
    let mut sql = format!("SELECT {} FROM web_profiles p WHERE site_id = ?", ProfileRow::select_list());
    match search {
        // FromTerms went to `page_from_terms` above.
        Search::None | Search::FromTerms(_) => {}
        // On PostgreSQL the profile's id is a "C" column and the term's is
        // not: compared as they are, the two collations conflict and the
        // planner cannot probe the terms' (site, visitor, term) index per
        // profile, so it hashed every matching term against every profile
        // (300-450 ms over 1,000,000 profiles) instead of walking the list
        // and stopping at the page (2-15 ms).
        Search::Walk(_) => sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM web_profile_terms t WHERE t.site_id = ? AND t.visitor_id = p.visitor_id{d} \
             AND t.term{c} >= ? AND t.term{c} <= ?)",
            d = if conn.is_sqlite() { "" } else { " COLLATE \"default\"" }
        )),
    }
    if after.is_some() {
        sql.push_str(&format!(" AND (identified_at < ? OR (identified_at = ? AND visitor_id{c} < ?))"));
    }
    sql.push_str(&format!(" ORDER BY identified_at DESC, visitor_id{c} DESC LIMIT ?"));
    let mut q = RawQuery::new(sql);
    q.text(site_id);
    if let Search::Walk(p) = search {
        q.text(site_id).text(p).text(format!("{p}\u{10FFFF}"));
    }
    if let Some((t, id)) = after {
        q.int(t).int(t).text(id);
    }
    q.int(limit as i64);
    q.load(conn)
}

crate::row! {
    struct VisitorOf {
        visitor_id: String,
    }
}

/// A search with few matching terms: their profiles read by key and sorted
/// here. Left to itself, SQLite (no statistics) walks the site's whole list
/// index checking each profile against the matches, which over a million
/// profiles is a tenth of a second however few they are.
fn page_from_terms(
    conn: &mut AnyConnection,
    site_id: &str,
    prefix: &str,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<ProfileRow>> {
    let c = byte_order(conn);
    let mut q = RawQuery::new(format!(
        "SELECT DISTINCT visitor_id FROM web_profile_terms WHERE site_id = ? AND term{c} >= ? AND term{c} <= ?"
    ));
    q.text(site_id).text(prefix).text(format!("{prefix}\u{10FFFF}"));
    let ids: Vec<String> = q.load::<VisitorOf>(conn)?.into_iter().map(|r| r.visitor_id).collect();
    let mut rows = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(400) {
        rows.extend(profiles(conn, site_id, chunk)?);
    }
    // identifiedAt desc, then visitorId desc by bytes; strictly after the position.
    let key =
        |p: &ProfileRow| (std::cmp::Reverse(p.identified_at), std::cmp::Reverse(p.visitor_id.as_bytes().to_vec()));
    if let Some((t, id)) = &after {
        let at = (std::cmp::Reverse(*t), std::cmp::Reverse(id.as_bytes().to_vec()));
        rows.retain(|p| key(p) > at);
    }
    rows.sort_by_key(key);
    rows.truncate(limit);
    Ok(rows)
}

// ---------------------------------------------------------------- a person's sessions

crate::row! {
    #[derive(Debug, Clone, Default)]
    pub struct SessionTotals {
        pub visitor_id: String,
        pub sessions: i64,
        pub pageviews: i64,
        pub conversions: i64,
        pub revenue_cents: i64,
        pub first_at: i64,
        pub last_at: i64,
    }
}

/// Per visitor id of a site: its sessions, their pageviews, conversions and
/// revenue, its first session's start and its last event.
pub fn session_totals(conn: &mut AnyConnection, site_id: &str, ids: &[String]) -> QueryResult<Vec<SessionTotals>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT visitor_id, CAST(COUNT(*) AS BIGINT) AS sessions, CAST(SUM(pageviews) AS BIGINT) AS pageviews, \
         CAST(SUM(conversions) AS BIGINT) AS conversions, CAST(SUM(revenue_cents) AS BIGINT) AS revenue_cents, \
         MIN(started_at) AS first_at, MAX(last_at) AS last_at FROM web_sessions WHERE site_id = ? AND visitor_id IN {} \
         GROUP BY visitor_id",
        placeholders(ids.len())
    ));
    q.text(site_id).texts(ids);
    q.load(conn)
}

// ---------------------------------------------------------------- identify's hand-over

crate::row! {
    #[derive(Debug, Clone)]
    pub struct VisitorState in web_visitors {
        pub session_id: String,
        pub session_started_at: i64,
        pub last_at: i64,
        pub current_path: String,
        pub current_route: String,
        pub sessions: i64,
    }
}

pub fn visitor_state(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<Option<VisitorState>> {
    let mut q = RawQuery::new(
        "SELECT session_id, session_started_at, last_at, current_path, current_route, sessions FROM web_visitors \
         WHERE site_id = ? AND visitor_id = ?",
    );
    q.text(site_id).text(visitor_id);
    Ok(q.load::<VisitorState>(conn)?.into_iter().next())
}

/// Makes `s` the (site, visitor)'s state, creating the row when missing.
pub fn put_visitor_state(
    conn: &mut AnyConnection,
    site_id: &str,
    visitor_id: &str,
    s: &VisitorState,
) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "INSERT INTO web_visitors (site_id, visitor_id, session_id, session_started_at, last_at, current_path, \
         current_route, sessions, handed_over) VALUES (?, ?, ?, ?, ?, ?, ?, ?, FALSE) ON CONFLICT (site_id, visitor_id) \
         DO UPDATE SET session_id = excluded.session_id, session_started_at = excluded.session_started_at, \
         last_at = excluded.last_at, current_path = excluded.current_path, current_route = excluded.current_route, \
         sessions = excluded.sessions, handed_over = FALSE",
    );
    q.text(site_id)
        .text(visitor_id)
        .text(&s.session_id)
        .int(s.session_started_at)
        .int(s.last_at)
        .text(&s.current_path)
        .text(&s.current_route)
        .int(s.sessions);
    q.execute(conn)
}

/// The alias's row still names the session identify handed to the person:
/// it is no live visitor of its own until the alias starts another session
/// (rule SES-19; acceptance keeps the mark while it goes on in that one).
pub fn mark_handed_over(
    conn: &mut AnyConnection,
    site_id: &str,
    visitor_id: &str,
    session_id: &str,
) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_visitors SET handed_over = TRUE WHERE site_id = ? AND visitor_id = ? AND session_id = ?",
    );
    q.text(site_id).text(visitor_id).text(session_id);
    q.execute(conn)
}

pub fn set_session_visitor(conn: &mut AnyConnection, session_id: &str, visitor_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("UPDATE web_sessions SET visitor_id = ? WHERE id = ?");
    q.text(visitor_id).text(session_id);
    q.execute(conn)
}

crate::row! {
    struct NumberOf in web_visitor_numbers {
        number: i64,
    }
}

fn number_of(conn: &mut AnyConnection, site_id: &str, visitor_id: &str) -> QueryResult<Option<i64>> {
    let mut q = RawQuery::new("SELECT number FROM web_visitor_numbers WHERE site_id = ? AND visitor_id = ?");
    q.text(site_id).text(visitor_id);
    Ok(q.load::<NumberOf>(conn)?.into_iter().next().map(|r| r.number))
}

/// §2 "Identify and numbers": `to` takes `from`'s dense number (assigning
/// `from` one first if it has none) unless `to` has one on the site already.
pub fn share_number(conn: &mut AnyConnection, site_id: &str, from: &str, to: &str) -> QueryResult<()> {
    if number_of(conn, site_id, to)?.is_some() {
        return Ok(());
    }
    let n = super::rollups::visitor_numbers(conn, site_id, &[from.to_string()])?
        .into_iter()
        .next()
        .map(|r| r.number)
        .ok_or(diesel::result::Error::NotFound)?;
    let mut q = RawQuery::new("INSERT INTO web_visitor_numbers (site_id, visitor_id, number) VALUES (?, ?, ?)");
    q.text(site_id).text(to).int(n);
    q.execute(conn)?;
    Ok(())
}

// ---------------------------------------------------------------- forgetting

/// Rewrites a site's events, sessions and queued rollup rows of `ids` to
/// `fresh`, drops their visitor-state rows, and moves the number of the
/// first id that has one to `fresh` (the stored sets keep their numbers, so
/// counts do not change). Their sessions' sealed landing fbclids and their
/// WhatsApp references are deleted.
pub fn rewrite_ids(conn: &mut AnyConnection, site_id: &str, ids: &[String], fresh: &str) -> QueryResult<()> {
    let ins = placeholders(ids.len());
    // A person's events lie in its sessions (an alias's events join only its
    // own sessions or those it handed to the person): found by the sessions'
    // visitor index, then each session's events by theirs.
    let mut q = RawQuery::new(format!("SELECT id FROM web_sessions WHERE site_id = ? AND visitor_id IN {ins}"));
    q.text(site_id).texts(ids);
    let sessions: Vec<String> = q.load::<crate::db::row::Id>(conn)?.into_iter().map(|r| r.id).collect();
    // Their landings' sealed fbclids go: nothing ties them to anyone after this (rule WA-33).
    super::click_ids::delete_of_sessions(conn, site_id, &sessions)?;
    // Their WhatsApp references go: no later lead may be tied to them (rule WA-02).
    super::whatsapp_refs::delete_of_visitors(conn, site_id, ids)?;
    for chunk in sessions.chunks(400) {
        let mut q = RawQuery::new(format!(
            "UPDATE web_events SET visitor_id = ? WHERE session_id IN {} AND visitor_id IN {ins}",
            placeholders(chunk.len())
        ));
        q.text(fresh).texts(chunk).texts(ids);
        q.execute(conn)?;
    }
    // Rows an older version queued, not yet moved into packs at a start.
    for table in ["web_sessions", "web_outbox", "web_conversions"] {
        let mut q =
            RawQuery::new(format!("UPDATE {table} SET visitor_id = ? WHERE site_id = ? AND visitor_id IN {ins}"));
        q.text(fresh).text(site_id).texts(ids);
        q.execute(conn)?;
    }
    super::rewrite_pack_visitors(conn, site_id, ids, fresh)?;
    super::funnels::rewrite_visitors(conn, site_id, ids, fresh)?;
    let mut q = RawQuery::new(format!("DELETE FROM web_visitors WHERE site_id = ? AND visitor_id IN {ins}"));
    q.text(site_id).texts(ids);
    q.execute(conn)?;
    let mut number = None;
    for id in ids {
        if let Some(n) = number_of(conn, site_id, id)? {
            number = Some(n);
            break;
        }
    }
    let mut q = RawQuery::new(format!("DELETE FROM web_visitor_numbers WHERE site_id = ? AND visitor_id IN {ins}"));
    q.text(site_id).texts(ids);
    q.execute(conn)?;
    if let Some(n) = number {
        let mut q = RawQuery::new("INSERT INTO web_visitor_numbers (site_id, visitor_id, number) VALUES (?, ?, ?)");
        q.text(site_id).text(fresh).int(n);
        q.execute(conn)?;
    }
    Ok(())
}
