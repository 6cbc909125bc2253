//! Queries on the Conversions API send queue (`conversions`) and its per-day
//! counters of accepted events (`conversion_days`).
//!
//! A row is `pending` until it ends `sent` or `failed`; every way out of
//! `pending` goes through [`end`], which erases the contact hashes in the same
//! statement. An attempt holds the row with a lease (`lease_owner`,
//! `lease_until`): a result is written only by the holder of the lease, and a
//! lease that ran out without a result is an attempt lost on the way.

use diesel::prelude::*;

use crate::db::AnyConnection;
use crate::db::schema::conversions;
use crate::db::sql::{RawQuery, placeholders};

crate::closed_set! {
    /// Where a queued conversion is (`conversions.status`): `pending` until
    /// it ends `sent` or `failed` (see [`end`]); a failed row may reopen.
    pub enum ConversionStatus {
        Pending = "pending",
        Sent = "sent",
        Failed = "failed",
    }
}

use ConversionStatus::{Failed, Pending, Sent};

#[derive(Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = conversions)]
#[diesel(treat_none_as_default_value = false)]
pub struct ConversionRow {
    pub event_id: String,
    pub site_id: String,
    pub lead_id: Option<String>,
    pub event_name: String,
    pub event_time: i64,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
    pub status: String,
    pub attempts: i64,
    pub due_at: Option<i64>,
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
    /// SHA-256 hex digests, comma-separated; None once the row ended.
    pub ph: Option<String>,
    pub external_id: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub updated_at: i64,
    /// A form lead's leadgen id (Conversion Leads, LA-19): sent as `user_data.lead_id`.
    pub meta_lead_id: Option<String>,
    /// The CRM stage's name sent as `event_name` for a form lead (the column's declared name).
    pub crm_event_name: Option<String>,
    /// A site sale sent as a `website` Purchase (WA-33): the ledger conversion.
    pub web_conversion_id: Option<String>,
    /// … and the session whose sealed landing fbclid goes as `fbc` (read when sent).
    pub web_session_id: Option<String>,
    /// The event id Meta gets when it is not the row's own `event_id`.
    pub sent_event_id: Option<String>,
}

/// Never prints the hashes.
impl std::fmt::Debug for ConversionRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversionRow")
            .field("event_id", &self.event_id)
            .field("site_id", &self.site_id)
            .field("event_name", &self.event_name)
            .field("status", &self.status)
            .field("attempts", &self.attempts)
            .field("due_at", &self.due_at)
            .field("lease_until", &self.lease_until)
            .field("hashes", &self.ph.as_ref().map(|_| "<redacted>"))
            .field("last_error", &self.last_error)
            .finish()
    }
}

pub fn find(conn: &mut AnyConnection, event_id: &str) -> QueryResult<Option<ConversionRow>> {
    conversions::table.find(event_id).select(ConversionRow::as_select()).get_result(conn).optional()
}

pub fn insert(conn: &mut AnyConnection, row: &ConversionRow) -> QueryResult<()> {
    diesel::insert_into(conversions::table).values(row.clone()).execute(conn).map(|_| ())
}

/// A failed row back to pending with fresh hashes and no attempt made.
pub struct Reopen<'a> {
    pub event_id: &'a str,
    pub event_time: i64,
    pub value_cents: Option<i64>,
    pub ph: Option<String>,
    pub external_id: Option<String>,
    pub now: i64,
}

/// Reopens a failed row; false when it is not failed (pending or sent stay as they are).
pub fn reopen(conn: &mut AnyConnection, r: Reopen<'_>) -> QueryResult<bool> {
    let n = diesel::update(
        conversions::table.filter(conversions::event_id.eq(r.event_id)).filter(conversions::status.eq(Failed.as_str())),
    )
    .set((
        conversions::status.eq(Pending.as_str()),
        conversions::attempts.eq(0),
        conversions::due_at.eq(Some(r.now)),
        conversions::lease_owner.eq(None::<String>),
        conversions::lease_until.eq(None::<i64>),
        conversions::event_time.eq(r.event_time),
        conversions::value_cents.eq(r.value_cents),
        conversions::ph.eq(r.ph),
        conversions::external_id.eq(r.external_id),
        conversions::last_error.eq(None::<String>),
        conversions::updated_at.eq(r.now),
    ))
    .execute(conn)?;
    Ok(n == 1)
}

