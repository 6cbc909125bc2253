//! The site map and the web vitals over HTTP: the data sets go in through the
//! tracker route and the import route, the report actor's apply step (the
//! `drain` the actor runs each tick) writes the rollups, and `siteMap` and
//! `vitalsReport` answer from them on both transports. Every expected figure
//! below is counted by hand from the data set beside it.

use serde_json::{Value, json};

use crate::analytics::{
    HOST, PHONE_UA, UA, analytics_builder, custom, drain, import, pageview, reader, site, track, track_as,
};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};
use crate::federation::{Fed, FedBuilder, READ};

fn today() -> (i64, i64) {
    let d = T0 - T0.rem_euclid(DAY);
    (d, d + DAY - 1)
}

/// When the upgrade that added the site map ran (its migration's clock).
async fn upgraded_at(app: &TestApp) -> i64 {
    app.state
        .cx
        .read(|c| Ok(rastrod::store::analytics::site_map::upgraded_at(c, "siteMap")?))
        .await
        .unwrap()
        .expect("the migration records the upgrade")
}

fn day_of(t: i64) -> i64 {
    t - t.rem_euclid(DAY)
}

/// The site-map data set, as the tracker sends it (one visitor per batch
/// list): v1 `/` then (another batch) `/p/1`, a custom event, `/p/2`; v2 `/`;
/// v3 `/p/1`, `/`; v4 a custom event on `/x`, then `/p/2`.
fn map_batches() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        ("v_visitor0001", vec![pageview("11", "/")]),
        ("v_visitor0001", vec![pageview("12", "/p/1"), custom("add_to_cart", "/p/1"), pageview("13", "/p/2")]),
        ("v_visitor0002", vec![pageview("21", "/")]),
        ("v_visitor0003", vec![pageview("31", "/p/1"), pageview("32", "/")]),
        ("v_visitor0004", vec![custom("scroll", "/x"), pageview("41", "/p/2")]),
    ]
}

/// The same data set as import lines, a second apart from `t0`.
fn map_lines(t0: i64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut t = t0;
    for (visitor, events) in map_batches() {
        for e in events {
            let path = e["url"].as_str().unwrap().trim_start_matches(&format!("https://{HOST}")).to_string();
            let mut l = json!({"type": e["type"], "occurredAt": t, "visitorId": visitor, "path": path});
            if let Some(p) = e.get("pageviewId") {
                l["pageviewId"] = p.clone();
            }
            if let Some(n) = e.get("name") {
                l["name"] = n.clone();
            }
            out.push(l);
            t += 1000;
        }
    }
    out
}

/// Views: `/` 3 (v1, v2, v3), `/p/1` 2 (v1, v3), `/p/2` 2 (v1, v4). Entries
/// (a session's first pageview): `/` 2 (v1, v2), `/p/1` 1 (v3), `/p/2` 1
/// (v4, whose session began with a custom event). Transitions: `/`→`/p/1`,
/// `/p/1`→`/p/2` (v1, the custom event between ignored), `/p/1`→`/` (v3).
/// Exits = views − outgoing: `/` 3−1, `/p/1` 2−2, `/p/2` 2−0. Bounces =
/// entries − continuations: `/` 2−1 (v1 went on), `/p/1` 1−1 (v3), `/p/2` 1−0.
fn expected_routes() -> Value {
    json!([
        {"route": "/", "views": 3, "entries": 2, "exits": 2, "bounces": 1},
        {"route": "/p/1", "views": 2, "entries": 1, "exits": 0, "bounces": 0},
        {"route": "/p/2", "views": 2, "entries": 1, "exits": 2, "bounces": 1},
    ])
}

fn expected_transitions() -> Value {
    // All count 1: by (from, to) bytes.
    json!([
        {"from": "/", "to": "/p/1", "count": 1},
        {"from": "/p/1", "to": "/", "count": 1},
        {"from": "/p/1", "to": "/p/2", "count": 1},
    ])
}

