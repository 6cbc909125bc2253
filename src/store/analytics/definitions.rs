//! A site's goals, funnels and affiliates (CFG-04 to CFG-11). Removed goals
//! and affiliates keep their rows (`removed_at`), so the rollups and frozen
//! commissions they wrote keep a key, a name and a slug.

use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use diesel::{QueryResult, QueryableByName};

use crate::db::AnyConnection;
use crate::db::sql::RawQuery;

#[derive(Debug, Clone, QueryableByName)]
pub struct GoalRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub key: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub matcher_kind: String,
    #[diesel(sql_type = Text)]
    pub matcher_value: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub value_cents: Option<i64>,
    #[diesel(sql_type = Bool)]
    pub active: bool,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub updated_at: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub removed_at: Option<i64>,
}

const GOAL_COLUMNS: &str =
    "id, site_id, key, name, matcher_kind, matcher_value, value_cents, active, created_at, updated_at, removed_at";

/// A site's rows of a definitions table that keeps removed rows
/// (`removed_at`), those included when `with_removed`.
fn of_site<T: QueryableByName<<AnyConnection as diesel::Connection>::Backend> + 'static>(
    conn: &mut AnyConnection,
    table: &str,
    columns: &str,
    site_id: &str,
    with_removed: bool,
) -> QueryResult<Vec<T>> {
    let live = if with_removed { "" } else { " AND removed_at IS NULL" };
    let mut q = RawQuery::prepared(format!("SELECT {columns} FROM {table} WHERE site_id = ?{live}"));
    q.text(site_id);
    q.load(conn)
}

/// The site's goals, removed ones included when `with_removed`.
pub fn goals(conn: &mut AnyConnection, site_id: &str, with_removed: bool) -> QueryResult<Vec<GoalRow>> {
    of_site(conn, "web_goals", GOAL_COLUMNS, site_id, with_removed)
}

/// The goals acceptance decides completions against (rule ARPT-10).
pub fn active_goals(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<GoalRow>> {
    let mut q = RawQuery::prepared(format!(
        "SELECT {GOAL_COLUMNS} FROM web_goals WHERE site_id = ? AND removed_at IS NULL AND active = ?"
    ));
    q.text(site_id).boolean(true);
    q.load(conn)
}

pub fn insert_goal(conn: &mut AnyConnection, g: &GoalRow) -> QueryResult<usize> {
    let mut q =
        RawQuery::new(format!("INSERT INTO web_goals ({GOAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    q.text(&g.id)
        .text(&g.site_id)
        .text(&g.key)
        .text(&g.name)
        .text(&g.matcher_kind)
        .text(&g.matcher_value)
        .opt_int(g.value_cents)
        .boolean(g.active)
        .int(g.created_at)
        .int(g.updated_at)
        .opt_int(g.removed_at);
    q.execute(conn)
}

pub fn update_goal(conn: &mut AnyConnection, g: &GoalRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_goals SET key = ?, name = ?, matcher_kind = ?, matcher_value = ?, value_cents = ?, active = ?, \
         updated_at = ? WHERE id = ? AND site_id = ? AND removed_at IS NULL",
    );
    q.text(&g.key)
        .text(&g.name)
        .text(&g.matcher_kind)
        .text(&g.matcher_value)
        .opt_int(g.value_cents)
        .boolean(g.active)
        .int(g.updated_at)
        .text(&g.id)
        .text(&g.site_id);
    q.execute(conn)
}

pub fn remove_goal(conn: &mut AnyConnection, site_id: &str, goal_id: &str, now: i64) -> QueryResult<usize> {
    let mut q =
        RawQuery::new("UPDATE web_goals SET removed_at = ? WHERE id = ? AND site_id = ? AND removed_at IS NULL");
    q.int(now).text(goal_id).text(site_id);
    q.execute(conn)
}

#[derive(Debug, Clone, QueryableByName)]
pub struct FunnelRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub key: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = BigInt)]
    pub window_ms: i64,
    /// JSON: `[{label, matcher}]`.
    #[diesel(sql_type = Text)]
    pub steps: String,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub updated_at: i64,
}

const FUNNEL_COLUMNS: &str = "id, site_id, key, name, window_ms, steps, created_at, updated_at";

