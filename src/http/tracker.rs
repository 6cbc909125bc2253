//! The HTTP-actions side of web analytics (rules TRK-01 to TRK-03, TRK-11), open to anyone:
//! `GET /rastro/health`, `GET /rastro/tracker.js` and `POST /rastro/events`
//! (with its CORS preflight). Every answer carries `Access-Control-Allow-Origin: *`
//! and no credentials.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use diesel::connection::SimpleConnection;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::AppState;
use crate::error::Error;
use crate::service::analytics::ingest::{self, Refusal};

/// The tracker, minified and committed (`tracker/dist`, rebuilt by CI from `tracker/src`).
pub const TRACKER_JS: &[u8] = include_bytes!("../../tracker/dist/tracker.js");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/rastro/health", web::get().to(health))
        .route("/rastro/tracker.js", web::get().to(tracker_js))
        .route("/rastro/events", web::post().to(events))
        .route("/rastro/events", web::method(actix_web::http::Method::OPTIONS).to(preflight));
}

fn cors(mut res: HttpResponse) -> HttpResponse {
    res.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    res
}

/// `GET /rastro/health` (rule TRK-01).
#[utoipa::path(get, path = "/rastro/health", tag = "analytics",
    responses((status = 200, description = "`{status, version, features}`"), (status = 503, body = super::errors::ErrorBody)))]
pub async fn health(st: web::Data<AppState>) -> HttpResponse {
    let reachable =
        st.cx.read(|c| c.batch_execute("SELECT 1").map_err(|_| Error::unavailable("database unreachable"))).await;
    cors(match reachable {
        Ok(()) => HttpResponse::Ok().json(json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "features": features(&st),
        })),
        Err(e) => e.error_response(),
    })
}

/// What this host's tracking serves; `siteMap` and `trackedLinks` only while
/// their capabilities are on (rule TRK-02).
fn features(st: &AppState) -> serde_json::Value {
    // `import` is the host API's NDJSON import (IMP-01), always served.
    let mut f = json!({"cookieless": true, "vitals": true, "identify": true, "import": true});
    // The site map's rollups are always written; the capability shows them (§3.1).
    if st.cx.capabilities().serves(crate::service::api::Capability::SiteMap) {
        f["siteMap"] = json!("dailyRollup");
    }
    if st.cx.capabilities().serves(crate::service::api::Capability::TrackedLinks) {
        f["trackedLinks"] = json!(true);
    }
    f
}

/// The tracker's strong ETag: a digest of its bytes.
fn etag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let digest = Sha256::digest(TRACKER_JS);
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("\"{hex}\"")
    })
}

/// `GET /rastro/tracker.js` (rule TRK-03): cacheable for an hour, revalidated by ETag.
#[utoipa::path(get, path = "/rastro/tracker.js", tag = "analytics",
    responses((status = 200, content_type = "application/javascript", body = String), (status = 304, description = "Not modified (If-None-Match)")))]
pub async fn tracker_js(req: HttpRequest) -> HttpResponse {
    let tag = etag();
    let matches = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    let mut res = if matches { HttpResponse::NotModified() } else { HttpResponse::Ok() };
    res.insert_header((header::ETAG, tag)).insert_header((header::CACHE_CONTROL, "public, max-age=3600"));
    cors(if matches {
        res.finish()
    } else {
        res.content_type("application/javascript; charset=utf-8").body(TRACKER_JS)
    })
}

/// The CORS preflight of `POST /rastro/events` (rule TRK-11).
pub async fn preflight() -> HttpResponse {
    cors(
        HttpResponse::NoContent()
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "POST"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, "Content-Type"))
            .insert_header((header::ACCESS_CONTROL_MAX_AGE, "86400"))
            .finish(),
    )
}

fn header_str(req: &HttpRequest, name: header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The client's address: the socket peer, or behind a trusted proxy the
/// `X-Forwarded-For` hop (rule TRK-27). Used for limits and the cookieless
/// id only; never stored or logged.
pub(crate) fn client_ip(st: &AppState, req: &HttpRequest) -> IpAddr {
    let peer = req.peer_addr().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
    crate::net::client_ip(
        peer,
        header_str(req, header::HeaderName::from_static("x-forwarded-for")),
        &st.cx.config.trusted_proxies,
    )
}

fn refused(r: Refusal) -> HttpResponse {
    let mut res = r.error.error_response();
    if let Some(secs) = r.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    cors(res)
}

/// `POST /rastro/events` (§3.3): JSON or text/plain with any parameters.
#[utoipa::path(post, path = "/rastro/events", tag = "analytics",
    request_body(content = TrackerBatch, description = "A tracker batch (also sent as text/plain); unknown fields are ignored"),
    responses((status = 200, body = ingest::Answer, description = "accepted + rejected + bot = the events sent"),
        (status = 400, body = super::errors::ErrorBody), (status = 404, body = super::errors::ErrorBody),
        (status = 413, body = super::errors::ErrorBody), (status = 429, body = super::errors::ErrorBody)))]
pub async fn events(st: web::Data<AppState>, req: HttpRequest, body: web::Payload) -> HttpResponse {
    // Check 1: the body's size (413), read under the body deadline.
    let bytes = match super::body::read(body, st.cx.config.tracker_body_limit_bytes).await {
        Ok(b) => b,
        Err(e) => return refused(e.into()),
    };
    let request = ingest::Request {
        body: &bytes,
        ip: client_ip(&st, &req),
        user_agent: header_str(&req, header::USER_AGENT).unwrap_or(""),
        origin: header_str(&req, header::ORIGIN),
        referer: header_str(&req, header::REFERER),
    };
    match ingest::ingest(&st.cx, request).await {
        Ok(answer) => cors(HttpResponse::Ok().json(answer)),
        Err(r) => refused(r),
    }
}

/// The documented shape of a tracker batch (rules TRK-13, TRK-21); the handler
/// reads the body itself, so a cached older tracker's extra fields pass.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct TrackerBatch {
    /// An existing site's id.
    // Its limits are every site id's, added with the others' (`openapi_contract::rule`).
    site_id: String,
    /// `[A-Za-z0-9_-]{8,64}`, not starting `c_` (ids the server derives).
    #[schema(pattern = "^([A-Za-bd-z0-9_-][A-Za-z0-9_-]{7,63}|c[A-Za-z0-9-][A-Za-z0-9_-]{6,62})$")]
    visitor_id: Option<String>,
    /// The client's clock at send, epoch ms (a whole number, `438.0` too).
    sent_at: Option<i64>,
    hash: Option<bool>,
    bot: Option<bool>,
    language: Option<String>,
    /// 1–50 events: pageview, event, vitals, engagement; each checked alone (a bad one is counted in `rejected`).
    #[schema(min_items = 1, max_items = 50)]
    events: Vec<serde_json::Value>,
}
