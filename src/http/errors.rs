//! How an `Error` goes on the wire, and how extractor failures (bad JSON, wrong
//! types, unknown fields, oversized bodies, bad query strings) become one.

use actix_web::error::{JsonPayloadError, PayloadError, QueryPayloadError};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{Code, Error};

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

/// Serde's messages quote the offending value; keep field and variant names,
/// drop anything else a caller sent (it could be a token).
pub fn sanitize(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut chars = msg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                for n in chars.by_ref() {
                    if n == '"' {
                        break;
                    }
                }
                out.push_str("\"…\"");
            }
            '`' => {
                let mut inner = String::new();
                for n in chars.by_ref() {
                    if n == '`' {
                        break;
                    }
                    inner.push(n);
                }
                // After "unknown variant" the quoted text is the caller's value,
                // not one of our names: it could be a token or a digest.
                let is_value = out.ends_with("unknown variant ");
                let is_name = !is_value
                    && inner.len() <= 64
                    && inner.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                    && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                out.push('`');
                out.push_str(if is_name { &inner } else { "…" });
                out.push('`');
            }
            _ => out.push(c),
        }
    }
    out
}

pub fn json_error(err: JsonPayloadError, _req: &HttpRequest) -> actix_web::Error {
    let e = match &err {
        JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => {
            Error::new(Code::PayloadTooLarge, "the request body is too large")
        }
        JsonPayloadError::Payload(PayloadError::Overflow) => {
            Error::new(Code::PayloadTooLarge, "the request body is too large")
        }
        JsonPayloadError::ContentType => Error::invalid("the body must be JSON"),
        JsonPayloadError::Deserialize(d) => Error::invalid(format!("invalid JSON body: {}", sanitize(&d.to_string()))),
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

pub async fn not_found() -> HttpResponse {
    Error::not_found("no such route").error_response()
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn values_never_survive_sanitizing() {
        let m = sanitize("invalid type: string \"EAAB-secret\", expected i64 at line 1 column 9");
        assert!(!m.contains("EAAB"), "{m}");
        let m = sanitize("unknown field `accessTokn`, expected one of `leadKey`, `eventId`");
        assert!(m.contains("`accessTokn`") && m.contains("`leadKey`"), "{m}");
        let m = sanitize("invalid value: integer `-5`, expected u64");
        assert!(!m.contains("-5"), "{m}");
        let m = sanitize("unknown variant `EAAB-123/x`, expected one of `new`");
        assert!(!m.contains("EAAB"), "{m}");
        let m = sanitize("unknown variant `EAABsecret123`, expected one of `new`, `won`");
        assert!(!m.contains("EAABsecret123") && m.contains("`new`") && m.contains("`won`"), "{m}");
    }
}
