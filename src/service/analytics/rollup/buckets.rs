//! Where an instant falls in each tier of the rollups (hour, UTC day, UTC
//! month).

use crate::service::analytics::vocabulary::Tier;
use crate::store::analytics::rollups as r;

pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 86_400_000;

/// The start of the bucket of `tier` that holds `t`.
pub fn bucket(tier: Tier, t: i64) -> i64 {
    match tier {
        Tier::Hour => t - t.rem_euclid(HOUR_MS),
        Tier::Day => t - t.rem_euclid(DAY_MS),
        Tier::Month => r::month_start(t),
    }
}

/// The tiers as the stored text the report files still carry (they pass it
/// to the store as is); they take [`Tier`] once their typed answers land.
pub const HOUR: &str = Tier::Hour.as_str();
pub const DAY: &str = Tier::Day.as_str();
pub const MONTH: &str = Tier::Month.as_str();

/// [`bucket`] for a tier carried as its text (the report files, for now):
/// every text they hold is one of [`HOUR`], [`DAY`] and [`MONTH`]; any other
/// text is read as the day, as the text version always did.
pub fn bucket_of_text(tier: &str, t: i64) -> i64 {
    bucket(Tier::parse(tier).unwrap_or(Tier::Day), t)
}

/// The dimensions as stored text, for the report files that still pass text
/// to the store (see [`Dimension`]).
pub mod dim {
    use crate::service::analytics::vocabulary::Dimension;

    pub const PAGE: &str = Dimension::Page.as_str();
    pub const ENTRY: &str = Dimension::Entry.as_str();
    pub const SOURCE: &str = Dimension::Source.as_str();
    pub const REFERRER: &str = Dimension::Referrer.as_str();
    pub const MEDIUM: &str = Dimension::Medium.as_str();
    pub const CAMPAIGN: &str = Dimension::Campaign.as_str();
    pub const COUNTRY: &str = Dimension::Country.as_str();
    pub const DEVICE: &str = Dimension::Device.as_str();
    pub const BROWSER: &str = Dimension::Browser.as_str();
    pub const EVENT: &str = Dimension::Event.as_str();
    pub const ALL: &str = Dimension::All.as_str();
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
        assert_eq!(bucket_of_text(HOUR, t), bucket(Tier::Hour, t));
        assert_eq!(bucket_of_text(MONTH, t + 20 * DAY_MS), 1_764_547_200_000);
    }
}
