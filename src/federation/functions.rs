//! The federated functions under their seed names: kind, capability, what
//! they need, whether a public link may call them, and how each one runs
//! through the same `service` functions as the host API. No rule is written
//! here twice; what is here is the federation's own: site scope, the owner
//! `rastro:connection:<id>`, `onlyOwn`, `linkedOutsideScope` and the
//! whole-owner check.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Caller;
use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::service::analytics::conversions as analytics_conversions;
use crate::service::analytics::coverage as analytics_coverage;
use crate::service::analytics::definitions::{
    self as analytics_definitions, UpsertAffiliate, UpsertFunnel, UpsertGoal,
};
use crate::service::analytics::links as tracked_links;
use crate::service::analytics::people as analytics_people;
use crate::service::analytics::reads as analytics;
use crate::service::analytics::sessions as analytics_sessions;
use crate::service::analytics::{
    affiliates as analytics_affiliates, funnels as analytics_funnels, goals as analytics_goals,
    retention as analytics_retention,
};
use crate::service::analytics::{site_map_report, vitals_report};
use crate::service::leads::board::{self, SetEventMap};
use crate::service::leads::reports::{self, LeadsDailyArgs, LeadsReportArgs};
use crate::service::leads::{self, sites};
use crate::service::meta::connection::{self as connection, ConnectWithCode, SecretString, SetMetaConnection};
use crate::service::meta::links::{self as links, LinkAdAccount, SetSitePixel};
use crate::service::meta::{conversions, status as meta_status, sync as meta_sync};
use crate::state::AppState;
use crate::store::meta as meta_store;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Query,
    Mutation,
    Action,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Query => "query",
            Kind::Mutation => "mutation",
            Kind::Action => "action",
        }
    }
}

/// The opt-in surface a function belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Core,
    Leads,
    MetaAds,
    SiteMap,
    VisitorProfiles,
    People,
    TrackedLinks,
}

/// What a caller needs: nothing (manifest), a reader, or the configure scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Nothing,
    Read,
    Configure,
}

/// Every federated function this host serves, in the manifest's order: the one
/// place a seed name is written. Dispatch, the route table and the manifest all
/// go through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    Manifest,
    ConnectionStatus,
    ListSites,
    SiteSettings,
    UpdateSite,
    LeadsReport,
    ListLeads,
    LeadJourney,
    LeadsDaily,
    MetaStatus,
    MetaConversions,
    MetaConnection,
    MetaEventMap,
    MetaUnlinkPreview,
    ConnectMeta,
    RefreshMetaAccounts,
    SetMetaPixel,
    DisconnectMeta,
    LinkMetaAdAccount,
    UnlinkMetaAdAccount,
    RemoveMetaPixel,
    SetMetaEventMap,
    SyncMetaNow,
    Overview,
    LiveVisitors,
    GetSession,
    ListSessions,
    SessionJourney,
    VisitorJourney,
    DataCoverage,
    ListConversions,
    RevenueSummary,
    GoalsReport,
    FunnelsReport,
    AffiliatesReport,
    ListGoals,
    UpsertGoal,
    RemoveGoal,
    ListFunnels,
    UpsertFunnel,
    RemoveFunnel,
    ListAffiliates,
    UpsertAffiliate,
    RemoveAffiliate,
    RetentionStatus,
    SetRetentionPolicy,
    DisableRetentionPolicy,
    VitalsReport,
    SiteMap,
    GetVisitorProfile,
    ListPeople,
    ListTrackedLinks,
    CreateTrackedLink,
    UpdateTrackedLink,
    DeleteTrackedLink,
}

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub kind: Kind,
    pub capability: Capability,
    pub need: Need,
    /// A public link's token may call it.
    pub public: bool,
}

const fn f(name: &'static str, kind: Kind, capability: Capability, need: Need, public: bool) -> Spec {
    Spec { name, kind, capability, need, public }
}

use Capability::{Core, Leads, MetaAds, TrackedLinks};
use Kind::{Action, Mutation, Query};
use Need::{Configure, Nothing, Read};

