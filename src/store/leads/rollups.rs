//! Lead counters per cohort day and ad (`lead_rollups`), kept in the same
//! transaction as every lead write, and the grouped reads the reports make of
//! them. A report over whole UTC days reads only rollups; the partial days at
//! the edges of a range are read from the leads themselves, so every range is
//! exact to the millisecond.

use diesel::backend::Backend;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, HasSqlType, Text};

use crate::db::sql::{RawQuery, placeholders};
use crate::db::{AnyConnection, row};
use crate::store::leads::conditions::{self, Condition};

/// The key a lead is counted under: its cohort day and its place in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollupKey<'a> {
    pub site_id: &'a str,
    pub day: i64,
    pub origin: &'a str,
    pub campaign_id: &'a str,
    pub adset_id: &'a str,
    pub ad_id: &'a str,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delta {
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
}

impl Delta {
    pub fn is_zero(&self) -> bool {
        *self == Delta::default()
    }
}

/// The upsert every lead write runs (several times per recorded lead) as
/// fixed SQL with bind parameters and a static query id: each connection
/// prepares it once and keeps it in diesel's statement cache. A raw
/// `sql_query`, and diesel's own `on_conflict().do_update()`, are never cached
/// (diesel marks them unsafe to cache), so they were parsed and planned again on
/// every call. Both backends take the same `INSERT … ON CONFLICT … DO UPDATE`;
/// diesel writes the placeholders of the connection's dialect.
struct BumpUpsert<'a> {
    k: &'a RollupKey<'a>,
    d: Delta,
}

impl QueryId for BumpUpsert<'_> {
    type QueryId = BumpUpsert<'static>;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl<DB> QueryFragment<DB> for BumpUpsert<'_>
where
    DB: Backend + HasSqlType<Text> + HasSqlType<BigInt>,
    str: ToSql<Text, DB>,
    i64: ToSql<BigInt, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO lead_rollups (site_id, day, origin, campaign_id, adset_id, ad_id, leads, qualified, won, \
             revenue_cents) VALUES (",
        );
        out.push_bind_param::<Text, str>(self.k.site_id)?;
        out.push_sql(", ");
        out.push_bind_param::<BigInt, i64>(&self.k.day)?;
        for v in [self.k.origin, self.k.campaign_id, self.k.adset_id, self.k.ad_id] {
            out.push_sql(", ");
            out.push_bind_param::<Text, str>(v)?;
        }
        for v in [&self.d.leads, &self.d.qualified, &self.d.won, &self.d.revenue_cents] {
            out.push_sql(", ");
            out.push_bind_param::<BigInt, i64>(v)?;
        }
        out.push_sql(
            ") ON CONFLICT (site_id, day, origin, campaign_id, adset_id, ad_id) DO UPDATE SET \
             leads = lead_rollups.leads + excluded.leads, qualified = lead_rollups.qualified + excluded.qualified, \
             won = lead_rollups.won + excluded.won, revenue_cents = lead_rollups.revenue_cents + excluded.revenue_cents",
        );
        Ok(())
    }
}

impl RunQueryDsl<AnyConnection> for BumpUpsert<'_> {}

/// Adds `d` to the key's counters (creating the row), and drops a row left with no lead.
pub fn bump(conn: &mut AnyConnection, k: &RollupKey<'_>, d: Delta) -> QueryResult<()> {
    use crate::db::schema::lead_rollups::dsl as r;
    if d.is_zero() {
        return Ok(());
    }
    BumpUpsert { k, d }.execute(conn)?;
    if d.leads < 0 {
        diesel::delete(
            r::lead_rollups
                .filter(r::site_id.eq(k.site_id))
                .filter(r::day.eq(k.day))
                .filter(r::origin.eq(k.origin))
                .filter(r::campaign_id.eq(k.campaign_id))
                .filter(r::adset_id.eq(k.adset_id))
                .filter(r::ad_id.eq(k.ad_id))
                .filter(r::leads.le(0)),
        )
        .execute(conn)?;
    }
    Ok(())
}

crate::row! {
    struct Bumped<'a> in lead_rollups {
        site_id: &'a str,
        day: i64,
        origin: &'a str,
        campaign_id: &'a str,
        adset_id: &'a str,
        ad_id: &'a str,
        leads: i64,
        qualified: i64,
        won: i64,
        revenue_cents: i64,
    }
}

