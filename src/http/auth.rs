//! The host key: `Authorization: Bearer <key>`, compared in constant time with
//! every configured key (no early exit), so timing tells nothing of a key.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use subtle::ConstantTimeEq;

use super::AppState;
use crate::error::{Code, Error};

pub fn bearer(req: &ServiceRequest) -> Option<&str> {
    let value = req.headers().get(actix_web::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub fn host_key_matches(keys: &[crate::config::Secret], presented: &str) -> bool {
    let mut ok = subtle::Choice::from(0u8);
    for key in keys {
        ok |= key.expose().as_bytes().ct_eq(presented.as_bytes());
    }
    bool::from(ok)
}

pub async fn require_host_key(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let allowed = match req.app_data::<web::Data<AppState>>() {
        Some(st) => bearer(&req).is_some_and(|k| host_key_matches(&st.cx.config.host_api_keys, k)),
        None => false,
    };
    if !allowed {
        let err = Error::new(Code::Unauthenticated, "a valid host key is required (Authorization: Bearer <key>)");
        return Ok(req.into_response(HttpResponse::from_error(err)).map_into_right_body());
    }
    next.call(req).await.map(ServiceResponse::map_into_left_body)
}

#[cfg(test)]
mod tests {
    use super::host_key_matches;
    use crate::config::Secret;

    #[test]
    fn any_configured_key_opens_and_nothing_else() {
        let keys = vec![Secret::new("first-key-0123456789"), Secret::new("second-key-0123456789")];
        assert!(host_key_matches(&keys, "second-key-0123456789"));
        assert!(!host_key_matches(&keys, "second-key-012345678"));
        assert!(!host_key_matches(&keys, ""));
        assert!(!host_key_matches(&[], "anything"));
    }
}
