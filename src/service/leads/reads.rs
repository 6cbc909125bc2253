//! The lead reads: `listLeads` (newest first, paged by `before` and
//! `beforeLeadId`) and `leadJourney` (a lead's ad, names from the catalog
//! sync, and its history of stages).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::*;
use crate::service::reporting::filters::Filter;
use crate::store::leads::conditions::Condition;

#[derive(Debug, Deserialize, ToSchema, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListLeads {
    /// Comma-separated, 1–10 unique sites.
    pub site_ids: String,
    pub from: i64,
    pub to: i64,
    pub ad_id: Option<String>,
    /// The last row's firstAt: the page holds leads strictly before it.
    pub before: Option<i64>,
    /// With `before`, the last row's leadId, to page through leads of the same millisecond.
    pub before_lead_id: Option<String>,
    /// 1–100, default 50.
    pub limit: Option<i64>,
    /// A JSON array of filters on the leads' dimensions, e.g.
    /// `[{"dim":"stage","op":"is","values":["won"]}]` (REPORTING §3).
    pub filters: Option<String>,
}

/// The `filters` query parameter (JSON text), decoded.
pub fn filters_param(text: Option<&str>) -> Result<Vec<Filter>> {
    match text {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(t).map_err(|_| {
            Error::invalid("filters must be a JSON array of {dim, op, values} (see the OpenAPI document)")
        }),
    }
}

/// `listLeads`; `filters` on the leads' dimensions (REPORTING §3; the host's
/// query gives them as JSON text in `filters`).
pub fn list(conn: &mut AnyConnection, q: ListLeads, filters: &[Filter]) -> Result<Vec<Lead>> {
    let conditions = super::filters::conditions(filters)?;
    let site_ids: Vec<String> = q.site_ids.split(',').map(|s| s.trim().to_string()).collect();
    validate::site_ids(&site_ids)?;
    validate::range(q.from, q.to, 366)?;
    check_ad_id("adId", &q.ad_id)?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(Error::invalid("limit must be 1-100"));
    }
    if let Some(b) = q.before {
        validate::time("before", b)?;
    }
    if q.before_lead_id.is_some() && q.before.is_none() {
        return Err(Error::invalid("beforeLeadId goes with before"));
    }
    if let Some(id) = &q.before_lead_id {
        validate::text("beforeLeadId", id, 1, 64)?;
    }
    sites::require_many(conn, &site_ids)?;
    let rows = store::list(
        conn,
        &ListFilter {
            site_ids: &site_ids,
            from: q.from,
            to: q.to,
            ad_id: q.ad_id.as_deref(),
            before: q.before.map(|b| (b, q.before_lead_id.as_deref())),
            limit,
            conditions: &conditions,
        },
    )?;
    Ok(rows.into_iter().map(Lead::from).collect())
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JourneyAd {
    pub ad_id: String,
    pub ad_name: Option<String>,
    pub adset_id: Option<String>,
    pub adset_name: Option<String>,
    pub campaign_id: Option<String>,
    pub campaign_name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub event_id: String,
    pub stage: Option<Stage>,
    pub column: Option<String>,
    pub revenue_cents: Option<i64>,
    pub occurred_at: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeadJourney {
    pub lead: Lead,
    pub ad: Option<JourneyAd>,
    pub history: Vec<HistoryEntry>,
    /// The site visit whose WhatsApp tap the lead came from (rule WA-14);
    /// absent for a lead recorded without a matched `webRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visit: Option<LeadVisit>,
}

/// A lead's site visit, copied when the lead arrived (docs/whatsapp.md §2).
#[derive(Debug, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LeadVisit {
    pub visitor_id: String,
    pub session_id: String,
    pub source: String,
    pub medium: String,
    pub campaign: Option<String>,
    pub landing_page: String,
    pub affiliate_id: Option<String>,
    /// When the WhatsApp link was tapped, and on which page.
    pub clicked_at: i64,
    pub clicked_page: String,
}

