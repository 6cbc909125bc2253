//! What `/openapi.json` says against what the server does, where the two had
//! drifted: the tracker batch's numbers and site ids, the limits the services
//! check, and the arguments that need one another. (tests/it/contract.rs runs
//! schemathesis over the whole document; these pin each fix on its own.)

use serde_json::{Value, json};

use crate::analytics::{HOST, UA, analytics_builder, pageview, site, track, track_as};
use crate::backend_test;
use crate::common::{DAY, HOST_KEY, T0, TestApp};

/// The stored times of a site's events of the test's day, in order.
async fn exported_times(app: &TestApp, site_id: &str) -> Vec<i64> {
    let (from, to) = (T0 - T0.rem_euclid(DAY) - DAY, T0 - T0.rem_euclid(DAY) + DAY - 1);
    let res = app
        .http
        .get(format!("{}/v1/sites/{site_id}/analytics/export?from={from}&to={to}", app.base))
        .bearer_auth(HOST_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["occurredAt"].as_i64().unwrap()).collect()
}

// rule: TRK-13
// rule: TRK-26
backend_test!(a_whole_sent_at_written_as_a_float_is_that_integer, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    // The client's clock is 5 s ahead; the pageview happened 2 s before the send.
    let (sent, ts) = (T0 + 5_000, T0 + 3_000);
    let body = json!({"siteId": "loja", "visitorId": "v_visitor0001", "sentAt": sent as f64,
        "events": [{"type": "pageview", "pageviewId": "p_0000000000000001", "ts": ts,
            "url": format!("https://{HOST}/")}]});
    assert!(body.to_string().contains(&format!("\"sentAt\":{sent}.0")), "{body}");
    let a = track_as(app, &body, &[("user-agent", UA)]).await;
    assert_eq!((a.status, a.body["accepted"].as_i64()), (200, Some(1)), "{}", a.text);
    // Read as the integer: the skew correction used it (received at T0, 2 s old).
    assert_eq!(exported_times(app, "loja").await, vec![T0 - 2_000]);
    // A fraction, or a time outside 1970..9999, still refuses the batch whole.
    for bad in [json!(438.5), json!(-1), json!(i64::MIN), json!(1e300)] {
        let body = json!({"siteId": "loja", "visitorId": "v_visitor0002", "sentAt": bad,
            "events": [pageview("2", "/")]});
        track_as(app, &body, &[("user-agent", UA)]).await.err(400, "INVALID_ARGUMENT");
    }
    assert_eq!(exported_times(app, "loja").await.len(), 1);
});

// rule: TRK-13
backend_test!(a_site_id_starting_with_a_dot_is_created_tracked_and_documented, analytics_builder, |fed| {
    let app = &fed.app;
    // API.md: 1-64 of [A-Za-z0-9_.:-], and only `.` and `..` are refused.
    site(app, ".7", false).await;
    assert_eq!(app.get("/v1/sites/.7").await.ok()["siteId"], ".7");
    let answer = track(app, ".7", "v_visitor0001", vec![pageview("1", "/")]).await;
    assert_eq!(answer["accepted"], 1, "{answer}");
    for bad in [".", ".."] {
        let body = json!({"siteId": bad, "name": "x", "currency": "BRL", "timezone": "UTC", "ownerId": "o"});
        app.post("/v1/sites", body).await.err(400, "INVALID_ARGUMENT");
    }
    // The tracker's schema takes the site ids the host API creates: the same rule.
    let doc = app.with_key(None).get("/openapi.json").await.ok();
    let schemas = &doc["components"]["schemas"];
    let tracker = &schemas["TrackerBatch"]["properties"]["siteId"];
    assert_eq!(tracker["pattern"], schemas["CreateSite"]["properties"]["siteId"]["pattern"]);
    assert_eq!((tracker["minLength"].as_i64(), tracker["maxLength"].as_i64()), (Some(1), Some(64)));
});

/// The query parameter `name` of `method path`.
fn param<'a>(doc: &'a Value, path: &str, method: &str, name: &str) -> &'a Value {
    doc["paths"][path][method]["parameters"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()
}

