//! The built-in dashboard for operators: the page under `/`, its files, the
//! Login for Business callback, and its JSON routes under `/dashboard/api`.
//! A reader like the host and federation transports: it signs operators in
//! and calls the same `service` functions (no rule written twice).

pub mod analytics;
pub mod assets;
pub mod auth;
pub mod functions;
pub mod links;
pub mod live_stream;
pub mod people;
pub mod reads;
pub mod session;
pub mod writes;

use actix_web::middleware::from_fn;
use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(assets::index))
        .route("/meta/retorno", web::get().to(assets::callback))
        .route("/dashboard/assets/{name}", web::get().to(assets::asset))
        // The one route open without a session.
        .route("/dashboard/api/signin", web::post().to(auth::sign_in))
        .service(
            web::scope("/dashboard/api")
                .wrap(from_fn(session::require))
                .route("/signout", web::post().to(auth::sign_out))
                .route("/session", web::get().to(auth::whoami))
                .route("/sites", web::get().to(reads::list_sites))
                .route("/reports/leads", web::post().to(reads::leads_report))
                .route("/reports/leads-daily", web::post().to(reads::leads_daily))
                .route("/leads", web::get().to(reads::list_leads))
                .route("/analytics/overview", web::post().to(analytics::overview))
                .route("/analytics/live", web::post().to(analytics::live))
                .route("/live/stream", web::get().to(live_stream::live_stream))
                .route("/analytics/site-map", web::post().to(analytics::site_map))
                .route("/analytics/vitals", web::post().to(analytics::vitals))
                .route("/fn/{name}", web::post().to(functions::call))
                .route("/reports/{name}", web::post().to(reads::dashboard_csv))
                .route("/sites/{siteId}/people", web::get().to(people::list))
                .route("/sites/{siteId}/people/{visitorId}", web::get().to(people::profile))
                .route("/sites/{siteId}/leads/{leadId}/journey", web::get().to(reads::lead_journey))
                .route("/sites/{siteId}/leads.csv", web::get().to(reads::leads_csv))
                .route("/meta/connection", web::get().to(reads::meta_connection))
                .route("/meta/connection", web::put().to(writes::set_connection))
                .route("/meta/connection", web::delete().to(writes::disconnect))
                .route("/meta/connection/code", web::post().to(writes::connect_with_code))
                .route("/meta/connection/refresh", web::post().to(writes::refresh))
                .route("/meta/status", web::post().to(reads::meta_status))
                .route("/conversions", web::get().to(reads::conversions_feed))
                .route("/sites/{siteId}/event-map", web::get().to(reads::event_map))
                .route("/sites/{siteId}/event-map", web::put().to(writes::set_event_map))
                .route("/sites/{siteId}/ad-accounts", web::post().to(writes::link))
                .route("/sites/{siteId}/ad-accounts/{adAccountId}", web::delete().to(writes::unlink))
                .route("/sites/{siteId}/ad-accounts/{adAccountId}/unlink-preview", web::get().to(reads::unlink_preview))
                .route("/sites/{siteId}/pixel", web::put().to(writes::set_pixel))
                .route("/sites/{siteId}/pixel", web::delete().to(writes::remove_pixel))
                .route("/sites/{siteId}/click-ids", web::put().to(writes::set_click_ids))
                .route("/sites/{siteId}/meta/sync", web::post().to(writes::sync_now))
                .route("/sites/{siteId}/links", web::get().to(links::list))
                .route("/sites/{siteId}/links", web::post().to(links::create))
                .route("/sites/{siteId}/links/{linkId}", web::patch().to(links::set_disabled))
                .route("/sites/{siteId}/links/{linkId}", web::delete().to(links::delete)),
        );
}
