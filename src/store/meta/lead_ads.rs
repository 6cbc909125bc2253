//! Queries of Meta Lead Ads: an owner's listed Pages (`meta_pages`), the
//! Pages linked to sites (`meta_page_links`, with each Page's lease), their
//! forms (`meta_forms`) and the leadgen receipts (`meta_lead_receipts`). No
//! row holds a person's answers (LA-08).

use diesel::QueryResult;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};

use crate::db::AnyConnection;
use crate::db::sql::{RawQuery, placeholders};

/// Receipt statuses, stored as these strings: `pending` until the lead is
/// made (`lead_id`) and handed to the site's handler, then `delivered`;
/// `failed` (with `last_error`) when it ended without either.
pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

#[derive(Debug, Clone, QueryableByName)]
pub struct PageRow {
    #[diesel(sql_type = Text)]
    pub owner_key: String,
    #[diesel(sql_type = Text)]
    pub page_id: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Bool)]
    pub can_retrieve_leads: bool,
    #[diesel(sql_type = Text)]
    pub sealed_token: String,
    #[diesel(sql_type = BigInt)]
    pub listed_at: i64,
}

/// An owner's listing replaces the one before.
pub fn replace_pages(conn: &mut AnyConnection, owner: &str, rows: &[PageRow]) -> QueryResult<()> {
    RawQuery::new("DELETE FROM meta_pages WHERE owner_key = ?").text(owner).execute(conn)?;
    for r in rows {
        RawQuery::new(
            "INSERT INTO meta_pages (owner_key, page_id, name, can_retrieve_leads, sealed_token, listed_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .text(&r.owner_key)
        .text(&r.page_id)
        .text(&r.name)
        .boolean(r.can_retrieve_leads)
        .text(&r.sealed_token)
        .int(r.listed_at)
        .execute(conn)?;
    }
    Ok(())
}

pub fn pages_of_owner(conn: &mut AnyConnection, owner: &str) -> QueryResult<Vec<PageRow>> {
    RawQuery::new("SELECT * FROM meta_pages WHERE owner_key = ? ORDER BY name, page_id").text(owner).load(conn)
}

pub fn page(conn: &mut AnyConnection, owner: &str, page_id: &str) -> QueryResult<Option<PageRow>> {
    let rows: Vec<PageRow> = RawQuery::new("SELECT * FROM meta_pages WHERE owner_key = ? AND page_id = ?")
        .text(owner)
        .text(page_id)
        .load(conn)?;
    Ok(rows.into_iter().next())
}

#[derive(Debug, Clone, QueryableByName)]
pub struct PageLinkRow {
    #[diesel(sql_type = Text)]
    pub page_id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub owner_key: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Bool)]
    pub subscribed: bool,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub last_webhook_at: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub last_reconciled_at: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub lease_owner: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub lease_until: Option<i64>,
    #[diesel(sql_type = BigInt)]
    pub linked_at: i64,
    #[diesel(sql_type = BigInt)]
    pub updated_at: i64,
}

pub fn page_link(conn: &mut AnyConnection, page_id: &str) -> QueryResult<Option<PageLinkRow>> {
    let rows: Vec<PageLinkRow> =
        RawQuery::new("SELECT * FROM meta_page_links WHERE page_id = ?").text(page_id).load(conn)?;
    Ok(rows.into_iter().next())
}

pub fn page_links_of_sites(conn: &mut AnyConnection, sites: &[String]) -> QueryResult<Vec<PageLinkRow>> {
    if sites.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT * FROM meta_page_links WHERE site_id IN {} ORDER BY site_id, name, page_id",
        placeholders(sites.len())
    );
    RawQuery::new(sql).texts(sites).load(conn)
}

/// The linked Pages among `page_ids`.
pub fn page_links_of(conn: &mut AnyConnection, page_ids: &[String]) -> QueryResult<Vec<PageLinkRow>> {
    if page_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!("SELECT * FROM meta_page_links WHERE page_id IN {}", placeholders(page_ids.len()));
    RawQuery::new(sql).texts(page_ids).load(conn)
}

pub fn insert_page_link(conn: &mut AnyConnection, r: &PageLinkRow) -> QueryResult<()> {
    RawQuery::new(
        "INSERT INTO meta_page_links (page_id, site_id, owner_key, name, subscribed, last_error, last_webhook_at, \
         last_reconciled_at, lease_owner, lease_until, linked_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
    )
    .text(&r.page_id)
    .text(&r.site_id)
    .text(&r.owner_key)
    .text(&r.name)
    .boolean(r.subscribed)
    .opt_text(r.last_error.clone())
    .opt_int(r.last_webhook_at)
    .opt_int(r.last_reconciled_at)
    .int(r.linked_at)
    .int(r.updated_at)
    .execute(conn)?;
    Ok(())
}

