//! Sign-in, sign-out and "who am I" (with the page's settings).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::session;
use crate::error::Result;
use crate::service::meta::connection::SecretString;
use crate::service::operators::{self, Operator, SESSION_TTL_MS};
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    name: String,
    /// Never logged, never answered.
    password: SecretString,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SignedIn<'a> {
    operator: &'a Operator,
    csrf_token: &'a str,
}

/// What the sign-in limit counts by: the client's address as the tracker
/// resolves it (the TCP peer, or behind a `RASTRO_TRUSTED_PROXIES` proxy the
/// `X-Forwarded-For` hop; an untrusted peer's header is ignored), as its
/// rate-limit key (an IPv6 host counts per /64).
fn client(st: &AppState, req: &HttpRequest) -> String {
    format!("{:x}", crate::net::rate_key(crate::http::tracker::client_ip(st, req)))
}

pub async fn sign_in(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<SignIn>,
) -> Result<HttpResponse> {
    let SignIn { name, password } = body.into_inner();
    let (cookie, s) = operators::sign_in(&st.cx, st.now(), &name, password.0, &client(&st, &req)).await?;
    tracing::info!(operator = %s.operator.name, "dashboard sign-in");
    let set = session::set_cookie(&req, Some(cookie.expose()), SESSION_TTL_MS / 1000);
    Ok(HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, set))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(SignedIn { operator: &s.operator, csrf_token: &s.csrf_token }))
}

pub async fn sign_out(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    // The session and the CSRF token were checked by `session::require`.
    session::signed_in(&req)?;
    if let Some(raw) = session::cookie_value(&req) {
        operators::sign_out(&st.cx, &raw).await?;
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::SET_COOKIE, session::set_cookie(&req, None, 0)))
        .json(json!({"signedOut": true})))
}

/// The Facebook Login for Business dialog the popup opens, or null when the
/// login cannot run (no app id, and not the fake).
fn login(st: &AppState) -> serde_json::Value {
    if let Some(fake) = &st.fake {
        return json!({
            "dialogUrl": format!("{}/{}/dialog/oauth", fake.base_url, crate::meta::graph::GRAPH_VERSION),
            // The start-up wires the fake's own app in as the Meta app.
            "clientId": st.cx.meta_app.as_ref().map(|a| a.id.clone()),
            "configId": "fake-config",
        });
    }
    match (&st.cx.config.meta_app_id, &st.cx.config.meta_app_secret) {
        (Some(app), Some(_)) => json!({
            "dialogUrl": format!("https://www.facebook.com/{}/dialog/oauth", crate::meta::graph::GRAPH_VERSION),
            "clientId": app,
            "configId": st.cx.config.meta_login_config_id,
        }),
        _ => serde_json::Value::Null,
    }
}

/// Who is signed in, the CSRF token for writes, the server's clock (the page
/// computes its ranges from it) and the page's settings.
pub async fn whoami(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    let s = session::signed_in(&req)?;
    let c = &st.cx.config;
    Ok(HttpResponse::Ok().insert_header((header::CACHE_CONTROL, "no-store")).json(json!({
        "operator": s.operator,
        "csrfToken": s.csrf_token,
        "now": st.now(),
        "audience": c.dashboard_audience,
        "productName": c.dashboard_product_name,
        "partner": c.dashboard_partner,
        "fakeMeta": st.fake.is_some(),
        // Meta Lead Ads' screens show only while the capability is on.
        "leadAds": st.cx.capabilities().serves(crate::service::api::Capability::MetaLeads),
        "login": login(&st),
    })))
}