async fn patterns(app: &TestApp, site_id: &str, list: Value) {
    app.patch(&format!("/v1/sites/{site_id}"), json!({"routePatterns": list})).await.ok();
}

// rule: ARPT-19
// rule: ARPT-21
backend_test!(the_site_map_counts_views_entries_exits_bounces_and_transitions, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "dolar", false).await;
    patterns(app, "dolar", json!(["/p/:id"])).await;
    fed.grant(&["loja", "dolar"], &[READ]).await;
    let t = reader(&fed);
    for (visitor, events) in map_batches() {
        track(app, "loja", visitor, events).await;
    }
    // On "dolar", one session over two product pages: both group under /p/:id.
    track(app, "dolar", "v_visitor0005", vec![pageview("51", "/p/1"), pageview("52", "/p/2")]).await;
    let (from, to) = today();
    let args = json!({"siteIds": ["loja", "dolar"], "from": from, "to": to});
    let before = fed.both(Some(&t), "siteMap", args.clone()).await.unwrap();
    assert_eq!(before["sites"][0]["routes"], json!([]), "the map is a rollup: it trails acceptance");
    // The report actor's apply step writes the map, each outbox row once.
    assert_eq!(drain(app).await, 11, "9 events on loja, 2 on dolar");
    assert_eq!(drain(app).await, 0);
    assert_eq!(app.count("web_outbox_packs").await, 0);
    let m = fed.both(Some(&t), "siteMap", args).await.unwrap();
    assert_eq!((m["from"].as_i64(), m["to"].as_i64()), (Some(from), Some(to)));
    assert_eq!(m["routePatterns"], json!({"loja": [], "dolar": ["/p/:id"]}));
    let loja = &m["sites"][0];
    assert_eq!(loja["siteId"], "loja");
    assert_eq!(loja["routes"], expected_routes());
    assert_eq!(loja["transitions"], expected_transitions());
    assert_eq!((loja["truncated"].as_bool(), loja["regrouping"].as_bool()), (Some(false), Some(false)));
    // Sites made at T0 on a host upgraded at `upgraded`: the later one's UTC day.
    let coverage = day_of(T0.max(upgraded_at(app).await));
    assert_eq!(loja["coverageFrom"], coverage);
    let dolar = &m["sites"][1];
    assert_eq!(dolar["routes"], json!([{"route": "/p/:id", "views": 2, "entries": 1, "exits": 1, "bounces": 0}]));
    assert_eq!(dolar["transitions"], json!([{"from": "/p/:id", "to": "/p/:id", "count": 1}]));
    // A day without rollups: empty routes, coverageFrom still named.
    let empty =
        fed.both(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": from - DAY, "to": from - 1})).await.unwrap();
    assert_eq!(empty["sites"][0]["routes"], json!([]));
    assert_eq!(empty["sites"][0]["transitions"], json!([]));
    assert_eq!(empty["sites"][0]["coverageFrom"], coverage);
    // dataCoverage's siteMap class is collected from coverageFrom.
    let cov = fed
        .both(
            Some(&t),
            "dataCoverage",
            json!({"siteId": "loja", "from": coverage, "to": coverage + DAY - 1, "now": coverage + 2 * DAY}),
        )
        .await
        .unwrap();
    assert_eq!(cov["classes"]["siteMap"]["status"], "complete");
});

// rule: IMP-05
// rule: ARPT-21
backend_test!(imported_pageviews_make_the_same_map_and_lower_its_coverage, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "imp", false).await;
    fed.grant(&["imp"], &[READ]).await;
    let t = reader(&fed);
    let t0 = day_of(T0) - 5 * DAY + 3_600_000;
    let a = import(app, "imp", "map-1", &map_lines(t0)).await.ok();
    assert_eq!(a["accepted"], 9);
    drain(app).await;
    let from = day_of(t0);
    let m =
        fed.both(Some(&t), "siteMap", json!({"siteIds": ["imp"], "from": from, "to": from + DAY - 1})).await.unwrap();
    assert_eq!(m["sites"][0]["routes"], expected_routes());
    assert_eq!(m["sites"][0]["transitions"], expected_transitions());
    assert_eq!(m["sites"][0]["coverageFrom"], from, "lowered to the day of the earliest imported pageview");
});

