//! Queries on `leads` and their history `lead_events`.

pub mod board;
pub mod conditions;
pub mod many;
pub mod rollups;
pub mod sites;
pub mod visits;

use std::collections::HashMap;

use diesel::backend::Backend;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};

use crate::db::AnyConnection;
use crate::db::schema::{lead_events, leads};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = leads)]
#[diesel(treat_none_as_default_value = false)]
pub struct LeadRow {
    pub id: String,
    pub site_id: String,
    pub lead_key: String,
    pub label: Option<String>,
    pub origin: String,
    pub campaign_id: String,
    pub adset_id: String,
    pub ad_id: String,
    pub campaign_name: Option<String>,
    pub adset_name: Option<String>,
    pub ad_name: Option<String>,
    pub click_id: Option<String>,
    pub first_at: i64,
    pub cohort_day: i64,
    pub stage: String,
    pub stage_at: i64,
    pub ever_qualified: bool,
    pub ever_won: bool,
    pub revenue_cents: i64,
    pub won_at: Option<i64>,
    pub column_key: Option<String>,
    pub column_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = lead_events)]
pub struct LeadEventRow {
    pub event_id: String,
    pub stage: Option<String>,
    pub column_key: Option<String>,
    pub revenue_cents: Option<i64>,
    pub occurred_at: i64,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = lead_events)]
#[diesel(treat_none_as_default_value = false)]
pub struct NewLeadEvent<'a> {
    pub lead_id: &'a str,
    pub site_id: &'a str,
    pub event_id: &'a str,
    pub stage: Option<&'a str>,
    pub column_key: Option<&'a str>,
    pub revenue_cents: Option<i64>,
    pub occurred_at: i64,
    pub recorded_at: i64,
}

/// `<insert> ON CONFLICT (site_id, lead_key) DO NOTHING`, keeping the insert's
/// static query id (diesel's own `on_conflict` is never cached).
struct IfNewKey<Q>(Q);

impl<Q: QueryId> QueryId for IfNewKey<Q> {
    type QueryId = IfNewKey<Q::QueryId>;
    const HAS_STATIC_QUERY_ID: bool = Q::HAS_STATIC_QUERY_ID;
}

impl<DB: Backend, Q: QueryFragment<DB>> QueryFragment<DB> for IfNewKey<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.0.walk_ast(out.reborrow())?;
        out.push_sql(" ON CONFLICT (site_id, lead_key) DO NOTHING");
        Ok(())
    }
}

impl<Q> RunQueryDsl<AnyConnection> for IfNewKey<Q> {}

/// Inserts a lead whose key the site does not have yet, in one statement;
/// false (nothing written) when the site already has a lead under that key.
pub fn insert_if_new(conn: &mut AnyConnection, row: &LeadRow) -> QueryResult<bool> {
    Ok(IfNewKey(diesel::insert_into(leads::table).values(row)).execute(conn)? == 1)
}

/// Finds a lead by the host's key and, on PostgreSQL, locks its row for the rest
/// of the transaction (a no-op write takes the row lock on both backends), so
/// two processes never apply changes to one lead from a stale read.
pub fn lock_by_key(conn: &mut AnyConnection, site_id: &str, lead_key: &str) -> QueryResult<Option<LeadRow>> {
    let n = diesel::update(leads::table.filter(leads::site_id.eq(site_id)).filter(leads::lead_key.eq(lead_key)))
        .set(leads::updated_at.eq(leads::updated_at))
        .execute(conn)?;
    if n == 0 {
        return Ok(None);
    }
    leads::table
        .filter(leads::site_id.eq(site_id))
        .filter(leads::lead_key.eq(lead_key))
        .select(LeadRow::as_select())
        .get_result(conn)
        .optional()
}

