//! The federated API: a central dashboard calls the host's functions with a
//! short-lived JWT. This module verifies the token (`jwt`), reads the local
//! grant on every call (`grants`, one query shared by the calls waiting
//! together), applies the runbook's gates in order and runs the function
//! through the same `service` functions the host API calls (`functions`). The
//! two transports (REST and Convex's wire format) live in `http::federation`;
//! both end in [`call`].
//!
//! Gates, in order: the function exists (and the transport's kind matches) →
//! `manifest` needs nothing → the JWT (FEDERATION_UNAUTHENTICATED,
//! FEDERATION_ISSUER_MISMATCH, FEDERATION_INVALID_CLAIMS) → the grant
//! (FEDERATION_CONNECTION_DENIED) → the capability (FEDERATION_INVALID_SCOPE)
//! → a public token's surface (FEDERATION_PUBLIC_FORBIDDEN) → the configure
//! scope (FEDERATION_CONFIGURE_FORBIDDEN) → the arguments and their sites
//! (INVALID_ARGUMENT, FEDERATION_INVALID_SCOPE, FEDERATION_SITE_DENIED).

pub mod functions;
pub mod jwt;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::config::Config;
use crate::db::Db;
use crate::error::{Code, Error, Result};
use crate::service::analytics::definitions as defs;
use crate::service::federation::grant_reader::GrantReader;
use crate::service::validate;
use crate::state::AppState;
pub use functions::{Capability, Function, Kind, Need, Reply, Spec};

pub use crate::service::federation::grants::{PERM_CONFIGURE, PERM_PUBLIC, PERM_READ};
/// The protocol the manifest and connectionStatus name.
pub const PROTOCOL: &str = "rastro-federation/1";

/// The verifier, the grant reader and the capabilities this host serves.
pub struct Federation {
    pub verifier: jwt::Verifier,
    /// Every call's grant read, coalesced with the calls waiting beside it.
    pub grants: GrantReader,
    leads: bool,
    meta_ads: bool,
    site_map: bool,
    visitor_profiles: bool,
    people: bool,
    tracked_links: bool,
    live_window_ms: i64,
}

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

impl Federation {
    /// The federation of `config`, reading grants from `db`.
    pub fn new(config: &Config, db: Db) -> Federation {
        Federation {
            verifier: jwt::Verifier::new(
                &config.federation_issuer,
                config.federation_audience.as_deref(),
                config.federation_jwks.as_deref(),
            ),
            grants: GrantReader::new(db),
            leads: config.federation_leads,
            meta_ads: config.federation_meta_ads && config.federation_leads,
            site_map: config.federation_site_map,
            visitor_profiles: config.federation_visitor_profiles,
            people: config.federation_people,
            tracked_links: config.federation_tracked_links,
            live_window_ms: config.live_window.as_millis() as i64,
        }
    }

    pub fn serves(&self, capability: Capability) -> bool {
        match capability {
            Capability::Core => true,
            Capability::Leads => self.leads,
            Capability::MetaAds => self.meta_ads,
            Capability::SiteMap => self.site_map,
            Capability::VisitorProfiles => self.visitor_profiles,
            Capability::People => self.people,
            Capability::TrackedLinks => self.tracked_links,
        }
    }

    pub fn capabilities(&self) -> Vec<&'static str> {
        let mut caps = vec!["configure"];
        if self.leads {
            caps.push("leads");
        }
        if self.meta_ads {
            caps.push("metaAds");
        }
        for (capability, name) in [
            (Capability::SiteMap, "siteMap"),
            (Capability::VisitorProfiles, "visitorProfiles"),
            (Capability::People, "people"),
            (Capability::TrackedLinks, "trackedLinks"),
        ] {
            // Advertised only while switched on and backed by a served function
            // (a host without a capability's functions advertises none of it).
            let backed = Function::ALL.iter().any(|f| f.spec().capability == capability);
            if self.serves(capability) && backed {
                caps.push(name);
            }
        }
        caps
    }

    pub fn manifest(&self) -> Manifest {
        Manifest {
            protocol: PROTOCOL,
            capabilities: self.capabilities(),
            functions: Function::ALL
                .iter()
                .map(|f| f.spec())
                .filter(|f| self.serves(f.capability))
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
                max_live_visitors: crate::service::analytics::reads::MAX_LIVE,
                live_window_ms: self.live_window_ms,
                max_sessions_page: crate::service::analytics::sessions::MAX_SESSIONS_PAGE,
                max_journey_page: crate::service::analytics::sessions::MAX_JOURNEY_PAGE,
                max_journey_events: crate::service::analytics::sessions::MAX_JOURNEY_EVENTS,
                max_events_per_batch: crate::service::analytics::batch::MAX_EVENTS,
                max_list_conversions: crate::service::analytics::conversions::MAX_LIST_CONVERSIONS,
                max_goals: defs::MAX_GOALS,
                max_funnels: defs::MAX_FUNNELS,
                min_funnel_steps: defs::MIN_FUNNEL_STEPS,
                max_funnel_steps: defs::MAX_FUNNEL_STEPS,
                min_funnel_window_ms: defs::MIN_FUNNEL_WINDOW_MS,
                max_funnel_window_ms: defs::MAX_FUNNEL_WINDOW_MS,
                max_affiliates: defs::MAX_AFFILIATES,
                max_commission_bps: defs::MAX_COMMISSION_BPS,
                max_affiliate_window_days: defs::MAX_AFFILIATE_WINDOW_DAYS,
                max_funnel_days: crate::service::analytics::funnels::MAX_FUNNEL_DAYS,
                min_retention_days: crate::service::analytics::retention::MIN_DAYS,
                max_retention_days: crate::service::analytics::retention::MAX_DAYS,
                max_vitals_days: crate::service::analytics::vitals_report::MAX_DAYS,
                max_site_map_days: crate::service::analytics::site_map_report::MAX_DAYS,
                max_people_page: crate::service::analytics::people::MAX_PEOPLE_PAGE,
                max_tracked_links: crate::service::analytics::links::MAX_LINKS,
            },
        }
    }
}

