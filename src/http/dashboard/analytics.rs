//! The dashboard's web-analytics screens: "Visitas" (the overview and the
//! live visitors of the chosen clients), "Mapa do site" and "Vitals", through
//! the same services as the federated `overview`, `liveVisitors`, `siteMap`
//! and `vitalsReport`.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::reads::operator;
use super::session::signed_in;
use crate::error::Result;
use crate::service::analytics::reports::api as reports;
use crate::service::analytics::reports::live::LiveArgs;
use crate::service::analytics::reports::overview::OverviewArgs;
use crate::service::analytics::reports::site_map::SiteMapArgs;
use crate::service::analytics::reports::vitals::VitalsArgs;
use crate::state::AppState;

pub async fn overview(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<OverviewArgs>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let args = body.into_inner();
    let caller = operator(&session, &args.site_ids);
    Ok(HttpResponse::Ok().json(reports::overview(&st.cx, &caller, args).await?))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveBody {
    site_ids: Vec<String>,
    limit: Option<i64>,
    #[serde(default)]
    filters: Vec<crate::service::reporting::filters::Filter>,
}

/// Who is on the sites now, by the server's clock.
pub async fn live(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<LiveBody>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let b = body.into_inner();
    let caller = operator(&session, &b.site_ids);
    let args = LiveArgs { site_ids: b.site_ids, now: st.now(), limit: b.limit, filters: b.filters };
    Ok(HttpResponse::Ok().json(reports::live_visitors(&st.cx, &caller, args).await?))
}

/// The "Site map" screen: `siteMap` over the chosen client and days.
pub async fn site_map(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<SiteMapArgs>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let args = body.into_inner();
    let caller = operator(&session, &args.site_ids);
    Ok(HttpResponse::Ok().json(reports::site_map(&st.cx, &caller, args).await?))
}

/// The "Vitals" screen: `vitalsReport` over the chosen client and days.
pub async fn vitals(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<VitalsArgs>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let args = body.into_inner();
    let caller = operator(&session, std::slice::from_ref(&args.site_id));
    Ok(HttpResponse::Ok().json(reports::vitals_report(&st.cx, &caller, args).await?))
}
