//! The host API's Meta routes: the connection per owner, ad account links and
//! the site's pixel. No answer ever carries a token.

use actix_web::{HttpResponse, web};
use serde::Deserialize;

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::meta::connection::{
    self as connection, ConnectWithCode, ConnectionView, Listing, Removed, SetMetaConnection,
};
use crate::service::meta::links::{self as links, Link, LinkAdAccount, Pixel, SetSitePixel};
use crate::service::meta::status::{MetaStatusArgs, SiteStatus};
use crate::service::meta::sync::{self, SyncNowAnswer, UnlinkPreview};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/meta/owners/{ownerKey}/connection", web::put().to(set_meta_connection))
        .route("/meta/owners/{ownerKey}/connection/code", web::post().to(connect_meta_with_code))
        .route("/meta/owners/{ownerKey}/connection/refresh", web::post().to(list_meta_ad_accounts))
        .route("/meta/owners/{ownerKey}/connection", web::get().to(meta_connection))
        .route("/meta/owners/{ownerKey}", web::delete().to(remove_meta_connection))
        .route("/sites/{siteId}/ad-accounts", web::post().to(link_site_ad_account))
        .route("/sites/{siteId}/ad-accounts/{adAccountId}", web::delete().to(unlink_site_ad_account))
        .route("/sites/{siteId}/ad-accounts/{adAccountId}/unlink-preview", web::get().to(meta_unlink_preview))
        .route("/sites/{siteId}/meta/sync", web::post().to(sync_meta_now))
        .route("/meta/status", web::post().to(meta_status))
        .route("/sites/{siteId}/pixel", web::put().to(set_site_pixel))
        .route("/sites/{siteId}/pixel", web::delete().to(remove_site_pixel))
        .route("/federation/connections/{connectionId}/meta", web::delete().to(remove_federated_meta_connection));
}

/// setMetaConnection: validates a pasted token (GET /me), lists its ad accounts and pixels, stores it sealed.
#[utoipa::path(put, path = "/v1/meta/owners/{ownerKey}/connection", tag = "meta", security(("hostKey" = [])),
    params(("ownerKey" = String, Path)), request_body = SetMetaConnection,
    responses((status = 200, body = Listing), (status = 400, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn set_meta_connection(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<SetMetaConnection>,
) -> Result<HttpResponse> {
    let listing = connection::set_connection(&st.cx, &path.into_inner(), body.into_inner()).await?;
    Ok(HttpResponse::Ok().json(listing))
}

/// connectMetaWithCode: Facebook Login for Business; the code is used once and never stored.
#[utoipa::path(post, path = "/v1/meta/owners/{ownerKey}/connection/code", tag = "meta", security(("hostKey" = [])),
    params(("ownerKey" = String, Path)), request_body = ConnectWithCode,
    responses((status = 200, body = Listing), (status = 400, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn connect_meta_with_code(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<ConnectWithCode>,
) -> Result<HttpResponse> {
    let listing = connection::connect_with_code(&st.cx, &path.into_inner(), body.into_inner()).await?;
    Ok(HttpResponse::Ok().json(listing))
}

/// listMetaAdAccounts: reads the owner's ad accounts and pixels from Meta again.
#[utoipa::path(post, path = "/v1/meta/owners/{ownerKey}/connection/refresh", tag = "meta", security(("hostKey" = [])),
    params(("ownerKey" = String, Path)),
    responses((status = 200, body = Listing), (status = 404, body = ErrorBody)))]
pub async fn list_meta_ad_accounts(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let listing = connection::refresh(&st.cx, &path.into_inner()).await;
    Ok(HttpResponse::Ok().json(listing?))
}

/// metaConnection: null, or the status, who authorized, expiry and the listing. Never a token.
#[utoipa::path(get, path = "/v1/meta/owners/{ownerKey}/connection", tag = "meta", security(("hostKey" = [])),
    params(("ownerKey" = String, Path)),
    responses((status = 200, body = Option<ConnectionView>)))]
pub async fn meta_connection(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let owner = path.into_inner();
    let key = st.cx.secrets.clone();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| connection::view(c, key.as_ref(), &owner)).await?))
}

/// removeMetaConnection: forgets the owner's token, its links and every pixel it set.
#[utoipa::path(delete, path = "/v1/meta/owners/{ownerKey}", tag = "meta", security(("hostKey" = [])),
    params(("ownerKey" = String, Path)), responses((status = 200, body = Removed)))]
pub async fn remove_meta_connection(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let owner = path.into_inner();
    let removed = st.cx.write(move |c| connection::remove(c, &owner)).await?;
    Ok(HttpResponse::Ok().json(removed))
}