pub fn funnels(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<FunnelRow>> {
    let mut q = RawQuery::prepared(format!("SELECT {FUNNEL_COLUMNS} FROM web_funnels WHERE site_id = ?"));
    q.text(site_id);
    q.load(conn)
}

pub fn insert_funnel(conn: &mut AnyConnection, f: &FunnelRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(format!("INSERT INTO web_funnels ({FUNNEL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    q.text(&f.id)
        .text(&f.site_id)
        .text(&f.key)
        .text(&f.name)
        .int(f.window_ms)
        .text(&f.steps)
        .int(f.created_at)
        .int(f.updated_at);
    q.execute(conn)
}

pub fn update_funnel(conn: &mut AnyConnection, f: &FunnelRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_funnels SET key = ?, name = ?, window_ms = ?, steps = ?, updated_at = ? WHERE id = ? AND site_id = ?",
    );
    q.text(&f.key).text(&f.name).int(f.window_ms).text(&f.steps).int(f.updated_at).text(&f.id).text(&f.site_id);
    q.execute(conn)
}

pub fn remove_funnel(conn: &mut AnyConnection, site_id: &str, funnel_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_funnels WHERE id = ? AND site_id = ?");
    q.text(funnel_id).text(site_id);
    q.execute(conn)
}

#[derive(Debug, Clone, QueryableByName)]
pub struct AffiliateRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub slug: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = BigInt)]
    pub commission_bps: i64,
    #[diesel(sql_type = BigInt)]
    pub window_days: i64,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub updated_at: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub removed_at: Option<i64>,
}

const AFFILIATE_COLUMNS: &str =
    "id, site_id, slug, name, commission_bps, window_days, created_at, updated_at, removed_at";

/// The site's affiliates, removed ones included when `with_removed`.
pub fn affiliates(conn: &mut AnyConnection, site_id: &str, with_removed: bool) -> QueryResult<Vec<AffiliateRow>> {
    of_site(conn, "web_affiliates", AFFILIATE_COLUMNS, site_id, with_removed)
}

/// The existing affiliate a landing `ref` names (rule SES-15).
pub fn affiliate_by_slug(conn: &mut AnyConnection, site_id: &str, slug: &str) -> QueryResult<Option<AffiliateRow>> {
    let mut q = RawQuery::prepared(format!(
        "SELECT {AFFILIATE_COLUMNS} FROM web_affiliates WHERE site_id = ? AND slug = ? AND removed_at IS NULL"
    ));
    q.text(site_id).text(slug);
    Ok(q.load(conn)?.into_iter().next())
}

pub fn affiliate(conn: &mut AnyConnection, affiliate_id: &str) -> QueryResult<Option<AffiliateRow>> {
    let mut q = RawQuery::prepared(format!("SELECT {AFFILIATE_COLUMNS} FROM web_affiliates WHERE id = ?"));
    q.text(affiliate_id);
    Ok(q.load(conn)?.into_iter().next())
}

pub fn insert_affiliate(conn: &mut AnyConnection, a: &AffiliateRow) -> QueryResult<usize> {
    let mut q =
        RawQuery::new(format!("INSERT INTO web_affiliates ({AFFILIATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    q.text(&a.id)
        .text(&a.site_id)
        .text(&a.slug)
        .text(&a.name)
        .int(a.commission_bps)
        .int(a.window_days)
        .int(a.created_at)
        .int(a.updated_at)
        .opt_int(a.removed_at);
    q.execute(conn)
}

pub fn update_affiliate(conn: &mut AnyConnection, a: &AffiliateRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_affiliates SET slug = ?, name = ?, commission_bps = ?, window_days = ?, updated_at = ? \
         WHERE id = ? AND site_id = ? AND removed_at IS NULL",
    );
    q.text(&a.slug)
        .text(&a.name)
        .int(a.commission_bps)
        .int(a.window_days)
        .int(a.updated_at)
        .text(&a.id)
        .text(&a.site_id);
    q.execute(conn)
}

pub fn remove_affiliate(conn: &mut AnyConnection, site_id: &str, affiliate_id: &str, now: i64) -> QueryResult<usize> {
    let mut q =
        RawQuery::new("UPDATE web_affiliates SET removed_at = ? WHERE id = ? AND site_id = ? AND removed_at IS NULL");
    q.int(now).text(affiliate_id).text(site_id);
    q.execute(conn)
}