/// Adds new leads to many keys at once (recordLead's combined write): one
/// additive upsert per chunk of keys instead of a round trip per key. Each
/// key at most once (a statement may not change one row twice), counts only
/// positive, so no row is left empty.
pub fn add_leads(conn: &mut AnyConnection, counts: &[(RollupKey<'_>, i64)]) -> QueryResult<usize> {
    let rows: Vec<Bumped> = counts
        .iter()
        .map(|(k, leads)| Bumped {
            site_id: k.site_id,
            day: k.day,
            origin: k.origin,
            campaign_id: k.campaign_id,
            adset_id: k.adset_id,
            ad_id: k.ad_id,
            leads: *leads,
            qualified: 0,
            won: 0,
            revenue_cents: 0,
        })
        .collect();
    row::add::<Bumped, _>(conn, &rows, "site_id, day, origin, campaign_id, adset_id, ad_id", &["leads"])
}

crate::row! {
    struct Label<'a> in ad_labels {
        site_id: &'a str,
        level: &'a str,
        object_id: &'a str,
        name: &'a str,
        updated_at: i64,
    }
}

/// [`label`] for many sites' names at once: `(site, level, object id,
/// name)`, each (site, level, object id) at most once.
pub fn label_many(conn: &mut AnyConnection, labels: &[(&str, &str, &str, &str)], now: i64) -> QueryResult<usize> {
    let rows: Vec<Label> = labels
        .iter()
        .map(|&(site_id, level, object_id, name)| Label { site_id, level, object_id, name, updated_at: now })
        .collect();
    row::insert::<Label, _>(conn, &rows, KEEP_UNCHANGED_NAMES)
}

/// A name the row already holds is left alone: every recorded lead repeats
/// its ad's names, and rewriting an unchanged row cost three row writes per
/// lead (on PostgreSQL, three dead row versions for vacuum).
const KEEP_UNCHANGED_NAMES: &str = " ON CONFLICT (site_id, level, object_id) DO UPDATE SET name = excluded.name, \
     updated_at = excluded.updated_at WHERE ad_labels.name <> excluded.name";

/// Remembers the latest names a lead gave for its campaign, ad set and ad
/// (`(level, object id, name)`, each level once); `updated_at` is when a name
/// was first given.
pub fn label(conn: &mut AnyConnection, site_id: &str, labels: &[(&str, &str, &str)], now: i64) -> QueryResult<()> {
    let labels: Vec<(&str, &str, &str, &str)> =
        labels.iter().map(|&(level, object_id, name)| (site_id, level, object_id, name)).collect();
    label_many(conn, &labels, now)?;
    Ok(())
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct LabelRow {
        pub site_id: String,
        pub level: String,
        pub object_id: String,
        pub name: String,
    }
}

pub fn labels(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<LabelRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT site_id, level, object_id, name FROM ad_labels WHERE site_id IN {}",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids);
    q.load(conn)
}

/// What a grouped read selects: which leads, over which range, grouped how.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub site_ids: &'a [String],
    pub from: i64,
    pub to: i64,
    pub ad_id: Option<&'a str>,
    /// Only these origins (none: every origin).
    pub origins: &'a [&'a str],
    /// The report's filters (all must hold).
    pub conditions: &'a [Condition],
}

#[derive(Debug, Clone, Copy)]
pub enum Grouping {
    SiteOrigin,
    Tree,
    Day,
    /// Each lead's own arrival (`day` is its `first_at`), from the leads
    /// alone: for days the rollups' UTC days cannot make (a zone's local days).
    Arrival,
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct GroupRow {
        pub site_id: String,
        pub origin: String,
        pub campaign_id: String,
        pub adset_id: String,
        pub ad_id: String,
        pub day: i64,
        pub leads: i64,
        pub qualified: i64,
        pub won: i64,
        pub revenue_cents: i64,
    }
}

fn filters(q: &mut RawQuery, s: &Scope<'_>) {
    if let Some(ad) = s.ad_id {
        q.push(" AND ad_id = ?").text(ad);
    }
    if !s.origins.is_empty() {
        q.push(&format!(" AND origin IN {}", placeholders(s.origins.len()))).texts(s.origins);
    }
    conditions::push(q, s.conditions);
}

