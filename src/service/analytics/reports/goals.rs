//! `goalsReport` and the overview's `topGoals` (rules ARPT-09, OVR-11):
//! completions decided at acceptance (rule ARPT-10), counted per hour and day
//! by the report actors; a millisecond range reads whole days and hours from
//! those counters and its partial hours from the completion rows (ARPT-14).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::definitions::Matcher;
use crate::service::analytics::reports::approximate;
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::numbers::{Fixed, rate};
use crate::service::analytics::reports::span::{self, Piece};
use crate::service::analytics::reports::zone;
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::reporting::filters::Filter;
use crate::service::reporting::timezone;
use crate::service::sites;
use crate::store::analytics::definitions as defs_store;
use crate::store::analytics::goals::{self as store, GoalCount};

const REPORT_MAX_DAYS: i64 = 366;

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// A goal's row in `goalsReport`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalRow {
    pub goal_id: String,
    pub key: String,
    pub name: String,
    pub matcher: Matcher,
    pub value_cents: Option<i64>,
    pub active: bool,
    pub completions: i64,
    pub sessions: i64,
    pub conversion_rate: Option<Fixed>,
    pub value_total_cents: Option<i64>,
    /// With `compare`: this goal's figures over the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<GoalFigures>,
    /// With `compare`: each figure's change against the earlier range, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

/// What a compared goal sets side by side.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalFigures {
    pub completions: i64,
    pub sessions: i64,
    pub conversion_rate: Option<Fixed>,
    pub value_total_cents: Option<i64>,
}

impl GoalRow {
    fn figures(&self) -> GoalFigures {
        GoalFigures {
            completions: self.completions,
            sessions: self.sessions,
            conversion_rate: self.conversion_rate,
            value_total_cents: self.value_total_cents,
        }
    }
}

/// The earlier range of a compared `goalsReport` (each goal's own figures are on its row).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalsComparison {
    pub from: i64,
    pub to: i64,
    pub total_sessions: i64,
}

/// The `goalsReport` answer (rule ARPT-09).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalsReport {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub total_sessions: i64,
    pub goals: Vec<GoalRow>,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// With `compare`: the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<GoalsComparison>,
    /// With `compare`: `totalSessions`' change against the earlier range, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
    /// The days (the zone's, or UTC's) whose figures read rows retention has deleted (REPORTING §1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_days: Option<Vec<i64>>,
}

/// A row of the overview's `topGoals` (rule OVR-11).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopGoal {
    pub goal_id: String,
    pub key: String,
    pub name: String,
    pub completions: i64,
    pub sessions: i64,
    /// The goal was removed since; its counts stay.
    pub removed: bool,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GoalsArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// The same report over an earlier range beside this one (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Only the sessions (and events) that pass these (REPORTING §3), as on `overview`.
    #[serde(default)]
    pub filters: Vec<Filter>,
}

fn add_counts(into: &mut HashMap<String, (i64, i64)>, rows: Vec<GoalCount>) {
    for r in rows {
        let e = into.entry(r.goal_id).or_default();
        e.0 += r.completions;
        e.1 += r.sessions;
    }
}

