//! The error matrix: malformed bodies, unknown fields, wrong types, oversize
//! values and bodies, unknown sites and routes. Every failure is a documented
//! code in `{code, message}`, nothing is written, and nothing is ever a 500.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

const D0: i64 = T0 - DAY / 2;

/// The closed set of codes the host API may answer.
const CODES: &[&str] = &[
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "CONFLICT",
    "UNAUTHENTICATED",
    "PAYLOAD_TOO_LARGE",
    "RATE_LIMITED",
    "INTERNAL",
    "METHOD_NOT_ALLOWED",
    "REQUEST_TIMEOUT",
    "UNSUPPORTED_MEDIA_TYPE",
    "REQUEST_HEADERS_TOO_LARGE",
];

#[track_caller]
fn assert_error_shape(a: &Answer, status: u16, code: &str) {
    a.err(status, code);
    let obj = a.body.as_object().unwrap_or_else(|| panic!("not a JSON object: {}", a.text));
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, vec!["code", "message"], "{}", a.text);
    assert!(CODES.contains(&a.code()), "{}", a.text);
    assert!(!a.body["message"].as_str().unwrap().is_empty());
}

/// Row counts of every table.
async fn counts(app: &TestApp) -> std::collections::BTreeMap<String, i64> {
    crate::ops::table_counts(app).await
}

/// Every JSON-body route, with a valid body for it.
fn json_routes() -> Vec<(&'static str, String, Value)> {
    vec![
        (
            "POST",
            "/v1/sites".into(),
            json!({"siteId": "new", "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": "o"}),
        ),
        ("PATCH", "/v1/sites/s1".into(), json!({"name": "Renamed"})),
        (
            "POST",
            "/v1/sites/s1/leads".into(),
            json!({"leadKey": "n1", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"}),
        ),
        (
            "POST",
            "/v1/sites/s1/leads/k1/stage".into(),
            json!({"stage": "won", "revenueCents": 5, "eventId": "w", "occurredAt": T0}),
        ),
        ("PUT", "/v1/sites/s1/event-map".into(), json!({"columns": {"a": "Lead"}, "sendLeadEvent": true})),
        ("PUT", "/v1/sites/s1/pipeline".into(), json!({"columns": [{"key": "z", "name": "Z"}]})),
        ("POST", "/v1/reports/leads".into(), json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1})),
        ("POST", "/v1/reports/leads-daily".into(), json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1})),
    ]
}

async fn setup(app: &TestApp) {
    app.site("s1").await;
    app.put("/v1/sites/s1/pipeline", json!({"columns": [{"key": "a", "name": "A"}]})).await.ok();
    app.lead("s1", "k1", T0, json!({})).await.ok();
}

// rule: LEAD-10
backend_test!(malformed_bodies_are_invalid_argument, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    let bad_bodies = [
        "",
        "{",
        "{\"leadKey\": ",
        "{'leadKey': 'x'}",
        "{\"a\":1,}",
        "null",
        "[]",
        "\"x\"",
        "42",
        "{\"leadKey\": \"k\"} trailing",
        "\u{feff}{}",
    ];
    for (method, path, _) in json_routes() {
        for body in bad_bodies {
            let a = app.raw(method, &path, body.to_string()).await;
            assert_error_shape(&a, 400, "INVALID_ARGUMENT");
        }
        // Not UTF-8.
        let a = app.raw(method, &path, vec![b'{', 0xff, 0xfe, b'}']).await;
        assert_error_shape(&a, 400, "INVALID_ARGUMENT");
        // Nested deeper than any parser should follow.
        let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
        let a = app.raw(method, &path, deep).await;
        assert_error_shape(&a, 400, "INVALID_ARGUMENT");
    }
    assert_eq!(counts(&app).await, before);
    // The valid bodies all work (so the failures above were the bodies' fault).
    for (method, path, body) in json_routes() {
        let a = app.request(method, &path, Some(body)).await;
        assert!(a.status < 300, "{method} {path}: {}", a.text);
    }
});

