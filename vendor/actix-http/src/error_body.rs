//! rastrod patch (see vendor/README.md): the bodies of the answers the h1
//! dispatcher writes on its own (a request it cannot parse: 400; a head too
//! large: 431; a head that did not arrive in time: 408). Upstream writes them
//! with an empty body and offers no hook; the application registers one here,
//! once, at start-up.

use std::sync::OnceLock;

use bytes::Bytes;
use http::StatusCode;

/// The body for a status, with its content type (`None`: keep the empty body).
pub type ErrorBodyFn = fn(StatusCode) -> Option<(&'static str, Bytes)>;

static HOOK: OnceLock<ErrorBodyFn> = OnceLock::new();

/// Registers the function that writes the dispatcher's own error bodies (the first call wins).
pub fn set_error_body(f: ErrorBodyFn) {
    let _ = HOOK.set(f);
}

/// The registered body of an error answer of the dispatcher, if any.
pub(crate) fn error_body(res: &mut crate::Response<()>) -> crate::body::BoxBody {
    match HOOK.get().and_then(|f| f(res.status())) {
        Some((content_type, bytes)) => {
            if let Ok(value) = crate::header::HeaderValue::from_str(content_type) {
                res.headers_mut().insert(crate::header::CONTENT_TYPE, value);
            }
            crate::body::BoxBody::new(bytes)
        }
        None => crate::body::BoxBody::new(()),
    }
}
