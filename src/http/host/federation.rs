//! The host API's side of federation (runbook phase 2): provisioning and
//! revoking the local grant of a dashboard connection. `DELETE
//! /v1/federation/connections/{connectionId}/meta` lives with the Meta routes.

use actix_web::{HttpResponse, web};

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::federation::grants::{self, Grant, ProvisionGrant, RevokedGrant};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/federation/grants/{connectionId}", web::put().to(provision_connection))
        .route("/federation/grants/{connectionId}", web::get().to(get_grant))
        .route("/federation/grants/{connectionId}/revoke", web::post().to(revoke_connection));
}

/// provisionConnection: 1–10 unique sites, each owned by `ownerId`; an upsert that clears `revokedAt`.
#[utoipa::path(put, path = "/v1/federation/grants/{connectionId}", tag = "federation-host", security(("hostKey" = [])),
    params(("connectionId" = String, Path)), request_body = ProvisionGrant,
    responses((status = 201, body = Grant), (status = 200, body = Grant), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "FEDERATION_SITE_DENIED: a site another owner owns"),
        (status = 404, body = ErrorBody)))]
pub async fn provision_connection(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<ProvisionGrant>,
) -> Result<HttpResponse> {
    let (id, input) = (path.into_inner(), body.into_inner());
    let now = st.now();
    let (grant, created) = st.cx.write_plain(move |c| grants::provision(c, now, &id, input)).await?;
    Ok(if created { HttpResponse::Created() } else { HttpResponse::Ok() }.json(grant))
}

/// The connection's grant as stored (revoked ones included).
#[utoipa::path(get, path = "/v1/federation/grants/{connectionId}", tag = "federation-host", security(("hostKey" = [])),
    params(("connectionId" = String, Path)),
    responses((status = 200, body = Grant), (status = 404, body = ErrorBody)))]
pub async fn get_grant(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let id = path.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| grants::get(c, &id)).await?))
}

/// revokeConnection: sets `revokedAt` and forgets the Meta owner `rastro:connection:<id>` in the same transaction.
#[utoipa::path(post, path = "/v1/federation/grants/{connectionId}/revoke", tag = "federation-host", security(("hostKey" = [])),
    params(("connectionId" = String, Path)),
    responses((status = 200, body = RevokedGrant), (status = 404, body = ErrorBody)))]
pub async fn revoke_connection(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let id = path.into_inner();
    let now = st.now();
    let revoked = st.cx.write(move |c| grants::revoke(c, now, &id)).await?;
    Ok(HttpResponse::Ok().json(revoked))
}