// rule: ARPT-20
backend_test!(the_map_keeps_five_hundred_routes_and_two_thousand_transitions, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    // One session over 2,002 distinct pages a second apart: 2,002 routes, 2,001 pairs.
    let t0 = day_of(T0) - DAY;
    let lines: Vec<Value> = (0..2002)
        .map(|i| {
            json!({"type": "pageview", "occurredAt": t0 + i * 1000, "visitorId": "v_visitor0001",
                "pageviewId": format!("p_{i:0>16}"), "path": format!("/r/{i:04}")})
        })
        .collect();
    // Two imports (the session goes on across them): one visitor's 2,002 rows are too many binds for one statement.
    import(app, "loja", "many-1", &lines[..1001]).await.ok();
    import(app, "loja", "many-2", &lines[1001..]).await.ok();
    drain(app).await;
    let m = fed.both(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": t0, "to": t0 + DAY - 1})).await.unwrap();
    let s = &m["sites"][0];
    assert_eq!(s["truncated"], true);
    let routes = s["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 500);
    // Equal views: by route bytes.
    assert_eq!(routes[0]["route"], "/r/0000");
    assert_eq!(routes[499]["route"], "/r/0499");
    // The first page: an entry, left for the second (no exit, no bounce).
    assert_eq!(routes[0], json!({"route": "/r/0000", "views": 1, "entries": 1, "exits": 0, "bounces": 0}));
    let pairs = s["transitions"].as_array().unwrap();
    assert_eq!(pairs.len(), 2000);
    assert_eq!(pairs[0], json!({"from": "/r/0000", "to": "/r/0001", "count": 1}));
});

/// Vitals, by hand. Desktop: A `/` lcp 2000 then (a later event) 3000, cls
/// 0.05; B `/` lcp 2500, inp 150, cls 0.1. Mobile: C `/p/1` lcp 4500, inp 600,
/// cls 0.3, ttfb 900; D `/p/1` lcp 1000, fcp 1800.
fn vitals_batches() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    let v = |id: &str, extra: Value| {
        let mut e = json!({"type": "vitals", "pageviewId": format!("p_{id:0>16}")});
        for (k, x) in extra.as_object().unwrap() {
            e[k] = x.clone();
        }
        e
    };
    vec![
        ("v_visitor0001", UA, vec![pageview("1", "/")]),
        ("v_visitor0001", UA, vec![v("1", json!({"lcp": 2000, "cls": 0.05}))]),
        ("v_visitor0001", UA, vec![v("1", json!({"lcp": 3000}))]),
        ("v_visitor0002", UA, vec![pageview("2", "/"), v("2", json!({"lcp": 2500, "inp": 150, "cls": 0.1}))]),
        ("v_visitor0003", PHONE_UA, vec![pageview("3", "/p/1")]),
        ("v_visitor0003", PHONE_UA, vec![v("3", json!({"lcp": 4500, "inp": 600, "cls": 0.3, "ttfb": 900}))]),
        ("v_visitor0004", PHONE_UA, vec![pageview("4", "/p/1"), v("4", json!({"lcp": 1000, "fcp": 1800}))]),
    ]
}

fn vital(metric: &str, samples: i64, p75: Value, rating: Value, counts: [i64; 3]) -> Value {
    json!({"metric": metric, "samples": samples, "p75": p75, "rating": rating,
        "good": counts[0], "needsImprovement": counts[1], "poor": counts[2]})
}

