//! Queueing, inside the lead write's own transaction: a `Purchase` for a
//! recorded sale, a `Lead` for a new lead with `sendLeadEvent`, and the event a
//! board column maps to; and, inside `recordConversion`'s, a `website`
//! Purchase for a site sale of a visit that landed with an fbclid (WA-33). Each event goes once per lead (its `eventId` is
//! [`event_id`]); a failed one is opened again, with fresh hashes and no
//! attempt made, when `meta` comes for it again.

use sha2::{Digest, Sha256};

use super::contact_hashes::ContactHashes;
use super::*;
use crate::clock::utc_day_start;
use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::sites;
use crate::store::meta::conversions::{self as store, ConversionStatus};
use crate::store::meta::{self as meta_store, PixelSource};

/// The conversion's id: lowercase hex SHA-256 of `leadId:eventName`. Meta
/// deduplicates on it, so a repeat never counts twice.
pub fn event_id(lead_id: &str, event_name: &str) -> String {
    let digest = Sha256::digest(format!("{lead_id}:{event_name}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------
// Queueing
// ---------------------------------------------------------------------------

/// One event to queue for a lead.
#[derive(Debug, Clone, Copy)]
pub struct Enqueue<'a> {
    pub site_id: &'a str,
    pub lead_id: &'a str,
    pub event_name: &'a str,
    /// When it happened (the call's `occurredAt`; a future time is sent as now).
    pub at: i64,
    /// Purchase only: the lead's sale total in cents.
    pub value_cents: Option<i64>,
    /// The CRM stage's name a form lead's event carries (a column's declared
    /// name); None: the Meta event's own name.
    pub crm_name: Option<&'a str>,
}

/// Meta keeps a Conversion Leads event only this long after the move (LEADADS §7).
pub const CONVERSION_LEADS_MAX_AGE_MS: i64 = 7 * 86_400_000;

/// A form lead's leadgen id and creation time, None for any other lead.
fn form_lead(conn: &mut AnyConnection, site_id: &str, lead_id: &str) -> Result<Option<(String, i64)>> {
    let Some(row) = crate::store::leads::find(conn, site_id, lead_id)? else { return Ok(None) };
    if crate::service::leads::Channel::of_origin(&row.origin) != crate::service::leads::Channel::Form {
        return Ok(None);
    }
    Ok(row.lead_key.strip_prefix("fbl_").map(|id| (id.to_string(), row.first_at)))
}

/// Whether the site's pixel takes conversions: it exists, is on, is not
/// stopped (a refused token, PIXEL_NOT_GRANTED), and the connection whose token
/// it sends with is there and not refused.
pub fn pixel_accepts(conn: &mut AnyConnection, site_id: &str) -> Result<bool> {
    let Some(pixel) = meta_store::pixel(conn, site_id)? else { return Ok(false) };
    if !pixel.enabled || pixel.stopped_reason.is_some() {
        return Ok(false);
    }
    if pixel.source == PixelSource::Token {
        return Ok(pixel.sealed_token.is_some());
    }
    let Some(owner) = pixel.owner_key.as_deref() else { return Ok(false) };
    Ok(meta_store::connection(conn, owner)?.is_some_and(|c| c.invalid_since.is_none()))
}

/// Queues `e` with the contact's hashes, in the caller's transaction. Answers
/// whether anything was queued (or a failed event opened again).
/// Whether the event can go by the lead's click id when it is sent: a name
/// Meta takes on business_messaging, a `ctwa_ad` lead with a click id, and
/// the site's `sendClickIds` on with its account (WA-31).
fn goes_by_click_id(conn: &mut AnyConnection, e: &Enqueue<'_>) -> Result<bool> {
    if business_messaging_name(e.event_name).is_none() {
        return Ok(false);
    }
    Ok(!click_routes(conn, e.site_id, &[e.lead_id.to_string()])?.1.is_empty())
}

pub fn enqueue(conn: &mut AnyConnection, now: i64, e: &Enqueue<'_>, hashes: &ContactHashes) -> Result<bool> {
    if !pixel_accepts(conn, e.site_id)? {
        return Ok(false);
    }
    let id = event_id(e.lead_id, e.event_name);
    let purchase = e.event_name == PURCHASE;
    let value_cents = if purchase { e.value_cents } else { None };
    let ph = (!hashes.ph.is_empty()).then(|| hashes.ph.join(","));
    let form = form_lead(conn, e.site_id, e.lead_id)?;
    // Without a contact hash a lead matches at Meta only by its form's lead
    // id (LA-19) or, on business_messaging, by its click id (WA-31).
    if ph.is_none() && hashes.external_id.is_none() && form.is_none() && !goes_by_click_id(conn, e)? {
        return Ok(false);
    }
    // A form lead's move is never sent as happening before the lead (Conversion Leads).
    let event_time = e.at.min(now).max(form.as_ref().map_or(i64::MIN, |(_, first)| *first));
    match store::find(conn, &id)? {
        Some(row) if row.status == ConversionStatus::Failed.as_str() => Ok(store::reopen(
            conn,
            store::Reopen { event_id: &id, event_time, value_cents, ph, external_id: hashes.external_id.clone(), now },
        )?),
        // Once per lead: queued or delivered, it is not queued again.
        Some(_) => Ok(false),
        None => {
            let currency = if purchase { Some(sites::require(conn, e.site_id)?.currency) } else { None };
            store::insert(
                conn,
                &store::ConversionRow {
                    event_id: id,
                    site_id: e.site_id.to_string(),
                    lead_id: Some(e.lead_id.to_string()),
                    event_name: e.event_name.to_string(),
                    event_time,
                    value_cents,
                    currency,
                    status: ConversionStatus::Pending.to_string(),
                    attempts: 0,
                    due_at: Some(now),
                    lease_owner: None,
                    lease_until: None,
                    ph,
                    external_id: hashes.external_id.clone(),
                    last_error: None,
                    created_at: now,
                    sent_at: None,
                    updated_at: now,
                    crm_event_name: form.as_ref().and(e.crm_name).map(str::to_string),
                    meta_lead_id: form.map(|(id, _)| id),
                    web_conversion_id: None,
                    web_session_id: None,
                    sent_event_id: None,
                },
            )?;
            Ok(true)
        }
    }
}

/// A site sale (a ledger conversion) of a session that landed with an
/// `fbclid` (rule WA-33).
#[derive(Debug, Clone, Copy)]
pub struct WebPurchase<'a> {
    pub site_id: &'a str,
    pub conversion_id: &'a str,
    pub session_id: &'a str,
    /// The conversion's `occurredAt` (a future time is sent as now).
    pub at: i64,
    pub value_cents: i64,
    pub currency: &'a str,
    /// The conversion's `eventId` property, when a string.
    pub event_id: Option<&'a str>,
}

/// The queue row's own id of a site sale: lowercase hex SHA-256 of
/// `conv:<conversionId>`. Not what Meta gets ([`web_sent_event_id`]): a host
/// may give a sale the event id of a lead's own Purchase, which is that
/// lead's row here.
pub fn web_event_id(conversion_id: &str) -> String {
    let digest = Sha256::digest(format!("conv:{conversion_id}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The event id Meta gets for a site sale: its `eventId` property when given
/// (so Meta deduplicates it against the lead's own Purchase of that id),
/// else `conv:<conversionId>`.
pub fn web_sent_event_id(p: &WebPurchase<'_>) -> String {
    p.event_id.map_or_else(|| format!("conv:{}", p.conversion_id), str::to_string)
}

/// Queues a site sale as a `website` Purchase to the site's pixel (rule
/// WA-33), in the caller's transaction: only when the pixel takes
/// conversions and the session's landing fbclid is kept; once per
/// conversion. The fbclid is not copied: the sender reads it sealed.
/// Answers whether anything was queued.
pub fn enqueue_web_purchase(conn: &mut AnyConnection, now: i64, p: &WebPurchase<'_>) -> Result<bool> {
    if !pixel_accepts(conn, p.site_id)? {
        return Ok(false);
    }
    if crate::store::analytics::click_ids::find(conn, p.site_id, p.session_id)?.is_none() {
        return Ok(false);
    }
    let id = web_event_id(p.conversion_id);
    if store::find(conn, &id)?.is_some() {
        return Ok(false);
    }
    store::insert(
        conn,
        &store::ConversionRow {
            event_id: id,
            site_id: p.site_id.to_string(),
            lead_id: None,
            event_name: PURCHASE.to_string(),
            event_time: p.at.min(now),
            value_cents: Some(p.value_cents),
            currency: Some(p.currency.to_string()),
            status: ConversionStatus::Pending.to_string(),
            attempts: 0,
            due_at: Some(now),
            lease_owner: None,
            lease_until: None,
            ph: None,
            external_id: None,
            last_error: None,
            created_at: now,
            sent_at: None,
            updated_at: now,
            meta_lead_id: None,
            crm_event_name: None,
            web_conversion_id: Some(p.conversion_id.to_string()),
            web_session_id: Some(p.session_id.to_string()),
            sent_event_id: Some(web_sent_event_id(p)),
        },
    )?;
    Ok(true)
}

/// `enqueueColumnEvent`: the lead entered `column`; queues the event the
/// site's event map points the column at, if any. `Purchase` never comes from
/// a column (the map cannot hold it).
pub fn enqueue_column_event(
    conn: &mut AnyConnection,
    now: i64,
    site_id: &str,
    lead_id: &str,
    column: &str,
    at: i64,
    hashes: &ContactHashes,
) -> Result<bool> {
    let Some(event) = store::column_event(conn, site_id, column)? else { return Ok(false) };
    if !matches!(event.as_str(), LEAD | QUALIFIED_LEAD | SCHEDULE) {
        return Ok(false);
    }
    let name = crate::store::leads::board::list(conn, site_id)?.into_iter().find(|c| c.key == column).map(|c| c.name);
    let e = Enqueue { site_id, lead_id, event_name: &event, at, value_cents: None, crm_name: name.as_deref() };
    enqueue(conn, now, &e, hashes)
}

/// `removeLead`: deletes the lead's conversions and takes its sends out of
/// the per-day counters, in the caller's transaction.
pub fn remove_lead(conn: &mut AnyConnection, lead_id: &str) -> Result<()> {
    for s in store::delete_of_lead(conn, lead_id)? {
        store::bump_day(conn, &s.site_id, utc_day_start(s.sent_at), &s.event_name, -1)?;
    }
    Ok(())
}

/// The leads among `lead_ids` whose events may go by their click id (WA-31),
/// with that click id, and the account they go with: the site's
/// `sendClickIds` on with its account, and a `ctwa_ad` lead with a non-blank
/// click id. Empty when the site's setting is off. Read when an event is
/// queued and again when it is sent, so the setting as it is then applies.
pub fn click_routes(
    conn: &mut crate::db::AnyConnection,
    site_id: &str,
    lead_ids: &[String],
) -> crate::error::Result<(String, std::collections::HashMap<String, String>)> {
    let settings = crate::store::meta::click_id_settings(conn, &[site_id.to_string()])?.into_iter().next();
    let Some(account) = settings.filter(|s| s.send_click_ids).and_then(|s| s.whatsapp_business_account_id) else {
        return Ok((String::new(), Default::default()));
    };
    let clicks = crate::store::meta::conversions::lead_clicks(conn, lead_ids)?
        .into_iter()
        .filter(|l| l.origin == crate::service::leads::reports::PAID_ORIGIN)
        .filter_map(|l| Some((l.id, l.click_id.filter(|c| !c.trim().is_empty())?)))
        .collect();
    Ok((account, clicks))
}
