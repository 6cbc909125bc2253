//! `POST /v1/reports/{name}.csv?breakdown=`: runs the function `name` with
//! the JSON body as its arguments (exactly as `/v1/analytics/{name}` and the
//! federated API do) and answers one of its tables as CSV. A paged function
//! (`listConversions`, `listSessions`) is followed to its last page.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::Value;

use super::table::{self, Level, Path};
use super::{CONTENT_TYPE, attachment, zone_of};
use crate::error::{Error, Result};
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::api::{self, Caller, Function};

/// The functions with a CSV, and their tables: the first is the default.
const EXPORTS: &[(&str, &[(&str, Path)])] = &[
    (
        "leadsReport",
        &[
            ("ads", &[CAMPAIGNS, ADSETS, Level { key: "ads", carry: &[] }]),
            ("adsets", &[CAMPAIGNS, Level { key: "adsets", carry: &[] }]),
            ("campaigns", &[Level { key: "campaigns", carry: &[] }]),
            ("origins", &[Level { key: "origins", carry: &[] }]),
            ("sites", &[Level { key: "bySite", carry: &[] }]),
            ("totals", &[Level { key: "totals", carry: &[] }]),
        ],
    ),
    ("leadsDaily", &[("days", &[])]),
    (
        "overview",
        &[
            ("series", &[Level { key: "series", carry: &[] }]),
            ("totals", &[Level { key: "totals", carry: &[] }]),
            ("sites", &[Level { key: "bySite", carry: &[] }]),
            ("pages", &[Level { key: "pages", carry: &[] }]),
            ("entryPages", &[Level { key: "entryPages", carry: &[] }]),
            ("sources", &[Level { key: "sources", carry: &[] }]),
            ("mediums", &[Level { key: "mediums", carry: &[] }]),
            ("campaigns", &[Level { key: "campaigns", carry: &[] }]),
            ("referrers", &[Level { key: "referrers", carry: &[] }]),
            ("devices", &[Level { key: "devices", carry: &[] }]),
            ("browsers", &[Level { key: "browsers", carry: &[] }]),
            ("countries", &[Level { key: "countries", carry: &[] }]),
            ("events", &[Level { key: "events", carry: &[] }]),
            ("goals", &[Level { key: "topGoals", carry: &[] }]),
            ("breakdown", &[Level { key: "breakdown", carry: &[("dim", "dim")] }, Level { key: "rows", carry: &[] }]),
        ],
    ),
    ("goalsReport", &[("goals", &[Level { key: "goals", carry: &[] }])]),
    (
        "funnelsReport",
        &[
            ("funnels", &[Level { key: "funnels", carry: &[] }]),
            ("steps", &[FUNNELS, Level { key: "steps", carry: &[] }]),
        ],
    ),
    ("affiliatesReport", &[("affiliates", &[Level { key: "affiliates", carry: &[] }])]),
    ("listConversions", &[("conversions", &[Level { key: "page", carry: &[] }])]),
    ("metaFormsReport", &[("forms", &[Level { key: "forms", carry: &[] }])]),
    (
        "siteMap",
        &[
            ("routes", &[SITES, Level { key: "routes", carry: &[] }]),
            ("transitions", &[SITES, Level { key: "transitions", carry: &[] }]),
        ],
    ),
    (
        "vitalsReport",
        &[
            ("metrics", &[Level { key: "metrics", carry: &[] }]),
            ("pages", &[Level { key: "byPage", carry: &[("route", "route"), ("samples", "pageSamples")] }, METRICS]),
            ("devices", &[Level { key: "byDevice", carry: &[("device", "device")] }, METRICS]),
        ],
    ),
    ("liveVisitors", &[("visitors", &[Level { key: "visitors", carry: &[] }])]),
    ("listSessions", &[("sessions", &[Level { key: "page", carry: &[] }])]),
    ("listTrackedLinks", &[("links", &[])]),
];

const SITES: Level = Level { key: "sites", carry: &[("siteId", "siteId")] };
const METRICS: Level = Level { key: "metrics", carry: &[] };

const CAMPAIGNS: Level = Level { key: "campaigns", carry: &[("campaignId", "campaignId"), ("name", "campaignName")] };
const ADSETS: Level = Level { key: "adsets", carry: &[("adsetId", "adsetId"), ("name", "adsetName")] };
const FUNNELS: Level =
    Level { key: "funnels", carry: &[("funnelId", "funnelId"), ("key", "funnelKey"), ("name", "funnelName")] };