impl Function {
    /// In the manifest's order.
    pub const ALL: &'static [Function] = &[
        Function::Manifest,
        Function::ConnectionStatus,
        Function::ListSites,
        Function::SiteSettings,
        Function::UpdateSite,
        Function::LeadsReport,
        Function::ListLeads,
        Function::LeadJourney,
        Function::LeadsDaily,
        Function::MetaStatus,
        Function::MetaConversions,
        Function::MetaConnection,
        Function::MetaEventMap,
        Function::MetaUnlinkPreview,
        Function::ConnectMeta,
        Function::RefreshMetaAccounts,
        Function::SetMetaPixel,
        Function::DisconnectMeta,
        Function::LinkMetaAdAccount,
        Function::UnlinkMetaAdAccount,
        Function::RemoveMetaPixel,
        Function::SetMetaEventMap,
        Function::SyncMetaNow,
        Function::Overview,
        Function::LiveVisitors,
        Function::GetSession,
        Function::ListSessions,
        Function::SessionJourney,
        Function::VisitorJourney,
        Function::DataCoverage,
        Function::ListConversions,
        Function::RevenueSummary,
        Function::GoalsReport,
        Function::FunnelsReport,
        Function::AffiliatesReport,
        Function::ListGoals,
        Function::UpsertGoal,
        Function::RemoveGoal,
        Function::ListFunnels,
        Function::UpsertFunnel,
        Function::RemoveFunnel,
        Function::ListAffiliates,
        Function::UpsertAffiliate,
        Function::RemoveAffiliate,
        Function::RetentionStatus,
        Function::SetRetentionPolicy,
        Function::DisableRetentionPolicy,
        Function::VitalsReport,
        Function::SiteMap,
        Function::GetVisitorProfile,
        Function::ListPeople,
        Function::ListTrackedLinks,
        Function::CreateTrackedLink,
        Function::UpdateTrackedLink,
        Function::DeleteTrackedLink,
    ];

    pub const fn spec(self) -> Spec {
        match self {
            Function::Manifest => f("manifest", Query, Core, Nothing, true),
            Function::ConnectionStatus => f("connectionStatus", Query, Core, Read, true),
            Function::ListSites => f("listSites", Query, Core, Read, true),
            Function::SiteSettings => f("siteSettings", Query, Core, Configure, false),
            Function::UpdateSite => f("updateSite", Mutation, Core, Configure, false),
            Function::LeadsReport => f("leadsReport", Query, Leads, Read, false),
            Function::ListLeads => f("listLeads", Query, Leads, Read, false),
            Function::LeadJourney => f("leadJourney", Query, Leads, Read, false),
            Function::LeadsDaily => f("leadsDaily", Query, Leads, Read, false),
            Function::MetaStatus => f("metaStatus", Query, MetaAds, Read, false),
            Function::MetaConversions => f("metaConversions", Query, MetaAds, Read, false),
            Function::MetaConnection => f("metaConnection", Query, MetaAds, Read, false),
            Function::MetaEventMap => f("metaEventMap", Query, MetaAds, Read, false),
            Function::MetaUnlinkPreview => f("metaUnlinkPreview", Query, MetaAds, Read, false),
            Function::ConnectMeta => f("connectMeta", Action, MetaAds, Configure, false),
            Function::RefreshMetaAccounts => f("refreshMetaAccounts", Action, MetaAds, Configure, false),
            Function::SetMetaPixel => f("setMetaPixel", Action, MetaAds, Configure, false),
            Function::DisconnectMeta => f("disconnectMeta", Mutation, MetaAds, Configure, false),
            Function::LinkMetaAdAccount => f("linkMetaAdAccount", Mutation, MetaAds, Configure, false),
            Function::UnlinkMetaAdAccount => f("unlinkMetaAdAccount", Mutation, MetaAds, Configure, false),
            Function::RemoveMetaPixel => f("removeMetaPixel", Mutation, MetaAds, Configure, false),
            Function::SetMetaEventMap => f("setMetaEventMap", Mutation, MetaAds, Configure, false),
            Function::SyncMetaNow => f("syncMetaNow", Mutation, MetaAds, Configure, false),
            Function::Overview => f("overview", Query, Core, Read, true),
            Function::LiveVisitors => f("liveVisitors", Query, Core, Read, true),
            Function::GetSession => f("getSession", Query, Core, Read, false),
            Function::ListSessions => f("listSessions", Query, Core, Read, false),
            Function::SessionJourney => f("sessionJourney", Query, Core, Read, false),
            Function::VisitorJourney => f("visitorJourney", Query, Core, Read, false),
            Function::DataCoverage => f("dataCoverage", Query, Core, Read, true),
            Function::ListConversions => f("listConversions", Query, Core, Read, false),
            Function::RevenueSummary => f("revenueSummary", Query, Core, Read, false),
            Function::GoalsReport => f("goalsReport", Query, Core, Read, false),
            Function::FunnelsReport => f("funnelsReport", Query, Core, Read, false),
            Function::AffiliatesReport => f("affiliatesReport", Query, Core, Read, false),
            Function::ListGoals => f("listGoals", Query, Core, Configure, false),
            Function::UpsertGoal => f("upsertGoal", Mutation, Core, Configure, false),
            Function::RemoveGoal => f("removeGoal", Mutation, Core, Configure, false),
            Function::ListFunnels => f("listFunnels", Query, Core, Configure, false),
            Function::UpsertFunnel => f("upsertFunnel", Mutation, Core, Configure, false),
            Function::RemoveFunnel => f("removeFunnel", Mutation, Core, Configure, false),
            Function::ListAffiliates => f("listAffiliates", Query, Core, Configure, false),
            Function::UpsertAffiliate => f("upsertAffiliate", Mutation, Core, Configure, false),
            Function::RemoveAffiliate => f("removeAffiliate", Mutation, Core, Configure, false),
            Function::RetentionStatus => f("retentionStatus", Query, Core, Configure, false),
            Function::SetRetentionPolicy => f("setRetentionPolicy", Mutation, Core, Configure, false),
            Function::DisableRetentionPolicy => f("disableRetentionPolicy", Mutation, Core, Configure, false),
            Function::VitalsReport => f("vitalsReport", Query, Core, Read, false),
            Function::SiteMap => f("siteMap", Query, Capability::SiteMap, Read, false),
            Function::GetVisitorProfile => f("getVisitorProfile", Query, Capability::VisitorProfiles, Read, false),
            Function::ListPeople => f("listPeople", Query, Capability::People, Read, false),
            Function::ListTrackedLinks => f("listTrackedLinks", Query, TrackedLinks, Read, false),
            Function::CreateTrackedLink => f("createTrackedLink", Mutation, TrackedLinks, Configure, false),
            Function::UpdateTrackedLink => f("updateTrackedLink", Mutation, TrackedLinks, Configure, false),
            Function::DeleteTrackedLink => f("deleteTrackedLink", Mutation, TrackedLinks, Configure, false),
        }
    }

    /// A web-analytics function (rule MAN-01), also served on the host
    /// API: the site settings and every function from `overview` on.
    pub fn is_web_analytics(self) -> bool {
        matches!(self, Function::SiteSettings | Function::UpdateSite)
            || (self as usize) >= (Function::Overview as usize)
    }

    /// The seed name (`rastroFederation:<name>`).
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn parse(name: &str) -> Option<Function> {
        Function::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// Decodes a function's arguments (an object; unknown fields refused).
fn args<T: DeserializeOwned>(value: Value) -> Result<T> {
    let value = if value.is_null() { Value::Object(Default::default()) } else { value };
    if !value.is_object() {
        return Err(Error::invalid("the arguments must be a JSON object"));
    }
    let mut value = value;
    // Convex clients send every number as a float: `10.0` is the integer 10.
    crate::http::json::whole_numbers(&mut value);
    serde_json::from_value(value)
        .map_err(|e| Error::invalid(format!("invalid arguments: {}", crate::http::errors::sanitize(&e.to_string()))))
}

fn json<T: Serialize>(v: T) -> Result<Value> {
    serde_json::to_value(v).map_err(Error::internal)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SiteArgs {
    site_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GoalIdArgs {
    site_id: String,
    goal_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FunnelIdArgs {
    site_id: String,
    funnel_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AffiliateIdArgs {
    site_id: String,
    affiliate_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UpdateSiteArgs {
    site_id: String,
    name: Option<String>,
    domains: Option<Vec<String>>,
    timezone: Option<String>,
    route_patterns: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListLeadsArgs {
    site_ids: Vec<String>,
    from: i64,
    to: i64,
    ad_id: Option<String>,
    before: Option<i64>,
    before_lead_id: Option<String>,
    limit: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JourneyArgs {
    site_id: String,
    lead_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventMapArgs {
    site_id: String,
    now: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MetaStatusArgs {
    site_ids: Vec<String>,
    now: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConversionsArgs {
    site_id: String,
    limit: Option<i64>,
    before: Option<i64>,
    before_event_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConnectArgs {
    code: Option<SecretString>,
    redirect_uri: Option<String>,
    access_token: Option<SecretString>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetPixelArgs {
    site_id: String,
    pixel_id: String,
    access_token: Option<SecretString>,
    enabled: Option<bool>,
    test_event_code: Option<String>,
    send_lead_event: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AccountArgs {
    site_id: String,
    ad_account_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetEventMapArgs {
    site_id: String,
    columns: BTreeMap<String, Option<Value>>,
    send_lead_event: Option<bool>,
}

/// `connectionStatus`: redacted (no connection, organization or owner ids).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatus {
    /// `active`: a revoked or missing grant never gets this far.
    pub status: &'static str,
    pub protocol: &'static str,
    pub capabilities: Vec<&'static str>,
    pub site_count: usize,
    pub permissions: Vec<&'static str>,
}

/// `listSites`: only these five fields.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSummary {
    pub site_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub cookieless: bool,
}

/// `siteSettings` (and what `updateSite` answers): no owner.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSettings {
    pub name: String,
    pub domains: Vec<String>,
    pub timezone: String,
    pub currency: String,
    pub cookieless: bool,
    pub route_patterns: Vec<String>,
    /// A `routePatterns` change is still regrouping stored routes (§5.8).
    pub regrouping: bool,
}

impl From<sites::Site> for SiteSettings {
    fn from(s: sites::Site) -> Self {
        SiteSettings {
            name: s.name,
            domains: s.domains,
            timezone: s.timezone,
            currency: s.currency,
            cookieless: s.cookieless,
            route_patterns: s.route_patterns,
            regrouping: false,
        }
    }
}

/// A site's settings with its regrouping state.
fn settings(conn: &mut AnyConnection, site: sites::Site) -> Result<SiteSettings> {
    let regrouping = crate::service::analytics::regroup::regrouping(conn, &site.site_id)?;
    Ok(SiteSettings { regrouping, ..SiteSettings::from(site) })
}

/// FED-12: the sites outside `scope` that `owner`'s links or pixels still feed.
fn sites_fed_outside(conn: &mut AnyConnection, owner: &str, scope: &[String]) -> Result<Vec<String>> {
    let mut outside: Vec<String> = meta_store::links_of_owner(conn, owner)?
        .into_iter()
        .map(|l| l.site_id)
        .chain(meta_store::pixels_of_owner(conn, owner)?.into_iter().map(|p| p.site_id))
        .filter(|s| !scope.contains(s))
        .collect();
    outside.sort();
    outside.dedup();
    Ok(outside)
}

fn ensure_owner_inside(conn: &mut AnyConnection, owner: &str, scope: &[String]) -> Result<()> {
    let outside = sites_fed_outside(conn, owner, scope)?;
    if outside.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Code::FederationSiteDenied,
        format!(
            "this connection's Meta setup still feeds sites outside its grant ({}): unlink them on the host first",
            outside.join(", ")
        ),
    ))
}

/// A function's value: built for this call, or a cached metaStatus answer
/// (served as the JSON text it was serialized to once).
#[derive(Debug, Clone)]
pub enum Reply {
    Owned(Value),
    Cached(Arc<meta_status::StatusAnswer>),
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

/// Runs `spec` for `caller` (None only for `manifest`).
pub async fn run(st: &AppState, caller: Option<&Caller>, function: Function, raw: Value) -> Result<Reply> {
    match (function, caller) {
        (Function::MetaStatus, Some(caller)) => meta_status_cached(st, caller, raw).await.map(Reply::Cached),
        _ => run_owned(st, caller, function, raw).await.map(Reply::Owned),
    }
}

/// `metaStatus`: the read cache's answer itself, many dashboards polling the same sites.
async fn meta_status_cached(st: &AppState, caller: &Caller, raw: Value) -> Result<Arc<meta_status::StatusAnswer>> {
    let a: MetaStatusArgs = args(raw)?;
    caller.check_sites(&a.site_ids)?;
    // FED-14: `own` marks what this connection made.
    let input = meta_status::MetaStatusArgs { site_ids: a.site_ids, now: a.now, owner_key: Some(caller.owner.clone()) };
    meta_status::status_cached(&st.cx, input).await
}

/// Every function but `metaStatus`.
async fn run_owned(st: &AppState, caller: Option<&Caller>, function: Function, raw: Value) -> Result<Value> {
    let Some(caller) = caller else {
        args::<NoArgs>(raw)?;
        return json(st.federation.manifest());
    };
    let now = st.now();
    match function {
        Function::ConnectionStatus => {
            args::<NoArgs>(raw)?;
            json(ConnectionStatus {
                status: "active",
                protocol: super::PROTOCOL,
                capabilities: st.federation.capabilities(),
                site_count: caller.sites.len(),
                permissions: caller.permissions.clone(),
            })
        }
        Function::ListSites => {
            args::<NoArgs>(raw)?;
            let ids = caller.sites.clone();
            let rows = st.cx.db.run(move |c| sites::require_many(c, &ids)).await?;
            json(
                rows.into_iter()
                    .map(|r| SiteSummary {
                        site_id: r.id,
                        name: r.name,
                        currency: r.currency,
                        timezone: r.timezone,
                        cookieless: r.cookieless,
                    })
                    .collect::<Vec<_>>(),
            )
        }
        Function::SiteSettings => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            json(
                st.cx
                    .db
                    .run(move |c| {
                        let site = sites::get(c, &a.site_id)?;
                        settings(c, site)
                    })
                    .await?,
            )
        }
        Function::UpdateSite => {
            let a: UpdateSiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            // Only name, domains, timezone and routePatterns: currency and cookieless stay outside.
            let input = sites::UpdateSite {
                name: a.name,
                timezone: a.timezone,
                domains: a.domains,
                route_patterns: a.route_patterns,
                currency: None,
                cookieless: None,
            };
            sites::check_update(&input)?;
            let site = st
                .cx
                .write_plain(move |c| {
                    let site = sites::update(c, now, &a.site_id, input)?;
                    settings(c, site)
                })
                .await?;
            json(site)
        }
        Function::LeadsReport => {
            let a: LeadsReportArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            reports::check_report(&a)?;
            let cap = st.cx.config.report_row_cap;
            json(st.cx.db.run(move |c| reports::leads_report(c, a, cap)).await?)
        }
        Function::ListLeads => {
            let a: ListLeadsArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            let q = leads::ListLeads {
                site_ids: a.site_ids.join(","),
                from: a.from,
                to: a.to,
                ad_id: a.ad_id,
                before: a.before,
                before_lead_id: a.before_lead_id,
                limit: a.limit,
            };
            json(st.cx.db.run(move |c| leads::list(c, q)).await?)
        }
        Function::LeadJourney => {
            let a: JourneyArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            json(st.cx.db.run(move |c| leads::journey(c, &a.site_id, &a.lead_id)).await?)
        }
        Function::LeadsDaily => {
            let a: LeadsDailyArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            reports::check_daily(&a)?;
            json(st.cx.db.run(move |c| reports::leads_daily(c, a)).await?)
        }
        Function::MetaConversions => {
            let a: ConversionsArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let rows = st
                .cx
                .db
                .run(move |c| conversions::list(c, &a.site_id, a.limit, a.before, a.before_event_id.as_deref()))
                .await?;
            json(rows)
        }
        Function::MetaUnlinkPreview => {
            let a: AccountArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            json(st.cx.db.run(move |c| meta_sync::unlink_preview(c, &a.site_id, &a.ad_account_id)).await?)
        }
        Function::Overview => {
            let a: analytics::OverviewArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            let public = caller.public;
            st.cx.db.run(move |c| analytics::overview(c, a, public)).await
        }
        Function::LiveVisitors => {
            let a: analytics::LiveArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            let skew = st.cx.config.live_now_skew.as_millis() as i64;
            // A public link must not replay past live windows (rule PUB-06).
            if caller.public && (a.now - now).abs() > skew {
                return Err(Error::invalid("now must be within RASTRO_LIVE_NOW_SKEW of the server clock"));
            }
            let profiles = with_profiles(st, caller);
            st.analytics
                .live
                .live_visitors_with(&st.cx, a, caller.public, crate::service::validate::MAX_SITES, profiles)
                .await
        }
        Function::GetSession => {
            let a: analytics::SessionArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let profiles = with_profiles(st, caller);
            st.cx
                .db
                .run(move |c| {
                    let mut v = analytics::get_session(c, a)?;
                    if profiles {
                        analytics_people::attach(c, std::slice::from_mut(&mut v))?;
                    }
                    Ok(v)
                })
                .await
        }
        Function::ListSessions => {
            let a: analytics_sessions::ListSessionsArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let key = st.analytics.cursor_key(&st.cx).await?;
            let profiles = with_profiles(st, caller);
            st.cx
                .db
                .run(move |c| {
                    let mut v = analytics_sessions::list_sessions(c, &key, a)?;
                    if profiles && let Some(rows) = v["page"].as_array_mut() {
                        analytics_people::attach(c, rows)?;
                    }
                    Ok(v)
                })
                .await
        }
        Function::GetVisitorProfile => {
            let a: analytics_people::ProfileArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_people::get_visitor_profile(c, a)).await
        }
        Function::ListPeople => {
            let a: analytics_people::ListPeopleArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let key = st.analytics.cursor_key(&st.cx).await?;
            st.cx.db.run(move |c| analytics_people::list_people(c, &key, a)).await
        }
        Function::SessionJourney => {
            let a: analytics_sessions::JourneyArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let key = st.analytics.cursor_key(&st.cx).await?;
            st.cx.db.run(move |c| analytics_sessions::session_journey(c, &key, a)).await
        }
        Function::VisitorJourney => {
            let a: analytics_sessions::VisitorJourneyArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            st.cx.db.run(move |c| analytics_sessions::visitor_journey(c, a)).await
        }
        Function::DataCoverage => {
            let a: analytics_coverage::CoverageArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_coverage::data_coverage(c, a, now)).await
        }
        Function::ListConversions => {
            let a: analytics_conversions::ListConversionsArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let key = st.analytics.cursor_key(&st.cx).await?;
            st.cx.db.run(move |c| analytics_conversions::list(c, &key, a)).await
        }
        Function::RevenueSummary => {
            let a: analytics_conversions::RevenueArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            st.cx.db.run(move |c| analytics_conversions::revenue_summary(c, a)).await
        }
        Function::GoalsReport => {
            let a: analytics_goals::GoalsArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_goals::goals_report(c, a)).await
        }
        Function::FunnelsReport => {
            let a: analytics_funnels::FunnelsArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let cap = st.cx.config.report_funnel_row_cap;
            st.cx.db.run(move |c| analytics_funnels::funnels_report(c, a, cap)).await
        }
        Function::AffiliatesReport => {
            let a: analytics_affiliates::AffiliatesArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_affiliates::affiliates_report(c, a)).await
        }
        Function::ListGoals => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_definitions::list_goals(c, &a.site_id)).await
        }
        Function::UpsertGoal => {
            let a: UpsertGoal = args(raw)?;
            caller.check_site(&a.site_id)?;
            analytics_definitions::check_goal(&a)?;
            json(st.cx.write_plain(move |c| analytics_definitions::upsert_goal(c, now, a)).await?)
        }
        Function::RemoveGoal => {
            let a: GoalIdArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.write_plain(move |c| analytics_definitions::remove_goal(c, now, &a.site_id, &a.goal_id)).await
        }
        Function::ListFunnels => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_definitions::list_funnels(c, &a.site_id)).await
        }
        Function::UpsertFunnel => {
            let a: UpsertFunnel = args(raw)?;
            caller.check_site(&a.site_id)?;
            analytics_definitions::check_funnel(&a)?;
            json(st.cx.write_plain(move |c| analytics_definitions::upsert_funnel(c, now, a)).await?)
        }
        Function::RemoveFunnel => {
            let a: FunnelIdArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.write_plain(move |c| analytics_definitions::remove_funnel(c, &a.site_id, &a.funnel_id)).await
        }
        Function::ListAffiliates => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| analytics_definitions::list_affiliates(c, &a.site_id)).await
        }
        Function::UpsertAffiliate => {
            let a: UpsertAffiliate = args(raw)?;
            caller.check_site(&a.site_id)?;
            analytics_definitions::check_affiliate(&a)?;
            json(st.cx.write_plain(move |c| analytics_definitions::upsert_affiliate(c, now, a)).await?)
        }
        Function::RemoveAffiliate => {
            let a: AffiliateIdArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx
                .write_plain(move |c| analytics_definitions::remove_affiliate(c, now, &a.site_id, &a.affiliate_id))
                .await
        }
        Function::RetentionStatus => {
            let a: analytics_retention::StatusArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let interval = st.cx.config.retention_interval.as_millis() as i64;
            st.cx.db.run(move |c| analytics_retention::status(c, a, now, interval)).await
        }
        Function::SetRetentionPolicy => {
            let a: analytics_retention::SetPolicy = args(raw)?;
            caller.check_site(&a.site_id)?;
            analytics_retention::check(&a)?;
            st.cx.write_plain(move |c| analytics_retention::set_policy(c, now, a)).await
        }
        Function::DisableRetentionPolicy => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.write_plain(move |c| analytics_retention::disable(c, &a.site_id)).await
        }
        Function::VitalsReport => {
            let a: vitals_report::VitalsArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            st.cx.db.run(move |c| vitals_report::vitals_report(c, a)).await
        }
        Function::SiteMap => {
            let a: site_map_report::SiteMapArgs = args(raw)?;
            caller.check_sites(&a.site_ids)?;
            st.cx.db.run(move |c| site_map_report::site_map(c, a)).await
        }
        Function::ListTrackedLinks => {
            let a: tracked_links::ListArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            json(st.cx.db.run(move |c| tracked_links::list(c, a)).await?)
        }
        Function::CreateTrackedLink => {
            let a: tracked_links::CreateArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            tracked_links::check_create(&a)?;
            json(st.cx.write_plain(move |c| tracked_links::create(c, now, a)).await?)
        }
        Function::UpdateTrackedLink => {
            let a: tracked_links::UpdateArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            tracked_links::check_update(&a)?;
            json(st.cx.write_plain(move |c| tracked_links::update(c, now, a)).await?)
        }
        Function::DeleteTrackedLink => {
            let a: tracked_links::LinkArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            json(st.cx.write_plain(move |c| tracked_links::delete(c, a)).await?)
        }
        Function::SyncMetaNow => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let answer = st.cx.write(move |c| meta_sync::sync_now(c, now, &a.site_id)).await?;
            json(answer)
        }
        Function::MetaConnection => {
            args::<NoArgs>(raw)?;
            let (owner, key, scope) = (caller.owner.clone(), st.cx.secrets.clone(), caller.sites.clone());
            let view = st.cx.db.run(move |c| connection::view(c, key.as_ref(), &owner)).await?;
            // FED-13: an account linked outside the grant shows no site, only that it is taken.
            json(view.map(|mut v| {
                scope_accounts(&mut v.ad_accounts, &scope);
                v
            }))
        }
        Function::MetaEventMap => {
            let a: EventMapArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            json(st.cx.db.run(move |c| board::event_map(c, &a.site_id, a.now)).await?)
        }
        Function::ConnectMeta => {
            let a: ConnectArgs = args(raw)?;
            check_owner_inside(st, caller).await?;
            let listing = match (a.code, a.redirect_uri, a.access_token) {
                (Some(code), Some(redirect_uri), None) => {
                    connection::connect_with_code(&st.cx, &caller.owner, ConnectWithCode { code, redirect_uri }).await?
                }
                (None, None, Some(access_token)) => {
                    connection::set_connection(&st.cx, &caller.owner, SetMetaConnection { access_token }).await?
                }
                _ => return Err(Error::invalid("give code and redirectUri (Facebook Login), or accessToken")),
            };
            json(scoped_listing(listing, &caller.sites))
        }
        Function::RefreshMetaAccounts => {
            args::<NoArgs>(raw)?;
            check_owner_inside(st, caller).await?;
            let listing = connection::refresh(&st.cx, &caller.owner).await;
            json(scoped_listing(listing?, &caller.sites))
        }
        Function::SetMetaPixel => {
            let a: SetPixelArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            // FED-14: the connection's listing unless an accessToken is given; enabled unless told otherwise.
            let input = SetSitePixel {
                pixel_id: a.pixel_id,
                owner_key: Some(caller.owner.clone()),
                access_token: a.access_token,
                enabled: a.enabled,
                test_event_code: a.test_event_code,
                send_lead_event: a.send_lead_event,
                only_own: true,
            };
            json(links::set_pixel(&st.cx, &a.site_id, input).await?)
        }
        Function::DisconnectMeta => {
            args::<NoArgs>(raw)?;
            let (owner, scope) = (caller.owner.clone(), caller.sites.clone());
            let removed = st
                .cx
                .write(move |c| {
                    ensure_owner_inside(c, &owner, &scope)?;
                    connection::remove(c, &owner)
                })
                .await?;
            json(removed)
        }
        Function::LinkMetaAdAccount => {
            let a: AccountArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let input =
                LinkAdAccount { owner_key: caller.owner.clone(), ad_account_id: a.ad_account_id, only_own: true };
            links::check_link(&input)?;
            let link = st.cx.write(move |c| links::link(c, now, &a.site_id, input)).await?;
            json(link)
        }
        Function::UnlinkMetaAdAccount => {
            let a: AccountArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let owner = caller.owner.clone();
            let removed = st.cx.write(move |c| links::unlink(c, &a.site_id, &a.ad_account_id, Some(&owner))).await?;
            json(removed)
        }
        Function::RemoveMetaPixel => {
            let a: SiteArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let owner = caller.owner.clone();
            json(st.cx.write_plain(move |c| links::remove_pixel(c, &a.site_id, Some(&owner))).await?)
        }
        Function::SetMetaEventMap => {
            let a: SetEventMapArgs = args(raw)?;
            caller.check_site(&a.site_id)?;
            let input = SetEventMap {
                columns: a.columns,
                send_lead_event: a.send_lead_event,
                owner_key: Some(caller.owner.clone()),
            };
            json(st.cx.write_plain(move |c| board::set_event_map(c, now, &a.site_id, input)).await?)
        }
        // `manifest` runs without a caller and `metaStatus` from the read cache, both in `run`.
        Function::Manifest | Function::MetaStatus => Err(Error::not_found("no such federated function")),
    }
}

