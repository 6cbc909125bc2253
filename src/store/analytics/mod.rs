//! Web analytics rows (STORE-01 to STORE-09): what acceptance writes (events,
//! sessions, the (site, visitor) state, the rollup outbox), the rollups the
//! report actors keep, and the reads over both.

pub mod conversions;
pub mod definitions;
pub mod funnels;
pub mod goals;
pub mod links;
pub mod people;
pub mod regroup;
pub mod retention;
pub mod rollups;
pub mod site_map;
pub mod vitals;

use diesel::sql_types::{BigInt, Binary, Bool, Nullable, Text};
use diesel::{QueryResult, QueryableByName};

use crate::db::AnyConnection;
use crate::db::sql::{RawQuery, placeholders};

// ---------------------------------------------------------------- salts

#[derive(QueryableByName)]
struct SaltRow {
    #[diesel(sql_type = Binary)]
    salt: Vec<u8>,
}

/// The day's salt: created once for every process of the database, then read.
pub fn salt(conn: &mut AnyConnection, day: i64, fresh: [u8; 32]) -> QueryResult<Vec<u8>> {
    let mut q = RawQuery::new("INSERT INTO web_salts (day, salt) VALUES (?, ?) ON CONFLICT (day) DO NOTHING");
    q.int(day).bytes(fresh.to_vec());
    q.execute(conn)?;
    let mut q = RawQuery::new("SELECT salt FROM web_salts WHERE day = ?");
    q.int(day);
    Ok(q.load::<SaltRow>(conn)?.into_iter().next().map(|r| r.salt).unwrap_or_default())
}

/// Salts 48 hours past their day's end go (rule SES-04).
pub fn delete_salts_before(conn: &mut AnyConnection, day: i64) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_salts WHERE day < ?");
    q.int(day);
    q.execute(conn)
}

// ---------------------------------------------------------------- visitor state

#[derive(Debug, Clone, QueryableByName)]
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

// ---------------------------------------------------------------- sessions

#[derive(Debug, Clone, QueryableByName, PartialEq)]
pub struct SessionRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub visitor_id: String,
    #[diesel(sql_type = BigInt)]
    pub started_at: i64,
    #[diesel(sql_type = BigInt)]
    pub last_at: i64,
    #[diesel(sql_type = BigInt)]
    pub end_at: i64,
    #[diesel(sql_type = Text)]
    pub entry_path: String,
    #[diesel(sql_type = Text)]
    pub entry_route: String,
    #[diesel(sql_type = Text)]
    pub exit_path: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub referrer: Option<String>,
    #[diesel(sql_type = Text)]
    pub source: String,
    #[diesel(sql_type = Text)]
    pub medium: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub campaign: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub term: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub content: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub affiliate_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub country: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub region: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub device: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub browser: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub os: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub language: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub pageviews: i64,
    #[diesel(sql_type = BigInt)]
    pub events: i64,
    #[diesel(sql_type = Bool)]
    pub is_returning: bool,
    #[diesel(sql_type = BigInt)]
    pub conversions: i64,
    #[diesel(sql_type = BigInt)]
    pub revenue_cents: i64,
}

const SESSION_COLUMNS: &str = "id, site_id, visitor_id, started_at, last_at, end_at, entry_path, entry_route, \
    exit_path, referrer, source, medium, campaign, term, content, affiliate_id, country, region, device, browser, \
    os, language, pageviews, events, is_returning, conversions, revenue_cents";

pub fn session(conn: &mut AnyConnection, id: &str) -> QueryResult<Option<SessionRow>> {
    let mut q = RawQuery::prepared(format!("SELECT {SESSION_COLUMNS} FROM web_sessions WHERE id = ?"));
    q.text(id);
    Ok(q.load::<SessionRow>(conn)?.into_iter().next())
}

pub fn sessions(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<SessionRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::prepared(format!(
        "SELECT {SESSION_COLUMNS} FROM web_sessions WHERE id IN {}",
        placeholders(ids.len())
    ));
    q.texts(ids);
    q.load(conn)
}

