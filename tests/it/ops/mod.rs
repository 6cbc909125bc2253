//! Operations: the host key, the open routes, metrics and the secret canaries
//! here; `hardening` (hostile clients on raw sockets), `shutdown` (SIGTERM of
//! the real binary), `scale_out` (two processes on one PostgreSQL) and
//! `writers` (several write connections on PostgreSQL) beside them.
//!
//! Authentication of the host API, the open operational routes, the OpenAPI
//! document, metrics labels, and a canary hunt for secrets in every answer.

mod bulk_rows;
mod hardening;
mod scale_out;
mod schema;
mod shutdown;
mod writers;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

const D0: i64 = T0 - DAY / 2;

/// Every host route the README's tour names (method, path as OpenAPI writes it),
/// plus `/v1/ping`. Routes of later milestones may not be served yet.
const API_ROUTES: &[(&str, &str)] = &[
    ("get", "/v1/ping"),
    ("post", "/v1/sites"),
    ("get", "/v1/sites"),
    ("get", "/v1/sites/{siteId}"),
    ("patch", "/v1/sites/{siteId}"),
    ("post", "/v1/sites/{siteId}/leads"),
    ("post", "/v1/sites/{siteId}/leads/{leadKey}/stage"),
    ("delete", "/v1/sites/{siteId}/leads/{leadKey}"),
    ("get", "/v1/leads"),
    ("get", "/v1/sites/{siteId}/leads/{leadId}/journey"),
    ("put", "/v1/sites/{siteId}/pipeline"),
    ("put", "/v1/sites/{siteId}/event-map"),
    ("get", "/v1/sites/{siteId}/event-map"),
    ("post", "/v1/reports/leads"),
    ("post", "/v1/reports/leads-daily"),
    ("post", "/v1/meta/status"),
    ("get", "/v1/sites/{siteId}/meta/conversions"),
    ("put", "/v1/meta/owners/{ownerKey}/connection"),
    ("post", "/v1/meta/owners/{ownerKey}/connection/code"),
    ("post", "/v1/meta/owners/{ownerKey}/connection/refresh"),
    ("get", "/v1/meta/owners/{ownerKey}/connection"),
    ("delete", "/v1/meta/owners/{ownerKey}"),
    ("post", "/v1/sites/{siteId}/ad-accounts"),
    ("delete", "/v1/sites/{siteId}/ad-accounts/{adAccountId}"),
    ("get", "/v1/sites/{siteId}/ad-accounts/{adAccountId}/unlink-preview"),
    ("post", "/v1/sites/{siteId}/meta/sync"),
    ("put", "/v1/sites/{siteId}/pixel"),
    ("delete", "/v1/sites/{siteId}/pixel"),
    ("delete", "/v1/federation/connections/{connectionId}/meta"),
    ("put", "/v1/federation/grants/{connectionId}"),
    ("post", "/v1/federation/grants/{connectionId}/revoke"),
];

/// The routes of this milestone (sites, leads, board, reports): all of them must be served.
const LEAD_ROUTES: usize = 15;

/// A concrete path for a route template, with ids that exist nowhere.
fn probe_path(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').expect("a closed path parameter") + open;
        out.push_str(&rest[..open]);
        out.push_str(match &rest[open + 1..close] {
            "siteId" => "probe-site",
            "leadId" => "ld_probe",
            "adAccountId" => "act_1",
            _ => "probe-id",
        });
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Row counts of every table in the test database, by name.
pub(crate) async fn table_counts(app: &TestApp) -> BTreeMap<String, i64> {
    #[derive(diesel::QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            let sql = if c.is_sqlite() {
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            } else {
                "SELECT CAST(table_name AS TEXT) AS name FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            };
            let names: Vec<Name> = diesel::sql_query(sql).load(c)?;
            let mut out = BTreeMap::new();
            for t in names {
                let rows: Vec<N> =
                    diesel::sql_query(format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM \"{}\"", t.name)).load(c)?;
                out.insert(t.name, rows[0].n);
            }
            Ok(out)
        })
        .await
        .unwrap()
}

