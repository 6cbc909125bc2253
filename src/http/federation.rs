//! The federated API's two transports, with the same semantics (FED-16):
//!
//! 1. REST: `POST /federation/{name}` with the JSON args as body; 200 with the
//!    value, or `{code, message}` with the status `codes.rs` gives the code (FED-02).
//! 2. Convex's HTTP function-call wire format, so `ConvexHttpClient` works
//!    unchanged: `POST /api/query|mutation|action` (and `/api/function`, any
//!    kind) with `{"path": "rastroFederation:<name>", "format":
//!    "convex_encoded_json", "args": [{…}]}`; 200 `{"status": "success",
//!    "value", "logLines"}`, or HTTP 560 `{"status": "error", "errorMessage",
//!    "errorData": {"code"}, "logLines"}` which the client raises as a
//!    `ConvexError` whose `data.code` is the code. A malformed envelope is a
//!    plain 400.
//!
//! Both only decode and encode; `federation::call` does the rest. Dashboards
//! call from a browser on another origin with a bearer token (no cookies), so
//! every answer allows any origin and `OPTIONS` answers the CORS preflight.

use actix_web::http::header::{self, ContentType, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use base64::Engine;
use serde_json::{Value, json};

use super::AppState;
use super::errors::ErrorBody;
use crate::error::{Code, Error, Result};
use crate::federation;
use crate::service::api::{self, Function, Kind, Need, Reply};

/// Convex's status for a function that failed (`STATUS_CODE_UDF_FAILED`).
pub const UDF_FAILED: u16 = 560;
/// The module name dashboards call: `rastroFederation:<name>`.
pub const MODULE: &str = "rastroFederation";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/federation/manifest", web::get().to(manifest));
    // Each function at its own static path first: matching it (here and for the
    // metrics label) compares a string instead of running the pattern's regex.
    for function in Function::ALL {
        let name = function.name();
        cfg.route(
            &format!("/federation/{name}"),
            web::post().to(move |st: web::Data<AppState>, req: HttpRequest, body: web::Payload| {
                call_function(st, req, name, body)
            }),
        );
    }
    cfg.route("/federation/{name}", web::post().to(call))
        .route("/federation/{name}", web::method(Method::OPTIONS).to(preflight))
        .route("/api/query", web::post().to(convex_query))
        .route("/api/mutation", web::post().to(convex_mutation))
        .route("/api/action", web::post().to(convex_action))
        .route("/api/function", web::post().to(convex_function))
        .route("/api/{kind}", web::method(Method::OPTIONS).to(preflight));
}

/// Any origin may call: the bearer token, not the origin, is the credential.
fn cors(mut res: HttpResponse) -> HttpResponse {
    res.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    res
}

/// The CORS preflight of a browser dashboard.
pub async fn preflight() -> HttpResponse {
    HttpResponse::NoContent()
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, "authorization, content-type, convex-client"))
        .insert_header((header::ACCESS_CONTROL_MAX_AGE, "86400"))
        .finish()
}

fn bearer(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get(actix_web::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Most bytes read from a caller without a token: an anonymous call can only
/// be `manifest` (no arguments), so its envelope is small.
const ANONYMOUS_BODY_LIMIT: usize = 4096;

fn declared_length(req: &HttpRequest) -> Option<usize> {
    req.headers().get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// The JSON arguments, read only after the credentials were checked: a JSON
/// content type when there is a body (else 415), the whole body under the
/// deadline and `limit`; an empty body is null.
async fn read_json(req: &HttpRequest, body: web::Payload, limit: usize) -> Result<Value> {
    let declared = req.headers().get(header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() != b"0")
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    if declared && !super::body::is_json(req.headers()) {
        return Err(super::body::unsupported_media_type());
    }
    let bytes = super::body::read(body, limit).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::invalid(format!("invalid JSON body: {}", super::errors::json_detail(&e))))
}

/// manifest: protocol, capabilities, function names and limits. No auth.
#[utoipa::path(get, path = "/federation/manifest", tag = "federation",
    responses((status = 200, body = api::manifest::Manifest)))]