// rule: LEAD-10
backend_test!(unknown_fields_are_refused, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    for (method, path, body) in json_routes() {
        let mut with_extra = body.clone();
        with_extra["unexpectedField"] = json!(1);
        let a = app.request(method, &path, Some(with_extra)).await;
        assert_error_shape(&a, 400, "INVALID_ARGUMENT");
        // rule: SEC-03 (the name the caller sent is not repeated)
        assert!(!a.body["message"].as_str().unwrap().contains("unexpectedField"), "{method} {path}: {}", a.text);
        // A near-miss of a real field name, too.
        let mut typo = body;
        typo["siteld"] = json!("s1");
        assert_error_shape(&app.request(method, &path, Some(typo)).await, 400, "INVALID_ARGUMENT");
    }
    // Nested objects refuse unknown fields too.
    let a = app.put("/v1/sites/s1/pipeline", json!({"columns": [{"key": "z", "name": "Z", "colour": "#fff"}]})).await;
    assert_error_shape(&a, 400, "INVALID_ARGUMENT");
    // And query strings.
    let range = format!("from={D0}&to={}", D0 + DAY - 1);
    assert_error_shape(&app.get(&format!("/v1/leads?siteIds=s1&{range}&page=2")).await, 400, "INVALID_ARGUMENT");
    assert_error_shape(&app.get("/v1/sites/s1/event-map?now=1&x=1").await, 400, "INVALID_ARGUMENT");
    assert_eq!(counts(&app).await, before);
});

// rule: CAPI-01
backend_test!(an_invalid_meta_is_dropped_and_the_call_succeeds, |app| {
    setup(&app).await;
    let h = "a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3";
    let metas = [
        json!("5511999991234"),
        json!(42),
        json!([h]),
        json!(true),
        json!({"ph": "5511999991234"}),
        json!({"ph": ["5511999991234"]}),
        json!({"ph": vec![h; 11]}),
        json!({"ph": [h], "email": h}),
        json!({"externalId": 7}),
        json!({"ph": [{"nested": h}]}),
        json!({}),
        Value::Null,
        // The seed's shape, valid.
        json!({"ph": [h], "externalId": h}),
    ];
    for (i, meta) in metas.iter().enumerate() {
        let key = format!("m{i}");
        let a = app.lead("s1", &key, T0 + i as i64, json!({ "meta": meta })).await;
        assert_eq!(a.status, 201, "meta {meta}: {}", a.text);
        let a = app
            .stage("s1", &key, json!({"stage": "qualified", "eventId": "q", "occurredAt": T0 + 100, "meta": meta}))
            .await;
        assert_eq!(a.ok()["accepted"], true, "meta {meta}");
    }
    let r = app.report(&["s1"], D0, D0 + DAY - 1).await;
    assert_eq!(
        (r["totals"]["leads"].as_i64(), r["totals"]["qualified"].as_i64()),
        (Some(metas.len() as i64 + 1), Some(metas.len() as i64))
    );
});

