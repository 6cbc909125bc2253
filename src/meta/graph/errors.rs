//! Graph errors: one type, classified by Meta's code/subcode with one table.
//!
//! Nothing of Meta's answer text is kept: an error message may echo what was
//! sent (a token, a code), so `GraphError::message` is a short summary built
//! here ("Graph error code 190/463 (HTTP 400)").

use serde_json::Value;

use super::usage::Usage;
use crate::codes::Fault;

/// What the caller should do about a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Meta refused the token (expired, revoked, password changed …) or the authorization code.
    TokenRefused,
    /// The token cannot read this object (ad account, pixel).
    Permission,
    /// Meta throttled the call: wait at least an hour (longer if `usage.regain_after` says so).
    Throttled,
    /// Try again later: Meta's temporary errors, 5xx without a Graph error, timeouts, connection errors.
    Transient,
    /// The range holds too much data: ask for a smaller one.
    TooMuchData,
    /// Meta refused the app's id or secret (only from the `/oauth/access_token` and `/debug_token` calls).
    AppRefused,
    /// Anything else: a bad parameter, an unknown id, an unreadable answer.
    Invalid,
}

impl ErrorClass {
    /// rastrod's failure code for this class.
    pub fn fault(self) -> Fault {
        match self {
            ErrorClass::TokenRefused => Fault::MetaTokenInvalid,
            ErrorClass::Throttled => Fault::RateLimited,
            ErrorClass::Transient => Fault::MetaUnavailable,
            ErrorClass::TooMuchData => Fault::MetaTruncated,
            ErrorClass::Permission => Fault::PermissionDenied,
            ErrorClass::AppRefused => Fault::MetaLoginUnavailable,
            ErrorClass::Invalid => Fault::MetaInvalid,
        }
    }

    /// rastrod's error code for this class.
    pub fn code_str(self) -> &'static str {
        self.fault().as_str()
    }
}

/// The subcode Meta adds to code 1 when a range holds too much data.
pub const TOO_MUCH_DATA_SUBCODE: i64 = 1_487_534;

/// THE classification table (the Graph contract): by code and subcode, never by HTTP
/// status, except that an answer without a Graph error is transient on 5xx (and 408),
/// throttled on 429.
pub fn classify(code: Option<i64>, subcode: Option<i64>, http_status: Option<u16>) -> ErrorClass {
    match (code, subcode) {
        (Some(190 | 102), _) => ErrorClass::TokenRefused,
        (Some(10 | 200..=299), _) => ErrorClass::Permission,
        (Some(4 | 17 | 32 | 613 | 80000..=80014), _) => ErrorClass::Throttled,
        (Some(1), Some(TOO_MUCH_DATA_SUBCODE)) => ErrorClass::TooMuchData,
        (Some(1 | 2), _) => ErrorClass::Transient,
        (Some(_), _) => ErrorClass::Invalid,
        (None, _) => match http_status {
            Some(500..=599 | 408) => ErrorClass::Transient,
            Some(429) => ErrorClass::Throttled,
            _ => ErrorClass::Invalid,
        },
    }
}

/// Which kind of endpoint answered: the OAuth ones read a few codes differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// Calls made with a connection's (or pixel's) token.
    Api,
    /// `POST /oauth/access_token` (code exchange and long-lived trade).
    Exchange,
    /// `GET /debug_token` (the app's token in the header).
    DebugToken,
}

