//! The served OpenAPI document tells the whole truth: the generated document
//! (`openapi::ApiDoc`) plus, for every operation, each error status it can
//! answer, and for every argument the limits the services enforce (their
//! checks in `service::validate` and beside each service, restated here by
//! argument name; tests/it/contract.rs runs schemathesis over the result, so
//! a check the document misses, or one it claims and the server lacks, fails).

use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use utoipa::OpenApi;

use crate::error::Code;
use crate::service::validate;

/// Latest epoch-ms time any argument takes (9999-12-31T23:59:59.999Z).
const MAX_TIME: i64 = 253_402_300_799_999;
/// 1–64 of `[A-Za-z0-9_.:-]`, but not `.` or `..`.
const SITE_ID: &str =
    r"^([A-Za-z0-9_:-]|[A-Za-z0-9_.:-][A-Za-z0-9_:-]|[A-Za-z0-9_:-][A-Za-z0-9_.:-]|[A-Za-z0-9_.:-]{3,64})$";
/// Free text: no control characters (lengths are per field).
const TEXT: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";
/// A route pattern (`service::sites::routes::is_valid`, ROUTE-01): `/`, or
/// segments that are a literal (no `*`, not starting `:`), `:name` or `*`,
/// the last of which may be `**`.
const ROUTE_PATTERN: &str = concat!(
    r"^(/|(/([^/*:\u0000-\u001F\u007F-\u009F][^/*\u0000-\u001F\u007F-\u009F]*|:[A-Za-z_][A-Za-z0-9_]{0,31}|\*))*",
    r"/([^/*:\u0000-\u001F\u007F-\u009F][^/*\u0000-\u001F\u007F-\u009F]*|:[A-Za-z_][A-Za-z0-9_]{0,31}|\*|\*\*))$"
);
/// `https://` and a host, or `http://` on localhost with an optional port (no control characters).
const REDIRECT_URI: &str = concat!(
    r"^(https://[^/\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*",
    r"|http://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]*)?([/?#][^\u0000-\u001F\u007F-\u009F]*)?)$"
);

/// The served document, built once.
pub fn document() -> &'static [u8] {
    static DOC: OnceLock<Vec<u8>> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = serde_json::to_value(super::openapi::ApiDoc::openapi()).unwrap_or_default();
        let analytics = super::openapi_functions::add(&mut doc);
        add_error_responses(&mut doc);
        constrain(&mut doc);
        constrain_shared(&mut doc, &analytics.arguments);
        state_pairs(&mut doc);
        serde_json::to_vec(&doc).unwrap_or_default()
    })
}

fn error_response(what: &str) -> Value {
    json!({"description": what, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
}

/// Every operation documents each status it can answer.
fn add_error_responses(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, op) in item.iter_mut() {
            let Some(op) = op.as_object_mut() else { continue };
            let secured = op.get("security").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
            let has_body = op.contains_key("requestBody");
            let has_args = has_body || op.get("parameters").and_then(Value::as_array).is_some_and(|p| !p.is_empty());
            let federated = path.starts_with("/federation/") || path.starts_with("/api/");
            // Every code by its enum (crate::codes, crate::error): spelled there only.
            let mut add: Vec<(&str, String)> = vec![(
                "503",
                format!("{}: the database is unreachable or the daemon is stopping", Code::Unavailable.as_str()),
            )];
            if secured {
                add.push((
                    "401",
                    format!(
                        "{} (host key) or {} and its kin (JWT)",
                        Code::Unauthenticated.as_str(),
                        Code::FederationUnauthenticated.as_str()
                    ),
                ));
            }
            if has_args || federated {
                add.push(("400", format!("{} and the other argument codes", Code::InvalidArgument.as_str())));
            }
            if path.contains('{') || federated {
                add.push(("404", Code::NotFound.as_str().to_string()));
            }
            if has_body {
                add.push((
                    "408",
                    format!(
                        "{}: the body did not arrive within RASTRO_BODY_READ_TIMEOUT",
                        Code::RequestTimeout.as_str()
                    ),
                ));
                add.push(("413", Code::PayloadTooLarge.as_str().to_string()));
                add.push(("415", format!("{}: the body is not application/json", Code::UnsupportedMediaType.as_str())));
            }
            if method != "get" || path.contains("/meta") {
                add.push((
                    "429",
                    format!("{}: the write queue is full, or Meta throttles", Code::RateLimited.as_str()),
                ));
            }
            if federated || path.contains("/meta") || path.contains("/pixel") || path.contains("/ad-accounts") {
                add.push(("403", "FEDERATION_* denials".to_string()));
                add.push(("409", Code::Conflict.as_str().to_string()));
                add.push(("502", Code::MetaUnavailable.as_str().to_string()));
            }
            let responses = op.entry("responses").or_insert_with(|| json!({}));
            let Some(responses) = responses.as_object_mut() else { continue };
            for (status, what) in add {
                responses.entry(status).or_insert_with(|| error_response(&what));
            }
            if let Some(rules) = rules_between_arguments(path, method) {
                let invalid = Code::InvalidArgument;
                let bad = responses.entry("400").or_insert_with(|| error_response(invalid.as_str()));
                bad["description"] = Value::String(format!(
                    "{}, also for schema-valid requests that break a rule a JSON Schema cannot state: {rules}",
                    invalid.as_str()
                ));
            }
        }
    }
}

