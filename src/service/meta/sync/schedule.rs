//! The account sync's schedule (SYNC-02 to SYNC-04, SYNC-14), as pure functions of the
//! persisted state, the time and the account's own timezone:
//!
//! | When | Spend read | Catalog |
//! | --- | --- | --- |
//! | Right after linking | 90 days, one 30-day block a run | every ad, with the last block |
//! | Every 45 minutes | today and yesterday | ads with leads still unnamed |
//! | Once a day, from 04:00 | the last 7 days | every ad |
//! | Once a week, at the daily run | the last 28 days | every ad |
//!
//! Days are account-local dates counted as days since 1970-01-01.

use chrono::{NaiveDate, TimeZone};
use chrono_tz::Tz;

use crate::clock::{DAY_MS, MINUTE_MS};

/// The settings the schedule reads (from `Config`).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub live_interval_ms: i64,
    pub daily_hour: u32,
    pub backfill_days: i64,
    pub block_days: i64,
    pub gap_days: i64,
}

impl Settings {
    pub fn from_config(c: &crate::config::Config) -> Settings {
        Settings {
            live_interval_ms: c.sync_live_interval.as_millis() as i64,
            daily_hour: c.sync_daily_hour,
            backfill_days: i64::from(c.sync_backfill_days),
            block_days: i64::from(c.sync_backfill_block_days),
            gap_days: (c.sync_gap_backfill_after.as_millis() as i64 / DAY_MS).max(1),
        }
    }
}

/// The schedule-relevant part of an account's persisted state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub backfill_from: Option<i64>,
    pub backfill_until: Option<i64>,
    pub backfill_done: i32,
    pub backfill_total: i32,
    pub first_synced_at: Option<i64>,
    pub synced_through: Option<i64>,
    pub last_live_at: Option<i64>,
    pub last_daily_day: Option<i64>,
    pub last_weekly_day: Option<i64>,
    pub sync_requested: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catalog {
    None,
    /// Only ads with leads whose names the catalog does not know yet.
    Unnamed,
    Every,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Backfill,
    Live,
    Daily,
    Weekly,
}

/// One run: a range of local days to read, and which catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub kind: Kind,
    pub from_day: i64,
    pub until_day: i64,
    pub catalog: Catalog,
}

/// The account-local day number and hour of `now`.
pub fn local_day(now_ms: i64, tz: Tz) -> (i64, u32) {
    let utc = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default();
    let local = utc.with_timezone(&tz);
    let date = local.date_naive();
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch");
    (date.signed_duration_since(epoch).num_days(), chrono::Timelike::hour(&local))
}

pub fn day_to_date(day: i64) -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch") + chrono::Duration::days(day)
}

