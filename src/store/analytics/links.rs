//! Tracked links (TLINK-01, RET-08): one row per link with its all-time
//! counters, and daily counters per (link, UTC day). A deleted link's rows go
//! (its slug is free again, its counters purged).

use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use diesel::{QueryResult, QueryableByName};

use crate::db::AnyConnection;
use crate::db::sql::{RawQuery, placeholders};

#[derive(Debug, Clone, QueryableByName, PartialEq)]
pub struct LinkRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub site_id: String,
    #[diesel(sql_type = Text)]
    pub slug: String,
    #[diesel(sql_type = Text)]
    pub destination: String,
    #[diesel(sql_type = Text)]
    pub platform: String,
    #[diesel(sql_type = Text)]
    pub channel: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub campaign: Option<String>,
    #[diesel(sql_type = Bool)]
    pub disabled: bool,
    #[diesel(sql_type = Text)]
    pub created_by: String,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub updated_at: i64,
    #[diesel(sql_type = BigInt)]
    pub clicks_total: i64,
    #[diesel(sql_type = BigInt)]
    pub bot_hits_total: i64,
}

const COLUMNS: &str = "id, site_id, slug, destination, platform, channel, campaign, disabled, created_by, \
    created_at, updated_at, clicks_total, bot_hits_total";

/// A site's links, newest first (`createdAt` desc, `linkId` desc).
pub fn list(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<LinkRow>> {
    let mut q =
        RawQuery::new(format!("SELECT {COLUMNS} FROM web_links WHERE site_id = ? ORDER BY created_at DESC, id DESC"));
    q.text(site_id);
    q.load(conn)
}

pub fn count(conn: &mut AnyConnection, site_id: &str) -> QueryResult<i64> {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let mut q = RawQuery::new("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_links WHERE site_id = ?");
    q.text(site_id);
    Ok(q.load::<N>(conn)?.into_iter().next().map_or(0, |r| r.n))
}

/// A link of the site by id (None: unknown or another site's).
pub fn get(conn: &mut AnyConnection, site_id: &str, link_id: &str) -> QueryResult<Option<LinkRow>> {
    let mut q = RawQuery::new(format!("SELECT {COLUMNS} FROM web_links WHERE site_id = ? AND id = ?"));
    q.text(site_id).text(link_id);
    Ok(q.load(conn)?.into_iter().next())
}

/// A link of the site by slug (the redirect's lookup).
pub fn by_slug(conn: &mut AnyConnection, site_id: &str, slug: &str) -> QueryResult<Option<LinkRow>> {
    let mut q = RawQuery::prepared(format!("SELECT {COLUMNS} FROM web_links WHERE site_id = ? AND slug = ?"));
    q.text(site_id).text(slug);
    Ok(q.load(conn)?.into_iter().next())
}

pub fn insert(conn: &mut AnyConnection, l: &LinkRow) -> QueryResult<usize> {
    let mut q =
        RawQuery::new(format!("INSERT INTO web_links ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    q.text(&l.id)
        .text(&l.site_id)
        .text(&l.slug)
        .text(&l.destination)
        .text(&l.platform)
        .text(&l.channel)
        .opt_text(l.campaign.clone())
        .boolean(l.disabled)
        .text(&l.created_by)
        .int(l.created_at)
        .int(l.updated_at)
        .int(l.clicks_total)
        .int(l.bot_hits_total);
    q.execute(conn)
}

/// Writes the editable fields (destination, platform, channel, campaign, disabled).
pub fn update(conn: &mut AnyConnection, l: &LinkRow) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "UPDATE web_links SET destination = ?, platform = ?, channel = ?, campaign = ?, disabled = ?, updated_at = ? \
         WHERE site_id = ? AND id = ?",
    );
    q.text(&l.destination)
        .text(&l.platform)
        .text(&l.channel)
        .opt_text(l.campaign.clone())
        .boolean(l.disabled)
        .int(l.updated_at)
        .text(&l.site_id)
        .text(&l.id);
    q.execute(conn)
}

/// Deletes a link and its daily counters; answers whether it existed.
pub fn delete(conn: &mut AnyConnection, site_id: &str, link_id: &str) -> QueryResult<bool> {
    let mut q = RawQuery::new("DELETE FROM web_links WHERE site_id = ? AND id = ?");
    q.text(site_id).text(link_id);
    let removed = q.execute(conn)? > 0;
    if removed {
        let mut q = RawQuery::new("DELETE FROM web_link_days WHERE link_id = ?");
        q.text(link_id);
        q.execute(conn)?;
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
    let mut q = RawQuery::prepared(
        "UPDATE web_links SET clicks_total = clicks_total + ?, bot_hits_total = bot_hits_total + ? WHERE id = ?",
    );
    q.int(*clicks).int(*bot_hits).text(link_id.as_str());
    if q.execute(conn)? == 0 {
        return Ok(());
    }
    let mut q = RawQuery::prepared(
        "INSERT INTO web_link_days (link_id, site_id, day, clicks, bot_hits) \
         VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (link_id, day) DO UPDATE SET clicks = web_link_days.clicks + excluded.clicks, \
         bot_hits = web_link_days.bot_hits + excluded.bot_hits",
    );
    q.text(link_id.as_str()).text(site_id.as_str()).int(*day).int(*clicks).int(*bot_hits);
    q.execute(conn)?;
    Ok(())
}

/// Per link, the daily counters summed over `[from_day, to_day]` (day starts).
#[derive(Debug, Clone, QueryableByName)]
pub struct WindowRow {
    #[diesel(sql_type = Text)]
    pub link_id: String,
    #[diesel(sql_type = BigInt)]
    pub clicks: i64,
    #[diesel(sql_type = BigInt)]
    pub bot_hits: i64,
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
