//! Queries on the Meta connection: `meta_connections` and their listings,
//! `site_ad_accounts` (links) and `site_pixels`.

pub mod conversions;
pub mod lead_ads;
pub mod sync;

use diesel::prelude::*;

use crate::codes::Fault;
use crate::db::AnyConnection;
use crate::db::schema::{meta_connections, meta_listed_accounts, meta_listed_pixels, site_ad_accounts, site_pixels};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = meta_connections)]
#[diesel(treat_none_as_default_value = false)]
pub struct ConnectionRow {
    pub owner_key: String,
    pub sealed_token: String,
    pub token_version: i64,
    pub source: String,
    pub authorized_by_id: Option<String>,
    pub authorized_by_name: Option<String>,
    pub authorized_at: i64,
    pub expires_at: Option<i64>,
    pub expiring_soon: bool,
    pub invalid_since: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = meta_listed_accounts)]
#[diesel(treat_none_as_default_value = false)]
pub struct ListedAccountRow {
    pub owner_key: String,
    pub ad_account_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub account_status: Option<i64>,
    pub position: i32,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = meta_listed_pixels)]
#[diesel(treat_none_as_default_value = false)]
pub struct ListedPixelRow {
    pub owner_key: String,
    pub pixel_id: String,
    pub name: String,
    pub ad_account_id: String,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = site_ad_accounts)]
#[diesel(treat_none_as_default_value = false)]
pub struct LinkRow {
    pub ad_account_id: String,
    pub site_id: String,
    pub owner_key: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub stopped_reason: Option<String>,
    pub last_error: Option<String>,
    pub linked_at: i64,
    pub updated_at: i64,
}

/// Whose token a site's pixel sends with. Stored and answered as `connection` or `token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PixelSource {
    /// The token of the owner's Meta connection (the pixel is in its listing).
    Connection,
    /// The pixel's own token, sealed in the row.
    Token,
}

impl PixelSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            PixelSource::Connection => "connection",
            PixelSource::Token => "token",
        }
    }
}

impl From<PixelSource> for String {
    fn from(s: PixelSource) -> String {
        s.as_str().to_string()
    }
}

