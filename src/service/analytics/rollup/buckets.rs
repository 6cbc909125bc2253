//! Where an instant falls in each tier of the rollups (hour, UTC day, UTC
//! month), and the names of the overview's breakdown dimensions.

use crate::store::analytics::rollups::{self as r, HOUR, MONTH};

pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 86_400_000;

/// Breakdown dimensions (the overview's panels); a `null` key is stored as ''.
pub mod dim {
    pub const PAGE: &str = "page";
    pub const ENTRY: &str = "entry";
    pub const SOURCE: &str = "source";
    pub const REFERRER: &str = "referrer";
    pub const MEDIUM: &str = "medium";
    pub const CAMPAIGN: &str = "campaign";
    pub const COUNTRY: &str = "country";
    pub const DEVICE: &str = "device";
    pub const BROWSER: &str = "browser";
    pub const EVENT: &str = "event";
    /// The visitor sets of a whole bucket.
    pub const ALL: &str = "";
}

pub fn bucket(tier: &str, t: i64) -> i64 {
    match tier {
        HOUR => t - t.rem_euclid(HOUR_MS),
        MONTH => r::month_start(t),
        _ => t - t.rem_euclid(DAY_MS),
    }
}
