//! `compare` (REPORTING §2, rule REP-05): a report beside the same report over
//! the range just before (`previousPeriod`, the same length) or the same dates
//! a year earlier (`previousYear`, 29 February read as the 28th), with each
//! total's change as a fraction. A report computes both ranges with the same
//! arguments otherwise (filters, zone), so the two always mean the same thing.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::{DAY_MS, utc_day_start};
use crate::error::{Error, Result};
use crate::service::analytics::reports::numbers::Fixed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Compare {
    /// The same number of milliseconds just before `from`.
    PreviousPeriod,
    /// The same dates (and hours) one year earlier.
    PreviousYear,
}

/// The instant of the same date and time a year before `t` (UTC); 29 February → 28.
fn year_before(t: i64) -> i64 {
    let day = utc_day_start(t);
    let Some(date) = chrono::DateTime::from_timestamp_millis(day).map(|d| d.date_naive()) else { return t };
    let earlier = NaiveDate::from_ymd_opt(date.year() - 1, date.month(), date.day())
        .or_else(|| NaiveDate::from_ymd_opt(date.year() - 1, date.month(), date.day() - 1))
        .unwrap_or(date);
    let shift = (date - earlier).num_days() * DAY_MS;
    t - shift
}

impl Compare {
    /// The range compared with `[from, to]`, checked to lie after the epoch.
    pub fn range(self, from: i64, to: i64) -> Result<(i64, i64)> {
        let (f, t) = match self {
            Compare::PreviousPeriod => (from - (to - from + 1), from - 1),
            // The end of `to`'s day a year earlier, so a range of whole days stays whole.
            Compare::PreviousYear => (year_before(from), year_before(to + 1) - 1),
        };
        if f < 0 {
            return Err(Error::invalid("compare reaches before 1970"));
        }
        Ok((f, t))
    }

    /// The start of the comparison's bucket aligned with the bucket `b` of
    /// the main range `[from, to]`.
    pub fn align(self, from: i64, to: i64, b: i64) -> i64 {
        match self {
            Compare::PreviousPeriod => b - (to - from + 1),
            Compare::PreviousYear => year_before(b),
        }
    }
}

/// Each total's change, by the total's name.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(transparent)]
pub struct Changes(pub BTreeMap<String, Option<Fixed>>);

impl utoipa::PartialSchema for Changes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let fraction = ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::from_iter([Type::Number, Type::Null]))
            .description(Some("(now - before) / before to 4 decimals; null when before is 0 or unknown"));
        ObjectBuilder::new()
            .additional_properties(Some(fraction))
            .description(Some("Each total's change against the compared range, by the total's name"))
            .into()
    }
}

impl ToSchema for Changes {}

/// Each numeric field of `now`'s object against the same field of `before`:
/// `(now - before) / before` to 4 decimals, half up; null when the earlier
/// figure is 0 or unknown (null), or either is not a number.
pub fn changes(now: &Value, before: &Value) -> BTreeMap<String, Option<Fixed>> {
    let Some(now) = now.as_object() else { return BTreeMap::new() };
    now.iter()
        .filter(|(_, v)| v.is_number() || v.is_null())
        .map(|(k, v)| (k.clone(), change(v.as_f64(), before.get(k).and_then(Value::as_f64))))
        .collect()
}

/// One change as a fraction, 4 decimals, half up.
pub fn change(now: Option<f64>, before: Option<f64>) -> Option<Fixed> {
    match (now, before) {
        (Some(n), Some(b)) if b != 0.0 => Some(Fixed::of(((n - b) / b * 10_000.0).round() as i64, 10_000)),
        _ => None,
    }
}

/// `changes` of two serializable totals.
pub fn changes_of<T: Serialize>(now: &T, before: &T) -> Changes {
    match (serde_json::to_value(now), serde_json::to_value(before)) {
        (Ok(n), Ok(b)) => Changes(changes(&n, &b)),
        _ => Changes::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(y: i32, m: u32, d: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d).unwrap().and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis()
    }

    // rule: REP-05
    #[test]
    fn the_previous_period_is_as_long_and_the_previous_year_has_the_same_dates() {
        let (from, to) = (ms(2026, 11, 1), ms(2026, 12, 1) - 1);
        assert_eq!(Compare::PreviousPeriod.range(from, to).unwrap(), (ms(2026, 10, 2), ms(2026, 11, 1) - 1));
        assert_eq!(Compare::PreviousYear.range(from, to).unwrap(), (ms(2025, 11, 1), ms(2025, 12, 1) - 1));
        // 29 February is read as the 28th; the range stays whole days.
        let leap = (ms(2028, 2, 29), ms(2028, 3, 1) - 1);
        assert_eq!(Compare::PreviousYear.range(leap.0, leap.1).unwrap(), (ms(2027, 2, 28), ms(2027, 3, 1) - 1));
        assert_eq!(Compare::PreviousYear.align(from, to, ms(2026, 11, 5) + 3_600_000), ms(2025, 11, 5) + 3_600_000);
        assert_eq!(Compare::PreviousPeriod.align(from, to, ms(2026, 11, 5)), ms(2026, 10, 6));
        assert!(Compare::PreviousPeriod.range(0, DAY_MS - 1).is_err());
    }

    #[test]
    fn changes_are_fractions_and_null_on_a_zero_or_unknown_base() {
        let now = serde_json::json!({"visitors": 112, "sessions": 5, "revenueCents": null, "rate": 0.3, "name": "x"});
        let before = serde_json::json!({"visitors": 100, "sessions": 0, "revenueCents": 10, "rate": 0.4});
        let c = changes(&now, &before);
        assert_eq!(c["visitors"].map(Fixed::as_f64), Some(0.12));
        assert_eq!(c["sessions"], None);
        assert_eq!(c["revenueCents"], None);
        assert_eq!(c["rate"].map(Fixed::as_f64), Some(-0.25));
        assert!(!c.contains_key("name"));
    }
}