impl TryFrom<String> for PixelSource {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "connection" => Ok(PixelSource::Connection),
            "token" => Ok(PixelSource::Token),
            _ => Err(format!("unknown pixel source {s:?}")),
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = site_pixels)]
#[diesel(treat_none_as_default_value = false)]
pub struct PixelRow {
    pub site_id: String,
    pub pixel_id: String,
    pub name: Option<String>,
    #[diesel(deserialize_as = String, serialize_as = String)]
    pub source: PixelSource,
    pub owner_key: Option<String>,
    pub sealed_token: Option<String>,
    pub token_version: i64,
    pub enabled: bool,
    pub test_event_code: Option<String>,
    pub stopped_reason: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub fn connection(conn: &mut AnyConnection, owner: &str) -> QueryResult<Option<ConnectionRow>> {
    meta_connections::table.find(owner).select(ConnectionRow::as_select()).get_result(conn).optional()
}

/// Inserts or replaces the owner's connection row.
pub fn put_connection(conn: &mut AnyConnection, row: &ConnectionRow) -> QueryResult<()> {
    let n = diesel::update(meta_connections::table.find(&row.owner_key))
        .set((
            meta_connections::sealed_token.eq(&row.sealed_token),
            meta_connections::token_version.eq(row.token_version),
            meta_connections::source.eq(&row.source),
            meta_connections::authorized_by_id.eq(&row.authorized_by_id),
            meta_connections::authorized_by_name.eq(&row.authorized_by_name),
            meta_connections::authorized_at.eq(row.authorized_at),
            meta_connections::expires_at.eq(row.expires_at),
            meta_connections::expiring_soon.eq(row.expiring_soon),
            meta_connections::invalid_since.eq(row.invalid_since),
            meta_connections::last_error.eq(&row.last_error),
            meta_connections::updated_at.eq(row.updated_at),
        ))
        .execute(conn)?;
    if n == 0 {
        diesel::insert_into(meta_connections::table).values(row.clone()).execute(conn)?;
    }
    Ok(())
}

pub fn set_connection_error(
    conn: &mut AnyConnection,
    owner: &str,
    token_version: i64,
    invalid_since: Option<i64>,
    last_error: Option<Fault>,
    now: i64,
) -> QueryResult<usize> {
    diesel::update(
        meta_connections::table
            .filter(meta_connections::owner_key.eq(owner))
            .filter(meta_connections::token_version.eq(token_version)),
    )
    .set((
        meta_connections::invalid_since.eq(invalid_since),
        meta_connections::last_error.eq(last_error.map(Fault::as_str)),
        meta_connections::updated_at.eq(now),
    ))
    .execute(conn)
}

pub fn delete_connection(conn: &mut AnyConnection, owner: &str) -> QueryResult<usize> {
    diesel::delete(meta_listed_accounts::table.filter(meta_listed_accounts::owner_key.eq(owner))).execute(conn)?;
    diesel::delete(meta_listed_pixels::table.filter(meta_listed_pixels::owner_key.eq(owner))).execute(conn)?;
    diesel::delete(meta_connections::table.find(owner)).execute(conn)
}

pub fn listed_accounts(conn: &mut AnyConnection, owner: &str) -> QueryResult<Vec<ListedAccountRow>> {
    meta_listed_accounts::table
        .filter(meta_listed_accounts::owner_key.eq(owner))
        .order(meta_listed_accounts::position.asc())
        .select(ListedAccountRow::as_select())
        .load(conn)
}

pub fn listed_pixels(conn: &mut AnyConnection, owner: &str) -> QueryResult<Vec<ListedPixelRow>> {
    meta_listed_pixels::table
        .filter(meta_listed_pixels::owner_key.eq(owner))
        .order(meta_listed_pixels::pixel_id.asc())
        .select(ListedPixelRow::as_select())
        .load(conn)
}

pub fn replace_listing(
    conn: &mut AnyConnection,
    owner: &str,
    accounts: &[ListedAccountRow],
    pixels: &[ListedPixelRow],
) -> QueryResult<()> {
    diesel::delete(meta_listed_accounts::table.filter(meta_listed_accounts::owner_key.eq(owner))).execute(conn)?;
    for a in accounts {
        diesel::insert_into(meta_listed_accounts::table).values(a.clone()).execute(conn)?;
    }
    diesel::delete(meta_listed_pixels::table.filter(meta_listed_pixels::owner_key.eq(owner))).execute(conn)?;
    for p in pixels {
        diesel::insert_into(meta_listed_pixels::table).values(p.clone()).execute(conn)?;
    }
    Ok(())
}

pub fn link(conn: &mut AnyConnection, ad_account_id: &str) -> QueryResult<Option<LinkRow>> {
    site_ad_accounts::table.find(ad_account_id).select(LinkRow::as_select()).get_result(conn).optional()
}

pub fn links_of_site(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<LinkRow>> {
    site_ad_accounts::table
        .filter(site_ad_accounts::site_id.eq(site_id))
        .order(site_ad_accounts::ad_account_id.asc())
        .select(LinkRow::as_select())
        .load(conn)
}

pub fn links_of_sites(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<LinkRow>> {
    site_ad_accounts::table
        .filter(site_ad_accounts::site_id.eq_any(site_ids))
        .order(site_ad_accounts::ad_account_id.asc())
        .select(LinkRow::as_select())
        .load(conn)
}

pub fn links_of_owner(conn: &mut AnyConnection, owner: &str) -> QueryResult<Vec<LinkRow>> {
    site_ad_accounts::table
        .filter(site_ad_accounts::owner_key.eq(owner))
        .order(site_ad_accounts::ad_account_id.asc())
        .select(LinkRow::as_select())
        .load(conn)
}

pub fn links_of_accounts(conn: &mut AnyConnection, ids: &[String]) -> QueryResult<Vec<LinkRow>> {
    site_ad_accounts::table.filter(site_ad_accounts::ad_account_id.eq_any(ids)).select(LinkRow::as_select()).load(conn)
}

pub fn count_links_of_site(conn: &mut AnyConnection, site_id: &str) -> QueryResult<i64> {
    site_ad_accounts::table.filter(site_ad_accounts::site_id.eq(site_id)).count().get_result(conn)
}

pub fn count_links_of_owner(conn: &mut AnyConnection, owner: &str) -> QueryResult<i64> {
    site_ad_accounts::table.filter(site_ad_accounts::owner_key.eq(owner)).count().get_result(conn)
}

pub fn insert_link(conn: &mut AnyConnection, row: &LinkRow) -> QueryResult<()> {
    diesel::insert_into(site_ad_accounts::table).values(row.clone()).execute(conn).map(|_| ())
}

pub fn set_link_owner(conn: &mut AnyConnection, ad_account_id: &str, owner: &str, now: i64) -> QueryResult<()> {
    diesel::update(site_ad_accounts::table.find(ad_account_id))
        .set((site_ad_accounts::owner_key.eq(owner), site_ad_accounts::updated_at.eq(now)))
        .execute(conn)
        .map(|_| ())
}

pub fn set_link_stopped(
    conn: &mut AnyConnection,
    ad_account_id: &str,
    reason: Option<Fault>,
    now: i64,
) -> QueryResult<()> {
    diesel::update(site_ad_accounts::table.find(ad_account_id))
        .set((
            site_ad_accounts::stopped_reason.eq(reason.map(Fault::as_str)),
            site_ad_accounts::last_error.eq(reason.map(Fault::as_str)),
            site_ad_accounts::updated_at.eq(now),
        ))
        .execute(conn)
        .map(|_| ())
}

pub fn delete_link(conn: &mut AnyConnection, ad_account_id: &str) -> QueryResult<usize> {
    diesel::delete(site_ad_accounts::table.find(ad_account_id)).execute(conn)
}

pub fn delete_links_of_owner(conn: &mut AnyConnection, owner: &str) -> QueryResult<usize> {
    diesel::delete(site_ad_accounts::table.filter(site_ad_accounts::owner_key.eq(owner))).execute(conn)
}

pub fn pixel(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<PixelRow>> {
    site_pixels::table.find(site_id).select(PixelRow::as_select()).get_result(conn).optional()
}

pub fn pixels_of_sites(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<PixelRow>> {
    site_pixels::table.filter(site_pixels::site_id.eq_any(site_ids)).select(PixelRow::as_select()).load(conn)
}

pub fn pixels_of_owner(conn: &mut AnyConnection, owner: &str) -> QueryResult<Vec<PixelRow>> {
    site_pixels::table.filter(site_pixels::owner_key.eq(owner)).select(PixelRow::as_select()).load(conn)
}

/// Inserts or replaces the site's pixel.
pub fn put_pixel(conn: &mut AnyConnection, row: &PixelRow) -> QueryResult<()> {
    diesel::delete(site_pixels::table.find(&row.site_id)).execute(conn)?;
    diesel::insert_into(site_pixels::table).values(row.clone()).execute(conn).map(|_| ())
}

pub fn set_pixel_stopped(conn: &mut AnyConnection, site_id: &str, reason: Option<Fault>, now: i64) -> QueryResult<()> {
    diesel::update(site_pixels::table.find(site_id))
        .set((
            site_pixels::stopped_reason.eq(reason.map(Fault::as_str)),
            site_pixels::last_error.eq(reason.map(Fault::as_str)),
            site_pixels::updated_at.eq(now),
        ))
        .execute(conn)
        .map(|_| ())
}

/// The error of a pixel that still sends (its sends fail, e.g. a token without
/// permission); None clears it. A stopped pixel keeps its stop reason.
pub fn set_pixel_send_error(conn: &mut AnyConnection, site_id: &str, error: Option<&str>, now: i64) -> QueryResult<()> {
    let target = site_pixels::table.find(site_id).filter(site_pixels::stopped_reason.is_null());
    match error {
        Some(e) => {
            diesel::update(target).set((site_pixels::last_error.eq(e), site_pixels::updated_at.eq(now))).execute(conn)
        }
        // Only a row with an error is written: a success leaves the others alone.
        None => diesel::update(target.filter(site_pixels::last_error.is_not_null()))
            .set((site_pixels::last_error.eq(None::<String>), site_pixels::updated_at.eq(now)))
            .execute(conn),
    }
    .map(|_| ())
}

pub fn delete_pixel(conn: &mut AnyConnection, site_id: &str) -> QueryResult<usize> {
    diesel::delete(site_pixels::table.find(site_id)).execute(conn)
}

pub fn delete_pixels_of_owner(conn: &mut AnyConnection, owner: &str) -> QueryResult<usize> {
    diesel::delete(site_pixels::table.filter(site_pixels::owner_key.eq(owner))).execute(conn)
}

pub fn set_expiring_soon(conn: &mut AnyConnection, owner: &str, soon: bool) -> QueryResult<()> {
    diesel::update(meta_connections::table.find(owner))
        .set(meta_connections::expiring_soon.eq(soon))
        .execute(conn)
        .map(|_| ())
}

pub fn active_links(conn: &mut AnyConnection) -> QueryResult<Vec<LinkRow>> {
    site_ad_accounts::table
        .filter(site_ad_accounts::stopped_reason.is_null())
        .order(site_ad_accounts::ad_account_id.asc())
        .select(LinkRow::as_select())
        .load(conn)
}

/// A site's click-id settings (rule WA-30): whether the conversions of
/// click-to-WhatsApp leads go by their click id, and the WhatsApp Business
/// Account they go with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Queryable)]
pub struct ClickIdSettings {
    pub site_id: String,
    pub send_click_ids: bool,
    pub whatsapp_business_account_id: Option<String>,
}

/// The settings of each of `site_ids` that exists, in no particular order.
pub fn click_id_settings(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<ClickIdSettings>> {
    use crate::db::schema::sites;
    sites::table
        .filter(sites::id.eq_any(site_ids))
        .select((sites::id, sites::send_click_ids, sites::whatsapp_business_account_id))
        .load(conn)
}

pub fn set_click_id_settings(
    conn: &mut AnyConnection,
    site_id: &str,
    send_click_ids: bool,
    whatsapp_business_account_id: Option<&str>,
    now: i64,
) -> QueryResult<()> {
    use crate::db::schema::sites;
    diesel::update(sites::table.find(site_id))
        .set((
            sites::send_click_ids.eq(send_click_ids),
            sites::whatsapp_business_account_id.eq(whatsapp_business_account_id),
            sites::updated_at.eq(now),
        ))
        .execute(conn)
        .map(|_| ())
}
