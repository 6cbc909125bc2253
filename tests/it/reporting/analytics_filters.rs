//! `filters` and `breakdown` on `overview` (REPORTING §3): each checked
//! against a recount of the raw rows, and a filter that keeps everything
//! against the rollups themselves.

use std::collections::{HashMap, HashSet};

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

#[derive(QueryableByName, Clone)]
pub(super) struct S {
    #[diesel(sql_type = Text)]
    pub(super) id: String,
    #[diesel(sql_type = Text)]
    pub(super) visitor_id: String,
    #[diesel(sql_type = BigInt)]
    pub(super) started_at: i64,
    #[diesel(sql_type = Text)]
    pub(super) source: String,
    #[diesel(sql_type = Text)]
    pub(super) medium: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(super) device: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(super) os: Option<String>,
    #[diesel(sql_type = Text)]
    pub(super) entry_route: String,
    #[diesel(sql_type = Bool)]
    pub(super) is_returning: bool,
}

#[derive(QueryableByName, Clone)]
pub(super) struct E {
    #[diesel(sql_type = Text)]
    pub(super) session_id: String,
    #[diesel(sql_type = Text)]
    pub(super) visitor_id: String,
    #[diesel(sql_type = Text)]
    pub(super) kind: String,
    #[diesel(sql_type = Text)]
    pub(super) route: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(super) name: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub(super) occurred_at: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(super) lcp: Option<i64>,
}

async fn raw(app: &TestApp) -> (Vec<S>, Vec<E>) {
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            let s = diesel::sql_query(
                "SELECT id, visitor_id, started_at, source, medium, device, os, entry_route, is_returning \
                 FROM web_sessions WHERE site_id = 'loja-x'",
            )
            .load::<S>(c)?;
            let e = diesel::sql_query(
                "SELECT session_id, visitor_id, kind, route, name, occurred_at, lcp FROM web_events WHERE site_id = 'loja-x'",
            )
            .load::<E>(c)?;
            Ok((s, e))
        })
        .await
        .unwrap()
}

