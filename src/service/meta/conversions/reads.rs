//! Reads: [`list`] (`meta.conversions`) and [`counters`] (the `conversions`
//! part of `meta.status`). Neither returns a hash.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use utoipa::ToSchema;

use super::*;
use crate::clock::{DAY_MS, utc_day_start};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::sites;
use crate::service::validate;
use crate::store::meta::conversions::{self as store, ConversionStatus};

/// A conversion as `meta.conversions` shows it: never the hashed user data.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRow {
    pub event_id: String,
    /// `Lead`, `QualifiedLead`, `Schedule` or `Purchase`.
    pub event_name: String,
    pub lead_id: Option<String>,
    /// The lead's label as it is now.
    pub lead_label: Option<String>,
    /// The lead's ad as it is now.
    pub ad_id: Option<String>,
    /// From the ad catalog, when synced or named.
    pub ad_name: Option<String>,
    /// Purchase only.
    pub value_cents: Option<i64>,
    /// `pending`, `sent` or `failed`.
    pub status: String,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    /// Beyond the seed: why the last attempt failed (a code first), null when sent.
    pub last_error: Option<String>,
    /// A site sale (rule WA-33): the ledger conversion sent as a `website`
    /// Purchase (no lead); absent for a lead's event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversion_id: Option<String>,
}

/// `meta.conversions`: the site's conversions newest first; `limit` 1–50
/// (default 50); `before` (the last row's createdAt) pages strictly before it,
/// and with `beforeEventId` (its eventId) also through rows of that millisecond.
pub fn list(
    conn: &mut AnyConnection,
    site_id: &str,
    limit: Option<i64>,
    before: Option<i64>,
    before_event_id: Option<&str>,
) -> Result<Vec<ConversionRow>> {
    let limit = limit.unwrap_or(50);
    if !(1..=50).contains(&limit) {
        return Err(Error::invalid("limit must be 1-50"));
    }
    if let Some(b) = before {
        validate::time("before", b)?;
    }
    if let Some(id) = before_event_id {
        if before.is_none() {
            return Err(Error::invalid("beforeEventId goes with before"));
        }
        if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(Error::invalid("beforeEventId must be an eventId (64 lowercase hex characters)"));
        }
    }
    sites::require(conn, site_id)?;
    let rows = store::page(conn, site_id, limit, before.map(|b| (b, before_event_id)))?;
    let lead_ids: Vec<String> = rows.iter().filter_map(|r| r.lead_id.clone()).collect();
    let leads: HashMap<String, store::LeadFacts> =
        store::lead_facts(conn, &lead_ids)?.into_iter().map(|l| (l.id.clone(), l)).collect();
    let ad_ids: Vec<String> = leads.values().map(|l| l.ad_id.clone()).filter(|a| !a.is_empty()).collect();
    let catalog: HashMap<String, String> = crate::store::meta::sync::catalog_of(conn, &ad_ids)?
        .into_iter()
        .filter_map(|c| c.name.map(|n| (c.ad_id, n)))
        .collect();
    let names = crate::service::leads::names::Names::load(conn, &[site_id.to_string()])?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let lead = r.lead_id.as_ref().and_then(|id| leads.get(id));
            let ad_id = lead.map(|l| l.ad_id.clone()).filter(|a| !a.is_empty());
            let ad_name = ad_id
                .as_deref()
                .and_then(|a| catalog.get(a).cloned().or_else(|| names.get(site_id, "ad", a)))
                .or_else(|| lead.and_then(|l| l.ad_name.clone()));
            ConversionRow {
                value_cents: if r.event_name == PURCHASE { r.value_cents } else { None },
                lead_label: lead.and_then(|l| l.label.clone()),
                ad_id,
                ad_name,
                event_id: r.event_id,
                event_name: r.event_name,
                lead_id: r.lead_id,
                status: r.status,
                created_at: r.created_at,
                sent_at: r.sent_at,
                last_error: r.last_error,
                conversion_id: r.web_conversion_id,
            }
        })
        .collect())
}

/// Events Meta accepted in the last 30 UTC days, by event.
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema, PartialEq, Eq)]
pub struct Last30d {
    #[serde(rename = "Purchase")]
    pub purchase: i64,
    #[serde(rename = "QualifiedLead")]
    pub qualified_lead: i64,
    #[serde(rename = "Lead")]
    pub lead: i64,
    #[serde(rename = "Schedule")]
    pub schedule: i64,
}

/// The `conversions` part of a `meta.status` entry.
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionCounters {
    pub pending: i64,
    pub sent: i64,
    pub failed: i64,
    /// Accepted by Meta in the 30 UTC days up to `now` (today and the 29 before); null without `now`.
    pub last30d: Option<Last30d>,
    /// Accepted by Meta on `now`'s UTC day; null without `now`.
    pub sent_today: Option<i64>,
}

/// The conversion counters of each of `site_ids` (every one present, zeros
/// for a site without conversions): the queue by status, and with `now` the
/// per-day counters (at most 30 days × 4 events per site, read through their
/// primary key, never a scan of the queue). Checks nothing about the sites.
pub fn counters(
    conn: &mut AnyConnection,
    site_ids: &[String],
    now: Option<i64>,
) -> Result<BTreeMap<String, ConversionCounters>> {
    let mut out: BTreeMap<String, ConversionCounters> = site_ids
        .iter()
        .map(|s| {
            let base = ConversionCounters {
                last30d: now.map(|_| Last30d::default()),
                sent_today: now.map(|_| 0),
                ..ConversionCounters::default()
            };
            (s.clone(), base)
        })
        .collect();
    for c in store::status_counts(conn, site_ids)? {
        if let Some(e) = out.get_mut(&c.site_id) {
            match ConversionStatus::parse(&c.status) {
                Some(ConversionStatus::Pending) => e.pending += c.n,
                Some(ConversionStatus::Sent) => e.sent += c.n,
                Some(ConversionStatus::Failed) => e.failed += c.n,
                // A status this version does not know (a newer one's) counts nowhere.
                None => {}
            }
        }
    }
    if let Some(now) = now {
        let today = utc_day_start(now);
        for d in store::day_counts(conn, site_ids, today - 29 * DAY_MS, today)? {
            let Some(e) = out.get_mut(&d.site_id) else { continue };
            if let Some(l) = e.last30d.as_mut() {
                match d.event_name.as_str() {
                    PURCHASE => l.purchase += d.sent,
                    QUALIFIED_LEAD => l.qualified_lead += d.sent,
                    LEAD => l.lead += d.sent,
                    SCHEDULE => l.schedule += d.sent,
                    _ => {}
                }
            }
            if d.day == today {
                *e.sent_today.get_or_insert(0) += d.sent;
            }
        }
    }
    Ok(out)
}
