//! Local grants (runbook phase 2): the host's record of which sites a
//! dashboard connection may read, and whether it may configure them or publish
//! public links. The grant, not the token, is the authority for scope; it is
//! read on every federated call, so revoking it denies at once. Concurrent
//! calls share their reads (`GrantReader`): one query for every call waiting,
//! never a query already in flight (`grant_reader`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::service::effects::Written;
use crate::service::meta::connection;
use crate::service::sites;
use crate::service::validate;
use crate::store::federation::{self as store, GrantRow};

/// The grant permissions (and the token's `permissions` claim).
pub const PERM_READ: &str = "analytics:read";
pub const PERM_CONFIGURE: &str = "analytics:configure";
pub const PERM_PUBLIC: &str = "analytics:public";
/// Most characters of a connection or organization id (the claim's bound).
pub const MAX_ID_CHARS: usize = 128;

/// `provisionConnection`: the operator names the connection's sites.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvisionGrant {
    /// The dashboard organization the connection belongs to (from pairing).
    pub organization_id: String,
    /// The host's opaque owner of every listed site (`sites.ownerId`).
    pub owner_id: String,
    /// 1–10 unique sites, each owned by `ownerId`.
    pub site_ids: Vec<String>,
    /// `analytics:configure` (owners and admins may configure the sites),
    /// `analytics:public` (public read-only links); absent means read only.
    pub permissions: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub connection_id: String,
    pub organization_id: String,
    pub owner_id: String,
    pub site_ids: Vec<String>,
    pub permissions: Vec<String>,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedGrant {
    pub grant: Grant,
    /// Whether the Meta owner `rastro:connection:<connectionId>` had anything to forget.
    pub meta_removed: bool,
}

/// A connection id: 1–128 characters of `[A-Za-z0-9_.:-]` (the claim's bound).
pub fn check_connection_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok { Ok(()) } else { Err(Error::invalid("connectionId must be 1-128 characters of [A-Za-z0-9_.:-]")) }
}

fn check_organization_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok { Ok(()) } else { Err(Error::invalid("organizationId must be 1-128 characters of [A-Za-z0-9_.:-]")) }
}

/// The grant permissions, validated and in a stable order.
fn check_permissions(perms: &[String]) -> Result<Vec<String>> {
    let mut out = BTreeSet::new();
    for p in perms {
        if ![PERM_READ, PERM_CONFIGURE, PERM_PUBLIC].contains(&p.as_str()) {
            return Err(Error::invalid("permissions may hold analytics:configure and analytics:public"));
        }
        if !out.insert(p.clone()) {
            return Err(Error::invalid("permissions must not repeat"));
        }
    }
    Ok(out.into_iter().collect())
}

