//! The dashboard's session cookie and the checks every dashboard route makes:
//! a live session (401), and for a write the CSRF token (403) and the right
//! to configure (403).

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use subtle::ConstantTimeEq;

use crate::error::{Code, Error, Result};
use crate::service::operators::{self, Session};
use crate::state::AppState;

pub const COOKIE: &str = "rastro_sessao";
/// The header the page sends the CSRF token in (a cross-site form cannot set it).
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The session cookie's value, if the request has one.
pub fn cookie_value(req: &HttpRequest) -> Option<String> {
    req.headers().get_all(header::COOKIE).filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == COOKIE && !v.is_empty()).then(|| v.to_string())
    })
}

/// Over https (directly or behind a proxy that says so in
/// X-Forwarded-Proto / Forwarded), the cookie is Secure.
pub fn is_https(req: &HttpRequest) -> bool {
    req.connection_info().scheme().eq_ignore_ascii_case("https")
}

/// The Set-Cookie value that opens (`Some(value)`) or ends (`None`) the session.
pub fn set_cookie(req: &HttpRequest, value: Option<&str>, max_age_secs: i64) -> String {
    let secure = if is_https(req) { "; Secure" } else { "" };
    match value {
        Some(v) => format!("{COOKIE}={v}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure}"),
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
    }
}

fn unauthenticated() -> Error {
    Error::new(Code::Unauthenticated, "sign in to the dashboard first")
}

fn forbidden_csrf() -> Error {
    Error::new(Code::Forbidden, "missing or wrong CSRF token (X-CSRF-Token)")
}

/// Wraps every `/dashboard/api` route but sign-in, before any body is read: a
/// live session (else 401), and on anything but GET the session's CSRF token
/// (else 403). The session rides on the request for the handler.
pub async fn require(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let refused = match check(&req).await {
        Ok(session) => {
            req.extensions_mut().insert(session);
            None
        }
        Err(e) => Some(e),
    };
    if let Some(e) = refused {
        return Ok(req.into_response(HttpResponse::from_error(e)).map_into_right_body());
    }
    next.call(req).await.map(ServiceResponse::map_into_left_body)
}

async fn check(req: &ServiceRequest) -> Result<Session> {
    let st = req.app_data::<web::Data<AppState>>().ok_or_else(unauthenticated)?;
    let raw = cookie_value(req.request()).ok_or_else(unauthenticated)?;
    let session = operators::session(&st.cx, st.now(), &raw).await?.ok_or_else(unauthenticated)?;
    if req.method() != Method::GET && !csrf_ok(req.request(), &session) {
        return Err(forbidden_csrf());
    }
    Ok(session)
}

/// The session `require` found (every route behind it has one).
pub fn signed_in(req: &HttpRequest) -> Result<Session> {
    req.extensions().get::<Session>().cloned().ok_or_else(unauthenticated)
}

/// Whether the request carries the session's CSRF token (constant time).
pub fn csrf_ok(req: &HttpRequest, session: &Session) -> bool {
    let sent = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    !sent.is_empty() && bool::from(sent.as_bytes().ct_eq(session.csrf_token.as_bytes()))
}

/// A write: the operator must be allowed to configure (the session and the
/// CSRF token were checked by `require`).
pub fn may_write(req: &HttpRequest) -> Result<Session> {
    let session = signed_in(req)?;
    if !session.operator.can_configure {
        return Err(Error::new(Code::Forbidden, "this operator may read but not change anything"));
    }
    Ok(session)
}
