//! The leads context's use cases: `leadsReport`, `listLeads`, `leadJourney`,
//! `leadsDaily`, the same for every transport (one read budget, from the
//! configuration, for all of them).

use serde::Deserialize;
use utoipa::ToSchema;

use super::reads::{self, LeadJourney, ListLeads};
use super::reports::{self, Caps, DailyRow, LeadsDailyArgs, LeadsReport, LeadsReportArgs};
use super::{Lead, formatted};
use crate::error::Result;
use crate::service::api::Caller;
use crate::service::context::Context;
use crate::service::reporting::filters::Filter;

pub async fn leads_report(cx: &Context, caller: &Caller, a: LeadsReportArgs) -> Result<LeadsReport> {
    caller.check_sites(&a.site_ids)?;
    reports::check_report_of(&a, caller.max_sites)?;
    let caps = Caps { max_sites: caller.max_sites, ..Caps::from_config(&cx.config) };
    cx.read(move |c| reports::leads_report(c, a, caps)).await
}

/// `leadsReport` for the operator's screen: each row with its money and
/// ratios written out, each site's in its own currency.
pub async fn formatted_leads_report(
    cx: &Context,
    caller: &Caller,
    a: LeadsReportArgs,
) -> Result<formatted::FormattedLeadsReport> {
    let ids = a.site_ids.clone();
    let report = leads_report(cx, caller, a).await?;
    let sites = cx
        .read(move |c| {
            Ok(crate::service::sites::list(c)?.into_iter().filter(|s| ids.contains(&s.site_id)).collect::<Vec<_>>())
        })
        .await?;
    Ok(formatted::leads_report(report, &sites))
}

/// `listLeads`' arguments: the sites as a list (the host's query string joins them).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListLeadsArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    pub ad_id: Option<String>,
    pub before: Option<i64>,
    pub before_lead_id: Option<String>,
    pub limit: Option<i64>,
    /// Only the leads that pass these (REPORTING §3; the leads' dimensions).
    #[serde(default)]
    pub filters: Vec<Filter>,
}

pub async fn list_leads(cx: &Context, caller: &Caller, a: ListLeadsArgs) -> Result<Vec<Lead>> {
    caller.check_sites(&a.site_ids)?;
    let q = ListLeads {
        site_ids: a.site_ids.join(","),
        from: a.from,
        to: a.to,
        ad_id: a.ad_id,
        before: a.before,
        before_lead_id: a.before_lead_id,
        limit: a.limit,
        filters: None,
    };
    let filters = a.filters;
    cx.read(move |c| reads::list(c, q, &filters)).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeadJourneyArgs {
    pub site_id: String,
    pub lead_id: String,
}

pub async fn lead_journey(cx: &Context, caller: &Caller, a: LeadJourneyArgs) -> Result<LeadJourney> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| reads::journey(c, &a.site_id, &a.lead_id)).await
}

/// `leadJourney` for the lead's panel: each stage change's revenue written out.
pub async fn formatted_lead_journey(
    cx: &Context,
    caller: &Caller,
    a: LeadJourneyArgs,
) -> Result<formatted::FormattedJourney> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| {
        let currency = crate::service::sites::get(c, &a.site_id)?.currency;
        Ok(formatted::journey(reads::journey(c, &a.site_id, &a.lead_id)?, &currency))
    })
    .await
}

pub async fn leads_daily(cx: &Context, caller: &Caller, a: LeadsDailyArgs) -> Result<Vec<DailyRow>> {
    caller.check_sites(&a.site_ids)?;
    let max_sites = caller.max_sites;
    reports::check_daily_of(&a, max_sites)?;
    cx.read(move |c| reports::leads_daily_of(c, a, max_sites)).await
}
