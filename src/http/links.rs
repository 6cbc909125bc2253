//! `GET /rastro/l/{siteId}/{slug}` (and `HEAD`): a tracked link's redirect
//! (rules TLINK-05 to TLINK-08), open to anyone. A human request adds a click (one per
//! client address and link within `RASTRO_LINK_CLICK_WINDOW`), a bot UA or a
//! `HEAD` a bot hit; the address stays in memory, never stored or logged.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};

use super::AppState;
use crate::clock::utc_day_start;
use crate::error::Error;
use crate::service::analytics::ingest::agent;
use crate::service::analytics::links::redirect::{self, Hits};
use crate::service::api::Capability;
use crate::service::effects::{Effects, Written};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/rastro/l/{siteId}/{slug}", web::get().to(redirect))
        .route("/rastro/l/{siteId}/{slug}", web::head().to(redirect));
}

fn no_store(mut res: HttpResponse) -> HttpResponse {
    res.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    res
}

fn not_found() -> HttpResponse {
    no_store(Error::not_found("no such tracked link").error_response())
}

/// The redirect (rules TLINK-05 to TLINK-08, TLINK-10).
#[utoipa::path(get, path = "/rastro/l/{siteId}/{slug}", tag = "analytics",
    params(("siteId" = String, Path, description = "The link's site"), ("slug" = String, Path, description = "The link's slug")),
    responses((status = 302, description = "To the destination plus utm_source, utm_medium, utm_campaign and the request's own query parameters where it lacks them; `Cache-Control: no-store`",
            headers(("Location" = String, description = "The destination"), ("Cache-Control" = String, description = "no-store"))),
        (status = 404, body = super::errors::ErrorBody, description = "Unknown, disabled or deleted link, a destination off the site's domains, or tracked links off")))]
pub async fn redirect(st: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    if !st.cx.capabilities().serves(Capability::TrackedLinks) {
        return not_found();
    }
    let site_id = req.match_info().get("siteId").unwrap_or_default().to_string();
    let slug = req.match_info().get("slug").unwrap_or_default().to_string();
    let query = req.query_string().to_string();
    let site = site_id.clone();
    let target = match st.cx.read(move |c| redirect::resolve(c, &site, &slug, &query)).await {
        Ok(Some(t)) => t,
        Ok(None) => return not_found(),
        Err(e) => return e.error_response(),
    };
    let now = st.now();
    let ua = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let bot = req.method() == Method::HEAD || agent::is_bot(ua);
    let click = !bot && st.cx.analytics.clicks.admit(&target.link_id, super::tracker::client_ip(&st, &req), now);
    if bot || click {
        let hits = Hits {
            site_id,
            link_id: target.link_id,
            day: utc_day_start(now),
            clicks: i64::from(click),
            bot_hits: i64::from(bot),
        };
        let counted = st
            .cx
            .write(move |c| {
                redirect::record(c, &hits)?;
                Ok(Written::new((), Effects::quiet()))
            })
            .await;
        // The visitor goes on even when the count could not be written.
        if let Err(e) = counted {
            tracing::warn!(code = e.code.as_str(), "a tracked link's hit was not counted");
        }
    }
    no_store(HttpResponse::Found().insert_header((header::LOCATION, target.location)).finish())
}