impl GrantRow {
    fn view(&self) -> Result<Grant> {
        Ok(Grant {
            connection_id: self.connection_id.clone(),
            organization_id: self.organization_id.clone(),
            owner_id: self.owner_id.clone(),
            site_ids: serde_json::from_str(&self.site_ids).map_err(Error::internal)?,
            permissions: serde_json::from_str(&self.permissions).map_err(Error::internal)?,
            revoked_at: self.revoked_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// `provisionConnection`: creates or replaces the grant and clears `revokedAt`.
/// Answers the grant and whether it was created.
pub fn provision(
    conn: &mut AnyConnection,
    now: i64,
    connection_id: &str,
    input: ProvisionGrant,
) -> Result<(Grant, bool)> {
    check_connection_id(connection_id)?;
    check_organization_id(&input.organization_id)?;
    validate::text("ownerId", &input.owner_id, 1, 200)?;
    validate::site_ids(&input.site_ids)?;
    let permissions = check_permissions(input.permissions.as_deref().unwrap_or_default())?;
    for site in sites::require_many(conn, &input.site_ids)? {
        if site.owner_id != input.owner_id {
            return Err(Error::new(Code::FederationSiteDenied, format!("site {} is not owned by ownerId", site.id)));
        }
    }
    let existing = store::find(conn, connection_id)?;
    let row = GrantRow {
        connection_id: connection_id.to_string(),
        organization_id: input.organization_id,
        owner_id: input.owner_id,
        site_ids: serde_json::to_string(&input.site_ids).map_err(Error::internal)?,
        permissions: serde_json::to_string(&permissions).map_err(Error::internal)?,
        revoked_at: None,
        created_at: existing.as_ref().map_or(now, |g| g.created_at),
        updated_at: now,
    };
    if existing.is_some() {
        store::replace(conn, &row)?;
    } else {
        store::insert(conn, &row)?;
    }
    Ok((row.view()?, existing.is_none()))
}

/// `revokeConnection`: sets `revokedAt` (kept if already set) and, in the same
/// transaction, forgets the Meta owner the connection acted as.
pub fn revoke(conn: &mut AnyConnection, now: i64, connection_id: &str) -> Result<Written<RevokedGrant>> {
    check_connection_id(connection_id)?;
    let mut row = store::find(conn, connection_id)?.ok_or_else(|| Error::not_found("no grant for this connection"))?;
    if row.revoked_at.is_none() {
        store::set_revoked(conn, connection_id, now)?;
        row.revoked_at = Some(now);
        row.updated_at = now;
    }
    let removed = connection::remove(conn, &connection::federated_owner(connection_id))?;
    let revoked = RevokedGrant { grant: row.view()?, meta_removed: removed.value.removed };
    Ok(Written::new(revoked, removed.effects))
}

pub fn get(conn: &mut AnyConnection, connection_id: &str) -> Result<Grant> {
    check_connection_id(connection_id)?;
    store::find(conn, connection_id)?.ok_or_else(|| Error::not_found("no grant for this connection"))?.view()
}

/// An active grant as a federated call sees it.
#[derive(Debug, Clone)]
pub struct ActiveGrant {
    pub site_ids: Vec<String>,
    pub permissions: BTreeSet<String>,
}

fn denied(message: &str) -> Error {
    Error::new(Code::FederationConnectionDenied, message)
}

/// The grant of a verified token: missing, another organization's, malformed
/// or revoked is FEDERATION_CONNECTION_DENIED.
pub fn active(conn: &mut AnyConnection, connection_id: &str, organization_id: &str) -> Result<ActiveGrant> {
    check_active(store::find(conn, connection_id)?.as_ref(), organization_id)
}

/// `active`'s checks over a row already read (None: no grant).
pub fn check_active(row: Option<&GrantRow>, organization_id: &str) -> Result<ActiveGrant> {
    parse_active(check_row(row, organization_id)?)
}

/// Missing, another organization's or revoked.
pub(super) fn check_row<'r>(row: Option<&'r GrantRow>, organization_id: &str) -> Result<&'r GrantRow> {
    let row = row.ok_or_else(|| denied("this connection has no grant on this host"))?;
    if row.organization_id != organization_id {
        return Err(denied("this connection's grant belongs to another organization"));
    }
    if row.revoked_at.is_some() {
        return Err(denied("this connection's grant was revoked"));
    }
    Ok(row)
}

/// The sites and permissions of a row, or malformed.
pub(super) fn parse_active(row: &GrantRow) -> Result<ActiveGrant> {
    let site_ids: Vec<String> =
        serde_json::from_str(&row.site_ids).map_err(|_| denied("this connection's grant is malformed"))?;
    validate::site_ids(&site_ids).map_err(|_| denied("this connection's grant is malformed"))?;
    let permissions: Vec<String> =
        serde_json::from_str(&row.permissions).map_err(|_| denied("this connection's grant is malformed"))?;
    if permissions.iter().any(|p| ![PERM_READ, PERM_CONFIGURE, PERM_PUBLIC].contains(&p.as_str())) {
        return Err(denied("this connection's grant is malformed"));
    }
    Ok(ActiveGrant { site_ids, permissions: permissions.into_iter().collect() })
}
