//! A form-lead handler as a host would run it (LEADADS.md §5.4), served by the
//! fake for the demo and tests, so deliveries travel a real HTTP hop:
//!
//! * `POST /__fake/handler`: a delivery. Answers the next status queued by
//!   `respond` (200 when none) and keeps `{"delivery", "signature", "body",
//!   "status", "receivedAtMs"}` (wall clock).
//! * `POST /__fake/handler/respond` `{"statuses": [503, 400, …]}`: the next
//!   deliveries' answers, in order.
//! * `GET /__fake/handler/deliveries`: what it received, oldest first (the
//!   last 10,000). Never logged: bodies hold a person's answers.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Shared;

/// Deliveries kept (the oldest go first).
const KEPT: usize = 10_000;

/// Registered before the `/__fake` scope of [`super::faults`], which would take the path first.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/__fake/handler")
            .route("", web::post().to(receive))
            .route("/respond", web::post().to(respond))
            .route("/deliveries", web::get().to(deliveries)),
    );
}

async fn receive(state: web::Data<Shared>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut c = state.control();
    let status = c.handler_statuses.pop_front().unwrap_or(200);
    // Wall-clock arrival, for the benchmark's webhook-to-handler time.
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let entry = json!({"delivery": header("x-rastro-delivery"), "signature": header("x-rastro-signature"),
        "body": body, "status": status, "receivedAtMs": at});
    super::push_capped(&mut c.handler_deliveries, entry, KEPT);
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap_or(actix_web::http::StatusCode::OK))
        .json(json!({"status": status}))
}

#[derive(Deserialize)]
struct Respond {
    statuses: Vec<u16>,
}

async fn respond(state: web::Data<Shared>, body: web::Json<Respond>) -> HttpResponse {
    let mut c = state.control();
    c.handler_statuses.extend(body.into_inner().statuses);
    HttpResponse::Ok().json(json!({"queued": c.handler_statuses.len()}))
}

async fn deliveries(state: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(&state.control().handler_deliveries)
}