pub fn date_to_day(date: NaiveDate) -> i64 {
    date.signed_duration_since(NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")).num_days()
}

/// Starts a backfill when the account never synced, or comes back from a pause
/// longer than the gap setting (the gap is read first).
pub fn start_backfill_if_needed(s: &mut State, today: i64, cfg: &Settings) {
    if s.backfill_done < s.backfill_total {
        return;
    }
    let (from, until) = match (s.first_synced_at, s.synced_through) {
        (None, _) => (today - cfg.backfill_days + 1, today),
        (Some(_), Some(through)) if today - through > cfg.gap_days => (through + 1, today),
        _ => return,
    };
    s.backfill_from = Some(from);
    s.backfill_until = Some(until);
    s.backfill_done = 0;
    s.backfill_total = ((until - from + 1 + cfg.block_days - 1) / cfg.block_days) as i32;
}

/// What to run now, if anything is due.
pub fn due_run(s: &State, now_ms: i64, tz: Tz, cfg: &Settings) -> Option<Run> {
    let (today, hour) = local_day(now_ms, tz);
    if s.backfill_done < s.backfill_total
        && let (Some(from), Some(until)) = (s.backfill_from, s.backfill_until)
    {
        // Newest block first; the last block also reads every ad's catalog.
        let block_until = until - i64::from(s.backfill_done) * cfg.block_days;
        let block_from = (block_until - cfg.block_days + 1).max(from);
        let last = s.backfill_done + 1 == s.backfill_total;
        return Some(Run {
            kind: Kind::Backfill,
            from_day: block_from,
            until_day: block_until,
            catalog: if last { Catalog::Every } else { Catalog::None },
        });
    }
    if hour >= cfg.daily_hour && s.last_daily_day != Some(today) {
        let weekly = s.last_weekly_day.is_none_or(|w| today - w >= 7);
        let days = if weekly { 28 } else { 7 };
        return Some(Run {
            kind: if weekly { Kind::Weekly } else { Kind::Daily },
            from_day: today - days + 1,
            until_day: today,
            catalog: Catalog::Every,
        });
    }
    if s.sync_requested || s.last_live_at.is_none_or(|t| now_ms - t >= cfg.live_interval_ms) {
        return Some(Run { kind: Kind::Live, from_day: today - 1, until_day: today, catalog: Catalog::Unnamed });
    }
    None
}

/// When the account is next due, after a successful run at `now_ms`.
pub fn next_due(s: &State, now_ms: i64, tz: Tz, cfg: &Settings) -> i64 {
    if s.backfill_done < s.backfill_total || s.sync_requested {
        return now_ms;
    }
    let live = s.last_live_at.map_or(now_ms, |t| t + cfg.live_interval_ms);
    let (today, hour) = local_day(now_ms, tz);
    let daily_day = if hour >= cfg.daily_hour && s.last_daily_day == Some(today) { today + 1 } else { today };
    let date = day_to_date(daily_day);
    let daily = tz
        .from_local_datetime(&date.and_hms_opt(cfg.daily_hour, 0, 0).expect("a valid hour"))
        .earliest()
        .map_or(now_ms + 60 * MINUTE_MS, |t| t.timestamp_millis());
    live.min(daily.max(now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::HOUR_MS;

    fn cfg() -> Settings {
        Settings { live_interval_ms: 45 * MINUTE_MS, daily_hour: 4, backfill_days: 90, block_days: 30, gap_days: 27 }
    }

    const SP: Tz = chrono_tz::America::Sao_Paulo;

    /// 2026-11-30 12:00 in São Paulo (UTC-3).
    fn noon() -> i64 {
        SP.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap().timestamp_millis()
    }

    // rule: SYNC-02, SYNC-14
    #[test]
    fn a_new_link_backfills_90_days_in_three_blocks_newest_first_catalog_last() {
        let (today, _) = local_day(noon(), SP);
        let mut s = State::default();
        start_backfill_if_needed(&mut s, today, &cfg());
        assert_eq!((s.backfill_total, s.backfill_from, s.backfill_until), (3, Some(today - 89), Some(today)));
        let mut runs = Vec::new();
        while let Some(run) = due_run(&s, noon(), SP, &cfg()).filter(|r| r.kind == Kind::Backfill) {
            runs.push(run);
            s.backfill_done += 1;
        }
        assert_eq!(runs.len(), 3);
        assert_eq!((runs[0].from_day, runs[0].until_day), (today - 29, today));
        assert_eq!((runs[2].from_day, runs[2].until_day), (today - 89, today - 60));
        assert_eq!(runs.iter().map(|r| r.catalog).collect::<Vec<_>>(), [Catalog::None, Catalog::None, Catalog::Every]);
    }

    // rule: SYNC-03, SYNC-04, SYNC-14
    #[test]
    fn live_every_45_minutes_daily_from_4am_local_weekly_at_the_daily_run() {
        let (today, _) = local_day(noon(), SP);
        let mut s = State { first_synced_at: Some(1), synced_through: Some(today), ..State::default() };
        // Past 04:00 and no daily yet today: the daily run, weekly since none ran.
        let run = due_run(&s, noon(), SP, &cfg()).unwrap();
        assert_eq!((run.kind, run.from_day, run.catalog), (Kind::Weekly, today - 27, Catalog::Every));
        s.last_daily_day = Some(today);
        s.last_weekly_day = Some(today);
        s.last_live_at = Some(noon());
        assert_eq!(due_run(&s, noon() + 44 * MINUTE_MS, SP, &cfg()), None);
        let live = due_run(&s, noon() + 45 * MINUTE_MS, SP, &cfg()).unwrap();
        assert_eq!(
            (live.kind, live.from_day, live.until_day, live.catalog),
            (Kind::Live, today - 1, today, Catalog::Unnamed)
        );
        // The next morning at 03:59 local only the live run; at 04:00 the daily (7 days), weekly only after 7 days.
        let next_day_4am = SP.with_ymd_and_hms(2026, 12, 1, 4, 0, 0).unwrap().timestamp_millis();
        s.last_live_at = Some(next_day_4am - MINUTE_MS);
        assert_eq!(due_run(&s, next_day_4am - MINUTE_MS, SP, &cfg()), None);
        let daily = due_run(&s, next_day_4am, SP, &cfg()).unwrap();
        assert_eq!((daily.kind, daily.from_day, daily.until_day), (Kind::Daily, today + 1 - 6, today + 1));
        assert_eq!(next_due(&s, next_day_4am - MINUTE_MS, SP, &cfg()), next_day_4am);
    }

    #[test]
    fn the_daily_hour_is_the_accounts_own() {
        // 04:30 UTC is 01:30 in São Paulo: no daily run there yet, but one in Lisbon.
        let at = chrono::Utc.with_ymd_and_hms(2026, 11, 30, 4, 30, 0).unwrap().timestamp_millis();
        let (lisbon_today, _) = local_day(at, chrono_tz::Europe::Lisbon);
        let s = State {
            first_synced_at: Some(1),
            last_live_at: Some(at),
            last_weekly_day: Some(lisbon_today),
            ..State::default()
        };
        assert_eq!(due_run(&s, at, SP, &cfg()), None);
        assert_eq!(due_run(&s, at, chrono_tz::Europe::Lisbon, &cfg()).unwrap().kind, Kind::Daily);
        assert_eq!(next_due(&s, at, SP, &cfg()), at + 45 * MINUTE_MS);
        let sp_4am = SP.with_ymd_and_hms(2026, 11, 30, 4, 0, 0).unwrap().timestamp_millis();
        let idle = State { last_live_at: Some(sp_4am - HOUR_MS / 2), ..s.clone() };
        // Live would be due at 04:15; the daily run at 04:00 local comes first.
        assert_eq!(next_due(&idle, sp_4am - HOUR_MS, SP, &cfg()), sp_4am);
    }

    // rule: SYNC-07
    #[test]
    fn a_pause_over_27_days_backfills_the_gap_first() {
        let (today, _) = local_day(noon(), SP);
        let mut s = State { first_synced_at: Some(1), synced_through: Some(today - 40), ..State::default() };
        start_backfill_if_needed(&mut s, today, &cfg());
        assert_eq!((s.backfill_from, s.backfill_until, s.backfill_total), (Some(today - 39), Some(today), 2));
        assert_eq!(due_run(&s, noon(), SP, &cfg()).unwrap().kind, Kind::Backfill);
        let mut short = State { first_synced_at: Some(1), synced_through: Some(today - 27), ..State::default() };
        start_backfill_if_needed(&mut short, today, &cfg());
        assert_eq!(short.backfill_total, 0);
        // A backfill that failed midway resumes from its last finished block.
        let mut resumed = s.clone();
        resumed.backfill_done = 1;
        let run = due_run(&resumed, noon(), SP, &cfg()).unwrap();
        assert_eq!((run.from_day, run.until_day), (today - 39, today - 30));
    }

    // rule: LINK-05
    #[test]
    fn a_requested_sync_runs_at_once() {
        let (today, _) = local_day(noon(), SP);
        let s = State {
            first_synced_at: Some(1),
            last_live_at: Some(noon()),
            last_daily_day: Some(today),
            last_weekly_day: Some(today),
            sync_requested: true,
            ..State::default()
        };
        assert_eq!(due_run(&s, noon(), SP, &cfg()).unwrap().kind, Kind::Live);
        assert_eq!(next_due(&s, noon(), SP, &cfg()), noon());
    }
}
