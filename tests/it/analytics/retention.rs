//! Retention over HTTP and the retention actor (RET-01 to RET-10): the
//! policy's checks, what a run deletes per class (in bounded batches), the
//! backlog, what survives (aggregates, distinct visitors), and what
//! `dataCoverage` then says.

use serde_json::{Value, json};

use crate::analytics::definitions::{configurer, path, write};
use crate::analytics::{analytics_builder, drain, import, reader, site};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};
use crate::federation::{CONFIGURE, Fed, FedBuilder, READ};

fn pageview(at: i64, visitor: &str, id: &str) -> Value {
    json!({"type": "pageview", "occurredAt": at, "visitorId": visitor, "pageviewId": format!("p_{id:0>16}"), "path": "/"})
}

fn day_of(t: i64) -> (i64, i64) {
    let d = t - t.rem_euclid(DAY);
    (d, d + DAY - 1)
}

async fn retention_drain(app: &TestApp) -> u64 {
    rastrod::actors::retention::drain(&app.state.cx).await.unwrap()
}

fn small_batches(backend: crate::common::Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_RETENTION_BATCH", "2")
}

fn policy(events: i64, sessions: i64, conversions: i64, profiles: i64, aggregates: i64) -> Value {
    json!({"siteId": "loja", "eventsDays": events, "sessionsDays": sessions, "conversionsDays": conversions,
        "profilesDays": profiles, "aggregatesDays": aggregates})
}