/// A concrete, valid call for each of the first LEAD_ROUTES routes of API_ROUTES (same order).
fn calls(lead_id: &str) -> Vec<(&'static str, String, Option<Value>)> {
    let range = format!("from={D0}&to={}", D0 + DAY - 1);
    vec![
        ("GET", "/v1/ping".into(), None),
        (
            "POST",
            "/v1/sites".into(),
            Some(json!({"siteId": "s9", "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": "o"})),
        ),
        ("GET", "/v1/sites".into(), None),
        ("GET", "/v1/sites/s1".into(), None),
        ("PATCH", "/v1/sites/s1".into(), Some(json!({"name": "Renamed"}))),
        (
            "POST",
            "/v1/sites/s1/leads".into(),
            Some(json!({"leadKey": "n1", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"})),
        ),
        (
            "POST",
            "/v1/sites/s1/leads/k1/stage".into(),
            Some(json!({"stage": "won", "revenueCents": 5, "eventId": "w", "occurredAt": T0})),
        ),
        ("DELETE", "/v1/sites/s1/leads/n1".into(), None),
        ("GET", format!("/v1/sites/s1/leads/{lead_id}/journey"), None),
        ("GET", format!("/v1/leads?siteIds=s1&{range}"), None),
        ("PUT", "/v1/sites/s1/pipeline".into(), Some(json!({"columns": [{"key": "z", "name": "Z"}]}))),
        ("PUT", "/v1/sites/s1/event-map".into(), Some(json!({"columns": {}, "sendLeadEvent": true}))),
        ("GET", "/v1/sites/s1/event-map".into(), None),
        ("POST", "/v1/reports/leads".into(), Some(json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1}))),
        ("POST", "/v1/reports/leads-daily".into(), Some(json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1}))),
    ]
}

/// Sends `req` with a raw Authorization header (or none).
async fn with_header(app: &TestApp, method: &str, path: &str, body: Option<&Value>, auth: Option<&str>) -> Answer {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = app.http.request(m, format!("{}{}", app.base, path));
    if let Some(h) = auth {
        req = req.header("authorization", h);
    }
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), text }
}

