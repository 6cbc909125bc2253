//! The host API's site routes: create, list, read and update a site.

use actix_web::{HttpResponse, web};

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::sites::{self, CreateSite, Site, UpdateSite};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites", web::post().to(create_site))
        .route("/sites", web::get().to(list_sites))
        .route("/sites/{siteId}", web::get().to(get_site))
        .route("/sites/{siteId}", web::patch().to(update_site));
}

#[utoipa::path(post, path = "/v1/sites", tag = "host", security(("hostKey" = [])), request_body = CreateSite,
    responses((status = 201, body = Site), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn create_site(st: web::Data<AppState>, body: crate::http::json::Json<CreateSite>) -> Result<HttpResponse> {
    let input = body.into_inner();
    sites::check_create(&input)?;
    let now = st.now();
    let site = st.cx.write_plain(move |c| sites::create(c, now, input)).await?;
    Ok(HttpResponse::Created().json(site))
}

#[utoipa::path(get, path = "/v1/sites", tag = "host", security(("hostKey" = [])),
    responses((status = 200, body = Vec<Site>)))]
pub async fn list_sites(st: web::Data<AppState>) -> Result<HttpResponse> {
    Ok(HttpResponse::Ok().json(st.cx.read(sites::list).await?))
}

#[utoipa::path(get, path = "/v1/sites/{siteId}", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path)),
    responses((status = 200, body = Site), (status = 404, body = ErrorBody)))]
pub async fn get_site(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let id = path.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| sites::get(c, &id)).await?))
}

#[utoipa::path(patch, path = "/v1/sites/{siteId}", tag = "host", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = UpdateSite,
    responses((status = 200, body = Site), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn update_site(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<UpdateSite>,
) -> Result<HttpResponse> {
    let (id, input) = (path.into_inner(), body.into_inner());
    sites::check_update(&input)?;
    let now = st.now();
    Ok(HttpResponse::Ok()
        .json(st.cx.write_plain(move |c| crate::service::analytics::settings::update(c, now, &id, input)).await?))
}
