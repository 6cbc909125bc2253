//! The `overview` answer (§5.3), and how a compared one carries the earlier range.

use serde::Serialize;
use utoipa::ToSchema;

use super::Interval;
use crate::service::analytics::reports::goals::TopGoal;
use crate::service::analytics::reports::numbers::Fixed;
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::reporting::timezone::Zone;

/// Money in a report: `0` for a public token, null when the sites mix currencies.
pub(super) type Money = Option<i64>;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewTotals {
    pub visitors: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub bounces: i64,
    pub bounce_rate: Option<Fixed>,
    pub avg_duration_ms: Option<i64>,
    pub views_per_session: Option<Fixed>,
    pub avg_engaged_ms: Option<i64>,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
}

/// One bucket of the series (an hour or a UTC day).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesPoint {
    pub bucket_start: i64,
    pub visitors: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub bounces: i64,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageRow {
    pub route: Option<String>,
    pub pageviews: i64,
    pub visitors: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryPageRow {
    pub route: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceRow {
    pub source: Option<String>,
    pub sessions: i64,
    pub visitors: i64,
    /// Leads whose WhatsApp tap came from a visit of this source (rule
    /// WA-16); absent where none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferrerRow {
    pub referrer: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediumRow {
    pub medium: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewCampaign {
    pub campaign: Option<String>,
    pub sessions: i64,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
    /// Leads whose WhatsApp tap came from a visit of this campaign (rule
    /// WA-16); absent where none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountryRow {
    pub country: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRow {
    pub device: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserRow {
    pub browser: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventCountRow {
    pub name: Option<String>,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteOverviewRow {
    pub site_id: String,
    pub currency: Option<String>,
    pub visitors: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub conversions: i64,
    pub revenue_cents: i64,
}

/// The `overview` answer (§5.3).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// The sites' currency; null when they mix currencies.
    pub currency: Option<String>,
    pub interval: Interval,
    pub totals: OverviewTotals,
    pub series: Vec<SeriesPoint>,
    pub pages: Vec<PageRow>,
    pub entry_pages: Vec<EntryPageRow>,
    pub sources: Vec<SourceRow>,
    pub referrers: Vec<ReferrerRow>,
    pub mediums: Vec<MediumRow>,
    pub campaigns: Vec<OverviewCampaign>,
    pub countries: Vec<CountryRow>,
    pub devices: Vec<DeviceRow>,
    pub browsers: Vec<BrowserRow>,
    pub events: Vec<EventCountRow>,
    pub top_goals: Vec<TopGoal>,
    pub by_site: Vec<SiteOverviewRow>,
    /// With `filters`: the filters the figures kept (REPORTING §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<bool>,
    /// With `breakdown`: that dimension's rows, paged (REPORTING §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    /// The series buckets (local days, or the range's days) whose figures
    /// needed rows that retention has already deleted (REPORTING §1): they
    /// are a lower bound. Absent when every figure is exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_days: Option<Vec<i64>>,
    /// With `timezone`: the zone whose days and hours the answer counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// With `compare`: the earlier range's totals and series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<OverviewComparison>,
    /// With `compare`: each total's change against the earlier range, as a
    /// fraction (null when the earlier figure is 0 or unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

/// The earlier range of a compared `overview`: its series has one point per
/// point of the main series, aligned (the same position, or the same date a year before).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewComparison {
    pub from: i64,
    pub to: i64,
    pub totals: OverviewTotals,
    pub series: Vec<SeriesPoint>,
}

impl Overview {
    /// This answer with `before` (the same arguments over `compare`'s range) beside it.
    pub(super) fn compared(
        mut self,
        compare: Compare,
        zone: Option<Zone>,
        (from, to): (i64, i64),
        (pf, pt): (i64, i64),
        before: Overview,
    ) -> Overview {
        let series = self
            .series
            .iter()
            .map(|p| {
                let at = compare.align_in(zone, from, to, p.bucket_start);
                before.series.iter().find(|q| q.bucket_start == at).cloned().unwrap_or(SeriesPoint {
                    bucket_start: at,
                    visitors: 0,
                    sessions: 0,
                    pageviews: 0,
                    bounces: 0,
                    conversions: 0,
                    revenue_cents: p.revenue_cents.map(|_| 0),
                })
            })
            .collect();
        self.change = Some(compare::changes_of(&self.totals, &before.totals));
        self.comparison = Some(OverviewComparison { from: pf, to: pt, totals: before.totals, series });
        self
    }
}

/// One dimension's rows over the kept sessions and events (rule REP-09).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Breakdown {
    pub dim: String,
    pub offset: i64,
    pub limit: i64,
    /// Rows in all (of every page).
    pub total: i64,
    pub rows: Vec<BreakdownRow>,
}

/// A value of a breakdown: its distinct visitors, its sessions (a session
/// dimension's started in the range; an event dimension's holding a counted
/// event of the value) and its counted events.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BreakdownRow {
    /// null: unknown (no value).
    pub value: Option<String>,
    pub visitors: i64,
    pub sessions: i64,
    pub events: i64,
}
