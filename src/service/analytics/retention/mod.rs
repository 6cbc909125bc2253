//! Retention (RET-01 to RET-10): a site's policy of five day counts, and the
//! cleanup each data class runs in bounded batches (each its own short
//! transaction, so the writer is never held long), back to back until the
//! class's backlog is 0. A run records its cutoff; once nothing is left past
//! it, `purged_before` moves there and `dataCoverage` says what is gone.
//! Nothing is kept in memory between batches: a restart simply runs again.

pub mod api;
pub mod coverage;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::DAY_MS;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::vocabulary::RetentionClass;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::funnels as funnel_store;
use crate::store::analytics::people as people_store;
use crate::store::analytics::retention::{self as store, JobRow, PolicyRow};

pub const MIN_DAYS: i64 = 1;
pub const MAX_DAYS: i64 = 3650;

/// The tables of a class and the time each compares with the cutoff (§5.9).
fn tables(class: RetentionClass) -> &'static [(&'static str, &'static str)] {
    match class {
        RetentionClass::Events => {
            &[("web_events", "occurred_at"), ("web_goal_hits", "at"), ("web_funnel_days", "first_at")]
        }
        RetentionClass::Sessions => &[
            ("web_sessions", "started_at"),
            ("web_session_goals", "started_at"),
            // A session's sealed landing fbclid goes with it (rule WA-33).
            ("web_click_ids", "landed_at"),
        ],
        RetentionClass::Conversions => &[("web_conversions", "occurred_at"), ("web_ad_conversions", "occurred_at")],
        RetentionClass::Profiles => &[("web_profiles", "last_seen_at")],
        RetentionClass::Aggregates => &[
            ("web_counters", "bucket"),
            ("web_breakdowns", "bucket"),
            ("web_visitor_sets", "bucket"),
            ("web_goal_counters", "bucket"),
            ("web_affiliate_days", "day"),
            ("web_map_routes", "day"),
            ("web_map_transitions", "day"),
            ("web_vital_digests", "day"),
            // A tracked link's daily counters; its all-time totals stay (rule RET-08).
            ("web_link_days", "day"),
        ],
    }
}

fn db(e: diesel::result::Error) -> Error {
    Error::from(e)
}

/// A class's cutoff at `now` (rule RET-03): `now − days × 86,400,000`, for
/// `aggregates` the UTC day start at or before it.
pub fn cutoff(p: &PolicyRow, class: RetentionClass, now: i64) -> i64 {
    let days = match class {
        RetentionClass::Events => p.events_days,
        RetentionClass::Sessions => p.sessions_days,
        RetentionClass::Conversions => p.conversions_days,
        RetentionClass::Profiles => p.profiles_days,
        RetentionClass::Aggregates => p.aggregates_days,
    };
    let c = now - days * DAY_MS;
    if class == RetentionClass::Aggregates { c - c.rem_euclid(DAY_MS) } else { c }
}

/// Deletes at most `limit` rows of the class past `cutoff`; answers how many.
pub fn delete_step(
    conn: &mut AnyConnection,
    site_id: &str,
    class: RetentionClass,
    cutoff: i64,
    limit: usize,
) -> Result<usize> {
    if class == RetentionClass::Profiles {
        return delete_profiles(conn, site_id, cutoff, limit);
    }
    let mut left = limit;
    for (table, column) in tables(class) {
        if left == 0 {
            break;
        }
        left -= match *table {
            // A packed row of the cutoff's day keeps its later entries.
            "web_funnel_days" => funnel_store::trim_before(conn, site_id, cutoff, left),
            _ => store::delete_before(conn, table, column, site_id, cutoff, left),
        }
        .map_err(db)?;
    }
    if class == RetentionClass::Sessions && left > 0 {
        left -= store::delete_orphan_visitors(conn, site_id, cutoff, left).map_err(db)?;
    }
    Ok(limit - left)
}

