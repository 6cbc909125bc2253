//! HTTP: authenticates and decodes, nothing else. `build_app` is the one place
//! the application is assembled, for `main` and for the tests alike.

pub mod auth;
pub mod body;
pub mod connections;
pub mod csv;
pub mod dashboard;
pub mod errors;
pub mod federation;
pub mod host;
pub mod json;
pub mod leadgen;
pub mod links;
pub mod metrics;
pub mod openapi;
pub mod openapi_contract;
pub mod openapi_functions;
pub mod ops;
pub mod paged_body;
pub mod routes;
pub mod tracker;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};

pub use crate::state::AppState;

pub fn build_app(
    state: AppState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let limit = state.cx.config.body_limit_bytes;
    App::new()
        .app_data(web::Data::new(state))
        .app_data(
            web::JsonConfig::default()
                .limit(limit)
                .content_type_required(true)
                .content_type(|m| body::json_mime(&m))
                .error_handler(errors::json_error),
        )
        .app_data(web::PayloadConfig::default().limit(limit))
        .app_data(web::QueryConfig::default().error_handler(errors::query_error))
        .app_data(web::PathConfig::default().error_handler(errors::path_error))
        // Reads nothing: puts the deadline on bodies read later (after the credentials).
        .wrap(from_fn(body::deadline))
        .wrap(from_fn(metrics::track))
        .route("/health", web::get().to(ops::health))
        .route("/metrics", web::get().to(metrics::metrics_route))
        .route("/openapi.json", web::get().to(openapi_contract::serve))
        .route("/media/thumbnails/{name}", web::get().to(ops::thumbnail))
        .service(web::scope("/v1").wrap(from_fn(auth::require_host_key)).configure(host::routes))
        .configure(tracker::routes)
        .configure(links::routes)
        .configure(leadgen::routes)
        .configure(federation::routes)
        .configure(dashboard::routes)
        .default_service(web::to(routes::not_found))
}