fn none(metric: &str) -> Value {
    vital(metric, 0, Value::Null, Value::Null, [0, 0, 0])
}

/// The answer's metrics, worked out: lcp {1000, 2500, 3000, 4500} → rank
/// ceil(0.75·4) = 3 → 3000; inp {150, 600} → rank 2 → 600; cls {0.05, 0.1,
/// 0.3} → rank 3 → 0.3; fcp {1800} (good: the bounds are inclusive); ttfb {900}.
fn expected_vitals() -> (Value, Value, Value) {
    let metrics = json!([
        vital("lcp", 4, json!(3000), json!("needs-improvement"), [2, 1, 1]),
        vital("inp", 2, json!(600), json!("poor"), [1, 0, 1]),
        vital("cls", 3, json!(0.3), json!("poor"), [2, 0, 1]),
        vital("fcp", 1, json!(1800), json!("good"), [1, 0, 0]),
        vital("ttfb", 1, json!(900), json!("needs-improvement"), [0, 1, 0]),
    ]);
    // `/p/1` has 6 samples (C 4, D 2), `/` 5 (A 2, B 3).
    let p1 = json!([
        vital("lcp", 2, json!(4500), json!("poor"), [1, 0, 1]),
        vital("inp", 1, json!(600), json!("poor"), [0, 0, 1]),
        vital("cls", 1, json!(0.3), json!("poor"), [0, 0, 1]),
        vital("fcp", 1, json!(1800), json!("good"), [1, 0, 0]),
        vital("ttfb", 1, json!(900), json!("needs-improvement"), [0, 1, 0]),
    ]);
    let home = json!([
        vital("lcp", 2, json!(3000), json!("needs-improvement"), [1, 1, 0]),
        vital("inp", 1, json!(150), json!("good"), [1, 0, 0]),
        vital("cls", 2, json!(0.1), json!("good"), [2, 0, 0]),
        none("fcp"),
        none("ttfb"),
    ]);
    let by_page =
        json!([{"route": "/p/1", "samples": 6, "metrics": p1}, {"route": "/", "samples": 5, "metrics": home}]);
    let empty = json!([none("lcp"), none("inp"), none("cls"), none("fcp"), none("ttfb")]);
    let by_device = json!([
        {"device": "mobile", "metrics": p1},
        {"device": "tablet", "metrics": empty},
        {"device": "desktop", "metrics": home},
        {"device": null, "metrics": empty},
    ]);
    (metrics, by_page, by_device)
}