pub fn set_page_error(conn: &mut AnyConnection, page_id: &str, error: Option<&str>, now: i64) -> QueryResult<()> {
    RawQuery::new("UPDATE meta_page_links SET last_error = ?, updated_at = ? WHERE page_id = ?")
        .opt_text(error)
        .int(now)
        .text(page_id)
        .execute(conn)?;
    Ok(())
}

pub fn touch_webhook(conn: &mut AnyConnection, page_id: &str, now: i64) -> QueryResult<()> {
    RawQuery::new("UPDATE meta_page_links SET last_webhook_at = ? WHERE page_id = ?")
        .int(now)
        .text(page_id)
        .execute(conn)?;
    Ok(())
}

/// Unlinks the Page: its link (and so its lease and reconciliation) goes; its
/// forms' rows stay for the reports; receipts still pending end `failed` with
/// `error` (the leads already made stay). Answers whether a link was there.
pub fn delete_page_link(conn: &mut AnyConnection, page_id: &str, error: &str, now: i64) -> QueryResult<bool> {
    let n = RawQuery::new("DELETE FROM meta_page_links WHERE page_id = ?").text(page_id).execute(conn)?;
    RawQuery::new(
        "UPDATE meta_lead_receipts SET status = ?, last_error = ?, updated_at = ? WHERE page_id = ? AND status = ?",
    )
    .text(FAILED)
    .text(error)
    .int(now)
    .text(page_id)
    .text(PENDING)
    .execute(conn)?;
    Ok(n == 1)
}

/// Takes the Page for one run until `until`, unless another run holds it.
pub fn take_page_lease(
    conn: &mut AnyConnection,
    page_id: &str,
    owner: &str,
    until: i64,
    now: i64,
) -> QueryResult<bool> {
    let n = RawQuery::new(
        "UPDATE meta_page_links SET lease_owner = ?, lease_until = ? \
         WHERE page_id = ? AND (lease_owner IS NULL OR lease_until < ?)",
    )
    .text(owner)
    .int(until)
    .text(page_id)
    .int(now)
    .execute(conn)?;
    Ok(n == 1)
}

/// Whether `owner` still holds the Page (a run past its lease writes nothing).
pub fn holds_page(conn: &mut AnyConnection, page_id: &str, owner: &str, now: i64) -> QueryResult<bool> {
    Ok(page_link(conn, page_id)?
        .is_some_and(|l| l.lease_owner.as_deref() == Some(owner) && l.lease_until.is_some_and(|u| u >= now)))
}

pub fn release_page_lease(conn: &mut AnyConnection, page_id: &str, owner: &str) -> QueryResult<()> {
    RawQuery::new(
        "UPDATE meta_page_links SET lease_owner = NULL, lease_until = NULL WHERE page_id = ? AND lease_owner = ?",
    )
    .text(page_id)
    .text(owner)
    .execute(conn)?;
    Ok(())
}

/// A form as listed; the site's rules and the watermark are kept on a repeat.
pub struct FormListing<'a> {
    pub page_id: &'a str,
    pub form_id: &'a str,
    pub site_id: &'a str,
    pub name: &'a str,
    pub status: &'a str,
    pub questions: &'a str,
    pub now: i64,
}

pub fn upsert_form(conn: &mut AnyConnection, f: &FormListing<'_>) -> QueryResult<()> {
    RawQuery::new(
        "INSERT INTO meta_forms (page_id, form_id, site_id, name, status, questions, rules, watermark, listed_at) \
         VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?) ON CONFLICT (page_id, form_id) DO UPDATE SET \
         site_id = excluded.site_id, name = excluded.name, status = excluded.status, \
         questions = excluded.questions, listed_at = excluded.listed_at",
    )
    .text(f.page_id)
    .text(f.form_id)
    .text(f.site_id)
    .text(f.name)
    .text(f.status)
    .text(f.questions)
    .int(f.now)
    .execute(conn)?;
    Ok(())
}

#[derive(Debug, Clone, QueryableByName)]
pub struct FormRow {
    #[diesel(sql_type = Text)]
    pub page_id: String,
    #[diesel(sql_type = Text)]
    pub form_id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Text)]
    pub questions: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub rules: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub watermark: Option<i64>,
}

