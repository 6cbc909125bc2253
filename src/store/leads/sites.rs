//! Queries on `sites`.

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::sites;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sites)]
#[diesel(treat_none_as_default_value = false)]
pub struct SiteRow {
    pub id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub owner_id: String,
    pub domains: String,
    pub route_patterns: String,
    pub cookieless: bool,
    pub send_lead_event: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

pub fn insert(conn: &mut AnyConnection, row: &SiteRow) -> QueryResult<()> {
    diesel::insert_into(sites::table).values(row.clone()).execute(conn).map(|_| ())
}

pub fn find(conn: &mut AnyConnection, id: &str) -> QueryResult<Option<SiteRow>> {
    sites::table.find(id).select(SiteRow::as_select()).get_result(conn).optional()
}

pub fn list(conn: &mut AnyConnection) -> QueryResult<Vec<SiteRow>> {
    sites::table.order(sites::id.asc()).select(SiteRow::as_select()).load(conn)
}

/// The rows of `ids` that exist, in no particular order.
pub fn find_many(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<SiteRow>> {
    sites::table.filter(sites::id.eq_any(ids)).select(SiteRow::as_select()).load(conn)
}

pub fn update(conn: &mut AnyConnection, row: &SiteRow) -> QueryResult<()> {
    diesel::update(sites::table.find(&row.id))
        .set((
            sites::name.eq(&row.name),
            sites::timezone.eq(&row.timezone),
            sites::domains.eq(&row.domains),
            sites::route_patterns.eq(&row.route_patterns),
            sites::cookieless.eq(row.cookieless),
            sites::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
        .map(|_| ())
}

pub fn set_send_lead_event(conn: &mut AnyConnection, id: &str, on: bool, now: i64) -> QueryResult<()> {
    diesel::update(sites::table.find(id))
        .set((sites::send_lead_event.eq(on), sites::updated_at.eq(now)))
        .execute(conn)
        .map(|_| ())
}