/// The rules between arguments, or against stored state, that a schema cannot
/// hold: a request valid by the schema is still refused with 400 when it
/// breaks one, and the operation's 400 answer says which.
fn rules_between_arguments(path: &str, method: &str) -> Option<String> {
    Some(String::from(match (method, path) {
        ("get", "/v1/leads") => "the `siteIds` list without repeats; `from <= to`, at most 366 UTC days",
        ("post", "/v1/reports/leads") => "`from <= to`, at most 366 UTC days; `adId` and `origin` not together",
        ("post", "/v1/reports/leads-daily") => "`from <= to`, at most 92 UTC days",
        ("get", "/v1/sites/{siteId}/leads.csv") => "`from <= to`, at most 366 UTC days",
        ("post", "/v1/reports/{name}.csv") => {
            "the arguments' rules of the function `name` (as on `/v1/analytics/{name}`)"
        }
        ("post", "/v1/meta/status") => "`siteIds` without repeats",
        ("post", "/v1/sites/{siteId}/leads/{leadKey}/stage") => "`revenueCents` only with the stage `won`",
        ("put", "/v1/meta/owners/{ownerKey}/connection") => {
            return Some(format!(
                "{} when Meta refuses the token (the token's validity is Meta's to say)",
                Code::MetaTokenInvalid.as_str()
            ));
        }
        ("patch", "/v1/sites/{siteId}") => "`currency` equal to the site's current one (it cannot change)",
        ("put", "/v1/sites/{siteId}/pipeline") => "column keys unique",
        ("put", "/v1/sites/{siteId}/event-map") => "only columns the site's pipeline declares",
        ("put", "/v1/sites/{siteId}/pixel") => {
            "`sendClickIds: true` needs a `whatsappBusinessAccountId`, given or already stored (rule WA-30)"
        }
        ("post", "/v1/sites/{siteId}/analytics/conversions") => {
            "`occurredAt` at most 400 days before the site's creation and at most 300000 ms after the server clock; \
             `properties` as the tracker's (at most 30 keys of 1-64 characters, each a string of at most 256 \
             characters, a finite number or a boolean)"
        }
        ("post", "/v1/sites/{siteId}/analytics/identify") => {
            "no `visitorId` on a cookieless site; at most 50 attributes after the merge with the stored ones"
        }
        _ => return None,
    }))
}

