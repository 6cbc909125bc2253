//! The host API (`/v1/...`): authenticated by the host key (see `auth`),
//! decoded here, handled by `service`. Writes go through the group-commit
//! writer; reads run on the pool. One file per area: `sites`, `leads` (with
//! the board and the lead reports), `analytics` (import and export),
//! `ledger`, `functions` (the web-analytics functions), `people`, `meta`,
//! `conversions` and `federation` (local grants).

pub mod analytics;
pub mod conversions;
pub mod federation;
pub mod functions;
pub mod lead_ads;
pub mod leads;
pub mod ledger;
pub mod meta;
pub mod people;
pub mod sites;

use actix_web::{HttpResponse, web};

use crate::http::errors::ErrorBody;

/// Every host route, in the order they are matched.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/ping", web::get().to(ping))
        .configure(sites::routes)
        .configure(leads::routes)
        .configure(crate::http::csv::routes)
        .configure(analytics::routes)
        .configure(ledger::routes)
        .configure(functions::routes)
        .configure(people::routes)
        .configure(meta::routes)
        .configure(lead_ads::routes)
        .configure(conversions::routes)
        .configure(federation::routes);
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Pong {
    ok: bool,
}

/// An authenticated no-op: checks the host key and answers (load tests, probes).
#[utoipa::path(get, path = "/v1/ping", tag = "host", security(("hostKey" = [])),
    responses((status = 200, body = Pong), (status = 401, body = ErrorBody)))]
pub async fn ping() -> HttpResponse {
    HttpResponse::Ok().json(Pong { ok: true })
}
