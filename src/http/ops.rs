//! Operational routes without auth: liveness with a database check, and the
//! OpenAPI document generated from the handlers' own types.

use actix_web::{HttpResponse, web};
use diesel::connection::SimpleConnection;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use crate::error::{Error, Result};

#[derive(Serialize, ToSchema)]
pub struct Health {
    status: &'static str,
    database: &'static str,
}

#[utoipa::path(get, path = "/health", tag = "ops",
    responses((status = 200, body = Health), (status = 503, body = super::errors::ErrorBody)))]
pub async fn health(st: web::Data<AppState>) -> Result<HttpResponse> {
    st.cx.read(|c| c.batch_execute("SELECT 1").map_err(|_| Error::unavailable("database unreachable"))).await?;
    Ok(HttpResponse::Ok().json(Health { status: "ok", database: "ok" }))
}

/// A thumbnail copied from Meta by the catalog sync (content-addressed, public: the ads' creatives).
#[utoipa::path(get, path = "/media/thumbnails/{name}", tag = "ops", params(("name" = String, Path)),
    responses((status = 200, content_type = "image/*"), (status = 404, body = super::errors::ErrorBody)))]
pub async fn thumbnail(st: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse> {
    let name = path.into_inner();
    let (stem, ext) = name.rsplit_once('.').unwrap_or(("", ""));
    let content_type = match ext {
        "png" => "image/png",
        "jpg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        _ => return Err(Error::not_found("no such thumbnail")),
    };
    if stem.len() != 64 || !stem.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::not_found("no such thumbnail"));
    }
    let path = st.cx.config.data_dir.join("thumbnails").join(&name);
    let bytes = tokio::fs::read(path).await.map_err(|_| Error::not_found("no such thumbnail"))?;
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "public, max-age=31536000, immutable"))
        .body(bytes))
}