pub fn insert_session(conn: &mut AnyConnection, s: &SessionRow) -> QueryResult<usize> {
    let mut q = RawQuery::prepared(format!(
        "INSERT INTO web_sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, \
         ?, ?, ?, ?, ?, ?, ?, ?)"
    ));
    q.text(&s.id)
        .text(&s.site_id)
        .text(&s.visitor_id)
        .int(s.started_at)
        .int(s.last_at)
        .int(s.end_at)
        .text(&s.entry_path)
        .text(&s.entry_route)
        .text(&s.exit_path)
        .opt_text(s.referrer.clone())
        .text(&s.source)
        .text(&s.medium)
        .opt_text(s.campaign.clone())
        .opt_text(s.term.clone())
        .opt_text(s.content.clone())
        .opt_text(s.affiliate_id.clone())
        .opt_text(s.country.clone())
        .opt_text(s.region.clone())
        .opt_text(s.device.clone())
        .opt_text(s.browser.clone())
        .opt_text(s.os.clone())
        .opt_text(s.language.clone())
        .int(s.pageviews)
        .int(s.events)
        .boolean(s.is_returning)
        .int(s.conversions)
        .int(s.revenue_cents);
    q.execute(conn)
}

/// The fields a later event moves.
pub fn update_session(conn: &mut AnyConnection, s: &SessionRow) -> QueryResult<usize> {
    let mut q = RawQuery::prepared(
        "UPDATE web_sessions SET last_at = ?, end_at = ?, exit_path = ?, pageviews = ?, events = ? WHERE id = ?",
    );
    q.int(s.last_at).int(s.end_at).text(&s.exit_path).int(s.pageviews).int(s.events).text(&s.id);
    q.execute(conn)
}

// ---------------------------------------------------------------- events

/// A pageview or custom event as stored.
#[derive(Debug, Clone, QueryableByName)]
pub struct EventRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub session_id: String,
    #[diesel(sql_type = Text)]
    pub visitor_id: String,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = Text)]
    pub path: String,
    #[diesel(sql_type = Text)]
    pub route: String,
    #[diesel(sql_type = BigInt)]
    pub occurred_at: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub pageview_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub properties: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub engaged_ms: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub lcp: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub inp: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub cls: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub fcp: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub ttfb: Option<i64>,
}

pub(crate) const EVENT_COLUMNS: &str = "id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at, pageview_id, \
    properties, engaged_ms, lcp, inp, cls, fcp, ttfb";

/// Stored pageviews of a site by their `pageviewId`.
pub fn pageviews(conn: &mut AnyConnection, site_id: &str, pageview_ids: &[String]) -> QueryResult<Vec<EventRow>> {
    if pageview_ids.is_empty() {
        return Ok(Vec::new());
    }
    // Not prepared: PostgreSQL would keep the generic plan it chose while the
    // table was empty (a scan), and each lookup would read the whole site.
    let mut q = RawQuery::new(format!(
        "SELECT {EVENT_COLUMNS} FROM web_events WHERE site_id = ? AND pageview_id IN {}",
        placeholders(pageview_ids.len())
    ));
    q.text(site_id).texts(pageview_ids);
    q.load(conn)
}

