//! The rollup outbox: what acceptance leaves for the report actors, applied
//! once. Rows are kept in packs (`web_outbox_packs`): each write's rows of a
//! site in one value ([`super::outbox_pack`]), inserted, read and deleted as
//! one row. `web_outbox`, a row per event, is what versions before packs
//! wrote; [`pack_legacy`] moves what they left into packs.

use std::collections::BTreeMap;

use super::outbox_pack;
#[allow(unused_imports)]
use super::*;

crate::row! {
    /// One accepted event's effect on the rollups, applied once by a report
    /// actor: a row of a pack, or of the table before packs (its `id`, which
    /// a pack's rows leave 0).
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct OutboxRow in web_outbox, generated id {
        pub site_id: String,
        pub visitor_id: String,
        pub session_id: String,
        pub kind: String,
        pub at: i64,
        pub session_start: i64,
        pub route: String,
        pub name: Option<String>,
        pub new_session: i64,
        pub d_bounces: i64,
        pub d_duration: i64,
        pub d_engaged_sum: i64,
        pub d_engaged_count: i64,
        /// The goals the event completed, space-separated ids (rule ARPT-10).
        pub goals: Option<String>,
        /// Those of `goals` its session completed for the first time.
        pub new_goals: Option<String>,
        /// Site map (a pageview): the route of the session's previous pageview, and
        /// this pageview's number in its session (0 on rows from before the map).
        pub prev_route: Option<String>,
        pub pageview_no: i64,
        /// Vitals (kind `vital`, the metric in `name`): the pageview's value before and after.
        pub vital_old: Option<i64>,
        pub vital_new: Option<i64>,
    }
}

crate::row! {
    struct PackRow in web_outbox_packs, generated id {
        site_id: String,
        row_count: i64,
        body: Vec<u8>,
    }
}

crate::row! {
    struct PackSize {
        id: i64,
        row_count: i64,
    }
}

/// A stored pack, its rows read.
#[derive(Debug)]
pub struct Pack {
    pub id: i64,
    pub site_id: String,
    pub rows: Vec<OutboxRow>,
}

impl PackRow {
    fn read(self) -> QueryResult<Pack> {
        let rows = outbox_pack::decode(&self.site_id, &self.body)
            .map_err(|e| diesel::result::Error::DeserializationError(format!("pack {}: {e}", self.id).into()))?;
        Ok(Pack { id: self.id, site_id: self.site_id, rows })
    }
}

/// Writes `rows` as one pack per site, in one statement.
pub fn insert_outbox<B: std::borrow::Borrow<OutboxRow>>(conn: &mut AnyConnection, rows: &[B]) -> QueryResult<usize> {
    let mut by_site: BTreeMap<&str, Vec<&OutboxRow>> = BTreeMap::new();
    for o in rows {
        let o = o.borrow();
        by_site.entry(o.site_id.as_str()).or_default().push(o);
    }
    let packs: Vec<PackRow> = by_site
        .into_iter()
        .map(|(site_id, rows)| PackRow {
            id: 0,
            site_id: site_id.to_string(),
            row_count: rows.len() as i64,
            body: outbox_pack::encode(&rows),
        })
        .collect();
    row::insert::<PackRow, _>(conn, &packs, "")?;
    Ok(rows.len())
}

/// How many windows of packs [`take_outbox`] tries while other processes
/// hold the ones before: as many as processes likely draining at once.
const HELD_WINDOWS_TRIED: usize = 4;

/// Packs to apply: the oldest that make `limit` rows (one at least, whatever
/// its size), locked and skipped by other processes on PostgreSQL so each is
/// applied once (rule STORE-04).
pub fn take_outbox(conn: &mut AnyConnection, limit: usize) -> QueryResult<Vec<Pack>> {
    // On PostgreSQL another process's actor may hold every pack chosen: the
    // packs after them are tried, so the two work side by side rather than
    // in turns (a few reads at most; an empty answer ends this drain).
    let mut after = 0;
    for _ in 0..HELD_WINDOWS_TRIED {
        let ids = oldest(conn, None, after, limit)?;
        let Some(&last) = ids.last() else { return Ok(Vec::new()) };
        let packs = locked_packs(conn, None, &ids, true)?;
        if !packs.is_empty() || conn.is_sqlite() {
            return Ok(packs);
        }
        after = last;
    }
    Ok(Vec::new())
}

/// A site's packs after `after` that make `limit` rows, locked (waited for)
/// on PostgreSQL: for a step that rewrites their rows ([`set_pack_rows`]).
pub fn site_packs(conn: &mut AnyConnection, site_id: &str, after: i64, limit: usize) -> QueryResult<Vec<Pack>> {
    let ids = oldest(conn, Some(site_id), after, limit)?;
    locked_packs(conn, Some(site_id), &ids, false)
}

