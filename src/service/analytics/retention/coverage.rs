//! `dataCoverage` (ARPT-22 to ARPT-26): per data class, whether a range is
//! complete, partial, retained or unavailable, so an empty report is never
//! taken for "no visits". No event, visitor or session id is answered.
//!
//! `purgedBefore` of a class is the cutoff of its latest completed retention
//! run (`siteMap` follows `aggregates`); the site map's class is collected
//! from its `coverageFrom`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::reports::zone;
use crate::service::analytics::vocabulary::RetentionClass;
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics as store;

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CoverageArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub now: Option<i64>,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1): the
    /// range is checked as such; coverage is of instants either way.
    #[serde(default)]
    pub timezone: Option<String>,
}

/// Whether a class's rows cover a range (rules ARPT-22 to ARPT-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    Complete,
    Partial,
    /// The rows were purged, the aggregates still count them.
    Retained,
    Unavailable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClassCoverage {
    pub status: Coverage,
    pub covered_from: Option<i64>,
    pub covered_to: Option<i64>,
}

impl ClassCoverage {
    const UNAVAILABLE: ClassCoverage =
        ClassCoverage { status: Coverage::Unavailable, covered_from: None, covered_to: None };
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CoverageClasses {
    pub aggregates: ClassCoverage,
    pub sessions: ClassCoverage,
    pub events: ClassCoverage,
    pub conversions: ClassCoverage,
    pub site_map: ClassCoverage,
}

/// The `dataCoverage` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataCoverage {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    pub now: i64,
    pub tracking_since: Option<i64>,
    pub classes: CoverageClasses,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// One class's status over `[from, to]` as of `now` (rules ARPT-22 to ARPT-25).
pub fn class(from: i64, to: i64, now: i64, collected_from: Option<i64>, purged_before: Option<i64>) -> ClassCoverage {
    let Some(collected) = collected_from else { return ClassCoverage::UNAVAILABLE };
    let (start, end) = (from.max(collected), to.min(now));
    if start > end {
        return ClassCoverage::UNAVAILABLE;
    }
    if purged_before.is_some_and(|p| end < p) {
        // Rows purged over the whole overlap; the aggregates' own answer is set by the caller.
        return ClassCoverage { status: Coverage::Retained, covered_from: None, covered_to: None };
    }
    let kept_from = purged_before.map_or(start, |p| start.max(p));
    let whole = start == from && end == to && purged_before.is_none_or(|p| from >= p);
    ClassCoverage {
        status: if whole { Coverage::Complete } else { Coverage::Partial },
        covered_from: Some(kept_from),
        covered_to: Some(end),
    }
}

pub fn data_coverage(conn: &mut AnyConnection, a: CoverageArgs, server_now: i64) -> Result<DataCoverage> {
    let zone = zone::of_site(conn, &a.site_id, a.timezone.as_deref(), (a.from, a.to), 366, || {
        validate::range(a.from, a.to, 366)
    })?;
    let now = a.now.unwrap_or(server_now);
    validate::time("now", now)?;
    let site = sites::require(conn, &a.site_id)?;
    let since = store::tracking_since(conn, &a.site_id)?;
    let map_from = crate::service::analytics::rollup::site_map::coverage_from(conn, &a.site_id, site.created_at)?;
    let purged = crate::service::analytics::retention::purged_before(conn, &a.site_id)?;
    let purged_of = |c: RetentionClass| purged.iter().find(|(k, _)| *k == c).and_then(|(_, p)| *p);
    let aggregates_from = purged_of(RetentionClass::Aggregates);
    let detail = |name: RetentionClass| {
        let mut v = class(a.from, a.to, now, since, purged_of(name));
        // Retained only while the aggregates still cover the whole overlap (rule ARPT-23).
        let overlap_start = since.map_or(a.from, |s| a.from.max(s));
        if v.status == Coverage::Retained && aggregates_from.is_some_and(|p| overlap_start < p) {
            v.status = Coverage::Unavailable;
        }
        v
    };
    let mut aggregates = class(a.from, a.to, now, since, aggregates_from);
    if aggregates.status == Coverage::Retained {
        aggregates.status = Coverage::Unavailable;
    }
    Ok(DataCoverage {
        site_id: a.site_id.clone(),
        from: a.from,
        to: a.to,
        now,
        tracking_since: since,
        classes: CoverageClasses {
            aggregates,
            sessions: detail(RetentionClass::Sessions),
            events: detail(RetentionClass::Events),
            conversions: detail(RetentionClass::Conversions),
            site_map: class(a.from, a.to, now, Some(map_from), aggregates_from),
        },
        timezone: zone.map(|z| z.name().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The class's answer as JSON, as callers read it.
    fn class(from: i64, to: i64, now: i64, collected: Option<i64>, purged: Option<i64>) -> serde_json::Value {
        serde_json::to_value(super::class(from, to, now, collected, purged)).unwrap()
    }

    // rule: ARPT-22
    // rule: ARPT-24
    // rule: ARPT-25
    #[test]
    fn the_decision_order() {
        // Nothing collected, or the overlap empty: unavailable, no bounds.
        assert_eq!(class(0, 100, 200, None, None)["status"], "unavailable");
        assert_eq!(class(0, 100, 200, Some(150), None)["status"], "unavailable");
        assert_eq!(class(100, 200, 50, Some(0), None)["status"], "unavailable", "a range after now");
        // The whole range collected: complete, bounded by the range.
        assert_eq!(
            class(100, 200, 300, Some(50), None),
            json!({"status": "complete", "coveredFrom": 100, "coveredTo": 200})
        );
        // Tracking began inside the range, or now cuts it: partial.
        assert_eq!(
            class(100, 200, 300, Some(150), None),
            json!({"status": "partial", "coveredFrom": 150, "coveredTo": 200})
        );
        assert_eq!(
            class(100, 200, 180, Some(50), None),
            json!({"status": "partial", "coveredFrom": 100, "coveredTo": 180})
        );
        // Purged over the whole overlap: retained (the caller says unavailable when aggregates went too).
        assert_eq!(class(100, 200, 300, Some(50), Some(250))["status"], "retained");
        assert_eq!(
            class(100, 200, 300, Some(50), Some(150)),
            json!({"status": "partial", "coveredFrom": 150, "coveredTo": 200})
        );
    }
}
