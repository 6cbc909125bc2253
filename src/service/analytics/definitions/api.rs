//! The definitions' use cases (the configure scope): list, upsert and remove
//! goals, funnels and affiliates. An upsert answers the definition's id.

use serde::Deserialize;
use utoipa::ToSchema;

use super::{Affiliate, Funnel, Goal, UpsertAffiliate, UpsertFunnel, UpsertGoal};
use crate::error::Result;
use crate::service::api::decode::SiteArgs;
use crate::service::api::{Caller, Removed};
use crate::service::context::Context;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GoalIdArgs {
    pub site_id: String,
    pub goal_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FunnelIdArgs {
    pub site_id: String,
    pub funnel_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AffiliateIdArgs {
    pub site_id: String,
    pub affiliate_id: String,
}

pub async fn list_goals(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<Vec<Goal>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| super::list_goals(c, &a.site_id)).await
}

pub async fn upsert_goal(cx: &Context, caller: &Caller, a: UpsertGoal) -> Result<String> {
    caller.check_site(&a.site_id)?;
    super::check_goal(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::upsert_goal(c, now, a)).await
}

pub async fn remove_goal(cx: &Context, caller: &Caller, a: GoalIdArgs) -> Result<Removed> {
    caller.check_site(&a.site_id)?;
    let now = cx.now();
    cx.write_plain(move |c| super::remove_goal(c, now, &a.site_id, &a.goal_id)).await
}

pub async fn list_funnels(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<Vec<Funnel>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| super::list_funnels(c, &a.site_id)).await
}

pub async fn upsert_funnel(cx: &Context, caller: &Caller, a: UpsertFunnel) -> Result<String> {
    caller.check_site(&a.site_id)?;
    super::check_funnel(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::upsert_funnel(c, now, a)).await
}

pub async fn remove_funnel(cx: &Context, caller: &Caller, a: FunnelIdArgs) -> Result<Removed> {
    caller.check_site(&a.site_id)?;
    cx.write_plain(move |c| super::remove_funnel(c, &a.site_id, &a.funnel_id)).await
}

pub async fn list_affiliates(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<Vec<Affiliate>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| super::list_affiliates(c, &a.site_id)).await
}

pub async fn upsert_affiliate(cx: &Context, caller: &Caller, a: UpsertAffiliate) -> Result<String> {
    caller.check_site(&a.site_id)?;
    super::check_affiliate(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::upsert_affiliate(c, now, a)).await
}

pub async fn remove_affiliate(cx: &Context, caller: &Caller, a: AffiliateIdArgs) -> Result<Removed> {
    caller.check_site(&a.site_id)?;
    let now = cx.now();
    cx.write_plain(move |c| super::remove_affiliate(c, now, &a.site_id, &a.affiliate_id)).await
}
