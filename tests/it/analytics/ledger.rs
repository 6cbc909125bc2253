//! The trusted conversion ledger and the definition reports over HTTP
//! (CONV-01 to CONV-07, ARPT-06, ARPT-09, ARPT-15): recording, attribution to sessions and
//! affiliates, `listConversions`, `revenueSummary`, `goalsReport`,
//! `affiliatesReport`, and the overview's `topGoals` and campaign money.
//! Expected figures are worked out by hand from the events each test sends.

use serde_json::{Value, json};

use crate::analytics::definitions::{affiliate, configurer, event, goal, path, write};
use crate::analytics::{analytics_builder, custom, drain, pageview, reader, site, track};
use crate::backend_test;
use crate::common::{Answer, DAY, T0, TestApp};
use crate::federation::{CONFIGURE, Fed, READ};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

async fn convert(app: &TestApp, site: &str, body: Value) -> Answer {
    app.post(&format!("/v1/sites/{site}/analytics/conversions"), body).await
}

fn conversion(key: &str, at: i64, cents: i64, extra: Value) -> Value {
    let mut c = json!({"conversionKey": key, "occurredAt": at, "name": "Pedido", "valueCents": cents});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn today() -> (i64, i64) {
    let d = T0 - T0.rem_euclid(DAY);
    (d, d + DAY - 1)
}

// rule: CONV-01
// rule: CONV-02
// rule: CONV-03
// rule: CONV-04
// rule: CONV-05
// rule: CONV-06
// rule: CONV-07
// rule: SES-15
// rule: ARPT-06
backend_test!(conversions_are_recorded_once_and_attributed, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    write(&fed, &cfg, "upsertAffiliate", affiliate("gio", 1000, 30), true).await;
    // A lands with `ref=GIO` (lowercased to the slug), B without, C with an unknown ref.
    let a = track(app, "loja", "v_visitor000a", vec![pageview("1", "/?ref=GIO&utm_campaign=promo")]).await;
    let session_a = a["sessionId"].as_str().unwrap().to_string();
    app.clock.advance(MINUTE);
    let b = track(app, "loja", "v_visitor000b", vec![pageview("2", "/")]).await;
    let session_b = b["sessionId"].as_str().unwrap().to_string();
    track(app, "loja", "v_visitor000c", vec![pageview("3", "/?ref=nobody")]).await;
    drain(app).await;
    let t = reader(&fed);
    let s = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": session_a})).await.unwrap();
    assert_eq!(s["affiliate"]["slug"], "gio");

    // No tracker input makes a conversion: the events route knows no such type.
    let forged = json!({"siteId": "loja", "visitorId": "v_visitor000a", "events": [
        {"type": "conversion", "conversionKey": "x", "valueCents": 1, "url": "https://loja.example.com/"}]});
    let answer = crate::analytics::track_as(app, &forged, &[("user-agent", crate::analytics::UA)]).await;
    assert_eq!(answer.body["accepted"], 0);

    let now = T0 + MINUTE;
    // By visitor: the latest session started at or before occurredAt, and its affiliate.
    let first = convert(app, "loja", conversion("order-1", now, 10_000, json!({"visitorId": "v_visitor000a"}))).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.body["created"], true);
    let id = first.body["conversionId"].as_str().unwrap().to_string();
    assert!(id.starts_with("cv_"));
    // A repeat: 200, the same id, nothing changed.
    let again = convert(app, "loja", conversion("order-1", now, 99_999, json!({"visitorId": "v_visitor000b"}))).await;
    assert_eq!((again.status, again.body.clone()), (200, json!({"conversionId": id, "created": false})));
    // By session.
    let by_session = convert(app, "loja", conversion("order-2", now + 1, 5_000, json!({"sessionId": session_b}))).await;
    assert_eq!(by_session.status, 201);
    // An unknown session, an unknown visitor, no ids: unattributed without error.
    for (key, extra) in [
        ("order-3", json!({"sessionId": "s_000000000000000000000000"})),
        ("order-4", json!({"visitorId": "v_nobody"})),
        ("order-5", json!({"properties": {"plan": "pro", "seats": 3, "trial": false}})),
    ] {
        assert_eq!(convert(app, "loja", conversion(key, now + 2, 999, extra)).await.status, 201);
    }
    // A session before occurredAt is needed: a visitor whose only session is later gets none.
    let early =
        convert(app, "loja", conversion("order-6", T0 - HOUR, 100, json!({"visitorId": "v_visitor000a"}))).await;
    assert_eq!(early.status, 201);

    // Bad input.
    let site_created = T0;
    for bad in [
        conversion("", now, 1, json!({})),
        conversion(&"k".repeat(129), now, 1, json!({})),
        conversion("k", now, -1, json!({})),
        conversion("k", now, 10_000_000_000_001, json!({})),
        conversion("k", now + 300_000 + MINUTE + 1, 1, json!({})),
        conversion("k", site_created - 400 * DAY - 1, 1, json!({})),
        conversion("k", now, 1, json!({"name": ""})),
        conversion("k", now, 1, json!({"name": "n".repeat(121)})),
        conversion("k", now, 1, json!({"properties": {"nested": {"a": 1}}})),
        conversion("k", now, 1, json!({"unknown": 1})),
    ] {
        let r = convert(app, "loja", bad.clone()).await;
        assert_eq!((r.status, r.body["code"].as_str()), (400, Some("INVALID_ARGUMENT")), "{bad}");
    }
    assert_eq!(convert(app, "nowhere", conversion("k", now, 1, json!({}))).await.status, 404);
    // Without the host key.
    let anon = app
        .http
        .post(format!("{}/v1/sites/loja/analytics/conversions", app.base))
        .json(&conversion("k", now, 1, json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);

    // listConversions: occurredAt desc, id desc, never the conversionKey.
    let (from, to) = (T0 - DAY, T0 + DAY);
    let mut rows: Vec<Value> = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = fed
            .both(
                Some(&t),
                "listConversions",
                json!({"siteId": "loja", "from": from, "to": to, "paginationOpts": {"numItems": 2, "cursor": cursor}}),
            )
            .await
            .unwrap();
        rows.extend(page["page"].as_array().unwrap().iter().cloned());
        if page["isDone"] == true {
            break;
        }
        cursor = page["continueCursor"].clone();
    }
    assert_eq!(rows.len(), 6);
    assert!(!serde_json::to_string(&rows).unwrap().contains("order-"), "no conversionKey leaves the host");
    let times: Vec<i64> = rows.iter().map(|r| r["occurredAt"].as_i64().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted);
    let find = |id: &str| rows.iter().find(|r| r["conversionId"] == id).unwrap().clone();
    let one = find(&id);
    assert_eq!(one["sessionId"], session_a);
    assert_eq!(one["visitorId"], "v_visitor000a");
    assert_eq!(one["affiliate"]["slug"], "gio");
    assert_eq!((one["commissionCents"].as_i64(), one["currency"].as_str()), (Some(1_000), Some("BRL")));
    let two = find(by_session.body["conversionId"].as_str().unwrap());
    assert_eq!((two["sessionId"].as_str(), two["affiliate"].clone()), (Some(session_b.as_str()), Value::Null));
    for r in rows.iter().filter(|r| r["valueCents"] == 999 || r["valueCents"] == 100) {
        assert_eq!(
            (r["visitorId"].clone(), r["sessionId"].clone(), r["affiliate"].clone()),
            (Value::Null, Value::Null, Value::Null)
        );
        assert_eq!(r["commissionCents"], 0);
    }
    assert!(rows.iter().any(|r| r["properties"] == json!({"plan": "pro", "seats": 3, "trial": false})));

    // The attributed session carries it; the overview counts it at occurredAt, by campaign.
    let s = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": session_a})).await.unwrap();
    assert_eq!((s["conversions"].as_i64(), s["revenueCents"].as_i64()), (Some(1), Some(10_000)));
    let (d0, d1) = today();
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": d0, "to": d1})).await.unwrap();
    assert_eq!(o["totals"]["conversions"], 6);
    assert_eq!(o["totals"]["revenueCents"], 10_000 + 5_000 + 3 * 999 + 100);
    let promo = o["campaigns"].as_array().unwrap().iter().find(|c| c["campaign"] == "promo").unwrap();
    assert_eq!((promo["conversions"].as_i64(), promo["revenueCents"].as_i64()), (Some(1), Some(10_000)));
});