pub async fn manifest(st: web::Data<AppState>) -> HttpResponse {
    cors(HttpResponse::Ok().json(api::manifest::manifest(&st.cx)))
}

/// A federated function by its seed name, the JSON args as body
/// (`Authorization: Bearer <JWT>`; `manifest` needs none).
#[utoipa::path(post, path = "/federation/{name}", tag = "federation", security(("federationJwt" = [])),
    params(("name" = String, Path, description = "manifest, connectionStatus, listSites, siteSettings, updateSite, leadsReport, listLeads, leadJourney, leadsDaily, metaStatus, metaConversions, metaConnection, metaEventMap, metaUnlinkPreview, connectMeta, refreshMetaAccounts, setMetaPixel, disconnectMeta, linkMetaAdAccount, unlinkMetaAdAccount, removeMetaPixel, setMetaEventMap, syncMetaNow, overview, liveVisitors, getSession, listSessions, sessionJourney, visitorJourney, dataCoverage, vitalsReport, siteMap")),
    request_body(content = Object, description = "The function's arguments"),
    responses((status = 200, description = "The function's value"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn call(
    st: web::Data<AppState>,
    req: HttpRequest,
    name: web::Path<String>,
    body: web::Payload,
) -> HttpResponse {
    call_function(st, req, &name.into_inner(), body).await
}

async fn call_function(st: web::Data<AppState>, req: HttpRequest, name: &str, body: web::Payload) -> HttpResponse {
    cors(match rest_call(&st, &req, name, body).await.and_then(json_body) {
        Ok(json) => HttpResponse::Ok().content_type(ContentType::json()).body(json),
        Err(e) => e.error_response(),
    })
}

/// The gates in `federation`'s order, the body read last: a caller without
/// valid credentials never makes the daemon wait for a body.
async fn rest_call(st: &AppState, req: &HttpRequest, name: &str, body: web::Payload) -> Result<Reply> {
    let function = Function::parse(name).ok_or_else(|| Error::not_found("no such federated function"))?;
    let spec = function.spec();
    let caller = match spec.need {
        Need::Nothing => None,
        _ => Some(federation::authorize(&st.cx, &st.federation, bearer(req), &spec).await?),
    };
    let args = read_json(req, body, st.cx.config.body_limit_bytes).await?;
    api::call(&st.cx, caller.as_ref(), function, args).await
}

/// A cached answer's JSON text, lent to the response body without a copy.
struct CachedJson(std::sync::Arc<crate::service::read_cache::CachedJson>);

impl AsRef<[u8]> for CachedJson {
    fn as_ref(&self) -> &[u8] {
        self.0.json.as_bytes()
    }
}

/// The value's JSON: serialized now, or the cached text itself.
fn json_body(reply: Reply) -> Result<web::Bytes> {
    match reply {
        Reply::Owned(v) => serde_json::to_vec(&v).map(web::Bytes::from).map_err(Error::internal),
        Reply::Cached(a) => Ok(web::Bytes::from_owner(CachedJson(a))),
    }
}

#[utoipa::path(post, path = "/api/query", tag = "federation", security(("federationJwt" = [])),
    request_body(content = Object, description = r#"{"path": "rastroFederation:<name>", "format": "convex_encoded_json", "args": [{…}]}"#),
    responses((status = 200, description = r#"{"status": "success", "value", "logLines"}"#),
        (status = 560, description = r#"{"status": "error", "errorMessage", "errorData": {"code"}, "logLines"}"#),
        (status = 400, body = ErrorBody)))]
pub async fn convex_query(st: web::Data<AppState>, req: HttpRequest, body: web::Payload) -> HttpResponse {
    convex(st, req, body, Some(Kind::Query)).await
}

#[utoipa::path(post, path = "/api/mutation", tag = "federation", security(("federationJwt" = [])),
    request_body(content = Object, description = "As /api/query"),
    responses((status = 200, description = "As /api/query"), (status = 560, description = "As /api/query")))]
pub async fn convex_mutation(st: web::Data<AppState>, req: HttpRequest, body: web::Payload) -> HttpResponse {
    convex(st, req, body, Some(Kind::Mutation)).await
}

#[utoipa::path(post, path = "/api/action", tag = "federation", security(("federationJwt" = [])),
    request_body(content = Object, description = "As /api/query"),
    responses((status = 200, description = "As /api/query"), (status = 560, description = "As /api/query")))]