/// The table plus the few refinements that need the endpoint or Meta's message (which is
/// looked at here and then dropped):
/// - "reduce the amount of data" in the message is [`ErrorClass::TooMuchData`];
/// - on the OAuth endpoints, code 101, or code 1 mentioning the client secret, is
///   [`ErrorClass::AppRefused`]; a refused code (100 with 36007-36009 or no subcode) is
///   [`ErrorClass::TokenRefused`];
/// - on `/debug_token`, a refused token is the app's token: [`ErrorClass::AppRefused`].
pub(crate) fn classify_answer(
    endpoint: Endpoint,
    code: Option<i64>,
    subcode: Option<i64>,
    http_status: Option<u16>,
    message: &str,
) -> ErrorClass {
    let msg = message.to_ascii_lowercase();
    if endpoint != Endpoint::Api {
        let secret_refused = code == Some(1) && (msg.contains("client secret") || msg.contains("client_secret"));
        if code == Some(101) || secret_refused {
            return ErrorClass::AppRefused;
        }
        // A login code Meta refuses: malformed (36007), used already (36008),
        // issued for another redirect URI (36009), or with no subcode at all.
        if endpoint == Endpoint::Exchange && code == Some(100) && matches!(subcode, None | Some(36007..=36009)) {
            return ErrorClass::TokenRefused;
        }
    }
    let class = classify(code, subcode, http_status);
    if endpoint == Endpoint::DebugToken && class == ErrorClass::TokenRefused {
        return ErrorClass::AppRefused;
    }
    if matches!(class, ErrorClass::Transient | ErrorClass::Invalid) && msg.contains("reduce the amount of data") {
        return ErrorClass::TooMuchData;
    }
    class
}

/// A failed Graph call. Display and Debug carry no token, secret, code, URL or Meta text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Graph {op}: {message}")]
pub struct GraphError {
    pub class: ErrorClass,
    /// Meta's error code, when the answer had a Graph error.
    pub code: Option<i64>,
    pub subcode: Option<i64>,
    /// None when no answer came (timeout, connection error, a call refused before sending).
    pub http_status: Option<u16>,
    /// The usage headers of the failed answer (merged with earlier pages of the same read).
    pub usage: Usage,
    /// A short summary built by rastrod, never Meta's text.
    pub message: String,
    /// Which call failed ("me", "insights", …).
    pub op: &'static str,
}

impl GraphError {
    /// rastrod's error code for this error.
    pub fn code_str(&self) -> &'static str {
        self.class.code_str()
    }

    /// An error found before or without an answer from Meta.
    pub(crate) fn local(op: &'static str, class: ErrorClass, message: &str) -> GraphError {
        GraphError {
            class,
            code: None,
            subcode: None,
            http_status: None,
            usage: Usage::default(),
            message: message.to_string(),
            op,
        }
    }

    /// An answer that is not a success: a Graph error body or a bare HTTP status.
    pub(crate) fn from_answer(
        op: &'static str,
        endpoint: Endpoint,
        status: u16,
        body: Option<&GraphErrorBody>,
        usage: Usage,
    ) -> GraphError {
        let (code, subcode) = body.map_or((None, None), |b| (b.code, b.subcode));
        let class = classify_answer(endpoint, code, subcode, Some(status), body.map_or("", |b| b.message.as_str()));
        let message = match (code, subcode) {
            (Some(c), Some(s)) => format!("Graph error code {c}/{s} (HTTP {status})"),
            (Some(c), None) => format!("Graph error code {c} (HTTP {status})"),
            (None, _) if body.is_some() => format!("Graph error without a code (HTTP {status})"),
            (None, _) => format!("HTTP {status} without a Graph error"),
        };
        GraphError { class, code, subcode, http_status: Some(status), usage, message, op }
    }

    /// The transport failed: nothing of reqwest's error (which names the URL) is kept.
    pub(crate) fn transport(op: &'static str, e: &reqwest::Error, usage: Usage) -> GraphError {
        let (class, message) = if e.is_timeout() {
            (ErrorClass::Transient, "timed out")
        } else if e.is_connect() {
            (ErrorClass::Transient, "could not connect")
        } else if e.is_builder() {
            (ErrorClass::Invalid, "could not build the request")
        } else if e.is_redirect() {
            (ErrorClass::Invalid, "too many or refused redirects")
        } else {
            (ErrorClass::Transient, "the connection failed")
        };
        let mut err = GraphError::local(op, class, message);
        err.http_status = e.status().map(|s| s.as_u16());
        err.usage = usage;
        err
    }
}

