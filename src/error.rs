//! One error type for the whole daemon: a stable machine code per failure and an
//! explicit HTTP status for each. Messages are for humans and never carry a
//! token, a hash of user data or a stack trace: internal causes are logged with
//! their detail and answered with a generic message.

use std::fmt;

// The codes both answered as errors and stored as a lastError are spelled once, there.
use crate::codes::Fault;

/// The closed set of failure codes, each with its status in `codes.rs` (FED-02).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    InvalidArgument,
    NotFound,
    Conflict,
    Unauthenticated,
    /// Signed in, but not allowed: a read-only operator's write, a missing CSRF token.
    Forbidden,
    PayloadTooLarge,
    /// The request body did not arrive whole within `RASTRO_BODY_READ_TIMEOUT`.
    RequestTimeout,
    /// A body that is not JSON (`Content-Type` other than `application/json`).
    UnsupportedMediaType,
    /// The route exists, but not with this method.
    MethodNotAllowed,
    /// The request head is too large (too many or too long headers).
    HeadersTooLarge,
    RateLimited,
    Internal,
    /// The daemon is shutting down or a dependency (the database) is unreachable.
    Unavailable,
    MetaTokenInvalid,
    SecretsKeyMissing,
    MetaLoginUnavailable,
    MetaUnavailable,
    /// No authenticated Rastro identity: no token, or one the verifier rejects.
    FederationUnauthenticated,
    /// A valid signature from the trusted keys, but another `iss`.
    FederationIssuerMismatch,
    /// Required bounded `rastro_*` claims or the reader permission are absent or malformed.
    FederationInvalidClaims,
    /// The local grant is missing, malformed, mismatched or revoked.
    FederationConnectionDenied,
    /// A site list that is empty, duplicate, malformed or over ten; or a capability that is off.
    FederationInvalidScope,
    /// A requested site is outside the local grant.
    FederationSiteDenied,
    /// The token or the grant lacks `analytics:configure`.
    FederationConfigureForbidden,
    /// A public token asked beyond its surface, or the grant lacks `analytics:public`.
    FederationPublicForbidden,
    /// A function needs a setting this host lacks (Lead Ads without the app secret or the audience).
    FederationNotConfigured,
}

