//! The function table: every function of the application API under its
//! seed name, with its kind, the capability it belongs to, what a caller
//! needs, and whether a public link may call it. The one place a function's
//! name is written: dispatch (`dispatch`), the federated route table, the
//! manifest and the host's analytics route all go through it.

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
    /// Meta Lead Ads (instant forms): Pages, forms and the leadgen webhook.
    MetaLeads,
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
    MetaPages,
    LinkMetaPage,
    UnlinkMetaPage,
    MetaLinkedPages,
    ReturnMetaFormLead,
    MetaForms,
    RefreshMetaForms,
    SetMetaFormRules,
    MetaFormRules,
    SimulateMetaFormRules,
    MetaFormsReport,
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
    PreviewFunnel,
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

use Capability::{Core, Leads, MetaAds, MetaLeads, TrackedLinks};
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
        Function::MetaPages,
        Function::LinkMetaPage,
        Function::UnlinkMetaPage,
        Function::MetaLinkedPages,
        Function::ReturnMetaFormLead,
        Function::MetaForms,
        Function::RefreshMetaForms,
        Function::SetMetaFormRules,
        Function::MetaFormRules,
        Function::SimulateMetaFormRules,
        Function::MetaFormsReport,
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
        Function::PreviewFunnel,
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
            Function::MetaPages => f("metaPages", Action, MetaLeads, Read, false),
            Function::LinkMetaPage => f("linkMetaPage", Action, MetaLeads, Configure, false),
            Function::UnlinkMetaPage => f("unlinkMetaPage", Action, MetaLeads, Configure, false),
            Function::MetaLinkedPages => f("metaLinkedPages", Query, MetaLeads, Read, false),
            Function::ReturnMetaFormLead => f("returnMetaFormLead", Mutation, MetaLeads, Configure, false),
            Function::MetaForms => f("metaForms", Query, MetaLeads, Read, false),
            Function::RefreshMetaForms => f("refreshMetaForms", Action, MetaLeads, Configure, false),
            Function::SetMetaFormRules => f("setMetaFormRules", Mutation, MetaLeads, Configure, false),
            Function::MetaFormRules => f("metaFormRules", Query, MetaLeads, Read, false),
            Function::SimulateMetaFormRules => f("simulateMetaFormRules", Query, MetaLeads, Read, false),
            Function::MetaFormsReport => f("metaFormsReport", Query, MetaLeads, Read, false),
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
            Function::PreviewFunnel => f("previewFunnel", Query, Core, Read, false),
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