/// Profiles last seen before `cutoff` go with their aliases and search terms,
/// and the owner's identity row once no site of the owner keeps the person
/// (rule RET-09). A profile's stored `last_seen_at` is its last identify: a
/// person seen in a later session is kept, its `last_seen_at` moved there.
fn delete_profiles(conn: &mut AnyConnection, site_id: &str, cutoff: i64, limit: usize) -> Result<usize> {
    let owner = sites::get(conn, site_id)?.owner_id;
    let mut done = 0;
    for id in store::profiles_before(conn, site_id, cutoff, limit).map_err(db)? {
        let ids = people_store::ids_of_person(conn, site_id, &id).map_err(db)?;
        let seen = people_store::session_totals(conn, site_id, &ids).map_err(db)?.iter().map(|t| t.last_at).max();
        if let Some(seen) = seen.filter(|s| *s >= cutoff) {
            store::touch_profile(conn, site_id, &id, seen).map_err(db)?;
        } else {
            people_store::delete_aliases(conn, site_id, &id).map_err(db)?;
            people_store::delete_terms(conn, site_id, &id).map_err(db)?;
            people_store::delete_profile(conn, site_id, &id).map_err(db)?;
            if !people_store::owner_keeps(conn, &owner, &id).map_err(db)? {
                people_store::delete_identity(conn, &id).map_err(db)?;
            }
        }
        done += 1;
    }
    Ok(done)
}

/// The class's rows past `cutoff` not yet deleted.
pub fn backlog(conn: &mut AnyConnection, site_id: &str, class: RetentionClass, cutoff: i64) -> Result<i64> {
    let mut n = 0;
    for (table, column) in tables(class) {
        n += store::count_before(conn, table, column, site_id, cutoff).map_err(db)?;
    }
    if class == RetentionClass::Sessions {
        n += store::count_orphan_visitors(conn, site_id, cutoff).map_err(db)?;
    }
    Ok(n)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusArgs {
    pub site_id: String,
    pub now: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPolicy {
    pub site_id: String,
    pub events_days: i64,
    pub sessions_days: i64,
    pub conversions_days: i64,
    pub profiles_days: i64,
    pub aggregates_days: i64,
}

/// A site's retention policy, in days per data class.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub events_days: i64,
    pub sessions_days: i64,
    pub conversions_days: i64,
    pub profiles_days: i64,
    pub aggregates_days: i64,
    pub enabled_at: i64,
    pub updated_at: i64,
}

impl From<&PolicyRow> for Policy {
    fn from(p: &PolicyRow) -> Policy {
        Policy {
            events_days: p.events_days,
            sessions_days: p.sessions_days,
            conversions_days: p.conversions_days,
            profiles_days: p.profiles_days,
            aggregates_days: p.aggregates_days,
            enabled_at: p.enabled_at,
            updated_at: p.updated_at,
        }
    }
}

/// One class's cleanup job as `retentionStatus` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    pub data_class: String,
    pub cutoff: i64,
    pub last_run_at: Option<i64>,
    pub next_run_at: i64,
    pub last_deleted: i64,
    pub last_error: Option<String>,
}

/// The `retentionStatus` answer: no policy, no jobs and no backlog when off.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetentionStatus {
    pub site_id: String,
    pub policy: Option<Policy>,
    pub jobs: Vec<JobStatus>,
    /// Per class, the rows past their cutoff still to delete.
    pub backlog: Option<BTreeMap<String, i64>>,
}

/// The `disableRetentionPolicy` answer.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Disabled {
    pub disabled: bool,
}

