//! An exact millisecond range as the rollups can answer it (rule ARPT-14):
//! whole UTC days from the day tier, whole UTC hours from the hour tier, and
//! the partial hours at either end from the rows themselves.

use crate::clock::{DAY_MS, HOUR_MS};
use crate::service::analytics::vocabulary::Tier;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Rows with a time in `[from, to)`.
    Rows(i64, i64),
    /// Buckets of a tier starting in `[from, to)`.
    Tier(Tier, i64, i64),
}

fn floor(t: i64, size: i64) -> i64 {
    t - t.rem_euclid(size)
}

fn ceil(t: i64, size: i64) -> i64 {
    let f = floor(t, size);
    if f == t { t } else { f + size }
}

/// The inclusive ranges of `[from, to]` read from the rows (its partial hours).
pub fn rows_read(from: i64, to: i64) -> Vec<(i64, i64)> {
    pieces(from, to)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Rows(a, b) => Some((a, b - 1)),
            Piece::Tier(..) => None,
        })
        .collect()
}

/// The pieces of the inclusive range `[from, to]`.
pub fn pieces(from: i64, to: i64) -> Vec<Piece> {
    let end = to + 1;
    let (h1, h2) = (ceil(from, HOUR_MS), floor(end, HOUR_MS));
    if h1 >= h2 {
        return vec![Piece::Rows(from, end)];
    }
    let mut out = Vec::new();
    if from < h1 {
        out.push(Piece::Rows(from, h1));
    }
    let (d1, d2) = (ceil(h1, DAY_MS), floor(h2, DAY_MS));
    if d1 < d2 {
        if h1 < d1 {
            out.push(Piece::Tier(Tier::Hour, h1, d1));
        }
        out.push(Piece::Tier(Tier::Day, d1, d2));
        if d2 < h2 {
            out.push(Piece::Tier(Tier::Hour, d2, h2));
        }
    } else {
        out.push(Piece::Tier(Tier::Hour, h1, h2));
    }
    if h2 < end {
        out.push(Piece::Rows(h2, end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: i64 = 1_796_083_200_000; // a UTC midnight

    #[test]
    fn whole_days_hours_and_partial_ends_cover_the_range_once() {
        assert_eq!(pieces(D, D + DAY_MS - 1), vec![Piece::Tier(Tier::Day, D, D + DAY_MS)]);
        assert_eq!(pieces(D + 5, D + 10), vec![Piece::Rows(D + 5, D + 11)]);
        assert_eq!(
            pieces(D - 30 * 60_000, D + DAY_MS + HOUR_MS + 7),
            vec![
                Piece::Rows(D - 30 * 60_000, D),
                Piece::Tier(Tier::Day, D, D + DAY_MS),
                Piece::Tier(Tier::Hour, D + DAY_MS, D + DAY_MS + HOUR_MS),
                Piece::Rows(D + DAY_MS + HOUR_MS, D + DAY_MS + HOUR_MS + 8),
            ]
        );
        assert_eq!(
            pieces(D + HOUR_MS, D + 3 * HOUR_MS - 1),
            vec![Piece::Tier(Tier::Hour, D + HOUR_MS, D + 3 * HOUR_MS)]
        );
    }
}