// rule: SEC-05
backend_test!(every_host_route_needs_the_host_key, |app| {
    app.site("s1").await;
    let lead_id = app.lead("s1", "k1", T0, json!({})).await.ok()["leadId"].as_str().unwrap().to_string();
    let before = table_counts(&app).await;
    let calls = calls(&lead_id);
    assert_eq!(calls.len(), LEAD_ROUTES);
    let bad_auth: Vec<Option<String>> = vec![
        None,
        Some(String::new()),
        Some("Bearer".into()),
        Some("Bearer ".into()),
        Some("Bearer wrong-key".into()),
        Some(format!("Bearer {HOST_KEY}x")),
        Some(format!("Bearer {}", &HOST_KEY[..HOST_KEY.len() - 1])),
        Some(format!("Bearer {}", HOST_KEY.to_uppercase())),
        Some(format!("Basic {HOST_KEY}")),
        Some(HOST_KEY.into()),
        Some(format!("Token {HOST_KEY}")),
    ];
    for (method, path, body) in &calls {
        for auth in &bad_auth {
            let a = with_header(&app, method, path, body.as_ref(), auth.as_deref()).await;
            a.err(401, "UNAUTHENTICATED");
            assert!(!a.text.contains(HOST_KEY), "{}", a.text);
        }
    }
    // Every route of the contract, served yet or not, with or without a plausible body.
    for (method, template) in API_ROUTES {
        let body = (!matches!(*method, "get" | "delete")).then(|| json!({}));
        for auth in [None, Some("Bearer wrong-key-0123456789")] {
            let a = with_header(&app, &method.to_uppercase(), &probe_path(template), body.as_ref(), auth).await;
            a.err(401, "UNAUTHENTICATED");
        }
    }
    // The helper's own no-key client says the same.
    let anon = app.with_key(None);
    anon.get("/v1/sites").await.err(401, "UNAUTHENTICATED");
    anon.post("/v1/sites/s1/leads", json!({"leadKey": "n", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"}))
        .await
        .err(401, "UNAUTHENTICATED");
    // An unknown /v1 route tells nothing either.
    assert_eq!(anon.get("/v1/no-such-route").await.status, 401);
    // Nothing was written: counts, the site's name, the lead, the board.
    assert_eq!(table_counts(&app).await, before);
    assert_eq!(app.get("/v1/sites/s1").await.ok()["name"], "Site s1");
    app.get(&format!("/v1/sites/s1/leads/{lead_id}/journey")).await.ok();
    // The open routes need no key.
    let health = anon.get("/health").await.ok();
    assert_eq!(health["status"], "ok");
    let metrics = anon.get("/metrics").await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.text.contains("rastrod_http_requests_total"));
    assert_eq!(anon.get("/openapi.json").await.status, 200);
    // With the key every route of the list answers (so the list above is the real one).
    for (method, path, body) in calls {
        let a = app.request(method, &path, body).await;
        assert!(a.status < 300, "{method} {path}: {}", a.text);
    }
    // The scheme is case-insensitive, the key is not.
    let a = with_header(&app, "GET", "/v1/ping", None, Some(&format!("bearer {HOST_KEY}"))).await;
    assert_eq!(a.ok(), json!({"ok": true}));
});

/// Two host keys, comma-separated.
const TWO_KEYS: (&str, &str) = ("first-host-key-0123456789", "second-host-key-0123456789");

fn two_host_keys_builder(backend: Backend) -> TestAppBuilder {
    let (k1, k2) = TWO_KEYS;
    TestApp::builder(backend).env("RASTRO_HOST_API_KEY", &format!("{k1},{k2}"))
}

// rule: SEC-05
backend_test!(several_host_keys, two_host_keys_builder, |app| {
    let (k1, k2) = TWO_KEYS;
    for k in [k1, k2] {
        assert_eq!(app.with_key(Some(k)).get("/v1/ping").await.ok(), json!({"ok": true}));
    }
    let both = format!("{k1},{k2}");
    for k in [HOST_KEY, both.as_str(), "first-host-key", ""] {
        app.with_key(Some(k)).get("/v1/ping").await.err(401, "UNAUTHENTICATED");
    }
});

/// No host key at all.
fn no_host_key_builder(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend).env("RASTRO_HOST_API_KEY", "")
}

// rule: SEC-05
backend_test!(no_host_key_configured, no_host_key_builder, |app| {
    for k in [Some(HOST_KEY), Some(""), None] {
        let a = app
            .with_key(k)
            .post(
                "/v1/sites",
                json!({"siteId": "s1", "name": "N", "currency": "BRL", "timezone": "UTC", "ownerId": "o"}),
            )
            .await;
        a.err(401, "UNAUTHENTICATED");
    }
    assert_eq!(app.count("sites").await, 0);
    assert_eq!(app.with_key(None).get("/health").await.status, 200);
});

// contract: /openapi.json documents every /v1 route (an open route, SEC-05)
backend_test!(openapi_lists_every_host_route, |app| {
    let doc = app.with_key(None).get("/openapi.json").await.ok();
    assert!(doc["openapi"].as_str().unwrap().starts_with('3'), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().unwrap();
    let mut documented = BTreeSet::new();
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                documented.insert((method.clone(), path.clone()));
            }
        }
    }
    assert!(documented.contains(&("get".to_string(), "/health".to_string())));
    // Which routes are served, among the contract's and the documented ones: the
    // router's own 404 (as for a path that exists nowhere) means not served; any
    // other answer means a handler ran.
    let mut candidates: BTreeSet<(String, String)> =
        API_ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    candidates.extend(documented.iter().filter(|(_, p)| p.starts_with("/v1/")).cloned());
    let unrouted = app.get("/v1/no-such-route-at-all").await;
    unrouted.err(404, "NOT_FOUND");
    let mut served = BTreeSet::new();
    for (method, template) in &candidates {
        let body = (!matches!(method.as_str(), "get" | "delete")).then(|| json!({}));
        let a = app.request(&method.to_uppercase(), &probe_path(template), body).await;
        assert!(a.status < 500, "{method} {template}: {}", a.text);
        if !(a.status == 404 && a.body == unrouted.body) {
            served.insert((method.clone(), template.clone()));
        }
    }
    // This milestone's routes are all served.
    for (method, template) in &API_ROUTES[..LEAD_ROUTES] {
        assert!(served.contains(&(method.to_string(), template.to_string())), "{method} {template} is not served");
    }
    // Every served route is documented, and every documented /v1 route is served.
    for r in &served {
        assert!(documented.contains(r), "{r:?} is served but not in /openapi.json");
    }
    for r in documented.iter().filter(|(_, p)| p.starts_with("/v1/")) {
        assert!(served.contains(r), "{r:?} is documented but not served");
    }
    // Every /v1 operation declares the host key and a success answer.
    for (method, path) in &served {
        let op = &paths[path][method];
        assert!(
            op["security"].as_array().is_some_and(|s| s.iter().any(|r| r.get("hostKey").is_some())),
            "{method} {path}"
        );
        assert!(op["responses"].as_object().unwrap().keys().any(|k| k.starts_with('2')), "{method} {path}");
    }
    assert!(doc["components"]["securitySchemes"]["hostKey"].is_object());
});

