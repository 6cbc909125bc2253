//! How a Graph failure surfaces to a caller of a Meta action.

use crate::error::{Code, Error};
use crate::meta::graph::{ErrorClass, GraphError};

/// The caller-facing error for a failed Graph call (never Meta's own text).
pub fn from_graph(e: &GraphError) -> Error {
    match e.class {
        ErrorClass::TokenRefused => Error::new(Code::MetaTokenInvalid, "Meta refused the token"),
        ErrorClass::AppRefused => Error::new(Code::MetaLoginUnavailable, "Meta refused the app id or secret"),
        ErrorClass::Throttled => Error::new(Code::RateLimited, "Meta is throttling these calls; retry later"),
        ErrorClass::Permission => Error::not_found("the token cannot reach this object"),
        ErrorClass::Invalid => Error::not_found("Meta does not know this object"),
        ErrorClass::Transient | ErrorClass::TooMuchData => {
            Error::new(Code::MetaUnavailable, "Meta is unavailable; retry later")
        }
    }
}