/// linkSiteAdAccount: one ad account feeds one site (CONFLICT otherwise).
#[utoipa::path(post, path = "/v1/sites/{siteId}/ad-accounts", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = LinkAdAccount,
    responses((status = 200, body = Link), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn link_site_ad_account(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<LinkAdAccount>,
) -> Result<HttpResponse> {
    let (site, input) = (path.into_inner(), body.into_inner());
    links::check_link(&input)?;
    let now = st.now();
    let link = st.cx.write(move |c| links::link(c, now, &site, input)).await?;
    Ok(HttpResponse::Ok().json(link))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OwnerQuery {
    /// Acting for this owner: what another owner made is CONFLICT.
    owner_key: Option<String>,
}

#[derive(Deserialize)]
pub struct LinkPath {
    #[serde(rename = "siteId")]
    site_id: String,
    #[serde(rename = "adAccountId")]
    ad_account_id: String,
}

/// unlinkSiteAdAccount: stops the account feeding the site.
#[utoipa::path(delete, path = "/v1/sites/{siteId}/ad-accounts/{adAccountId}", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path), ("adAccountId" = String, Path), OwnerQuery),
    responses((status = 200, body = Removed), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn unlink_site_ad_account(
    st: web::Data<AppState>,
    path: web::Path<LinkPath>,
    q: web::Query<OwnerQuery>,
) -> Result<HttpResponse> {
    let (p, owner) = (path.into_inner(), q.into_inner().owner_key);
    let removed = st.cx.write(move |c| links::unlink(c, &p.site_id, &p.ad_account_id, owner.as_deref())).await?;
    Ok(HttpResponse::Ok().json(removed))
}

/// setSitePixel: `{ownerKey}` takes a pixel of that connection's listing; `{accessToken}` its own token.
#[utoipa::path(put, path = "/v1/sites/{siteId}/pixel", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = SetSitePixel,
    responses((status = 200, body = Pixel), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn set_site_pixel(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<SetSitePixel>,
) -> Result<HttpResponse> {
    Ok(HttpResponse::Ok().json(links::set_pixel(&st.cx, &path.into_inner(), body.into_inner()).await?))
}

/// removeSitePixel: forgets the site's pixel.
#[utoipa::path(delete, path = "/v1/sites/{siteId}/pixel", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path), OwnerQuery),
    responses((status = 200, body = Removed), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn remove_site_pixel(
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<OwnerQuery>,
) -> Result<HttpResponse> {
    let (site, owner) = (path.into_inner(), q.into_inner().owner_key);
    Ok(HttpResponse::Ok().json(st.cx.write_plain(move |c| links::remove_pixel(c, &site, owner.as_deref())).await?))
}

/// removeFederatedMetaConnection: forgets the owner `rastro:connection:<connectionId>`.
#[utoipa::path(delete, path = "/v1/federation/connections/{connectionId}/meta", tag = "meta", security(("hostKey" = [])),
    params(("connectionId" = String, Path)), responses((status = 200, body = Removed)))]
pub async fn remove_federated_meta_connection(
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path.into_inner();
    crate::service::federation::grants::check_connection_id(&id)?;
    let owner = connection::federated_owner(&id);
    let removed = st.cx.write(move |c| connection::remove(c, &owner)).await?;
    Ok(HttpResponse::Ok().json(removed))
}

/// metaUnlinkPreview: what unlinking takes out of the site's reports.
#[utoipa::path(get, path = "/v1/sites/{siteId}/ad-accounts/{adAccountId}/unlink-preview", tag = "meta",
    security(("hostKey" = [])), params(("siteId" = String, Path), ("adAccountId" = String, Path)),
    responses((status = 200, body = UnlinkPreview), (status = 404, body = ErrorBody)))]
pub async fn meta_unlink_preview(st: web::Data<AppState>, path: web::Path<LinkPath>) -> Result<HttpResponse> {
    let p = path.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| sync::unlink_preview(c, &p.site_id, &p.ad_account_id)).await?))
}

/// syncMetaNow: the site's accounts sync at once, or right after the run in flight.
#[utoipa::path(post, path = "/v1/sites/{siteId}/meta/sync", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path)), responses((status = 200, body = SyncNowAnswer), (status = 404, body = ErrorBody)))]
pub async fn sync_meta_now(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let (site, now) = (path.into_inner(), st.now());
    let answer = st.cx.write(move |c| sync::sync_now(c, now, &site)).await?;
    Ok(HttpResponse::Ok().json(answer))
}

/// metaStatus: per site, its ad accounts and their sync, the pixel, the conversions. Never a token.
#[utoipa::path(post, path = "/v1/meta/status", tag = "meta", security(("hostKey" = [])), request_body = MetaStatusArgs,
    responses((status = 200, body = Vec<SiteStatus>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn meta_status(
    st: web::Data<AppState>,
    body: crate::http::json::Json<MetaStatusArgs>,
) -> Result<HttpResponse> {
    let answer = crate::service::meta::status::status_cached(&st.cx, body.into_inner()).await?;
    Ok(HttpResponse::Ok().json(&*answer))
}
