//! `filters` on the functions that list or map sessions (REPORTING §3):
//! `listSessions`, `liveVisitors`, `funnelsReport` and `siteMap`, each
//! against a recount of the raw rows, and a filter that keeps everything
//! against the unfiltered answer.

use std::collections::{BTreeMap, HashMap, HashSet};

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Nullable, Text};
use rastrod::service::analytics::reports::funnels;
use rastrod::service::analytics::vocabulary::EventKind;
use serde_json::{Value, json};

use super::analytics_filters::{S, seeded, with_filters};
use crate::analytics::{analytics_builder, pageview, site, track};
use crate::backend_test;
use crate::common::*;

/// An event with what ordering and matching need.
#[derive(QueryableByName, Clone)]
struct Ev {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    session_id: String,
    #[diesel(sql_type = Text)]
    visitor_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    path: String,
    #[diesel(sql_type = Text)]
    route: String,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = BigInt)]
    occurred_at: i64,
}

/// loja-x's events in `(occurredAt, id)` order.
async fn events(app: &TestApp) -> Vec<Ev> {
    let mut rows: Vec<Ev> = app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            Ok(diesel::sql_query(
                "SELECT id, session_id, visitor_id, kind, path, route, name, occurred_at FROM web_events \
                 WHERE site_id = 'loja-x'",
            )
            .load::<Ev>(c)?)
        })
        .await
        .unwrap();
    rows.sort_by(|a, b| a.occurred_at.cmp(&b.occurred_at).then_with(|| a.id.as_bytes().cmp(b.id.as_bytes())));
    rows
}

/// The most common source, for a filter that keeps some sessions and not others.
fn common_source(sessions: &[S]) -> String {
    let mut n: HashMap<&str, usize> = HashMap::new();
    for s in sessions {
        *n.entry(&s.source).or_default() += 1;
    }
    n.into_iter().max_by_key(|(k, c)| (*c, k.to_string())).unwrap().0.to_string()
}

/// Every page of `listSessions` for `args`, `size` at a time: the session ids in order.
async fn all_sessions(app: &TestApp, args: &Value, size: i64) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut a = args.clone();
        a["paginationOpts"] = json!({"numItems": size, "cursor": cursor});
        let page = app.post("/v1/analytics/listSessions", a).await.ok();
        ids.extend(page["page"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_string()));
        if page["isDone"] == true {
            return ids;
        }
        cursor = page["continueCursor"].clone();
    }
}

// rule: REP-06
// rule: REP-07
backend_test!(list_sessions_pages_through_the_sessions_the_filters_keep, fake_meta_builder, |app| {
    let (sessions, _, range) = seeded(&app).await;
    let evs = events(&app).await;
    let args = json!({"siteId": "loja-x", "from": range.0, "to": range.1});
    let inside = |t: i64| (range.0..=range.1).contains(&t);
    let newest_first = |mut kept: Vec<&S>| {
        kept.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.id.as_bytes().cmp(a.id.as_bytes())));
        kept.into_iter().map(|s| s.id.clone()).collect::<Vec<_>>()
    };

    let plain = all_sessions(&app, &args, 100).await;
    let keep_all = with_filters(&args, json!([{"dim": "source", "op": "isNot", "values": ["-"]}]));
    assert_eq!(all_sessions(&app, &keep_all, 100).await, plain, "a filter keeping everything");

    // A session dimension, paged in sevens.
    let src = common_source(&sessions);
    let by_source = with_filters(&args, json!([{"dim": "source", "op": "is", "values": [src]}]));
    let want = newest_first(sessions.iter().filter(|s| inside(s.started_at) && s.source == src).collect());
    assert!(!want.is_empty() && want.len() < plain.len());
    assert_eq!(all_sessions(&app, &by_source, 7).await, want);

    // An event dimension: the sessions holding a pageview of the route.
    let checkout: HashSet<&str> =
        evs.iter().filter(|e| e.kind == "pageview" && e.route == "/checkout").map(|e| e.session_id.as_str()).collect();
    let by_page = with_filters(&args, json!([{"dim": "page", "op": "is", "values": ["/checkout"]}]));
    let want =
        newest_first(sessions.iter().filter(|s| inside(s.started_at) && checkout.contains(s.id.as_str())).collect());
    assert!(!want.is_empty());
    assert_eq!(all_sessions(&app, &by_page, 5).await, want);

    // A cursor belongs to its filters.
    let mut first = by_source.clone();
    first["paginationOpts"] = json!({"numItems": 2, "cursor": null});
    let cursor = app.post("/v1/analytics/listSessions", first).await.ok()["continueCursor"].clone();
    let mut other = by_page.clone();
    other["paginationOpts"] = json!({"numItems": 2, "cursor": cursor});
    app.post("/v1/analytics/listSessions", other).await.err(400, "INVALID_ARGUMENT");
    let bad = with_filters(&args, json!([{"dim": "secretDim", "op": "is", "values": ["x"]}]));
    let mut bad = bad;
    bad["paginationOpts"] = json!({"numItems": 2, "cursor": null});
    let refused = app.post("/v1/analytics/listSessions", bad).await;
    refused.err(400, "INVALID_ARGUMENT");
    assert!(!refused.text.contains("secretDim"));
});