/// The limits of an argument by its name (`owner` names the schema or the
/// operation's path, for the few names whose limits differ by place).
fn rule(owner: &str, name: &str) -> Option<Value> {
    let time = json!({"minimum": 0, "maximum": MAX_TIME});
    let text = |min: usize, max: usize| json!({"minLength": min, "maxLength": max, "pattern": TEXT});
    let site = json!({"minLength": 1, "maxLength": 64, "pattern": SITE_ID});
    let ad_id = json!({"minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z0-9_.-]{1,64}$"});
    Some(match name {
        "siteId" => site,
        "siteIds" if owner.contains("/v1/leads") => {
            let one =
                "([A-Za-z0-9_:-]|[A-Za-z0-9_.:-][A-Za-z0-9_:-]|[A-Za-z0-9_:-][A-Za-z0-9_.:-]|[A-Za-z0-9_.:-]{3,64})";
            json!({"pattern": format!("^{one}(,{one}){{0,9}}$")})
        }
        "siteIds" => json!({"minItems": 1, "maxItems": validate::MAX_SITES, "uniqueItems": true, "items": site}),
        "from" | "to" | "occurredAt" | "before" | "now" | "sentAt" => time,
        "currency" => json!({"enum": validate::currencies()}),
        "timezone" => json!({"enum": chrono_tz::TZ_VARIANTS.iter().map(|z| z.name()).collect::<Vec<_>>()}),
        "origin" => json!({"pattern": "^[a-z0-9_]{1,64}$", "minLength": 1, "maxLength": 64}),
        "name" if owner == "ColumnInput" => text(1, 100),
        "name" if owner == "Identify" => text(0, 200),
        "email" if owner == "Identify" => text(0, 254),
        "externalId" => text(1, 256),
        // An anonymous id: 8-64 of [A-Za-z0-9_-], not starting `u_` or `c_`.
        "visitorId" if owner == "Identify" => {
            json!({"minLength": 8, "maxLength": 64,
                "pattern": "^([A-Za-bd-tv-z0-9_-][A-Za-z0-9_-]{7,63}|[cu][A-Za-z0-9-][A-Za-z0-9_-]{6,62})$"})
        }
        "attributes" if owner == "Identify" => json!({
            "maxProperties": crate::service::analytics::people::identify::MAX_ATTRIBUTES,
            "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,64}$"},
            "additionalProperties": {"anyOf": [{"type": "string", "maxLength": 256}, {"type": "number"},
                {"type": "boolean"}, {"type": "null"}]}
        }),
        "name" if owner == "RecordConversion" => text(1, 120),
        "conversionKey" => text(1, 128),
        "visitorId" | "sessionId" if owner == "RecordConversion" => text(1, 64),
        "valueCents" => json!({"minimum": 0, "maximum": 10_000_000_000_000i64}),
        "name" => text(1, 200),
        "group" => text(1, 100),
        "ownerId" | "ownerKey" => text(1, 200),
        "leadKey" | "eventId" => text(1, 128),
        "label" => text(1, 200),
        "adName" | "adsetName" | "campaignName" => text(1, 256),
        "clickId" => text(1, 512),
        "adId" | "adsetId" | "campaignId" => ad_id,
        "revenueCents" => json!({"minimum": 0, "maximum": 10_000_000_000_000i64}),
        "limit" if owner.contains("/meta/conversions") => json!({"minimum": 1, "maximum": 50}),
        "limit" => json!({"minimum": 1, "maximum": 100}),
        "beforeLeadId" | "leadId" => text(1, 64),
        "beforeEventId" => json!({"pattern": "^[0-9a-f]{64}$"}),
        "pixelId" => json!({"pattern": "^[0-9]{1,32}$"}),
        "adAccountId" => json!({"pattern": "^act_[0-9]{1,30}$"}),
        "testEventCode" => text(1, 64),
        "whatsappBusinessAccountId" => json!({"pattern": "^[0-9]{5,20}$"}),
        "connectionId" | "organizationId" => json!({"pattern": "^[A-Za-z0-9_.:-]{1,128}$"}),
        "accessToken" | "code" => {
            json!({"minLength": 1, "maxLength": 2048, "pattern": r"^[^\s\u0000-\u001F\u007F-\u009F]+$"})
        }
        // https, or plain http on localhost (`connection::check_redirect`).
        "redirectUri" => json!({"minLength": 1, "maxLength": 2048, "pattern": REDIRECT_URI}),
        "importId" => json!({"minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}),
        "routePatterns" => {
            json!({"maxItems": 32, "items": {"minLength": 1, "maxLength": 256, "pattern": ROUTE_PATTERN}})
        }
        "columns" if owner == "SetPipeline" => json!({"maxItems": crate::service::leads::board::MAX_COLUMNS}),
        "key" if owner == "ColumnInput" => {
            json!({"minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z0-9_.:-]{1,64}$"})
        }
        "domains" => {
            json!({"maxItems": 50, "uniqueItems": true, "items": {"minLength": 1, "maxLength": 259,
                "pattern": "^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[1-9][0-9]{0,3})?$"}})
        }
        "color" => json!({"pattern": "^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$"}),
        "permissions" => {
            json!({"uniqueItems": true, "items": {"enum": ["analytics:read", "analytics:configure", "analytics:public"]}})
        }
        "columns" if owner == "SetEventMap" => json!({
            "propertyNames": {"pattern": "^[A-Za-z0-9_.:-]{1,64}$"},
            "additionalProperties": {"enum": ["Lead", "QualifiedLead", "Schedule", null]}
        }),
        // Any shape: one the server cannot use is dropped whole and the call succeeds (CAPI-01).
        "meta" => json!({"type": null}),
        _ => return None,
    })
}

/// Merges `rule` into `schema` (a property or a parameter's schema), keeping its type.
fn apply(schema: &mut Value, rule: Value) {
    let (Some(schema), Value::Object(rule)) = (schema.as_object_mut(), rule) else { return };
    for (k, v) in rule {
        if k == "items" {
            let items = schema.entry("items").or_insert_with(|| json!({}));
            if let Some(items) = items.as_object_mut() {
                items.extend(v.as_object().cloned().unwrap_or_default());
            }
        } else if v.is_null() {
            schema.remove(&k);
        } else {
            schema.insert(k, v);
        }
    }
    // An optional argument may be sent as null: its enum says so too.
    let nullable = schema.get("type").and_then(Value::as_array).is_some_and(|t| t.contains(&json!("null")));
    if nullable
        && let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut)
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

fn constrain_properties(owner: &str, schema: &mut Map<String, Value>) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, prop) in props.iter_mut() {
            if let Some(r) = rule(owner, name) {
                apply(prop, r);
            }
        }
    }
}

