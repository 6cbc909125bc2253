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

/// What went wrong in a serde message, in words of our own: serde quotes the
/// caller's text (an unknown field's name, a refused value), which could be a
/// token or a digest, so nothing of the message is kept but its kind and, for
/// a missing field, the name of one of our own fields.
pub fn sanitize(msg: &str) -> String {
    const KINDS: &[(&str, &str)] = &[
        ("unknown field", "an unknown field was sent"),
        ("duplicate field", "a field was sent twice"),
        ("invalid type", "a value has the wrong type"),
        ("invalid value", "a value is out of range"),
        ("invalid length", "a list or string has the wrong length"),
        ("unknown variant", "a value is not one of the allowed ones"),
        ("EOF while parsing", "the JSON ends too early"),
        ("expected", "the JSON is malformed"),
        ("key must be a string", "the JSON is malformed"),
        ("trailing", "the JSON is malformed"),
        ("control character", "the JSON is malformed"),
        ("invalid escape", "the JSON is malformed"),
        ("invalid number", "the JSON is malformed"),
        ("number out of range", "a number is out of range"),
        ("invalid unicode", "the JSON is malformed"),
        ("lone leading surrogate", "the JSON is malformed"),
        ("recursion limit exceeded", "the JSON nests too deeply"),
        ("cannot parse", "a value has the wrong type"),
    ];
    if let Some(rest) = msg.strip_prefix("missing field `")
        && let Some((name, _)) = rest.split_once('`')
        && is_our_name(name)
    {
        // The name comes from our own types, never from the caller.
        return format!("missing field `{name}`");
    }
    KINDS.iter().find(|(prefix, _)| msg.starts_with(prefix)).map_or("a value is invalid", |(_, kind)| kind).to_string()
}

/// A field name as our types spell them (camelCase identifiers).
fn is_our_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
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

/// No route matched: 405 when the path is a route under other methods (with
/// `Allow`), else 404.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    let allowed = super::routes::methods_of(req.path());
    if allowed.is_empty() {
        return Error::not_found("no such route").error_response();
    }
    let mut res = Error::new(Code::MethodNotAllowed, "this route does not take this method").error_response();
    if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&allowed.join(", ")) {
        res.headers_mut().insert(actix_web::http::header::ALLOW, v);
    }
    res
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
