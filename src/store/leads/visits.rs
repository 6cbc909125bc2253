//! The WhatsApp bridge's rows (docs/whatsapp.md): the site visit a lead was
//! matched to (`lead_visits`), the Meta ad a visit's URL parameters name, and
//! the ledger conversions of visits that came from an ad
//! (`web_ad_conversions`), which the lead reports add to the ad's row.

use std::collections::BTreeMap;

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::{ad_catalog, ad_labels, lead_visits, site_ad_accounts, web_ad_conversions};

#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable)]
#[diesel(table_name = lead_visits)]
#[diesel(treat_none_as_default_value = false)]
pub struct LeadVisitRow {
    pub lead_id: String,
    pub site_id: String,
    pub visitor_id: String,
    pub session_id: String,
    pub source: String,
    pub medium: String,
    pub campaign: Option<String>,
    pub landing_path: String,
    pub affiliate_id: Option<String>,
    pub clicked_at: i64,
    pub clicked_path: String,
    pub lead_at: i64,
}

pub fn insert(conn: &mut AnyConnection, row: &LeadVisitRow) -> QueryResult<()> {
    diesel::insert_into(lead_visits::table).values(row).execute(conn).map(|_| ())
}

pub fn of_lead(conn: &mut AnyConnection, lead_id: &str) -> QueryResult<Option<LeadVisitRow>> {
    lead_visits::table.find(lead_id).select(LeadVisitRow::as_select()).first(conn).optional()
}

/// The leads the visitors of some sites became, oldest first (a row's
/// `site_id` says whose: a visitor id may recur on another of the sites).
pub fn of_visitors(
    conn: &mut AnyConnection,
    site_ids: &[String],
    visitor_ids: &[String],
) -> QueryResult<Vec<LeadVisitRow>> {
    lead_visits::table
        .filter(lead_visits::site_id.eq_any(site_ids))
        .filter(lead_visits::visitor_id.eq_any(visitor_ids))
        .order((lead_visits::lead_at.asc(), lead_visits::lead_id.asc()))
        .select(LeadVisitRow::as_select())
        .load(conn)
}

/// A campaign, ad set and ad, each '' where unknown (as `leads` keeps them).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct AdIds {
    pub campaign_id: String,
    pub adset_id: String,
    pub ad_id: String,
}

/// The Meta object a visit's URL parameters name (rule WA-13): the first of
/// `candidates` (most specific first) that is an ad of an account linked to
/// the site, or an ad, ad set or campaign of the synced catalogue or of the
/// names the site's leads gave. The catalogue fills an ad's parents.
pub fn ad_of_visit(conn: &mut AnyConnection, site_id: &str, candidates: &[&str]) -> QueryResult<Option<AdIds>> {
    for id in candidates {
        let linked = site_ad_accounts::table
            .filter(site_ad_accounts::site_id.eq(site_id))
            .select(site_ad_accounts::ad_account_id);
        if let Some((campaign_id, adset_id, ad_id)) = ad_catalog::table
            .filter(ad_catalog::ad_account_id.eq_any(linked))
            .filter(ad_catalog::ad_id.eq(id).or(ad_catalog::adset_id.eq(id)).or(ad_catalog::campaign_id.eq(id)))
            .select((ad_catalog::campaign_id, ad_catalog::adset_id, ad_catalog::ad_id))
            .first::<(String, String, String)>(conn)
            .optional()?
        {
            // The id may be the ad's, its ad set's or its campaign's: keep the levels it names.
            return Ok(Some(if ad_id == *id {
                AdIds { campaign_id, adset_id, ad_id }
            } else if adset_id == *id {
                AdIds { campaign_id, adset_id, ad_id: String::new() }
            } else {
                AdIds { campaign_id, ..AdIds::default() }
            }));
        }
        let level: Option<String> = ad_labels::table
            .filter(ad_labels::site_id.eq(site_id))
            .filter(ad_labels::object_id.eq(id))
            .select(ad_labels::level)
            .first(conn)
            .optional()?;
        let id = id.to_string();
        match level.as_deref() {
            Some("ad") => return Ok(Some(AdIds { ad_id: id, ..AdIds::default() })),
            Some("adset") => return Ok(Some(AdIds { adset_id: id, ..AdIds::default() })),
            Some("campaign") => return Ok(Some(AdIds { campaign_id: id, ..AdIds::default() })),
            _ => {}
        }
    }
    Ok(None)
}

#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_ad_conversions)]
pub struct AdConversionRow {
    pub conversion_id: String,
    pub site_id: String,
    pub occurred_at: i64,
    pub campaign_id: String,
    pub adset_id: String,
    pub ad_id: String,
    pub value_cents: i64,
}

pub fn insert_ad_conversion(conn: &mut AnyConnection, row: &AdConversionRow) -> QueryResult<()> {
    diesel::insert_into(web_ad_conversions::table).values(row).execute(conn).map(|_| ())
}

/// Site conversions and their revenue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SiteSales {
    pub conversions: i64,
    pub revenue_cents: i64,
}

/// The ledger conversions of ad visits in `[from, to)`, per (site, campaign,
/// ad set, ad). Sales are few next to events, so the range is read as rows.
pub fn ad_conversions(
    conn: &mut AnyConnection,
    site_ids: &[String],
    (from, to): (i64, i64),
) -> QueryResult<BTreeMap<(String, AdIds), SiteSales>> {
    let rows: Vec<(String, String, String, String, i64)> = web_ad_conversions::table
        .filter(web_ad_conversions::site_id.eq_any(site_ids))
        .filter(web_ad_conversions::occurred_at.ge(from))
        .filter(web_ad_conversions::occurred_at.lt(to))
        .select((
            web_ad_conversions::site_id,
            web_ad_conversions::campaign_id,
            web_ad_conversions::adset_id,
            web_ad_conversions::ad_id,
            web_ad_conversions::value_cents,
        ))
        .load(conn)?;
    let mut out: BTreeMap<(String, AdIds), SiteSales> = BTreeMap::new();
    for (site_id, campaign_id, adset_id, ad_id, cents) in rows {
        let sales = out.entry((site_id, AdIds { campaign_id, adset_id, ad_id })).or_default();
        sales.conversions += 1;
        sales.revenue_cents += cents;
    }
    Ok(out)
}