/// Many events in one statement.
pub fn insert_events(conn: &mut AnyConnection, rows: &[EventRow]) -> QueryResult<usize> {
    if rows.is_empty() {
        return Ok(0);
    }
    let one = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    let mut q = RawQuery::prepared(format!("INSERT INTO web_events ({EVENT_COLUMNS}) VALUES "));
    for (i, e) in rows.iter().enumerate() {
        q.push(if i == 0 { one } else { ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" });
        q.text(&e.id)
            .text(&e.site_id)
            .text(&e.session_id)
            .text(&e.visitor_id)
            .text(&e.kind)
            .opt_text(e.name.clone())
            .text(&e.path)
            .text(&e.route)
            .int(e.occurred_at)
            .opt_text(e.pageview_id.clone())
            .opt_text(e.properties.clone())
            .opt_int(e.engaged_ms)
            .opt_int(e.lcp)
            .opt_int(e.inp)
            .opt_int(e.cls)
            .opt_int(e.fcp)
            .opt_int(e.ttfb);
    }
    q.execute(conn)
}

/// A stored pageview's engagement and vitals after later events.
pub fn update_pageview_measures(conn: &mut AnyConnection, e: &EventRow) -> QueryResult<usize> {
    let mut q = RawQuery::prepared(
        "UPDATE web_events SET engaged_ms = ?, lcp = ?, inp = ?, cls = ?, fcp = ?, ttfb = ? WHERE id = ?",
    );
    q.opt_int(e.engaged_ms).opt_int(e.lcp).opt_int(e.inp).opt_int(e.cls).opt_int(e.fcp).opt_int(e.ttfb).text(&e.id);
    q.execute(conn)
}

// ---------------------------------------------------------------- outbox

/// One accepted event's effect on the rollups, applied once by a report actor.
#[derive(Debug, Clone, QueryableByName, PartialEq, Eq)]
pub struct OutboxRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub visitor_id: String,
    #[diesel(sql_type = Text)]
    pub session_id: String,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = BigInt)]
    pub at: i64,
    #[diesel(sql_type = BigInt)]
    pub session_start: i64,
    #[diesel(sql_type = Text)]
    pub route: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub new_session: i64,
    #[diesel(sql_type = BigInt)]
    pub d_bounces: i64,
    #[diesel(sql_type = BigInt)]
    pub d_duration: i64,
    #[diesel(sql_type = BigInt)]
    pub d_engaged_sum: i64,
    #[diesel(sql_type = BigInt)]
    pub d_engaged_count: i64,
    /// The goals the event completed, space-separated ids (rule ARPT-10).
    #[diesel(sql_type = Nullable<Text>)]
    pub goals: Option<String>,
    /// Those of `goals` its session completed for the first time.
    #[diesel(sql_type = Nullable<Text>)]
    pub new_goals: Option<String>,
    /// Site map (a pageview): the route of the session's previous pageview, and
    /// this pageview's number in its session (0 on rows from before the map).
    #[diesel(sql_type = Nullable<Text>)]
    pub prev_route: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub pageview_no: i64,
    /// Vitals (kind `vital`, the metric in `name`): the pageview's value before and after.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub vital_old: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub vital_new: Option<i64>,
}

const OUTBOX_COLUMNS: &str = "site_id, visitor_id, session_id, kind, at, session_start, route, name, new_session, \
    d_bounces, d_duration, d_engaged_sum, d_engaged_count, goals, new_goals, prev_route, pageview_no, vital_old, vital_new";

pub fn insert_outbox(conn: &mut AnyConnection, rows: &[OutboxRow]) -> QueryResult<usize> {
    if rows.is_empty() {
        return Ok(0);
    }
    let mut q = RawQuery::prepared(format!("INSERT INTO web_outbox ({OUTBOX_COLUMNS}) VALUES "));
    for (i, r) in rows.iter().enumerate() {
        q.push(if i == 0 { "" } else { ", " });
        q.push("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        q.text(&r.site_id)
            .text(&r.visitor_id)
            .text(&r.session_id)
            .text(&r.kind)
            .int(r.at)
            .int(r.session_start)
            .text(&r.route)
            .opt_text(r.name.clone())
            .int(r.new_session)
            .int(r.d_bounces)
            .int(r.d_duration)
            .int(r.d_engaged_sum)
            .int(r.d_engaged_count)
            .opt_text(r.goals.clone())
            .opt_text(r.new_goals.clone())
            .opt_text(r.prev_route.clone())
            .int(r.pageview_no)
            .opt_int(r.vital_old)
            .opt_int(r.vital_new);
    }
    q.execute(conn)
}

/// The oldest `limit` outbox rows, locked and skipped by other processes on
/// PostgreSQL so each row is applied once (rule STORE-04).
pub fn take_outbox(conn: &mut AnyConnection, limit: usize) -> QueryResult<Vec<OutboxRow>> {
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE SKIP LOCKED" };
    let mut q = RawQuery::prepared(format!("SELECT id, {OUTBOX_COLUMNS} FROM web_outbox ORDER BY id LIMIT ?{lock}"));
    q.int(limit as i64);
    q.load(conn)
}

pub fn delete_outbox(conn: &mut AnyConnection, ids: &[i64]) -> QueryResult<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut q = RawQuery::new(format!("DELETE FROM web_outbox WHERE id IN {}", placeholders(ids.len())));
    q.ints(ids);
    q.execute(conn)
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

pub fn outbox_len(conn: &mut AnyConnection) -> QueryResult<i64> {
    Ok(RawQuery::new("SELECT COUNT(*) AS n FROM web_outbox").load::<CountRow>(conn)?.first().map_or(0, |r| r.n))
}

// ---------------------------------------------------------------- reads

/// Text keys sort by byte order on both backends (SQLite's BINARY is already).
pub fn byte_order(conn: &AnyConnection) -> &'static str {
    if conn.is_sqlite() { "" } else { " COLLATE \"C\"" }
}