/// The sends a removed lead takes with it from the per-day counters.
#[derive(Debug, Clone)]
pub struct SentOf {
    pub site_id: String,
    pub event_name: String,
    pub sent_at: i64,
}

/// Deletes the lead's conversions, answering the sent ones (to uncount them).
pub fn delete_of_lead(conn: &mut AnyConnection, lead_id: &str) -> QueryResult<Vec<SentOf>> {
    let sent: Vec<(String, String, Option<i64>)> = conversions::table
        .filter(conversions::lead_id.eq(lead_id))
        .filter(conversions::status.eq(Sent.as_str()))
        .select((conversions::site_id, conversions::event_name, conversions::sent_at))
        .load(conn)?;
    diesel::delete(conversions::table.filter(conversions::lead_id.eq(lead_id))).execute(conn)?;
    Ok(sent
        .into_iter()
        .filter_map(|(site_id, event_name, at)| at.map(|sent_at| SentOf { site_id, event_name, sent_at }))
        .collect())
}

/// Adds `delta` accepted events to (site, UTC day, event); drops a row left at zero.
pub fn bump_day(conn: &mut AnyConnection, site_id: &str, day: i64, event_name: &str, delta: i64) -> QueryResult<()> {
    if delta == 0 {
        return Ok(());
    }
    let mut q = RawQuery::new(
        "INSERT INTO conversion_days (site_id, day, event_name, sent) VALUES (?, ?, ?, ?) \
         ON CONFLICT (site_id, day, event_name) DO UPDATE SET sent = conversion_days.sent + excluded.sent",
    );
    q.text(site_id).int(day).text(event_name).int(delta);
    q.execute(conn)?;
    if delta < 0 {
        let mut del =
            RawQuery::new("DELETE FROM conversion_days WHERE site_id = ? AND day = ? AND event_name = ? AND sent <= 0");
        del.text(site_id).int(day).text(event_name);
        del.execute(conn)?;
    }
    Ok(())
}

/// Pending rows of the site whose attempt is due at `now` and not held by a
/// live lease, oldest due first.
pub fn due(conn: &mut AnyConnection, site_id: &str, now: i64, limit: usize) -> QueryResult<Vec<ConversionRow>> {
    conversions::table
        .filter(conversions::site_id.eq(site_id))
        .filter(conversions::status.eq(Pending.as_str()))
        .filter(conversions::due_at.le(now))
        .filter(conversions::lease_until.is_null().or(conversions::lease_until.le(now)))
        // The index's own order (site, status, due): LIMIT stops early on a long queue.
        .order(conversions::due_at.asc())
        .limit(limit as i64)
        .select(ConversionRow::as_select())
        .load(conn)
}

/// Takes a lease on each of `ids` still pending and free, counting one attempt
/// each; answers the rows now held by `owner`.
pub fn take_lease(
    conn: &mut AnyConnection,
    ids: &[String],
    owner: &str,
    until: i64,
    now: i64,
) -> QueryResult<Vec<ConversionRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    diesel::update(
        conversions::table
            .filter(conversions::event_id.eq_any(ids))
            .filter(conversions::status.eq(Pending.as_str()))
            .filter(conversions::lease_until.is_null().or(conversions::lease_until.le(now))),
    )
    .set((
        conversions::attempts.eq(conversions::attempts + 1),
        conversions::lease_owner.eq(owner),
        conversions::lease_until.eq(until),
        conversions::updated_at.eq(now),
    ))
    .execute(conn)?;
    // By primary key: the lease owner has no index.
    conversions::table
        .filter(conversions::event_id.eq_any(ids))
        .filter(conversions::lease_owner.eq(owner))
        .filter(conversions::status.eq(Pending.as_str()))
        .order(conversions::due_at.asc())
        .select(ConversionRow::as_select())
        .load(conn)
}

/// How a row ends.
pub struct End<'a> {
    pub status: ConversionStatus,
    pub last_error: Option<&'a str>,
    pub sent_at: Option<i64>,
    pub now: i64,
}