/// Rule RET-02.
pub fn check(a: &SetPolicy) -> Result<()> {
    for (name, v) in [
        ("eventsDays", a.events_days),
        ("sessionsDays", a.sessions_days),
        ("conversionsDays", a.conversions_days),
        ("profilesDays", a.profiles_days),
        ("aggregatesDays", a.aggregates_days),
    ] {
        if !(MIN_DAYS..=MAX_DAYS).contains(&v) {
            return Err(Error::invalid(format!("{name} must be a whole number of days {MIN_DAYS}-{MAX_DAYS}")));
        }
    }
    if !(a.events_days <= a.sessions_days && a.sessions_days <= a.aggregates_days) {
        return Err(Error::invalid("eventsDays <= sessionsDays <= aggregatesDays is required"));
    }
    if a.conversions_days > a.aggregates_days {
        return Err(Error::invalid("conversionsDays <= aggregatesDays is required"));
    }
    Ok(())
}

/// `setRetentionPolicy`: answers the policy; `enabledAt` stays while it stays on.
pub fn set_policy(conn: &mut AnyConnection, now: i64, a: SetPolicy) -> Result<Policy> {
    check(&a)?;
    sites::require(conn, &a.site_id)?;
    let enabled_at = store::policy(conn, &a.site_id).map_err(db)?.map_or(now, |p| p.enabled_at);
    let p = PolicyRow {
        site_id: a.site_id,
        events_days: a.events_days,
        sessions_days: a.sessions_days,
        conversions_days: a.conversions_days,
        profiles_days: a.profiles_days,
        aggregates_days: a.aggregates_days,
        enabled_at,
        updated_at: now,
    };
    store::put_policy(conn, &p).map_err(db)?;
    Ok(Policy::from(&p))
}

/// `disableRetentionPolicy` (rule RET-06): stops every cleanup, restores nothing.
pub fn disable(conn: &mut AnyConnection, site_id: &str) -> Result<Disabled> {
    sites::require(conn, site_id)?;
    let n = store::delete_policy(conn, site_id).map_err(db)?;
    Ok(Disabled { disabled: n > 0 })
}

/// `retentionStatus` (rules RET-01, RET-05, RET-10).
pub fn status(conn: &mut AnyConnection, a: StatusArgs, server_now: i64, interval_ms: i64) -> Result<RetentionStatus> {
    let now = a.now.unwrap_or(server_now);
    validate::time("now", now)?;
    sites::require(conn, &a.site_id)?;
    let Some(p) = store::policy(conn, &a.site_id).map_err(db)? else {
        return Ok(RetentionStatus { site_id: a.site_id, policy: None, jobs: Vec::new(), backlog: None });
    };
    let jobs: Vec<JobRow> = store::jobs(conn, &a.site_id).map_err(db)?;
    let mut rows = Vec::new();
    let mut backlogs = BTreeMap::new();
    for &class in RetentionClass::ALL {
        let job = jobs.iter().find(|j| j.data_class == class.as_str());
        let c = cutoff(&p, class, now);
        rows.push(JobStatus {
            data_class: class.to_string(),
            cutoff: c,
            last_run_at: job.and_then(|j| j.last_run_at),
            next_run_at: job.and_then(|j| j.next_run_at).unwrap_or(p.updated_at + interval_ms),
            last_deleted: job.map_or(0, |j| j.last_deleted),
            last_error: job.and_then(|j| j.last_error.clone()),
        });
        backlogs.insert(class.to_string(), backlog(conn, &a.site_id, class, c)?);
    }
    Ok(RetentionStatus { site_id: a.site_id, policy: Some(Policy::from(&p)), jobs: rows, backlog: Some(backlogs) })
}

/// Per class, the cutoff below which its rows are gone (`null`: none purged).
pub fn purged_before(conn: &mut AnyConnection, site_id: &str) -> Result<Vec<(RetentionClass, Option<i64>)>> {
    let jobs = store::jobs(conn, site_id).map_err(db)?;
    // A job row of a class this version does not know (a newer one's) purges nothing here.
    Ok(jobs.into_iter().filter_map(|j| Some((RetentionClass::parse(&j.data_class)?, j.purged_before))).collect())
}
