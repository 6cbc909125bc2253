//! From a function and its JSON arguments to its use case: decode, call,
//! serialize. No rule lives here; each arm names the use case that holds it.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::caller::Caller;
use super::decode::{NoArgs, args};
use super::functions::Function;
use super::manifest;
use crate::error::{Error, Result};
use crate::service::analytics::{definitions, links, people, reports, retention};
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

/// Runs `function` for `caller` (None only for `manifest`, which needs no caller).
pub async fn call(cx: &Context, caller: Option<&Caller>, function: Function, raw: Value) -> Result<Reply> {
    use Function as F;
    let Some(c) = caller else {
        return run(raw, |_: NoArgs| async { Ok(manifest::manifest(cx)) }).await;
    };
    match function {
        F::Manifest => run(raw, |_: NoArgs| async { Ok(manifest::manifest(cx)) }).await,
        F::ConnectionStatus => run(raw, |a| manifest::connection_status(cx, c, a)).await,
        F::ListSites => run(raw, |a| sites::api::list_sites(cx, c, a)).await,
        F::SiteSettings => run(raw, |a| crate::service::analytics::settings::site_settings(cx, c, a)).await,
        F::UpdateSite => run(raw, |a| crate::service::analytics::settings::update_site(cx, c, a)).await,
        F::LeadsReport => run(raw, |a| leads::api::leads_report(cx, c, a)).await,
        F::ListLeads => run(raw, |a| leads::api::list_leads(cx, c, a)).await,
        F::LeadJourney => run(raw, |a| leads::api::lead_journey(cx, c, a)).await,
        F::LeadsDaily => run(raw, |a| leads::api::leads_daily(cx, c, a)).await,
        F::MetaStatus => meta::api::meta_status(cx, c, args(raw)?).await.map(Reply::Cached),
        F::MetaConversions => run(raw, |a| meta::api::meta_conversions(cx, c, a)).await,
        F::MetaConnection => run(raw, |a| meta::api::meta_connection(cx, c, a)).await,
        F::MetaEventMap => run(raw, |a| meta::api::meta_event_map(cx, c, a)).await,
        F::MetaUnlinkPreview => run(raw, |a| meta::api::meta_unlink_preview(cx, c, a)).await,
        F::ConnectMeta => run(raw, |a| meta::api::connect_meta(cx, c, a)).await,
        F::RefreshMetaAccounts => run(raw, |a| meta::api::refresh_meta_accounts(cx, c, a)).await,
        F::SetMetaPixel => run(raw, |a| meta::api::set_meta_pixel(cx, c, a)).await,
        F::DisconnectMeta => run(raw, |a| meta::api::disconnect_meta(cx, c, a)).await,
        F::LinkMetaAdAccount => run(raw, |a| meta::api::link_meta_ad_account(cx, c, a)).await,
        F::UnlinkMetaAdAccount => run(raw, |a| meta::api::unlink_meta_ad_account(cx, c, a)).await,
        F::RemoveMetaPixel => run(raw, |a| meta::api::remove_meta_pixel(cx, c, a)).await,
        F::SetMetaEventMap => run(raw, |a| meta::api::set_meta_event_map(cx, c, a)).await,
        F::SyncMetaNow => run(raw, |a| meta::api::sync_meta_now(cx, c, a)).await,
        F::Overview => run(raw, |a| reports::api::overview(cx, c, a)).await,
        F::LiveVisitors => run(raw, |a| reports::api::live_visitors(cx, c, a)).await,
        F::GetSession => run(raw, |a| reports::api::get_session(cx, c, a)).await,
        F::ListSessions => run(raw, |a| reports::api::list_sessions(cx, c, a)).await,
        F::SessionJourney => run(raw, |a| reports::api::session_journey(cx, c, a)).await,
        F::VisitorJourney => run(raw, |a| reports::api::visitor_journey(cx, c, a)).await,
        F::DataCoverage => run(raw, |a| retention::api::data_coverage(cx, c, a)).await,
        F::ListConversions => run(raw, |a| reports::api::list_conversions(cx, c, a)).await,
        F::RevenueSummary => run(raw, |a| reports::api::revenue_summary(cx, c, a)).await,
        F::GoalsReport => run(raw, |a| reports::api::goals_report(cx, c, a)).await,
        F::FunnelsReport => run(raw, |a| reports::api::funnels_report(cx, c, a)).await,
        F::AffiliatesReport => run(raw, |a| reports::api::affiliates_report(cx, c, a)).await,
        F::ListGoals => run(raw, |a| definitions::api::list_goals(cx, c, a)).await,
        F::UpsertGoal => run(raw, |a| definitions::api::upsert_goal(cx, c, a)).await,
        F::RemoveGoal => run(raw, |a| definitions::api::remove_goal(cx, c, a)).await,
        F::ListFunnels => run(raw, |a| definitions::api::list_funnels(cx, c, a)).await,
        F::UpsertFunnel => run(raw, |a| definitions::api::upsert_funnel(cx, c, a)).await,
        F::RemoveFunnel => run(raw, |a| definitions::api::remove_funnel(cx, c, a)).await,
        F::ListAffiliates => run(raw, |a| definitions::api::list_affiliates(cx, c, a)).await,
        F::UpsertAffiliate => run(raw, |a| definitions::api::upsert_affiliate(cx, c, a)).await,
        F::RemoveAffiliate => run(raw, |a| definitions::api::remove_affiliate(cx, c, a)).await,
        F::RetentionStatus => run(raw, |a| retention::api::retention_status(cx, c, a)).await,
        F::SetRetentionPolicy => run(raw, |a| retention::api::set_retention_policy(cx, c, a)).await,
        F::DisableRetentionPolicy => run(raw, |a| retention::api::disable_retention_policy(cx, c, a)).await,
        F::VitalsReport => run(raw, |a| reports::api::vitals_report(cx, c, a)).await,
        F::SiteMap => run(raw, |a| reports::api::site_map(cx, c, a)).await,
        F::GetVisitorProfile => run(raw, |a| people::api::get_visitor_profile(cx, c, a)).await,
        F::ListPeople => run(raw, |a| people::api::list_people(cx, c, a)).await,
        F::ListTrackedLinks => run(raw, |a| links::api::list_tracked_links(cx, c, a)).await,
        F::CreateTrackedLink => run(raw, |a| links::api::create_tracked_link(cx, c, a)).await,
        F::UpdateTrackedLink => run(raw, |a| links::api::update_tracked_link(cx, c, a)).await,
        F::DeleteTrackedLink => run(raw, |a| links::api::delete_tracked_link(cx, c, a)).await,
    }
}