/// Ends the pending rows of `ids` (held by `owner` when given), erasing their
/// hashes; answers the rows that ended (event name and site, for the counters).
pub fn end(
    conn: &mut AnyConnection,
    ids: &[String],
    owner: Option<&str>,
    e: &End<'_>,
) -> QueryResult<Vec<(String, String)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut select = conversions::table
        .filter(conversions::event_id.eq_any(ids))
        .filter(conversions::status.eq(Pending.as_str()))
        .select((conversions::site_id, conversions::event_name))
        .into_boxed();
    if let Some(o) = owner {
        select = select.filter(conversions::lease_owner.eq(o));
    }
    let ending: Vec<(String, String)> = select.load(conn)?;
    let target =
        conversions::table.filter(conversions::event_id.eq_any(ids)).filter(conversions::status.eq(Pending.as_str()));
    let set = (
        conversions::status.eq(e.status.as_str()),
        conversions::due_at.eq(None::<i64>),
        conversions::lease_owner.eq(None::<String>),
        conversions::lease_until.eq(None::<i64>),
        conversions::ph.eq(None::<String>),
        conversions::external_id.eq(None::<String>),
        conversions::last_error.eq(e.last_error),
        conversions::sent_at.eq(e.sent_at),
        conversions::updated_at.eq(e.now),
    );
    match owner {
        Some(o) => diesel::update(target.filter(conversions::lease_owner.eq(o))).set(set).execute(conn)?,
        None => diesel::update(target).set(set).execute(conn)?,
    };
    Ok(ending)
}

/// Schedules the next attempt of the rows of `ids` held by `owner`.
pub fn retry_at(
    conn: &mut AnyConnection,
    ids: &[String],
    owner: &str,
    due_at: i64,
    last_error: &str,
    now: i64,
) -> QueryResult<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    diesel::update(
        conversions::table
            .filter(conversions::event_id.eq_any(ids))
            .filter(conversions::status.eq(Pending.as_str()))
            .filter(conversions::lease_owner.eq(owner)),
    )
    .set((
        conversions::due_at.eq(Some(due_at)),
        conversions::lease_owner.eq(None::<String>),
        conversions::lease_until.eq(None::<i64>),
        conversions::last_error.eq(Some(last_error)),
        conversions::updated_at.eq(now),
    ))
    .execute(conn)
}

/// Releases the rows of `ids` held by `owner` without counting the attempt
/// (the token changed while it was in flight): due again at `now`.
pub fn give_back(conn: &mut AnyConnection, ids: &[String], owner: &str, now: i64) -> QueryResult<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    diesel::update(
        conversions::table
            .filter(conversions::event_id.eq_any(ids))
            .filter(conversions::status.eq(Pending.as_str()))
            .filter(conversions::lease_owner.eq(owner)),
    )
    .set((
        conversions::attempts.eq(conversions::attempts - 1),
        conversions::due_at.eq(Some(now)),
        conversions::lease_owner.eq(None::<String>),
        conversions::lease_until.eq(None::<i64>),
        conversions::updated_at.eq(now),
    ))
    .execute(conn)
}

/// The sites with any pending row: one index probe per site, never a walk
/// over the pending rows themselves (the queue may hold a burst of 100,000).
pub fn sites_with_pending(conn: &mut AnyConnection) -> QueryResult<Vec<String>> {
    crate::row! {
        struct Site {
            id: String,
        }
    }
    // The status is written into the text (not bound) so the planner sees the
    // constant, as it always did.
    let q = RawQuery::new(format!(
        "SELECT s.id AS id FROM sites s WHERE EXISTS \
         (SELECT 1 FROM conversions c WHERE c.site_id = s.id AND c.status = '{Pending}') ORDER BY s.id",
    ));
    Ok(q.load::<Site>(conn)?.into_iter().map(|s| s.id).collect())
}

crate::row! {
    struct NextDue {
        at: Option<i64>,
    }
}

