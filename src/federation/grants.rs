//! Local grants (runbook phase 2): the host's record of which sites a
//! dashboard connection may read, and whether it may configure them or publish
//! public links. The grant, not the token, is the authority for scope; it is
//! read on every federated call, so revoking it denies at once.

use std::collections::BTreeSet;

use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{PERM_CONFIGURE, PERM_PUBLIC, PERM_READ};
use crate::db::AnyConnection;
use crate::db::schema::federation_grants;
use crate::error::{Code, Error, Result};
use crate::service::meta_connection;
use crate::service::{sites, validate};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = federation_grants)]
pub struct GrantRow {
    pub connection_id: String,
    pub organization_id: String,
    pub owner_id: String,
    pub site_ids: String,
    pub permissions: String,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

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
        && id.len() <= super::jwt::MAX_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok { Ok(()) } else { Err(Error::invalid("connectionId must be 1-128 characters of [A-Za-z0-9_.:-]")) }
}

fn check_organization_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= super::jwt::MAX_ID_CHARS
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

pub fn find(conn: &mut AnyConnection, connection_id: &str) -> QueryResult<Option<GrantRow>> {
    federation_grants::table.find(connection_id).select(GrantRow::as_select()).first(conn).optional()
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
    let existing = find(conn, connection_id)?;
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
        diesel::update(federation_grants::table.find(connection_id))
            .set((
                federation_grants::organization_id.eq(&row.organization_id),
                federation_grants::owner_id.eq(&row.owner_id),
                federation_grants::site_ids.eq(&row.site_ids),
                federation_grants::permissions.eq(&row.permissions),
                federation_grants::revoked_at.eq(None::<i64>),
                federation_grants::updated_at.eq(now),
            ))
            .execute(conn)?;
    } else {
        diesel::insert_into(federation_grants::table).values(row.clone()).execute(conn)?;
    }
    Ok((row.view()?, existing.is_none()))
}

/// `revokeConnection`: sets `revokedAt` (kept if already set) and, in the same
/// transaction, forgets the Meta owner the connection acted as.
pub fn revoke(conn: &mut AnyConnection, now: i64, connection_id: &str) -> Result<RevokedGrant> {
    check_connection_id(connection_id)?;
    let mut row = find(conn, connection_id)?.ok_or_else(|| Error::not_found("no grant for this connection"))?;
    if row.revoked_at.is_none() {
        diesel::update(federation_grants::table.find(connection_id))
            .set((federation_grants::revoked_at.eq(Some(now)), federation_grants::updated_at.eq(now)))
            .execute(conn)?;
        row.revoked_at = Some(now);
        row.updated_at = now;
    }
    let removed = meta_connection::remove(conn, &meta_connection::federated_owner(connection_id))?;
    Ok(RevokedGrant { grant: row.view()?, meta_removed: removed.removed })
}

pub fn get(conn: &mut AnyConnection, connection_id: &str) -> Result<Grant> {
    check_connection_id(connection_id)?;
    find(conn, connection_id)?.ok_or_else(|| Error::not_found("no grant for this connection"))?.view()
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
    let row = find(conn, connection_id)?.ok_or_else(|| denied("this connection has no grant on this host"))?;
    if row.organization_id != organization_id {
        return Err(denied("this connection's grant belongs to another organization"));
    }
    if row.revoked_at.is_some() {
        return Err(denied("this connection's grant was revoked"));
    }
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
