//! The web-analytics functions in the OpenAPI document: one operation per
//! function at `POST /v1/analytics/{name}` (the host's route for them; the
//! Lead Ads functions at `POST /v1/meta/owners/{ownerKey}/lead-ads/{name}`), its
//! request body the use case's argument type and its 200 answer the use
//! case's answer type, both from the function table (`api::schemas`), so
//! the document describes exactly what runs. Each operation carries an
//! example call on the site `loja` over one UTC day, which the contract
//! test (tests/it/contract.rs) seeds, so schemathesis checks real answers
//! against their schemas, not only errors.

use serde_json::{Map, Value, json};

use crate::clock::DAY_MS;
use crate::service::api::{self, Capability, Function, Kind};

/// The example calls' site and day (2026-11-30, UTC).
pub const EXAMPLE_SITE: &str = "loja";
pub const EXAMPLE_DAY: i64 = 1_795_996_800_000;

/// An example call of `function`, where one makes sense without earlier state.
fn example(function: Function) -> Option<Value> {
    use Function as F;
    let (site, from, to) = (EXAMPLE_SITE, EXAMPLE_DAY, EXAMPLE_DAY + DAY_MS - 1);
    let day = json!({"siteId": site, "from": from, "to": to});
    let days = json!({"siteIds": [site], "from": from, "to": to});
    let page = json!({"numItems": 10, "cursor": null});
    Some(match function {
        F::SiteSettings | F::ListGoals | F::ListFunnels | F::ListAffiliates | F::RetentionStatus => {
            json!({"siteId": site})
        }
        F::UpdateSite => json!({"siteId": site, "routePatterns": ["/produto/:slug"]}),
        F::Overview | F::RevenueSummary | F::SiteMap => days,
        F::LiveVisitors => json!({"siteIds": [site], "now": to, "limit": 20}),
        F::GetSession => json!({"siteId": site, "sessionId": "s_example"}),
        F::ListSessions | F::ListConversions => json!({"siteId": site, "from": from, "to": to, "paginationOpts": page}),
        F::VisitorJourney => json!({"siteIds": [site], "visitorId": "v_example01", "from": from, "to": to}),
        F::DataCoverage => json!({"siteId": site, "from": from, "to": to, "now": to}),
        F::GoalsReport | F::FunnelsReport | F::AffiliatesReport | F::VitalsReport => day,
        F::UpsertGoal => json!({"siteId": site, "key": "checkout", "name": "Checkout",
            "matcher": {"kind": "pageview", "path": "/checkout"}, "valueCents": 1000}),
        F::UpsertFunnel => json!({"siteId": site, "key": "compra", "name": "Compra", "windowMs": 3_600_000,
            "steps": [{"label": "Produto", "matcher": {"kind": "pageview", "path": "/produto/:slug"}},
                {"label": "Checkout", "matcher": {"kind": "pageview", "path": "/checkout"}}]}),
        F::PreviewFunnel => json!({"siteId": site, "from": from, "to": to, "windowMs": 3_600_000,
            "steps": [{"label": "Produto", "matcher": {"kind": "pageview", "path": "/produto/:slug"}},
                {"label": "Checkout", "matcher": {"kind": "pageview", "path": "/checkout"}}]}),
        F::UpsertAffiliate => json!({"siteId": site, "slug": "ana", "name": "Ana", "commissionBps": 1000,
            "windowDays": 30}),
        F::SetRetentionPolicy => json!({"siteId": site, "eventsDays": 90, "sessionsDays": 180,
            "conversionsDays": 365, "profilesDays": 365, "aggregatesDays": 730}),
        F::GetVisitorProfile => json!({"siteId": site, "visitorId": "v_example01"}),
        F::ListPeople => json!({"siteId": site, "paginationOpts": page}),
        F::ListTrackedLinks => json!({"siteId": site, "now": to}),
        _ => return None,
    })
}

fn capability_note(c: Capability) -> &'static str {
    match c {
        Capability::SiteMap => " Served while `RASTRO_FEDERATION_SITE_MAP` is on (else 404).",
        Capability::People => " Served while `RASTRO_FEDERATION_PEOPLE` is on (else 404).",
        Capability::TrackedLinks => " Served while `RASTRO_FEDERATION_TRACKED_LINKS` is on (else 404).",
        Capability::MetaLeads => " Served while `RASTRO_FEDERATION_META_LEADS` is on (else 404).",
        _ => "",
    }
}

/// The argument names whose limits are the same everywhere (`openapi_contract::rule`).
pub const SHARED_ARGUMENTS: [&str; 5] = ["siteId", "siteIds", "from", "to", "now"];

