//! Session rows: read, inserted, moved by later events.

#[allow(unused_imports)]
use super::*;

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

pub(super) const SESSION_COLUMNS: &str = "id, site_id, visitor_id, started_at, last_at, end_at, entry_path, entry_route, \
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

fn bind_session(q: &mut RawQuery, s: &SessionRow) {
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
}

/// New sessions and moved ones of a combined acceptance, in a statement per
/// chunk (issue 25): a new row is inserted whole; a stored one (`id`
/// conflicts) takes only what a later event moves (its end, exit and
/// counts), so the columns other
/// writes keep (conversions, revenue) are left as they are. An id appears
/// once (a statement may not change a row twice on PostgreSQL).
pub fn write_sessions(conn: &mut AnyConnection, rows: &[&SessionRow]) -> QueryResult<usize> {
    let mut n = 0;
    for chunk in rows.chunks(32) {
        let mut q = RawQuery::prepared(format!("INSERT INTO web_sessions ({SESSION_COLUMNS}) VALUES "));
        q.rows(chunk.len(), 27);
        for s in chunk {
            bind_session(&mut q, s);
        }
        q.push(
            " ON CONFLICT (id) DO UPDATE SET last_at = excluded.last_at, end_at = excluded.end_at, \
             exit_path = excluded.exit_path, pageviews = excluded.pageviews, events = excluded.events",
        );
        n += q.execute(conn)?;
    }
    Ok(n)
}
