//! Which rollup rows a day-interval range reads (the month
//! tier, STORE-05): the whole UTC months inside it from the month tier, where
//! the site's month rows are complete (its `complete_from`) and retention
//! has not removed them (the aggregates' `purged_before`), the days around
//! them from the day tier. Sites with the same bound share their queries.

use std::collections::BTreeMap;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::vocabulary::{RetentionClass, Tier};
use crate::store::analytics::rollups as r;

/// A tier and the inclusive bucket range read from it.
pub type Part = (Tier, i64, i64);

/// The parts of `[from, to]` (whole UTC days) with month rows usable from `usable`.
pub fn day_parts(from: i64, to: i64, usable: i64) -> Vec<Part> {
    let whole = |t: i64| if r::month_start(t) == t { t } else { r::next_month(t) };
    let first = whole(from).max(whole(usable));
    let mut end = first;
    while r::next_month(end) - 1 <= to {
        end = r::next_month(end);
    }
    if end == first {
        return vec![(Tier::Day, from, to)];
    }
    let mut parts = Vec::with_capacity(3);
    if from < first {
        parts.push((Tier::Day, from, first - 1));
    }
    parts.push((Tier::Month, first, end - 1));
    if end <= to {
        parts.push((Tier::Day, end, to));
    }
    parts
}

/// Sites grouped by the parts they read a range with.
pub fn groups(
    conn: &mut AnyConnection,
    site_ids: &[String],
    tier: Tier,
    from: i64,
    to: i64,
) -> Result<Vec<(Vec<String>, Vec<Part>)>> {
    if tier == Tier::Hour {
        return Ok(vec![(site_ids.to_vec(), vec![(Tier::Hour, from, to)])]);
    }
    let complete = r::month_tiers(conn, site_ids, false)?;
    let purged = r::purged_before(conn, RetentionClass::Aggregates.as_str(), site_ids)?;
    let mut by_bound: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for id in site_ids {
        let bound = complete.get(id).copied().unwrap_or(0).max(purged.get(id).copied().unwrap_or(0));
        by_bound.entry(bound).or_default().push(id.clone());
    }
    Ok(by_bound.into_iter().map(|(bound, ids)| (ids, day_parts(from, to, bound))).collect())
}

/// The number of values of a set in roaring's portable format, read from
/// its header alone (each container's cardinality is there); None when the
/// bytes are not that format.
pub fn cardinality(bytes: &[u8]) -> Option<u64> {
    let u32_at = |i: usize| bytes.get(i..i + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let u16_at = |i: usize| bytes.get(i..i + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
    let cookie = u32_at(0)?;
    let (containers, header) = if cookie == 12_346 {
        (u32_at(4)? as usize, 8)
    } else if cookie & 0xFFFF == 12_347 {
        let n = (cookie >> 16) as usize + 1;
        (n, 4 + n.div_ceil(8))
    } else {
        return None;
    };
    let mut total = 0u64;
    for i in 0..containers {
        total += u64::from(u16_at(header + 4 * i + 2)?) + 1;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use roaring::RoaringBitmap;

    use crate::clock::DAY_MS;
    // 2026-01-01, 2026-02-01, 2026-03-01, 2026-04-01 UTC.
    const JAN: i64 = 1_767_225_600_000;
    const FEB: i64 = 1_769_904_000_000;
    const MAR: i64 = 1_772_323_200_000;
    const APR: i64 = 1_775_001_600_000;

    #[test]
    fn months_are_calendar_months() {
        assert_eq!(r::month_start(FEB + 5 * DAY_MS + 123), FEB);
        assert_eq!(r::next_month(JAN), FEB);
        assert_eq!(r::next_month(FEB + 27 * DAY_MS), MAR);
        assert_eq!(r::next_month(MAR - 1), MAR);
    }

    #[test]
    fn whole_months_inside_come_from_the_month_tier() {
        // 2025-12-20 .. 2026-03-10: days, January and February, days.
        let (from, to) = (JAN - 12 * DAY_MS, MAR + 10 * DAY_MS - 1);
        assert_eq!(
            day_parts(from, to, 0),
            vec![(Tier::Day, from, JAN - 1), (Tier::Month, JAN, MAR - 1), (Tier::Day, MAR, to)]
        );
        // Exactly January to March.
        assert_eq!(day_parts(JAN, APR - 1, 0), vec![(Tier::Month, JAN, APR - 1)]);
        // No whole month inside: days only.
        assert_eq!(
            day_parts(JAN + DAY_MS, FEB + 3 * DAY_MS - 1, 0),
            vec![(Tier::Day, JAN + DAY_MS, FEB + 3 * DAY_MS - 1)]
        );
        // Month rows usable from February (a site built so far, or purged before a day of January).
        assert_eq!(day_parts(JAN, APR - 1, FEB), vec![(Tier::Day, JAN, FEB - 1), (Tier::Month, FEB, APR - 1)]);
        assert_eq!(day_parts(JAN, APR - 1, JAN + DAY_MS), vec![(Tier::Day, JAN, FEB - 1), (Tier::Month, FEB, APR - 1)]);
        // Usable only after the range: days only.
        assert_eq!(day_parts(JAN, APR - 1, APR), vec![(Tier::Day, JAN, APR - 1)]);
    }

    #[test]
    fn the_header_gives_the_cardinality() {
        let mut sets = vec![RoaringBitmap::new(), (0..1).collect(), (0..5000).step_by(3).collect()];
        let mut dense: RoaringBitmap = (0..70_000).collect();
        dense.insert(1 << 20);
        sets.push(dense);
        let mut runs: RoaringBitmap = (10..200_000).collect();
        runs.optimize();
        sets.push(runs);
        for set in sets {
            let mut bytes = Vec::new();
            set.serialize_into(&mut bytes).unwrap();
            assert_eq!(cardinality(&bytes), Some(set.len()));
        }
        assert_eq!(cardinality(b"nope"), None);
        assert_eq!(cardinality(&[]), None);
    }
}