/// What `add` did: the argument schemas' names (their shared arguments get
/// the document's limits) and any name two different schemas claimed.
pub struct Added {
    pub arguments: Vec<String>,
    pub clashes: Vec<String>,
}

/// Adds the operations and the schemas they name.
pub fn add(doc: &mut Value) -> Added {
    let mut arguments = Vec::new();
    let mut named: Map<String, Value> = Map::new();
    let mut paths: Map<String, Value> = Map::new();
    for function in Function::ALL.iter().copied() {
        let spec = function.spec();
        let lead_ads = spec.capability == Capability::MetaLeads;
        if !function.is_web_analytics() && !lead_ads {
            continue;
        }
        let schemas = api::schemas(function);
        for (name, schema) in &schemas.named {
            named.insert(name.clone(), serde_json::to_value(schema).unwrap_or_default());
        }
        arguments.push(schemas.args_name.clone());
        let mut body = json!({"schema": {"$ref": format!("#/components/schemas/{}", schemas.args_name)}});
        if let Some(e) = example(function) {
            body["example"] = e;
        }
        let what = match spec.kind {
            Kind::Query => "Reads",
            Kind::Mutation | Kind::Action => "Writes",
        };
        let (path, tag, parameters) = if lead_ads {
            let owner = json!({"name": "ownerKey", "in": "path", "required": true,
                "description": "The Meta connection's owner the function acts for", "schema": {"type": "string"}});
            (format!("/v1/meta/owners/{{ownerKey}}/lead-ads/{}", spec.name), "meta", json!([owner]))
        } else {
            (format!("/v1/analytics/{}", spec.name), "analytics", json!([]))
        };
        paths.insert(
            path,
            json!({"post": {
                "tags": [tag],
                "parameters": parameters,
                "operationId": format!("{tag}_{}", spec.name),
                "summary": format!("`{}` on the host API", spec.name),
                "description": format!(
                    "{what} as the federated function `{}`, for the host (its key), over any site it names.{}",
                    spec.name,
                    capability_note(spec.capability)
                ),
                "security": [{"hostKey": []}],
                "requestBody": {"required": true, "content": {"application/json": body}},
                "responses": {
                    "200": {"description": "The function's answer",
                        "content": {"application/json": {"schema": serde_json::to_value(&schemas.answer).unwrap_or_default()}}},
                    "404": error("NOT_FOUND: a site it names does not exist, or the function is not served here"),
                    "409": error("CONFLICT: a definition's key or slug is taken, or a cap is reached"),
                },
            }}),
        );
    }
    let mut clashes = Vec::new();
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        for (name, schema) in named {
            match schemas.get(&name) {
                Some(held) if held != &schema => clashes.push(name),
                Some(_) => {}
                None => {
                    schemas.insert(name, schema);
                }
            }
        }
    }
    if let Some(p) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        p.extend(paths);
    }
    Added { arguments, clashes }
}

fn error(what: &str) -> Value {
    json!({"description": what, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.trim_start_matches("#/components/schemas/").to_string());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    // One name, one schema: an answer type never borrows another's name.
    #[test]
    fn no_two_schemas_share_a_name() {
        let mut doc = serde_json::to_value(<crate::http::openapi::ApiDoc as utoipa::OpenApi>::openapi()).unwrap();
        assert_eq!(add(&mut doc).clashes, Vec::<String>::new());
    }

    // Every web-analytics function is an operation whose body and answer
    // are described, and every schema they name is in the document.
    #[test]
    fn every_function_has_its_operation_and_its_schemas() {
        let doc: Value = serde_json::from_slice(crate::http::openapi_contract::document()).unwrap();
        let schemas = doc.pointer("/components/schemas").and_then(Value::as_object).unwrap();
        for f in Function::ALL.iter().filter(|f| f.is_web_analytics()) {
            let path = format!("/v1/analytics/{}", f.name());
            let op = &doc["paths"][&path]["post"];
            let answer = &op["responses"]["200"]["content"]["application/json"]["schema"];
            assert!(answer.is_object() && answer != &json!({}), "{path}: no answer schema");
            let body = &op["requestBody"]["content"]["application/json"]["schema"];
            let mut named = Vec::new();
            refs(body, &mut named);
            refs(answer, &mut named);
            while let Some(name) = named.pop() {
                let schema = schemas.get(&name).unwrap_or_else(|| panic!("{path}: {name} is not in the document"));
                let mut inner = Vec::new();
                refs(schema, &mut inner);
                named.extend(inner.into_iter().filter(|n| n != &name));
            }
        }
        assert!(doc["paths"].get("/v1/analytics/{name}").is_none(), "one operation per function");
    }
}