#[derive(Debug, Clone, QueryableByName)]
pub struct LiveRow {
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub visitor_id: String,
    #[diesel(sql_type = BigInt)]
    pub last_at: i64,
    #[diesel(sql_type = Text)]
    pub current_path: String,
    #[diesel(sql_type = Text)]
    pub current_route: String,
    #[diesel(sql_type = BigInt)]
    pub sessions: i64,
    #[diesel(sql_type = Text)]
    pub session_id: String,
}

/// An alias's row (table alias `t`) whose session passed to the identified
/// id is not shown (rule SES-19). Only an alias's row can point at a session
/// of another id (identify hands it over; forget deletes the rows it
/// rewrites), so the session is looked at only for rows the (small) alias
/// table names.
fn not_handed_over(t: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM web_aliases a WHERE a.site_id = {t}.site_id AND a.alias_id = {t}.visitor_id \
         AND EXISTS (SELECT 1 FROM web_sessions s WHERE s.id = {t}.session_id AND s.visitor_id <> {t}.visitor_id))"
    )
}

/// The live (site, visitor) rows: last pageview or custom event in `[from, to]`;
/// how many, and the `limit` latest (last_at desc, then site and visitor by bytes).
pub fn live(
    conn: &mut AnyConnection,
    site_ids: &[String],
    from: i64,
    to: i64,
    limit: i64,
) -> QueryResult<(i64, Vec<LiveRow>)> {
    let mut count = RawQuery::prepared(format!(
        "SELECT COUNT(*) AS n FROM web_visitors v WHERE site_id IN {} AND last_at >= ? AND last_at <= ? \
         AND session_id <> '' AND {}",
        placeholders(site_ids.len()),
        not_handed_over("v")
    ));
    count.texts(site_ids).int(from).int(to);
    let n = count.load::<CountRow>(conn)?.first().map_or(0, |r| r.n);
    // Per site: the `limit`-th latest `last_at` walking its (site, last_at)
    // index backwards, then the rows at or after it (ties included), sorted
    // here; never a sort of every live row of every site.
    let mut rows: Vec<LiveRow> = Vec::new();
    for site in site_ids {
        let mut q = RawQuery::prepared(format!(
            "SELECT site_id, visitor_id, last_at, current_path, current_route, sessions, session_id FROM web_visitors v \
             WHERE site_id = ? AND last_at <= ? AND session_id <> '' AND {} AND last_at >= COALESCE(( \
               SELECT last_at FROM web_visitors w WHERE w.site_id = ? AND w.last_at >= ? AND w.last_at <= ? \
               AND w.session_id <> '' AND {} ORDER BY w.last_at DESC LIMIT 1 OFFSET ?), ?)",
            not_handed_over("v"),
            not_handed_over("w")
        ));
        q.text(site).int(to).text(site).int(from).int(to).int((limit - 1).max(0)).int(from);
        rows.extend(q.load::<LiveRow>(conn)?);
    }
    rows.sort_by(|a, b| {
        b.last_at
            .cmp(&a.last_at)
            .then_with(|| a.site_id.as_bytes().cmp(b.site_id.as_bytes()))
            .then_with(|| a.visitor_id.as_bytes().cmp(b.visitor_id.as_bytes()))
    });
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((n, rows))
}

/// A pageview or custom event as the hourly overview's per-key visitors
/// count it (rule OVR-09): whose, on which route, in which session.
#[derive(Debug, Clone, QueryableByName)]
pub struct VisitorHit {
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub visitor_id: String,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Text)]
    pub route: String,
    #[diesel(sql_type = Text)]
    pub session_id: String,
}

