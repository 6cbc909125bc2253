//! The host API's identified-people routes (rules PPL-01 to PPL-13): identify
//! (serving the seed's `identifyVisitor` and `identifyVisitorHttpAction`) and
//! forgetting a person on a site. The `externalId` is never answered or logged.

use actix_web::{HttpResponse, web};
use serde::Serialize;

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::http::json::Json;
use crate::service::analytics::people::identify::{self, Identify, IdentifyAnswer};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites/{siteId}/analytics/identify", web::post().to(identify_visitor))
        .route("/sites/{siteId}/analytics/people/{visitorId}", web::delete().to(forget_person));
}

/// Identify: 201 when the site gains a profile, else 200 (rules PPL-01 to
/// PPL-08); 503 `SECRETS_KEY_MISSING` without `RASTRO_SECRETS_KEY`.
#[utoipa::path(post, path = "/v1/sites/{siteId}/analytics/identify", tag = "analytics", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = Identify,
    responses((status = 201, body = IdentifyAnswer, description = "The site gained a profile"),
        (status = 200, body = IdentifyAnswer, description = "The site had this person's profile"),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn identify_visitor(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<Identify>,
) -> Result<HttpResponse> {
    let site_id = path.into_inner();
    let answer = identify::identify(&st.cx, &site_id, body.into_inner()).await?;
    Ok(if answer.created { HttpResponse::Created() } else { HttpResponse::Ok() }.json(answer))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ForgetAnswer {
    /// False when the site had no profile of that id.
    pub removed: bool,
}

/// Forgets a person on a site (rules PPL-12, PPL-13): `{removed}`.
#[utoipa::path(delete, path = "/v1/sites/{siteId}/analytics/people/{visitorId}", tag = "analytics",
    security(("hostKey" = [])), params(("siteId" = String, Path), ("visitorId" = String, Path)),
    responses((status = 200, body = ForgetAnswer), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn forget_person(st: web::Data<AppState>, path: web::Path<(String, String)>) -> Result<HttpResponse> {
    let (site_id, visitor_id) = path.into_inner();
    let removed = identify::forget(&st.cx, &site_id, &visitor_id).await?;
    Ok(HttpResponse::Ok().json(ForgetAnswer { removed }))
}
