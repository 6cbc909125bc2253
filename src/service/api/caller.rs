//! Who calls a use case: a federated connection inside its grant, the host
//! (trusted with every site it names) or a signed-in operator. Transports
//! build it after authenticating; use cases check the sites their arguments
//! name against it (rule FED-05).

use crate::error::{Code, Error, Result};
use crate::service::federation::grants::{PERM_CONFIGURE, PERM_READ};
use crate::service::validate;

/// An authorized caller: the token's connection inside its grant.
#[derive(Debug, Clone)]
pub struct Caller {
    /// `host`, `dashboard`, or the federated connection's id.
    pub connection_id: String,
    /// The Meta owner this connection acts as: `rastro:connection:<connectionId>`.
    pub owner: String,
    pub public: bool,
    /// The sites this caller may name: the grant's, or a public token's own.
    pub sites: Vec<String>,
    /// What the caller may do here (token and grant together).
    pub permissions: Vec<&'static str>,
    /// How many sites one call may name: ten on the federated and host APIs
    /// (FED-05), every client for the dashboard's "Todos os clientes".
    pub max_sites: usize,
}

fn invalid_scope(message: &str) -> Error {
    Error::new(Code::FederationInvalidScope, message)
}

impl Caller {
    /// FED-05: 1–10 unique, well-formed sites (else INVALID_SCOPE), all inside the grant (else SITE_DENIED).
    pub fn check_sites(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() || ids.len() > self.max_sites {
            return Err(invalid_scope(&format!("siteIds must list 1-{} sites", self.max_sites)));
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

impl Caller {
    /// Session and live rows carry `profile` while `visitorProfiles` is on,
    /// never for a public token (rule OVR-14).
    pub fn sees_profiles(&self, capabilities: super::Capabilities) -> bool {
        !self.public && capabilities.serves(super::Capability::VisitorProfiles)
    }

    /// A caller trusted with every site its arguments name and with the
    /// configure scope: the host (its key) and a signed-in operator (the
    /// dashboard decides before which operator may write).
    pub fn trusted(connection_id: &str, owner: String, args: &serde_json::Value) -> Caller {
        Caller {
            connection_id: connection_id.into(),
            owner,
            public: false,
            sites: named_sites(args),
            permissions: vec![PERM_READ, PERM_CONFIGURE],
            max_sites: validate::MAX_SITES,
        }
    }

    /// A signed-in operator on the dashboard: trusted like the host, and
    /// allowed every client at once (`max_sites`).
    pub fn operator(owner: String, args: &serde_json::Value, max_sites: usize) -> Caller {
        Caller { max_sites, ..Caller::trusted("dashboard", owner, args) }
    }
}

/// The sites the arguments name (`siteId` or `siteIds`).
fn named_sites(args: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let one = args.get("siteId").and_then(Value::as_str).map(str::to_string);
    let many = args
        .get("siteIds")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect::<Vec<_>>());
    one.into_iter().chain(many.unwrap_or_default()).collect()
}
