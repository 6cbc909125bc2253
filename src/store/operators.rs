//! Queries on the dashboard's operators, their sessions and failed sign-ins.
//! The tables are declared in `db::schema` (dashboard.rs).

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::{dashboard_signin_failures, operator_known_clients, operator_sessions, operators};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = operators)]
#[diesel(treat_none_as_default_value = false)]
pub struct OperatorRow {
    pub id: String,
    pub name: String,
    pub password_hash: String,
    pub can_configure: bool,
    pub owner_key: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = operator_sessions)]
pub struct SessionRow {
    pub id_hash: String,
    pub operator_id: String,
    pub csrf_token: String,
    pub created_at: i64,
    pub expires_at: i64,
}

pub fn find_by_name(conn: &mut AnyConnection, name: &str) -> QueryResult<Option<OperatorRow>> {
    operators::table.filter(operators::name.eq(name)).select(OperatorRow::as_select()).get_result(conn).optional()
}

pub fn insert(conn: &mut AnyConnection, row: &OperatorRow) -> QueryResult<()> {
    diesel::insert_into(operators::table).values(row.clone()).execute(conn).map(|_| ())
}

/// Replaces an existing operator's password, rights and owner (a re-run of
/// `operator add`, or the demo's operator on every start).
pub fn update(conn: &mut AnyConnection, row: &OperatorRow) -> QueryResult<usize> {
    diesel::update(operators::table.find(&row.id))
        .set((
            operators::password_hash.eq(&row.password_hash),
            operators::can_configure.eq(row.can_configure),
            operators::owner_key.eq(&row.owner_key),
            operators::updated_at.eq(row.updated_at),
        ))
        .execute(conn)
}

pub fn insert_session(conn: &mut AnyConnection, row: &SessionRow) -> QueryResult<()> {
    diesel::insert_into(operator_sessions::table).values(row.clone()).execute(conn).map(|_| ())
}

/// The live session and its operator.
pub fn session(conn: &mut AnyConnection, id_hash: &str, now: i64) -> QueryResult<Option<(SessionRow, OperatorRow)>> {
    let Some(s) = operator_sessions::table
        .find(id_hash)
        .filter(operator_sessions::expires_at.gt(now))
        .select(SessionRow::as_select())
        .get_result(conn)
        .optional()?
    else {
        return Ok(None);
    };
    let op = operators::table.find(&s.operator_id).select(OperatorRow::as_select()).get_result(conn).optional()?;
    Ok(op.map(|o| (s, o)))
}

pub fn delete_session(conn: &mut AnyConnection, id_hash: &str) -> QueryResult<usize> {
    diesel::delete(operator_sessions::table.find(id_hash)).execute(conn)
}

/// Ends every session of an operator (a new password signs everyone out).
pub fn delete_sessions_of(conn: &mut AnyConnection, operator_id: &str) -> QueryResult<usize> {
    diesel::delete(operator_sessions::table.filter(operator_sessions::operator_id.eq(operator_id))).execute(conn)
}

pub fn delete_expired_sessions(conn: &mut AnyConnection, now: i64) -> QueryResult<usize> {
    diesel::delete(operator_sessions::table.filter(operator_sessions::expires_at.le(now))).execute(conn)
}

pub fn count_failures(conn: &mut AnyConnection, key_hash: &str, since: i64) -> QueryResult<i64> {
    dashboard_signin_failures::table
        .filter(dashboard_signin_failures::key_hash.eq(key_hash))
        .filter(dashboard_signin_failures::at.gt(since))
        .count()
        .get_result(conn)
}

pub fn add_failure(conn: &mut AnyConnection, key_hash: &str, at: i64) -> QueryResult<()> {
    diesel::insert_into(dashboard_signin_failures::table)
        .values((dashboard_signin_failures::key_hash.eq(key_hash), dashboard_signin_failures::at.eq(at)))
        .execute(conn)
        .map(|_| ())
}

pub fn forget_failures_before(conn: &mut AnyConnection, before: i64) -> QueryResult<usize> {
    diesel::delete(dashboard_signin_failures::table.filter(dashboard_signin_failures::at.le(before))).execute(conn)
}

/// The newest failure under `key_hash` after `since`, with how many there are.
pub fn failures_since(conn: &mut AnyConnection, key_hash: &str, since: i64) -> QueryResult<(i64, Option<i64>)> {
    dashboard_signin_failures::table
        .filter(dashboard_signin_failures::key_hash.eq(key_hash))
        .filter(dashboard_signin_failures::at.gt(since))
        .select((diesel::dsl::count_star(), diesel::dsl::max(dashboard_signin_failures::at)))
        .get_result(conn)
}

/// Whether the operator signed in from this client (its hash) after `since`.
pub fn is_known_client(
    conn: &mut AnyConnection,
    operator_id: &str,
    client_hash: &str,
    since: i64,
) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        operator_known_clients::table
            .filter(operator_known_clients::operator_id.eq(operator_id))
            .filter(operator_known_clients::client_hash.eq(client_hash))
            .filter(operator_known_clients::last_at.gt(since)),
    ))
    .get_result(conn)
}

/// Remembers a client the operator signed in from (or refreshes when).
pub fn remember_client(conn: &mut AnyConnection, operator_id: &str, client_hash: &str, now: i64) -> QueryResult<()> {
    let mine = operator_known_clients::operator_id.eq(operator_id);
    let this = operator_known_clients::client_hash.eq(client_hash);
    let touched = diesel::update(operator_known_clients::table.filter(mine).filter(this))
        .set(operator_known_clients::last_at.eq(now))
        .execute(conn)?;
    if touched == 0 {
        diesel::insert_into(operator_known_clients::table)
            .values((mine, this, operator_known_clients::last_at.eq(now)))
            .execute(conn)?;
    }
    Ok(())
}

/// Forgets the operator's clients last seen at or before `before`.
pub fn forget_clients_before(conn: &mut AnyConnection, operator_id: &str, before: i64) -> QueryResult<usize> {
    diesel::delete(
        operator_known_clients::table
            .filter(operator_known_clients::operator_id.eq(operator_id))
            .filter(operator_known_clients::last_at.le(before)),
    )
    .execute(conn)
}