// rule: LEAD-10
backend_test!(wrong_types_are_invalid_argument, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    let lead = |field: &str, v: Value| {
        let mut b = json!({"leadKey": "n1", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"});
        b[field] = v;
        b
    };
    let cases: Vec<(&str, &str, Value)> = vec![
        ("POST", "/v1/sites/s1/leads", lead("occurredAt", json!("2026-11-30"))),
        ("POST", "/v1/sites/s1/leads", lead("occurredAt", json!(1.5))),
        ("POST", "/v1/sites/s1/leads", lead("occurredAt", json!(true))),
        ("POST", "/v1/sites/s1/leads", lead("occurredAt", Value::Null)),
        ("POST", "/v1/sites/s1/leads", lead("occurredAt", json!(1e20))),
        ("POST", "/v1/sites/s1/leads", lead("occurredAt", json!(u64::MAX))),
        ("POST", "/v1/sites/s1/leads", lead("leadKey", json!(123))),
        ("POST", "/v1/sites/s1/leads", lead("label", json!(["a"]))),
        ("POST", "/v1/sites/s1/leads", lead("origin", json!({"x": 1}))),
        ("POST", "/v1/sites/s1/leads", lead("adId", json!(5))),
        ("POST", "/v1/sites/s1/leads", lead("column", json!(false))),
        ("POST", "/v1/sites/s1/leads/k1/stage", json!({"stage": 1, "eventId": "s", "occurredAt": T0})),
        (
            "POST",
            "/v1/sites/s1/leads/k1/stage",
            json!({"stage": "won", "revenueCents": "5", "eventId": "s", "occurredAt": T0}),
        ),
        (
            "POST",
            "/v1/sites/s1/leads/k1/stage",
            json!({"stage": "won", "revenueCents": 1e30, "eventId": "s", "occurredAt": T0}),
        ),
        ("POST", "/v1/sites/s1/leads/k1/stage", json!({"stage": "won", "eventId": 9, "occurredAt": T0})),
        ("POST", "/v1/sites", json!({"siteId": 1, "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": "o"})),
        (
            "POST",
            "/v1/sites",
            json!({"siteId": "x", "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": "o", "domains": "a.com"}),
        ),
        ("PATCH", "/v1/sites/s1", json!({"routePatterns": "/a"})),
        ("PUT", "/v1/sites/s1/pipeline", json!({"columns": {"key": "z", "name": "Z"}})),
        ("PUT", "/v1/sites/s1/pipeline", json!({"columns": [{"key": 1, "name": "Z"}]})),
        ("PUT", "/v1/sites/s1/event-map", json!({"columns": [["a", "Lead"]], "sendLeadEvent": true})),
        ("PUT", "/v1/sites/s1/event-map", json!({"columns": {"a": "Lead"}, "sendLeadEvent": 1})),
        ("POST", "/v1/reports/leads", json!({"siteIds": "s1", "from": D0, "to": D0 + 1})),
        ("POST", "/v1/reports/leads", json!({"siteIds": [1], "from": D0, "to": D0 + 1})),
        ("POST", "/v1/reports/leads", json!({"siteIds": ["s1"], "from": "yesterday", "to": D0 + 1})),
        ("POST", "/v1/reports/leads", json!({"siteIds": ["s1"], "from": D0})),
        ("POST", "/v1/reports/leads-daily", json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1, "adId": 5})),
        ("POST", "/v1/reports/leads-daily", json!({"siteIds": ["s1"], "from": D0, "to": 1.5})),
    ];
    for (method, path, body) in cases {
        let a = app.request(method, path, Some(body.clone())).await;
        assert_error_shape(&a, 400, "INVALID_ARGUMENT");
    }
    let range = format!("from={D0}&to={}", D0 + DAY - 1);
    for q in [
        format!("siteIds=s1&from=abc&to={}", D0 + 1),
        format!("siteIds=s1&{range}&limit=ten"),
        format!("siteIds=s1&{range}&before=1.5"),
        format!("siteIds=s1&from={D0}"),
        format!("siteIds=s1&from={D0}&to=99999999999999999999999"),
    ] {
        assert_error_shape(&app.get(&format!("/v1/leads?{q}")).await, 400, "INVALID_ARGUMENT");
    }
    assert_eq!(counts(&app).await, before);
});