/// The functions that have a CSV, for the docs and the dashboard.
pub fn functions() -> impl Iterator<Item = &'static str> {
    EXPORTS.iter().map(|(f, _)| *f)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CsvQuery {
    /// Which table of the answer (`overview`: `series`, `totals`, `pages`, `sources`, …;
    /// `leadsReport`: `ads`, `adsets`, `campaigns`, `origins`, `sites`, `totals`;
    /// `funnelsReport`: `funnels`, `steps`; `siteMap`: `routes`, `transitions`;
    /// `vitalsReport`: `metrics`, `pages`, `devices`); the first is the default.
    pub breakdown: Option<String>,
}

/// The function and table of `{name}.csv?breakdown=`.
fn export_of(file: &str, breakdown: Option<&str>) -> Result<(Function, &'static str, Path)> {
    let name = file.strip_suffix(".csv").ok_or_else(|| Error::not_found("no such route"))?;
    let (_, tables) = EXPORTS
        .iter()
        .find(|(f, _)| *f == name)
        .ok_or_else(|| Error::not_found("no CSV of that name (see the OpenAPI document for the list)"))?;
    let function = Function::parse(name).ok_or_else(|| Error::not_found("no such function"))?;
    let (table, path) = match breakdown {
        None => tables[0],
        Some(b) => *tables
            .iter()
            .find(|(t, _)| *t == b)
            .ok_or_else(|| Error::invalid("breakdown must name one of the report's tables"))?,
    };
    Ok((function, table, path))
}

/// A report as CSV (rule REP-10): the body is the function's arguments.
#[utoipa::path(post, path = "/v1/reports/{name}.csv", tag = "host", security(("hostKey" = [])),
    params(("name" = String, Path, description = "leadsReport, leadsDaily, overview, goalsReport, funnelsReport, affiliatesReport, listConversions, metaFormsReport, siteMap, vitalsReport, liveVisitors, listSessions or listTrackedLinks"), CsvQuery),
    request_body(content = Object, description = "The function's arguments, as on the federated API"),
    responses((status = 200, content_type = "text/csv", body = String,
        description = "RFC 4180, UTF-8, a header row; money as decimals, times as ISO 8601"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn report_csv(
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<CsvQuery>,
    body: web::Json<Value>,
) -> Result<HttpResponse> {
    let args = body.into_inner();
    let caller = Caller::trusted("host", "host".into(), &args);
    csv_of(&st, &caller, &path.into_inner(), q.breakdown.as_deref(), args).await
}

/// `file` (`{name}.csv`) of `caller`'s call with `args`, its `breakdown` table.
pub async fn csv_of(
    st: &AppState,
    caller: &Caller,
    file: &str,
    breakdown: Option<&str>,
    args: Value,
) -> Result<HttpResponse> {
    let (function, table_name, rows) = export_of(file, breakdown)?;
    if !st.cx.capabilities().serves(function.spec().capability) {
        return Err(Error::not_found("no such function"));
    }
    let tz = zone_of(args.get("timezone").and_then(Value::as_str));
    let mut answer = api::call(&st.cx, Some(caller), function, args.clone()).await?.value().clone();
    // A paged function (`listConversions`, `listSessions`) is followed to its end.
    if answer.get("continueCursor").is_some() {
        answer = all_pages(st, caller, function, args, answer).await?;
    }
    let name = format!("{}-{table_name}.csv", file.trim_end_matches(".csv"));
    let csv = table::table(&answer, rows, tz).csv();
    Ok(HttpResponse::Ok().content_type(CONTENT_TYPE).insert_header(attachment(&name)).body(csv))
}

/// Most pages a paged function's CSV follows (its range is at most a year).
const MAX_PAGES: usize = 1_000;

/// A paged answer followed to its last page: every page's rows in one `page`.
async fn all_pages(st: &AppState, caller: &Caller, function: Function, args: Value, first: Value) -> Result<Value> {
    let mut rows = first["page"].as_array().cloned().unwrap_or_default();
    let mut page = first;
    for _ in 0..MAX_PAGES {
        if page["isDone"].as_bool() != Some(false) {
            break;
        }
        let Some(cursor) = page["continueCursor"].as_str() else { break };
        let mut next = args.clone();
        next["paginationOpts"]["cursor"] = Value::String(cursor.to_string());
        page = api::call(&st.cx, Some(caller), function, next).await?.value().clone();
        rows.extend(page["page"].as_array().cloned().unwrap_or_default());
    }
    Ok(serde_json::json!({ "page": rows }))
}