pub fn forms_of_page(conn: &mut AnyConnection, page_id: &str) -> QueryResult<Vec<FormRow>> {
    RawQuery::new(
        "SELECT page_id, form_id, site_id, name, status, questions, rules, watermark FROM meta_forms \
         WHERE page_id = ? ORDER BY name, form_id",
    )
    .text(page_id)
    .load(conn)
}

/// A receipt to store: ids and times only.
#[derive(Debug, Clone)]
pub struct NewReceipt {
    pub id: String,
    pub leadgen_id: String,
    pub site_id: String,
    pub page_id: String,
    pub form_id: Option<String>,
    pub ad_id: Option<String>,
    pub created_time: Option<i64>,
    pub received_at: i64,
    /// `webhook` or `reconcile`.
    pub source: &'static str,
}

/// Stores the receipt unless its leadgen id is known: true when it is new.
pub fn insert_receipt(conn: &mut AnyConnection, r: &NewReceipt) -> QueryResult<bool> {
    let n = RawQuery::new(
        "INSERT INTO meta_lead_receipts (id, leadgen_id, site_id, page_id, form_id, ad_id, created_time, \
         received_at, source, status, attempts, next_attempt_at, last_error, lead_id, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, NULL, ?) ON CONFLICT (leadgen_id) DO NOTHING",
    )
    .text(&r.id)
    .text(&r.leadgen_id)
    .text(&r.site_id)
    .text(&r.page_id)
    .opt_text(r.form_id.clone())
    .opt_text(r.ad_id.clone())
    .opt_int(r.created_time)
    .int(r.received_at)
    .text(r.source)
    .text(PENDING)
    .int(r.received_at)
    .int(r.received_at)
    .execute(conn)?;
    Ok(n == 1)
}

#[derive(Debug, Clone, QueryableByName)]
pub struct ReceiptRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub leadgen_id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub page_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub form_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub ad_id: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub created_time: Option<i64>,
    #[diesel(sql_type = BigInt)]
    pub received_at: i64,
    #[diesel(sql_type = Text)]
    pub source: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = BigInt)]
    pub attempts: i64,
    #[diesel(sql_type = BigInt)]
    pub next_attempt_at: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub lead_id: Option<String>,
}

const RECEIPT_COLUMNS: &str = "id, leadgen_id, site_id, page_id, form_id, ad_id, created_time, received_at, \
                               source, status, attempts, next_attempt_at, last_error, lead_id";

pub fn receipt(conn: &mut AnyConnection, leadgen_id: &str) -> QueryResult<Option<ReceiptRow>> {
    let rows: Vec<ReceiptRow> =
        RawQuery::new(format!("SELECT {RECEIPT_COLUMNS} FROM meta_lead_receipts WHERE leadgen_id = ?"))
            .text(leadgen_id)
            .load(conn)?;
    Ok(rows.into_iter().next())
}

/// The Page's pending receipts due by `now`, oldest first.
pub fn due_receipts(conn: &mut AnyConnection, page_id: &str, now: i64, limit: i64) -> QueryResult<Vec<ReceiptRow>> {
    RawQuery::new(format!(
        "SELECT {RECEIPT_COLUMNS} FROM meta_lead_receipts WHERE page_id = ? AND status = ? AND next_attempt_at <= ? \
         ORDER BY received_at, id LIMIT ?"
    ))
    .text(page_id)
    .text(PENDING)
    .int(now)
    .int(limit)
    .load(conn)
}

#[derive(QueryableByName)]
struct At {
    #[diesel(sql_type = Nullable<BigInt>)]
    at: Option<i64>,
}

/// When the Page's receipts next need a look; None when none is pending.
pub fn next_due(conn: &mut AnyConnection, page_id: &str) -> QueryResult<Option<i64>> {
    let rows: Vec<At> =
        RawQuery::new("SELECT MIN(next_attempt_at) AS at FROM meta_lead_receipts WHERE page_id = ? AND status = ?")
            .text(page_id)
            .text(PENDING)
            .load(conn)?;
    Ok(rows.into_iter().next().and_then(|r| r.at))
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = Text)]
    id: String,
}