// rule: ARPT-14
// rule: ARPT-15
// rule: CFG-10
// rule: ARPT-16
backend_test!(revenue_and_affiliates_are_exact_to_the_millisecond, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    app.post(
        "/v1/sites",
        json!({"siteId": "dolar", "name": "d", "currency": "USD", "timezone": "UTC", "ownerId": "o1",
            "domains": [crate::analytics::HOST]}),
    )
    .await
    .ok();
    fed.grant(&["loja", "dolar"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let gio = write(&fed, &cfg, "upsertAffiliate", affiliate("gio", 2_500, 7), false).await;
    write(&fed, &cfg, "upsertAffiliate", affiliate("ana", 500, 7), false).await;
    track(app, "loja", "v_visitor000a", vec![pageview("1", "/?ref=gio")]).await;
    track(app, "loja", "v_visitor000b", vec![pageview("2", "/?ref=ana")]).await;
    // Conversions at times spread over hours and days of the same clock.
    let d = T0 - T0.rem_euclid(DAY);
    let times = [T0 + 5, T0 + 30 * MINUTE, T0 + HOUR + 1, T0 + 3 * HOUR, d + DAY + 7];
    app.clock.advance(DAY + HOUR);
    let mut ledger: Vec<(i64, i64, i64)> = Vec::new(); // (at, value, commission)
    for (i, at) in times.iter().enumerate() {
        let value = 1_000 * (i as i64 + 1) + 7;
        let r =
            convert(app, "loja", conversion(&format!("c{i}"), *at, value, json!({"visitorId": "v_visitor000a"}))).await;
        assert_eq!(r.status, 201, "{}", r.text);
        ledger.push((*at, value, value * 2_500 / 10_000));
    }
    let r = convert(app, "loja", conversion("b", T0 + 2 * HOUR, 333, json!({"visitorId": "v_visitor000b"}))).await;
    assert_eq!(r.status, 201);
    ledger.push((T0 + 2 * HOUR, 333, 333 * 500 / 10_000));
    convert(app, "dolar", conversion("usd", T0 + 10, 50_000, json!({}))).await;
    drain(app).await;
    let t = reader(&fed);
    let expect = |from: i64, to: i64| {
        let rows: Vec<_> = ledger.iter().filter(|(at, ..)| (from..=to).contains(at)).collect();
        let revenue: i64 = rows.iter().map(|r| r.1).sum();
        let commission: i64 = rows.iter().map(|r| r.2).sum();
        (rows.len() as i64, revenue, commission)
    };
    for (from, to) in [
        (T0, T0 + DAY),
        (T0 + 6, T0 + 3 * HOUR),
        (T0 + 5, T0 + 5),
        (T0 + 29 * MINUTE, T0 + HOUR + 1),
        (d, d + 2 * DAY - 1),
        (T0 + HOUR + 2, d + DAY + 6),
        (d - 300 * DAY, d + DAY + 7),
    ] {
        let got =
            fed.both(Some(&t), "revenueSummary", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
        let (n, revenue, commission) = expect(from, to);
        assert_eq!(
            (got["conversions"].as_i64(), got["revenueCents"].as_i64(), got["commissionCents"].as_i64()),
            (Some(n), Some(revenue), Some(commission)),
            "[{from}, {to}]"
        );
        assert_eq!(got["netRevenueCents"].as_i64(), Some(revenue - commission));
        assert_eq!(got["currency"], "BRL");
    }
    // Two currencies: the money totals are null, each site's money in bySite, in request order.
    let both = fed
        .both(Some(&t), "revenueSummary", json!({"siteIds": ["dolar", "loja"], "from": d, "to": d + DAY - 1}))
        .await
        .unwrap();
    assert_eq!((both["currency"].clone(), both["revenueCents"].clone()), (Value::Null, Value::Null));
    assert_eq!(both["bySite"][0]["siteId"], "dolar");
    assert_eq!(both["bySite"][0]["revenueCents"], 50_000);
    assert_eq!(both["bySite"][1]["revenueCents"], expect(d, d + DAY - 1).1);

    // affiliatesReport: complete UTC days only.
    let report = |from: i64, to: i64| {
        let fed = &fed;
        let t = t.clone();
        async move { fed.both(Some(&t), "affiliatesReport", json!({"siteId": "loja", "from": from, "to": to})).await }
    };
    Fed::expect_err(report(d + 1, d + DAY - 1).await, 400, "INVALID_ARGUMENT");
    Fed::expect_err(report(d, d + DAY - 2).await, 400, "INVALID_ARGUMENT");
    let r = report(d, d + 2 * DAY - 1).await.unwrap();
    let slugs: Vec<&str> = r["affiliates"].as_array().unwrap().iter().map(|a| a["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["ana", "gio"]);
    let g = &r["affiliates"][1];
    let (n, revenue, _) = expect(d, d + 2 * DAY - 1);
    let gio_revenue = revenue - 333;
    assert_eq!(
        (g["sessions"].as_i64(), g["conversions"].as_i64(), g["revenueCents"].as_i64()),
        (Some(1), Some(n - 1), Some(gio_revenue))
    );
    assert_eq!(g["commissionCents"].as_i64(), Some(ledger[..5].iter().map(|r| r.2).sum::<i64>()));
    assert_eq!(r["totals"]["conversions"].as_i64(), Some(n));
    assert_eq!(r["unlisted"], json!({"conversions": 0, "revenueCents": 0, "commissionCents": 0}));

    // Removing an affiliate keeps every frozen commission and revenueSummary answer.
    let before = fed
        .both(Some(&t), "revenueSummary", json!({"siteIds": ["loja"], "from": d, "to": d + 2 * DAY - 1}))
        .await
        .unwrap();
    write(&fed, &cfg, "removeAffiliate", json!({"siteId": "loja", "affiliateId": gio}), true).await;
    let after = fed
        .both(Some(&t), "revenueSummary", json!({"siteIds": ["loja"], "from": d, "to": d + 2 * DAY - 1}))
        .await
        .unwrap();
    assert_eq!(before, after);
    let r = report(d, d + 2 * DAY - 1).await.unwrap();
    assert_eq!(r["affiliates"].as_array().unwrap().len(), 1);
    assert_eq!(r["unlisted"]["conversions"].as_i64(), Some(n - 1));
    assert_eq!(r["unlisted"]["commissionCents"], g["commissionCents"]);
    assert_eq!(r["totals"]["commissionCents"], before["commissionCents"]);
    // One page of sessions names each one's affiliate, the removed one's too (read together).
    let page = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": d, "to": d + DAY - 1, "paginationOpts": {"numItems": 10, "cursor": null}}),
        )
        .await
        .unwrap();
    let mut tags: Vec<(String, Value)> = page["page"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["visitorId"].as_str().unwrap().to_string(), s["affiliate"]["slug"].clone()))
        .collect();
    tags.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(tags, vec![("v_visitor000a".to_string(), json!("gio")), ("v_visitor000b".to_string(), json!("ana"))]);
    // A later conversion of the visitor no longer goes to the removed affiliate.
    let late =
        convert(app, "loja", conversion("late", T0 + DAY + HOUR, 100, json!({"visitorId": "v_visitor000a"}))).await;
    let rows = fed
        .both(
            Some(&t),
            "listConversions",
            json!({"siteId": "loja", "from": T0 + DAY + HOUR, "to": T0 + DAY + HOUR,
            "paginationOpts": {"numItems": 10, "cursor": null}}),
        )
        .await
        .unwrap();
    assert_eq!(rows["page"][0]["conversionId"], late.body["conversionId"]);
    assert_eq!(
        (rows["page"][0]["affiliate"].clone(), rows["page"][0]["commissionCents"].as_i64()),
        (Value::Null, Some(0))
    );
});

// rule: ARPT-09
// rule: ARPT-10
// rule: ARPT-14
// rule: OVR-11
backend_test!(goals_count_completions_and_sessions_decided_at_acceptance, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let mut thanks = goal("obrigado", path("/obrigado"));
    thanks["valueCents"] = json!(2_000);
    let thanks_id = write(&fed, &cfg, "upsertGoal", thanks, true).await;
    let signup_id = write(&fed, &cfg, "upsertGoal", goal("signup", event("signup")), false).await;
    // A at 12:00: signup and the thank-you page. B at 12:10: the thank-you page twice. C at 12:20: nothing.
    let a = track(
        app,
        "loja",
        "v_visitor000a",
        vec![pageview("1", "/"), custom("signup", "/"), pageview("2", "/obrigado/")],
    )
    .await;
    app.clock.advance(10 * MINUTE);
    track(app, "loja", "v_visitor000b", vec![pageview("3", "/obrigado"), pageview("4", "/obrigado")]).await;
    app.clock.advance(10 * MINUTE);
    track(app, "loja", "v_visitor000c", vec![pageview("5", "/")]).await;
    drain(app).await;
    let t = reader(&fed);
    let (d0, d1) = today();
    let report = |from: i64, to: i64| {
        let fed = &fed;
        let t = t.clone();
        async move { fed.both(Some(&t), "goalsReport", json!({"siteId": "loja", "from": from, "to": to})).await.unwrap() }
    };
    let r = report(d0, d1).await;
    assert_eq!(r["totalSessions"], 3);
    let keys: Vec<&str> = r["goals"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["obrigado", "signup"]);
    let g = &r["goals"][0];
    assert_eq!(
        (g["goalId"].clone(), g["completions"].as_i64(), g["sessions"].as_i64()),
        (thanks_id.clone(), Some(3), Some(2))
    );
    assert_eq!(g["conversionRate"], json!(0.6667));
    assert_eq!(g["valueTotalCents"], 4_000);
    let s = &r["goals"][1];
    assert_eq!(
        (s["completions"].as_i64(), s["sessions"].as_i64(), s["valueTotalCents"].clone()),
        (Some(1), Some(1), Value::Null)
    );
    assert_eq!(s["conversionRate"], json!(0.3333));
    // A range starting 5 minutes into the hour: A's completions and session are out (partial hour from rows).
    let r = report(T0 + 5 * MINUTE, d1).await;
    assert_eq!(r["totalSessions"], 2);
    assert_eq!((r["goals"][0]["completions"].as_i64(), r["goals"][0]["sessions"].as_i64()), (Some(2), Some(1)));
    assert_eq!(r["goals"][1]["completions"], 0);
    // And one ending at B's batch exactly (both its pageviews at that instant), and one just before.
    let r = report(T0, T0 + 10 * MINUTE).await;
    assert_eq!((r["goals"][0]["completions"].as_i64(), r["goals"][0]["sessions"].as_i64()), (Some(3), Some(2)));
    let r = report(T0, T0 + 10 * MINUTE - 1).await;
    assert_eq!((r["goals"][0]["completions"].as_i64(), r["goals"][0]["sessions"].as_i64()), (Some(1), Some(1)));

    // The session's goals, by key.
    let session = a["sessionId"].as_str().unwrap();
    let got = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": session})).await.unwrap();
    assert_eq!(got["goals"], json!(["obrigado", "signup"]));

    // Editing a goal changes only later events: earlier completions stay.
    let mut edit = goal("signup", event("signup_done"));
    edit["goalId"] = signup_id.clone();
    fed.both(Some(&cfg), "upsertGoal", edit).await.unwrap();
    app.clock.advance(MINUTE);
    track(app, "loja", "v_visitor000c", vec![custom("signup", "/"), custom("signup_done", "/")]).await;
    drain(app).await;
    let r = report(d0, d1).await;
    assert_eq!((r["goals"][1]["completions"].as_i64(), r["goals"][1]["sessions"].as_i64()), (Some(2), Some(2)));

    // Removing a goal keeps its rollups: gone from goalsReport, ranked in topGoals as removed.
    write(&fed, &cfg, "removeGoal", json!({"siteId": "loja", "goalId": thanks_id}), false).await;
    let r = report(d0, d1).await;
    assert_eq!(r["goals"].as_array().unwrap().len(), 1);
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": d0, "to": d1})).await.unwrap();
    assert_eq!(
        o["topGoals"],
        json!([
            {"goalId": thanks_id, "key": "obrigado", "name": "Goal obrigado", "completions": 3, "sessions": 2, "removed": true},
            {"goalId": signup_id, "key": "signup", "name": "Goal signup", "completions": 2, "sessions": 2, "removed": false},
        ])
    );
    // The same functions on the host API, for a host's own dashboard.
    let args = json!({"siteId": "loja", "from": d0, "to": d1});
    let host = app.post("/v1/analytics/goalsReport", args.clone()).await;
    assert_eq!(host.status, 200, "{}", host.text);
    assert_eq!(host.body, fed.both(Some(&t), "goalsReport", args.clone()).await.unwrap());
    let created = app.post("/v1/analytics/upsertGoal", goal("host_goal", event("host"))).await;
    assert!(created.body.as_str().unwrap().starts_with("g_"), "{}", created.text);
    assert_eq!(app.post("/v1/analytics/leadsReport", args.clone()).await.status, 404, "leads have their own routes");
    assert_eq!(app.post("/v1/analytics/noSuchThing", args.clone()).await.status, 404);
    let bad = app.post("/v1/analytics/goalsReport", json!({"siteId": "loja", "from": d1, "to": d0})).await;
    assert_eq!((bad.status, bad.body["code"].as_str()), (400, Some("INVALID_ARGUMENT")));
    let anon = app.http.post(format!("{}/v1/analytics/goalsReport", app.base)).json(&args).send().await.unwrap();
    assert_eq!(anon.status(), 401);

    // Hourly too.
    let h0 = T0 - T0.rem_euclid(HOUR);
    let o = fed
        .both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": h0, "to": h0 + HOUR - 1, "interval": "hour"}))
        .await
        .unwrap();
    assert_eq!(o["topGoals"][0]["completions"], 3);
});

// rule: TRK-31
backend_test!(a_pageview_keeps_its_largest_engagement_and_each_metrics_last_value, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let pv = "p_0000000000000001";
    track(app, "loja", "v_visitor000a", vec![pageview("1", "/")]).await;
    let m = |body: Value| vec![body];
    track(app, "loja", "v_visitor000a", m(json!({"type": "engagement", "pageviewId": pv, "engagedMs": 9000}))).await;
    track(app, "loja", "v_visitor000a", m(json!({"type": "engagement", "pageviewId": pv, "engagedMs": 4000}))).await;
    track(app, "loja", "v_visitor000a", m(json!({"type": "vitals", "pageviewId": pv, "lcp": 3000, "cls": 0.2}))).await;
    track(app, "loja", "v_visitor000a", m(json!({"type": "vitals", "pageviewId": pv, "lcp": 1800}))).await;
    drain(app).await;
    let (d0, d1) = today();
    let res = app
        .http
        .get(format!("{}/v1/sites/loja/analytics/export?from={d0}&to={d1}", app.base))
        .bearer_auth(crate::common::HOST_KEY)
        .send()
        .await
        .unwrap();
    let lines: Vec<Value> = res.text().await.unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let engagement = lines.iter().find(|l| l["type"] == "engagement").unwrap();
    assert_eq!(engagement["engagedMs"], 9000, "the largest engagement");
    let vitals = lines.iter().find(|l| l["type"] == "vitals").unwrap();
    assert_eq!((vitals["lcp"].as_i64(), vitals["cls"].as_f64()), (Some(1800), Some(0.2)), "per metric, the last value");
    // The digests count the pageview's current values once.
    fed.grant(&["loja"], &[READ]).await;
    let report =
        fed.both(Some(&reader(&fed)), "vitalsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!((report["metrics"][0]["samples"].as_i64(), report["metrics"][0]["p75"].as_i64()), (Some(1), Some(1800)));
});

// rule: CFG-12
// rule: SES-15
backend_test!(a_paused_affiliate_tags_no_new_landing_and_keeps_its_visitors, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let id = write(&fed, &cfg, "upsertAffiliate", affiliate("gio", 1000, 30), true).await;
    let id = id.as_str().unwrap().to_string();
    // A lands with ref=gio while it runs.
    let a = track(app, "loja", "v_visitor000a", vec![pageview("1", "/?ref=gio")]).await;
    let session_a = a["sessionId"].as_str().unwrap().to_string();
    // Paused: listed as such, and B's landing with its ref is not tagged.
    let mut paused = affiliate("gio", 1000, 30);
    paused["affiliateId"] = json!(id);
    paused["active"] = json!(false);
    write(&fed, &cfg, "upsertAffiliate", paused, false).await;
    let listed = fed.both(Some(&cfg), "listAffiliates", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!((listed[0]["affiliateId"].as_str(), listed[0]["active"].clone()), (Some(id.as_str()), json!(false)));
    app.clock.advance(MINUTE);
    let b = track(app, "loja", "v_visitor000b", vec![pageview("2", "/?ref=gio")]).await;
    let session_b = b["sessionId"].as_str().unwrap().to_string();
    drain(app).await;
    let t = reader(&fed);
    let get = |sid: String| {
        let t = t.clone();
        let fed = &fed;
        async move { fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": sid})).await.unwrap() }
    };
    assert_eq!(get(session_b.clone()).await["affiliate"], Value::Null, "not tagged while paused");
    assert_eq!(get(session_a.clone()).await["affiliate"]["slug"], "gio");
    // A's sale still credits it: its window was opened before the pause.
    let sale =
        convert(app, "loja", conversion("order-a", T0 + MINUTE, 10_000, json!({"visitorId": "v_visitor000a"}))).await;
    assert_eq!(sale.status, 201, "{}", sale.text);
    let (d0, d1) = today();
    let list = fed
        .both(
            Some(&t),
            "listConversions",
            json!({"siteId": "loja", "from": d0, "to": d1, "paginationOpts": {"numItems": 10, "cursor": null}}),
        )
        .await
        .unwrap();
    assert_eq!(list["page"][0]["affiliate"]["slug"], "gio", "{list}");
    // An edit without `active` keeps it paused; resuming tags landings again.
    let mut renamed = affiliate("gio", 1500, 30);
    renamed["affiliateId"] = json!(id);
    write(&fed, &cfg, "upsertAffiliate", renamed.clone(), false).await;
    let listed = fed.both(Some(&cfg), "listAffiliates", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!((listed[0]["commissionBps"].clone(), listed[0]["active"].clone()), (json!(1500), json!(false)));
    renamed["active"] = json!(true);
    write(&fed, &cfg, "upsertAffiliate", renamed, true).await;
    app.clock.advance(MINUTE);
    let c = track(app, "loja", "v_visitor000c", vec![pageview("3", "/?ref=gio")]).await;
    drain(app).await;
    assert_eq!(get(c["sessionId"].as_str().unwrap().to_string()).await["affiliate"]["slug"], "gio");
});
