//! The leads context's use cases: `leadsReport`, `listLeads`, `leadJourney`,
//! `leadsDaily`, the same for every transport (one read budget, from the
//! configuration, for all of them).

use serde::Deserialize;
use utoipa::ToSchema;

use super::Lead;
use super::reads::{self, LeadJourney, ListLeads};
use super::reports::{self, Caps, DailyRow, LeadsDailyArgs, LeadsReport, LeadsReportArgs};
use crate::error::Result;
use crate::service::api::Caller;
use crate::service::context::Context;

pub async fn leads_report(cx: &Context, caller: &Caller, a: LeadsReportArgs) -> Result<LeadsReport> {
    caller.check_sites(&a.site_ids)?;
    reports::check_report(&a)?;
    let caps = Caps::from_config(&cx.config);
    cx.read(move |c| reports::leads_report(c, a, caps)).await
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
    };
    cx.read(move |c| reads::list(c, q)).await
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

pub async fn leads_daily(cx: &Context, caller: &Caller, a: LeadsDailyArgs) -> Result<Vec<DailyRow>> {
    caller.check_sites(&a.site_ids)?;
    reports::check_daily(&a)?;
    cx.read(move |c| reports::leads_daily(c, a)).await
}
