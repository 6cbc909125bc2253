//! How an `Error` goes on the wire, and how extractor failures (bad JSON, wrong
//! types, unknown fields, oversized bodies, bad query strings) become one.

use actix_web::error::{JsonPayloadError, PayloadError, QueryPayloadError};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{Code, Error};
pub use crate::service::api::decode::sanitize;

/// Every failure: a stable machine code and a human message.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// One of the documented codes, e.g. `INVALID_ARGUMENT`.
    pub code: String,
    pub message: String,
}

impl ResponseError for Error {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code())
            .json(ErrorBody { code: self.code.as_str().to_string(), message: self.message.clone() })
    }
}

/// A JSON body's failure: its kind and where it is (line and column), never its text.
pub fn json_detail(e: &serde_json::Error) -> String {
    let kind = sanitize(&e.to_string());
    if e.line() == 0 { kind } else { format!("{kind} at line {} column {}", e.line(), e.column()) }
}

pub fn json_error(err: JsonPayloadError, _req: &HttpRequest) -> actix_web::Error {
    let e = match &err {
        JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => {
            Error::new(Code::PayloadTooLarge, "the request body is too large")
        }
        JsonPayloadError::Payload(PayloadError::Overflow) => {
            Error::new(Code::PayloadTooLarge, "the request body is too large")
        }
        JsonPayloadError::Payload(p) if super::body::is_timeout(p) => super::body::timeout_error(),
        JsonPayloadError::ContentType => super::body::unsupported_media_type(),
        JsonPayloadError::Deserialize(d) => Error::invalid(format!("invalid JSON body: {}", json_detail(d))),
        _ => Error::invalid("unreadable request body"),
    };
    e.into()
}

pub fn query_error(err: QueryPayloadError, _req: &HttpRequest) -> actix_web::Error {
    let detail = match &err {
        QueryPayloadError::Deserialize(d) => sanitize(&d.to_string()),
        _ => "unreadable".into(),
    };
    Error::invalid(format!("invalid query string: {detail}")).into()
}

pub fn path_error(_err: actix_web::error::PathError, _req: &HttpRequest) -> actix_web::Error {
    Error::invalid("invalid path parameter").into()
}

/// The `{code, message}` bodies of the answers actix-http's h1 dispatcher
/// writes on its own (vendor/README.md): a request it cannot parse, a head
/// too large, a head that did not arrive in time.
pub fn register_parse_error_bodies() {
    fn body(status: StatusCode) -> Option<(&'static str, actix_web::web::Bytes)> {
        let e = match status.as_u16() {
            400 => Error::invalid("malformed HTTP request"),
            408 => Error::new(Code::RequestTimeout, "the request did not arrive in time"),
            431 => Error::new(Code::HeadersTooLarge, "the request head is too large"),
            _ => Error::new(Code::Internal, "internal error"),
        };
        let json = serde_json::to_vec(&ErrorBody { code: e.code.as_str().to_string(), message: e.message }).ok()?;
        Some(("application/json", json.into()))
    }
    actix_http::set_error_body(body);
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn nothing_the_caller_sent_survives_sanitizing() {
        for (msg, secret) in [
            ("invalid type: string \"EAAB-secret\", expected i64 at line 1 column 9", "EAAB"),
            ("unknown field `accessTokn`, expected one of `leadKey`, `eventId`", "accessTokn"),
            ("invalid value: integer `-5`, expected u64", "-5"),
            ("unknown variant `EAAB-123/x`, expected one of `new`", "EAAB"),
            ("duplicate field `a665a459`", "a665a459"),
            ("some custom message quoting EAABcustom", "EAABcustom"),
        ] {
            let m = sanitize(msg);
            assert!(!m.contains(secret), "{msg} -> {m}");
        }
        assert_eq!(sanitize("missing field `leadKey` at line 1 column 2"), "missing field `leadKey`");
        assert_eq!(sanitize("unknown field `x`, expected `y`"), "an unknown field was sent");
    }
}