/// The linked Pages with work: a pending receipt, or a reconciliation due
/// (never run, or last run at `reconcile_before` or earlier). The sweep's and the start-up's look.
pub fn pages_with_work(conn: &mut AnyConnection, reconcile_before: i64) -> QueryResult<Vec<String>> {
    let rows: Vec<Id> = RawQuery::new(
        "SELECT l.page_id AS id FROM meta_page_links l WHERE l.last_reconciled_at IS NULL \
         OR l.last_reconciled_at <= ? OR EXISTS (SELECT 1 FROM meta_lead_receipts r \
         WHERE r.page_id = l.page_id AND r.status = ?) ORDER BY l.page_id",
    )
    .int(reconcile_before)
    .text(PENDING)
    .load(conn)?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// A form's reconciliation read committed: its watermark moves (never back).
pub fn set_watermark(conn: &mut AnyConnection, page_id: &str, form_id: &str, watermark: i64) -> QueryResult<()> {
    RawQuery::new(
        "UPDATE meta_forms SET watermark = ? WHERE page_id = ? AND form_id = ? AND (watermark IS NULL OR watermark < ?)",
    )
    .int(watermark)
    .text(page_id)
    .text(form_id)
    .int(watermark)
    .execute(conn)?;
    Ok(())
}

/// Every form of the Page was read: the Page's reconciliation ran at `now`.
pub fn set_reconciled(conn: &mut AnyConnection, page_id: &str, now: i64) -> QueryResult<()> {
    RawQuery::new("UPDATE meta_page_links SET last_reconciled_at = ? WHERE page_id = ?")
        .int(now)
        .text(page_id)
        .execute(conn)?;
    Ok(())
}

/// The receipt became the lead `lead_id`; its delivery to the handler
/// starts with a fresh count of attempts (the handler's own schedule).
pub fn mark_made(conn: &mut AnyConnection, id: &str, lead_id: &str, now: i64) -> QueryResult<()> {
    RawQuery::new(
        "UPDATE meta_lead_receipts SET lead_id = ?, attempts = 0, last_error = NULL, updated_at = ? WHERE id = ?",
    )
    .text(lead_id)
    .int(now)
    .text(id)
    .execute(conn)?;
    Ok(())
}

/// The handler took the lead (2xx).
pub fn mark_delivered(conn: &mut AnyConnection, id: &str, now: i64) -> QueryResult<()> {
    RawQuery::new(
        "UPDATE meta_lead_receipts SET status = ?, attempts = attempts + 1, last_error = NULL, updated_at = ? \
         WHERE id = ?",
    )
    .text(DELIVERED)
    .int(now)
    .text(id)
    .execute(conn)?;
    Ok(())
}

/// `returnMetaFormLead`: the site's receipt of `leadgen_id` waits to be
/// fetched and delivered again from `now` (its lead, if made, is kept).
/// The Page it belongs to, or None for an unknown leadgen id.
pub fn requeue(conn: &mut AnyConnection, site_id: &str, leadgen_id: &str, now: i64) -> QueryResult<Option<String>> {
    #[derive(QueryableByName)]
    struct Page {
        #[diesel(sql_type = Text)]
        page_id: String,
    }
    let page: Option<Page> =
        RawQuery::new("SELECT page_id FROM meta_lead_receipts WHERE site_id = ? AND leadgen_id = ?")
            .text(site_id)
            .text(leadgen_id)
            .load(conn)?
            .into_iter()
            .next();
    if page.is_some() {
        RawQuery::new(
            "UPDATE meta_lead_receipts SET status = ?, attempts = 0, next_attempt_at = ?, last_error = NULL, \
             updated_at = ? WHERE site_id = ? AND leadgen_id = ?",
        )
        .text(PENDING)
        .int(now)
        .int(now)
        .text(site_id)
        .text(leadgen_id)
        .execute(conn)?;
    }
    Ok(page.map(|p| p.page_id))
}

/// The site's form-lead handler: where answers are delivered, its secret sealed.
#[derive(Debug, Clone, QueryableByName)]
pub struct HandlerRow {
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub url: String,
    #[diesel(sql_type = Text)]
    pub sealed_secret: String,
}

pub fn handler(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<HandlerRow>> {
    let rows: Vec<HandlerRow> =
        RawQuery::new("SELECT site_id, url, sealed_secret FROM meta_form_handlers WHERE site_id = ?")
            .text(site_id)
            .load(conn)?;
    Ok(rows.into_iter().next())
}

/// The sites of `sites` that have a handler.
pub fn sites_with_handler(conn: &mut AnyConnection, sites: &[String]) -> QueryResult<Vec<String>> {
    if sites.is_empty() {
        return Ok(Vec::new());
    }
    #[derive(QueryableByName)]
    struct Site {
        #[diesel(sql_type = Text)]
        site_id: String,
    }
    let sql = format!("SELECT site_id FROM meta_form_handlers WHERE site_id IN {}", placeholders(sites.len()));
    let rows: Vec<Site> = RawQuery::new(sql).texts(sites).load(conn)?;
    Ok(rows.into_iter().map(|r| r.site_id).collect())
}

pub fn set_handler(conn: &mut AnyConnection, site_id: &str, url: &str, sealed: &str, now: i64) -> QueryResult<()> {
    RawQuery::new(
        "INSERT INTO meta_form_handlers (site_id, url, sealed_secret, updated_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT (site_id) DO UPDATE SET url = excluded.url, sealed_secret = excluded.sealed_secret, \
         updated_at = excluded.updated_at",
    )
    .text(site_id)
    .text(url)
    .text(sealed)
    .int(now)
    .execute(conn)?;
    Ok(())
}

/// Removes the site's handler; whether there was one.
pub fn delete_handler(conn: &mut AnyConnection, site_id: &str) -> QueryResult<bool> {
    Ok(RawQuery::new("DELETE FROM meta_form_handlers WHERE site_id = ?").text(site_id).execute(conn)? > 0)
}

/// Clears `lastError` on the site's Pages where it starts with `code` (a
/// handler set ends `HANDLER_MISSING`); the Pages touched.
pub fn clear_page_errors(conn: &mut AnyConnection, site_id: &str, code: &str, now: i64) -> QueryResult<Vec<String>> {
    let pattern = format!("{code}%");
    let links: Vec<PageLinkRow> = page_links_of_sites(conn, &[site_id.to_string()])?;
    RawQuery::new(
        "UPDATE meta_page_links SET last_error = NULL, updated_at = ? WHERE site_id = ? AND last_error LIKE ?",
    )
    .int(now)
    .text(site_id)
    .text(&pattern)
    .execute(conn)?;
    Ok(links.into_iter().map(|l| l.page_id).collect())
}

/// An attempt failed: the next one at `next_at`, or none (`failed`) when `next_at` is None.
pub fn mark_attempt_failed(
    conn: &mut AnyConnection,
    id: &str,
    error: &str,
    next_at: Option<i64>,
    now: i64,
) -> QueryResult<()> {
    RawQuery::new(
        "UPDATE meta_lead_receipts SET status = ?, attempts = attempts + 1, next_attempt_at = ?, last_error = ?, \
         updated_at = ? WHERE id = ?",
    )
    .text(if next_at.is_some() { PENDING } else { FAILED })
    .int(next_at.unwrap_or(now))
    .text(error)
    .int(now)
    .text(id)
    .execute(conn)?;
    Ok(())
}

#[derive(Debug, Clone, QueryableByName)]
pub struct PageCounts {
    #[diesel(sql_type = Text)]
    pub page_id: String,
    #[diesel(sql_type = BigInt)]
    pub pending: i64,
    #[diesel(sql_type = BigInt)]
    pub failed: i64,
}

/// Pending and failed receipts per Page of these sites.
pub fn counts_of_sites(conn: &mut AnyConnection, sites: &[String]) -> QueryResult<Vec<PageCounts>> {
    if sites.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT page_id, CAST(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END) AS BIGINT) AS pending, \
         CAST(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END) AS BIGINT) AS failed \
         FROM meta_lead_receipts WHERE site_id IN {} GROUP BY page_id",
        placeholders(sites.len())
    );
    RawQuery::new(sql).text(PENDING).text(FAILED).texts(sites).load(conn)
}