pub fn find(conn: &mut AnyConnection, site_id: &str, lead_id: &str) -> QueryResult<Option<LeadRow>> {
    leads::table
        .filter(leads::site_id.eq(site_id))
        .filter(leads::id.eq(lead_id))
        .select(LeadRow::as_select())
        .get_result(conn)
        .optional()
}

pub fn save(conn: &mut AnyConnection, row: &LeadRow) -> QueryResult<()> {
    diesel::update(leads::table.find(&row.id))
        .set((
            leads::label.eq(&row.label),
            leads::campaign_name.eq(&row.campaign_name),
            leads::adset_name.eq(&row.adset_name),
            leads::ad_name.eq(&row.ad_name),
            leads::click_id.eq(&row.click_id),
            leads::stage.eq(&row.stage),
            leads::stage_at.eq(row.stage_at),
            leads::ever_qualified.eq(row.ever_qualified),
            leads::ever_won.eq(row.ever_won),
            leads::revenue_cents.eq(row.revenue_cents),
            leads::won_at.eq(row.won_at),
            leads::column_key.eq(&row.column_key),
            leads::column_at.eq(row.column_at),
            leads::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .map(|_| ())
}

pub fn delete(conn: &mut AnyConnection, lead_id: &str) -> QueryResult<()> {
    diesel::delete(lead_events::table.filter(lead_events::lead_id.eq(lead_id))).execute(conn)?;
    diesel::delete(leads::table.find(lead_id)).execute(conn).map(|_| ())
}

/// For each `(site, lead key, event id)`, the id of the site's lead under
/// that key when it already holds that event: a repeat that changes nothing.
/// One read (no lock) per 300 calls, in the calls' order.
pub fn repeats_of(conn: &mut AnyConnection, calls: &[(&str, &str, &str)]) -> QueryResult<Vec<Option<String>>> {
    let mut found: HashMap<(String, String, String), String> = HashMap::new();
    for chunk in calls.chunks(300) {
        let (mut sites, mut keys, mut events): (Vec<&str>, Vec<&str>, Vec<&str>) = (
            chunk.iter().map(|c| c.0).collect(),
            chunk.iter().map(|c| c.1).collect(),
            chunk.iter().map(|c| c.2).collect(),
        );
        for v in [&mut sites, &mut keys, &mut events] {
            v.sort_unstable();
            v.dedup();
        }
        // A superset (each column's values apart), narrowed to the exact calls below.
        let rows: Vec<(String, String, String, String)> = leads::table
            .inner_join(lead_events::table.on(lead_events::lead_id.eq(leads::id)))
            .filter(leads::site_id.eq_any(&sites))
            .filter(leads::lead_key.eq_any(&keys))
            .filter(lead_events::event_id.eq_any(&events))
            .select((leads::site_id, leads::lead_key, lead_events::event_id, leads::id))
            .load(conn)?;
        found.extend(rows.into_iter().map(|(s, k, e, id)| ((s, k, e), id)));
    }
    Ok(calls.iter().map(|&(s, k, e)| found.get(&(s.to_owned(), k.to_owned(), e.to_owned())).cloned()).collect())
}

pub fn event_seen(conn: &mut AnyConnection, lead_id: &str, event_id: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        lead_events::table.filter(lead_events::lead_id.eq(lead_id)).filter(lead_events::event_id.eq(event_id)),
    ))
    .get_result(conn)
}

pub fn insert_event(conn: &mut AnyConnection, ev: NewLeadEvent<'_>) -> QueryResult<()> {
    diesel::insert_into(lead_events::table).values(ev).execute(conn).map(|_| ())
}

pub fn history(conn: &mut AnyConnection, lead_id: &str) -> QueryResult<Vec<LeadEventRow>> {
    lead_events::table
        .filter(lead_events::lead_id.eq(lead_id))
        .order((lead_events::occurred_at.asc(), lead_events::id.asc()))
        .select(LeadEventRow::as_select())
        .load(conn)
}

