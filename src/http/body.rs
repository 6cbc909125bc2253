//! Request bodies: a deadline for the whole body to arrive, and the one rule
//! for which bodies are JSON.
//!
//! The deadline wraps the payload stream rather than reading it: whoever reads
//! the body (an extractor, a federated call) reads it only after the
//! credentials were checked, and a body that has not arrived whole by
//! `RASTRO_BODY_READ_TIMEOUT` fails with 408 `REQUEST_TIMEOUT`. A body nobody
//! reads is never waited for: the answer goes out and the connection closes.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, TRANSFER_ENCODING};
use actix_web::middleware::Next;
use actix_web::mime;
use actix_web::web::{self, Bytes};
use futures_core::Stream;

use super::AppState;
use crate::error::{Code, Error, Result};

/// The payload of a request, failing with a timeout once its deadline passes.
struct Deadline {
    inner: Payload,
    sleep: Pin<Box<tokio::time::Sleep>>,
    expired: bool,
}

impl Stream for Deadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.expired {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = Pin::new(&mut self.inner).poll_next(cx) {
            return Poll::Ready(item);
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.expired = true;
            return Poll::Ready(Some(Err(timed_out())));
        }
        Poll::Pending
    }
}

fn timed_out() -> PayloadError {
    PayloadError::Io(io::Error::new(io::ErrorKind::TimedOut, "request body deadline"))
}

/// Whether a payload error is the body deadline.
pub fn is_timeout(e: &PayloadError) -> bool {
    matches!(e, PayloadError::Io(io) if io.kind() == io::ErrorKind::TimedOut)
}

fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(TRANSFER_ENCODING)
        || headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() != "0")
}

/// Middleware: puts the deadline on every request that has a body.
pub async fn deadline(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if has_body(req.headers()) {
        let timeout =
            req.app_data::<web::Data<AppState>>().map_or(Duration::from_secs(5), |st| st.cx.config.body_read_timeout);
        let inner = req.take_payload();
        let sleep = Box::pin(tokio::time::sleep(timeout));
        req.set_payload(Payload::from(Box::pin(Deadline { inner, sleep, expired: false })
            as Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>));
    }
    next.call(req).await
}

pub fn timeout_error() -> Error {
    Error::new(Code::RequestTimeout, "the request body did not arrive in time")
}

/// JSON bodies come as `application/json` (any parameters; `application/*+json` too).
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| json_mime(&m))
}

pub fn json_mime(m: &mime::Mime) -> bool {
    m.type_() == mime::APPLICATION && (m.subtype() == mime::JSON || m.suffix() == Some(mime::JSON))
}

pub fn unsupported_media_type() -> Error {
    Error::new(Code::UnsupportedMediaType, "the body must be JSON (Content-Type: application/json)")
}

/// Reads a whole body of at most `limit` bytes under the deadline.
pub async fn read(body: web::Payload, limit: usize) -> Result<Bytes> {
    match body.to_bytes_limited(limit).await {
        Err(_) => Err(Error::new(Code::PayloadTooLarge, "the request body is too large")),
        Ok(Err(e)) if e.as_error::<PayloadError>().is_some_and(is_timeout) => Err(timeout_error()),
        Ok(Err(_)) => Err(Error::invalid("unreadable request body")),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}
