//! `previewFunnel`: a funnel's figures before it is saved, so the editor can
//! show what each step would count while the operator types (the dashboard's
//! funnel editor). The draft is counted exactly as a saved funnel whose index
//! is being rebuilt: from the retained events of the range, one event per
//! step, within the window (rules ARPT-11 to ARPT-13). Nothing is written.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::funnels::{
    Days, FunnelStepRow, FunnelsArgs, MAX_FUNNEL_DAYS, Persons, funnel_report, levels, rows_in_range,
};
use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::definitions::{Step, check_steps};
use crate::service::analytics::reports::affiliates::check_days;
use crate::service::analytics::reports::numbers::Fixed;
use crate::service::analytics::reports::zone;
use crate::service::sites;
use crate::store::analytics::definitions::FunnelRow;

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreviewFunnelArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// The draft's steps and window, as `upsertFunnel` takes them.
    pub steps: Vec<Step>,
    pub window_ms: i64,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// The draft's figures over the range, as a `funnelsReport` row has them.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunnelPreview {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// Past the row cap: the figures are lower bounds (ARPT-13).
    pub incomplete: bool,
    pub entered: i64,
    pub completed: i64,
    pub conversion_rate: Option<Fixed>,
    pub steps: Vec<FunnelStepRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

pub fn preview_funnel(conn: &mut AnyConnection, a: PreviewFunnelArgs, cap: usize) -> Result<FunnelPreview> {
    check_steps(&a.steps, a.window_ms)?;
    let zone = zone::of_site(conn, &a.site_id, a.timezone.as_deref(), (a.from, a.to), MAX_FUNNEL_DAYS, || {
        check_days(a.from, a.to, MAX_FUNNEL_DAYS)
    })?;
    sites::require(conn, &a.site_id)?;
    // The draft as a funnel row no index holds: its rows come from the events.
    let draft = FunnelRow {
        id: String::from("preview"),
        site_id: a.site_id.clone(),
        key: String::from("preview"),
        name: String::from("preview"),
        window_ms: a.window_ms,
        steps: String::new(),
        created_at: 0,
        updated_at: 0,
    };
    let range = FunnelsArgs {
        site_id: a.site_id.clone(),
        from: a.from,
        to: a.to,
        compare: None,
        timezone: None,
        filters: Vec::new(),
    };
    let hits = rows_in_range(conn, &mut Persons::default(), &mut Days::Asked, &draft, &a.steps, true, &range, cap)?;
    let incomplete = hits.incomplete;
    let report = funnel_report(&draft, &a.steps, &levels(&hits.rows, a.steps.len(), a.window_ms));
    Ok(FunnelPreview {
        site_id: a.site_id,
        from: a.from,
        to: a.to,
        incomplete,
        entered: report.entered,
        completed: report.completed,
        conversion_rate: report.conversion_rate,
        steps: report.steps,
        timezone: zone.map(|z| z.name().to_string()),
    })
}
