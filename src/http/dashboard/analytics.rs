//! The dashboard's web-analytics screen ("Visitas"): the overview and the
//! live visitors of the chosen clients, through the same services as the
//! federated `overview` and `liveVisitors`.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::reads::ALL_CLIENTS_MAX;
use super::session::signed_in;
use crate::error::Result;
use crate::service::analytics::reads::{self, LiveArgs, OverviewArgs};
use crate::state::AppState;

pub async fn overview(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<OverviewArgs>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = body.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.db.run(move |c| reads::overview_of(c, args, false, ALL_CLIENTS_MAX)).await?))
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
        .json(st.cx.db.run(move |c| reads::live_visitors_of(c, args, window, false, ALL_CLIENTS_MAX)).await?))
}
