//! A site's goals, funnels and affiliates (CFG-04 to CFG-11). Removed goals
//! and affiliates keep their rows (`removed_at`), so the rollups and frozen
//! commissions they wrote keep a key, a name and a slug. Plain reads and
//! writes, so the query builder over the tables of `db::schema`.

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::{web_affiliates, web_funnels, web_goals};

/// A goal's row.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_goals)]
pub struct GoalRow {
    pub id: String,
    pub site_id: String,
    pub key: String,
    pub name: String,
    pub matcher_kind: String,
    pub matcher_value: String,
    pub value_cents: Option<i64>,
    pub active: bool,
    pub created_at: i64,
    pub updated_at: i64,
    pub removed_at: Option<i64>,
}

/// The site's goals, removed ones included when `with_removed`.
pub fn goals(conn: &mut AnyConnection, site_id: &str, with_removed: bool) -> QueryResult<Vec<GoalRow>> {
    let mut q = web_goals::table.filter(web_goals::site_id.eq(site_id)).into_boxed();
    if !with_removed {
        q = q.filter(web_goals::removed_at.is_null());
    }
    q.select(GoalRow::as_select()).load(conn)
}

/// The goals acceptance decides completions against (rule ARPT-10).
pub fn active_goals(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<GoalRow>> {
    web_goals::table
        .filter(web_goals::site_id.eq(site_id))
        .filter(web_goals::removed_at.is_null())
        .filter(web_goals::active.eq(true))
        .select(GoalRow::as_select())
        .load(conn)
}

pub fn insert_goal(conn: &mut AnyConnection, g: &GoalRow) -> QueryResult<usize> {
    diesel::insert_into(web_goals::table).values(g.clone()).execute(conn)
}

/// Updates a live goal's fields (its site and creation stay).
pub fn update_goal(conn: &mut AnyConnection, g: &GoalRow) -> QueryResult<usize> {
    diesel::update(
        web_goals::table
            .filter(web_goals::id.eq(&g.id))
            .filter(web_goals::site_id.eq(&g.site_id))
            .filter(web_goals::removed_at.is_null()),
    )
    .set((
        web_goals::key.eq(&g.key),
        web_goals::name.eq(&g.name),
        web_goals::matcher_kind.eq(&g.matcher_kind),
        web_goals::matcher_value.eq(&g.matcher_value),
        web_goals::value_cents.eq(g.value_cents),
        web_goals::active.eq(g.active),
        web_goals::updated_at.eq(g.updated_at),
    ))
    .execute(conn)
}

pub fn remove_goal(conn: &mut AnyConnection, site_id: &str, goal_id: &str, now: i64) -> QueryResult<usize> {
    diesel::update(
        web_goals::table
            .filter(web_goals::id.eq(goal_id))
            .filter(web_goals::site_id.eq(site_id))
            .filter(web_goals::removed_at.is_null()),
    )
    .set(web_goals::removed_at.eq(now))
    .execute(conn)
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_funnels)]
pub struct FunnelRow {
    pub id: String,
    pub site_id: String,
    pub key: String,
    pub name: String,
    pub window_ms: i64,
    /// JSON: `[{label, matcher}]`.
    pub steps: String,
    pub created_at: i64,
    pub updated_at: i64,
}