impl Code {
    pub const ALL: &'static [Code] = &[
        Code::InvalidArgument,
        Code::NotFound,
        Code::Conflict,
        Code::Unauthenticated,
        Code::Forbidden,
        Code::PayloadTooLarge,
        Code::RequestTimeout,
        Code::UnsupportedMediaType,
        Code::MethodNotAllowed,
        Code::HeadersTooLarge,
        Code::RateLimited,
        Code::Internal,
        Code::Unavailable,
        Code::MetaTokenInvalid,
        Code::SecretsKeyMissing,
        Code::MetaLoginUnavailable,
        Code::MetaUnavailable,
        Code::FederationUnauthenticated,
        Code::FederationIssuerMismatch,
        Code::FederationInvalidClaims,
        Code::FederationConnectionDenied,
        Code::FederationInvalidScope,
        Code::FederationSiteDenied,
        Code::FederationConfigureForbidden,
        Code::FederationPublicForbidden,
        Code::FederationNotConfigured,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::NotFound => "NOT_FOUND",
            Code::Conflict => "CONFLICT",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::Forbidden => "FORBIDDEN",
            Code::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Code::RequestTimeout => "REQUEST_TIMEOUT",
            Code::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            Code::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Code::HeadersTooLarge => "REQUEST_HEADERS_TOO_LARGE",
            Code::RateLimited => Fault::RateLimited.as_str(),
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::MetaTokenInvalid => Fault::MetaTokenInvalid.as_str(),
            Code::SecretsKeyMissing => Fault::SecretsKeyMissing.as_str(),
            Code::MetaLoginUnavailable => Fault::MetaLoginUnavailable.as_str(),
            Code::MetaUnavailable => Fault::MetaUnavailable.as_str(),
            Code::FederationUnauthenticated => "FEDERATION_UNAUTHENTICATED",
            Code::FederationIssuerMismatch => "FEDERATION_ISSUER_MISMATCH",
            Code::FederationInvalidClaims => "FEDERATION_INVALID_CLAIMS",
            Code::FederationConnectionDenied => "FEDERATION_CONNECTION_DENIED",
            Code::FederationInvalidScope => "FEDERATION_INVALID_SCOPE",
            Code::FederationSiteDenied => "FEDERATION_SITE_DENIED",
            Code::FederationConfigureForbidden => "FEDERATION_CONFIGURE_FORBIDDEN",
            Code::FederationPublicForbidden => "FEDERATION_PUBLIC_FORBIDDEN",
            Code::FederationNotConfigured => "FEDERATION_NOT_CONFIGURED",
        }
    }

    pub fn http_status(self) -> u16 {
        match self {
            Code::InvalidArgument | Code::MetaTokenInvalid | Code::FederationInvalidScope => 400,
            Code::Unauthenticated
            | Code::FederationUnauthenticated
            | Code::FederationIssuerMismatch
            | Code::FederationInvalidClaims => 401,
            Code::Forbidden
            | Code::FederationConnectionDenied
            | Code::FederationSiteDenied
            | Code::FederationConfigureForbidden
            | Code::FederationPublicForbidden => 403,
            Code::NotFound => 404,
            Code::MethodNotAllowed => 405,
            Code::RequestTimeout => 408,
            Code::UnsupportedMediaType => 415,
            Code::HeadersTooLarge => 431,
            Code::Conflict => 409,
            Code::PayloadTooLarge => 413,
            Code::RateLimited => 429,
            Code::Internal => 500,
            Code::Unavailable
            | Code::SecretsKeyMissing
            | Code::MetaLoginUnavailable
            | Code::FederationNotConfigured => 503,
            Code::MetaUnavailable => 502,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Code::NotFound, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(Code::Conflict, message)
    }
    /// An internal failure: the detail goes to the log, the caller gets a generic text.
    pub fn internal(detail: impl fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Self::new(Code::Internal, "internal error")
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(Code::Unavailable, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

impl From<diesel::result::Error> for Error {
    fn from(e: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error as D};
        match e {
            D::NotFound => Error::not_found("not found"),
            D::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => Error::conflict("already exists"),
            D::DatabaseError(DatabaseErrorKind::ClosedConnection, _) => Error::unavailable("database unavailable"),
            other => Error::internal(other),
        }
    }
}

impl From<r2d2::Error> for Error {
    fn from(e: r2d2::Error) -> Self {
        tracing::error!(error = %e, "database pool");
        Error::unavailable("database unavailable")
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every `.rs` file under `dir` but this one, concatenated.
    fn sources(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("src/error.rs") {
                out.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }

    /// The constructor of this file that makes the code, for those that have one.
    fn helper(code: Code) -> Option<&'static str> {
        match code {
            Code::InvalidArgument => Some("Error::invalid("),
            Code::NotFound => Some("Error::not_found("),
            Code::Conflict => Some("Error::conflict("),
            Code::Internal => Some("Error::internal"),
            Code::Unavailable => Some("Error::unavailable("),
            _ => None,
        }
    }

    // contract: the codes are a closed set (FED-02): each produced somewhere, each in /openapi.json
    #[test]
    fn every_code_is_produced_and_documented() {
        use utoipa::OpenApi;
        let doc = serde_json::to_value(crate::http::openapi::ApiDoc::openapi()).unwrap();
        let schema = &doc["components"]["schemas"]["ErrorBody"]["properties"]["code"];
        let listed: Vec<&str> = schema["enum"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
        let mut src = String::new();
        sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut src);
        for &code in Code::ALL {
            assert!(listed.contains(&code.as_str()), "{} is not in the OpenAPI document", code.as_str());
            let named = src.contains(&format!("Code::{code:?}"));
            assert!(named || helper(code).is_some_and(|h| src.contains(h)), "nothing produces {}", code.as_str());
        }
        assert_eq!(listed.len(), Code::ALL.len(), "the document lists exactly Code::ALL");
        // ALL holds every variant: in declaration order, the discriminants run 0..n.
        for (i, code) in Code::ALL.iter().enumerate() {
            assert_eq!(*code as usize, i, "{code:?}");
        }
        assert_eq!(Code::ALL.len(), Code::FederationNotConfigured as usize + 1);
    }
}
