//! The host API's Lead Ads routes (LEADADS.md §3), 404 while `metaLeads` is
//! off: the site's form-lead handler (`PUT`/`DELETE
//! /v1/sites/{siteId}/meta/form-lead-handler`, host only) and every Lead Ads
//! function at `POST /v1/meta/owners/{ownerKey}/lead-ads/{name}`, run as on
//! the federated API for that owner, trusted with every site it names. The
//! handler's secret is never answered.

use actix_web::{HttpResponse, web};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::api::{self, Caller, Capability, Function};
use crate::service::meta::lead_ads::handler::{self, HandlerState, SetFormLeadHandler};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites/{siteId}/meta/form-lead-handler", web::put().to(set_form_lead_handler))
        .route("/sites/{siteId}/meta/form-lead-handler", web::delete().to(remove_form_lead_handler))
        .route("/meta/owners/{ownerKey}/lead-ads/{name}", web::post().to(call));
}

fn served(st: &AppState) -> Result<()> {
    if st.cx.capabilities().serves(Capability::MetaLeads) {
        Ok(())
    } else {
        Err(Error::not_found("Meta Lead Ads is off (RASTRO_FEDERATION_META_LEADS)"))
    }
}

/// setFormLeadHandler: where the site's form leads are delivered, signed with the secret (sealed, never answered).
#[utoipa::path(put, path = "/v1/sites/{siteId}/meta/form-lead-handler", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = SetFormLeadHandler,
    responses((status = 200, body = HandlerState), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn set_form_lead_handler(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<SetFormLeadHandler>,
) -> Result<HttpResponse> {
    served(&st)?;
    Ok(HttpResponse::Ok().json(handler::set(&st.cx, &path.into_inner(), body.into_inner()).await?))
}

/// removeFormLeadHandler: later form leads wait (`HANDLER_MISSING`) until a handler is set again.
#[utoipa::path(delete, path = "/v1/sites/{siteId}/meta/form-lead-handler", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path)),
    responses((status = 200, body = HandlerState), (status = 404, body = ErrorBody)))]
pub async fn remove_form_lead_handler(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    served(&st)?;
    Ok(HttpResponse::Ok().json(handler::remove(&st.cx, &path.into_inner()).await?))
}

/// A Lead Ads function for the owner (documented per function by `openapi_functions`).
pub async fn call(
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Json<Value>,
) -> Result<HttpResponse> {
    served(&st)?;
    let (owner, name) = path.into_inner();
    crate::service::validate::text("ownerKey", &owner, 1, 128)?;
    let function = Function::parse(&name)
        .filter(|f| f.spec().capability == Capability::MetaLeads)
        .ok_or_else(|| Error::not_found("no such Lead Ads function"))?;
    let args = body.into_inner();
    let caller = Caller::trusted("host", owner, &args);
    let reply = api::call(&st.cx, Some(&caller), function, args).await?;
    Ok(HttpResponse::Ok().json(reply.value()))
}
