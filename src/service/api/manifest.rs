//! The two functions about the API itself: `manifest` (static metadata,
//! served without a caller) and `connectionStatus` (redacted: no
//! connection, organization or owner ids).

use serde::Serialize;
use utoipa::ToSchema;

use super::caller::Caller;
use super::functions::Function;
use crate::error::Result;
use crate::service::context::Context;
use crate::service::validate;

/// The protocol the manifest and connectionStatus name.
pub const PROTOCOL: &str = "rastro-federation/1";

/// `manifest`: static metadata, served without auth.
#[derive(Debug, Serialize, ToSchema)]
pub struct Manifest {
    pub protocol: &'static str,
    pub capabilities: Vec<&'static str>,
    pub functions: Vec<&'static str>,
    pub limits: Limits,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Most sites in a grant, a token or a request.
    pub max_sites: usize,
    /// Longest range of leadsReport and listLeads, in UTC days.
    pub max_report_days: i64,
    /// Longest range of leadsDaily, in UTC days.
    pub max_daily_days: i64,
    /// Largest listLeads page.
    pub max_list_leads: i64,
    /// Largest metaConversions page.
    pub max_conversions: i64,
    /// Most route patterns of a site (updateSite).
    pub max_route_patterns: usize,
    /// Longest route pattern.
    pub max_route_pattern_length: usize,
    /// Longest hourly `overview`, in hours.
    pub max_hourly_overview_hours: i64,
    /// Most `liveVisitors` rows.
    pub max_live_visitors: i64,
    /// The `liveVisitors` window (`RASTRO_LIVE_WINDOW`).
    pub live_window_ms: i64,
    /// Largest `listSessions` page.
    pub max_sessions_page: i64,
    /// Largest `sessionJourney` page.
    pub max_journey_page: i64,
    /// Most `visitorJourney` events.
    pub max_journey_events: i64,
    /// Most events in one tracker batch.
    pub max_events_per_batch: usize,
    /// Largest `listConversions` page.
    pub max_list_conversions: i64,
    /// Definitions per site, and their bounds (§5.7).
    pub max_goals: usize,
    pub max_funnels: usize,
    pub min_funnel_steps: usize,
    pub max_funnel_steps: usize,
    pub min_funnel_window_ms: i64,
    pub max_funnel_window_ms: i64,
    pub max_affiliates: usize,
    pub max_commission_bps: i64,
    pub max_affiliate_window_days: i64,
    /// Longest `funnelsReport`, in UTC days.
    pub max_funnel_days: i64,
    /// Retention day counts.
    pub min_retention_days: i64,
    pub max_retention_days: i64,
    /// Longest `vitalsReport`, in complete UTC days.
    pub max_vitals_days: i64,
    /// Longest `siteMap`, in complete UTC days.
    pub max_site_map_days: i64,
    /// Largest `listPeople` page.
    pub max_people_page: i64,
    /// Most tracked links of a site.
    pub max_tracked_links: i64,
}

/// `connectionStatus`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatus {
    /// `active`: a revoked or missing grant never gets this far.
    pub status: &'static str,
    pub protocol: &'static str,
    pub capabilities: Vec<&'static str>,
    pub site_count: usize,
    pub permissions: Vec<&'static str>,
}

/// `manifest`: what this host serves and its limits.
pub fn manifest(cx: &Context) -> Manifest {
    let caps = cx.capabilities();
    Manifest {
        protocol: PROTOCOL,
        capabilities: caps.names(),
        functions: Function::ALL
            .iter()
            .map(|f| f.spec())
            .filter(|f| caps.serves(f.capability))
            .map(|f| f.name)
            .collect(),
        limits: Limits {
            max_sites: validate::MAX_SITES,
            max_report_days: crate::service::leads::reports::REPORT_MAX_DAYS,
            max_daily_days: crate::service::leads::reports::DAILY_MAX_DAYS,
            max_list_leads: 100,
            max_conversions: 50,
            max_route_patterns: 32,
            max_route_pattern_length: 256,
            max_hourly_overview_hours: 24,
            max_live_visitors: crate::service::analytics::reports::live::MAX_LIVE,
            live_window_ms: cx.config.live_window.as_millis() as i64,
            max_sessions_page: crate::service::analytics::reports::sessions::MAX_SESSIONS_PAGE,
            max_journey_page: crate::service::analytics::reports::sessions::MAX_JOURNEY_PAGE,
            max_journey_events: crate::service::analytics::reports::sessions::MAX_JOURNEY_EVENTS,
            max_events_per_batch: crate::service::analytics::ingest::batch::MAX_EVENTS,
            max_list_conversions: crate::service::analytics::conversions::MAX_LIST_CONVERSIONS,
            max_goals: crate::service::analytics::definitions::MAX_GOALS,
            max_funnels: crate::service::analytics::definitions::MAX_FUNNELS,
            min_funnel_steps: crate::service::analytics::definitions::MIN_FUNNEL_STEPS,
            max_funnel_steps: crate::service::analytics::definitions::MAX_FUNNEL_STEPS,
            min_funnel_window_ms: crate::service::analytics::definitions::MIN_FUNNEL_WINDOW_MS,
            max_funnel_window_ms: crate::service::analytics::definitions::MAX_FUNNEL_WINDOW_MS,
            max_affiliates: crate::service::analytics::definitions::MAX_AFFILIATES,
            max_commission_bps: crate::service::analytics::definitions::MAX_COMMISSION_BPS,
            max_affiliate_window_days: crate::service::analytics::definitions::MAX_AFFILIATE_WINDOW_DAYS,
            max_funnel_days: crate::service::analytics::reports::funnels::MAX_FUNNEL_DAYS,
            min_retention_days: crate::service::analytics::retention::MIN_DAYS,
            max_retention_days: crate::service::analytics::retention::MAX_DAYS,
            max_vitals_days: crate::service::analytics::reports::vitals::MAX_DAYS,
            max_site_map_days: crate::service::analytics::reports::site_map::MAX_DAYS,
            max_people_page: crate::service::analytics::people::MAX_PEOPLE_PAGE,
            max_tracked_links: crate::service::analytics::links::MAX_LINKS,
        },
    }
}

/// `connectionStatus`: the caller's own view of its connection.
pub async fn connection_status(cx: &Context, caller: &Caller, _: super::decode::NoArgs) -> Result<ConnectionStatus> {
    Ok(ConnectionStatus {
        status: "active",
        protocol: PROTOCOL,
        capabilities: cx.capabilities().names(),
        site_count: caller.sites.len(),
        permissions: caller.permissions.clone(),
    })
}
