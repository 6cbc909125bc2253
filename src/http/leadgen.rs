//! Meta's leadgen webhook (rules LA-05 to LA-07), open to Meta: the
//! subscription check `GET /rastro/meta/leadgen` and the signed delivery
//! `POST /rastro/meta/leadgen`. Both answer 404 while `metaLeads` is off. The
//! delivery is read whole (the body limit, the body deadline), authenticated
//! over its exact bytes, and answered only after its receipts committed.
//! No answer, log line or metric carries a secret or a lead's data.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::AppState;
use crate::error::Result;
use crate::service::meta::lead_ads::receive;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/rastro/meta/leadgen", web::get().to(verify)).route("/rastro/meta/leadgen", web::post().to(deliver));
}

#[derive(Debug, Deserialize)]
pub struct VerifyQuery {
    #[serde(rename = "hub.mode")]
    mode: Option<String>,
    #[serde(rename = "hub.verify_token")]
    verify_token: Option<String>,
    #[serde(rename = "hub.challenge")]
    challenge: Option<String>,
}

/// The subscription check: the challenge as text/plain for the right verify token, else 403 (LA-05).
pub async fn verify(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    // Read leniently: an unknown or repeated parameter is the check failing, never a 400 quoting it.
    let q = web::Query::<VerifyQuery>::from_query(req.query_string()).map(|q| q.into_inner()).unwrap_or(VerifyQuery {
        mode: None,
        verify_token: None,
        challenge: None,
    });
    let challenge = receive::verify(&st.cx, q.mode.as_deref(), q.verify_token.as_deref(), q.challenge.as_deref())?;
    Ok(HttpResponse::Ok().content_type("text/plain; charset=utf-8").body(challenge))
}

/// A delivery: `{received, duplicates, ignored}` once its receipts are durable (LA-06, LA-07).
pub async fn deliver(st: web::Data<AppState>, req: HttpRequest, body: web::Payload) -> Result<HttpResponse> {
    let signature = req.headers().get("x-hub-signature-256").and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = super::body::read(body, st.cx.config.body_limit_bytes).await?;
    let forwarded = forwarded(&st, &req).await;
    let answer = receive::receive(&st.cx, &bytes, signature.as_deref(), forwarded).await?;
    st.metrics.leadgen(answer.received, answer.duplicates, answer.ignored);
    Ok(HttpResponse::Ok().json(answer))
}

/// Whether the request carries a federation JWT (issuer, audience, keys of
/// the federated API) with the `meta:leadgen` permission: a control plane
/// forwarding Meta's delivery (LA-06). Any failure is simply "not forwarded".
async fn forwarded(st: &AppState, req: &HttpRequest) -> bool {
    let Some(token) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
    else {
        return false;
    };
    match st.federation.verifier.verify(token.trim(), st.now()).await {
        Ok(identity) => identity.permissions.contains(receive::PERM_LEADGEN),
        Err(_) => false,
    }
}
