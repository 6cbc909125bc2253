//! The host API's lead routes: recordLead, setLeadStage, removeLead, the
//! journey and the list, the board (pipeline and event map) and the lead
//! reports.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::Deserialize;

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::leads::board::{self as pipeline, EventMap, SetEventMap, SetPipeline};
use crate::service::leads::reads::{self as lead_reads, LeadJourney, ListLeads};
use crate::service::leads::reports::{self, DailyRow, LeadsDailyArgs, LeadsReport, LeadsReportArgs};
use crate::service::leads::{self, RecordLead, RecordLeadAnswer, RemoveLeadAnswer, SetLeadStage, SetLeadStageAnswer};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites/{siteId}/leads", web::post().to(record_lead))
        .route("/sites/{siteId}/leads/{leadKey}/stage", web::post().to(set_lead_stage))
        .route("/sites/{siteId}/leads/{leadKey}", web::delete().to(remove_lead))
        .route("/sites/{siteId}/leads/{leadId}/journey", web::get().to(lead_journey))
        .route("/leads", web::get().to(list_leads))
        .route("/sites/{siteId}/pipeline", web::put().to(set_pipeline))
        .route("/sites/{siteId}/event-map", web::put().to(set_event_map))
        .route("/sites/{siteId}/event-map", web::get().to(event_map))
        .route("/reports/leads", web::post().to(leads_report))
        .route("/reports/leads-daily", web::post().to(leads_daily));
}

/// recordLead: creates the lead once per (site, leadKey); a repeat answers the same leadId.
#[utoipa::path(post, path = "/v1/sites/{siteId}/leads", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = RecordLead,
    responses((status = 201, body = RecordLeadAnswer), (status = 200, body = RecordLeadAnswer),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn record_lead(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<RecordLead>,
) -> Result<HttpResponse> {
    let (site, input) = (path.into_inner(), body.into_inner());
    let answer = leads::record_lead(&st.cx, st.now(), site, input).await?;
    let status = if answer.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(HttpResponse::build(status).json(answer))
}

#[derive(Deserialize)]
pub struct LeadPath {
    #[serde(rename = "siteId")]
    site_id: String,
    #[serde(rename = "leadKey")]
    lead_key: String,
}

/// setLeadStage: idempotent by eventId; `won` with a value is the lead's sale total.
#[utoipa::path(post, path = "/v1/sites/{siteId}/leads/{leadKey}/stage", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path), ("leadKey" = String, Path)), request_body = SetLeadStage,
    responses((status = 200, body = SetLeadStageAnswer), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn set_lead_stage(
    st: web::Data<AppState>,
    path: web::Path<LeadPath>,
    body: crate::http::json::Json<SetLeadStage>,
) -> Result<HttpResponse> {
    let (p, input) = (path.into_inner(), body.into_inner());
    leads::check_stage(&input)?;
    let now = st.now();
    let answer = st.cx.write(move |c| leads::set_stage(c, now, &p.site_id, &p.lead_key, input)).await?;
    Ok(HttpResponse::Ok().json(answer))
}

/// removeLead: deletes the lead, its history and its conversions.
#[utoipa::path(delete, path = "/v1/sites/{siteId}/leads/{leadKey}", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path), ("leadKey" = String, Path)),
    responses((status = 200, body = RemoveLeadAnswer), (status = 404, body = ErrorBody)))]
pub async fn remove_lead(st: web::Data<AppState>, path: web::Path<LeadPath>) -> Result<HttpResponse> {
    let p = path.into_inner();
    let answer = st.cx.write(move |c| leads::remove(c, &p.site_id, &p.lead_key)).await?;
    // Its pending conversions went with it: scrub their hashes from SQLite's WAL too.
    Ok(HttpResponse::Ok().json(answer))
}

#[derive(Deserialize)]
pub struct JourneyPath {
    #[serde(rename = "siteId")]
    site_id: String,
    #[serde(rename = "leadId")]
    lead_id: String,
}

#[utoipa::path(get, path = "/v1/sites/{siteId}/leads/{leadId}/journey", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path), ("leadId" = String, Path)),
    responses((status = 200, body = LeadJourney), (status = 404, body = ErrorBody)))]
pub async fn lead_journey(st: web::Data<AppState>, path: web::Path<JourneyPath>) -> Result<HttpResponse> {
    let p = path.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| lead_reads::journey(c, &p.site_id, &p.lead_id)).await?))
}

/// listLeads: newest first, never the click id; page with the last firstAt as `before`.
#[utoipa::path(get, path = "/v1/leads", tag = "host", security(("hostKey" = [])), params(ListLeads),
    responses((status = 200, body = Vec<leads::Lead>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn list_leads(st: web::Data<AppState>, q: web::Query<ListLeads>) -> Result<HttpResponse> {
    let q = q.into_inner();
    let filters = lead_reads::filters_param(q.filters.as_deref())?;
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| lead_reads::list(c, q, &filters)).await?))
}

#[utoipa::path(put, path = "/v1/sites/{siteId}/pipeline", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = SetPipeline,
    responses((status = 200, body = EventMap), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn set_pipeline(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<SetPipeline>,
) -> Result<HttpResponse> {
    let (site, input) = (path.into_inner(), body.into_inner());
    pipeline::check_pipeline(&input)?;
    Ok(HttpResponse::Ok().json(st.cx.write_plain(move |c| pipeline::set_pipeline(c, &site, input)).await?))
}

#[utoipa::path(put, path = "/v1/sites/{siteId}/event-map", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = SetEventMap,
    responses((status = 200, body = EventMap), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)))]
pub async fn set_event_map(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<SetEventMap>,
) -> Result<HttpResponse> {
    let (site, input) = (path.into_inner(), body.into_inner());
    let now = st.now();
    Ok(HttpResponse::Ok().json(st.cx.write_plain(move |c| pipeline::set_event_map(c, now, &site, input)).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventMapQuery {
    /// The caller's clock in ms (rounded to the day); without it monthCount is null.
    now: Option<i64>,
}

#[utoipa::path(get, path = "/v1/sites/{siteId}/event-map", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path), EventMapQuery),
    responses((status = 200, body = EventMap), (status = 404, body = ErrorBody)))]
pub async fn event_map(
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<EventMapQuery>,
) -> Result<HttpResponse> {
    let (site, now) = (path.into_inner(), q.into_inner().now);
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| pipeline::event_map(c, &site, now)).await?))
}

#[utoipa::path(post, path = "/v1/reports/leads", tag = "host", security(("hostKey" = [])), request_body = LeadsReportArgs,
    responses((status = 200, body = LeadsReport), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn leads_report(
    st: web::Data<AppState>,
    body: crate::http::json::Json<LeadsReportArgs>,
) -> Result<HttpResponse> {
    let args = body.into_inner();
    reports::check_report(&args)?;
    let caps = reports::Caps::from_config(&st.cx.config);
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| reports::leads_report(c, args, caps)).await?))
}

#[utoipa::path(post, path = "/v1/reports/leads-daily", tag = "host", security(("hostKey" = [])),
    request_body = LeadsDailyArgs,
    responses((status = 200, body = Vec<DailyRow>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn leads_daily(
    st: web::Data<AppState>,
    body: crate::http::json::Json<LeadsDailyArgs>,
) -> Result<HttpResponse> {
    let args = body.into_inner();
    reports::check_daily(&args)?;
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| reports::leads_daily(c, args)).await?))
}