/// The parts of `{"error":{…}}` rastrod reads. `message` is only for classification and is
/// never copied into a [`GraphError`]; this type is deliberately not `Debug`.
pub(crate) struct GraphErrorBody {
    pub code: Option<i64>,
    pub subcode: Option<i64>,
    pub message: String,
}

impl GraphErrorBody {
    /// `Some` when the body is a Graph error envelope.
    pub(crate) fn parse(body: &[u8]) -> Option<GraphErrorBody> {
        GraphErrorBody::from_value(&serde_json::from_slice(body).ok()?)
    }

    /// `Some` when the JSON answer is a Graph error envelope.
    pub(crate) fn from_value(v: &Value) -> Option<GraphErrorBody> {
        let e = v.get("error")?;
        if !e.is_object() {
            return None;
        }
        let int = |key: &str| match e.get(key) {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        Some(GraphErrorBody {
            code: int("code"),
            subcode: int("error_subcode"),
            message: e.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorClass::*;

    #[test]
    fn the_table() {
        type Case = (Option<i64>, Option<i64>, Option<u16>, ErrorClass);
        let cases: &[Case] = &[
            (Some(190), Some(463), Some(400), TokenRefused),
            (Some(190), None, Some(401), TokenRefused),
            (Some(190), Some(458), Some(400), TokenRefused),
            (Some(190), Some(460), Some(400), TokenRefused),
            (Some(190), Some(492), Some(400), TokenRefused),
            (Some(102), None, Some(400), TokenRefused),
            (Some(10), None, Some(403), Permission),
            (Some(200), None, Some(400), Permission),
            (Some(250), None, Some(400), Permission),
            (Some(299), None, Some(400), Permission),
            (Some(4), None, Some(400), Throttled),
            (Some(17), Some(2446079), Some(400), Throttled),
            (Some(32), None, Some(400), Throttled),
            (Some(613), None, Some(400), Throttled),
            (Some(80000), None, Some(400), Throttled),
            (Some(80004), None, Some(400), Throttled),
            (Some(80014), None, Some(400), Throttled),
            (Some(80015), None, Some(400), Invalid),
            (Some(1), None, Some(500), Transient),
            (Some(1), Some(99), Some(400), Transient),
            (Some(2), None, Some(503), Transient),
            (Some(1), Some(TOO_MUCH_DATA_SUBCODE), Some(500), TooMuchData),
            (Some(2), Some(TOO_MUCH_DATA_SUBCODE), Some(500), Transient),
            (Some(100), None, Some(400), Invalid),
            (Some(100), Some(33), Some(400), Invalid),
            (Some(300), None, Some(400), Invalid),
            (Some(12345), None, Some(400), Invalid),
            // A Graph code wins over the HTTP status.
            (Some(100), None, Some(503), Invalid),
            (Some(190), None, Some(500), TokenRefused),
            // No Graph error: only the status is left.
            (None, None, Some(500), Transient),
            (None, None, Some(502), Transient),
            (None, None, Some(503), Transient),
            (None, None, Some(408), Transient),
            (None, None, Some(429), Throttled),
            (None, None, Some(400), Invalid),
            (None, None, Some(404), Invalid),
            (None, None, Some(200), Invalid),
            (None, None, None, Invalid),
        ];
        for &(code, sub, status, want) in cases {
            assert_eq!(classify(code, sub, status), want, "code {code:?} sub {sub:?} status {status:?}");
        }
    }

    #[test]
    fn codes_for_every_class() {
        let want = [
            (TokenRefused, Fault::MetaTokenInvalid),
            (Throttled, Fault::RateLimited),
            (Transient, Fault::MetaUnavailable),
            (TooMuchData, Fault::MetaTruncated),
            (Permission, Fault::PermissionDenied),
            (Invalid, Fault::MetaInvalid),
            (AppRefused, Fault::MetaLoginUnavailable),
        ];
        // The strings are `Fault`'s, spelled in crate::codes only.
        for (class, code) in want {
            assert_eq!(class.code_str(), code.as_str());
            assert_eq!(GraphError::local("me", class, "x").code_str(), code.as_str());
        }
    }

    #[test]
    fn refinements() {
        let msg = "Please reduce the amount of data you're asking for, then retry your request";
        assert_eq!(classify_answer(Endpoint::Api, Some(1), None, Some(500), msg), TooMuchData);
        assert_eq!(classify_answer(Endpoint::Api, None, None, Some(500), msg), TooMuchData);
        assert_eq!(classify_answer(Endpoint::Api, Some(190), None, Some(400), msg), TokenRefused);
        // App refused only on the OAuth endpoints.
        assert_eq!(classify_answer(Endpoint::Exchange, Some(101), None, Some(400), ""), AppRefused);
        assert_eq!(
            classify_answer(Endpoint::Exchange, Some(1), None, Some(400), "Error validating client secret."),
            AppRefused
        );
        assert_eq!(classify_answer(Endpoint::Exchange, Some(1), None, Some(500), "An unknown error"), Transient);
        assert_eq!(classify_answer(Endpoint::Api, Some(101), None, Some(400), ""), Invalid);
        assert_eq!(classify_answer(Endpoint::Exchange, Some(100), Some(36007), Some(400), ""), TokenRefused);
        assert_eq!(classify_answer(Endpoint::Exchange, Some(190), None, Some(400), ""), TokenRefused);
        // rule: CONN-04 (a refused login code, whatever the subcode)
        for sub in [None, Some(36008), Some(36009)] {
            assert_eq!(classify_answer(Endpoint::Exchange, Some(100), sub, Some(400), ""), TokenRefused);
        }
        assert_eq!(classify_answer(Endpoint::Exchange, Some(100), Some(33), Some(400), ""), Invalid);
        assert_eq!(classify_answer(Endpoint::Api, Some(100), Some(36007), Some(400), ""), Invalid);
        assert_eq!(classify_answer(Endpoint::DebugToken, Some(190), None, Some(400), ""), AppRefused);
        assert_eq!(classify_answer(Endpoint::DebugToken, Some(101), None, Some(400), ""), AppRefused);
        assert_eq!(classify_answer(Endpoint::DebugToken, Some(4), None, Some(400), ""), Throttled);
    }

    #[test]
    fn error_body_parsing_keeps_no_text_in_the_error() {
        let canary = "EAAcanary0123456789";
        let body = format!(
            r#"{{"error":{{"message":"Invalid token {canary}","type":"OAuthException","code":190,"error_subcode":463,"fbtrace_id":"{canary}","error_user_msg":"{canary}"}}}}"#
        );
        let parsed = GraphErrorBody::parse(body.as_bytes()).expect("a Graph error");
        assert_eq!((parsed.code, parsed.subcode), (Some(190), Some(463)));
        let e = GraphError::from_answer("me", Endpoint::Api, 400, Some(&parsed), Usage::default());
        assert_eq!(e.class, TokenRefused);
        assert_eq!(e.message, "Graph error code 190/463 (HTTP 400)");
        assert_eq!(e.to_string(), "Graph me: Graph error code 190/463 (HTTP 400)");
        assert!(!format!("{e}").contains(canary));
        assert!(!format!("{e:?}").contains(canary));

        assert!(GraphErrorBody::parse(b"<html>502</html>").is_none());
        assert!(GraphErrorBody::parse(br#"{"data":[]}"#).is_none());
        assert!(GraphErrorBody::parse(br#"{"error":"nope"}"#).is_none());
        let s = GraphErrorBody::parse(br#"{"error":{"code":"17"}}"#).unwrap();
        assert_eq!(s.code, Some(17));
        let bare = GraphError::from_answer("me", Endpoint::Api, 503, None, Usage::default());
        assert_eq!((bare.class, bare.message.as_str()), (Transient, "HTTP 503 without a Graph error"));
    }
}
