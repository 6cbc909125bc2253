//! From a function and its JSON arguments to its use case: decode, call,
//! serialize. No rule lives here; each row of the table names the use case
//! that holds it, with its argument and answer types, so the same row gives
//! the OpenAPI document its schemas (`schemas`) and cannot drift from what runs.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use super::answers::Removed;
use super::caller::Caller;
use super::decode::{NoArgs, SiteArgs, args};
use super::functions::Function;
use super::manifest;
use crate::error::{Error, Result};
use crate::service::analytics::reports::pages::Page;
use crate::service::analytics::{conversions, definitions, links, people, reports, retention, settings};
use crate::service::context::Context;
use crate::service::read_cache::CachedJson;
use crate::service::{leads, meta, sites};

/// A function's value: built for this call, or a cached metaStatus answer
/// (served as the JSON text it was serialized to once).
#[derive(Debug, Clone)]
pub enum Reply {
    Owned(Value),
    Cached(Arc<CachedJson>),
}

impl Reply {
    pub fn value(&self) -> &Value {
        match self {
            Reply::Owned(v) => v,
            Reply::Cached(a) => &a.value,
        }
    }

    /// The value as JSON text (the cached text itself when there is one).
    pub fn to_json(&self) -> Result<String> {
        match self {
            Reply::Owned(v) => serde_json::to_string(v).map_err(Error::internal),
            Reply::Cached(a) => Ok(a.json.clone()),
        }
    }
}