/// One page of `listLeads`: newest first, strictly before the cursor.
pub struct ListFilter<'a> {
    pub site_ids: &'a [String],
    pub from: i64,
    pub to: i64,
    pub ad_id: Option<&'a str>,
    pub before: Option<(i64, Option<&'a str>)>,
    pub limit: i64,
    /// The reports' filters on the leads' columns (all must hold).
    pub conditions: &'a [conditions::Condition],
}

pub fn list(conn: &mut AnyConnection, f: &ListFilter<'_>) -> QueryResult<Vec<LeadRow>> {
    if !f.conditions.is_empty() {
        return list_filtered(conn, f);
    }
    let mut q = leads::table
        .filter(leads::site_id.eq_any(f.site_ids))
        .filter(leads::first_at.ge(f.from))
        .filter(leads::first_at.le(f.to))
        .select(LeadRow::as_select())
        .into_boxed();
    if let Some(ad) = f.ad_id {
        q = q.filter(leads::ad_id.eq(ad.to_string()));
    }
    match f.before {
        Some((at, None)) => q = q.filter(leads::first_at.lt(at)),
        Some((at, Some(id))) => {
            let id = id.to_string();
            // `first_at <= at` first, as a bound of its own: the index on
            // (site_id, first_at) then starts at the cursor instead of walking
            // every newer lead again on each page (a million-lead export slowed
            // down page after page with the plain OR).
            q = q.filter(leads::first_at.le(at)).filter(leads::first_at.lt(at).or(leads::id.lt(id)));
        }
        None => {}
    }
    q.order((leads::first_at.desc(), leads::id.desc())).limit(f.limit).load(conn)
}

/// `list` with conditions: the page's ids by SQL written here (the conditions
/// are SQL text), then the rows by id, in the same order.
fn list_filtered(conn: &mut AnyConnection, f: &ListFilter<'_>) -> QueryResult<Vec<LeadRow>> {
    crate::row! {
        struct Id {
            id: String,
        }
    }
    let mut q = crate::db::sql::RawQuery::new(format!(
        "SELECT id FROM leads WHERE site_id IN {} AND first_at >= ? AND first_at <= ?",
        crate::db::sql::placeholders(f.site_ids.len())
    ));
    q.texts(f.site_ids).int(f.from).int(f.to);
    if let Some(ad) = f.ad_id {
        q.push(" AND ad_id = ?").text(ad);
    }
    match f.before {
        Some((at, None)) => {
            q.push(" AND first_at < ?").int(at);
        }
        Some((at, Some(id))) => {
            q.push(" AND first_at <= ? AND (first_at < ? OR id < ?)").int(at).int(at).text(id);
        }
        None => {}
    }
    conditions::push(&mut q, f.conditions);
    q.push(&format!(" ORDER BY first_at DESC, id DESC LIMIT {}", f.limit.max(0)));
    let ids: Vec<String> = q.load::<Id>(conn)?.into_iter().map(|r| r.id).collect();
    let mut rows: Vec<LeadRow> = leads::table.filter(leads::id.eq_any(&ids)).select(LeadRow::as_select()).load(conn)?;
    rows.sort_by(|a, b| b.first_at.cmp(&a.first_at).then_with(|| b.id.cmp(&a.id)));
    Ok(rows)
}

/// Distinct leads that entered each column in `[from, to]`.
pub fn column_entries(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<(String, i64)>> {
    crate::row! {
        struct Row {
            column_key: String,
            n: i64,
        }
    }
    let mut q = crate::db::sql::RawQuery::new(
        "SELECT column_key, CAST(COUNT(DISTINCT lead_id) AS BIGINT) AS n FROM lead_events \
         WHERE site_id = ? AND column_key IS NOT NULL AND occurred_at >= ? AND occurred_at <= ? GROUP BY column_key",
    );
    q.text(site_id).int(from).int(to);
    Ok(q.load::<Row>(conn)?.into_iter().map(|r| (r.column_key, r.n)).collect())
}