// rule: RET-01
// rule: RET-02
// rule: RET-03
// rule: RET-04
// rule: RET-05
// rule: RET-06
// rule: RET-07
// rule: RET-10
// rule: STORE-09
// rule: ARPT-23
backend_test!(retention_deletes_past_each_cutoff_and_coverage_tells_what_is_gone, small_batches, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let (old, mid, recent) = (T0 - 40 * DAY, T0 - 25 * DAY, T0 - 10 * DAY);
    let lines = vec![
        pageview(old, "v_visitor000a", "1"),
        pageview(old + 1000, "v_visitor000a", "2"),
        pageview(old + 2000, "v_visitor000a", "3"),
        pageview(mid, "v_visitor000b", "4"),
        pageview(recent, "v_visitor000c", "5"),
    ];
    assert_eq!(import(app, "loja", "history", &lines).await.status, 201);
    for (key, at) in [("c-old", old + 5), ("c-recent", recent + 5)] {
        let c = json!({"conversionKey": key, "occurredAt": at, "name": "Pedido", "valueCents": 100});
        assert_eq!(app.post("/v1/sites/loja/analytics/conversions", c).await.status, 201);
    }
    drain(app).await;
    let t = reader(&fed);
    let (o0, o1) = day_of(old);
    let overview = |from: i64, to: i64| {
        let fed = &fed;
        let t = t.clone();
        async move { fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap() }
    };
    let whole = overview(day_of(old).0, day_of(T0).1).await;
    assert_eq!(whole["totals"]["visitors"], 3);
    let sessions = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": o0, "to": o1,
            "paginationOpts": {"numItems": 10, "cursor": null}}),
        )
        .await
        .unwrap();
    let old_session = sessions["page"][0]["sessionId"].as_str().unwrap().to_string();

    // Without a policy: nothing to run, nothing pending.
    let status = |now: Option<i64>| {
        let fed = &fed;
        let cfg = cfg.clone();
        let mut args = json!({"siteId": "loja"});
        if let Some(n) = now {
            args["now"] = json!(n);
        }
        async move { fed.both(Some(&cfg), "retentionStatus", args).await.unwrap() }
    };
    assert_eq!(status(None).await, json!({"siteId": "loja", "policy": null, "jobs": [], "backlog": null}));
    assert_eq!(
        write(&fed, &cfg, "disableRetentionPolicy", json!({"siteId": "loja"}), false).await,
        json!({"disabled": false})
    );

    // The policy's checks.
    for bad in [
        policy(0, 20, 20, 20, 30),
        policy(20, 20, 20, 20, 3651),
        policy(21, 20, 20, 20, 30),
        policy(20, 31, 20, 20, 30),
        policy(20, 20, 31, 20, 30),
        json!({"siteId": "loja", "eventsDays": 1.5, "sessionsDays": 2, "conversionsDays": 2, "profilesDays": 2, "aggregatesDays": 2}),
    ] {
        Fed::expect_err(fed.both(Some(&cfg), "setRetentionPolicy", bad).await, 400, "INVALID_ARGUMENT");
    }
    Fed::expect_err(
        fed.both(Some(&t), "setRetentionPolicy", policy(20, 20, 20, 20, 30)).await,
        403,
        "FEDERATION_CONFIGURE_FORBIDDEN",
    );
    let p = write(&fed, &cfg, "setRetentionPolicy", policy(20, 20, 20, 20, 30), true).await;
    assert_eq!(
        p,
        json!({"eventsDays": 20, "sessionsDays": 20, "conversionsDays": 20, "profilesDays": 20, "aggregatesDays": 30,
            "enabledAt": T0, "updatedAt": T0})
    );

    // The backlog before the run: A's and B's pageviews (40 and 25 days old,
    // past 20), their sessions and state rows, the old conversion; the
    // aggregates of 40 days ago (past 30), not those of 25.
    let before = status(None).await;
    let classes: Vec<&str> =
        before["jobs"].as_array().unwrap().iter().map(|j| j["dataClass"].as_str().unwrap()).collect();
    assert_eq!(classes, ["events", "sessions", "conversions", "profiles", "aggregates"]);
    assert_eq!(before["jobs"][0]["cutoff"], T0 - 20 * DAY);
    let agg_cut = T0 - 30 * DAY;
    assert_eq!(before["jobs"][4]["cutoff"], agg_cut - agg_cut.rem_euclid(DAY));
    assert_eq!(before["backlog"]["events"], 4, "A's three pageviews and B's");
    assert_eq!(before["backlog"]["sessions"], 4, "A's and B's sessions and state rows");
    assert_eq!(before["backlog"]["conversions"], 1);
    assert!(before["backlog"]["aggregates"].as_i64().unwrap() > 0);
    // A `now` of the caller's: 30 days earlier nothing is past the cutoffs of the events.
    assert_eq!(status(Some(T0 - 30 * DAY)).await["backlog"]["events"], 0);

    // The run: batches of 2, back to back until each backlog is 0.
    let deleted = retention_drain(app).await;
    let after = status(None).await;
    assert_eq!(after["backlog"], json!({"events": 0, "sessions": 0, "conversions": 0, "profiles": 0, "aggregates": 0}));
    assert_eq!(after["jobs"][0]["lastDeleted"], 4);
    assert_eq!(after["jobs"][0]["lastRunAt"], T0);
    assert_eq!(after["jobs"][0]["lastError"], Value::Null);
    let aggregates_deleted = after["jobs"][4]["lastDeleted"].as_i64().unwrap();
    assert_eq!(deleted as i64, 4 + 4 + 1 + aggregates_deleted);

    // The purged session is gone; the recent one and its day's figures stay.
    let gone = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": old_session})).await.unwrap();
    assert_eq!(gone, Value::Null);
    let (r0, r1) = day_of(recent);
    assert_eq!(overview(r0, r1).await["totals"]["pageviews"], 1);
    // Distinct visitors survive the purge of sessions and events (B's day keeps its set).
    let (m0, m1) = day_of(mid);
    assert_eq!(overview(m0, m1).await["totals"]["visitors"], 1);
    assert_eq!(overview(o0, o1).await["totals"]["visitors"], 0, "the aggregates of 40 days ago are gone too");

    // dataCoverage: 40 days ago everything is gone; 25 days ago the details are
    // gone but the aggregates kept (retained); 10 days ago complete.
    let coverage = |from: i64, to: i64| {
        let fed = &fed;
        let t = t.clone();
        async move { fed.both(Some(&t), "dataCoverage", json!({"siteId": "loja", "from": from, "to": to})).await.unwrap() }
    };
    let c = coverage(o0, o1).await;
    assert_eq!(c["trackingSince"], old, "tracking began 40 days ago, whatever is left");
    for class in ["aggregates", "sessions", "events", "conversions"] {
        assert_eq!(c["classes"][class]["status"], "unavailable", "{class}");
    }
    let c = coverage(m0, m1).await;
    assert_eq!(c["classes"]["aggregates"]["status"], "complete");
    for class in ["sessions", "events", "conversions"] {
        assert_eq!(
            c["classes"][class],
            json!({"status": "retained", "coveredFrom": null, "coveredTo": null}),
            "{class}"
        );
    }
    let c = coverage(r0, r1).await;
    assert_eq!(c["classes"]["events"]["status"], "complete");
    // Across the cutoff: partial, bounded by the kept part.
    let c = coverage(m0, r1).await;
    assert_eq!(c["classes"]["events"], json!({"status": "partial", "coveredFrom": T0 - 20 * DAY, "coveredTo": r1}));

    // Disabling stops every cleanup and restores nothing.
    assert_eq!(
        write(&fed, &cfg, "disableRetentionPolicy", json!({"siteId": "loja"}), false).await,
        json!({"disabled": true})
    );
    assert_eq!(status(None).await["policy"], Value::Null);
    app.clock.advance(15 * DAY);
    assert_eq!(retention_drain(app).await, 0);
    assert_eq!(overview(r0, r1).await["totals"]["pageviews"], 1);
});

