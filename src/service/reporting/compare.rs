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
use crate::service::reporting::timezone::Zone;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Compare {
    /// The same number of milliseconds just before `from`.
    PreviousPeriod,
    /// The same dates (and hours) one year earlier.
    PreviousYear,
}

/// The same date a year before; 29 February → 28.
fn date_a_year_before(date: NaiveDate) -> NaiveDate {
    NaiveDate::from_ymd_opt(date.year() - 1, date.month(), date.day())
        .or_else(|| NaiveDate::from_ymd_opt(date.year() - 1, date.month(), date.day() - 1))
        .unwrap_or(date)
}

/// The instant of the same date and time a year before `t` (UTC); 29 February → 28.
fn year_before(t: i64) -> i64 {
    let day = utc_day_start(t);
    let Some(date) = chrono::DateTime::from_timestamp_millis(day).map(|d| d.date_naive()) else { return t };
    let shift = (date - date_a_year_before(date)).num_days() * DAY_MS;
    t - shift
}

/// Whether `[from, to]` is whole local days of `zone`.
fn whole_days(zone: Zone, from: i64, to: i64) -> bool {
    zone.day_start(from) == from && zone.day_start(to + 1) == to + 1
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

    /// The local date that the comparison puts beside `date` of a main
    /// range `days` local days long.
    fn earlier_date(self, date: NaiveDate, days: i64) -> NaiveDate {
        match self {
            Compare::PreviousPeriod => date - chrono::Duration::days(days),
            Compare::PreviousYear => date_a_year_before(date),
        }
    }

    /// `range` in a report's zone: whole local days compare with whole local
    /// days (as many just before, or the same local dates a year earlier),
    /// however many hours DST gives each; other ranges as `range` does.
    pub fn range_in(self, zone: Option<Zone>, from: i64, to: i64) -> Result<(i64, i64)> {
        let Some(z) = zone.filter(|z| whole_days(*z, from, to)) else { return self.range(from, to) };
        let days = (z.date(to) - z.date(from)).num_days() + 1;
        let first = self.earlier_date(z.date(from), days);
        let last = self.earlier_date(z.date(to), days);
        let (f, t) = (z.start_of(first), z.start_of(last.succ_opt().unwrap_or(last)) - 1);
        if f < 0 {
            return Err(Error::invalid("compare reaches before 1970"));
        }
        Ok((f, t))
    }

    /// `align` in a report's zone: the same time of the aligned local date.
    pub fn align_in(self, zone: Option<Zone>, from: i64, to: i64, b: i64) -> i64 {
        let Some(z) = zone.filter(|z| whole_days(*z, from, to)) else { return self.align(from, to, b) };
        let days = (z.date(to) - z.date(from)).num_days() + 1;
        let date = z.date(b);
        z.start_of(self.earlier_date(date, days)) + (b - z.start_of(date))
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

    // rule: REP-05
    #[test]
    fn in_a_zone_whole_local_days_compare_with_whole_local_days() {
        let ny = Zone::of(Some("America/New_York"), &[]).unwrap();
        let h = crate::clock::HOUR_MS;
        // 8-9 March 2026 in New York (8 March has 23 hours): the two days before.
        let (from, to) = (ms(2026, 3, 8) + 5 * h, ms(2026, 3, 10) + 4 * h - 1);
        let before = Compare::PreviousPeriod.range_in(ny, from, to).unwrap();
        assert_eq!(before, (ms(2026, 3, 6) + 5 * h, ms(2026, 3, 8) + 5 * h - 1));
        assert_eq!(Compare::PreviousPeriod.align_in(ny, from, to, ms(2026, 3, 9) + 4 * h), ms(2026, 3, 7) + 5 * h);
        // A year earlier: 8-9 March 2025, before that year's change (9 March).
        let year = Compare::PreviousYear.range_in(ny, from, to).unwrap();
        assert_eq!(year, (ms(2025, 3, 8) + 5 * h, ms(2025, 3, 10) + 4 * h - 1));
        // Without a zone, or for a range of hours, the UTC rules.
        assert_eq!(
            Compare::PreviousPeriod.range_in(None, from, to).unwrap(),
            Compare::PreviousPeriod.range(from, to).unwrap()
        );
        assert_eq!(
            Compare::PreviousPeriod.range_in(ny, from + h, to).unwrap(),
            Compare::PreviousPeriod.range(from + h, to).unwrap()
        );
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