pub fn funnels(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<FunnelRow>> {
    web_funnels::table.filter(web_funnels::site_id.eq(site_id)).select(FunnelRow::as_select()).load(conn)
}

/// The funnels of several sites, with one read.
pub fn funnels_of_sites(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<FunnelRow>> {
    web_funnels::table.filter(web_funnels::site_id.eq_any(site_ids)).select(FunnelRow::as_select()).load(conn)
}

pub fn insert_funnel(conn: &mut AnyConnection, f: &FunnelRow) -> QueryResult<usize> {
    diesel::insert_into(web_funnels::table).values(f.clone()).execute(conn)
}

pub fn update_funnel(conn: &mut AnyConnection, f: &FunnelRow) -> QueryResult<usize> {
    diesel::update(web_funnels::table.filter(web_funnels::id.eq(&f.id)).filter(web_funnels::site_id.eq(&f.site_id)))
        .set((
            web_funnels::key.eq(&f.key),
            web_funnels::name.eq(&f.name),
            web_funnels::window_ms.eq(f.window_ms),
            web_funnels::steps.eq(&f.steps),
            web_funnels::updated_at.eq(f.updated_at),
        ))
        .execute(conn)
}

pub fn remove_funnel(conn: &mut AnyConnection, site_id: &str, funnel_id: &str) -> QueryResult<usize> {
    diesel::delete(web_funnels::table.filter(web_funnels::id.eq(funnel_id)).filter(web_funnels::site_id.eq(site_id)))
        .execute(conn)
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_affiliates)]
pub struct AffiliateRow {
    pub id: String,
    pub site_id: String,
    pub slug: String,
    pub name: String,
    pub commission_bps: i64,
    pub window_days: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub removed_at: Option<i64>,
    /// A paused affiliate tags no new landing (migration 22).
    pub active: bool,
}

/// The site's affiliates, removed ones included when `with_removed`.
pub fn affiliates(conn: &mut AnyConnection, site_id: &str, with_removed: bool) -> QueryResult<Vec<AffiliateRow>> {
    let mut q = web_affiliates::table.filter(web_affiliates::site_id.eq(site_id)).into_boxed();
    if !with_removed {
        q = q.filter(web_affiliates::removed_at.is_null());
    }
    q.select(AffiliateRow::as_select()).load(conn)
}

/// The existing, unpaused affiliate a landing `ref` names (rule SES-15).
pub fn affiliate_by_slug(conn: &mut AnyConnection, site_id: &str, slug: &str) -> QueryResult<Option<AffiliateRow>> {
    web_affiliates::table
        .filter(web_affiliates::site_id.eq(site_id))
        .filter(web_affiliates::slug.eq(slug))
        .filter(web_affiliates::removed_at.is_null())
        .filter(web_affiliates::active.eq(true))
        .select(AffiliateRow::as_select())
        .first(conn)
        .optional()
}

pub fn affiliate(conn: &mut AnyConnection, affiliate_id: &str) -> QueryResult<Option<AffiliateRow>> {
    web_affiliates::table.find(affiliate_id).select(AffiliateRow::as_select()).first(conn).optional()
}

/// The affiliates of these ids that exist (removed ones too), in one read.
pub fn affiliates_by_id(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<AffiliateRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    web_affiliates::table.filter(web_affiliates::id.eq_any(ids)).select(AffiliateRow::as_select()).load(conn)
}

pub fn insert_affiliate(conn: &mut AnyConnection, a: &AffiliateRow) -> QueryResult<usize> {
    diesel::insert_into(web_affiliates::table).values(a.clone()).execute(conn)
}

/// Updates a live affiliate's fields (its site and creation stay).
pub fn update_affiliate(conn: &mut AnyConnection, a: &AffiliateRow) -> QueryResult<usize> {
    diesel::update(
        web_affiliates::table
            .filter(web_affiliates::id.eq(&a.id))
            .filter(web_affiliates::site_id.eq(&a.site_id))
            .filter(web_affiliates::removed_at.is_null()),
    )
    .set((
        web_affiliates::slug.eq(&a.slug),
        web_affiliates::name.eq(&a.name),
        web_affiliates::commission_bps.eq(a.commission_bps),
        web_affiliates::window_days.eq(a.window_days),
        web_affiliates::active.eq(a.active),
        web_affiliates::updated_at.eq(a.updated_at),
    ))
    .execute(conn)
}

pub fn remove_affiliate(conn: &mut AnyConnection, site_id: &str, affiliate_id: &str, now: i64) -> QueryResult<usize> {
    diesel::update(
        web_affiliates::table
            .filter(web_affiliates::id.eq(affiliate_id))
            .filter(web_affiliates::site_id.eq(site_id))
            .filter(web_affiliates::removed_at.is_null()),
    )
    .set(web_affiliates::removed_at.eq(now))
    .execute(conn)
}