// rule: LEAD-10
backend_test!(the_document_states_the_limits_and_pairs_the_server_checks, |app| {
    app.site("s1").await;
    let doc = app.with_key(None).get("/openapi.json").await.ok();
    let schemas = &doc["components"]["schemas"];
    // Limits the services check, now in the schema too.
    let key = &schemas["RecordConversion"]["properties"]["conversionKey"];
    assert_eq!((key["minLength"].as_i64(), key["maxLength"].as_i64()), (Some(1), Some(128)), "{key}");
    let long_key = json!({"conversionKey": "k".repeat(129), "occurredAt": T0, "name": "compra", "valueCents": 1});
    app.post("/v1/sites/s1/analytics/conversions", long_key).await.err(400, "INVALID_ARGUMENT");
    let import_id = &param(&doc, "/v1/sites/{siteId}/analytics/import", "post", "importId")["schema"];
    assert_eq!(import_id["pattern"], "^[A-Za-z0-9_.:-]{1,128}$");
    let sent_at = &schemas["TrackerBatch"]["properties"]["sentAt"];
    assert_eq!((sent_at["minimum"].as_i64(), sent_at["maximum"].as_i64()), (Some(0), Some(253_402_300_799_999)));
    let redirect = schemas["ConnectWithCode"]["properties"]["redirectUri"]["pattern"].as_str().unwrap();
    assert!(redirect.starts_with("^(https://") && redirect.contains("http://(localhost|"), "{redirect}");
    // The route patterns' grammar (ROUTE-01) is the schema's too.
    let route = schemas["UpdateSite"]["properties"]["routePatterns"]["items"]["pattern"].as_str().unwrap();
    assert!(route.starts_with("^(/|") && route.contains(":[A-Za-z_][A-Za-z0-9_]{0,31}"), "{route}");
    // An optional argument sent as null is accepted, and its schema says so.
    let timezone = &schemas["UpdateSite"]["properties"]["timezone"];
    assert!(timezone["enum"].as_array().unwrap().contains(&Value::Null), "null is in the zones' enum");
    assert_eq!(app.patch("/v1/sites/s1", json!({"timezone": null})).await.ok()["timezone"], "America/Sao_Paulo");
    // Arguments that need one another.
    let stage = &schemas["SetLeadStage"]["anyOf"];
    assert_eq!((stage[0]["required"].clone(), stage[1]["required"].clone()), (json!(["stage"]), json!(["column"])));
    let pixel = &schemas["SetSitePixel"]["anyOf"];
    assert_eq!(
        (pixel[0]["required"].clone(), pixel[1]["required"].clone()),
        (json!(["ownerKey"]), json!(["accessToken"]))
    );
    for (path, tie) in [("/v1/leads", "beforeLeadId"), ("/v1/sites/{siteId}/meta/conversions", "beforeEventId")] {
        let page = param(&doc, path, "get", "page");
        assert_eq!(
            (page["in"].as_str(), page["style"].as_str(), page["explode"].as_bool()),
            (Some("query"), Some("form"), Some(true))
        );
        assert_eq!(page["schema"]["dependentRequired"], json!({tie: ["before"]}), "{path}");
        assert!(page["schema"]["properties"]["before"].is_object() && page["schema"]["properties"][tie].is_object());
    }
    // ...and the server refuses each pair the schema refuses.
    let lead = json!({"leadKey": "k1", "eventId": "k1-new", "occurredAt": T0, "origin": "ctwa_ad"});
    app.post("/v1/sites/s1/leads", lead).await.ok();
    let no_stage = json!({"eventId": "k1-2", "occurredAt": T0});
    app.post("/v1/sites/s1/leads/k1/stage", no_stage).await.err(400, "INVALID_ARGUMENT");
    app.put("/v1/sites/s1/pixel", json!({"pixelId": "123"})).await.err(400, "INVALID_ARGUMENT");
    let (from, to) = (T0 - DAY, T0);
    app.get(&format!("/v1/leads?siteIds=s1&from={from}&to={to}&beforeLeadId=x")).await.err(400, "INVALID_ARGUMENT");
    let tie = "0".repeat(64);
    app.get(&format!("/v1/sites/s1/meta/conversions?beforeEventId={tie}")).await.err(400, "INVALID_ARGUMENT");
    // The query string is unchanged: both cursor fields together still page.
    assert_eq!(
        app.get(&format!("/v1/leads?siteIds=s1&from={from}&to={to}&before={T0}&beforeLeadId=x")).await.status,
        200
    );
});
