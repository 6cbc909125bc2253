//! The dashboard's web-analytics screens: "Visitas" (the overview and the
//! live visitors of the chosen clients), "Mapa do site" and "Vitals", through
//! the same services as the federated `overview`, `liveVisitors`, `siteMap`
//! and `vitalsReport`.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::reads::ALL_CLIENTS_MAX;
use super::session::signed_in;
use crate::error::Result;
use crate::service::analytics::reports::reads::{self, LiveArgs, OverviewArgs};
use crate::service::analytics::reports::site_map::{self, SiteMapArgs};
use crate::service::analytics::reports::vitals::{self, VitalsArgs};
use crate::state::AppState;

pub async fn overview(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<OverviewArgs>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = body.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| reads::overview_of(c, args, false, ALL_CLIENTS_MAX)).await?))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveBody {
    site_ids: Vec<String>,
    limit: Option<i64>,
}

/// Who is on the sites now, by the server's clock.
pub async fn live(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<LiveBody>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let b = body.into_inner();
    let args = LiveArgs { site_ids: b.site_ids, now: st.now(), limit: b.limit };
    let window = st.cx.config.live_window.as_millis() as i64;
    Ok(HttpResponse::Ok()
        .json(st.cx.read(move |c| reads::live_visitors_of(c, args, window, false, ALL_CLIENTS_MAX)).await?))
}

/// The "Site map" screen: `siteMap` over the chosen client and days.
pub async fn site_map(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<SiteMapArgs>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = body.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| site_map::site_map(c, args)).await?))
}

/// The "Vitals" screen: `vitalsReport` over the chosen client and days.
pub async fn vitals(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<VitalsArgs>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = body.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| vitals::vitals_report(c, args)).await?))
}
