//! The dashboard's reads: the same use cases the host routes call, for the
//! signed-in operator (any operator may read, any client at once). The lead
//! report, the journey, the conversions feed and the unlink preview come back
//! with their money and ratios written out by the services (`formatted`), so
//! the page never computes a figure itself.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::session::signed_in;
use crate::clock::utc_day_start;
use crate::error::Result;
use crate::service::api::Caller;
use crate::service::leads::{self, board as pipeline, reports};
use crate::service::meta::{connection as meta_connection, formatted as meta_formatted, status as meta_status};
use crate::service::operators::Session;
use crate::service::sites;
use crate::state::AppState;

pub async fn list_sites(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    signed_in(&req)?;
    Ok(HttpResponse::Ok().json(st.cx.read(sites::list).await?))
}

/// "Todos os clientes" reads every client's sites in one report, up to this
/// many (the federated and host reports keep their ten).
pub const ALL_CLIENTS_MAX: usize = 500;

/// The signed-in operator as the caller of the sites it names (any client).
pub fn operator(session: &Session, sites: &[String]) -> Caller {
    Caller::operator(session.operator.owner_key.clone(), &json!({ "siteIds": sites }), ALL_CLIENTS_MAX)
}

pub async fn leads_report(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<reports::LeadsReportArgs>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let args = body.into_inner();
    let caller = operator(&session, &args.site_ids);
    Ok(HttpResponse::Ok().json(leads::api::formatted_leads_report(&st.cx, &caller, args).await?))
}

pub async fn leads_daily(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<reports::LeadsDailyArgs>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let args = body.into_inner();
    let caller = operator(&session, &args.site_ids);
    Ok(HttpResponse::Ok().json(leads::api::leads_daily(&st.cx, &caller, args).await?))
}

/// "Baixar CSV" of the lead list: the host's `leads.csv` (streamed), for a
/// signed-in operator.
pub async fn leads_csv(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    q: web::Query<crate::http::csv::leads::LeadsCsvQuery>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    crate::http::csv::leads::leads_csv(st, path, q).await
}

pub async fn list_leads(
    st: web::Data<AppState>,
    req: HttpRequest,
    q: web::Query<leads::reads::ListLeads>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let q = q.into_inner();
    let filters = leads::reads::filters_param(q.filters.as_deref())?;
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| leads::reads::list(c, q, &filters)).await?))
}

pub async fn lead_journey(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let (site_id, lead_id) = path.into_inner();
    let caller = operator(&session, std::slice::from_ref(&site_id));
    let args = leads::api::LeadJourneyArgs { site_id, lead_id };
    Ok(HttpResponse::Ok().json(leads::api::formatted_lead_journey(&st.cx, &caller, args).await?))
}

pub async fn meta_connection(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    let s = signed_in(&req)?;
    let (key, owner) = (st.cx.secrets.clone(), s.operator.owner_key);
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| meta_connection::view(c, key.as_ref(), &owner)).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusArgs {
    site_ids: Vec<String>,
}

/// metaStatus for every site asked (ten at a time, the service's cap), as the
/// operator's owner (each link and pixel says `own`), with the server's clock.
pub async fn meta_status(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<StatusArgs>,
) -> Result<HttpResponse> {
    let s = signed_in(&req)?;
    let ids = body.into_inner().site_ids;
    if ids.is_empty() || ids.len() > 200 {
        return Err(crate::error::Error::invalid("siteIds holds 1-200 sites"));
    }
    let now = utc_day_start(st.now());
    let mut out: Vec<Value> = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(10) {
        let args = meta_status::MetaStatusArgs {
            site_ids: chunk.to_vec(),
            now: Some(now),
            owner_key: Some(s.operator.owner_key.clone()),
        };
        let answer = meta_status::status_cached(&st.cx, args).await?;
        let v = serde_json::to_value(&*answer).map_err(crate::error::Error::internal)?;
        out.extend(v.as_array().cloned().unwrap_or_default());
    }
    Ok(HttpResponse::Ok().json(out))
}

pub async fn event_map(st: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    signed_in(&req)?;
    // The day's start, as the seed's dashboard passes it.
    let (site, now) = (path.into_inner(), utc_day_start(st.now()));
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| pipeline::event_map(c, &site, Some(now))).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FeedQuery {
    /// Comma-separated sites; the feed merges their conversions, newest first.
    site_ids: String,
    limit: Option<i64>,
}

/// The conversions feed across the asked sites' pixels, newest first.
pub async fn conversions_feed(
    st: web::Data<AppState>,
    req: HttpRequest,
    q: web::Query<FeedQuery>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let q = q.into_inner();
    let ids: Vec<String> = q.site_ids.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if ids.is_empty() || ids.len() > 200 {
        return Err(crate::error::Error::invalid("siteIds holds 1-200 sites"));
    }
    let limit = q.limit.unwrap_or(30);
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| meta_formatted::conversions_feed(c, &ids, limit)).await?))
}

pub async fn unlink_preview(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let (site, account) = path.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| meta_formatted::unlink_preview(c, &site, &account)).await?))
}

/// The dashboard's "Baixar CSV": the same file as the host's route, for a
/// signed-in operator over the clients it names.
pub async fn dashboard_csv(
    st: web::Data<AppState>,
    req: actix_web::HttpRequest,
    path: web::Path<String>,
    q: web::Query<crate::http::csv::reports::CsvQuery>,
    body: web::Json<serde_json::Value>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let args = body.into_inner();
    let max = ALL_CLIENTS_MAX;
    let caller = Caller::operator(session.operator.owner_key.clone(), &args, max);
    crate::http::csv::reports::csv_of(&st, &caller, &path.into_inner(), q.breakdown.as_deref(), args).await
}
