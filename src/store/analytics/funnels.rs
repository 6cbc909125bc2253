//! The funnel step index and its rebuilds (ARPT-11,
//! ARPT-13): for each funnel, the events matching any of its steps, the
//! matched steps as bits, packed by (funnel, UTC day, visitor) since
//! migration 30: a report reads a row per visitor-day, not per event.

use std::collections::BTreeMap;

use diesel::QueryResult;

use super::EventRow;
use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::db::row::{self, Row};
use crate::db::sql::{RawQuery, placeholders};

/// The UTC day an instant falls in (the index's days are UTC days, as the
/// rollups' day tier).
pub fn day_of(at: i64) -> i64 {
    at - at.rem_euclid(DAY_MS)
}

/// One event of the index: whose, when, which, the steps it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRow {
    pub funnel_id: String,
    pub visitor_id: String,
    pub at: i64,
    pub event_id: String,
    /// Bit i: the event matches step i + 1.
    pub steps: i64,
}

/// One packed entry as read: the event's time, its step bits, its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub at: i64,
    pub steps: i64,
    pub event_id: EntryId<'a>,
}

impl<'a> Entry<'a> {
    /// What orders entries and tells an event seen twice: its time, then its id.
    pub fn key(&self) -> (i64, EntryId<'a>) {
        (self.at, self.event_id)
    }
}

/// An event's id as an entry holds it. The daemon's own ids (`e_` and 24
/// lowercase hex: `ids::time_ordered`) are kept as their 12 bytes, 13 bytes
/// an entry where the text took 27 (issue 25: a 90-day report sends every
/// entry of its range); any other id, and every entry written before this
/// form, as its text. Both forms order and compare as the text does, so an
/// event appended once in each form (a rebuild over older rows) is one event.
#[derive(Debug, Clone, Copy)]
pub enum EntryId<'a> {
    Packed(&'a [u8; PACKED_ID]),
    Text(&'a [u8]),
}

/// The bytes of a packed id, and the prefix its text form carries.
const PACKED_ID: usize = 12;
const PACKED_PREFIX: &[u8] = b"e_";

impl EntryId<'_> {
    /// The id as text: `e_` and the 24 hex digits of a packed id.
    pub fn to_text(&self) -> String {
        match self {
            EntryId::Packed(b) => String::from_utf8_lossy(&Self::text_form(b)).into_owned(),
            EntryId::Text(t) => String::from_utf8_lossy(t).into_owned(),
        }
    }

    /// The packed id's text form, on the stack (for a comparison with text).
    fn text_form(b: &[u8; PACKED_ID]) -> [u8; 26] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 26];
        out[..2].copy_from_slice(PACKED_PREFIX);
        for (i, byte) in b.iter().enumerate() {
            out[2 + 2 * i] = HEX[usize::from(byte >> 4)];
            out[3 + 2 * i] = HEX[usize::from(byte & 0xf)];
        }
        out
    }
}

impl Ord for EntryId<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            // Lowercase hex sorts as the bytes it spells, behind one prefix.
            (EntryId::Packed(a), EntryId::Packed(b)) => a.cmp(b),
            (EntryId::Text(a), EntryId::Text(b)) => a.cmp(b),
            (EntryId::Packed(a), EntryId::Text(b)) => Self::text_form(a).as_slice().cmp(b),
            (EntryId::Text(a), EntryId::Packed(b)) => (*a).cmp(Self::text_form(b).as_slice()),
        }
    }
}

impl PartialOrd for EntryId<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for EntryId<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for EntryId<'_> {}

/// The 12 bytes of an id of the daemon's own form, if it is one.
fn packed_id(event_id: &[u8]) -> Option<[u8; PACKED_ID]> {
    let hex = event_id.strip_prefix(PACKED_PREFIX).filter(|h| h.len() == 2 * PACKED_ID)?;
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; PACKED_ID];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// The bytes of an entry before its id: time (8), steps (2), id length (1).
const HEAD: usize = 11;

