//! HTTP: authenticates and decodes, nothing else. `build_app` is the one place
//! the application is assembled, for `main` and for the tests alike.

pub mod auth;
pub mod errors;
pub mod host;
pub mod metrics;
pub mod openapi;
pub mod ops;

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, web};

use crate::clock::SharedClock;
use crate::config::Config;
use crate::db::Db;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub clock: SharedClock,
    pub config: Arc<Config>,
    pub metrics: Arc<metrics::Metrics>,
}

impl AppState {
    pub fn new(db: Db, clock: SharedClock, config: Arc<Config>) -> Self {
        AppState { db, clock, config, metrics: Arc::new(metrics::Metrics::default()) }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }
}

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
    let limit = state.config.body_limit_bytes;
    App::new()
        .app_data(web::Data::new(state))
        .app_data(
            web::JsonConfig::default().limit(limit).content_type_required(false).error_handler(errors::json_error),
        )
        .app_data(web::PayloadConfig::default().limit(limit))
        .app_data(web::QueryConfig::default().error_handler(errors::query_error))
        .app_data(web::PathConfig::default().error_handler(errors::path_error))
        .wrap(from_fn(metrics::track))
        .route("/health", web::get().to(ops::health))
        .route("/metrics", web::get().to(metrics::metrics_route))
        .route("/openapi.json", web::get().to(ops::openapi))
        .service(web::scope("/v1").wrap(from_fn(auth::require_host_key)).configure(host::routes))
        .default_service(web::to(errors::not_found))
}
