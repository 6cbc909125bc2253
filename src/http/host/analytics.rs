//! The host API's web-analytics routes: the import and the export of
//! historical events (rules IMP-01, IMP-08), NDJSON both ways.

use actix_web::http::header::CONTENT_TYPE;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, mime, web};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::http::AppState;
use crate::http::errors::ErrorBody;
use crate::http::paged_body;
use crate::service::analytics::{ingest::export, ingest::import};
use crate::service::sites;
use crate::service::validate;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sites/{siteId}/analytics/import", web::post().to(import_events))
        .route("/sites/{siteId}/analytics/export", web::get().to(export_events));
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// 1–128 of `[A-Za-z0-9_.:-]`: a repeat with the same body answers the first answer.
    import_id: String,
}

/// `POST /v1/sites/{siteId}/analytics/import?importId=`: 201 when stored, 200
/// for a repeat of the same body (rules IMP-01 to IMP-07).
#[utoipa::path(post, path = "/v1/sites/{siteId}/analytics/import", tag = "analytics", security(("hostKey" = [])),
    params(("siteId" = String, Path), ImportQuery),
    request_body(content = Vec<serde_json::Value>, content_type = "application/json",
        description = "1–10,000 events as a JSON array, or as NDJSON (`application/x-ndjson`, one JSON object a line)"),
    responses((status = 201, body = import::ImportAnswer), (status = 200, body = import::ImportAnswer, description = "The first answer to this importId and body"),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn import_events(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    q: web::Query<ImportQuery>,
    body: web::Payload,
) -> Result<HttpResponse> {
    let mime = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<mime::Mime>().ok());
    let ndjson = match &mime {
        Some(m) if m.type_() == mime::APPLICATION && m.subtype() == "x-ndjson" => true,
        Some(m) if crate::http::body::json_mime(m) => false,
        _ => {
            return Err(Error::new(
                crate::error::Code::UnsupportedMediaType,
                "the body must be application/x-ndjson or a JSON array (application/json)",
            ));
        }
    };
    import::check_import_id(&q.import_id)?;
    // The site first: an unknown one is 404 whatever the body.
    let site = path.clone();
    st.cx.read(move |c| sites::require(c, &site).map(|_| ())).await?;
    let bytes = crate::http::body::read(body, st.cx.config.import_body_limit_bytes).await?;
    let site_id = path.into_inner();
    let answer = import::import(&st.cx, &site_id, &q.import_id, &bytes, ndjson).await?;
    Ok(if answer.created { HttpResponse::Created() } else { HttpResponse::Ok() }.json(answer))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Epoch ms, inclusive.
    from: i64,
    /// Epoch ms, inclusive; at most 366 UTC days after `from`.
    to: i64,
}

/// `GET /v1/sites/{siteId}/analytics/export?from&to` (rule IMP-08): streamed.
#[utoipa::path(get, path = "/v1/sites/{siteId}/analytics/export", tag = "analytics", security(("hostKey" = [])),
    params(("siteId" = String, Path), ExportQuery),
    responses((status = 200, content_type = "application/x-ndjson", body = String,
        description = "The site's events of the range in the import's format plus eventId and sessionId"),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn export_events(
    st: web::Data<AppState>,
    path: web::Path<String>,
    q: web::Query<ExportQuery>,
) -> Result<HttpResponse> {
    let (site_id, from, to) = (path.into_inner(), q.from, q.to);
    validate::range(from, to, 366)?;
    let sid = site_id.clone();
    st.cx.read(move |c| sites::require(c, &sid).map(|_| ())).await?;
    let cx = st.cx.clone();
    let body = paged_body::paged(export::Cursor::default(), move |mut cur| {
        let (cx, site) = (cx.clone(), site_id.clone());
        async move {
            let page = cx.read(move |c| export::next_page(c, &site, from, to, &mut cur).map(|p| (p, cur))).await?;
            Ok(page.0.map(|text| (Bytes::from(text), page.1)))
        }
    });
    Ok(HttpResponse::Ok().content_type("application/x-ndjson").streaming(body))
}