impl Serialize for Reply {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

/// Decodes `raw` as the use case's arguments, runs it, serializes its answer.
async fn run<A, R, F, Fut>(raw: Value, use_case: F) -> Result<Reply>
where
    A: DeserializeOwned,
    R: Serialize,
    F: FnOnce(A) -> Fut,
    Fut: Future<Output = Result<R>>,
{
    let answer = use_case(args(raw)?).await?;
    serde_json::to_value(answer).map(Reply::Owned).map_err(Error::internal)
}

/// A function's argument and answer schemas, inline, and the named schemas
/// they refer to.
pub struct Schemas {
    /// The argument type's name among `named`.
    pub args_name: String,
    pub answer: RefOr<Schema>,
    pub named: Vec<(String, RefOr<Schema>)>,
}

fn schemas_of<A: ToSchema, R: ToSchema>() -> Schemas {
    let mut named = Vec::new();
    A::schemas(&mut named);
    R::schemas(&mut named);
    // The arguments by name, so the document's argument rules apply to them.
    let args_name = A::name().into_owned();
    named.push((args_name.clone(), A::schema()));
    Schemas { args_name, answer: R::schema(), named }
}

/// The table: each function, its use case, its argument type and its answer type.
macro_rules! use_cases {
    ($($function:ident => $use_case:path, $args:ty => $answer:ty;)*) => {
        /// Runs `function` for `caller` (None only for `manifest`, which needs no caller).
        pub async fn call(cx: &Context, caller: Option<&Caller>, function: Function, raw: Value) -> Result<Reply> {
            let Some(c) = caller else {
                return run(raw, |_: NoArgs| async { Ok(manifest::manifest(cx)) }).await;
            };
            match function {
                Function::Manifest => run(raw, |_: NoArgs| async { Ok(manifest::manifest(cx)) }).await,
                // Served as the JSON text it was serialized to once (the read cache).
                Function::MetaStatus => meta::api::meta_status(cx, c, args(raw)?).await.map(Reply::Cached),
                $(Function::$function => run(raw, |a: $args| async move {
                    let answer: $answer = $use_case(cx, c, a).await?;
                    Ok(answer)
                }).await,)*
            }
        }

        /// The schemas of `function`'s arguments and answer.
        pub fn schemas(function: Function) -> Schemas {
            match function {
                Function::Manifest => schemas_of::<NoArgs, manifest::Manifest>(),
                Function::MetaStatus => schemas_of::<meta::api::MetaStatusArgs, Vec<meta::status::SiteStatus>>(),
                $(Function::$function => schemas_of::<$args, $answer>(),)*
            }
        }
    };
}

use_cases! {
    ConnectionStatus => manifest::connection_status, NoArgs => manifest::ConnectionStatus;
    ListSites => sites::api::list_sites, NoArgs => Vec<sites::api::SiteSummary>;
    SiteSettings => settings::site_settings, SiteArgs => settings::SiteSettings;
    UpdateSite => settings::update_site, settings::UpdateSiteArgs => settings::SiteSettings;
    LeadsReport => leads::api::leads_report, leads::reports::LeadsReportArgs => leads::reports::LeadsReport;
    ListLeads => leads::api::list_leads, leads::api::ListLeadsArgs => Vec<leads::Lead>;
    LeadJourney => leads::api::lead_journey, leads::api::LeadJourneyArgs => leads::reads::LeadJourney;
    LeadsDaily => leads::api::leads_daily, leads::reports::LeadsDailyArgs => Vec<leads::reports::DailyRow>;
    MetaConversions => meta::api::meta_conversions, meta::api::MetaConversionsArgs => Vec<meta::conversions::ConversionRow>;
    MetaConnection => meta::api::meta_connection, NoArgs => Option<meta::connection::ConnectionView>;
    MetaEventMap => meta::api::meta_event_map, meta::api::EventMapArgs => leads::board::EventMap;
    MetaUnlinkPreview => meta::api::meta_unlink_preview, meta::api::AccountArgs => meta::sync::UnlinkPreview;
    ConnectMeta => meta::api::connect_meta, meta::api::ConnectArgs => meta::connection::Listing;
    RefreshMetaAccounts => meta::api::refresh_meta_accounts, NoArgs => meta::connection::Listing;
    SetMetaPixel => meta::api::set_meta_pixel, meta::api::SetPixelArgs => meta::links::Pixel;
    DisconnectMeta => meta::api::disconnect_meta, NoArgs => Removed;
    LinkMetaAdAccount => meta::api::link_meta_ad_account, meta::api::AccountArgs => meta::links::Link;
    UnlinkMetaAdAccount => meta::api::unlink_meta_ad_account, meta::api::AccountArgs => Removed;
    RemoveMetaPixel => meta::api::remove_meta_pixel, SiteArgs => Removed;
    SetMetaEventMap => meta::api::set_meta_event_map, meta::api::SetEventMapArgs => leads::board::EventMap;
    SyncMetaNow => meta::api::sync_meta_now, SiteArgs => meta::sync::SyncNowAnswer;
    MetaPages => meta::lead_ads::api::meta_pages, NoArgs => meta::lead_ads::Pages;
    LinkMetaPage => meta::lead_ads::api::link_meta_page, meta::lead_ads::api::LinkPageArgs => meta::lead_ads::PageLinked;
    UnlinkMetaPage => meta::lead_ads::api::unlink_meta_page, meta::lead_ads::api::LinkPageArgs => meta::lead_ads::PageUnlinked;
    MetaLinkedPages => meta::lead_ads::api::meta_linked_pages, meta::lead_ads::api::LinkedPagesArgs => Vec<meta::lead_ads::SitePages>;
    ReturnMetaFormLead => meta::lead_ads::api::return_meta_form_lead, meta::lead_ads::api::ReturnFormLeadArgs => meta::lead_ads::api::Requeued;
    MetaForms => meta::lead_ads::api::meta_forms, meta::lead_ads::api::FormsArgs => meta::lead_ads::api::Forms;
    RefreshMetaForms => meta::lead_ads::api::refresh_meta_forms, meta::lead_ads::api::FormsArgs => meta::lead_ads::api::FormsRefreshed;
    SetMetaFormRules => meta::lead_ads::api::set_meta_form_rules, meta::lead_ads::api::SetRulesArgs => meta::lead_ads::api::FormRulesView;
    MetaFormRules => meta::lead_ads::api::meta_form_rules, meta::lead_ads::api::RulesArgs => Vec<meta::lead_ads::api::FormRulesView>;
    SimulateMetaFormRules => meta::lead_ads::api::simulate_meta_form_rules, meta::lead_ads::api::SimulateArgs => meta::lead_ads::forms::Outcome;
    MetaFormsReport => meta::lead_ads::api::meta_forms_report, meta::lead_ads::report::FormsReportArgs => meta::lead_ads::report::FormsReport;
    Overview => reports::api::overview, reports::overview::OverviewArgs => reports::overview::Overview;
    LiveVisitors => reports::api::live_visitors, reports::live::LiveArgs => reports::live::LiveVisitors;
    GetSession => reports::api::get_session, reports::sessions::SessionArgs => Option<reports::sessions::SessionSummary>;
    ListSessions => reports::api::list_sessions, reports::sessions::ListSessionsArgs => Page<reports::sessions::SessionSummary>;
    SessionJourney => reports::api::session_journey, reports::sessions::JourneyArgs => Page<reports::sessions::JourneyEvent>;
    VisitorJourney => reports::api::visitor_journey, reports::sessions::VisitorJourneyArgs => reports::sessions::VisitorJourney;
    DataCoverage => retention::api::data_coverage, retention::coverage::CoverageArgs => retention::coverage::DataCoverage;
    ListConversions => reports::api::list_conversions, conversions::ListConversionsArgs => Page<conversions::Conversion>;
    RevenueSummary => reports::api::revenue_summary, conversions::RevenueArgs => conversions::RevenueSummary;
    GoalsReport => reports::api::goals_report, reports::goals::GoalsArgs => reports::goals::GoalsReport;
    FunnelsReport => reports::api::funnels_report, reports::funnels::FunnelsArgs => reports::funnels::FunnelsReport;
    PreviewFunnel => reports::api::preview_funnel, reports::funnel_preview::PreviewFunnelArgs => reports::funnel_preview::FunnelPreview;
    AffiliatesReport => reports::api::affiliates_report, reports::affiliates::AffiliatesArgs => reports::affiliates::AffiliatesReport;
    ListGoals => definitions::api::list_goals, SiteArgs => Vec<definitions::Goal>;
    UpsertGoal => definitions::api::upsert_goal, definitions::UpsertGoal => String;
    RemoveGoal => definitions::api::remove_goal, definitions::api::GoalIdArgs => Removed;
    ListFunnels => definitions::api::list_funnels, SiteArgs => Vec<definitions::Funnel>;
    UpsertFunnel => definitions::api::upsert_funnel, definitions::UpsertFunnel => String;
    RemoveFunnel => definitions::api::remove_funnel, definitions::api::FunnelIdArgs => Removed;
    ListAffiliates => definitions::api::list_affiliates, SiteArgs => Vec<definitions::Affiliate>;
    UpsertAffiliate => definitions::api::upsert_affiliate, definitions::UpsertAffiliate => String;
    RemoveAffiliate => definitions::api::remove_affiliate, definitions::api::AffiliateIdArgs => Removed;
    RetentionStatus => retention::api::retention_status, retention::StatusArgs => retention::RetentionStatus;
    SetRetentionPolicy => retention::api::set_retention_policy, retention::SetPolicy => retention::Policy;
    DisableRetentionPolicy => retention::api::disable_retention_policy, SiteArgs => retention::Disabled;
    VitalsReport => reports::api::vitals_report, reports::vitals::VitalsArgs => reports::vitals::VitalsReport;
    SiteMap => reports::api::site_map, reports::site_map::SiteMapArgs => reports::site_map::SiteMap;
    GetVisitorProfile => people::api::get_visitor_profile, people::ProfileArgs => Option<people::VisitorProfile>;
    ListPeople => people::api::list_people, people::ListPeopleArgs => Page<people::PersonRow>;
    ListTrackedLinks => links::api::list_tracked_links, links::ListArgs => Vec<links::TrackedLink>;
    CreateTrackedLink => links::api::create_tracked_link, links::CreateArgs => String;
    UpdateTrackedLink => links::api::update_tracked_link, links::UpdateArgs => String;
    DeleteTrackedLink => links::api::delete_tracked_link, links::LinkArgs => Removed;
}