pub async fn convex_action(st: web::Data<AppState>, req: HttpRequest, body: web::Payload) -> HttpResponse {
    convex(st, req, body, Some(Kind::Action)).await
}

/// Convex's any-kind endpoint: `args` is the object itself.
#[utoipa::path(post, path = "/api/function", tag = "federation", security(("federationJwt" = [])),
    request_body(content = Object, description = r#"{"path": "rastroFederation:<name>", "args": {…}}"#),
    responses((status = 200, description = "As /api/query"), (status = 560, description = "As /api/query")))]
pub async fn convex_function(st: web::Data<AppState>, req: HttpRequest, body: web::Payload) -> HttpResponse {
    convex(st, req, body, None).await
}

/// A decoded Convex call: the function's name and its args.
#[derive(Debug)]
struct ConvexCall {
    name: String,
    args: Value,
}

/// Reads `{path, format?, args}`; `args` is `[{…}]` (or `[]`) on the kind
/// endpoints and the object itself on `/api/function`.
fn decode_envelope(body: Value, any_kind: bool) -> Result<ConvexCall> {
    let Value::Object(mut envelope) = body else {
        return Err(Error::invalid("the body must be {path, format, args}"));
    };
    let path = match envelope.remove("path") {
        Some(Value::String(p)) => p,
        _ => return Err(Error::invalid("path must be \"rastroFederation:<name>\"")),
    };
    let (module, name) = path.split_once(':').unwrap_or(("", ""));
    let module = module.strip_suffix(".js").unwrap_or(module);
    if module != MODULE || name.is_empty() {
        return Err(Error::not_found("no such function: rastrod serves rastroFederation:<name>"));
    }
    match envelope.remove("format") {
        None => {}
        Some(Value::String(f)) if f == "convex_encoded_json" || f == "json" => {}
        Some(_) => return Err(Error::invalid("format must be convex_encoded_json")),
    }
    let args = match envelope.remove("args") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::Array(mut items)) if !any_kind && items.len() <= 1 => {
            items.pop().unwrap_or_else(|| Value::Object(Default::default()))
        }
        Some(v @ Value::Object(_)) if any_kind => v,
        Some(_) => return Err(Error::invalid("args must be a one-element array holding the arguments object")),
    };
    Ok(ConvexCall { name: name.to_string(), args: from_convex(args)? })
}

/// Convex's encoded JSON: `{"$integer": <base64 i64 LE>}` and
/// `{"$float": <base64 f64 LE>}` become numbers; other `$` objects are refused.
fn from_convex(v: Value) -> Result<Value> {
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(match v {
        Value::Array(items) => Value::Array(items.into_iter().map(from_convex).collect::<Result<_>>()?),
        Value::Object(map) => {
            if map.len() == 1
                && let Some((k, Value::String(s))) = map.iter().next()
                && k.starts_with('$')
            {
                let bytes: [u8; 8] = b64
                    .decode(s)
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| Error::invalid("a Convex-encoded number is malformed"))?;
                return match k.as_str() {
                    "$integer" => Ok(json!(i64::from_le_bytes(bytes))),
                    "$float" => serde_json::Number::from_f64(f64::from_le_bytes(bytes))
                        .map(Value::Number)
                        .ok_or_else(|| Error::invalid("NaN and infinities are not arguments here")),
                    _ => Err(Error::invalid("this Convex value type is not an argument here")),
                };
            }
            if map.keys().any(|k| k.starts_with('$')) {
                return Err(Error::invalid("field names must not start with $"));
            }
            Value::Object(map.into_iter().map(|(k, v)| Ok((k, from_convex(v)?))).collect::<Result<_>>()?)
        }
        other => other,
    })
}