/// Session and live rows carry `profile` while `visitorProfiles` is on, never
/// for a public token (rule OVR-14).
fn with_profiles(st: &AppState, caller: &Caller) -> bool {
    !caller.public && st.federation.serves(Capability::VisitorProfiles)
}

/// The whole-owner writes' gate, read before Meta is called (FED-12).
async fn check_owner_inside(st: &AppState, caller: &Caller) -> Result<()> {
    let (owner, scope) = (caller.owner.clone(), caller.sites.clone());
    st.cx.db.run(move |c| ensure_owner_inside(c, &owner, &scope)).await
}

/// A listing as a federated caller sees it: accounts linked outside the grant
/// show no site (FED-13).
fn scoped_listing(mut listing: connection::Listing, scope: &[String]) -> connection::Listing {
    scope_accounts(&mut listing.ad_accounts, scope);
    listing
}

fn scope_accounts(accounts: &mut [connection::ListedAccount], scope: &[String]) {
    for account in accounts {
        let outside = account.linked_site_id.as_ref().is_some_and(|s| !scope.contains(s));
        if outside {
            account.linked_site_id = None;
        }
        account.linked_outside_scope = Some(outside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_function_once_in_declaration_order() {
        // The discriminants run 0..n, so ALL in order is every variant exactly once.
        for (i, f) in Function::ALL.iter().enumerate() {
            assert_eq!(*f as usize, i, "{f:?}");
            assert_eq!(Function::parse(f.name()), Some(*f));
        }
        assert_eq!(Function::ALL.len(), Function::DeleteTrackedLink as usize + 1);
    }
}
