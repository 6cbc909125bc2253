//! `approximateDays` (REPORTING §1): the days of an answer whose figures
//! read raw rows (events, sessions) that retention has already deleted, so
//! they may be low. An answer read only from rollups is exact and says
//! nothing; one that reads rows (filters, the edges of local days, hours
//! split by a 30- or 45-minute offset) names the days where those reads
//! meet the deleted past.

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::retention;
use crate::service::analytics::vocabulary::RetentionClass;
use crate::service::reporting::timezone::{Zone, utc_days_inside};

/// The instant before which the sites' events or sessions are deleted (the latest of them), if any.
pub fn cutoff(conn: &mut AnyConnection, site_ids: &[String]) -> Result<Option<i64>> {
    let mut cutoff: Option<i64> = None;
    for id in site_ids {
        for (class, before) in retention::purged_before(conn, id)? {
            if matches!(class, RetentionClass::Events | RetentionClass::Sessions) {
                cutoff = cutoff.max(before);
            }
        }
    }
    Ok(cutoff)
}

/// The buckets (starting at `starts`, the last ending at `to`) where a range
/// of `read` meets the time before `cutoff`.
pub fn buckets(starts: &[i64], to: i64, read: &[(i64, i64)], cutoff: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for (i, b) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(to + 1);
        if read.iter().any(|(f, t)| (*b).max(*f) < end.min(t + 1).min(cutoff)) {
            out.push(*b);
        }
    }
    out
}

/// What a report over day rollups reads from the rows: all of `[from, to]`
/// with filters, the hours around the whole UTC days of a zone's days, or nothing.
pub fn rows_read(zone: Option<Zone>, filtered: bool, (from, to): (i64, i64)) -> Vec<(i64, i64)> {
    match zone {
        _ if filtered => vec![(from, to)],
        Some(_) => utc_days_inside(from, to).1,
        None => Vec::new(),
    }
}

/// The days of `[from, to]` (the zone's, or UTC's) that read rows of `read`
/// retention has deleted; `None` when there are none.
pub fn days(
    conn: &mut AnyConnection,
    site_ids: &[String],
    zone: Option<Zone>,
    (from, to): (i64, i64),
    read: &[(i64, i64)],
) -> Result<Option<Vec<i64>>> {
    if read.is_empty() {
        return Ok(None);
    }
    let Some(cutoff) = cutoff(conn, site_ids)?.filter(|c| *c > from) else { return Ok(None) };
    let mut starts = Vec::new();
    let mut day = match zone {
        Some(z) => z.day_start(from),
        None => from - from.rem_euclid(DAY_MS),
    };
    while day <= to {
        starts.push(day);
        day = match zone {
            Some(z) => z.next_day(day),
            None => day + DAY_MS,
        };
    }
    let days = buckets(&starts, to, read, cutoff);
    Ok((!days.is_empty()).then_some(days))
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: REP-02
    #[test]
    fn a_bucket_is_approximate_where_a_read_meets_the_deleted_past() {
        let starts = [0, 10, 20, 30];
        // Reads of the whole range, deleted before 25: the first three buckets.
        assert_eq!(buckets(&starts, 39, &[(0, 39)], 25), vec![0, 10, 20]);
        // Only the edges are read: the first, and the last only when it is deleted too.
        assert_eq!(buckets(&starts, 39, &[(0, 4), (35, 39)], 25), vec![0]);
        assert_eq!(buckets(&starts, 39, &[(0, 4), (35, 39)], 40), vec![0, 30]);
        assert!(buckets(&starts, 39, &[(0, 39)], 0).is_empty());
    }
}
