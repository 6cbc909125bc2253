//! The web-analytics functions on the host API, for a host's own dashboard
//! (those the manifest lists, MAN-01): `POST /v1/analytics/{name}` with
//! the host key runs the federated function of that name with the same
//! arguments and answer, as a caller trusted with every site it names and
//! with the configure scope. The leads and Meta functions have their own
//! host routes and are not served here.

use actix_web::{HttpResponse, web};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::api::{self, Caller, Function};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/analytics/{name}", web::post().to(call));
}

/// Runs the web-analytics function `name` (`overview`, `goalsReport`,
/// `upsertGoal`, …) with the JSON args as body; the answer is the function's value.
#[utoipa::path(post, path = "/v1/analytics/{name}", tag = "analytics", security(("hostKey" = [])),
    params(("name" = String, Path, description = "A web-analytics function of the manifest (overview … disableRetentionPolicy)")),
    request_body(content = Object, description = "The function's arguments, as on the federated API"),
    responses((status = 200, description = "The function's value"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)))]
pub async fn call(st: web::Data<AppState>, path: web::Path<String>, body: web::Json<Value>) -> Result<HttpResponse> {
    let function = Function::parse(&path)
        .filter(|f| f.is_web_analytics() && st.cx.capabilities().serves(f.spec().capability))
        .ok_or_else(|| Error::not_found("no such web-analytics function"))?;
    let args = body.into_inner();
    let caller = Caller::trusted("host", "host".into(), &args);
    let reply = api::call(&st.cx, Some(&caller), function, args).await?;
    Ok(HttpResponse::Ok().json(reply.value()))
}
