//! The trusted conversion ledger (CONV-01 to CONV-07) and the affiliate day
//! counters (ARPT-16).

use diesel::QueryResult;
use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::row;
use crate::db::row::Row;
use crate::db::sql::RawQuery;

crate::row! {
    #[derive(Debug, Clone)]
    pub struct ConversionRow in web_conversions {
        pub id: String,
        pub site_id: String,
        pub conversion_key: String,
        pub name: String,
        pub occurred_at: i64,
        pub value_cents: i64,
        pub currency: String,
        pub visitor_id: Option<String>,
        pub session_id: Option<String>,
        pub affiliate_id: Option<String>,
        pub commission_cents: i64,
        pub properties: Option<String>,
        pub created_at: i64,
    }
}

pub fn by_key(conn: &mut AnyConnection, site_id: &str, key: &str) -> QueryResult<Option<ConversionRow>> {
    use crate::db::schema::web_conversions as c;
    c::table
        .filter(c::site_id.eq(site_id))
        .filter(c::conversion_key.eq(key))
        .select(ConversionRow::as_select())
        .first(conn)
        .optional()
}

pub fn insert(conn: &mut AnyConnection, r: &ConversionRow) -> QueryResult<usize> {
    crate::db::row::insert::<ConversionRow, _>(conn, std::slice::from_ref(r), "")
}

/// A page of the site's conversions with `occurred_at` in `[from, to]`,
/// `occurred_at` desc, id desc, after `before` (rule ARPT-06).
pub fn page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    before: Option<(i64, String)>,
    limit: usize,
) -> QueryResult<Vec<ConversionRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_conversions WHERE site_id = ? AND occurred_at >= ? AND occurred_at <= ?",
        cols = ConversionRow::select_list()
    ));
    q.text(site_id).int(from).int(to);
    if let Some((t, id)) = before {
        q.push(" AND (occurred_at < ? OR (occurred_at = ? AND id < ?))").int(t).int(t).text(id);
    }
    q.push(" ORDER BY occurred_at DESC, id DESC LIMIT ?").int(limit as i64);
    q.load(conn)
}

crate::row! {
    /// Conversions, revenue and commission in sums.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Money {
        pub conversions: i64,
        pub revenue_cents: i64,
        pub commission_cents: i64,
    }
}

impl Money {
    pub fn add(&mut self, o: &Money) {
        self.conversions += o.conversions;
        self.revenue_cents += o.revenue_cents;
        self.commission_cents += o.commission_cents;
    }
}

/// The ledger rows with `occurred_at` in `[from, to)` summed (a partial hour).
pub fn sum_between(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Money> {
    let mut q = RawQuery::prepared(
        "SELECT CAST(COUNT(*) AS BIGINT) AS conversions, CAST(COALESCE(SUM(value_cents), 0) AS BIGINT) AS revenue_cents, \
         CAST(COALESCE(SUM(commission_cents), 0) AS BIGINT) AS commission_cents \
         FROM web_conversions WHERE site_id = ? AND occurred_at >= ? AND occurred_at < ?",
    );
    q.text(site_id).int(from).int(to);
    Ok(q.load(conn)?.into_iter().next().unwrap_or_default())
}

/// The counters of one tier's buckets in `[from, to)` summed.
pub fn counters_between(conn: &mut AnyConnection, site_id: &str, tier: &str, from: i64, to: i64) -> QueryResult<Money> {
    let mut q = RawQuery::prepared(
        "SELECT CAST(COALESCE(SUM(conversions), 0) AS BIGINT) AS conversions, \
         CAST(COALESCE(SUM(revenue_cents), 0) AS BIGINT) AS revenue_cents, \
         CAST(COALESCE(SUM(commission_cents), 0) AS BIGINT) AS commission_cents \
         FROM web_counters WHERE site_id = ? AND tier = ? AND bucket >= ? AND bucket < ?",
    );
    q.text(site_id).text(tier).int(from).int(to);
    Ok(q.load(conn)?.into_iter().next().unwrap_or_default())
}

/// A conversion's effect on one (site, tier, bucket)'s counters.
pub fn add_counter(conn: &mut AnyConnection, site_id: &str, tier: &str, bucket: i64, m: &Money) -> QueryResult<usize> {
    crate::row! {
        struct Added<'a> in web_counters {
            site_id: &'a str,
            tier: &'a str,
            bucket: i64,
            conversions: i64,
            revenue_cents: i64,
            commission_cents: i64,
        }
    }
    let (conversions, revenue_cents, commission_cents) = (m.conversions, m.revenue_cents, m.commission_cents);
    let row = Added { site_id, tier, bucket, conversions, revenue_cents, commission_cents };
    row::add::<Added<'_>, _>(
        conn,
        &[row],
        "site_id, tier, bucket",
        &["conversions", "revenue_cents", "commission_cents"],
    )
}

