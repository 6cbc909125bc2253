//! Queries of the account sync: its state rows (`account_syncs`), the spend
//! (`ad_spend`) and the ad catalog (`ad_catalog`).

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::{account_syncs, ad_catalog, ad_spend};
use crate::db::sql::{RawQuery, placeholders};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = account_syncs)]
#[diesel(treat_none_as_default_value = false)]
pub struct SyncRow {
    pub ad_account_id: String,
    pub site_id: String,
    pub next_run_at: i64,
    pub backfill_from: Option<i64>,
    pub backfill_until: Option<i64>,
    pub backfill_done: i32,
    pub backfill_total: i32,
    pub first_synced_at: Option<i64>,
    pub synced_through: Option<i64>,
    pub last_live_at: Option<i64>,
    pub last_daily_day: Option<i64>,
    pub last_weekly_day: Option<i64>,
    pub last_sync_at: Option<i64>,
    pub last_error: Option<String>,
    pub fail_count: i32,
    pub lease_run_id: Option<String>,
    pub lease_until: Option<i64>,
    pub sync_requested: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl SyncRow {
    pub fn new(ad_account_id: &str, site_id: &str, now: i64) -> SyncRow {
        SyncRow {
            ad_account_id: ad_account_id.to_string(),
            site_id: site_id.to_string(),
            next_run_at: now,
            backfill_from: None,
            backfill_until: None,
            backfill_done: 0,
            backfill_total: 0,
            first_synced_at: None,
            synced_through: None,
            last_live_at: None,
            last_daily_day: None,
            last_weekly_day: None,
            last_sync_at: None,
            last_error: None,
            fail_count: 0,
            lease_run_id: None,
            lease_until: None,
            sync_requested: false,
            created_at: now,
            updated_at: now,
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = ad_spend)]
#[diesel(treat_none_as_default_value = false)]
pub struct SpendRow {
    pub ad_account_id: String,
    pub site_id: String,
    pub day: i64,
    pub ad_id: String,
    pub adset_id: String,
    pub campaign_id: String,
    pub spend_cents: i64,
    pub impressions: i64,
    pub clicks: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = ad_catalog)]
#[diesel(treat_none_as_default_value = false)]
pub struct CatalogRow {
    pub ad_id: String,
    pub ad_account_id: String,
    pub name: Option<String>,
    pub adset_id: String,
    pub adset_name: Option<String>,
    pub campaign_id: String,
    pub campaign_name: Option<String>,
    pub ad_status: Option<String>,
    pub creative_type: Option<String>,
    pub thumbnail: Option<String>,
    pub updated_at: i64,
}

pub fn get(conn: &mut AnyConnection, ad_account_id: &str) -> QueryResult<Option<SyncRow>> {
    account_syncs::table.find(ad_account_id).select(SyncRow::as_select()).get_result(conn).optional()
}

pub fn insert(conn: &mut AnyConnection, row: &SyncRow) -> QueryResult<()> {
    diesel::insert_into(account_syncs::table).values(row.clone()).execute(conn).map(|_| ())
}

pub fn delete(conn: &mut AnyConnection, ad_account_id: &str) -> QueryResult<usize> {
    diesel::delete(account_syncs::table.find(ad_account_id)).execute(conn)
}

/// Writes back every field of the row.
pub fn save(conn: &mut AnyConnection, r: &SyncRow) -> QueryResult<()> {
    diesel::update(account_syncs::table.find(&r.ad_account_id))
        .set((
            account_syncs::next_run_at.eq(r.next_run_at),
            account_syncs::backfill_from.eq(r.backfill_from),
            account_syncs::backfill_until.eq(r.backfill_until),
            account_syncs::backfill_done.eq(r.backfill_done),
            account_syncs::backfill_total.eq(r.backfill_total),
            account_syncs::first_synced_at.eq(r.first_synced_at),
            account_syncs::synced_through.eq(r.synced_through),
            account_syncs::last_live_at.eq(r.last_live_at),
            account_syncs::last_daily_day.eq(r.last_daily_day),
            account_syncs::last_weekly_day.eq(r.last_weekly_day),
            account_syncs::last_sync_at.eq(r.last_sync_at),
            account_syncs::last_error.eq(&r.last_error),
            account_syncs::fail_count.eq(r.fail_count),
            account_syncs::lease_run_id.eq(&r.lease_run_id),
            account_syncs::lease_until.eq(r.lease_until),
            account_syncs::sync_requested.eq(r.sync_requested),
            account_syncs::updated_at.eq(r.updated_at),
        ))
        .execute(conn)
        .map(|_| ())
}

/// Takes the account's lease for `run_id` unless a live lease holds it.
/// Answers the row as it was before, or None when the lease is held (or no row).
///
/// The row is locked before it is read: on PostgreSQL another process's run
/// can commit between a plain read and the update, and the update would then
/// take the lease it just released while answering the state from before that
/// run (which would run the same backfill block again). Locked first, the read
/// is the state the lease is taken on. (SQLite's write transaction holds the
/// whole database already; the no-op update costs it nothing.)
pub fn take_lease(
    conn: &mut AnyConnection,
    ad_account_id: &str,
    run_id: &str,
    now: i64,
    until: i64,
) -> QueryResult<Option<SyncRow>> {
    diesel::update(account_syncs::table.find(ad_account_id))
        .set(account_syncs::lease_until.eq(account_syncs::lease_until))
        .execute(conn)?;
    let Some(before) = get(conn, ad_account_id)? else { return Ok(None) };
    let n = diesel::update(
        account_syncs::table
            .filter(account_syncs::ad_account_id.eq(ad_account_id))
            .filter(account_syncs::lease_until.is_null().or(account_syncs::lease_until.le(now))),
    )
    .set((account_syncs::lease_run_id.eq(run_id), account_syncs::lease_until.eq(until)))
    .execute(conn)?;
    Ok((n == 1).then_some(before))
}

pub fn all(conn: &mut AnyConnection) -> QueryResult<Vec<SyncRow>> {
    account_syncs::table.order(account_syncs::ad_account_id.asc()).select(SyncRow::as_select()).load(conn)
}

pub fn of_sites(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<SyncRow>> {
    account_syncs::table.filter(account_syncs::site_id.eq_any(site_ids)).select(SyncRow::as_select()).load(conn)
}

pub fn request_sync(conn: &mut AnyConnection, site_id: &str, now: i64) -> QueryResult<usize> {
    diesel::update(account_syncs::table.filter(account_syncs::site_id.eq(site_id)))
        .set((account_syncs::sync_requested.eq(true), account_syncs::next_run_at.eq(now)))
        .execute(conn)
}

/// Replaces the account's spend over `[from_day_ms, until_day_ms]` with `rows`.
pub fn replace_spend(
    conn: &mut AnyConnection,
    ad_account_id: &str,
    from_day_ms: i64,
    until_day_ms: i64,
    rows: &[SpendRow],
) -> QueryResult<()> {
    diesel::delete(
        ad_spend::table
            .filter(ad_spend::ad_account_id.eq(ad_account_id))
            .filter(ad_spend::day.ge(from_day_ms))
            .filter(ad_spend::day.le(until_day_ms)),
    )
    .execute(conn)?;
    insert_spend(conn, rows)
}

/// Inserts spend rows in multi-row statements (the one place that needs a
/// `match` on the backend for batch inserts through `MultiConnection`).
pub fn insert_spend(conn: &mut AnyConnection, rows: &[SpendRow]) -> QueryResult<()> {
    for chunk in rows.chunks(500) {
        let chunk = chunk.to_vec();
        match conn {
            AnyConnection::Sqlite(c) => diesel::insert_into(ad_spend::table).values(&chunk).execute(c)?,
            AnyConnection::Postgresql(c) => diesel::insert_into(ad_spend::table).values(&chunk).execute(c)?,
        };
    }
    Ok(())
}

/// Upserts one ad of the catalog, keeping a thumbnail already copied.
pub fn put_catalog(conn: &mut AnyConnection, row: &CatalogRow) -> QueryResult<()> {
    let existing: Option<CatalogRow> =
        ad_catalog::table.find(&row.ad_id).select(CatalogRow::as_select()).get_result(conn).optional()?;
    match existing {
        None => diesel::insert_into(ad_catalog::table).values(row.clone()).execute(conn).map(|_| ()),
        Some(old) => diesel::update(ad_catalog::table.find(&row.ad_id))
            .set((
                ad_catalog::ad_account_id.eq(&row.ad_account_id),
                ad_catalog::name.eq(row.name.as_ref().or(old.name.as_ref())),
                ad_catalog::adset_id.eq(if row.adset_id.is_empty() { &old.adset_id } else { &row.adset_id }),
                ad_catalog::adset_name.eq(row.adset_name.as_ref().or(old.adset_name.as_ref())),
                ad_catalog::campaign_id.eq(if row.campaign_id.is_empty() {
                    &old.campaign_id
                } else {
                    &row.campaign_id
                }),
                ad_catalog::campaign_name.eq(row.campaign_name.as_ref().or(old.campaign_name.as_ref())),
                ad_catalog::ad_status.eq(row.ad_status.as_ref().or(old.ad_status.as_ref())),
                ad_catalog::creative_type.eq(row.creative_type.as_ref().or(old.creative_type.as_ref())),
                ad_catalog::thumbnail.eq(row.thumbnail.as_ref().or(old.thumbnail.as_ref())),
                ad_catalog::updated_at.eq(row.updated_at),
            ))
            .execute(conn)
            .map(|_| ()),
    }
}

pub fn catalog_of(conn: &mut AnyConnection, ad_ids: &[String]) -> QueryResult<Vec<CatalogRow>> {
    let mut out = Vec::new();
    for chunk in ad_ids.chunks(500) {
        out.extend(
            ad_catalog::table.filter(ad_catalog::ad_id.eq_any(chunk)).select(CatalogRow::as_select()).load(conn)?,
        );
    }
    Ok(out)
}

pub fn catalog_of_accounts(conn: &mut AnyConnection, accounts: &[String]) -> QueryResult<Vec<CatalogRow>> {
    ad_catalog::table.filter(ad_catalog::ad_account_id.eq_any(accounts)).select(CatalogRow::as_select()).load(conn)
}

/// Ads the site's leads came from that the catalog does not name yet.
pub fn unnamed_lead_ads(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<String>> {
    crate::row! {
        struct Row {
            ad_id: String,
        }
    }
    let mut q = RawQuery::new(
        "SELECT DISTINCT r.ad_id AS ad_id FROM lead_rollups r LEFT JOIN ad_catalog c ON c.ad_id = r.ad_id \
         WHERE r.site_id = ? AND r.ad_id <> '' AND (c.ad_id IS NULL OR c.name IS NULL) ORDER BY r.ad_id LIMIT 1000",
    );
    q.text(site_id);
    Ok(q.load::<Row>(conn)?.into_iter().map(|r| r.ad_id).collect())
}

crate::row! {
    /// Spend of linked, synced accounts of `site_ids` over `[from_day, to_day]`, grouped.
    #[derive(Debug, Clone)]
    pub struct SpendGroup {
        pub site_id: String,
        pub ad_account_id: String,
        pub campaign_id: String,
        pub adset_id: String,
        pub ad_id: String,
        pub day: i64,
        pub spend_cents: i64,
        pub impressions: i64,
        pub clicks: i64,
    }
}

#[derive(Debug, Clone, Copy)]
pub enum SpendGrouping {
    /// Per site, account and ad (the campaign tree).
    Ad,
    /// Per site, account and day (totals, bySite, the daily series).
    SiteDay,
}

pub fn spend(
    conn: &mut AnyConnection,
    site_ids: &[String],
    from_day: i64,
    to_day: i64,
    ad_id: Option<&str>,
    g: SpendGrouping,
    limit: usize,
) -> QueryResult<Vec<SpendGroup>> {
    let (cols, group) = match g {
        SpendGrouping::Ad => (
            "a.site_id, a.ad_account_id, a.campaign_id, a.adset_id, a.ad_id, CAST(0 AS BIGINT) AS day",
            "a.site_id, a.ad_account_id, a.campaign_id, a.adset_id, a.ad_id",
        ),
        SpendGrouping::SiteDay => (
            "a.site_id, a.ad_account_id, '' AS campaign_id, '' AS adset_id, '' AS ad_id, a.day AS day",
            "a.site_id, a.ad_account_id, a.day",
        ),
    };
    let mut q = RawQuery::new(format!(
        "SELECT {cols}, CAST(SUM(a.spend_cents) AS BIGINT) AS spend_cents, \
         CAST(SUM(a.impressions) AS BIGINT) AS impressions, CAST(SUM(a.clicks) AS BIGINT) AS clicks \
         FROM ad_spend a JOIN site_ad_accounts l ON l.ad_account_id = a.ad_account_id AND l.site_id = a.site_id \
         JOIN account_syncs y ON y.ad_account_id = a.ad_account_id \
         WHERE a.site_id IN {} AND a.day >= ? AND a.day <= ? AND y.first_synced_at IS NOT NULL",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids).int(from_day).int(to_day);
    if let Some(ad) = ad_id {
        q.push(" AND a.ad_id = ?").text(ad);
    }
    q.push(&format!(" GROUP BY {group} ORDER BY {group} LIMIT {}", limit));
    q.load(conn)
}

crate::row! {
    /// What unlinking would take out: spend, days and campaigns of the account on the site.
    #[derive(Debug, Clone)]
    pub struct UnlinkFigures {
        pub spend_cents: i64,
        pub days: i64,
        pub campaigns: i64,
    }
}

pub fn unlink_figures(conn: &mut AnyConnection, site_id: &str, ad_account_id: &str) -> QueryResult<UnlinkFigures> {
    let mut q = RawQuery::new(
        "SELECT CAST(COALESCE(SUM(spend_cents), 0) AS BIGINT) AS spend_cents, \
         CAST(COUNT(DISTINCT day) AS BIGINT) AS days, CAST(COUNT(DISTINCT campaign_id) AS BIGINT) AS campaigns \
         FROM ad_spend WHERE site_id = ? AND ad_account_id = ?",
    );
    q.text(site_id).text(ad_account_id);
    Ok(q.load::<UnlinkFigures>(conn)?.remove(0))
}

/// Deletes up to `batch` spend rows no link covers any more (after an unlink or a
/// removed connection). Answers how many went.
pub fn delete_orphan_spend(conn: &mut AnyConnection, batch: usize) -> QueryResult<usize> {
    let q = RawQuery::new(format!(
        "DELETE FROM ad_spend WHERE (ad_account_id, day, ad_id) IN (SELECT a.ad_account_id, a.day, a.ad_id FROM ad_spend a \
         LEFT JOIN site_ad_accounts l ON l.ad_account_id = a.ad_account_id AND l.site_id = a.site_id \
         WHERE l.ad_account_id IS NULL LIMIT {batch})"
    ));
    q.execute(conn)
}
