//! The only reader of time. Services and actors take a `Clock`; tests drive a
//! `ManualClock` so no schedule is ever tested by sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub const MINUTE_MS: i64 = 60_000;
pub const HOUR_MS: i64 = 60 * MINUTE_MS;
pub const DAY_MS: i64 = 24 * HOUR_MS;

pub trait Clock: Send + Sync + 'static {
    /// Unix epoch milliseconds.
    fn now_ms(&self) -> i64;
}

pub type SharedClock = Arc<dyn Clock>;

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock(AtomicI64::new(start_ms)))
    }
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Start of the UTC day holding `ms`.
pub fn utc_day_start(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

/// An inclusive range of instants, or a `[start, end)` one where said.
pub type Span = (i64, i64);

/// The whole UTC days inside `[from, to]` (as `[start, end)`, if any) and the
/// inclusive ranges around them (the whole range when it holds none): what a
/// read takes from day rollups and what from the rows.
pub fn utc_days_inside(from: i64, to: i64) -> (Option<Span>, Vec<Span>) {
    let start = from + (DAY_MS - from.rem_euclid(DAY_MS)) % DAY_MS;
    let end = (to + 1) - (to + 1).rem_euclid(DAY_MS);
    if start < end {
        (Some((start, end)), [(from, start - 1), (end, to)].into_iter().filter(|(a, b)| a <= b).collect())
    } else {
        (None, vec![(from, to)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_days_inside_a_range() {
        let d = DAY_MS;
        assert_eq!(utc_days_inside(0, d - 1).0, Some((0, d)));
        assert_eq!(utc_days_inside(1, 2 * d - 1).0, Some((d, 2 * d)));
        assert_eq!(utc_days_inside(1, 2 * d - 2).0, None);
        assert_eq!(utc_days_inside(0, 3 * d).0, Some((0, 3 * d)));
    }

    #[test]
    fn day_start_floors_negative_times_too() {
        assert_eq!(utc_day_start(DAY_MS + 5), DAY_MS);
        assert_eq!(utc_day_start(-1), -DAY_MS);
        assert_eq!(utc_day_start(0), 0);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(500);
        assert_eq!(c.now_ms(), 1_500);
        c.set(7);
        assert_eq!(c.now_ms(), 7);
    }
}
