//! The reports' use cases: overview, live visitors, sessions and journeys,
//! the ledger's reads, the definition reports, vitals and the site map. Each
//! checks the caller's sites and reads in one transaction.

use super::affiliates::{self, AffiliatesReport};
use super::funnel_preview;
use super::funnels::{self, FunnelsReport};
use super::goals::{self, GoalsReport};
use super::live::{LiveArgs, LiveVisitors};
use super::overview::{self, Overview, OverviewArgs};
use super::pages::Page;
use super::sessions::{self, JourneyEvent, SessionSummary, VisitorJourney};
use super::site_map::{self, SiteMap};
use super::vitals::{self, VitalsReport};
use crate::error::{Error, Result};
use crate::service::analytics::conversions::{self, Conversion, RevenueSummary};
use crate::service::analytics::people;
use crate::service::api::Caller;
use crate::service::context::Context;

pub async fn overview(cx: &Context, caller: &Caller, a: OverviewArgs) -> Result<Overview> {
    caller.check_sites(&a.site_ids)?;
    let (public, max_sites) = (caller.public, caller.max_sites);
    cx.read(move |c| overview::overview_of(c, a, public, max_sites)).await
}

pub async fn live_visitors(cx: &Context, caller: &Caller, a: LiveArgs) -> Result<LiveVisitors> {
    caller.check_sites(&a.site_ids)?;
    let skew = cx.config.live_now_skew.as_millis() as i64;
    // A public link must not replay past live windows (rule PUB-06).
    if caller.public && (a.now - cx.now()).abs() > skew {
        return Err(Error::invalid("now must be within RASTRO_LIVE_NOW_SKEW of the server clock"));
    }
    let profiles = caller.sees_profiles(cx.capabilities());
    super::live::live_visitors_with(cx, a, caller.public, caller.max_sites, profiles).await
}

pub async fn get_session(cx: &Context, caller: &Caller, a: sessions::SessionArgs) -> Result<Option<SessionSummary>> {
    caller.check_site(&a.site_id)?;
    let profiles = caller.sees_profiles(cx.capabilities());
    cx.read(move |c| {
        let mut v = sessions::get_session(c, a)?;
        if profiles && let Some(s) = v.as_mut() {
            people::attach(c, std::slice::from_mut(s))?;
        }
        Ok(v)
    })
    .await
}

pub async fn list_sessions(
    cx: &Context,
    caller: &Caller,
    a: sessions::ListSessionsArgs,
) -> Result<Page<SessionSummary>> {
    caller.check_site(&a.site_id)?;
    let key = cursor_key(cx).await?;
    let profiles = caller.sees_profiles(cx.capabilities());
    cx.read(move |c| {
        let mut v = sessions::list_sessions(c, &key, a)?;
        if profiles {
            people::attach(c, &mut v.page)?;
        }
        Ok(v)
    })
    .await
}

pub async fn session_journey(cx: &Context, caller: &Caller, a: sessions::JourneyArgs) -> Result<Page<JourneyEvent>> {
    caller.check_site(&a.site_id)?;
    let key = cursor_key(cx).await?;
    cx.read(move |c| sessions::session_journey(c, &key, a)).await
}

pub async fn visitor_journey(cx: &Context, caller: &Caller, a: sessions::VisitorJourneyArgs) -> Result<VisitorJourney> {
    caller.check_sites(&a.site_ids)?;
    cx.read(move |c| sessions::visitor_journey(c, a)).await
}

pub async fn list_conversions(
    cx: &Context,
    caller: &Caller,
    a: conversions::ListConversionsArgs,
) -> Result<Page<Conversion>> {
    caller.check_site(&a.site_id)?;
    let key = cursor_key(cx).await?;
    cx.read(move |c| conversions::list(c, &key, a)).await
}

pub async fn revenue_summary(cx: &Context, caller: &Caller, a: conversions::RevenueArgs) -> Result<RevenueSummary> {
    caller.check_sites(&a.site_ids)?;
    cx.read(move |c| conversions::revenue_summary(c, a)).await
}

pub async fn goals_report(cx: &Context, caller: &Caller, a: goals::GoalsArgs) -> Result<GoalsReport> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| goals::goals_report(c, a)).await
}

pub async fn funnels_report(cx: &Context, caller: &Caller, a: funnels::FunnelsArgs) -> Result<FunnelsReport> {
    caller.check_site(&a.site_id)?;
    let cap = cx.config.report_funnel_row_cap;
    cx.read_pair(move |c, helper| funnels::funnels_report(c, helper, a, cap)).await
}

pub async fn preview_funnel(
    cx: &Context,
    caller: &Caller,
    a: funnel_preview::PreviewFunnelArgs,
) -> Result<funnel_preview::FunnelPreview> {
    caller.check_site(&a.site_id)?;
    let cap = cx.config.report_funnel_row_cap;
    cx.read(move |c| funnel_preview::preview_funnel(c, a, cap)).await
}

pub async fn affiliates_report(
    cx: &Context,
    caller: &Caller,
    a: affiliates::AffiliatesArgs,
) -> Result<AffiliatesReport> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| affiliates::affiliates_report(c, a)).await
}

pub async fn vitals_report(cx: &Context, caller: &Caller, a: vitals::VitalsArgs) -> Result<VitalsReport> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| vitals::vitals_report(c, a)).await
}

pub async fn site_map(cx: &Context, caller: &Caller, a: site_map::SiteMapArgs) -> Result<SiteMap> {
    caller.check_sites(&a.site_ids)?;
    cx.read(move |c| site_map::site_map(c, a)).await
}

/// The key that signs pagination cursors: made once for the database, read
/// once per process.
pub async fn cursor_key(cx: &crate::service::context::Context) -> Result<Vec<u8>> {
    use crate::service::effects::{Effects, Written};
    cx.analytics
        .cursor_key
        .get_or_try_init(|| async {
            let fresh: [u8; 32] = crate::ids::random_bytes()?;
            cx.write(move |c| {
                let key = crate::store::analytics::key(c, "cursor", fresh)?;
                Ok(Written::new(key, Effects::quiet()))
            })
            .await
        })
        .await
        .cloned()
}