/// The site's forms (of every Page linked to it), by name.
pub fn forms_of_site(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<FormRow>> {
    RawQuery::new(
        "SELECT f.page_id, f.form_id, f.site_id, f.name, f.status, f.questions, f.rules, f.watermark \
         FROM meta_forms f JOIN meta_page_links l ON l.page_id = f.page_id AND l.site_id = f.site_id \
         WHERE f.site_id = ? ORDER BY f.name, f.form_id",
    )
    .text(site_id)
    .load(conn)
}

/// Sets (or clears) a form's rules; whether the site has that form.
pub fn set_form_rules(
    conn: &mut AnyConnection,
    site_id: &str,
    form_id: &str,
    rules: Option<&str>,
) -> QueryResult<bool> {
    let q = RawQuery::new("UPDATE meta_forms SET rules = ? WHERE site_id = ? AND form_id = ?")
        .opt_text(rules.map(str::to_string))
        .text(site_id)
        .text(form_id)
        .execute(conn)?;
    Ok(q > 0)
}

#[derive(Debug, Clone, QueryableByName)]
pub struct FormCount {
    #[diesel(sql_type = Text)]
    pub form_id: String,
    #[diesel(sql_type = BigInt)]
    pub leads: i64,
}

/// Leads made per form of the site whose creation time is at or after `since`.
pub fn leads_per_form(conn: &mut AnyConnection, site_id: &str, since: i64) -> QueryResult<Vec<FormCount>> {
    RawQuery::new(
        "SELECT form_id, CAST(COUNT(*) AS BIGINT) AS leads FROM meta_lead_receipts \
         WHERE site_id = ? AND form_id IS NOT NULL AND lead_id IS NOT NULL \
         AND COALESCE(created_time, received_at) >= ? GROUP BY form_id",
    )
    .text(site_id)
    .int(since)
    .load(conn)
}

/// A form's leads of a cohort range (`metaFormsReport`).
#[derive(Debug, Clone, QueryableByName)]
pub struct FormCohort {
    #[diesel(sql_type = Text)]
    pub form_id: String,
    #[diesel(sql_type = BigInt)]
    pub leads: i64,
    #[diesel(sql_type = BigInt)]
    pub qualified: i64,
    #[diesel(sql_type = BigInt)]
    pub won: i64,
    #[diesel(sql_type = BigInt)]
    pub revenue_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub paid_leads: i64,
    #[diesel(sql_type = BigInt)]
    pub paid_qualified: i64,
    #[diesel(sql_type = BigInt)]
    pub paid_won: i64,
    #[diesel(sql_type = BigInt)]
    pub paid_revenue_cents: i64,
}

/// Per form, the site's form leads first seen in `[from, to]` and their
/// outcomes; `paid_origin` marks what an ad bought. Form leads are the site's
/// receipts that became leads: a small share of its leads, read through the
/// receipts' site index and the leads' primary key.
pub fn form_cohorts(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    paid_origin: &str,
) -> QueryResult<Vec<FormCohort>> {
    let mut q = RawQuery::new(
        "SELECT r.form_id AS form_id, CAST(COUNT(*) AS BIGINT) AS leads, \
         CAST(SUM(CASE WHEN l.ever_qualified THEN 1 ELSE 0 END) AS BIGINT) AS qualified, \
         CAST(SUM(CASE WHEN l.ever_won THEN 1 ELSE 0 END) AS BIGINT) AS won, \
         CAST(SUM(l.revenue_cents) AS BIGINT) AS revenue_cents, \
         CAST(SUM(CASE WHEN l.origin = ? THEN 1 ELSE 0 END) AS BIGINT) AS paid_leads, \
         CAST(SUM(CASE WHEN l.origin = ? AND l.ever_qualified THEN 1 ELSE 0 END) AS BIGINT) AS paid_qualified, \
         CAST(SUM(CASE WHEN l.origin = ? AND l.ever_won THEN 1 ELSE 0 END) AS BIGINT) AS paid_won, \
         CAST(SUM(CASE WHEN l.origin = ? THEN l.revenue_cents ELSE 0 END) AS BIGINT) AS paid_revenue_cents \
         FROM meta_lead_receipts r JOIN leads l ON l.id = r.lead_id \
         WHERE r.site_id = ? AND r.form_id IS NOT NULL AND l.first_at >= ? AND l.first_at <= ? \
         GROUP BY r.form_id",
    );
    q.text(paid_origin).text(paid_origin).text(paid_origin).text(paid_origin).text(site_id).int(from).int(to);
    q.load(conn)
}

#[derive(Debug, Clone, QueryableByName)]
pub struct FormAd {
    #[diesel(sql_type = Text)]
    pub form_id: String,
    #[diesel(sql_type = Text)]
    pub ad_id: String,
}

/// The ads that brought leads through each of the site's forms (any time).
pub fn form_ads(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<FormAd>> {
    RawQuery::new(
        "SELECT DISTINCT r.form_id AS form_id, l.ad_id AS ad_id FROM meta_lead_receipts r \
         JOIN leads l ON l.id = r.lead_id WHERE r.site_id = ? AND r.form_id IS NOT NULL AND l.ad_id <> ''",
    )
    .text(site_id)
    .load(conn)
}
