//! Route regrouping after a `routePatterns` change (ROUTE-04 to ROUTE-09): the
//! job moves stored events and rollup rows whose route is still a raw path
//! matching the new list, a bounded step at a time, never splits rows already
//! grouped, keeps journeys' raw paths, counts each pageview once at every
//! step, and goes on after a restart.

use std::collections::BTreeMap;
use std::sync::Arc;

use rastrod::clock::ManualClock;
use rastrod::config::Config;
use rastrod::server::RunningServer;
use serde_json::{Value, json};

use crate::analytics::{HOST, UA, analytics_builder, drain, pageview, reader, site, track};
use crate::backend_test;
use crate::common::{DAY, T0, TestDb};
use crate::federation::{CONFIGURE, Fed, FedBuilder, READ, claims};

fn today() -> (i64, i64) {
    let d = T0 - T0.rem_euclid(DAY);
    (d, d + DAY - 1)
}

/// One row per step: every move is visible between steps.
fn one_row_steps(backend: crate::common::Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_ROUTE_REGROUP_BATCH", "1")
}

fn vitals(id: &str, lcp: i64) -> Value {
    json!({"type": "vitals", "pageviewId": format!("p_{id:0>16}"), "lcp": lcp})
}

/// Total views on the map and pageviews on the overview's pages.
async fn totals(fed: &Fed, t: &str) -> (i64, i64) {
    let (from, to) = today();
    let m = fed.rest(Some(t), "siteMap", json!({"siteIds": ["loja"], "from": from, "to": to})).await.ok();
    let views = m["sites"][0]["routes"].as_array().unwrap().iter().map(|r| r["views"].as_i64().unwrap()).sum();
    let o = fed.rest(Some(t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.ok();
    let pages = o["pages"].as_array().unwrap().iter().map(|p| p["pageviews"].as_i64().unwrap()).sum();
    (views, pages)
}

// rule: ROUTE-04
// rule: ROUTE-05
// rule: ROUTE-06
// rule: ROUTE-07
// rule: ROUTE-08
// rule: ROUTE-09
backend_test!(a_pattern_change_regroups_stored_routes_step_by_step, one_row_steps, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    // Blog posts were grouped under /blog/:slug from the start.
    app.patch("/v1/sites/loja", json!({"routePatterns": ["/blog/:slug"]})).await.ok();
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let t = reader(&fed);
    let admin =
        fed.key.sign(&crate::federation::with(claims(&[READ, CONFIGURE]), json!({"exp": T0 / 1000 + 30 * 86_400})));
    let v1 =
        track(app, "loja", "v_visitor0001", vec![pageview("1", "/p/1"), pageview("2", "/p/2"), pageview("3", "/")])
            .await["sessionId"]
            .clone();
    track(app, "loja", "v_visitor0002", vec![pageview("4", "/p/1"), vitals("4", 1000)]).await;
    track(app, "loja", "v_visitor0003", vec![pageview("5", "/blog/x")]).await;
    drain(app).await;
    // Accepted before the change, applied after the job: its outbox row moves too.
    track(app, "loja", "v_visitor0004", vec![pageview("6", "/p/3")]).await;
    let (from, to) = today();
    let before = fed.rest(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": from, "to": to})).await.ok();
    assert_eq!(before["sites"][0]["routes"][0]["route"], "/p/1");

    // /blog/:slug leaves the list and /blog/* comes in: the grouped rows stay (never split).
    let settings = fed
        .both(Some(&admin), "updateSite", json!({"siteId": "loja", "routePatterns": ["/p/:id", "/blog/*"]}))
        .await
        .unwrap();
    assert_eq!(settings["regrouping"], true);
    let mut steps = 0;
    loop {
        let s = fed.both(Some(&admin), "siteSettings", json!({"siteId": "loja"})).await.unwrap();
        let m = fed.rest(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": from, "to": to})).await.ok();
        assert_eq!(m["sites"][0]["regrouping"], s["regrouping"]);
        if s["regrouping"] == false {
            break;
        }
        // Between steps every pageview counts once, under its raw path or its route.
        assert_eq!(totals(&fed, &t).await, (5, 5), "after {steps} steps");
        assert!(rastrod::actors::regroup::step(&app.state.cx).await.unwrap());
        steps += 1;
        assert!(steps < 200, "the job ends");
    }
    assert!(steps > 9, "one row per step: {steps} steps");
    assert_eq!(drain(app).await, 1);
    let m = fed.both(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!(
        m["sites"][0]["routes"],
        json!([
            {"route": "/p/:id", "views": 4, "entries": 3, "exits": 2, "bounces": 2},
            {"route": "/", "views": 1, "entries": 0, "exits": 1, "bounces": 0},
            {"route": "/blog/:slug", "views": 1, "entries": 1, "exits": 1, "bounces": 1},
        ])
    );
    assert_eq!(
        m["sites"][0]["transitions"],
        json!([{"from": "/p/:id", "to": "/", "count": 1}, {"from": "/p/:id", "to": "/p/:id", "count": 1}])
    );
    assert_eq!(m["routePatterns"]["loja"], json!(["/p/:id", "/blog/*"]));
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!(
        o["pages"],
        json!([{"route": "/p/:id", "pageviews": 4, "visitors": 3}, {"route": "/", "pageviews": 1, "visitors": 1},
            {"route": "/blog/:slug", "pageviews": 1, "visitors": 1}])
    );
    assert_eq!(o["entryPages"], json!([{"route": "/p/:id", "sessions": 3}, {"route": "/blog/:slug", "sessions": 1}]));
    let v = fed.both(Some(&t), "vitalsReport", json!({"siteId": "loja", "from": from, "to": to})).await.unwrap();
    assert_eq!(v["byPage"][0]["route"], "/p/:id");
    assert_eq!(v["byPage"][0]["metrics"][0]["p75"], 1000);
    // Journeys keep raw paths; their route fields carry the route.
    let j = fed
        .both(
            Some(&t),
            "sessionJourney",
            json!({"siteId": "loja", "sessionId": v1, "from": from, "to": to,
                "paginationOpts": {"numItems": 10, "cursor": null}}),
        )
        .await
        .unwrap();
    let got: Vec<(&str, &str)> = j["page"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["route"].as_str().unwrap()))
        .collect();
    assert_eq!(got, vec![("/p/1", "/p/:id"), ("/p/2", "/p/:id"), ("/", "/")]);
    let s = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": v1})).await.unwrap();
    assert_eq!((s["entryPath"].as_str(), s["exitPath"].as_str()), (Some("/p/1"), Some("/")));
});

/// One daemon over `url` whose actors tick every `interval`.
async fn process(url: &str, interval: &str, clock: Arc<ManualClock>) -> RunningServer {
    let env: BTreeMap<String, String> = [
        ("RASTRO_DATABASE_URL", url),
        ("RASTRO_HOST_API_KEY", crate::common::HOST_KEY),
        ("RASTRO_ROLLUP_INTERVAL", interval),
        ("RASTRO_ROUTE_REGROUP_BATCH", "1"),
        ("RASTRO_DATABASE_POOL_SIZE", "4"),
        ("RASTRO_LISTEN", "127.0.0.1:0"),
        ("RASTRO_WORKERS", "1"),
        ("RASTRO_SHUTDOWN_GRACE", "1s"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = Config::load_from(None, &env).unwrap();
    let listener = rastrod::server::bind(&config).unwrap();
    rastrod::server::start(config, clock, listener).await.unwrap()
}

// rule: ROUTE-08
#[actix_web::test]
async fn a_regroup_goes_on_after_a_restart() {
    let db = TestDb::sqlite();
    let clock = ManualClock::new(T0);
    let first = process(&db.url, "1h", clock.clone()).await;
    let http = reqwest::Client::new();
    let base = format!("http://{}", first.addr);
    let site = json!({"siteId": "loja", "name": "L", "currency": "BRL", "timezone": "UTC", "ownerId": "o1", "domains": [HOST]});
    http.post(format!("{base}/v1/sites")).bearer_auth(crate::common::HOST_KEY).json(&site).send().await.unwrap();
    for (i, path) in ["/p/1", "/p/2", "/p/3"].iter().enumerate() {
        let body = json!({"siteId": "loja", "visitorId": format!("v_visitor000{i}"), "events": [pageview(&i.to_string(), path)]});
        let res =
            http.post(format!("{base}/rastro/events")).header("user-agent", UA).body(body.to_string()).send().await;
        assert_eq!(res.unwrap().status(), 200);
    }
    rastrod::actors::report::drain(&first.state.cx).await.unwrap();
    let res = http
        .patch(format!("{base}/v1/sites/loja"))
        .bearer_auth(crate::common::HOST_KEY)
        .json(&json!({"routePatterns": ["/p/:id"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // A few steps, then the process stops mid-job.
    for _ in 0..4 {
        assert!(rastrod::actors::regroup::step(&first.state.cx).await.unwrap());
    }
    let cx = first.state.cx.clone();
    let mid = cx.read(|c| rastrod::service::analytics::rollup::regroup::regrouping(c, "loja")).await.unwrap();
    assert!(mid, "still regrouping");
    first.stop().await.unwrap();
    // The next process's actor takes the job from where it stood, and ends it.
    let second = process(&db.url, "50ms", clock.clone()).await;
    let cx = second.state.cx.clone();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while cx.read(|c| rastrod::service::analytics::rollup::regroup::regrouping(c, "loja")).await.unwrap() {
        assert!(std::time::Instant::now() < deadline, "the restarted actor ends the job");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let routes =
        cx.read(|c| Ok(rastrod::store::analytics::site_map::routes(c, "loja", 0, i64::MAX / 2)?)).await.unwrap();
    let got: Vec<(String, i64)> = routes.into_iter().map(|r| (r.route, r.views)).collect();
    assert_eq!(got, vec![("/p/:id".to_string(), 3)]);
    second.stop().await.unwrap();
}

// rule: ROUTE-10
backend_test!(a_pattern_stored_before_the_grammar_is_answered_unchanged, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    // Written before the grammar existed (by hand here): `*x` is no segment of it.
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            diesel::sql_query(r#"UPDATE sites SET route_patterns = '["/promo/*x", "/p/:id"]' WHERE id = 'loja'"#)
                .execute(c)?;
            Ok(())
        })
        .await
        .unwrap();
    let admin =
        fed.key.sign(&crate::federation::with(claims(&[READ, CONFIGURE]), json!({"exp": T0 / 1000 + 30 * 86_400})));
    let s = fed.both(Some(&admin), "siteSettings", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(s["routePatterns"], json!(["/promo/*x", "/p/:id"]));
    // It matches its whole path literally: /promo/*x is its own route, /promo/y is not grouped.
    track(
        app,
        "loja",
        "v_visitor0001",
        vec![pageview("1", "/promo/*x"), pageview("2", "/promo/y"), pageview("3", "/p/9")],
    )
    .await;
    drain(app).await;
    let (from, to) = today();
    let t = reader(&fed);
    let m = fed.both(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    let routes: Vec<&str> =
        m["sites"][0]["routes"].as_array().unwrap().iter().map(|r| r["route"].as_str().unwrap()).collect();
    assert_eq!(routes, vec!["/p/:id", "/promo/*x", "/promo/y"]);
    assert_eq!(m["routePatterns"]["loja"], json!(["/promo/*x", "/p/:id"]));
});

// rule: ROUTE-01
backend_test!(a_new_pattern_outside_the_grammar_is_refused_and_not_stored, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let admin =
        fed.key.sign(&crate::federation::with(claims(&[READ, CONFIGURE]), json!({"exp": T0 / 1000 + 30 * 86_400})));
    app.patch("/v1/sites/loja", json!({"routePatterns": ["/p/:id"]})).await.ok();
    // `**` not last, a parameter name starting with a digit, a `*` inside a
    // literal, a parameter without a name, an empty segment, a trailing slash.
    for bad in ["/p/**/x", "/p/:1d", "/p/a*b", "/p/:", "/p//x", "/p/x/"] {
        let host = app.patch("/v1/sites/loja", json!({"routePatterns": ["/blog/*", bad]})).await;
        host.err(400, "INVALID_ARGUMENT");
        let message = host.body["message"].as_str().unwrap_or_default();
        assert!(message.contains("route pattern") && message.contains("**"), "{bad}: {message}");
        let args = json!({"siteId": "loja", "routePatterns": [bad]});
        Fed::expect_err(fed.both(Some(&admin), "updateSite", args).await, 400, "INVALID_ARGUMENT");
    }
    // Nothing of the refused lists was stored.
    assert_eq!(app.get("/v1/sites/loja").await.ok()["routePatterns"], json!(["/p/:id"]));
    let s = fed.both(Some(&admin), "siteSettings", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(s["routePatterns"], json!(["/p/:id"]));
});
