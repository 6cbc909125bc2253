//! `recordLead`: a new key's lead, its event, rollup, names and
//! conversions; a known key's repeat; and the host's call, which answers a
//! replayed event from a read and otherwise writes.

use super::{RecordLead, RecordLeadAnswer, Stage, apply_column, check_record, form_match, key_of, web_visit};
use crate::clock::utc_day_start;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::effects::{Effects, Written};
use crate::service::meta::conversions::{self, contact_hashes};
use crate::service::sites;
use crate::store::leads::rollups::{self, Delta};
use crate::store::leads::{self as store, LeadRow, NewLeadEvent};

fn fill(slot: &mut Option<String>, value: &Option<String>) {
    if slot.is_none() && value.is_some() {
        slot.clone_from(value);
    }
}

/// `recordLead` for a key the site already has: nothing the first call set
/// changes; blanks may be filled and a column move applies like any other.
fn record_repeat(
    conn: &mut AnyConnection,
    now: i64,
    site_id: &str,
    input: &RecordLead,
    hashes: Option<&contact_hashes::ContactHashes>,
) -> Result<Written<RecordLeadAnswer>> {
    // Locks the row (PostgreSQL) before reading it: no change from a stale read.
    let Some(mut row) = store::lock_by_key(conn, site_id, &input.lead_key)? else {
        return Err(Error::unavailable("the lead was removed while it was recorded; retry"));
    };
    let mut queued = false;
    // A repeat: nothing the first call set changes; blanks may be filled and
    // a column move applies like any other.
    if !store::event_seen(conn, &row.id, &input.event_id)? {
        fill(&mut row.label, &input.label);
        fill(&mut row.campaign_name, &input.campaign_name);
        fill(&mut row.adset_name, &input.adset_name);
        fill(&mut row.ad_name, &input.ad_name);
        fill(&mut row.click_id, &input.click_id);
        if let Some(col) = apply_column(conn, &mut row, input.column.as_deref(), input.occurred_at)? {
            store::insert_event(
                conn,
                NewLeadEvent {
                    lead_id: &row.id,
                    site_id,
                    event_id: &input.event_id,
                    stage: None,
                    column_key: Some(&col),
                    revenue_cents: None,
                    occurred_at: input.occurred_at,
                    recorded_at: now,
                },
            )?;
            if let Some(h) = &hashes {
                queued |= conversions::enqueue_column_event(conn, now, site_id, &row.id, &col, input.occurred_at, h)?;
            }
        }
        row.updated_at = now;
        store::save(conn, &row)?;
        remember_names(conn, &row, now)?;
    }
    Ok(Written::new(
        RecordLeadAnswer { lead_id: row.id, created: false, web_ref: None },
        Effects::lead_write(site_id, queued),
    ))
}

/// `recordLead`; its effects say whether it queued a conversion (then the
/// pixel's sender wakes and meta.status's cached answers go).
pub fn record(
    conn: &mut AnyConnection,
    now: i64,
    site_id: &str,
    input: RecordLead,
) -> Result<Written<RecordLeadAnswer>> {
    check_record(&input)?;
    let site = sites::require(conn, site_id)?;
    let hashes = contact_hashes::accept(input.meta.as_ref(), site_id);

    let mut row = new_row(now, site_id, &input)?;
    let column = apply_column(conn, &mut row, input.column.as_deref(), input.occurred_at)?;
    // The visit a WhatsApp reference names sets the origin and ad before the
    // row and its rollup key are written (rules WA-11, WA-13).
    let web_ref = input.web_ref.as_deref().map(web_visit::check_ref).transpose()?;
    let visit = match &web_ref {
        Some(reference) => web_visit::bind(conn, &mut row, reference)?,
        None => None,
    };
    // A new key goes in with one statement; a key the site already has is a
    // repeat, which binds no visit (rule WA-12).
    if !store::insert_if_new(conn, &row)? {
        return record_repeat(conn, now, site_id, &input, hashes.as_ref());
    }
    if let Some(v) = &visit {
        web_visit::keep(conn, v)?;
    }
    store::insert_event(
        conn,
        NewLeadEvent {
            lead_id: &row.id,
            site_id,
            event_id: &input.event_id,
            stage: Some(Stage::New.as_str()),
            column_key: column.as_deref(),
            revenue_cents: None,
            occurred_at: input.occurred_at,
            recorded_at: now,
        },
    )?;
    rollups::bump(conn, &key_of(&row), Delta { leads: 1, ..Delta::default() })?;
    remember_names(conn, &row, now)?;
    let queued = queue_conversions(conn, now, &site, &row, &input, hashes, column.as_deref())?;
    let outcome = web_ref.map(|_| match visit {
        Some(_) => web_visit::WebRefOutcome::Matched,
        None => web_visit::WebRefOutcome::Unknown,
    });
    // A matched lead shows on its visitor's live row (rule WA-14).
    let effects = Effects::lead_write(site_id, queued)
        .merge(Effects::live(site_id, outcome == Some(web_visit::WebRefOutcome::Matched)));
    Ok(Written::new(RecordLeadAnswer { lead_id: row.id, created: true, web_ref: outcome }, effects))
}

