//! The federated API: a central dashboard calls the host's functions with a
//! short-lived JWT. This module verifies the token (`jwt`), reads the local
//! grant on every call (one query shared by the calls waiting together),
//! applies the gates in order and hands the call, as a [`Caller`], to the
//! application API (`service::api`), the same use cases the host API and
//! the dashboard call. The two wire formats (REST and Convex's) live in
//! `http::federation`; both end in [`call`].
//!
//! Gates, in order: the function exists (and the transport's kind matches) →
//! `manifest` needs nothing → the JWT (FEDERATION_UNAUTHENTICATED,
//! FEDERATION_ISSUER_MISMATCH, FEDERATION_INVALID_CLAIMS) → the grant
//! (FEDERATION_CONNECTION_DENIED) → the capability (FEDERATION_INVALID_SCOPE)
//! → a public token's surface (FEDERATION_PUBLIC_FORBIDDEN) → the configure
//! scope (FEDERATION_CONFIGURE_FORBIDDEN) → the arguments and their sites
//! (INVALID_ARGUMENT, FEDERATION_INVALID_SCOPE, FEDERATION_SITE_DENIED).

pub mod jwt;

use serde_json::Value;

use crate::error::{Code, Error, Result};
use crate::service::api::{self, Caller, Capability, Function, Kind, Need, Reply, Spec};
use crate::service::context::Context;
use crate::service::federation::grant_reader::GrantReader;
pub use crate::service::federation::grants::{PERM_CONFIGURE, PERM_PUBLIC, PERM_READ};

/// The token's verifier (JWKS and verified tokens, cached) and the grant reader.
pub struct Federation {
    pub verifier: jwt::Verifier,
    /// Every call's grant read, coalesced with the calls waiting beside it.
    pub grants: GrantReader,
}

impl Federation {
    /// The federation of the context's configuration, reading grants through it.
    pub fn new(cx: &Context) -> Federation {
        let config = &cx.config;
        Federation {
            verifier: jwt::Verifier::new(
                &config.federation_issuer,
                config.federation_audience.as_deref(),
                config.federation_jwks.as_deref(),
            ),
            grants: GrantReader::new(cx.clone()),
        }
    }
}

/// Runs the federated function `name` for the holder of `token`; `via` is the
/// kind the transport asked for (Convex's `/api/query|mutation|action`).
pub async fn call(
    cx: &Context,
    fed: &Federation,
    token: Option<&str>,
    name: &str,
    via: Option<Kind>,
    args: Value,
) -> Result<Reply> {
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
        return api::call(cx, None, function, args).await;
    }
    let caller = authorize(cx, fed, token, &spec).await?;
    api::call(cx, Some(&caller), function, args).await
}

/// A call without a token.
pub fn unauthenticated() -> Error {
    Error::new(Code::FederationUnauthenticated, "a Rastro token is required (Authorization: Bearer <JWT>)")
}

/// The gates of a call that needs a token, in the module's order.
pub async fn authorize(cx: &Context, fed: &Federation, token: Option<&str>, spec: &Spec) -> Result<Caller> {
    let token = token.ok_or_else(unauthenticated)?;
    let identity = fed.verifier.verify(token, cx.now()).await?;
    // Read by a query that starts after this call arrived (shared with the calls waiting beside it).
    let grant = fed.grants.active(&identity.connection_id, &identity.organization_id).await?;
    if !cx.capabilities().serves(spec.capability) {
        let what = match spec.capability {
            Capability::MetaAds => "Meta ads",
            Capability::MetaLeads => "Meta Lead Ads",
            Capability::SiteMap => "a site map",
            Capability::VisitorProfiles => "visitor profiles",
            Capability::People => "people",
            Capability::TrackedLinks => "tracked links",
            Capability::Core | Capability::Leads => "leads",
        };
        return Err(Error::new(Code::FederationInvalidScope, format!("This host does not connect {what}")));
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
        max_sites: crate::service::validate::MAX_SITES,
    })
}