// rule: ARPT-17
// rule: ARPT-18
// rule: IMP-05
backend_test!(vitals_report_gives_exact_p75_ratings_by_page_and_device, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "imp", false).await;
    fed.grant(&["loja", "imp"], &[READ]).await;
    let t = reader(&fed);
    for (visitor, ua, events) in vitals_batches() {
        let body = json!({"siteId": "loja", "visitorId": visitor, "events": events});
        let a = track_as(app, &body, &[("user-agent", ua)]).await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert_eq!(a.body["rejected"], 0, "{}", a.text);
    }
    // The same samples imported five days back (device given on the line).
    let t0 = day_of(T0) - 5 * DAY;
    let mut lines = Vec::new();
    for (i, (visitor, ua, events)) in vitals_batches().into_iter().enumerate() {
        let device = if ua == UA { "desktop" } else { "mobile" };
        for (j, e) in events.into_iter().enumerate() {
            let mut l = e.clone();
            l["occurredAt"] = json!(t0 + (i * 10 + j) as i64 * 1000);
            l["visitorId"] = json!(visitor);
            l["device"] = json!(device);
            if let Some(url) = l.as_object_mut().unwrap().remove("url") {
                l["path"] = json!(url.as_str().unwrap().trim_start_matches(&format!("https://{HOST}")));
            }
            lines.push(l);
        }
    }
    import(app, "imp", "vitals-1", &lines).await.ok();
    let (from, to) = today();
    let ask = |site: &str, from: i64, to: i64| {
        fed.both(Some(&t), "vitalsReport", json!({"siteId": site, "from": from, "to": to}))
    };
    let before = ask("loja", from, to).await.unwrap();
    assert_eq!(before["metrics"][0]["samples"], 0, "digests trail acceptance");
    assert_eq!(before["metrics"][0]["p75"], Value::Null);
    drain(app).await;
    let (metrics, by_page, by_device) = expected_vitals();
    let v = ask("loja", from, to).await.unwrap();
    assert_eq!(v["siteId"], "loja");
    assert_eq!(
        v["thresholds"],
        json!({"lcp": [2500, 4000], "inp": [200, 500], "cls": [0.1, 0.25], "fcp": [1800, 3000], "ttfb": [800, 1800]})
    );
    assert_eq!(v["metrics"], metrics);
    assert_eq!(v["byPage"], by_page);
    assert_eq!(v["byDevice"], by_device);
    // The import, through the same pipeline, gives the same digests.
    let imported = ask("imp", day_of(t0), day_of(t0) + DAY - 1).await.unwrap();
    assert_eq!((&imported["metrics"], &imported["byPage"], &imported["byDevice"]), (&metrics, &by_page, &by_device));
    // Over 90 days (both data sets' days inside): the imported site's samples, once each.
    let wide = ask("imp", from - 89 * DAY, to).await.unwrap();
    assert_eq!(wide["metrics"], metrics);
});

/// The shape of the digests table: rows, and the samples they hold (one
/// row per value before migration 28, one per cell after).
async fn digest_shape(app: &TestApp, revert: bool) -> (i64, i64) {
    use rastrod::service::effects::{Effects, Written};
    #[derive(diesel::QueryableByName)]
    struct Shape {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        samples: i64,
    }
    let sql = if revert {
        "SELECT CAST(COUNT(*) AS BIGINT) AS n, CAST(COALESCE(SUM(count), 0) AS BIGINT) AS samples FROM web_vital_digests"
    } else {
        // Each pair is 8 bytes; the samples are not summed in SQL here.
        "SELECT CAST(COUNT(*) AS BIGINT) AS n, CAST(COALESCE(SUM(length(pairs)), 0) / 8 AS BIGINT) AS samples \
         FROM web_vital_digests"
    };
    let shape = app
        .state
        .cx
        .write_alone(move |c| {
            use diesel::RunQueryDsl;
            if revert {
                rastrod::db::revert_through(c, "20261205000028")?;
            }
            let shape: Vec<Shape> = diesel::sql_query(sql).load(c)?;
            if revert {
                rastrod::db::migrate(c)?;
            }
            Ok(Written::new(shape, Effects::quiet()))
        })
        .await
        .unwrap();
    (shape[0].n, shape[0].samples)
}

