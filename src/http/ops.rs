//! Operational routes without auth: liveness with a database check, and the
//! OpenAPI document generated from the handlers' own types.

use actix_web::{HttpResponse, web};
use diesel::connection::SimpleConnection;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

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
    st.db.run(|c| c.batch_execute("SELECT 1").map_err(|_| Error::unavailable("database unreachable"))).await?;
    Ok(HttpResponse::Ok().json(Health { status: "ok", database: "ok" }))
}

pub async fn openapi() -> HttpResponse {
    HttpResponse::Ok().json(super::openapi::ApiDoc::openapi())
}
