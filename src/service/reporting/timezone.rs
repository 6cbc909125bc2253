//! `timezone` (REPORTING §1, rules REP-02, REP-03): a report's days and hours
//! in an IANA zone instead of UTC. A local day is every instant whose date in
//! the zone is that date, so a day with a DST change is one day of 23 or 25
//! hours, and a day whose midnight the zone skips starts at its first instant.
//! `"site"` means the zone of the sites asked about, refused when they differ.

use chrono::{NaiveDate, Offset, TimeZone};
use chrono_tz::Tz;

pub use crate::clock::utc_days_inside;
use crate::clock::{DAY_MS, HOUR_MS};
use crate::error::{Error, Result};
use crate::service::validate;

/// The argument that asks for each site's own zone.
pub const SITE: &str = "site";

/// A report's zone, once the argument is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(pub Tz);

impl Zone {
    /// The zone an argument names; `site_zones` are the zones of the call's
    /// sites, for `"site"`. None without the argument (the seed's UTC days).
    pub fn of(arg: Option<&str>, site_zones: &[&str]) -> Result<Option<Zone>> {
        let Some(name) = arg else { return Ok(None) };
        let name = if name == SITE {
            let mut zones = site_zones.to_vec();
            zones.sort_unstable();
            zones.dedup();
            match zones.as_slice() {
                [one] => *one,
                [] => return Err(Error::invalid("timezone \"site\" needs at least one site")),
                _ => {
                    return Err(Error::invalid(
                        "timezone \"site\" needs sites of one timezone; these differ, name one instead",
                    ));
                }
            }
        } else {
            name
        };
        name.parse::<Tz>()
            .map(|tz| Some(Zone(tz)))
            .map_err(|_| Error::invalid("timezone must be an IANA zone such as America/Sao_Paulo, or \"site\""))
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The local date of the instant `t`.
    pub fn date(self, t: i64) -> NaiveDate {
        chrono::DateTime::from_timestamp_millis(t)
            .map(|d| d.with_timezone(&self.0).date_naive())
            .unwrap_or(NaiveDate::MIN)
    }

    /// The first instant of the local date `d` (its midnight, or the first
    /// instant after a skipped one; the earlier of a repeated one).
    pub fn start_of(self, d: NaiveDate) -> i64 {
        let midnight = d.and_hms_opt(0, 0, 0).unwrap_or_default();
        if let Some(t) = self.0.from_local_datetime(&midnight).earliest() {
            return t.timestamp_millis();
        }
        // Skipped: the gap ends where the offset after it says midnight was.
        let guess = midnight.and_utc().timestamp_millis();
        // The first instant whose local date is `d`: a binary search (steps
        // of powers of two, so it ends on the exact millisecond) over a
        // window of ±3 days, which the widest offset (±26 h) cannot leave.
        let mut t = guess - 3 * DAY_MS;
        let mut step: i64 = 1 << 39;
        while step > 1 {
            step /= 2;
            if self.date(t + step) < d {
                t += step;
            }
        }
        t + 1
    }

    /// The first instant of the local day holding `t`.
    pub fn day_start(self, t: i64) -> i64 {
        self.start_of(self.date(t))
    }

    /// The first instant of the local day after the one holding `t`.
    pub fn next_day(self, t: i64) -> i64 {
        self.start_of(self.date(t).succ_opt().unwrap_or(NaiveDate::MAX))
    }

    /// The zone's offset from UTC at `t`, in milliseconds.
    pub fn offset_ms(self, t: i64) -> i64 {
        chrono::DateTime::from_timestamp_millis(t)
            .map(|d| i64::from(self.0.offset_from_utc_datetime(&d.naive_utc()).fix().local_minus_utc()) * 1000)
            .unwrap_or(0)
    }

    /// The local days of `[from, to]` as their starts and the end, checked
    /// (REP-03): `from` a local day's first instant, `to` the last
    /// millisecond of a local day, at most `max_days` local days.
    pub fn days(self, from: i64, to: i64, max_days: i64) -> Result<LocalDays> {
        if from > to {
            return Err(Error::invalid("from must not be after to"));
        }
        if self.day_start(from) != from {
            return Err(Error::invalid(format!("from must be a local midnight in {}", self.name())));
        }
        if self.day_start(to + 1) != to + 1 {
            return Err(Error::invalid(format!("to must be the last millisecond of a local day in {}", self.name())));
        }
        let days = (self.date(to) - self.date(from)).num_days() + 1;
        if days > max_days {
            return Err(Error::invalid(format!("the range may cover at most {max_days} local days")));
        }
        let mut bounds = Vec::with_capacity(days as usize + 1);
        let mut t = from;
        while t <= to {
            bounds.push(t);
            t = self.next_day(t);
        }
        bounds.push(to + 1);
        Ok(LocalDays { zone: self, bounds })
    }

    /// The local days `[from, to]` touches, at most `max_days`, without
    /// asking for whole days (the leads' ranges take any instant).
    pub fn touched_days(self, from: i64, to: i64, max_days: i64) -> Result<()> {
        if from > to {
            return Err(Error::invalid("from must not be after to"));
        }
        let days = (self.date(to) - self.date(from)).num_days() + 1;
        if days > max_days {
            return Err(Error::invalid(format!("the range may cover at most {max_days} local days")));
        }
        Ok(())
    }
}

/// A report's range checked in its zone (REP-03): without one, the UTC days
/// it touches (as before); with one, whole local days, at most `max_days`.
/// `site_zones` are the call's sites' zones, for `"site"`.
pub fn checked_range(
    arg: Option<&str>,
    site_zones: &[&str],
    (from, to): (i64, i64),
    max_days: i64,
) -> Result<Option<Zone>> {
    let Some(zone) = Zone::of(arg, site_zones)? else {
        validate::range(from, to, max_days)?;
        return Ok(None);
    };
    validate::time("from", from)?;
    validate::time("to", to)?;
    zone.days(from, to, max_days)?;
    Ok(Some(zone))
}

/// `checked_range` for reports whose range may start and end at any
/// instant (the leads'): with a zone, at most `max_days` local days touched.
pub fn checked_span(
    arg: Option<&str>,
    site_zones: &[&str],
    (from, to): (i64, i64),
    max_days: i64,
) -> Result<Option<Zone>> {
    let zone = Zone::of(arg, site_zones)?;
    // A local day may touch one UTC day more than it has.
    validate::range(from, to, max_days + i64::from(zone.is_some()))?;
    if let Some(z) = zone {
        z.touched_days(from, to, max_days)?;
    }
    Ok(zone)
}

/// Whole local days: `bounds[i]` is day i's first instant, the last bound
/// the instant after the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDays {
    pub zone: Zone,
    pub bounds: Vec<i64>,
}