impl From<crate::store::leads::visits::LeadVisitRow> for LeadVisit {
    fn from(v: crate::store::leads::visits::LeadVisitRow) -> LeadVisit {
        LeadVisit {
            visitor_id: v.visitor_id,
            session_id: v.session_id,
            source: v.source,
            medium: v.medium,
            campaign: v.campaign,
            landing_page: v.landing_path,
            affiliate_id: v.affiliate_id,
            clicked_at: v.clicked_at,
            clicked_page: v.clicked_path,
        }
    }
}

pub fn journey(conn: &mut AnyConnection, site_id: &str, lead_id: &str) -> Result<LeadJourney> {
    validate::text("leadId", lead_id, 1, 64)?;
    sites::require(conn, site_id)?;
    let row = store::find(conn, site_id, lead_id)?.ok_or_else(|| Error::not_found("unknown lead"))?;
    let names = crate::service::leads::names::Names::load(conn, std::slice::from_ref(&row.site_id))?;
    // The catalog sync's names win; the ids the lead lacks come from it too.
    let cat = if row.ad_id.is_empty() {
        None
    } else {
        crate::store::meta::sync::catalog_of(conn, std::slice::from_ref(&row.ad_id))?.pop()
    };
    let adset_id =
        Some(row.adset_id.clone()).filter(|s| !s.is_empty()).or_else(|| cat.as_ref().map(|c| c.adset_id.clone()));
    let campaign_id =
        Some(row.campaign_id.clone()).filter(|s| !s.is_empty()).or_else(|| cat.as_ref().map(|c| c.campaign_id.clone()));
    let (adset_id, campaign_id) = (adset_id.unwrap_or_default(), campaign_id.unwrap_or_default());
    let from_catalog = |level: &str| {
        cat.as_ref().and_then(|c| match level {
            "ad" => c.name.clone(),
            "adset" if c.adset_id == adset_id => c.adset_name.clone(),
            "campaign" if c.campaign_id == campaign_id => c.campaign_name.clone(),
            _ => None,
        })
    };
    let ad = (!row.ad_id.is_empty()).then(|| JourneyAd {
        ad_id: row.ad_id.clone(),
        ad_name: from_catalog("ad")
            .or_else(|| names.get(&row.site_id, "ad", &row.ad_id))
            .or_else(|| row.ad_name.clone()),
        adset_id: opt(&adset_id),
        adset_name: from_catalog("adset")
            .or_else(|| names.get(&row.site_id, "adset", &adset_id))
            .or_else(|| row.adset_name.clone()),
        campaign_id: opt(&campaign_id),
        campaign_name: from_catalog("campaign")
            .or_else(|| names.get(&row.site_id, "campaign", &campaign_id))
            .or_else(|| row.campaign_name.clone()),
    });
    let history = store::history(conn, &row.id)?
        .into_iter()
        .map(|e| HistoryEntry {
            event_id: e.event_id,
            stage: e.stage.as_deref().map(parse_stage),
            column: e.column_key,
            revenue_cents: e.revenue_cents,
            occurred_at: e.occurred_at,
        })
        .collect();
    let visit = crate::store::leads::visits::of_lead(conn, &row.id)?.map(LeadVisit::from);
    Ok(LeadJourney { lead: row.into(), ad, history, visit })
}

/// One page of a site's leads for `leads.csv`: newest first, strictly before
/// `before` (the last row's `(firstAt, leadId)`), at most `size`.
pub fn export_page(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    before: Option<(i64, String)>,
    size: i64,
    conditions: &[Condition],
) -> Result<Vec<Lead>> {
    let site_ids = [site_id.to_string()];
    let before = before.as_ref().map(|(at, id)| (*at, Some(id.as_str())));
    let rows =
        store::list(conn, &ListFilter { site_ids: &site_ids, from, to, ad_id: None, before, limit: size, conditions })?;
    Ok(rows.into_iter().map(Lead::from).collect())
}