/// Appends an entry: the time and the step bits, big-endian, then the id,
/// packed (a length byte of 0, then its 12 bytes) when it is of the
/// daemon's form, else its length and its text (as migration 30 packed
/// every id). Steps past 16 bits or an id past 255 bytes (neither of which
/// the daemon makes) are refused rather than cut.
pub fn pack_into(out: &mut Vec<u8>, at: i64, steps: i64, event_id: &[u8]) -> Result<(), &'static str> {
    match packed_id(event_id) {
        Some(packed) => push(out, at, steps, EntryId::Packed(&packed)),
        None => push(out, at, steps, EntryId::Text(event_id)),
    }
}

/// Appends an entry as read (a row rewritten: retention's trim), an id
/// of the daemon's form packed whichever form it was read in.
pub fn repack_into(out: &mut Vec<u8>, e: &Entry<'_>) -> Result<(), &'static str> {
    match e.event_id {
        EntryId::Packed(_) => push(out, e.at, e.steps, e.event_id),
        EntryId::Text(t) => pack_into(out, e.at, e.steps, t),
    }
}

/// The one writer of an entry's bytes.
fn push(out: &mut Vec<u8>, at: i64, steps: i64, id: EntryId<'_>) -> Result<(), &'static str> {
    let steps = u16::try_from(steps).map_err(|_| "funnel step bits outside 16 bits")?;
    let (len, bytes): (u8, &[u8]) = match id {
        EntryId::Packed(b) => (0, b),
        EntryId::Text([]) => return Err("an empty event id"),
        EntryId::Text(t) => (u8::try_from(t.len()).map_err(|_| "an event id longer than 255 bytes")?, t),
    };
    out.extend_from_slice(&at.to_be_bytes());
    out.extend_from_slice(&steps.to_be_bytes());
    out.push(len);
    out.extend_from_slice(bytes);
    Ok(())
}

/// The entries of stored `entries`, in stored order (a truncated trailing
/// entry, which no writer makes, ends the walk).
pub fn unpack(entries: &[u8]) -> impl Iterator<Item = Entry<'_>> + '_ {
    let mut rest = entries;
    std::iter::from_fn(move || {
        if rest.len() < HEAD {
            return None;
        }
        let len = match rest[10] {
            0 => PACKED_ID,
            n => usize::from(n),
        };
        if rest.len() < HEAD + len {
            return None;
        }
        let at = i64::from_be_bytes(rest[..8].try_into().ok()?);
        let steps = i64::from(u16::from_be_bytes([rest[8], rest[9]]));
        let id = &rest[HEAD..HEAD + len];
        let event_id = match rest[10] {
            0 => EntryId::Packed(id.try_into().ok()?),
            _ => EntryId::Text(id),
        };
        rest = &rest[HEAD + len..];
        Some(Entry { at, steps, event_id })
    })
}

/// Sorts entries by `(at, event_id)` and drops an event seen twice (a
/// rebuild may append what acceptance already did): the order every
/// funnel computation reads them in.
pub fn settle(entries: &mut Vec<Entry<'_>>) {
    entries.sort_unstable_by_key(Entry::key);
    entries.dedup_by_key(|e| e.key());
}

crate::row! {
    /// A stored row of the index: one visitor's entries of one funnel and day.
    #[derive(Debug, Clone)]
    pub struct DayRow in web_funnel_days {
        pub funnel_id: String,
        pub day: i64,
        pub visitor_id: String,
        pub site_id: String,
        pub first_at: i64,
        pub entries: Vec<u8>,
    }
}

fn packing(e: &'static str) -> diesel::result::Error {
    diesel::result::Error::SerializationError(e.into())
}

/// Adds a site's step rows to the index: the rows of one (funnel, day,
/// visitor) packed together and appended to the stored row with one
/// multi-row upsert per chunk. Appending is done by the database (`||`), so
/// two processes adding to one row on PostgreSQL both land, without a read;
/// rows go in key order, so they lock in one order and never deadlock.
pub fn insert_steps(conn: &mut AnyConnection, site_id: &str, rows: &[StepRow]) -> QueryResult<usize> {
    let mut days: BTreeMap<(&str, i64, &str), (i64, Vec<u8>)> = BTreeMap::new();
    for r in rows {
        let (first, entries) =
            days.entry((&r.funnel_id, day_of(r.at), &r.visitor_id)).or_insert_with(|| (r.at, Vec::new()));
        *first = (*first).min(r.at);
        pack_into(entries, r.at, r.steps, r.event_id.as_bytes()).map_err(packing)?;
    }
    let rows: Vec<DayRow> = days
        .into_iter()
        .map(|((funnel_id, day, visitor_id), (first_at, entries))| DayRow {
            funnel_id: funnel_id.to_string(),
            day,
            visitor_id: visitor_id.to_string(),
            site_id: site_id.to_string(),
            first_at,
            entries,
        })
        .collect();
    let tail = if conn.is_sqlite() {
        // SQLite's `||` makes text of two blobs; the cast keeps the bytes a blob.
        " ON CONFLICT (funnel_id, day, visitor_id) DO UPDATE SET \
         entries = CAST(web_funnel_days.entries || excluded.entries AS BLOB), \
         first_at = MIN(web_funnel_days.first_at, excluded.first_at)"
    } else {
        " ON CONFLICT (funnel_id, day, visitor_id) DO UPDATE SET \
         entries = web_funnel_days.entries || excluded.entries, \
         first_at = LEAST(web_funnel_days.first_at, excluded.first_at)"
    };
    row::insert::<DayRow, _>(conn, &rows, tail)
}

crate::row! {
    /// What a report reads of a stored row: whose, and the entries.
    #[derive(Debug, Clone)]
    pub struct VisitorDay in web_funnel_days {
        pub visitor_id: String,
        pub day: i64,
        pub entries: Vec<u8>,
    }
}

/// A funnel's rows of the UTC days `[from_day, to_day]`, by `(day,
/// visitor)`, `limit` at most (a 90-day range is many rows; an entry
/// outside the caller's range is the caller's to leave out).
pub fn days_between(
    conn: &mut AnyConnection,
    funnel_id: &str,
    from_day: i64,
    to_day: i64,
    limit: usize,
) -> QueryResult<Vec<VisitorDay>> {
    let mut q = RawQuery::prepared(
        "SELECT visitor_id, day, entries FROM web_funnel_days \
         WHERE funnel_id = ? AND day >= ? AND day <= ? ORDER BY day, visitor_id LIMIT ?",
    );
    q.text(funnel_id).int(from_day).int(to_day).int(limit as i64);
    q.load(conn)
}

/// The rows of some (site, visitor) pairs, every funnel, unpacked and by
/// `(at, event_id)`, each event once: one read for every site of a live
/// answer. On SQLite a visitor asked for one site may bring another site's
/// rows too; each row's funnel names its site.
pub fn steps_of_visitors(conn: &mut AnyConnection, pairs: &[(String, String)]) -> QueryResult<Vec<StepRow>> {
    let mut pairs: Vec<&(String, String)> = pairs.iter().collect();
    pairs.sort();
    pairs.dedup();
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let q = if conn.is_sqlite() {
        // SQLite probes its (site, visitor) index for each site and visitor
        // of the two lists; a list of pairs (`(a, b) IN (VALUES …)`) it
        // would answer with a scan of the table.
        let mut sites: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
        sites.dedup();
        let mut visitors: Vec<&str> = pairs.iter().map(|p| p.1.as_str()).collect();
        visitors.sort_unstable();
        visitors.dedup();
        let mut q = RawQuery::new(format!(
            "SELECT {} FROM web_funnel_days WHERE site_id IN {} AND visitor_id IN {}",
            DayRow::select_list(),
            placeholders(sites.len()),
            placeholders(visitors.len())
        ));
        q.texts(&sites).texts(&visitors);
        q
    } else {
        // On PostgreSQL the two lists are a probe of the index for every
        // site times every visitor (1,000 for 100 visitors of 10 sites, a
        // tenth of them with rows); the pairs joined laterally probe it once
        // per pair (session 33: 3,054 pages read against 433).
        let mut q = RawQuery::new(format!(
            "SELECT d.* FROM (VALUES {}) AS w(site, visitor) CROSS JOIN LATERAL \
             (SELECT {} FROM web_funnel_days WHERE site_id = w.site AND visitor_id = w.visitor) AS d",
            vec!["(?::text, ?::text)"; pairs.len()].join(", "),
            DayRow::select_list()
        ));
        for (site, visitor) in &pairs {
            q.text(site.as_str()).text(visitor.as_str());
        }
        q
    };
    let days: Vec<DayRow> = q.load(conn)?;
    let mut out = Vec::new();
    for d in &days {
        let mut entries: Vec<Entry<'_>> = unpack(&d.entries).collect();
        settle(&mut entries);
        out.extend(entries.iter().map(|e| StepRow {
            funnel_id: d.funnel_id.clone(),
            visitor_id: d.visitor_id.clone(),
            at: e.at,
            event_id: e.event_id.to_text(),
            steps: e.steps,
        }));
    }
    out.sort_by(|a, b| (a.at, &a.event_id).cmp(&(b.at, &b.event_id)));
    Ok(out)
}

/// A funnel's rows go (its definition changed, or it was removed).
pub fn delete_steps(conn: &mut AnyConnection, funnel_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_funnel_days WHERE funnel_id = ?");
    q.text(funnel_id);
    q.execute(conn)
}

/// Retention of the index (RET-04): a site's entries before `cutoff` go, at
/// most `limit` rows touched. A row whose day ended by the cutoff is
/// deleted whole; a row of the cutoff's own day keeps its later entries
/// (read, locked on PostgreSQL, and written back, or deleted once empty).
pub fn trim_before(conn: &mut AnyConnection, site_id: &str, cutoff: i64, limit: usize) -> QueryResult<usize> {
    let key = super::retention::row_name(conn, "web_funnel_days");
    let mut q = RawQuery::new(format!(
        "DELETE FROM web_funnel_days WHERE ({key}) IN (SELECT {key} FROM web_funnel_days \
         WHERE site_id = ? AND first_at < ? AND day < ? LIMIT ?)"
    ));
    q.text(site_id).int(cutoff).int(day_of(cutoff)).int(limit as i64);
    let mut n = q.execute(conn)?;
    if n >= limit {
        return Ok(n);
    }
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE" };
    let mut q = row::select::<DayRow>(&format!(
        "WHERE site_id = ? AND first_at < ? AND day = ? ORDER BY funnel_id, day, visitor_id LIMIT ?{lock}"
    ));
    q.text(site_id).int(cutoff).int(day_of(cutoff)).int((limit - n) as i64);
    for d in q.load::<DayRow>(conn)? {
        let mut kept = Vec::with_capacity(d.entries.len());
        let mut first = None::<i64>;
        for e in unpack(&d.entries).filter(|e| e.at >= cutoff) {
            first = Some(first.map_or(e.at, |f| f.min(e.at)));
            repack_into(&mut kept, &e).map_err(packing)?;
        }
        let mut q = match first {
            Some(first_at) => {
                let mut q = RawQuery::new(
                    "UPDATE web_funnel_days SET entries = ?, first_at = ? \
                     WHERE funnel_id = ? AND day = ? AND visitor_id = ?",
                );
                q.bytes(kept).int(first_at);
                q
            }
            None => RawQuery::new("DELETE FROM web_funnel_days WHERE funnel_id = ? AND day = ? AND visitor_id = ?"),
        };
        q.text(d.funnel_id).int(d.day).text(d.visitor_id);
        q.execute(conn)?;
        n += 1;
    }
    Ok(n)
}

/// Moves the rows of `ids` (a person and its aliases, forgotten) to
/// `fresh`: their rows of one (funnel, day) become one row.
pub fn rewrite_visitors(conn: &mut AnyConnection, site_id: &str, ids: &[String], fresh: &str) -> QueryResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut q = row::select::<DayRow>(&format!("WHERE site_id = ? AND visitor_id IN {}", placeholders(ids.len())));
    q.text(site_id).texts(ids);
    let rows: Vec<DayRow> = q.load(conn)?;
    let mut q = RawQuery::new(format!(
        "DELETE FROM web_funnel_days WHERE site_id = ? AND visitor_id IN {}",
        placeholders(ids.len())
    ));
    q.text(site_id).texts(ids);
    q.execute(conn)?;
    let mut merged: BTreeMap<(String, i64), DayRow> = BTreeMap::new();
    for r in rows {
        match merged.get_mut(&(r.funnel_id.clone(), r.day)) {
            Some(m) => {
                m.first_at = m.first_at.min(r.first_at);
                m.entries.extend_from_slice(&r.entries);
            }
            None => {
                merged.insert((r.funnel_id.clone(), r.day), DayRow { visitor_id: fresh.to_string(), ..r });
            }
        }
    }
    let rows: Vec<DayRow> = merged.into_values().collect();
    row::insert::<DayRow, _>(conn, &rows, "")?;
    Ok(())
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct Rebuild in web_funnel_rebuilds {
        pub funnel_id: String,
        pub site_id: String,
        pub after_at: i64,
        pub after_id: String,
    }
}

/// Starts (or restarts from the beginning) a funnel's rebuild.
pub fn start_rebuild(conn: &mut AnyConnection, funnel_id: &str, site_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new(
        "INSERT INTO web_funnel_rebuilds (funnel_id, site_id, after_at, after_id) VALUES (?, ?, ?, '') \
         ON CONFLICT (funnel_id) DO UPDATE SET after_at = excluded.after_at, after_id = excluded.after_id",
    );
    q.text(funnel_id).text(site_id).int(i64::MIN);
    q.execute(conn)
}

/// One pending rebuild, locked and skipped by other processes on PostgreSQL.
pub fn next_rebuild(conn: &mut AnyConnection) -> QueryResult<Option<Rebuild>> {
    let lock = if conn.is_sqlite() { "" } else { " FOR UPDATE SKIP LOCKED" };
    let q = RawQuery::new(format!(
        "SELECT funnel_id, site_id, after_at, after_id FROM web_funnel_rebuilds ORDER BY funnel_id LIMIT 1{lock}"
    ));
    Ok(q.load(conn)?.into_iter().next())
}

pub fn rebuilding(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<String>> {
    crate::row! {
        struct Id {
            funnel_id: String,
        }
    }
    let mut q = RawQuery::new("SELECT funnel_id FROM web_funnel_rebuilds WHERE site_id = ?");
    q.text(site_id);
    Ok(q.load::<Id>(conn)?.into_iter().map(|r| r.funnel_id).collect())
}

pub fn move_rebuild(conn: &mut AnyConnection, funnel_id: &str, after_at: i64, after_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("UPDATE web_funnel_rebuilds SET after_at = ?, after_id = ? WHERE funnel_id = ?");
    q.int(after_at).text(after_id).text(funnel_id);
    q.execute(conn)
}

pub fn end_rebuild(conn: &mut AnyConnection, funnel_id: &str) -> QueryResult<usize> {
    let mut q = RawQuery::new("DELETE FROM web_funnel_rebuilds WHERE funnel_id = ?");
    q.text(funnel_id);
    q.execute(conn)
}

/// A site's pageviews and custom events after `(after_at, after_id)`, by `(occurred_at, id)`.
pub fn events_after(
    conn: &mut AnyConnection,
    site_id: &str,
    after_at: i64,
    after_id: &str,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE site_id = ? AND (occurred_at > ? OR (occurred_at = ? AND id > ?)) \
         ORDER BY occurred_at, id LIMIT ?",
        cols = EventRow::select_list()
    ));
    q.text(site_id).int(after_at).int(after_at).text(after_id).int(limit as i64);
    q.load(conn)
}

