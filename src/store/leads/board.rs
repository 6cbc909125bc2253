//! Queries on `pipeline_columns`: the host's board and the event each column sends.

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::pipeline_columns;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = pipeline_columns)]
#[diesel(treat_none_as_default_value = false)]
pub struct ColumnRow {
    pub site_id: String,
    pub key: String,
    pub position: i32,
    pub name: String,
    pub color: Option<String>,
    pub group_name: Option<String>,
    pub event: Option<String>,
}

pub fn list(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<ColumnRow>> {
    pipeline_columns::table
        .filter(pipeline_columns::site_id.eq(site_id))
        .order(pipeline_columns::position.asc())
        .select(ColumnRow::as_select())
        .load(conn)
}

pub fn is_declared(conn: &mut AnyConnection, site_id: &str, key: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        pipeline_columns::table.filter(pipeline_columns::site_id.eq(site_id)).filter(pipeline_columns::key.eq(key)),
    ))
    .get_result(conn)
}

/// Replaces the site's columns with `rows` (events already carried over by the caller).
pub fn replace(conn: &mut AnyConnection, site_id: &str, rows: &[ColumnRow]) -> QueryResult<()> {
    diesel::delete(pipeline_columns::table.filter(pipeline_columns::site_id.eq(site_id))).execute(conn)?;
    for row in rows {
        diesel::insert_into(pipeline_columns::table).values(row.clone()).execute(conn)?;
    }
    Ok(())
}

pub fn set_event(conn: &mut AnyConnection, site_id: &str, key: &str, event: Option<&str>) -> QueryResult<()> {
    diesel::update(pipeline_columns::table.find((site_id, key)))
        .set(pipeline_columns::event.eq(event))
        .execute(conn)
        .map(|_| ())
}
