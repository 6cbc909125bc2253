//! The WhatsApp bridge on the lead's side (docs/whatsapp.md §2): a lead that
//! hands back the reference the tracker wrote into the first message
//! inherits the visit that tapped the WhatsApp link: its source, campaign,
//! landing page and affiliate, the origin `site_whatsapp`, and the Meta ad the
//! visit's URL parameters name.

use serde::Serialize;
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::ingest::accept::whatsapp;
use crate::service::analytics::vocabulary::Dimension;
use crate::store::analytics::whatsapp_refs;
use crate::store::analytics::{self as web_sessions, SessionRow};
use crate::store::leads::LeadRow;
use crate::store::leads::visits::{self as store, AdConversionRow, AdIds, LeadVisitRow};

/// The origin of a lead that came from a site visit's WhatsApp tap (WA-11).
pub const SITE_WHATSAPP: &str = "site_whatsapp";
/// The origin whose ad wins over the visit (WA-11).
const CTWA_AD: &str = "ctwa_ad";

/// What became of a `webRef` (present in the answer only when one was sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebRefOutcome {
    /// The lead now carries the visit.
    Matched,
    /// No click on the site gave that reference in the 7 days before the lead.
    Unknown,
}

/// A reference as the host read it, upper-cased: 6 characters of the
/// alphabet, any case (rule WA-10).
pub fn check_ref(reference: &str) -> Result<String> {
    // The shape the tracker mints and acceptance binds (WA-02).
    whatsapp::reference(reference).ok_or_else(|| {
        Error::invalid("webRef must be the 6 characters of a WhatsApp reference (2-9, A-Z without I, L, O)")
    })
}

/// A Meta object id as Ads Manager writes it in a URL parameter: 5–20 digits.
fn meta_id(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| (5..=20).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()))
}

/// The visit a new lead inherits, found by its reference (rule WA-10), and
/// the lead's row changed for it (rules WA-11, WA-13): `None` when the
/// reference binds no click of the site in the 7 days before the lead.
pub fn bind(conn: &mut AnyConnection, row: &mut LeadRow, reference: &str) -> Result<Option<LeadVisitRow>> {
    let Some(click) = whatsapp_refs::lookup(conn, &row.site_id, reference, row.first_at)? else {
        return Ok(None);
    };
    let Some(session) = web_sessions::session(conn, &click.session_id)?.filter(|s| s.site_id == row.site_id) else {
        return Ok(None);
    };
    // A click-to-WhatsApp ad keeps its ad: the visit is context (WA-11).
    if row.origin != CTWA_AD {
        row.origin = SITE_WHATSAPP.to_string();
        if let Some(ad) = ad_of(conn, &row.site_id, &session)? {
            row.campaign_id = ad.campaign_id;
            row.adset_id = ad.adset_id;
            row.ad_id = ad.ad_id;
        }
    }
    Ok(Some(LeadVisitRow {
        lead_id: row.id.clone(),
        site_id: row.site_id.clone(),
        visitor_id: session.visitor_id,
        session_id: session.id,
        source: session.source,
        medium: session.medium,
        campaign: session.campaign,
        landing_path: session.entry_path,
        affiliate_id: session.affiliate_id,
        clicked_at: click.clicked_at,
        clicked_path: click.path,
        lead_at: row.first_at,
    }))
}

/// The Meta ad a session's URL parameters name, the most specific first
/// (`utm_content`, `utm_term`, `utm_campaign`; rule WA-13).
pub fn ad_of(conn: &mut AnyConnection, site_id: &str, session: &SessionRow) -> Result<Option<AdIds>> {
    let candidates: Vec<&str> =
        [&session.content, &session.term, &session.campaign].into_iter().filter_map(meta_id).collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    Ok(store::ad_of_visit(conn, site_id, &candidates)?)
}