/// The retained pageviews and custom events of some sites in a range, read
/// once for both the pages' and the sources' visitors.
pub fn visitor_hits(conn: &mut AnyConnection, site_ids: &[String], from: i64, to: i64) -> QueryResult<Vec<VisitorHit>> {
    let mut q = RawQuery::new(format!(
        "SELECT site_id, visitor_id, kind, route, session_id FROM web_events WHERE site_id IN {} \
         AND occurred_at >= ? AND occurred_at <= ? AND kind IN ('pageview', 'event')",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids).int(from).int(to);
    q.load(conn)
}

/// The source of each of these sessions (by key).
pub fn session_sources(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<(String, String)>> {
    #[derive(QueryableByName)]
    struct IdSource {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = Text)]
        source: String,
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!("SELECT id, source FROM web_sessions WHERE id IN {}", placeholders(ids.len())));
    q.texts(ids);
    Ok(q.load::<IdSource>(conn)?.into_iter().map(|r| (r.id, r.source)).collect())
}

// ---------------------------------------------------------------- keys and pages

/// A key made once for the database (`cursor`), then read.
pub fn key(conn: &mut AnyConnection, name: &str, fresh: [u8; 32]) -> QueryResult<Vec<u8>> {
    let mut q = RawQuery::new("INSERT INTO web_keys (name, secret) VALUES (?, ?) ON CONFLICT (name) DO NOTHING");
    q.text(name).bytes(fresh.to_vec());
    q.execute(conn)?;
    #[derive(QueryableByName)]
    struct KeyRow {
        #[diesel(sql_type = Binary)]
        secret: Vec<u8>,
    }
    let mut q = RawQuery::new("SELECT secret FROM web_keys WHERE name = ?");
    q.text(name);
    Ok(q.load::<KeyRow>(conn)?.into_iter().next().map(|r| r.secret).unwrap_or_default())
}

/// One page of a keyset listing over `(time, id)`: the rows whose `scope`
/// column equals a value, with `time` in `[from, to]`, after a position (the
/// last row's keys), ascending or descending (the listings and the export).
struct Keyset<'a> {
    select: String,
    scope: (&'a str, &'a str),
    time: &'a str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
    desc: bool,
}

impl Keyset<'_> {
    fn query(self, conn: &AnyConnection) -> RawQuery {
        let c = byte_order(conn);
        let (cmp, dir) = if self.desc { ("<", " DESC") } else { (">", "") };
        let (col, time) = (self.scope.0, self.time);
        let mut sql = format!("{} WHERE {col} = ? AND {time} >= ? AND {time} <= ?", self.select);
        if self.after.is_some() {
            sql.push_str(&format!(" AND ({time} {cmp} ? OR ({time} = ? AND id{c} {cmp} ?))"));
        }
        sql.push_str(&format!(" ORDER BY {time}{dir}, id{c}{dir} LIMIT ?"));
        let mut q = RawQuery::prepared(sql);
        q.text(self.scope.1).int(self.from).int(self.to);
        if let Some((t, id)) = self.after {
            q.int(t).int(t).text(id);
        }
        q.int(self.limit as i64);
        q
    }
}

/// Sessions of a site started in `[from, to]`, `startedAt` desc, id desc, after a position.
pub fn sessions_page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<SessionRow>> {
    let select = format!("SELECT {SESSION_COLUMNS} FROM web_sessions");
    let page = Keyset { select, scope: ("site_id", site_id), time: "started_at", from, to, after, limit, desc: true };
    page.query(conn).load(conn)
}

/// A session's pageviews and custom events in `[from, to]`, `(occurredAt, id)` asc, after a position.
pub fn journey_page(
    conn: &mut AnyConnection,
    session_id: &str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let select = format!("SELECT {EVENT_COLUMNS} FROM web_events");
    let page =
        Keyset { select, scope: ("session_id", session_id), time: "occurred_at", from, to, after, limit, desc: false };
    page.query(conn).load(conn)
}