/// The demo with its months of visits, loja-x's raw rows, and the 30 UTC days before today.
pub(super) async fn seeded(app: &TestApp) -> (Vec<S>, Vec<E>, (i64, i64)) {
    crate::dashboard::demo(app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(app).await;
    let (sessions, events) = raw(app).await;
    let today = T0 - T0.rem_euclid(DAY);
    (sessions, events, (today - 30 * DAY, today - 1))
}

/// (visitors, sessions, pageviews) of the sessions `keep` keeps, counting
/// the pageviews `counts` counts, as REPORTING §3 says.
fn recount(
    (from, to): (i64, i64),
    sessions: &[S],
    events: &[E],
    keep: impl Fn(&S, &[&E]) -> bool,
    counts: impl Fn(&E) -> bool,
) -> (i64, i64, i64) {
    let inside = |t: i64| (from..=to).contains(&t);
    let mut by_session: HashMap<&str, Vec<&E>> = HashMap::new();
    for e in events.iter().filter(|e| inside(e.occurred_at)) {
        by_session.entry(&e.session_id).or_default().push(e);
    }
    let kept: HashMap<&str, &S> = sessions
        .iter()
        .filter(|s| by_session.get(s.id.as_str()).is_some_and(|evs| keep(s, evs)))
        .map(|s| (s.id.as_str(), s))
        .collect();
    let started = kept.values().filter(|s| inside(s.started_at)).count() as i64;
    let mut visitors: HashSet<&str> = HashSet::new();
    let mut pageviews = 0;
    for (id, evs) in &by_session {
        if kept.contains_key(id) {
            for e in evs {
                visitors.insert(&e.visitor_id);
                pageviews += i64::from(e.kind == "pageview" && counts(e));
            }
        }
    }
    (visitors.len() as i64, started, pageviews)
}

fn figures(o: &Value) -> (i64, i64, i64) {
    let t = &o["totals"];
    (t["visitors"].as_i64().unwrap(), t["sessions"].as_i64().unwrap(), t["pageviews"].as_i64().unwrap())
}

pub(super) fn with_filters(args: &Value, filters: Value) -> Value {
    let mut a = args.clone();
    a["filters"] = filters;
    a
}

// rule: REP-06
backend_test!(session_filters_keep_the_matching_sessions_exactly, fake_meta_builder, |app| {
    let (sessions, events, range) = seeded(&app).await;
    let args = json!({"siteIds": ["loja-x"], "from": range.0, "to": range.1});
    let plain = app.post("/v1/analytics/overview", args.clone()).await.ok();

    // A filter that keeps everything answers what the rollups answer.
    let all = app
        .post("/v1/analytics/overview", with_filters(&args, json!([{"dim": "source", "op": "isNot", "values": ["-"]}])))
        .await
        .ok();
    assert_eq!(all["filtered"], true);
    for k in
        ["visitors", "sessions", "pageviews", "bounces", "bounceRate", "avgDurationMs", "conversions", "revenueCents"]
    {
        assert_eq!(all["totals"][k], plain["totals"][k], "{k}");
    }
    assert_eq!(all["series"], plain["series"]);
    for panel in ["pages", "sources", "entryPages", "devices", "browsers", "countries", "mediums", "events"] {
        assert_eq!(all[panel], plain[panel], "{panel}");
    }

    // Each session dimension, one value and its negation, against the raw rows.
    let pick = |f: &dyn Fn(&S) -> Option<String>| {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for s in &sessions {
            if let Some(v) = f(s) {
                *counts.entry(v).or_default() += 1;
            }
        }
        counts.into_iter().max_by_key(|(k, n)| (*n, k.clone())).unwrap().0
    };
    type Read = fn(&S) -> Option<String>;
    let dims: [(&str, Read); 6] = [
        ("source", |s| Some(s.source.clone())),
        ("medium", |s| Some(s.medium.clone())),
        ("device", |s| s.device.clone()),
        ("os", |s| s.os.clone()),
        ("entryPage", |s| Some(s.entry_route.clone())),
        ("returning", |s| Some(s.is_returning.to_string())),
    ];
    for (dim, read) in dims {
        let value = pick(&read);
        for op in ["is", "isNot"] {
            let f = json!([{"dim": dim, "op": op, "values": [value]}]);
            let o = app.post("/v1/analytics/overview", with_filters(&args, f)).await.ok();
            let want = recount(
                range,
                &sessions,
                &events,
                |s, _| (read(s).as_deref() == Some(&value)) == (op == "is"),
                |_| true,
            );
            assert_eq!(figures(&o), want, "{dim} {op} {value}");
            assert!(want.1 > 0, "{dim} {op}: the demo has such sessions");
        }
    }
    // Two filters hold together; values of one are any of them.
    let (src, dev) = (pick(&|s| Some(s.source.clone())), pick(&|s| s.device.clone()));
    let f = json!([{"dim": "source", "op": "is", "values": [src, "nowhere"]}, {"dim": "device", "op": "contains", "values": [dev[..2].to_uppercase()]}]);
    let o = app.post("/v1/analytics/overview", with_filters(&args, f)).await.ok();
    let want = recount(
        range,
        &sessions,
        &events,
        |s, _| {
            s.source == src && s.device.as_deref().is_some_and(|d| d.to_lowercase().contains(&dev[..2].to_lowercase()))
        },
        |_| true,
    );
    assert_eq!(figures(&o), want);

    // goalsReport under the same filters: the goals of the kept sessions (REP-06 beyond overview).
    let keep_all = json!([{"dim": "source", "op": "isNot", "values": ["-"]}]);
    let one = json!({"siteId": "loja-x", "from": range.0, "to": range.1});
    let plain_goals = app.post("/v1/analytics/goalsReport", one.clone()).await.ok();
    let all_goals = app.post("/v1/analytics/goalsReport", with_filters(&one, keep_all)).await.ok();
    assert_eq!(all_goals["totalSessions"], plain_goals["totalSessions"]);
    assert_eq!(all_goals["goals"], plain_goals["goals"], "a filter keeping everything: the rollups' figures");
    let f = json!([{"dim": "source", "op": "is", "values": [src]}]);
    let g = app.post("/v1/analytics/goalsReport", with_filters(&one, f)).await.ok();
    let inside = |t: i64| (range.0..=range.1).contains(&t);
    let kept: HashSet<&str> = sessions.iter().filter(|s| s.source == src).map(|s| s.id.as_str()).collect();
    let started: HashSet<&str> =
        sessions.iter().filter(|s| s.source == src && inside(s.started_at)).map(|s| s.id.as_str()).collect();
    assert_eq!(g["totalSessions"].as_i64().unwrap(), started.len() as i64);
    let checkout: Vec<&E> = events
        .iter()
        .filter(|e| {
            inside(e.occurred_at)
                && kept.contains(e.session_id.as_str())
                && e.kind == "pageview"
                && e.route == "/checkout"
        })
        .collect();
    let with: HashSet<&str> =
        checkout.iter().map(|e| e.session_id.as_str()).filter(|id| started.contains(id)).collect();
    let row = g["goals"].as_array().unwrap().iter().find(|r| r["key"] == "checkout").unwrap();
    assert_eq!(row["completions"].as_i64().unwrap(), checkout.len() as i64);
    assert_eq!(row["sessions"].as_i64().unwrap(), with.len() as i64);
    assert!(!checkout.is_empty());

    // vitalsReport under filters: the kept pageviews' own values.
    let plain_vitals = app.post("/v1/analytics/vitalsReport", one.clone()).await.ok();
    let keep_all = json!([{"dim": "source", "op": "isNot", "values": ["-"]}]);
    let all_vitals = app.post("/v1/analytics/vitalsReport", with_filters(&one, keep_all)).await.ok();
    assert_eq!(all_vitals["metrics"], plain_vitals["metrics"], "a filter keeping everything: the digests' figures");
    let f = json!([{"dim": "device", "op": "is", "values": [dev]}]);
    let v = app.post("/v1/analytics/vitalsReport", with_filters(&one, f)).await.ok();
    let on_device: HashSet<&str> =
        sessions.iter().filter(|s| s.device.as_deref() == Some(dev.as_str())).map(|s| s.id.as_str()).collect();
    let samples = events
        .iter()
        .filter(|e| inside(e.occurred_at) && e.lcp.is_some() && on_device.contains(e.session_id.as_str()))
        .count();
    assert_eq!(v["metrics"][0]["samples"].as_i64().unwrap(), samples as i64);
    assert!(samples > 0);

    // Unknown dimensions and operators are refused naming the argument, not echoing it.
    let bad = app
        .post("/v1/analytics/overview", with_filters(&args, json!([{"dim": "secretDim", "op": "is", "values": ["x"]}])))
        .await;
    bad.err(400, "INVALID_ARGUMENT");
    assert!(bad.text.contains("filters") && !bad.text.contains("secretDim"));
    app.post("/v1/analytics/overview", with_filters(&args, json!([{"dim": "source", "op": "like", "values": ["x"]}])))
        .await
        .err(400, "INVALID_ARGUMENT");
});

// rule: REP-07
backend_test!(event_filters_keep_sessions_with_a_match_and_count_the_matches, fake_meta_builder, |app| {
    let (sessions, events, range) = seeded(&app).await;
    let args = json!({"siteIds": ["loja-x"], "from": range.0, "to": range.1});

    // page: sessions with a pageview of the route; only those pageviews count.
    let f = json!([{"dim": "page", "op": "is", "values": ["/checkout"]}]);
    let o = app.post("/v1/analytics/overview", with_filters(&args, f)).await.ok();
    let is_checkout = |e: &E| e.kind == "pageview" && e.route == "/checkout";
    let want = recount(range, &sessions, &events, |_, evs| evs.iter().any(|e| is_checkout(e)), |e| is_checkout(e));
    assert!(want.1 > 0);
    assert_eq!(figures(&o), want);
    let pages = o["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 1, "the pages panel counts only the matching pageviews");
    assert_eq!(pages[0]["route"], "/checkout");

    // event: sessions with the custom event; their pageviews all count.
    let f = json!([{"dim": "event", "op": "is", "values": ["add_to_cart"]}]);
    let o = app.post("/v1/analytics/overview", with_filters(&args, f)).await.ok();
    let want = recount(
        range,
        &sessions,
        &events,
        |_, evs| evs.iter().any(|e| e.kind == "event" && e.name.as_deref() == Some("add_to_cart")),
        |_| true,
    );
    assert!(want.1 > 0);
    assert_eq!(figures(&o), want);
    let names: Vec<&Value> = o["events"].as_array().unwrap().iter().map(|r| &r["name"]).collect();
    assert_eq!(names, vec![&json!("add_to_cart")], "only the matching custom events count");

    // page isNot: sessions with another page; that page's views do not count.
    let f = json!([{"dim": "page", "op": "isNot", "values": ["/"]}]);
    let o = app.post("/v1/analytics/overview", with_filters(&args, f)).await.ok();
    let other = |e: &E| e.kind == "pageview" && e.route != "/";
    let want = recount(range, &sessions, &events, |_, evs| evs.iter().any(|e| other(e)), |e| other(e));
    assert_eq!(figures(&o), want);
});

// rule: REP-09
backend_test!(any_dimension_is_a_paged_breakdown, fake_meta_builder, |app| {
    let (sessions, events, range) = seeded(&app).await;
    let ask = |b: Value| json!({"siteIds": ["loja-x"], "from": range.0, "to": range.1, "breakdown": b});
    // os is no panel of the overview: its rows, two at a time.
    let first = app.post("/v1/analytics/overview", ask(json!({"dim": "os", "limit": 2}))).await.ok();
    let b = &first["breakdown"];
    assert_eq!((b["dim"].as_str(), b["limit"].as_i64(), b["offset"].as_i64()), (Some("os"), Some(2), Some(0)));
    let total = b["total"].as_i64().unwrap();
    assert!(total > 2);
    let mut rows: Vec<Value> = Vec::new();
    let mut offset = 0;
    while offset < total {
        let page =
            app.post("/v1/analytics/overview", ask(json!({"dim": "os", "limit": 2, "offset": offset}))).await.ok();
        rows.extend(page["breakdown"]["rows"].as_array().unwrap().iter().cloned());
        offset += 2;
    }
    assert_eq!(rows.len() as i64, total);
    let inside = |t: i64| (range.0..=range.1).contains(&t);
    for row in &rows {
        let os = row["value"].as_str().map(str::to_string);
        let started: Vec<&S> = sessions.iter().filter(|s| inside(s.started_at) && s.os == os).collect();
        let visitors: HashSet<&str> = started.iter().map(|s| s.visitor_id.as_str()).collect();
        assert_eq!(row["sessions"].as_i64().unwrap(), started.len() as i64, "{os:?}");
        assert_eq!(row["visitors"].as_i64().unwrap(), visitors.len() as i64, "{os:?}");
    }
    let visitors: Vec<i64> = rows.iter().map(|r| r["visitors"].as_i64().unwrap()).collect();
    assert!(visitors.windows(2).all(|w| w[0] >= w[1]), "most visitors first");
    // An event dimension: pages by their counted pageviews; with a filter, over what it keeps.
    let pages = app.post("/v1/analytics/overview", ask(json!({"dim": "page", "limit": 100}))).await.ok();
    for row in pages["breakdown"]["rows"].as_array().unwrap() {
        let route = row["value"].as_str().unwrap();
        let n = events.iter().filter(|e| inside(e.occurred_at) && e.kind == "pageview" && e.route == route).count();
        assert_eq!(row["events"].as_i64().unwrap(), n as i64, "{route}");
    }
    let mut filtered = ask(json!({"dim": "page"}));
    filtered["filters"] = json!([{"dim": "page", "op": "is", "values": ["/checkout"]}]);
    let only = app.post("/v1/analytics/overview", filtered).await.ok();
    assert_eq!(only["breakdown"]["total"], 1);
    // Limits.
    app.post("/v1/analytics/overview", ask(json!({"dim": "os", "limit": 101}))).await.err(400, "INVALID_ARGUMENT");
    app.post("/v1/analytics/overview", ask(json!({"dim": "nope"}))).await.err(400, "INVALID_ARGUMENT");
});