/// (completions, sessions) per goal over an exact range.
fn counts_between(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> Result<HashMap<String, (i64, i64)>> {
    let mut out = HashMap::new();
    for piece in span::pieces(from, to) {
        match piece {
            Piece::Rows(a, b) => {
                add_counts(&mut out, store::hits_between(conn, site_id, a, b).map_err(db)?);
                add_counts(&mut out, store::sessions_between(conn, site_id, a, b).map_err(db)?);
            }
            Piece::Tier(tier, a, b) => {
                add_counts(&mut out, store::counters(conn, site_id, tier.as_str(), a, b).map_err(db)?)
            }
        }
    }
    Ok(out)
}

/// Sessions started in an exact range: counters for whole buckets, rows for the rest.
fn sessions_between(conn: &mut AnyConnection, site_id: &str, from: i64, to: i64) -> Result<i64> {
    let mut n = 0;
    for piece in span::pieces(from, to) {
        n += match piece {
            Piece::Rows(a, b) => store::started_sessions(conn, site_id, a, b),
            Piece::Tier(tier, a, b) => store::counted_sessions(conn, site_id, tier.as_str(), a, b),
        }
        .map_err(db)?;
    }
    Ok(n)
}

/// `goalsReport` (rules ARPT-09, ARPT-14): the current goals by key.
pub fn goals_report(conn: &mut AnyConnection, a: GoalsArgs) -> Result<GoalsReport> {
    // Goal figures are exact to the millisecond (ARPT-14), so a zone's days
    // are only a check of the range.
    let zone = zone::of_site(conn, &a.site_id, a.timezone.as_deref(), (a.from, a.to), REPORT_MAX_DAYS, || {
        timezone::checked_range(None, &[], (a.from, a.to), REPORT_MAX_DAYS).map(|_| ())
    })?;
    if let Some(compare) = a.compare {
        let (from, to) = compare.range_in(zone, a.from, a.to)?;
        let before = goals_report(conn, GoalsArgs { from, to, compare: None, ..a.clone() })?;
        let mut main = goals_report(conn, GoalsArgs { compare: None, ..a })?;
        for g in &mut main.goals {
            if let Some(then) = before.goals.iter().find(|b| b.goal_id == g.goal_id).map(GoalRow::figures) {
                g.change = Some(compare::changes_of(&g.figures(), &then));
                g.comparison = Some(then);
            }
        }
        let sessions = |n: i64| serde_json::json!({ "totalSessions": n });
        main.change = Some(Changes(compare::changes(&sessions(main.total_sessions), &sessions(before.total_sessions))));
        main.comparison = Some(GoalsComparison { from, to, total_sessions: before.total_sessions });
        return Ok(main);
    }
    let rules = dims::rules(&a.filters)?;
    let site = sites::require(conn, &a.site_id)?;
    let mut goals = defs_store::goals(conn, &a.site_id, false).map_err(db)?;
    goals.sort_by(|x, y| x.key.cmp(&y.key));
    // Filters count the kept rows (REP-06, REP-07); otherwise the rollups
    // and the rows of partial hours.
    let read = if rules.is_empty() { span::rows_read(a.from, a.to) } else { vec![(a.from, a.to)] };
    let approximate_days = approximate::days(conn, std::slice::from_ref(&a.site_id), zone, (a.from, a.to), &read)?;
    let (counts, total_sessions) = if rules.is_empty() {
        (counts_between(conn, &a.site_id, a.from, a.to)?, sessions_between(conn, &a.site_id, a.from, a.to)?)
    } else {
        let kept = kept::read(
            conn,
            std::slice::from_ref(&site),
            (a.from, a.to),
            &rules,
            &[dims::Dim::Event(dims::EventDim::Goal)],
        )?;
        let counts = kept.goal_counts((a.from, a.to)).into_iter().map(|((_, id), n)| (id, n)).collect();
        (counts, kept.started((a.from, a.to)).count() as i64)
    };
    let rows = goals
        .iter()
        .map(|g| {
            let (completions, sessions) = counts.get(&g.id).copied().unwrap_or_default();
            GoalRow {
                goal_id: g.id.clone(),
                key: g.key.clone(),
                name: g.name.clone(),
                matcher: Matcher::of_goal(g),
                value_cents: g.value_cents,
                active: g.active,
                completions,
                sessions,
                conversion_rate: rate(sessions, total_sessions),
                value_total_cents: g.value_cents.map(|c| c.saturating_mul(sessions)),
                comparison: None,
                change: None,
            }
        })
        .collect();
    Ok(GoalsReport {
        site_id: a.site_id,
        from: a.from,
        to: a.to,
        total_sessions,
        goals: rows,
        timezone: zone.map(|z| z.name().to_string()),
        approximate_days,
        comparison: None,
        change: None,
    })
}

/// The overview's `topGoals` (rule OVR-11): the range's goal rollups ranked
/// by completions, goals removed since included with `removed: true`. The
/// whole UTC days inside come from the day tier and only the hours around
/// them from the hour tier, as `goalsReport` reads them: 90 local days are
/// about 90 day rows per goal, not 2,160 hour rows.
pub fn top_goals(conn: &mut AnyConnection, site_ids: &[String], from: i64, to: i64) -> Result<Vec<TopGoal>> {
    let mut rows: Vec<(i64, i64, String, String, String, bool)> = Vec::new();
    for site in site_ids {
        let counts = counts_between(conn, site, from, to)?;
        if counts.is_empty() {
            continue;
        }
        for g in defs_store::goals(conn, site, true).map_err(db)? {
            if let Some((completions, sessions)) = counts.get(&g.id).copied()
                && completions + sessions > 0
            {
                rows.push((completions, sessions, g.key, g.id, g.name, g.removed_at.is_some()));
            }
        }
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)).then_with(|| a.3.cmp(&b.3)));
    rows.truncate(10);
    Ok(rows
        .into_iter()
        .map(|(completions, sessions, key, goal_id, name, removed)| TopGoal {
            goal_id,
            key,
            name,
            completions,
            sessions,
            removed,
        })
        .collect())
}

/// The keys of the goals a session completed, for session and live rows.
pub fn keys_by_session(conn: &mut AnyConnection, session_ids: &[String]) -> Result<HashMap<String, Vec<String>>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for chunk in session_ids.chunks(400) {
        for r in store::keys_of_sessions(conn, chunk).map_err(db)? {
            out.entry(r.session_id).or_default().push(r.key);
        }
    }
    for keys in out.values_mut() {
        keys.sort();
    }
    Ok(out)
}