impl LocalDays {
    /// The first instants of the days.
    pub fn starts(&self) -> &[i64] {
        &self.bounds[..self.bounds.len() - 1]
    }

    /// The start of the local day holding `t`, when `t` is inside the range.
    pub fn day_of(&self, t: i64) -> Option<i64> {
        let i = self.bounds.partition_point(|b| *b <= t);
        (i > 0 && i < self.bounds.len()).then(|| self.bounds[i - 1])
    }

    /// Whether every day starts on a UTC hour, so the hour tier holds each
    /// day whole (every zone but those with 30- and 45-minute offsets).
    pub fn on_whole_hours(&self) -> bool {
        self.bounds.iter().all(|b| b.rem_euclid(HOUR_MS) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> Zone {
        Zone::of(Some(name), &[]).unwrap().unwrap()
    }

    fn utc(y: i32, m: u32, d: u32, h: u32, min: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d).unwrap().and_hms_opt(h, min, 0).unwrap().and_utc().timestamp_millis()
    }

    // rule: REP-02
    #[test]
    fn local_days_start_at_the_zones_midnight_and_dst_days_are_23_or_25_hours() {
        let sp = zone("America/Sao_Paulo");
        let d = NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
        assert_eq!(sp.start_of(d), utc(2026, 12, 1, 3, 0));
        assert_eq!(sp.day_start(utc(2026, 12, 2, 2, 59)), utc(2026, 12, 1, 3, 0));
        let kolkata = zone("Asia/Kolkata");
        assert_eq!(kolkata.start_of(d), utc(2026, 11, 30, 18, 30));
        let kathmandu = zone("Asia/Kathmandu");
        assert_eq!(kathmandu.start_of(d), utc(2026, 11, 30, 18, 15));
        // New York: 8 March 2026 has 23 hours, 1 November 2026 has 25.
        let ny = zone("America/New_York");
        let spring = ny.days(ny.start_of(NaiveDate::from_ymd_opt(2026, 3, 8).unwrap()), utc(2026, 3, 9, 4, 0) - 1, 1);
        assert_eq!(spring.unwrap().bounds, vec![utc(2026, 3, 8, 5, 0), utc(2026, 3, 9, 4, 0)]);
        let fall = ny.days(utc(2026, 11, 1, 4, 0), utc(2026, 11, 2, 5, 0) - 1, 1).unwrap();
        assert_eq!(fall.bounds[1] - fall.bounds[0], 25 * HOUR_MS);
        assert!(fall.on_whole_hours());
        assert!(
            !kolkata
                .days(kolkata.start_of(d), kolkata.start_of(d.succ_opt().unwrap()) - 1, 1)
                .unwrap()
                .on_whole_hours()
        );
        // A zone that skipped midnight (Sao Paulo's DST start, 4 November 2018): the day starts at 01:00.
        let skipped = NaiveDate::from_ymd_opt(2018, 11, 4).unwrap();
        assert_eq!(sp.start_of(skipped), utc(2018, 11, 4, 3, 0));
        assert_eq!(sp.date(sp.start_of(skipped) - 1), NaiveDate::from_ymd_opt(2018, 11, 3).unwrap());
    }

    #[test]
    fn whole_utc_days_inside_and_the_edges_around_them() {
        let d = utc(2026, 12, 1, 0, 0);
        assert_eq!(utc_days_inside(d, d + DAY_MS - 1), (Some((d, d + DAY_MS)), vec![]));
        assert_eq!(
            utc_days_inside(d - 3 * HOUR_MS, d + 2 * DAY_MS - 3 * HOUR_MS - 1),
            (Some((d, d + DAY_MS)), vec![(d - 3 * HOUR_MS, d - 1), (d + DAY_MS, d + 2 * DAY_MS - 3 * HOUR_MS - 1)])
        );
        assert_eq!(utc_days_inside(d + HOUR_MS, d + 2 * HOUR_MS), (None, vec![(d + HOUR_MS, d + 2 * HOUR_MS)]));
    }

    // rule: REP-03
    #[test]
    fn ranges_must_be_whole_local_days_within_the_limit_and_site_needs_one_zone() {
        let sp = zone("America/Sao_Paulo");
        let (from, to) = (utc(2026, 12, 1, 3, 0), utc(2026, 12, 3, 3, 0) - 1);
        let days = sp.days(from, to, 2).unwrap();
        assert_eq!(days.starts(), &[from, utc(2026, 12, 2, 3, 0)]);
        assert_eq!(days.day_of(utc(2026, 12, 2, 2, 0)), Some(from));
        assert_eq!(days.day_of(to + 1), None);
        assert!(sp.days(from, to, 1).is_err(), "limits count local days");
        assert!(sp.days(utc(2026, 12, 1, 0, 0), to, 5).is_err(), "a UTC midnight is not a local one");
        assert!(sp.days(from, to - 1, 5).is_err());
        assert_eq!(Zone::of(Some("site"), &["Europe/Lisbon", "Europe/Lisbon"]).unwrap(), Some(zone("Europe/Lisbon")));
        assert!(Zone::of(Some("site"), &["Europe/Lisbon", "America/Sao_Paulo"]).is_err());
        assert!(Zone::of(Some("Mars/Olympus"), &[]).is_err());
        assert_eq!(Zone::of(None, &["Europe/Lisbon"]).unwrap(), None);
    }
}
