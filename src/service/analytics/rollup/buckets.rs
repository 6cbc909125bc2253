//! Where an instant falls in each tier of the rollups (hour, UTC day, UTC
//! month).

use crate::service::analytics::vocabulary::Tier;
use crate::store::analytics::rollups as r;

use crate::clock::{DAY_MS, HOUR_MS};

/// The start of the bucket of `tier` that holds `t`.
pub fn bucket(tier: Tier, t: i64) -> i64 {
    match tier {
        Tier::Hour => t - t.rem_euclid(HOUR_MS),
        Tier::Day => t - t.rem_euclid(DAY_MS),
        Tier::Month => r::month_start(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_start_at_their_tier() {
        let t = 1_764_590_400_000 + 5 * HOUR_MS + 123; // 2025-12-01T17:00:00.123Z
        assert_eq!(bucket(Tier::Hour, t), t - 123);
        assert_eq!(bucket(Tier::Day, t), 1_764_547_200_000);
        assert_eq!(bucket(Tier::Month, t), 1_764_547_200_000);
    }
}