/// Keeps a matched lead's visit, and counts the lead under its visit's
/// source and campaign in the overview's breakdowns (rule WA-16).
pub fn keep(conn: &mut AnyConnection, visit: &LeadVisitRow) -> Result<()> {
    store::insert(conn, visit)?;
    let keyed: Vec<(Dimension, &str, i64)> =
        [(Dimension::SourceLeads, Some(visit.source.as_str())), (Dimension::CampaignLeads, visit.campaign.as_deref())]
            .into_iter()
            .filter_map(|(dim, key)| Some((dim, key?, 1)))
            .collect();
    crate::service::analytics::rollup::add_to_breakdowns(conn, &visit.site_id, visit.lead_at, &keyed)
}

/// A ledger sale of a visit from a Meta ad counts on that ad's row of the
/// lead reports, on the sale's time (rule WA-20).
pub fn count_sale(
    conn: &mut AnyConnection,
    session: &SessionRow,
    conversion_id: &str,
    occurred_at: i64,
    value_cents: i64,
) -> Result<()> {
    let Some(ad) = ad_of(conn, &session.site_id, session)? else { return Ok(()) };
    store::insert_ad_conversion(
        conn,
        &AdConversionRow {
            conversion_id: conversion_id.to_string(),
            site_id: session.site_id.clone(),
            occurred_at,
            campaign_id: ad.campaign_id,
            adset_id: ad.adset_id,
            ad_id: ad.ad_id,
            value_cents,
        },
    )?;
    Ok(())
}

/// The custom event a matched lead adds to its visit's session, so a goal or
/// a funnel step can be "became a lead" (rule WA-15).
pub const LEAD_EVENT: &str = "lead";

/// How the site's sessions are cut (the daemon's configuration), for the
/// lead's event to join its visit's session as the tracker's would.
#[derive(Debug, Clone, Copy)]
pub struct SessionRules {
    pub idle_ms: i64,
    pub max_ms: i64,
    pub redact: bool,
}

impl SessionRules {
    pub fn of(config: &crate::config::Config) -> SessionRules {
        SessionRules {
            idle_ms: config.session_idle.as_millis() as i64,
            max_ms: config.session_max.as_millis() as i64,
            redact: config.path_redaction,
        }
    }
}

/// Adds [`LEAD_EVENT`] to the matched lead's clicking session at the lead's
/// time, on the page tapped on (rule WA-15), when that session is still the
/// visitor's and open then; a lead that comes after the visit ended adds
/// nothing (it never opens a session). Answers whether it went in.
pub fn mark_in_session(conn: &mut AnyConnection, rules: SessionRules, lead_id: &str) -> Result<bool> {
    use crate::service::analytics::ingest::accept::{self, Visit};
    use crate::service::analytics::ingest::batch::Incoming;
    let Some(visit) = store::of_lead(conn, lead_id)? else { return Ok(false) };
    let site = crate::service::sites::get(conn, &visit.site_id)?;
    let Some(domain) = site.domains.first() else { return Ok(false) };
    let Ok(url) = url::Url::parse(&format!("https://{domain}{}", visit.clicked_path)) else { return Ok(false) };
    let v = Visit {
        site_id: site.site_id.clone(),
        domains: site.domains.clone(),
        route_patterns: site.route_patterns.clone(),
        visitor_id: visit.visitor_id.clone(),
        received_at: visit.lead_at,
        sent_at: None,
        hash: false,
        redact: rules.redact,
        language: None,
        agent: Default::default(),
        country: None,
        region: None,
        idle_ms: rules.idle_ms,
        max_ms: rules.max_ms,
        // The server's own event: its time is exact, and no domain check.
        trusted: true,
        click_key: None,
        user_agent: None,
        kept_session: None,
    };
    let event = Incoming::Custom { ts: None, url, name: LEAD_EVENT.to_string(), properties: None, origin: None };
    accept::add_to_open_session(conn, &v, &visit.session_id, event)
}
