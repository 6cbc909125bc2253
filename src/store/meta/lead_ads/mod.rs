//! Queries of Meta Lead Ads: an owner's listed Pages (`meta_pages`), the
//! Pages linked to sites (`meta_page_links`, with each Page's lease), their
//! forms (`meta_forms`) and the leadgen receipts (`meta_lead_receipts`). No
//! row holds a person's answers (LA-08).

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::sql::{RawQuery, placeholders};

mod handlers;
mod receipts;

pub use handlers::*;
pub use receipts::*;

/// Receipt statuses, stored as these strings: `pending` until the lead is
/// made (`lead_id`) and handed to the site's handler, then `delivered`;
/// `failed` (with `last_error`) when it ended without either.
pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

crate::row! {
    #[derive(Debug, Clone)]
    pub struct PageRow {
        pub owner_key: String,
        pub page_id: String,
        pub name: String,
        pub can_retrieve_leads: bool,
        pub sealed_token: String,
        pub listed_at: i64,
    }
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

crate::row! {
    #[derive(Debug, Clone)]
    pub struct PageLinkRow {
        pub page_id: String,
        pub site_id: String,
        pub owner_key: String,
        pub name: String,
        pub subscribed: bool,
        pub last_error: Option<String>,
        pub last_webhook_at: Option<i64>,
        pub last_reconciled_at: Option<i64>,
        pub lease_owner: Option<String>,
        pub lease_until: Option<i64>,
        pub linked_at: i64,
        pub updated_at: i64,
    }
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

crate::row! {
    #[derive(Debug, Clone)]
    pub struct FormRow {
        pub page_id: String,
        pub form_id: String,
        pub site_id: String,
        pub name: String,
        pub status: String,
        pub questions: String,
        pub rules: Option<String>,
        pub watermark: Option<i64>,
    }
}

pub fn forms_of_page(conn: &mut AnyConnection, page_id: &str) -> QueryResult<Vec<FormRow>> {
    RawQuery::new(
        "SELECT page_id, form_id, site_id, name, status, questions, rules, watermark FROM meta_forms \
         WHERE page_id = ? ORDER BY name, form_id",
    )
    .text(page_id)
    .load(conn)
}
