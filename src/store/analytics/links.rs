//! Tracked links (TLINK-01, RET-08): one row per link with its all-time
//! counters, and daily counters per (link, UTC day). A deleted link's rows go
//! (its slug is free again, its counters purged). Plain reads and writes
//! through the query builder; the additive upsert of the daily counters and
//! the grouped window read in SQL.

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::{web_link_days, web_links};
use crate::db::sql::{RawQuery, placeholders};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_links)]
pub struct LinkRow {
    pub id: String,
    pub site_id: String,
    pub slug: String,
    pub destination: String,
    pub platform: String,
    pub channel: String,
    pub campaign: Option<String>,
    pub disabled: bool,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub clicks_total: i64,
    pub bot_hits_total: i64,
}

/// A site's links, newest first (`createdAt` desc, `linkId` desc).
pub fn list(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<LinkRow>> {
    web_links::table
        .filter(web_links::site_id.eq(site_id))
        .order((web_links::created_at.desc(), web_links::id.desc()))
        .select(LinkRow::as_select())
        .load(conn)
}

pub fn count(conn: &mut AnyConnection, site_id: &str) -> QueryResult<i64> {
    web_links::table.filter(web_links::site_id.eq(site_id)).count().get_result(conn)
}

/// A link of the site by id (None: unknown or another site's).
pub fn get(conn: &mut AnyConnection, site_id: &str, link_id: &str) -> QueryResult<Option<LinkRow>> {
    web_links::table
        .filter(web_links::site_id.eq(site_id))
        .filter(web_links::id.eq(link_id))
        .select(LinkRow::as_select())
        .first(conn)
        .optional()
}

/// A link of the site by slug (the redirect's lookup).
pub fn by_slug(conn: &mut AnyConnection, site_id: &str, slug: &str) -> QueryResult<Option<LinkRow>> {
    web_links::table
        .filter(web_links::site_id.eq(site_id))
        .filter(web_links::slug.eq(slug))
        .select(LinkRow::as_select())
        .first(conn)
        .optional()
}

pub fn insert(conn: &mut AnyConnection, l: &LinkRow) -> QueryResult<usize> {
    diesel::insert_into(web_links::table).values(l.clone()).execute(conn)
}

/// Writes the editable fields (destination, platform, channel, campaign, disabled).
pub fn update(conn: &mut AnyConnection, l: &LinkRow) -> QueryResult<usize> {
    diesel::update(web_links::table.filter(web_links::site_id.eq(&l.site_id)).filter(web_links::id.eq(&l.id)))
        .set((
            web_links::destination.eq(&l.destination),
            web_links::platform.eq(&l.platform),
            web_links::channel.eq(&l.channel),
            web_links::campaign.eq(&l.campaign),
            web_links::disabled.eq(l.disabled),
            web_links::updated_at.eq(l.updated_at),
        ))
        .execute(conn)
}

/// Deletes a link and its daily counters; answers whether it existed.
pub fn delete(conn: &mut AnyConnection, site_id: &str, link_id: &str) -> QueryResult<bool> {
    let removed =
        diesel::delete(web_links::table.filter(web_links::site_id.eq(site_id)).filter(web_links::id.eq(link_id)))
            .execute(conn)?
            > 0;
    if removed {
        diesel::delete(web_link_days::table.filter(web_link_days::link_id.eq(link_id))).execute(conn)?;
    }
    Ok(removed)
}

/// Hits of one link on one UTC day (`day` = its start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hits {
    pub site_id: String,
    pub link_id: String,
    pub day: i64,
    pub clicks: i64,
    pub bot_hits: i64,
}

/// Adds hits to a link's all-time and daily counters; nothing when the link
/// is gone (deleted since the redirect read it).
pub fn add_hits(conn: &mut AnyConnection, hits: &Hits) -> QueryResult<()> {
    let Hits { site_id, link_id, day, clicks, bot_hits } = hits;
    let added = diesel::update(web_links::table.find(link_id))
        .set((
            web_links::clicks_total.eq(web_links::clicks_total + *clicks),
            web_links::bot_hits_total.eq(web_links::bot_hits_total + *bot_hits),
        ))
        .execute(conn)?;
    if added == 0 {
        return Ok(());
    }
    crate::row! {
        struct Added<'a> in web_link_days {
            link_id: &'a str,
            site_id: &'a str,
            day: i64,
            clicks: i64,
            bot_hits: i64,
        }
    }
    let row = Added { link_id, site_id, day: *day, clicks: *clicks, bot_hits: *bot_hits };
    crate::db::row::add::<Added<'_>, _>(conn, &[row], "link_id, day", &["clicks", "bot_hits"])?;
    Ok(())
}

crate::row! {
    /// Per link, the daily counters summed over `[from_day, to_day]` (day starts).
    #[derive(Debug, Clone)]
    pub struct WindowRow in web_link_days {
        pub link_id: String,
        pub clicks: i64,
        pub bot_hits: i64,
    }
}

pub fn window(
    conn: &mut AnyConnection,
    link_ids: &[String],
    from_day: i64,
    to_day: i64,
) -> QueryResult<Vec<WindowRow>> {
    if link_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT link_id, CAST(SUM(clicks) AS BIGINT) AS clicks, CAST(SUM(bot_hits) AS BIGINT) AS bot_hits \
         FROM web_link_days WHERE link_id IN {} AND day >= ? AND day <= ? GROUP BY link_id",
        placeholders(link_ids.len())
    ));
    q.texts(link_ids).int(from_day).int(to_day);
    q.load(conn)
}
