//! Vitals digests (for ARPT-17, ARPT-18): per (site, UTC day, metric,
//! route, device) a sparse value → count map (integer ms; CLS × 10⁴), so a
//! p75 over any range of days is exact. The device '' is the unknown device.
//! Each cell is one row whose `pairs` hold its map packed (migration 28):
//! a report reads a row per cell, not per distinct value.

use std::collections::{BTreeMap, HashMap};

use diesel::QueryResult;

use crate::db::AnyConnection;
use crate::db::row;
use crate::db::sql::RawQuery;

/// One digest cell's key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    pub site_id: String,
    pub day: i64,
    pub metric: String,
    pub route: String,
    pub device: String,
}

/// The bytes a (value, count) pair takes in `pairs`.
const PAIR: usize = 8;

/// A value → count map as stored: 8 bytes a pair, ascending by value, the
/// value then the count, each an unsigned 32-bit big-endian integer (the
/// form migration 28 builds in SQL). Counts are positive; a value or a count
/// outside 32 bits cannot be stored, and is an error rather than a wrong sum.
pub fn pack(pairs: &BTreeMap<i64, i64>) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::with_capacity(pairs.len() * PAIR);
    for (&value, &count) in pairs.iter().filter(|(_, c)| **c != 0) {
        let value = u32::try_from(value).map_err(|_| "a vital value outside 32 bits")?;
        let count = u32::try_from(count).map_err(|_| "a vital count below zero or outside 32 bits")?;
        out.extend_from_slice(&value.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
    }
    Ok(out)
}

/// The (value, count) pairs of stored `pairs`, ascending by value (a
/// trailing partial pair, which no writer makes, is ignored).
pub fn unpack(pairs: &[u8]) -> impl Iterator<Item = (i64, i64)> + '_ {
    pairs.chunks_exact(PAIR).map(|p| {
        let value = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
        let count = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
        (i64::from(value), i64::from(count))
    })
}

/// Cells per statement (five binds each), under both backends' bind limits.
const CELLS_PER_STATEMENT: usize = row::BINDS_PER_STATEMENT / 5;

fn bind_key(q: &mut RawQuery, c: &Cell) {
    q.text(c.site_id.as_str()).int(c.day).text(c.metric.as_str()).text(c.route.as_str()).text(c.device.as_str());
}

crate::row! {
    struct Stored in web_vital_digests {
        site_id: String,
        day: i64,
        metric: String,
        route: String,
        device: String,
        pairs: Vec<u8>,
    }
}

/// The stored pairs of `cells` (sorted, distinct), for a change: on
/// PostgreSQL each cell is made to exist (empty) and then row-locked in key
/// order, so two processes adding to one cell take turns instead of one
/// overwriting the other's sum, and never deadlock.
fn lock(conn: &mut AnyConnection, cells: &[&Cell]) -> QueryResult<HashMap<Cell, Vec<u8>>> {
    let mut out = HashMap::new();
    for chunk in cells.chunks(CELLS_PER_STATEMENT) {
        let tuples = vec!["(?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        if !conn.is_sqlite() {
            let mut q = RawQuery::new(format!(
                "INSERT INTO web_vital_digests (site_id, day, metric, route, device, pairs) \
                 SELECT v.*, ''::bytea FROM (VALUES {tuples}) AS v ON CONFLICT DO NOTHING"
            ));
            chunk.iter().for_each(|c| bind_key(&mut q, c));
            q.execute(conn)?;
        }
        let tail = if conn.is_sqlite() { "" } else { " ORDER BY site_id, day, metric, route, device FOR UPDATE" };
        let mut q =
            row::select::<Stored>(&format!("WHERE (site_id, day, metric, route, device) IN (VALUES {tuples}){tail}"));
        chunk.iter().for_each(|c| bind_key(&mut q, c));
        for r in q.load::<Stored>(conn)? {
            let cell = Cell { site_id: r.site_id, day: r.day, metric: r.metric, route: r.route, device: r.device };
            out.insert(cell, r.pairs);
        }
    }
    Ok(out)
}

/// Adds each cell's value → delta map to the stored one (a negative delta:
/// a sample a later vitals event replaced): one read of the cells, one write
/// of those left with samples, one delete of those left without.
pub fn add(conn: &mut AnyConnection, deltas: &BTreeMap<Cell, BTreeMap<i64, i64>>) -> QueryResult<()> {
    let cells: Vec<&Cell> = deltas.keys().collect();
    let mut stored = lock(conn, &cells)?;
    let mut kept = Vec::new();
    let mut emptied = Vec::new();
    for (cell, delta) in deltas {
        let mut map: BTreeMap<i64, i64> =
            stored.remove(cell).as_deref().map(|p| unpack(p).collect()).unwrap_or_default();
        for (value, n) in delta {
            *map.entry(*value).or_default() += n;
        }
        // A sample taken from a value the cell lacks (no writer does that)
        // leaves nothing below zero.
        map.retain(|_, n| *n > 0);
        if map.is_empty() {
            emptied.push(cell);
            continue;
        }
        let pairs = pack(&map).map_err(|e| diesel::result::Error::SerializationError(e.into()))?;
        kept.push(Stored {
            site_id: cell.site_id.clone(),
            day: cell.day,
            metric: cell.metric.clone(),
            route: cell.route.clone(),
            device: cell.device.clone(),
            pairs,
        });
    }
    row::insert::<Stored, _>(
        conn,
        &kept,
        " ON CONFLICT (site_id, day, metric, route, device) DO UPDATE SET pairs = excluded.pairs",
    )?;
    delete(conn, &emptied)?;
    Ok(())
}