/// The ids of the oldest packs (of a site, after an id) that make `limit`
/// rows, read from their sizes alone and unlocked, so that no pack past the
/// limit is held.
fn oldest(conn: &mut AnyConnection, site_id: Option<&str>, after: i64, limit: usize) -> QueryResult<Vec<i64>> {
    let site = site_filter(site_id);
    let mut q =
        RawQuery::new(format!("SELECT id, row_count FROM web_outbox_packs WHERE {site}id > ? ORDER BY id LIMIT ?"));
    if let Some(site_id) = site_id {
        q.text(site_id);
    }
    q.int(after).int(limit as i64);
    let mut ids = Vec::new();
    let mut total = 0;
    for p in q.load::<PackSize>(conn)? {
        if total >= limit as i64 {
            break;
        }
        total += p.row_count;
        ids.push(p.id);
    }
    Ok(ids)
}

/// The condition on a pack's site, when one is asked for (its text is bound first).
fn site_filter(site_id: Option<&str>) -> &'static str {
    if site_id.is_some() { "site_id = ? AND " } else { "" }
}

/// The packs of `ids`, in id order, locked on PostgreSQL (`skip`: those
/// another transaction holds are left out rather than waited for).
fn locked_packs(conn: &mut AnyConnection, site_id: Option<&str>, ids: &[i64], skip: bool) -> QueryResult<Vec<Pack>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let lock = match (conn.is_sqlite(), skip) {
        (true, _) => "",
        (false, true) => " FOR UPDATE SKIP LOCKED",
        (false, false) => " FOR UPDATE",
    };
    let list = InList::on(conn, ids.len());
    let site = site_filter(site_id);
    let mut q = list.query(format!(
        "SELECT id, site_id, row_count, body FROM web_outbox_packs WHERE {site}id IN {} ORDER BY id{lock}",
        list.placeholders()
    ));
    if let Some(site_id) = site_id {
        q.text(site_id);
    }
    list.ints(&mut q, ids);
    q.load::<PackRow>(conn)?.into_iter().map(PackRow::read).collect()
}

/// Writes a pack's rows back, changed.
pub fn set_pack_rows(conn: &mut AnyConnection, id: i64, rows: &[OutboxRow]) -> QueryResult<usize> {
    let mut q = RawQuery::new("UPDATE web_outbox_packs SET body = ? WHERE id = ?");
    q.bytes(outbox_pack::encode(rows)).int(id);
    q.execute(conn)
}

/// Rewrites the visitor of a site's queued rows from any of `ids` to
/// `fresh` (forgetting a person), a bounded read of packs at a time.
pub fn rewrite_pack_visitors(conn: &mut AnyConnection, site_id: &str, ids: &[String], fresh: &str) -> QueryResult<()> {
    const ROWS_PER_READ: usize = 2000;
    let mut after = 0;
    loop {
        let packs = site_packs(conn, site_id, after, ROWS_PER_READ)?;
        let Some(last) = packs.last() else { return Ok(()) };
        after = last.id;
        for mut p in packs {
            let mut changed = false;
            for o in p.rows.iter_mut().filter(|o| ids.contains(&o.visitor_id)) {
                o.visitor_id = fresh.to_string();
                changed = true;
            }
            if changed {
                set_pack_rows(conn, p.id, &p.rows)?;
            }
        }
    }
}

/// Deletes the packs of `ids` (applied).
pub fn delete_outbox(conn: &mut AnyConnection, ids: &[i64]) -> QueryResult<usize> {
    delete_ids(conn, "web_outbox_packs", ids)
}

/// Deletes the rows of `table` whose `id` is in `ids`, a bounded list per statement.
fn delete_ids(conn: &mut AnyConnection, table: &str, ids: &[i64]) -> QueryResult<usize> {
    let mut deleted = 0;
    for chunk in ids.chunks(500) {
        let list = InList::on(conn, chunk.len());
        let mut q = list.query(format!("DELETE FROM {table} WHERE id IN {}", list.placeholders()));
        list.ints(&mut q, chunk);
        deleted += q.execute(conn)?;
    }
    Ok(deleted)
}

/// The rows still to apply.
pub fn outbox_len(conn: &mut AnyConnection) -> QueryResult<i64> {
    Ok(RawQuery::new("SELECT CAST(COALESCE(SUM(row_count), 0) AS BIGINT) AS n FROM web_outbox_packs")
        .load::<crate::db::row::Count>(conn)?
        .first()
        .map_or(0, |r| r.n))
}

/// Moves up to `limit` rows of the table before packs into packs, in their
/// order; answers how many it moved. The caller repeats it until 0.
pub fn pack_legacy(conn: &mut AnyConnection, limit: usize) -> QueryResult<usize> {
    // Locked on PostgreSQL, so that processes starting together move each row once.
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE SKIP LOCKED" };
    let mut q = row::select::<OutboxRow>(&format!("ORDER BY id LIMIT ?{lock}"));
    q.int(limit as i64);
    let rows: Vec<OutboxRow> = q.load(conn)?;
    if rows.is_empty() {
        return Ok(0);
    }
    insert_outbox(conn, &rows)?;
    let ids: Vec<i64> = rows.iter().map(|o| o.id).collect();
    delete_ids(conn, "web_outbox", &ids)?;
    Ok(rows.len())
}