// rule: ARPT-18
backend_test!(packed_digests_migrate_down_and_up_to_the_same_answers, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    // The hand-counted data set, and a fifth visitor on `/` whose lcp 3000
    // makes that value's count 2 in its cell.
    let mut batches = vitals_batches();
    let again = json!({"type": "vitals", "pageviewId": format!("p_{:0>16}", "5"), "lcp": 3000});
    batches.push(("v_visitor0005", UA, vec![pageview("5", "/"), again]));
    for (visitor, ua, events) in batches {
        let body = json!({"siteId": "loja", "visitorId": visitor, "events": events});
        assert_eq!(track_as(app, &body, &[("user-agent", ua)]).await.status, 200);
    }
    drain(app).await;
    let (from, to) = today();
    let ask = || fed.both(Some(&t), "vitalsReport", json!({"siteId": "loja", "from": from, "to": to}));
    let packed = ask().await.unwrap();
    assert_eq!(packed["metrics"][0], vital("lcp", 5, json!(3000), json!("needs-improvement"), [2, 2, 1]));
    // Packed: one row per cell (lcp, inp, cls on `/` desktop; lcp, inp, cls,
    // ttfb, fcp on `/p/1` mobile), the 11 distinct values among them.
    assert_eq!(digest_shape(app, false).await, (8, 11));
    // Migration 28 reverted: a row per distinct value, all 12 samples; then
    // applied again, the same cells and the same answer.
    assert_eq!(digest_shape(app, true).await, (11, 12));
    assert_eq!(digest_shape(app, false).await, (8, 11));
    assert_eq!(ask().await.unwrap(), packed);
    // The converted cells take new samples: one more lcp of 3000 on `/`.
    let more = json!({"type": "vitals", "pageviewId": format!("p_{:0>16}", "6"), "lcp": 3000});
    let body = json!({"siteId": "loja", "visitorId": "v_visitor0006", "events": [pageview("6", "/"), more]});
    assert_eq!(track_as(app, &body, &[("user-agent", UA)]).await.status, 200);
    drain(app).await;
    let v = ask().await.unwrap();
    assert_eq!(v["metrics"][0], vital("lcp", 6, json!(3000), json!("needs-improvement"), [2, 3, 1]));
    assert_eq!(digest_shape(app, false).await, (8, 11), "a count grows in its pair");
});

// rule: ARPT-02
backend_test!(vitals_and_the_map_need_complete_utc_days_up_to_ninety, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let (from, to) = today();
    for (name, site_arg) in [("siteMap", json!({"siteIds": ["loja"]})), ("vitalsReport", json!({"siteId": "loja"}))] {
        let call = |f: i64, tt: i64| {
            let mut args = site_arg.clone();
            args["from"] = json!(f);
            args["to"] = json!(tt);
            fed.both(Some(&t), name, args)
        };
        assert!(call(from - 89 * DAY, to).await.is_ok(), "{name}: 90 days");
        Fed::expect_err(call(from - 90 * DAY, to).await, 400, "INVALID_ARGUMENT");
        Fed::expect_err(call(from + 1, to).await, 400, "INVALID_ARGUMENT");
        Fed::expect_err(call(from, to - 1).await, 400, "INVALID_ARGUMENT");
        Fed::expect_err(call(to, from).await, 400, "INVALID_ARGUMENT");
        let mut extra = site_arg.clone();
        extra["from"] = json!(from);
        extra["to"] = json!(to);
        extra["routes"] = json!(true);
        Fed::expect_err(fed.both(Some(&t), name, extra).await, 400, "INVALID_ARGUMENT");
    }
    // A site outside the grant.
    site(app, "outra", false).await;
    Fed::expect_err(
        fed.both(Some(&t), "siteMap", json!({"siteIds": ["outra"], "from": from, "to": to})).await,
        403,
        "FEDERATION_SITE_DENIED",
    );
    // The manifest names both functions and their ceilings; health names the map.
    let m = fed.both(None, "manifest", json!({})).await.unwrap();
    assert_eq!((m["limits"]["maxVitalsDays"].as_i64(), m["limits"]["maxSiteMapDays"].as_i64()), (Some(90), Some(90)));
    let names: Vec<&str> = m["functions"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(names.contains(&"siteMap") && names.contains(&"vitalsReport"), "{names:?}");
    assert!(m["capabilities"].as_array().unwrap().contains(&json!("siteMap")));
    let h = app.get("/rastro/health").await.ok();
    assert_eq!(h["features"]["siteMap"], "dailyRollup");
});

fn site_map_off(backend: crate::common::Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_FEDERATION_SITE_MAP", "false")
}