/// Deletes these cells.
pub fn delete(conn: &mut AnyConnection, cells: &[&Cell]) -> QueryResult<usize> {
    let mut n = 0;
    for chunk in cells.chunks(CELLS_PER_STATEMENT) {
        let tuples = vec!["(?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        let mut q = RawQuery::new(format!(
            "DELETE FROM web_vital_digests WHERE (site_id, day, metric, route, device) IN (VALUES {tuples})"
        ));
        chunk.iter().for_each(|c| bind_key(&mut q, c));
        n += q.execute(conn)?;
    }
    Ok(n)
}

crate::row! {
    /// One cell of a site's digests: its metric, route and device, and its
    /// value → count pairs packed (see [`unpack`]).
    #[derive(Debug, Clone)]
    pub struct DigestRow in web_vital_digests {
        pub metric: String,
        pub route: String,
        pub device: String,
        pub pairs: Vec<u8>,
    }
}

impl DigestRow {
    /// A cell of one sample of `value` (a stored event's: acceptance keeps
    /// values within 32 bits, TRK-32).
    pub fn single(metric: &str, route: String, device: String, value: i64) -> Self {
        let value = u32::try_from(value.max(0)).unwrap_or(u32::MAX);
        let mut pairs = Vec::with_capacity(PAIR);
        pairs.extend_from_slice(&value.to_be_bytes());
        pairs.extend_from_slice(&1u32.to_be_bytes());
        DigestRow { metric: metric.to_string(), route, device, pairs }
    }
}

crate::row! {
    struct SampleRow {
        metric: String,
        route: String,
        device: String,
        value: i64,
    }
}

/// What the digests hold for the pageviews (events of kind `pageview`) of
/// `[from, to)` (any instants), from the rows: one cell of one sample per
/// (pageview, metric it has), the device its session's ('' when unknown), as
/// the report actor files them.
pub fn digest_rows_between(
    conn: &mut AnyConnection,
    site_id: &str,
    pageview: &str,
    from: i64,
    to: i64,
) -> QueryResult<Vec<DigestRow>> {
    let mut q = RawQuery::prepared(
        "SELECT m.metric, e.route, COALESCE(s.device, '') AS device, \
         CASE m.metric WHEN 'lcp' THEN e.lcp WHEN 'inp' THEN e.inp WHEN 'cls' THEN e.cls WHEN 'fcp' THEN e.fcp \
         ELSE e.ttfb END AS value \
         FROM web_events e JOIN web_sessions s ON s.id = e.session_id \
         CROSS JOIN (SELECT 'lcp' AS metric UNION ALL SELECT 'inp' UNION ALL SELECT 'cls' UNION ALL SELECT 'fcp' \
         UNION ALL SELECT 'ttfb') m \
         WHERE e.site_id = ? AND e.kind = ? AND e.occurred_at >= ? AND e.occurred_at < ? \
         AND (CASE m.metric WHEN 'lcp' THEN e.lcp WHEN 'inp' THEN e.inp WHEN 'cls' THEN e.cls WHEN 'fcp' THEN e.fcp \
         ELSE e.ttfb END) IS NOT NULL",
    );
    q.text(site_id).text(pageview).int(from).int(to);
    let rows = q.load::<SampleRow>(conn)?;
    Ok(rows.into_iter().map(|r| DigestRow::single(&r.metric, r.route, r.device, r.value)).collect())
}

/// A site's digest cells over days `[from, to]`, one row per (day, cell), in
/// key order: the caller merges the days. (A GROUP BY here sorted every
/// cell of the range by text, which cost more than the walk itself.)
pub fn digests(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> QueryResult<Vec<DigestRow>> {
    let mut q = RawQuery::prepared(
        "SELECT metric, route, device, pairs FROM web_vital_digests WHERE site_id = ? AND day >= ? AND day <= ?",
    );
    q.text(site_id).int(from).int(to);
    q.load(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_pack_ascending_and_unpack_to_the_same_map() {
        let map: BTreeMap<i64, i64> = [(1_000_000, 2), (0, 1), (2_500, 7), (9, 0)].into_iter().collect();
        let packed = pack(&map).unwrap();
        assert_eq!(packed.len(), 3 * PAIR, "a zero count is not stored");
        assert_eq!(&packed[..8], &[0, 0, 0, 0, 0, 0, 0, 1], "value 0 once first, big-endian");
        let back: Vec<(i64, i64)> = unpack(&packed).collect();
        assert_eq!(back, vec![(0, 1), (2_500, 7), (1_000_000, 2)]);
        assert!(pack(&[(-1, 1)].into_iter().collect()).is_err());
        assert!(pack(&[(1, -1)].into_iter().collect()).is_err());
        assert!(pack(&[(1i64 << 32, 1)].into_iter().collect()).is_err());
        assert_eq!(unpack(&packed[..12]).count(), 1, "a partial pair is ignored");
    }
}