// rule: REP-06
backend_test!(funnels_and_the_site_map_count_only_the_kept_sessions, fake_meta_builder, |app| {
    let (sessions, _, range) = seeded(&app).await;
    let evs = events(&app).await;
    let inside = |t: i64| (range.0..=range.1).contains(&t);
    let src = common_source(&sessions);
    let by_source = json!([{"dim": "source", "op": "is", "values": [src]}]);
    let keep_all = json!([{"dim": "source", "op": "isNot", "values": ["-"]}]);
    // The kept sessions: the source's, with an event in the range.
    let of_source: HashSet<&str> = sessions.iter().filter(|s| s.source == src).map(|s| s.id.as_str()).collect();
    let kept: Vec<&Ev> =
        evs.iter().filter(|e| inside(e.occurred_at) && of_source.contains(e.session_id.as_str())).collect();

    // funnelsReport: every step from the kept events, each visitor's best run.
    let one = json!({"siteId": "loja-x", "from": range.0, "to": range.1});
    let plain = app.post("/v1/analytics/funnelsReport", one.clone()).await.ok();
    let all = app.post("/v1/analytics/funnelsReport", with_filters(&one, keep_all.clone())).await.ok();
    assert_eq!(all["funnels"], plain["funnels"], "a filter keeping everything: the index's figures");
    let got = app.post("/v1/analytics/funnelsReport", with_filters(&one, by_source.clone())).await.ok();
    let defs = app.state.cx.read(|c| Ok(rastrod::store::analytics::definitions::funnels(c, "loja-x")?)).await.unwrap();
    let compra = defs.iter().find(|f| f.key == "compra").unwrap();
    let steps = rastrod::service::analytics::definitions::steps_of(compra);
    let mut runs: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for e in &kept {
        let m = funnels::mask(&steps, EventKind::parse(&e.kind).unwrap(), &e.path, e.name.as_deref());
        if m != 0 {
            runs.entry(&e.visitor_id).or_default().push((e.occurred_at, m));
        }
    }
    let levels: Vec<usize> = runs.values().map(|r| funnels::level(r, steps.len(), compra.window_ms)).collect();
    let row = got["funnels"].as_array().unwrap().iter().find(|f| f["key"] == "compra").unwrap();
    for (i, step) in row["steps"].as_array().unwrap().iter().enumerate() {
        let want = levels.iter().filter(|l| **l > i).count() as i64;
        assert_eq!(step["visitors"].as_i64().unwrap(), want, "step {}", i + 1);
    }
    let plain_row = plain["funnels"].as_array().unwrap().iter().find(|f| f["key"] == "compra").unwrap();
    assert!(row["entered"].as_i64().unwrap() > 0);
    assert!(row["entered"].as_i64().unwrap() < plain_row["entered"].as_i64().unwrap());

    // siteMap: the kept sessions' pageviews in the range, placed in their session's order.
    let many = json!({"siteIds": ["loja-x"], "from": range.0, "to": range.1});
    let plain = app.post("/v1/analytics/siteMap", many.clone()).await.ok();
    let all = app.post("/v1/analytics/siteMap", with_filters(&many, keep_all)).await.ok();
    assert_eq!(all["sites"][0]["routes"], plain["sites"][0]["routes"], "a filter keeping everything: the rollups");
    assert_eq!(all["sites"][0]["transitions"], plain["sites"][0]["transitions"]);
    let got = app.post("/v1/analytics/siteMap", with_filters(&many, by_source)).await.ok();
    let kept_ids: HashSet<&str> = kept.iter().map(|e| e.session_id.as_str()).collect();
    let mut first_view: HashMap<&str, &str> = HashMap::new();
    let mut views: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for e in evs.iter().filter(|e| e.kind == "pageview" && kept_ids.contains(e.session_id.as_str())) {
        let first = !first_view.contains_key(e.session_id.as_str());
        first_view.entry(&e.session_id).or_insert(&e.id);
        if inside(e.occurred_at) {
            let v = views.entry(&e.route).or_default();
            v.0 += 1;
            v.1 += i64::from(first);
        }
    }
    let routes: BTreeMap<&str, (i64, i64)> = got["sites"][0]["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["route"].as_str().unwrap(), (r["views"].as_i64().unwrap(), r["entries"].as_i64().unwrap())))
        .collect();
    assert_eq!(routes, views);
    assert!(!routes.is_empty());
    assert_ne!(got["sites"][0]["routes"], plain["sites"][0]["routes"], "the filter narrows the map");
});

// rule: REP-06
// rule: REP-07
backend_test!(live_visitors_count_and_show_the_visitors_the_filters_keep, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let from_ig = |id: &str, path: &str| {
        let mut p = pageview(id, path);
        p["url"] = json!(format!("https://{}{path}?utm_source=ig", crate::analytics::HOST));
        p
    };
    track(app, "loja", "v_visitor0001", vec![from_ig("1", "/")]).await;
    track(app, "loja", "v_visitor0002", vec![pageview("2", "/checkout")]).await;
    track(app, "loja", "v_visitor0003", vec![from_ig("3", "/"), pageview("4", "/checkout")]).await;
    let ask = |filters: Value, now: i64| json!({"siteIds": ["loja"], "now": now, "filters": filters});
    // The cached state (now is the server's) and the database (a reader's own now) agree.
    for now in [T0, T0 + 60_000] {
        let all = app.post("/v1/analytics/liveVisitors", ask(json!([]), now)).await.ok();
        assert_eq!(all["count"], 3);
        let ig = app
            .post("/v1/analytics/liveVisitors", ask(json!([{"dim": "source", "op": "is", "values": ["ig"]}]), now))
            .await
            .ok();
        assert_eq!(ig["count"], 2, "{now}");
        let mut who: Vec<&str> =
            ig["visitors"].as_array().unwrap().iter().map(|v| v["visitorId"].as_str().unwrap()).collect();
        who.sort();
        assert_eq!(who, ["v_visitor0001", "v_visitor0003"]);
        let both = json!([{"dim": "source", "op": "is", "values": ["ig"]}, {"dim": "page", "op": "is", "values": ["/checkout"]}]);
        let one = app.post("/v1/analytics/liveVisitors", ask(both, now)).await.ok();
        assert_eq!(one["count"], 1);
        assert_eq!(one["visitors"][0]["visitorId"], "v_visitor0003");
        let limited = json!({"siteIds": ["loja"], "now": now, "limit": 1, "filters": [{"dim": "source", "op": "is", "values": ["ig"]}]});
        let l = app.post("/v1/analytics/liveVisitors", limited).await.ok();
        assert_eq!((l["count"].as_i64(), l["truncated"].as_bool()), (Some(2), Some(true)));
    }
    app.post("/v1/analytics/liveVisitors", ask(json!([{"dim": "nope", "op": "is", "values": ["x"]}]), T0))
        .await
        .err(400, "INVALID_ARGUMENT");
});