/// The newest `limit` events of visitor ids on sites in `[from, to]`, newest first.
pub fn visitor_events(
    conn: &mut AnyConnection,
    site_ids: &[String],
    visitor_ids: &[String],
    from: i64,
    to: i64,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let c = byte_order(conn);
    let mut q = RawQuery::new(format!(
        "SELECT {EVENT_COLUMNS} FROM web_events WHERE site_id IN {} AND visitor_id IN {} AND occurred_at >= ? \
         AND occurred_at <= ? ORDER BY occurred_at DESC, id{c} DESC LIMIT ?",
        placeholders(site_ids.len()),
        placeholders(visitor_ids.len())
    ));
    q.texts(site_ids).texts(visitor_ids).int(from).int(to).int(limit as i64);
    q.load(conn)
}

// ---------------------------------------------------------------- imports

#[derive(Debug, QueryableByName)]
pub struct ImportRow {
    #[diesel(sql_type = Text)]
    pub body_sha256: String,
    #[diesel(sql_type = Text)]
    pub answer: String,
}

pub fn import(conn: &mut AnyConnection, site_id: &str, import_id: &str) -> QueryResult<Option<ImportRow>> {
    let mut q = RawQuery::new("SELECT body_sha256, answer FROM web_imports WHERE site_id = ? AND import_id = ?");
    q.text(site_id).text(import_id);
    Ok(q.load::<ImportRow>(conn)?.into_iter().next())
}

pub fn insert_import(
    conn: &mut AnyConnection,
    site_id: &str,
    import_id: &str,
    sha: &str,
    answer: &str,
    now: i64,
) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "INSERT INTO web_imports (site_id, import_id, body_sha256, answer, created_at) VALUES (?, ?, ?, ?, ?)",
    );
    q.text(site_id).text(import_id).text(sha).text(answer).int(now);
    q.execute(conn)
}

/// A site's events in `[from, to]` after a position, `(occurredAt, id)` asc (the export).
pub fn events_page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    after: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let select = format!("SELECT {EVENT_COLUMNS} FROM web_events");
    let page = Keyset { select, scope: ("site_id", site_id), time: "occurred_at", from, to, after, limit, desc: false };
    page.query(conn).load(conn)
}

/// The time of a site's earliest stored pageview or custom event (its
/// earliest session's start): `dataCoverage`'s `trackingSince`.
pub fn tracking_since(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<i64>> {
    #[derive(QueryableByName)]
    struct Since {
        #[diesel(sql_type = Nullable<BigInt>)]
        t: Option<i64>,
    }
    // Sessions and conversions, and what retention noted before deleting the oldest.
    let mut q = RawQuery::new(
        "SELECT MIN(t) AS t FROM (SELECT MIN(started_at) AS t FROM web_sessions WHERE site_id = ? \
         UNION ALL SELECT MIN(occurred_at) AS t FROM web_conversions WHERE site_id = ? \
         UNION ALL SELECT MIN(tracked_since) AS t FROM web_retention_jobs WHERE site_id = ?) AS x",
    );
    q.text(site_id).text(site_id).text(site_id);
    Ok(q.load::<Since>(conn)?.into_iter().next().and_then(|r| r.t))
}

/// A site's live state: its visitor rows whose last pageview or custom event
/// is at or after `since`, with their sessions (the live read cache's fill).
pub fn live_since(conn: &mut AnyConnection, site_id: &str, since: i64) -> QueryResult<Vec<(LiveRow, SessionRow)>> {
    let mut q = RawQuery::prepared(
        "SELECT site_id, visitor_id, last_at, current_path, current_route, sessions, session_id FROM web_visitors \
         WHERE site_id = ? AND last_at >= ? AND session_id <> ''",
    );
    q.text(site_id).int(since);
    let rows: Vec<LiveRow> = q.load(conn)?;
    let mut out = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(500) {
        let ids: Vec<String> = chunk.iter().map(|r| r.session_id.clone()).collect();
        let found: std::collections::HashMap<String, SessionRow> =
            sessions(conn, &ids)?.into_iter().map(|s| (s.id.clone(), s)).collect();
        out.extend(chunk.iter().filter_map(|r| found.get(&r.session_id).cloned().map(|s| (r.clone(), s))));
    }
    Ok(out)
}