/// The attributed session's `conversions` and `revenueCents`.
pub fn add_to_session(conn: &mut AnyConnection, session_id: &str, value_cents: i64) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_sessions SET conversions = conversions + 1, revenue_cents = revenue_cents + ? WHERE id = ?",
    );
    q.int(value_cents).text(session_id);
    q.execute(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct TaggedSession in web_sessions {
        pub id: String,
        pub visitor_id: String,
        pub started_at: i64,
        pub affiliate_id: Option<String>,
    }
}

/// The visitors' sessions on the site started in `[from, to]`, newest first
/// (attribution, §4.2), `limit` at most.
pub fn sessions_of_visitors(
    conn: &mut AnyConnection,
    site_id: &str,
    visitor_ids: &[String],
    from: i64,
    to: i64,
    tagged_only: bool,
    limit: usize,
) -> QueryResult<Vec<TaggedSession>> {
    if visitor_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT id, visitor_id, started_at, affiliate_id FROM web_sessions WHERE site_id = ? AND visitor_id IN {} \
         AND started_at >= ? AND started_at <= ?",
        crate::db::sql::placeholders(visitor_ids.len())
    ));
    q.text(site_id).texts(visitor_ids).int(from).int(to);
    if tagged_only {
        q.push(" AND affiliate_id IS NOT NULL");
    }
    q.push(" ORDER BY started_at DESC, id DESC LIMIT ?").int(limit as i64);
    q.load(conn)
}

crate::row! {
    /// Additions to one (site, day, affiliate)'s counters.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct AffiliateDay {
        pub sessions: i64,
        pub conversions: i64,
        pub revenue_cents: i64,
        pub commission_cents: i64,
    }
}

pub fn add_affiliate_day(
    conn: &mut AnyConnection,
    site_id: &str,
    day: i64,
    affiliate_id: &str,
    a: &AffiliateDay,
) -> QueryResult<usize> {
    crate::row! {
        struct Added<'a> in web_affiliate_days {
            site_id: &'a str,
            day: i64,
            affiliate_id: &'a str,
            sessions: i64,
            conversions: i64,
            revenue_cents: i64,
            commission_cents: i64,
        }
    }
    let (sessions, conversions, revenue_cents, commission_cents) =
        (a.sessions, a.conversions, a.revenue_cents, a.commission_cents);
    let row = Added { site_id, day, affiliate_id, sessions, conversions, revenue_cents, commission_cents };
    let sums = ["sessions", "conversions", "revenue_cents", "commission_cents"];
    row::add::<Added<'_>, _>(conn, &[row], "site_id, day, affiliate_id", &sums)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct AffiliateSum in web_affiliate_days {
        pub affiliate_id: String,
        pub sessions: i64,
        pub conversions: i64,
        pub revenue_cents: i64,
        pub commission_cents: i64,
    }
}

/// What `affiliate_sums` holds, for a range `[from, to)` of any instants,
/// from the rows themselves: sessions by their start, the ledger by its time.
pub fn affiliate_sums_of_rows(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
) -> QueryResult<Vec<AffiliateSum>> {
    let mut q = RawQuery::prepared(
        "SELECT affiliate_id, CAST(SUM(sessions) AS BIGINT) AS sessions, CAST(SUM(conversions) AS BIGINT) AS conversions, \
         CAST(SUM(revenue_cents) AS BIGINT) AS revenue_cents, CAST(SUM(commission_cents) AS BIGINT) AS commission_cents \
         FROM (SELECT affiliate_id, 1 AS sessions, 0 AS conversions, 0 AS revenue_cents, 0 AS commission_cents \
         FROM web_sessions WHERE site_id = ? AND started_at >= ? AND started_at < ? AND affiliate_id IS NOT NULL \
         UNION ALL SELECT affiliate_id, 0, 1, value_cents, commission_cents FROM web_conversions \
         WHERE site_id = ? AND occurred_at >= ? AND occurred_at < ? AND affiliate_id IS NOT NULL) src GROUP BY affiliate_id",
    );
    q.text(site_id).int(from).int(to).text(site_id).int(from).int(to);
    q.load(conn)
}

/// The affiliate day counters of `[from, to)` summed per affiliate.
pub fn affiliate_sums(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<AffiliateSum>> {
    let mut q = RawQuery::prepared(
        "SELECT affiliate_id, CAST(SUM(sessions) AS BIGINT) AS sessions, CAST(SUM(conversions) AS BIGINT) AS conversions, \
         CAST(SUM(revenue_cents) AS BIGINT) AS revenue_cents, CAST(SUM(commission_cents) AS BIGINT) AS commission_cents \
         FROM web_affiliate_days WHERE site_id = ? AND day >= ? AND day < ? GROUP BY affiliate_id",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}