/// A site's pageviews and custom events with a time in `[from, to]` (a funnel
/// being rebuilt is read from them), `limit` at most.
pub fn events_between(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    limit: usize,
) -> QueryResult<Vec<EventRow>> {
    let mut q = RawQuery::new(format!(
        "SELECT {cols} FROM web_events WHERE site_id = ? AND occurred_at >= ? AND occurred_at <= ? \
         ORDER BY occurred_at, id LIMIT ?",
        cols = EventRow::select_list()
    ));
    q.text(site_id).int(from).int(to).int(limit as i64);
    q.load(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_unpack_as_packed_and_settle_in_order_each_event_once() {
        let mut packed = Vec::new();
        for (at, steps, id) in [(5_i64, 2_i64, "e_b"), (3, 1, "e_a"), (5, 4, "e_a"), (3, 1, "e_a")] {
            pack_into(&mut packed, at, steps, id.as_bytes()).unwrap();
        }
        let mut entries: Vec<Entry<'_>> = unpack(&packed).collect();
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0], Entry { at: 5, steps: 2, event_id: EntryId::Text(b"e_b") });
        settle(&mut entries);
        let got: Vec<(i64, i64, String)> = entries.iter().map(|e| (e.at, e.steps, e.event_id.to_text())).collect();
        let want = [(3, 1, "e_a"), (5, 4, "e_a"), (5, 2, "e_b")];
        assert_eq!(got, want.map(|(at, steps, id)| (at, steps, id.to_string())));
        // A truncated tail ends the walk rather than reading past the bytes.
        assert_eq!(unpack(&packed[..packed.len() - 1]).count(), 3);
    }

    /// The daemon's own ids go in as their 12 bytes and come back as the
    /// same text; an entry of each form for one event is that event once,
    /// and the two forms order among each other as their texts do.
    #[test]
    fn the_daemons_ids_are_packed_and_compare_as_their_text() {
        let (early, late) = ("e_019ad3c5f0a0c3e1f2a4b6d8", "e_019ad3c5f0a0c3e1f2a4b6d9");
        let mut packed = Vec::new();
        pack_into(&mut packed, 7, 1, late.as_bytes()).unwrap();
        assert_eq!(packed.len(), HEAD + PACKED_ID, "8 + 2 + 1 + 12 bytes, where the text took 37");
        // As migration 30 and earlier writers left them: the id's text.
        for id in [early, late] {
            packed.extend_from_slice(&7_i64.to_be_bytes());
            packed.extend_from_slice(&1_u16.to_be_bytes());
            packed.push(id.len() as u8);
            packed.extend_from_slice(id.as_bytes());
        }
        pack_into(&mut packed, 7, 1, early.as_bytes()).unwrap();
        let mut entries: Vec<Entry<'_>> = unpack(&packed).collect();
        assert!(matches!(entries[0].event_id, EntryId::Packed(_)));
        assert!(matches!(entries[1].event_id, EntryId::Text(_)));
        assert_eq!(entries[0].event_id, entries[2].event_id);
        assert!(entries[0].event_id > entries[1].event_id && entries[1].event_id < entries[2].event_id);
        settle(&mut entries);
        let ids: Vec<String> = entries.iter().map(|e| e.event_id.to_text()).collect();
        assert_eq!(ids, [early, late]);
        // Rewritten (a trim), each id goes back packed.
        let mut again = Vec::new();
        for e in &entries {
            repack_into(&mut again, e).unwrap();
        }
        assert_eq!(again.len(), 2 * (HEAD + PACKED_ID));
        assert_eq!(unpack(&again).map(|e| e.event_id.to_text()).collect::<Vec<_>>(), ids);
        // Not of the form (uppercase, short, another prefix): kept as text.
        for other in ["e_019AD3C5F0A0C3E1F2A4B6D8", "e_019ad3c5", "s_019ad3c5f0a0c3e1f2a4b6d8"] {
            let mut out = Vec::new();
            pack_into(&mut out, 0, 1, other.as_bytes()).unwrap();
            let e = unpack(&out).next().unwrap();
            assert!(matches!(e.event_id, EntryId::Text(_)));
            assert_eq!(e.event_id.to_text(), other);
        }
    }

    #[test]
    fn what_an_entry_cannot_hold_is_refused_not_cut() {
        let mut out = Vec::new();
        assert!(pack_into(&mut out, 0, 1 << 16, b"e_a").is_err());
        assert!(pack_into(&mut out, 0, 1, &[b'x'; 256]).is_err());
        assert!(pack_into(&mut out, 0, 1, b"").is_err(), "a length of 0 marks a packed id");
        assert!(out.is_empty());
        assert_eq!(day_of(86_400_000 * 3 + 5), 86_400_000 * 3);
        assert_eq!(day_of(-1), -86_400_000);
    }
}