backend_test!(with_the_site_map_off_the_function_and_the_feature_are_gone, site_map_off, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let m = fed.both(None, "manifest", json!({})).await.unwrap();
    assert!(!m["capabilities"].as_array().unwrap().contains(&json!("siteMap")));
    let names: Vec<&str> = m["functions"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(!names.contains(&"siteMap") && names.contains(&"vitalsReport"), "{names:?}");
    let (from, to) = today();
    Fed::expect_err(
        fed.both(Some(&t), "siteMap", json!({"siteIds": ["loja"], "from": from, "to": to})).await,
        400,
        "FEDERATION_INVALID_SCOPE",
    );
    assert!(fed.both(Some(&t), "vitalsReport", json!({"siteId": "loja", "from": from, "to": to})).await.is_ok());
    let h = app.get("/rastro/health").await.ok();
    assert_eq!(h["features"].get("siteMap"), None);
    // The rollups are written all the same (§5.5 "Capability").
    track(app, "loja", "v_visitor0001", vec![pageview("1", "/"), pageview("2", "/a")]).await;
    drain(app).await;
    assert_eq!(app.count("web_map_routes").await, 2);
    assert_eq!(app.count("web_map_transitions").await, 1);
});

/// Two report actors (two processes on one PostgreSQL) can add to the same
/// new digest cell at once: the second waits for the first's commit and adds
/// to what it wrote, so neither sample is lost.
// rule: STORE-04
#[test]
fn two_processes_adding_to_one_new_digest_cell_keep_both_samples() {
    use diesel::RunQueryDsl;
    use rastrod::store::analytics::vitals::{self, Cell};
    use std::collections::BTreeMap;
    let Some((db, mut conn)) = crate::two_transactions::pg_database() else { return };
    let cell = Cell { site_id: "loja".into(), day: 0, metric: "lcp".into(), route: "/".into(), device: String::new() };
    let adding = |value: i64| BTreeMap::from([(cell.clone(), BTreeMap::from([(value, 1)]))]);
    let (first, second) = (adding(100), adding(200));
    crate::two_transactions::two_at_once(
        &db.url,
        &mut conn,
        move |c| Ok(vitals::add(c, &first)?),
        move |c| Ok(vitals::add(c, &second)?),
    );
    #[derive(diesel::QueryableByName)]
    struct Pairs {
        #[diesel(sql_type = diesel::sql_types::Binary)]
        pairs: Vec<u8>,
    }
    let rows: Vec<Pairs> = diesel::sql_query("SELECT pairs FROM web_vital_digests").load(&mut conn).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(vitals::unpack(&rows[0].pairs).collect::<Vec<_>>(), vec![(100, 1), (200, 1)]);
}

/// The same for a visitor set that two processes' batches both create, and
/// then both extend: every visitor number stays in it.
// rule: STORE-04
#[test]
fn two_processes_uniting_into_one_visitor_set_keep_every_visitor() {
    use rastrod::service::analytics::rollup::unite_set;
    use roaring::RoaringBitmap;
    let Some((db, mut conn)) = crate::two_transactions::pg_database() else { return };
    let at = ("loja", "day", 0, "page", "/");
    let set = |ns: &[u32]| ns.iter().copied().collect::<RoaringBitmap>();
    let stored = |conn: &mut rastrod::db::AnyConnection| {
        let bits = rastrod::store::analytics::rollups::set_bits(conn, at).unwrap();
        RoaringBitmap::deserialize_from(&bits.expect("the set is stored")[..]).unwrap()
    };
    let (one, two) = (set(&[1]), set(&[2]));
    crate::two_transactions::two_at_once(
        &db.url,
        &mut conn,
        move |c| unite_set(c, at, &one),
        move |c| unite_set(c, at, &two),
    );
    assert_eq!(stored(&mut conn), set(&[1, 2]), "a new set made by two processes at once");
    let (three, four) = (set(&[3]), set(&[4]));
    crate::two_transactions::two_at_once(
        &db.url,
        &mut conn,
        move |c| unite_set(c, at, &three),
        move |c| unite_set(c, at, &four),
    );
    assert_eq!(stored(&mut conn), set(&[1, 2, 3, 4]), "a stored set extended by two processes at once");
}