// rule: RET-09
backend_test!(purging_a_profile_removes_its_aliases_and_at_last_its_identity, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let identify = |visitor: Option<&str>| {
        let mut body = json!({"externalId": "cliente-42", "name": "José Silva"});
        if let Some(v) = visitor {
            body["visitorId"] = json!(v);
        }
        body
    };
    let first = app.post("/v1/sites/loja/analytics/identify", identify(Some("v_visitor000a"))).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let person = first.body["visitorId"].as_str().unwrap().to_string();
    app.clock.advance(40 * DAY);
    // (The host API: the test's tokens expired with the 40 days.)
    assert_eq!(app.post("/v1/analytics/setRetentionPolicy", policy(20, 20, 20, 20, 30)).await.status, 200);
    let profile = |id: &str| {
        let body = json!({"siteId": "loja", "visitorId": id});
        async move { app.post("/v1/analytics/getVisitorProfile", body).await.body }
    };
    assert_eq!(profile("v_visitor000a").await["visitorId"], person, "the alias answers its person");
    let status = app.post("/v1/analytics/retentionStatus", json!({"siteId": "loja"})).await.body;
    assert_eq!(status["backlog"]["profiles"], 1);
    retention_drain(app).await;
    assert_eq!(profile(&person).await, Value::Null);
    assert_eq!(profile("v_visitor000a").await, Value::Null, "the alias went with it");
    // No other site of the owner keeps the person: its identity row went too, so a new id.
    let again = app.post("/v1/sites/loja/analytics/identify", identify(None)).await;
    assert_eq!(again.status, 201);
    assert_ne!(again.body["visitorId"], person);
});

// The funnel index keeps a visitor's entries of a day in one row: the
// events cutoff falls inside such a day, so the row loses its entries
// before the cutoff and keeps the later ones, as the events themselves do.
// rule: RET-03
// rule: RET-04
backend_test!(retention_trims_a_funnel_index_row_at_a_cutoff_inside_its_day, small_batches, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let step = |label: &str, p: &str| json!({"label": label, "matcher": path(p)});
    let funnel = json!({"siteId": "loja", "key": "compra", "name": "Compra", "windowMs": 6 * 3_600_000,
        "steps": [step("Produto", "/produto/:id"), step("Carrinho", "/carrinho"), step("Obrigado", "/obrigado")]});
    write(&fed, &cfg, "upsertFunnel", funnel, true).await;
    drain(app).await;
    // The events cutoff at 20 days is T0 − 20 days, midday UTC.
    let cutoff = T0 - 20 * DAY;
    const HOUR: i64 = 3_600_000;
    let view = |at: i64, visitor: &str, id: &str, path: &str| json!({"type": "pageview", "occurredAt": at, "visitorId": visitor, "pageviewId": format!("p_{id:0>16}"), "path": path});
    let lines = vec![
        // X: the product before the cutoff, the cart and the thank-you after: all three, then none.
        view(cutoff - 3 * HOUR, "v_visitor000x", "1", "/produto/1"),
        view(cutoff + HOUR, "v_visitor000x", "2", "/carrinho"),
        view(cutoff + 2 * HOUR, "v_visitor000x", "3", "/obrigado"),
        // Y: a thank-you page before the cutoff, the product and the cart after: two steps, kept.
        view(cutoff - 2 * HOUR, "v_visitor000y", "4", "/obrigado"),
        view(cutoff + HOUR, "v_visitor000y", "5", "/produto/2"),
        view(cutoff + 90 * 60_000, "v_visitor000y", "6", "/carrinho"),
    ];
    assert_eq!(import(app, "loja", "history", &lines).await.status, 201);
    drain(app).await;
    let t = reader(&fed);
    let (d0, d1) = day_of(cutoff);
    let report = || {
        let fed = &fed;
        let t = t.clone();
        async move {
            let r = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await;
            let f = r.unwrap()["funnels"][0].clone();
            f["steps"].as_array().unwrap().iter().map(|s| s["visitors"].as_i64().unwrap()).collect::<Vec<_>>()
        }
    };
    assert_eq!(report().await, vec![2, 2, 1]);
    write(&fed, &cfg, "setRetentionPolicy", policy(20, 20, 20, 20, 30), false).await;
    retention_drain(app).await;
    let status = fed.both(Some(&cfg), "retentionStatus", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(status["backlog"]["events"], 0);
    // X's product went with its event; Y's day row kept the product and the cart.
    assert_eq!(report().await, vec![1, 1, 0]);
});
