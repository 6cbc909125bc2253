//! The leadgen receipts (`meta_lead_receipts`): ids and times only, a
//! receipt's life from pending to delivered or failed.

use super::*;
use crate::db::row;

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

crate::row! {
    #[derive(Debug, Clone)]
    pub struct ReceiptRow in meta_lead_receipts {
        pub id: String,
        pub leadgen_id: String,
        pub site_id: String,
        pub page_id: String,
        pub form_id: Option<String>,
        pub ad_id: Option<String>,
        pub created_time: Option<i64>,
        pub received_at: i64,
        pub source: String,
        pub status: String,
        pub attempts: i64,
        pub next_attempt_at: i64,
        pub last_error: Option<String>,
        pub lead_id: Option<String>,
    }
}

pub fn receipt(conn: &mut AnyConnection, leadgen_id: &str) -> QueryResult<Option<ReceiptRow>> {
    let rows: Vec<ReceiptRow> = row::select::<ReceiptRow>("WHERE leadgen_id = ?").text(leadgen_id).load(conn)?;
    Ok(rows.into_iter().next())
}

/// The Page's pending receipts due by `now`, oldest first.
pub fn due_receipts(conn: &mut AnyConnection, page_id: &str, now: i64, limit: i64) -> QueryResult<Vec<ReceiptRow>> {
    row::select::<ReceiptRow>(
        "WHERE page_id = ? AND status = ? AND next_attempt_at <= ? ORDER BY received_at, id LIMIT ?",
    )
    .text(page_id)
    .text(PENDING)
    .int(now)
    .int(limit)
    .load(conn)
}

crate::row! {
    struct At {
        at: Option<i64>,
    }
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

/// The linked Pages with work: a pending receipt, or a reconciliation due
/// (never run, or last run at `reconcile_before` or earlier). The sweep's and the start-up's look.
pub fn pages_with_work(conn: &mut AnyConnection, reconcile_before: i64) -> QueryResult<Vec<String>> {
    let rows: Vec<crate::db::row::Id> = RawQuery::new(
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
    crate::row! {
        struct Page {
            page_id: String,
        }
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
