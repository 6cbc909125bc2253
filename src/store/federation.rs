//! Queries on `federation_grants`: the host's record of which sites a
//! dashboard connection may read (see `service::federation::grants`).

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::federation_grants;

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

pub fn find(conn: &mut AnyConnection, connection_id: &str) -> QueryResult<Option<GrantRow>> {
    federation_grants::table.find(connection_id).select(GrantRow::as_select()).first(conn).optional()
}

/// The grants of `connection_ids` that exist, in one statement.
pub fn find_many(conn: &mut AnyConnection, connection_ids: &[String]) -> QueryResult<Vec<GrantRow>> {
    federation_grants::table
        .filter(federation_grants::connection_id.eq_any(connection_ids))
        .select(GrantRow::as_select())
        .load(conn)
}

pub fn insert(conn: &mut AnyConnection, row: &GrantRow) -> QueryResult<()> {
    diesel::insert_into(federation_grants::table).values(row.clone()).execute(conn)?;
    Ok(())
}

/// Replaces a grant's organization, owner, sites and permissions, clearing `revokedAt`.
pub fn replace(conn: &mut AnyConnection, row: &GrantRow) -> QueryResult<()> {
    diesel::update(federation_grants::table.find(&row.connection_id))
        .set((
            federation_grants::organization_id.eq(&row.organization_id),
            federation_grants::owner_id.eq(&row.owner_id),
            federation_grants::site_ids.eq(&row.site_ids),
            federation_grants::permissions.eq(&row.permissions),
            federation_grants::revoked_at.eq(None::<i64>),
            federation_grants::updated_at.eq(row.updated_at),
        ))
        .execute(conn)?;
    Ok(())
}

pub fn set_revoked(conn: &mut AnyConnection, connection_id: &str, now: i64) -> QueryResult<()> {
    diesel::update(federation_grants::table.find(connection_id))
        .set((federation_grants::revoked_at.eq(Some(now)), federation_grants::updated_at.eq(now)))
        .execute(conn)?;
    Ok(())
}