// rule: LEAD-10
backend_test!(oversize_values_are_invalid_argument, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    let s = |n: usize| "x".repeat(n);
    let lead = |field: &str, v: Value| {
        let mut b = json!({"leadKey": "n1", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"});
        b[field] = v;
        b
    };
    let cases: Vec<(&str, String, Value)> = vec![
        ("POST", "/v1/sites/s1/leads".into(), lead("label", json!(s(300)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("label", json!("é".repeat(201)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("leadKey", json!(s(300)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("adName", json!(s(300)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("adsetName", json!(s(300)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("campaignName", json!(s(300)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("clickId", json!(s(600)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("origin", json!(s(65)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("label", json!(s(200_000)))),
        ("POST", "/v1/sites/s1/leads".into(), lead("occurredAt", json!(253_402_300_800_000_i64))),
        (
            "POST",
            "/v1/sites/s1/leads/k1/stage".into(),
            json!({"stage": "won", "revenueCents": 10_000_000_000_001_i64, "eventId": "w", "occurredAt": T0}),
        ),
        (
            "POST",
            format!("/v1/sites/s1/leads/{}/stage", s(300)),
            json!({"stage": "won", "eventId": "w", "occurredAt": T0}),
        ),
        (
            "POST",
            "/v1/sites".into(),
            json!({"siteId": s(65), "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": "o"}),
        ),
        (
            "POST",
            "/v1/sites".into(),
            json!({"siteId": "n", "name": s(300), "currency": "BRL", "timezone": "UTC", "ownerId": "o"}),
        ),
        (
            "POST",
            "/v1/sites".into(),
            json!({"siteId": "n", "name": "N", "currency": "BRLX", "timezone": "UTC", "ownerId": "o"}),
        ),
        (
            "POST",
            "/v1/sites".into(),
            json!({"siteId": "n", "name": "N", "currency": "BRL", "timezone": s(300), "ownerId": "o"}),
        ),
        (
            "POST",
            "/v1/sites".into(),
            json!({"siteId": "n", "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": s(300)}),
        ),
        ("PATCH", "/v1/sites/s1".into(), json!({"name": s(300)})),
        ("PATCH", "/v1/sites/s1".into(), json!({"routePatterns": vec!["/a"; 33]})),
        ("PATCH", "/v1/sites/s1".into(), json!({"routePatterns": [format!("/{}", s(300))]})),
        ("PATCH", "/v1/sites/s1".into(), json!({"domains": vec!["a.com"; 51]})),
        ("PATCH", "/v1/sites/s1".into(), json!({"currency": "USD"})),
        ("PUT", "/v1/sites/s1/pipeline".into(), json!({"columns": [{"key": s(65), "name": "Z"}]})),
        ("PUT", "/v1/sites/s1/pipeline".into(), json!({"columns": [{"key": "z", "name": s(300)}]})),
        ("PUT", "/v1/sites/s1/pipeline".into(), json!({"columns": [{"key": "z", "name": "Z", "group": s(300)}]})),
        (
            "PUT",
            "/v1/sites/s1/event-map".into(),
            json!({"columns": {"a": "Lead"}, "sendLeadEvent": true, "ownerKey": s(300)}),
        ),
        (
            "POST",
            "/v1/reports/leads-daily".into(),
            json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1, "adId": s(300)}),
        ),
        ("POST", "/v1/reports/leads".into(), json!({"siteIds": [s(65)], "from": D0, "to": D0 + 1})),
    ];
    for (method, path, body) in cases {
        let a = app.request(method, &path, Some(body.clone())).await;
        assert_error_shape(&a, 400, "INVALID_ARGUMENT");
    }
    assert_error_shape(&app.get(&format!("/v1/sites/{}", s(300))).await, 400, "INVALID_ARGUMENT");
    assert_error_shape(
        &app.get(&format!("/v1/leads?siteIds=s1&from={D0}&to={}&adId={}", D0 + 1, s(300))).await,
        400,
        "INVALID_ARGUMENT",
    );
    assert_eq!(counts(&app).await, before);
    // The site kept its name and currency, and a sane change still goes through.
    let site = app.get("/v1/sites/s1").await.ok();
    assert_eq!((site["name"].as_str(), site["currency"].as_str()), (Some("Site s1"), Some("BRL")));
    let site = app.patch("/v1/sites/s1", json!({"name": "Site s1", "currency": "BRL"})).await.ok();
    assert_eq!((site["name"].as_str(), site["currency"].as_str()), (Some("Site s1"), Some("BRL")));
});

// rule: LEAD-10
backend_test!(bodies_over_the_limit_are_payload_too_large, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    // A valid body made large by one field: 300 KiB, over the 256 KiB default.
    let big = "x".repeat(300 * 1024);
    for (method, path, mut body) in json_routes() {
        body["padding"] = json!(big);
        let a = app.raw(method, &path, body.to_string()).await;
        assert_error_shape(&a, 413, "PAYLOAD_TOO_LARGE");
    }
    let label = json!({"leadKey": "n1", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad", "label": big});
    assert_error_shape(&app.post("/v1/sites/s1/leads", label).await, 413, "PAYLOAD_TOO_LARGE");
    // Just over the limit, byte for byte.
    let limit = 256 * 1024;
    let prefix = r#"{"siteIds":["s1"],"from":0,"to":1,"x":""#;
    let exact_over = format!("{prefix}{}\"}}", "y".repeat(limit + 1 - prefix.len() - 2));
    assert_eq!(exact_over.len(), limit + 1);
    assert_error_shape(&app.raw("POST", "/v1/reports/leads", exact_over).await, 413, "PAYLOAD_TOO_LARGE");
    // At the limit the body is read (and then refused for what it says).
    let at_limit = format!("{prefix}{}\"}}", "y".repeat(limit - prefix.len() - 2));
    assert_eq!(at_limit.len(), limit);
    assert_error_shape(&app.raw("POST", "/v1/reports/leads", at_limit).await, 400, "INVALID_ARGUMENT");
    assert_eq!(counts(&app).await, before);
});

// rule: LEAD-10
backend_test!(unknown_sites_are_not_found, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    let range = format!("from={D0}&to={}", D0 + DAY - 1);
    let cases: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", "/v1/sites/nope".into(), None),
        ("PATCH", "/v1/sites/nope".into(), Some(json!({"name": "X"}))),
        (
            "POST",
            "/v1/sites/nope/leads".into(),
            Some(json!({"leadKey": "n", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"})),
        ),
        (
            "POST",
            "/v1/sites/nope/leads/k1/stage".into(),
            Some(json!({"stage": "won", "eventId": "e", "occurredAt": T0})),
        ),
        ("DELETE", "/v1/sites/nope/leads/k1".into(), None),
        ("GET", "/v1/sites/nope/leads/ld_1/journey".into(), None),
        ("GET", format!("/v1/leads?siteIds=nope&{range}"), None),
        ("PUT", "/v1/sites/nope/pipeline".into(), Some(json!({"columns": []}))),
        ("PUT", "/v1/sites/nope/event-map".into(), Some(json!({"columns": {}, "sendLeadEvent": false}))),
        ("GET", "/v1/sites/nope/event-map".into(), None),
        ("POST", "/v1/reports/leads".into(), Some(json!({"siteIds": ["nope"], "from": D0, "to": D0 + 1}))),
        ("POST", "/v1/reports/leads-daily".into(), Some(json!({"siteIds": ["s1", "nope"], "from": D0, "to": D0 + 1}))),
        // A lead that is not there.
        (
            "POST",
            "/v1/sites/s1/leads/nobody/stage".into(),
            Some(json!({"stage": "won", "eventId": "e", "occurredAt": T0})),
        ),
        ("DELETE", "/v1/sites/s1/leads/nobody".into(), None),
        ("GET", "/v1/sites/s1/leads/ld_nobody/journey".into(), None),
    ];
    for (method, path, body) in cases {
        let a = app.request(method, &path, body).await;
        assert_error_shape(&a, 404, "NOT_FOUND");
    }
    assert_eq!(counts(&app).await, before);
    // A second site with the same id is a conflict.
    let dup = app
        .post(
            "/v1/sites",
            json!({"siteId": "s1", "name": "Again", "currency": "USD", "timezone": "UTC", "ownerId": "o"}),
        )
        .await;
    assert_error_shape(&dup, 409, "CONFLICT");
    assert_eq!(app.get("/v1/sites/s1").await.ok()["currency"], "BRL");
});

// contract: every failure is {code, message}, never a 500 (LEAD-10, FED-02)
backend_test!(unknown_routes_are_not_found_and_nothing_is_a_500, |app| {
    setup(&app).await;
    let before = counts(&app).await;
    let mut answers = Vec::new();
    for (method, path) in [
        ("GET", "/nope"),
        ("GET", "/v2/sites"),
        ("GET", "/v1/nope"),
        ("POST", "/v1/nope"),
        ("GET", "/v1/sites/s1/nope"),
        ("GET", "/v1/sites/s1/leads/k1/stage/extra"),
        ("GET", "/v1/reports/leads"),
        ("DELETE", "/v1/sites/s1"),
        ("PUT", "/v1/sites"),
        ("POST", "/health"),
        ("DELETE", "/metrics"),
    ] {
        let a = app.request(method, path, None).await;
        assert!(matches!(a.status, 404 | 405), "{method} {path}: {} {}", a.status, a.text);
        assert_error_shape(&a, a.status, if a.status == 404 { "NOT_FOUND" } else { a.code() });
        answers.push(a);
    }
    // Odd paths and queries: refused, never a crash.
    for path in [
        "/v1/sites/%FF",
        "/v1/sites/%00",
        "/v1/sites/a%2Fb",
        "/v1/sites/..%2F..%2Fetc",
        "/v1/sites/s1/leads/%FF%FE/journey",
        "/v1/leads?siteIds=%FF&from=0&to=1",
        "/v1/leads?siteIds=s1&from=0&to=1&from=2",
        "/v1/leads?siteIds=s1,,s2&from=0&to=1",
        "/v1/sites/s1/event-map?now=",
    ] {
        let a = app.get(path).await;
        assert!(matches!(a.status, 400 | 404), "{path}: {} {}", a.status, a.text);
        answers.push(a);
    }
    for a in &answers {
        assert!(a.status < 500, "{}", a.text);
        assert!(CODES.contains(&a.code()), "{}", a.text);
    }
    assert_eq!(counts(&app).await, before);
    // The daemon still answers.
    app.get("/health").await.ok();
});
