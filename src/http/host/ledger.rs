//! The host API's trusted conversion ledger (rules CONV-01 to CONV-07): only the
//! host records conversions; no tracker input can (rule CONV-01).

use actix_web::{HttpResponse, web};

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::analytics::conversions::{self, RecordConversion, Recorded};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites/{siteId}/analytics/conversions", web::post().to(record_conversion));
}

/// Records a conversion once per `(siteId, conversionKey)`: 201 when recorded,
/// 200 with the same `conversionId` for a repeat (rules CONV-01 to CONV-07).
#[utoipa::path(post, path = "/v1/sites/{siteId}/analytics/conversions", tag = "analytics", security(("hostKey" = [])),
    params(("siteId" = String, Path)), request_body = RecordConversion,
    responses((status = 201, body = Recorded), (status = 200, body = Recorded, description = "A repeat of the conversionKey"),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn record_conversion(
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: crate::http::json::Json<RecordConversion>,
) -> Result<HttpResponse> {
    let (site, input) = (path.into_inner(), body.into_inner());
    conversions::check(&input)?;
    let now = st.now();
    let answer = st.cx.write(move |c| conversions::record_written(c, now, &site, input)).await?;
    if answer.created { Ok(HttpResponse::Created().json(answer)) } else { Ok(HttpResponse::Ok().json(answer)) }
}