/// An authorized caller: the token's connection inside its grant.
#[derive(Debug, Clone)]
pub struct Caller {
    pub connection_id: String,
    /// The Meta owner this connection acts as: `rastro:connection:<connectionId>`.
    pub owner: String,
    pub public: bool,
    /// The sites this caller may name: the grant's, or a public token's own.
    pub sites: Vec<String>,
    /// What the caller may do here (token and grant together).
    pub permissions: Vec<&'static str>,
}

fn invalid_scope(message: &str) -> Error {
    Error::new(Code::FederationInvalidScope, message)
}

impl Caller {
    /// FED-05: 1–10 unique, well-formed sites (else INVALID_SCOPE), all inside the grant (else SITE_DENIED).
    pub fn check_sites(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() || ids.len() > validate::MAX_SITES {
            return Err(invalid_scope("siteIds must list 1-10 sites"));
        }
        for (i, id) in ids.iter().enumerate() {
            if validate::site_id(id).is_err() {
                return Err(invalid_scope("siteIds must be well-formed site ids"));
            }
            // At most ten: comparing with the earlier ones beats hashing.
            if ids[..i].contains(id) {
                return Err(invalid_scope("siteIds must not repeat a site"));
            }
        }
        if ids.iter().any(|id| !self.sites.contains(id)) {
            return Err(Error::new(Code::FederationSiteDenied, "a requested site is outside this connection's grant"));
        }
        Ok(())
    }

    pub fn check_site(&self, id: &str) -> Result<()> {
        if validate::site_id(id).is_err() {
            return Err(invalid_scope("siteId must be a well-formed site id"));
        }
        self.check_sites(&[id.to_string()])
    }
}

/// Runs the federated function `name` for the holder of `token`; `via` is the
/// kind the transport asked for (Convex's `/api/query|mutation|action`).
pub async fn call(st: &AppState, token: Option<&str>, name: &str, via: Option<Kind>, args: Value) -> Result<Reply> {
    let function = Function::parse(name).ok_or_else(|| Error::not_found("no such federated function"))?;
    let spec = function.spec();
    if let Some(kind) = via
        && kind != spec.kind
    {
        return Err(Error::invalid(format!(
            "rastroFederation:{} is a {}, not a {}",
            spec.name,
            spec.kind.as_str(),
            kind.as_str()
        )));
    }
    if spec.need == Need::Nothing {
        return functions::run(st, None, function, args).await;
    }
    let caller = authorize(st, token, &spec).await?;
    functions::run(st, Some(&caller), function, args).await
}

/// A call without a token.
pub fn unauthenticated() -> Error {
    Error::new(Code::FederationUnauthenticated, "a Rastro token is required (Authorization: Bearer <JWT>)")
}

/// The gates of a call that needs a token, in the module's order.
pub async fn authorize(st: &AppState, token: Option<&str>, spec: &Spec) -> Result<Caller> {
    let token = token.ok_or_else(unauthenticated)?;
    let fed = &st.federation;
    let identity = fed.verifier.verify(token, st.now()).await?;
    // Read by a query that starts after this call arrived (shared with the calls waiting beside it).
    let grant = fed.grants.active(&identity.connection_id, &identity.organization_id).await?;
    if !fed.serves(spec.capability) {
        let what = match spec.capability {
            Capability::MetaAds => "Meta ads",
            Capability::SiteMap => "a site map",
            Capability::VisitorProfiles => "visitor profiles",
            Capability::People => "people",
            Capability::TrackedLinks => "tracked links",
            Capability::Core | Capability::Leads => "leads",
        };
        return Err(invalid_scope(&format!("This host does not connect {what}")));
    }
    let sites = if identity.public {
        if !grant.permissions.contains(PERM_PUBLIC) {
            return Err(Error::new(Code::FederationPublicForbidden, "this connection may not publish public links"));
        }
        if !spec.public {
            return Err(Error::new(Code::FederationPublicForbidden, "a public link cannot call this function"));
        }
        let sites = identity.site_ids.clone().unwrap_or_default();
        if sites.iter().any(|s| !grant.site_ids.contains(s)) {
            return Err(Error::new(
                Code::FederationSiteDenied,
                "a public link's site is outside this connection's grant",
            ));
        }
        sites
    } else {
        grant.site_ids.clone()
    };
    let configure = identity.permissions.contains(PERM_CONFIGURE) && grant.permissions.contains(PERM_CONFIGURE);
    if spec.need == Need::Configure && !configure {
        return Err(Error::new(
            Code::FederationConfigureForbidden,
            "configuring needs analytics:configure on the token and in the host's grant",
        ));
    }
    let permissions = if identity.public {
        vec![PERM_PUBLIC]
    } else if configure {
        vec![PERM_READ, PERM_CONFIGURE]
    } else {
        vec![PERM_READ]
    };
    Ok(Caller {
        owner: crate::service::meta::connection::federated_owner(&identity.connection_id),
        connection_id: identity.connection_id.clone(),
        public: identity.public,
        sites,
        permissions,
    })
}