async fn convex(st: web::Data<AppState>, req: HttpRequest, body: web::Payload, kind: Option<Kind>) -> HttpResponse {
    // The credentials before the body: a token is verified now (the function's
    // own gates follow once the envelope names it). Without a valid one only
    // `manifest` can answer, so little is read, and anything but a
    // well-formed manifest call is refused with the credentials' error.
    let token = bearer(&req);
    let refused = match token {
        Some(t) => st.federation.verifier.verify(t, st.now()).await.err(),
        None => Some(federation::unauthenticated()),
    };
    let refuse = |e: Error| cors(if token.is_some() { udf_error(&e) } else { e.error_response() });
    let limit = match &refused {
        None => st.cx.config.body_limit_bytes,
        // A body larger than an anonymous call can be is not waited for.
        Some(e) if declared_length(&req).is_some_and(|n| n > ANONYMOUS_BODY_LIMIT) => return refuse(e.clone()),
        Some(_) => ANONYMOUS_BODY_LIMIT,
    };
    let decoded = match read_json(&req, body, limit).await.and_then(|b| decode_envelope(b, kind.is_none())) {
        Ok(c) => c,
        Err(e) if e.code == Code::NotFound => return cors(udf_error(&e)),
        Err(e) if e.code == Code::RequestTimeout => return cors(e.error_response()),
        Err(e) => return refused.map_or_else(|| cors(e.error_response()), refuse),
    };
    if let Some(e) = refused
        && decoded.name != "manifest"
    {
        return cors(udf_error(&e));
    }
    cors(match federation::call(&st.cx, &st.federation, token, &decoded.name, kind, decoded.args).await {
        Ok(reply) => match reply.to_json() {
            // {"status": "success", "value", "logLines": []} around the value's JSON text.
            Ok(value) => HttpResponse::Ok()
                .content_type(ContentType::json())
                .body(format!(r#"{{"status":"success","value":{value},"logLines":[]}}"#)),
            Err(e) => udf_error(&e),
        },
        Err(e) => udf_error(&e),
    })
}

/// A function's failure as Convex answers it; the client raises a ConvexError.
fn udf_error(e: &Error) -> HttpResponse {
    let status = StatusCode::from_u16(UDF_FAILED).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status).json(json!({
        "status": "error",
        "errorMessage": e.message,
        "errorData": {"code": e.code.as_str()},
        "logLines": [],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_decode_like_convex() {
        let c = decode_envelope(
            json!({"path": "rastroFederation:leadsReport", "format": "convex_encoded_json", "args": [{"a": 1}]}),
            false,
        )
        .unwrap();
        assert_eq!((c.name.as_str(), c.args), ("leadsReport", json!({"a": 1})));
        let c = decode_envelope(json!({"path": "rastroFederation.js:manifest", "args": []}), false).unwrap();
        assert_eq!(c.args, json!({}));
        let c = decode_envelope(json!({"path": "rastroFederation:manifest", "args": {"x": 1}}), true).unwrap();
        assert_eq!(c.args, json!({"x": 1}));
        assert!(decode_envelope(json!({"path": "other:manifest", "args": []}), false).is_err());
        assert!(decode_envelope(json!({"path": "rastroFederation:x", "args": [{}, {}]}), false).is_err());
        assert!(decode_envelope(json!({"path": "rastroFederation:x", "format": "xml"}), false).is_err());
    }

    #[test]
    fn encoded_numbers_become_json_numbers() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let int = b64.encode(42i64.to_le_bytes());
        let v = from_convex(json!({"limit": {"$integer": int}, "x": [1.5]})).unwrap();
        assert_eq!(v, json!({"limit": 42, "x": [1.5]}));
        let nan = b64.encode(f64::NAN.to_le_bytes());
        assert!(from_convex(json!({"$float": nan})).is_err());
        assert!(from_convex(json!({"$bytes": "AA=="})).is_err());
        assert!(from_convex(json!({"$weird": 1, "b": 2})).is_err());
    }
}