/// Counters of the scope's leads, grouped; at most `limit` groups.
pub fn grouped(
    conn: &mut AnyConnection,
    s: &Scope<'_>,
    g: Grouping,
    limit: Option<usize>,
) -> QueryResult<Vec<GroupRow>> {
    let sites = placeholders(s.site_ids.len());
    let mut q = RawQuery::new("SELECT ");
    // `inner`: how the rollup rows are summed before they meet the edge leads,
    // in an order an index already has (no sort of every rollup row of the range:
    // a year of ten sites is some 130,000 of them).
    let (cols, group, tree_only, inner) = match g {
        Grouping::SiteOrigin => (
            "site_id, origin, '' AS campaign_id, '' AS adset_id, '' AS ad_id, CAST(0 AS BIGINT) AS day",
            "site_id, origin",
            false,
            "site_id, origin, '' AS campaign_id, '' AS adset_id, '' AS ad_id, CAST(0 AS BIGINT) AS day",
        ),
        Grouping::Tree => (
            "site_id, '' AS origin, campaign_id, adset_id, ad_id, CAST(0 AS BIGINT) AS day",
            "campaign_id, adset_id, ad_id, site_id",
            true,
            "site_id, origin, campaign_id, adset_id, ad_id, CAST(0 AS BIGINT) AS day",
        ),
        Grouping::Day | Grouping::Arrival => (
            "'' AS site_id, '' AS origin, '' AS campaign_id, '' AS adset_id, '' AS ad_id, day",
            "day",
            false,
            "site_id, '' AS origin, '' AS campaign_id, '' AS adset_id, '' AS ad_id, day",
        ),
    };
    let inner_group = match g {
        Grouping::SiteOrigin => "site_id, origin",
        Grouping::Tree => "site_id, origin, campaign_id, adset_id, ad_id",
        Grouping::Day | Grouping::Arrival => "site_id, day",
    };
    let day = if matches!(g, Grouping::Arrival) { "first_at" } else { "cohort_day" };
    q.push(cols);
    q.push(
        ", CAST(SUM(leads) AS BIGINT) AS leads, CAST(SUM(qualified) AS BIGINT) AS qualified, \
         CAST(SUM(won) AS BIGINT) AS won, CAST(SUM(revenue_cents) AS BIGINT) AS revenue_cents FROM (",
    );
    // The leads of the partial days at the edges (the whole range when it holds
    // no whole UTC day), each edge a range of its own: one `first_at` range with
    // the whole days excluded by an OR made the index on (site_id, first_at)
    // walk every lead of the range.
    let (whole, edges) = crate::clock::utc_days_inside(s.from, s.to);
    // A condition on what only the leads hold (stage, column), or each lead's
    // own arrival, reads every lead of the range: the rollups cannot tell.
    let from_rows = !s.conditions.iter().all(|c| c.column.in_rollups()) || matches!(g, Grouping::Arrival);
    let (whole, edges) = if from_rows { (None, vec![(s.from, s.to)]) } else { (whole, edges) };
    let mut parts = 0;
    if let Some((start, end)) = whole {
        q.push(&format!(
            "SELECT {inner}, SUM(leads) AS leads, SUM(qualified) AS qualified, SUM(won) AS won, \
             SUM(revenue_cents) AS revenue_cents FROM lead_rollups WHERE site_id IN {sites} AND day >= ? AND day < ?"
        ));
        q.texts(s.site_ids).int(start).int(end);
        filters(&mut q, s);
        q.push(&format!(" GROUP BY {inner_group}"));
        parts += 1;
    }
    for (a, b) in edges {
        if parts > 0 {
            q.push(" UNION ALL ");
        }
        q.push(&format!(
            "SELECT site_id, origin, campaign_id, adset_id, ad_id, {day} AS day, 1 AS leads, \
             CASE WHEN ever_qualified THEN 1 ELSE 0 END AS qualified, CASE WHEN ever_won THEN 1 ELSE 0 END AS won, \
             revenue_cents FROM leads WHERE site_id IN {sites} AND first_at >= ? AND first_at <= ?"
        ));
        q.texts(s.site_ids).int(a).int(b);
        filters(&mut q, s);
        parts += 1;
    }
    q.push(") src");
    if tree_only {
        q.push(" WHERE campaign_id <> '' OR adset_id <> '' OR ad_id <> ''");
    }
    q.push(&format!(" GROUP BY {group} ORDER BY {group}"));
    if let Some(n) = limit {
        q.push(&format!(" LIMIT {n}"));
    }
    q.load(conn)
}