fn constrain(doc: &mut Value) {
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        for (name, schema) in schemas.iter_mut() {
            // Answers keep their shape as generated; only what callers send is constrained.
            if is_input(name)
                && let Some(s) = schema.as_object_mut()
            {
                constrain_properties(name, s);
            }
        }
    }
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for op in item.values_mut() {
            let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else { continue };
            for p in params {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                if let (Some(r), Some(schema)) = (rule(path, &name), p.get_mut("schema")) {
                    apply(schema, r);
                }
            }
        }
    }
}

/// The web-analytics functions' arguments: the limits every function shares
/// (sites, times); each function's own are its checks, answered with 400.
fn constrain_shared(doc: &mut Value, names: &[String]) {
    let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) else { return };
    for name in names {
        let Some(props) = schemas.get_mut(name).and_then(|s| s.get_mut("properties")).and_then(Value::as_object_mut)
        else {
            continue;
        };
        for (arg, prop) in props.iter_mut() {
            if super::openapi_functions::SHARED_ARGUMENTS.contains(&arg.as_str())
                && let Some(r) = rule(name, arg)
            {
                apply(prop, r);
            }
        }
    }
}

/// Each argument that needs another (`dependentRequired`) and each pair of
/// which at least one must be given (`anyOf`), stated where a schema can.
fn state_pairs(doc: &mut Value) {
    let present = |name: &str, schema: Value| json!({"required": [name], "properties": {name: schema}});
    let either =
        |a: &str, a_schema: Value, b: &str, b_schema: Value| json!([present(a, a_schema), present(b, b_schema)]);
    if let Some(schemas) = doc.pointer_mut("/components/schemas") {
        let not_null = || json!({"not": {"type": "null"}});
        if let Some(s) = schemas.get_mut("SetLeadStage").and_then(Value::as_object_mut) {
            s.insert("anyOf".into(), either("stage", not_null(), "column", not_null()));
        }
        if let Some(s) = schemas.get_mut("SetSitePixel").and_then(Value::as_object_mut) {
            s.insert("anyOf".into(), either("ownerKey", not_null(), "accessToken", not_null()));
        }
    }
    page_cursor(doc, "/v1/leads", "beforeLeadId");
    page_cursor(doc, "/v1/sites/{siteId}/meta/conversions", "beforeEventId");
}

/// A GET's page cursor: `before` and its tie-breaker (`beforeLeadId`,
/// `beforeEventId`) become one exploded query object, so the schema can say
/// that the tie-breaker needs `before` (the query string is unchanged:
/// `?before=…&beforeLeadId=…`).
fn page_cursor(doc: &mut Value, path: &str, tie: &str) {
    let pointer = format!("/paths/{}/get/parameters", path.replace('~', "~0").replace('/', "~1"));
    let Some(params) = doc.pointer_mut(&pointer).and_then(Value::as_array_mut) else { return };
    let mut properties = Map::new();
    let mut description = Vec::new();
    params.retain(|p| {
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        if p.get("in").and_then(Value::as_str) != Some("query") || (name != "before" && name != tie) {
            return true;
        }
        properties.insert(name.to_string(), p.get("schema").cloned().unwrap_or_else(|| json!({})));
        if let Some(d) = p.get("description").and_then(Value::as_str) {
            description.push(format!("`{name}`: {d}"));
        }
        false
    });
    if properties.len() != 2 {
        return;
    }
    params.push(json!({
        "in": "query", "name": "page", "required": false, "style": "form", "explode": true,
        "description": description.join(" "),
        "schema": {"type": "object", "properties": properties, "additionalProperties": false,
            "dependentRequired": {tie: ["before"]}},
    }));
}

/// The request types (every one the host API decodes).
fn is_input(name: &str) -> bool {
    matches!(
        name,
        "CreateSite"
            | "UpdateSite"
            | "RecordLead"
            | "SetLeadStage"
            | "SetPipeline"
            | "ColumnInput"
            | "SetEventMap"
            | "LeadsReportArgs"
            | "LeadsDailyArgs"
            | "LinkAdAccount"
            | "SetSitePixel"
            | "SetMetaConnection"
            | "ConnectWithCode"
            | "MetaStatusArgs"
            | "ProvisionGrant"
            | "Identify"
            | "RecordConversion"
            | "TrackerBatch"
    )
}

/// `GET /openapi.json`: the document with the constraints the server checks.
pub async fn serve() -> actix_web::HttpResponse {
    actix_web::HttpResponse::Ok().content_type("application/json").body(document())
}