// contract: /metrics labels are route patterns, never ids (SEC-03)
backend_test!(metrics_count_by_route_pattern_never_by_id, |app| {
    const SITE: &str = "site-zq77x";
    const MISSING: &str = "missing-zq88y";
    app.site(SITE).await;
    let lead = app.lead(SITE, "lead-key-zq99z", T0, json!({})).await.ok();
    let lead_id = lead["leadId"].as_str().unwrap().to_string();
    app.lead(SITE, "lead-key-zq99w", T0, json!({})).await.ok();
    app.lead(SITE, "lead-key-zq99z", T0, json!({})).await.ok();
    app.get(&format!("/v1/sites/{SITE}/leads/{lead_id}/journey")).await.ok();
    app.get(&format!("/v1/sites/{MISSING}")).await.err(404, "NOT_FOUND");
    app.get("/unknown-route-zq66v").await.err(404, "NOT_FOUND");
    app.with_key(None).get(&format!("/v1/sites/{SITE}")).await.err(401, "UNAUTHENTICATED");

    let m = app.with_key(None).get("/metrics").await;
    assert_eq!(m.status, 200);
    let text = m.text;
    // Two leads created, one repeat: counted under the route pattern.
    assert!(
        text.contains(r#"rastrod_http_requests_total{route="/v1/sites/{siteId}/leads",method="POST",status="201"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(r#"rastrod_http_requests_total{route="/v1/sites/{siteId}/leads",method="POST",status="200"} 1"#),
        "{text}"
    );
    assert!(text.contains(r#"route="/v1/sites/{siteId}/leads/{leadId}/journey",method="GET",status="200""#), "{text}");
    assert!(text.contains(r#"route="/v1/sites/{siteId}",method="GET",status="404""#), "{text}");
    assert!(text.contains(r#"route="/v1/sites/{siteId}",method="GET",status="401""#), "{text}");
    assert!(text.contains("rastrod_http_request_duration_seconds_bucket"), "{text}");
    for concrete in [SITE, MISSING, "lead-key-zq99", lead_id.as_str(), "unknown-route-zq66v", HOST_KEY] {
        assert!(!text.contains(concrete), "{concrete} in /metrics");
    }
});

// contract: /metrics counts the database statements (an open route, SEC-05)
backend_test!(metrics_count_database_statements, |app| {
    let queries = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("rastrod_db_queries_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no rastrod_db_queries_total in {text}"))
    };
    let first = app.with_key(None).get("/metrics").await.text;
    assert!(first.contains("# TYPE rastrod_db_queries_total counter"), "{first}");
    assert!(first.contains("# HELP rastrod_db_queries_total "), "{first}");
    let before = queries(&first);
    app.get("/v1/sites/missing-q1").await.err(404, "NOT_FOUND");
    let after_read = queries(&app.with_key(None).get("/metrics").await.text);
    assert!(after_read > before, "a read counts: {before} -> {after_read}");
    app.site("site-q1").await;
    let after_write = queries(&app.with_key(None).get("/metrics").await.text);
    assert!(after_write > after_read, "a write counts: {after_read} -> {after_write}");
});

// rule: LEAD-03, SEC-03
backend_test!(secrets_canaries_appear_in_no_answer, |app| {
    const KEY_CANARY: &str = "hostkeycanary7Qm2Zx9Lw4";
    const CLICK_CANARY: &str = "clickcanary5Rt8Yp1Kd3";
    const PLAIN_PHONE: &str = "5511987650321";
    let ph = "ca11ab1e".repeat(8);
    let ext = "deadbeef".repeat(8);
    let canaries = [KEY_CANARY.to_string(), CLICK_CANARY.to_string(), PLAIN_PHONE.to_string(), ph.clone(), ext.clone()];
    let mut answers: Vec<Answer> = Vec::new();

    app.site("s1").await;
    app.put("/v1/sites/s1/pipeline", json!({"columns": [{"key": "a", "name": "A"}]})).await.ok();
    // The canaries go in where a host would put them.
    let created = app
        .lead(
            "s1",
            "k1",
            T0,
            json!({"clickId": CLICK_CANARY, "adId": "ad1", "campaignId": "c1", "adsetId": "as1", "column": "a",
                "meta": {"ph": [ph], "externalId": ext}}),
        )
        .await;
    let lead_id = created.body["leadId"].as_str().unwrap().to_string();
    answers.push(created);
    answers.push(app.lead("s1", "k2", T0 + 1, json!({"meta": {"ph": [PLAIN_PHONE]}, "clickId": CLICK_CANARY})).await);
    answers.push(
        app.stage(
            "s1",
            "k1",
            json!({"stage": "won", "revenueCents": 100, "eventId": "w", "occurredAt": T0 + 5, "meta": {"ph": [ph]}}),
        )
        .await,
    );
    // ...and where a host would put them by mistake: every answer is an error that must not echo them.
    let wrong = app.with_key(Some(KEY_CANARY));
    for a in [
        wrong.get("/v1/sites").await,
        wrong
            .post("/v1/sites/s1/leads", json!({"leadKey": "x", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"}))
            .await,
        wrong.get(&format!("/v1/sites/s1/leads/{lead_id}/journey")).await,
    ] {
        a.err(401, "UNAUTHENTICATED");
        answers.push(a);
    }
    for bad in [
        json!({"leadKey": "x", "eventId": "e", "occurredAt": CLICK_CANARY, "origin": "ctwa_ad"}),
        json!({"leadKey": "x", "eventId": "e", "occurredAt": T0, "origin": CLICK_CANARY}),
        json!({"leadKey": "x", "eventId": "e", "occurredAt": T0, "origin": ph.to_uppercase()}),
        json!({"leadKey": "x", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad", "adId": format!("{PLAIN_PHONE} {ph}")}),
        json!({"leadKey": "x", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad", "label": [KEY_CANARY]}),
    ] {
        let a = app.post("/v1/sites/s1/leads", bad).await;
        a.err(400, "INVALID_ARGUMENT");
        answers.push(a);
    }
    for bad in [
        json!({"stage": ph, "eventId": "e2", "occurredAt": T0}),
        json!({"stage": KEY_CANARY, "eventId": "e2", "occurredAt": T0}),
        json!({"stage": "won", "revenueCents": ext, "eventId": "e2", "occurredAt": T0}),
    ] {
        let a = app.stage("s1", "k1", bad).await;
        a.err(400, "INVALID_ARGUMENT");
        answers.push(a);
    }
    let a = app.put("/v1/sites/s1/event-map", json!({"columns": {"a": ph}, "sendLeadEvent": false})).await;
    a.err(400, "INVALID_ARGUMENT");
    answers.push(a);
    let a = app.get(&format!("/v1/leads?siteIds=s1&from={D0}&to={}&adId={ph}x", D0 + 1)).await;
    answers.push(a);
    let a = app.get(&format!("/v1/leads?siteIds=s1&from={D0}&to={}&limit={CLICK_CANARY}", D0 + 1)).await;
    a.err(400, "INVALID_ARGUMENT");
    answers.push(a);

    // Every read there is.
    let range = format!("from={D0}&to={}", D0 + DAY - 1);
    for path in [
        "/v1/sites".to_string(),
        "/v1/sites/s1".to_string(),
        format!("/v1/leads?siteIds=s1&{range}"),
        format!("/v1/leads?siteIds=s1&{range}&adId=ad1"),
        format!("/v1/sites/s1/leads/{lead_id}/journey"),
        format!("/v1/sites/s1/event-map?now={D0}"),
    ] {
        let a = app.get(&path).await;
        assert_eq!(a.status, 200, "{path}: {}", a.text);
        answers.push(a);
    }
    for (from, to) in [(D0, D0 + DAY - 1), (T0 - 1, T0 + 1)] {
        answers.push(app.post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": from, "to": to})).await);
        answers.push(app.post("/v1/reports/leads-daily", json!({"siteIds": ["s1"], "from": from, "to": to})).await);
    }
    let anon = app.with_key(None);
    answers.push(anon.get("/metrics").await);
    answers.push(anon.get("/openapi.json").await);
    answers.push(anon.get("/health").await);

    for a in &answers {
        assert!(a.status < 500, "{}", a.text);
        for c in &canaries {
            assert!(!a.text.contains(c.as_str()), "canary {c} in an answer: {}", a.text);
            assert!(!a.text.to_lowercase().contains(&c.to_lowercase()), "canary {c} in an answer: {}", a.text);
        }
    }
    // The lead and its sale were recorded all the same.
    let r = app.report(&["s1"], D0, D0 + DAY - 1).await;
    assert_eq!((r["totals"]["leads"].as_i64(), r["totals"]["revenueCents"].as_i64()), (Some(2), Some(100)));

    // On SQLite: no hashed contact data was written to the database files at all
    // (the click id is stored by design, so it is not checked here).
    if app.backend() == Backend::Sqlite {
        let path = app.db.sqlite_path().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        if let Ok(wal) = std::fs::read(path.with_extension("db-wal")) {
            bytes.extend(wal);
        }
        let hay = String::from_utf8_lossy(&bytes);
        for c in [&ph, &ext, &PLAIN_PHONE.to_string(), &KEY_CANARY.to_string()] {
            assert!(!hay.contains(c.as_str()), "{c} stored in the database");
        }
    }
});