/// When the site's queue next needs looking at: the earliest due attempt, or
/// the end of a lease (a send lost on the way). None when nothing is pending.
pub fn next_due(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<i64>> {
    let mut q = RawQuery::new(format!(
        "SELECT MIN(CASE WHEN lease_until IS NOT NULL AND lease_until > due_at THEN lease_until ELSE due_at END) AS at \
         FROM conversions WHERE site_id = ? AND status = '{Pending}'",
    ));
    q.text(site_id);
    Ok(q.load::<NextDue>(conn)?.into_iter().next().and_then(|r| r.at))
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct StatusCount {
        pub site_id: String,
        pub status: String,
        pub n: i64,
    }
}

/// The queue of each site counted by status (through the site/status index).
pub fn status_counts(conn: &mut AnyConnection, site_ids: &[String]) -> QueryResult<Vec<StatusCount>> {
    if site_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT site_id, status, CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE site_id IN {} \
         GROUP BY site_id, status",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids);
    q.load(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct DayCount {
        pub site_id: String,
        pub day: i64,
        pub event_name: String,
        pub sent: i64,
    }
}

/// The per-day counters of `site_ids` from `from_day` to `to_day` (UTC day starts, inclusive).
pub fn day_counts(
    conn: &mut AnyConnection,
    site_ids: &[String],
    from_day: i64,
    to_day: i64,
) -> QueryResult<Vec<DayCount>> {
    if site_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut q = RawQuery::new(format!(
        "SELECT site_id, day, event_name, sent FROM conversion_days WHERE site_id IN {} AND day >= ? AND day <= ?",
        placeholders(site_ids.len())
    ));
    q.texts(site_ids).int(from_day).int(to_day);
    q.load(conn)
}

/// A page of the site's conversions, newest first: strictly before `before`
/// (created_at), or at `before` with a smaller event id when one is given.
pub fn page(
    conn: &mut AnyConnection,
    site_id: &str,
    limit: i64,
    before: Option<(i64, Option<&str>)>,
) -> QueryResult<Vec<ConversionRow>> {
    let mut q = conversions::table.filter(conversions::site_id.eq(site_id)).into_boxed();
    match before {
        Some((at, None)) => q = q.filter(conversions::created_at.lt(at)),
        Some((at, Some(id))) => {
            q = q.filter(
                conversions::created_at
                    .lt(at)
                    .or(conversions::created_at.eq(at).and(conversions::event_id.lt(id.to_string()))),
            )
        }
        None => {}
    }
    q.order((conversions::created_at.desc(), conversions::event_id.desc()))
        .limit(limit)
        .select(ConversionRow::as_select())
        .load(conn)
}

/// What the reads show of a conversion's lead, as it is now.
#[derive(Debug, Clone, Queryable)]
pub struct LeadFacts {
    pub id: String,
    pub label: Option<String>,
    pub ad_id: String,
    pub ad_name: Option<String>,
}

pub fn lead_facts(conn: &mut AnyConnection, lead_ids: &[String]) -> QueryResult<Vec<LeadFacts>> {
    use crate::db::schema::leads;
    if lead_ids.is_empty() {
        return Ok(Vec::new());
    }
    leads::table
        .filter(leads::id.eq_any(lead_ids))
        .select((leads::id, leads::label, leads::ad_id, leads::ad_name))
        .load(conn)
}

/// A lead's origin and stored click id, for the click-id sends (WA-31).
#[derive(Clone, Queryable)]
pub struct LeadClick {
    pub id: String,
    pub origin: String,
    pub click_id: Option<String>,
}

/// Never prints the click id.
impl std::fmt::Debug for LeadClick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadClick").field("id", &self.id).field("origin", &self.origin).finish_non_exhaustive()
    }
}

/// The origin and click id of each of `lead_ids` that exists.
pub fn lead_clicks(conn: &mut AnyConnection, lead_ids: &[String]) -> QueryResult<Vec<LeadClick>> {
    use crate::db::schema::leads;
    if lead_ids.is_empty() {
        return Ok(Vec::new());
    }
    leads::table.filter(leads::id.eq_any(lead_ids)).select((leads::id, leads::origin, leads::click_id)).load(conn)
}

/// The Meta event the site's board column sends, if the event map points it at one.
pub fn column_event(conn: &mut AnyConnection, site_id: &str, key: &str) -> QueryResult<Option<String>> {
    use crate::db::schema::pipeline_columns;
    Ok(pipeline_columns::table
        .filter(pipeline_columns::site_id.eq(site_id))
        .filter(pipeline_columns::key.eq(key))
        .select(pipeline_columns::event)
        .get_result::<Option<String>>(conn)
        .optional()?
        .flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_string() {
        crate::assert_round_trip!(ConversionStatus);
        let stored: Vec<&str> = ConversionStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(stored, ["pending", "sent", "failed"], "the stored strings stay");
    }
}
