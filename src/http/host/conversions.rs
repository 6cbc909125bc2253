//! The host API's conversions read: `meta.conversions`. Never a hash.

use actix_web::{HttpResponse, web};
use serde::Deserialize;

use crate::error::Result;
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::service::meta::conversions::{self, ConversionRow};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites/{siteId}/meta/conversions", web::get().to(meta_conversions));
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ConversionsQuery {
    /// 1–50, default 50.
    limit: Option<i64>,
    /// The last row's createdAt: the page holds conversions strictly before it
    /// (with `beforeEventId`, also those of that millisecond with a smaller eventId).
    before: Option<i64>,
    /// The last row's eventId, with `before`.
    before_event_id: Option<String>,
}

/// metaConversions: the conversions queued for or sent to the site's pixel, newest first.
#[utoipa::path(get, path = "/v1/sites/{siteId}/meta/conversions", tag = "meta", security(("hostKey" = [])),
    params(("siteId" = String, Path), ConversionsQuery),
    responses((status = 200, body = Vec<ConversionRow>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn meta_conversions(
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<ConversionsQuery>,
) -> Result<HttpResponse> {
    let (site, q) = (path.into_inner(), q.into_inner());
    let rows =
        st.cx.read(move |c| conversions::list(c, &site, q.limit, q.before, q.before_event_id.as_deref())).await?;
    Ok(HttpResponse::Ok().json(rows))
}
