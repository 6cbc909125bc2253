//! The web-analytics and Lead Ads functions for the dashboard's screens (goals,
//! funnels, revenue, affiliates, retention; Pages, forms and their rules):
//! `POST /dashboard/api/fn/{name}` runs the
//! federated function of that name for a signed-in operator over the sites it
//! names. Queries need a session; configure functions and every write need
//! an operator allowed to configure and the CSRF token (as every dashboard write).

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

use super::session::{may_write, signed_in};
use crate::error::{Error, Result};
use crate::service::api::{self, Caller, Function, Kind, Need};
use crate::state::AppState;

pub async fn call(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: crate::http::json::Json<Value>,
) -> Result<HttpResponse> {
    let function = Function::parse(&path)
        .filter(|f| {
            let lead_ads = f.spec().capability == crate::service::api::Capability::MetaLeads;
            (f.is_web_analytics() || lead_ads) && st.cx.capabilities().serves(f.spec().capability)
        })
        .ok_or_else(|| Error::not_found("no such dashboard function"))?;
    let spec = function.spec();
    let session =
        if spec.need == Need::Configure || spec.kind != Kind::Query { may_write(&req)? } else { signed_in(&req)? };
    let args = body.into_inner();
    let caller = Caller::trusted("dashboard", session.operator.owner_key.clone(), &args);
    let reply = api::call(&st.cx, Some(&caller), function, args).await?;
    Ok(HttpResponse::Ok().json(reply.value()))
}