/// A new key's row as `recordLead` makes it (stage new, no column yet).
pub(super) fn new_row(now: i64, site_id: &str, input: &RecordLead) -> Result<LeadRow> {
    Ok(LeadRow {
        id: crate::ids::lead_id(now)?,
        site_id: site_id.to_string(),
        lead_key: input.lead_key.clone(),
        label: input.label.clone(),
        origin: input.origin.clone(),
        campaign_id: input.campaign_id.clone().unwrap_or_default(),
        adset_id: input.adset_id.clone().unwrap_or_default(),
        ad_id: input.ad_id.clone().unwrap_or_default(),
        campaign_name: input.campaign_name.clone(),
        adset_name: input.adset_name.clone(),
        ad_name: input.ad_name.clone(),
        click_id: input.click_id.clone(),
        first_at: input.occurred_at,
        cohort_day: utc_day_start(input.occurred_at),
        stage: Stage::New.as_str().into(),
        stage_at: input.occurred_at,
        ever_qualified: false,
        ever_won: false,
        revenue_cents: 0,
        won_at: None,
        column_key: None,
        column_at: None,
        created_at: now,
        updated_at: now,
    })
}

/// The conversions a new lead queues for the site's pixel: `Lead` when the
/// site sends it, and its column's event; with the contact's hashes, or
/// the form lead's or click id's match (`form_match`). Answers whether any
/// was queued.
pub(super) fn queue_conversions(
    conn: &mut AnyConnection,
    now: i64,
    site: &crate::store::leads::sites::SiteRow,
    row: &LeadRow,
    input: &RecordLead,
    hashes: Option<contact_hashes::ContactHashes>,
    column: Option<&str>,
) -> Result<bool> {
    let Some(h) = hashes.or_else(|| form_match(row)) else { return Ok(false) };
    let mut queued = false;
    if site.send_lead_event {
        let lead = conversions::Enqueue {
            site_id: &row.site_id,
            lead_id: &row.id,
            event_name: conversions::LEAD,
            at: input.occurred_at,
            value_cents: None,
            crm_name: None,
        };
        queued |= conversions::enqueue(conn, now, &lead, &h)?;
    }
    if let Some(col) = column {
        queued |= conversions::enqueue_column_event(conn, now, &row.site_id, &row.id, col, input.occurred_at, &h)?;
    }
    Ok(queued)
}

fn remember_names(conn: &mut AnyConnection, row: &LeadRow, now: i64) -> Result<()> {
    let levels = [
        ("campaign", &row.campaign_id, &row.campaign_name),
        ("adset", &row.adset_id, &row.adset_name),
        ("ad", &row.ad_id, &row.ad_name),
    ];
    let named: Vec<(&str, &str, &str)> = levels
        .iter()
        .filter_map(|(level, id, name)| name.as_deref().filter(|_| !id.is_empty()).map(|n| (*level, id.as_str(), n)))
        .collect();
    rollups::label(conn, &row.site_id, &named, now)?;
    Ok(())
}
