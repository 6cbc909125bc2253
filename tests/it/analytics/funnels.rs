//! `funnelsReport` and the live rows' `funnel` over HTTP (ARPT-11 to
//! ARPT-13, OVR-13): visitors reaching ordered steps within the window, across sessions,
//! from the step index written at acceptance or, while a new funnel's index is
//! rebuilt, from the events themselves. Expected figures are worked out by
//! hand from the events each test sends.

use serde_json::{Value, json};

use crate::analytics::definitions::{configurer, event, path, write};
use crate::analytics::{analytics_builder, custom, drain, pageview, reader, site, track};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};
use crate::federation::{CONFIGURE, Fed, FedBuilder, READ};

const MINUTE: i64 = 60_000;

pub(super) fn checkout(key: &str) -> Value {
    json!({"siteId": "loja", "key": key, "name": "Checkout", "windowMs": 3_600_000, "steps": [
        {"label": "Produto", "matcher": path("/produto/:id")},
        {"label": "Carrinho", "matcher": event("add_to_cart")},
        {"label": "Obrigado", "matcher": path("/obrigado")},
    ]})
}

/// A reaches all three steps, B two, C and D one (C's thank-you page comes
/// before its product, D's cart 61 minutes after its product), E none.
pub(super) async fn visits(app: &TestApp) {
    track(app, "loja", "v_visitor000d", vec![pageview("d1", "/produto/4")]).await;
    track(app, "loja", "v_visitor000c", vec![pageview("c1", "/obrigado"), pageview("c2", "/produto/3")]).await;
    track(app, "loja", "v_visitor000e", vec![pageview("e1", "/")]).await;
    app.clock.advance(MINUTE);
    track(app, "loja", "v_visitor000a", vec![pageview("a1", "/produto/1"), custom("add_to_cart", "/produto/1")]).await;
    track(app, "loja", "v_visitor000b", vec![pageview("b1", "/produto/2")]).await;
    app.clock.advance(MINUTE);
    track(app, "loja", "v_visitor000a", vec![pageview("a2", "/obrigado")]).await;
    track(app, "loja", "v_visitor000b", vec![custom("add_to_cart", "/produto/2")]).await;
    app.clock.advance(59 * MINUTE);
    track(app, "loja", "v_visitor000d", vec![custom("add_to_cart", "/produto/4")]).await;
}

/// A site with the checkout funnel and [`visits`] applied to it and its
/// rollups: a reader's token for it.
pub(super) async fn checkout_day(fed: &Fed) -> String {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    write(fed, &configurer(fed), "upsertFunnel", checkout("checkout"), true).await;
    drain(app).await;
    visits(app).await;
    drain(app).await;
    reader(fed)
}

pub(super) fn today() -> (i64, i64) {
    let d = T0 - T0.rem_euclid(DAY);
    (d, d + DAY - 1)
}

pub(super) fn expected(funnel: &Value, key: &str) {
    assert_eq!(funnel["key"], key);
    assert_eq!((funnel["entered"].as_i64(), funnel["completed"].as_i64()), (Some(4), Some(1)));
    assert_eq!(funnel["conversionRate"], json!(0.25));
    let steps = funnel["steps"].as_array().unwrap();
    let got: Vec<(i64, i64, i64, Value, Value)> = steps
        .iter()
        .map(|s| {
            (
                s["index"].as_i64().unwrap(),
                s["visitors"].as_i64().unwrap(),
                s["dropoff"].as_i64().unwrap(),
                s["conversionRate"].clone(),
                s["stepConversionRate"].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![(1, 4, 0, json!(1), json!(1)), (2, 2, 2, json!(0.5), json!(0.5)), (3, 1, 1, json!(0.25), json!(0.5)),]
    );
    assert_eq!(steps[1]["label"], "Carrinho");
    assert_eq!(steps[1]["matcher"], event("add_to_cart"));
}

// rule: ARPT-02
// rule: ARPT-11
// rule: ARPT-12
// rule: ARPT-13
// rule: OVR-13
backend_test!(funnels_count_visitors_reaching_ordered_steps_in_the_window, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let checkout_id = write(&fed, &cfg, "upsertFunnel", checkout("checkout"), true).await;
    drain(app).await;
    visits(app).await;
    let t = reader(&fed);
    let (d0, d1) = today();
    let report = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!(report["incomplete"], false);
    expected(&report["funnels"][0], "checkout");
    assert_eq!(report["funnels"][0]["funnelId"], checkout_id);
    assert_eq!(report["funnels"][0]["windowMs"], 3_600_000);

    // A funnel made after the events: the same answer while its index is rebuilt and after.
    write(&fed, &cfg, "upsertFunnel", checkout("copy"), false).await;
    let during = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    expected(&during["funnels"][1], "copy");
    drain(app).await;
    let after = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!(during, after);

    // Ceilings: complete UTC days, at most 90.
    for (from, to) in [(d0 + 1, d1), (d0, d1 - 1), (d0 - 90 * DAY, d1)] {
        let r = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": from, "to": to})).await;
        Fed::expect_err(r, 400, "INVALID_ARGUMENT");
    }
    fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0 - 89 * DAY, "to": d1})).await.unwrap();

    // Live: A's furthest funnel (checkout and copy tie at 3 steps; by key), D's at step 1.
    let now = T0 + 2 * MINUTE + 1;
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now})).await.unwrap();
    let row = |v: &str| live["visitors"].as_array().unwrap().iter().find(|r| r["visitorId"] == v).cloned().unwrap();
    assert_eq!(
        row("v_visitor000a")["funnel"],
        json!({"funnelId": checkout_id, "key": "checkout", "step": 3, "steps": 3})
    );
    assert_eq!(row("v_visitor000e")["funnel"], Value::Null);
    let later =
        fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": T0 + 61 * MINUTE})).await.unwrap();
    assert_eq!(later["visitors"][0]["visitorId"], "v_visitor000d");
    assert_eq!(later["visitors"][0]["funnel"]["step"], 1);

    // Changing the steps rebuilds; removing a funnel takes it out of the report.
    let mut two = checkout("checkout");
    two["funnelId"] = checkout_id.clone();
    two["steps"].as_array_mut().unwrap().remove(1);
    write(&fed, &cfg, "upsertFunnel", two, false).await;
    drain(app).await;
    let r = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    // Product then thank-you within the hour: A only (C's order is reversed).
    assert_eq!((r["funnels"][0]["entered"].as_i64(), r["funnels"][0]["completed"].as_i64()), (Some(4), Some(1)));
    assert_eq!(r["funnels"][0]["steps"].as_array().unwrap().len(), 2);
    write(&fed, &cfg, "removeFunnel", json!({"siteId": "loja", "funnelId": checkout_id}), false).await;
    let r = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!(r["funnels"].as_array().unwrap().len(), 1);
});

// rule: OVR-13
backend_test!(a_visitor_id_live_on_two_sites_shows_each_sites_own_funnel, analytics_builder, |fed| {
    // One read takes every site's funnels and step rows, so a visitor id that
    // recurs on another site must still get only its own site's level.
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "outra", false).await;
    fed.grant(&["loja", "outra"], &[READ, CONFIGURE]).await;
    let cfg = configurer(&fed);
    let on_loja = write(&fed, &cfg, "upsertFunnel", checkout("checkout"), true).await;
    let mut other = checkout("compra");
    other["siteId"] = json!("outra");
    let on_outra = write(&fed, &cfg, "upsertFunnel", other, true).await;
    drain(app).await;
    // The same id: all three steps on loja, the first only on outra; a
    // second visitor on outra alone, at step two.
    track(app, "loja", "v_visitor000a", vec![pageview("l1", "/produto/1"), custom("add_to_cart", "/produto/1")]).await;
    track(app, "loja", "v_visitor000a", vec![pageview("l2", "/obrigado")]).await;
    track(app, "outra", "v_visitor000a", vec![pageview("o1", "/produto/9")]).await;
    track(app, "outra", "v_visitor000b", vec![pageview("o2", "/produto/8"), custom("add_to_cart", "/produto/8")]).await;
    let t = reader(&fed);
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja", "outra"], "now": T0 + 1})).await.unwrap();
    let row = |s: &str, v: &str| {
        live["visitors"].as_array().unwrap().iter().find(|r| r["siteId"] == s && r["visitorId"] == v).cloned().unwrap()
    };
    assert_eq!(live["count"], 3);
    assert_eq!(
        row("loja", "v_visitor000a")["funnel"],
        json!({"funnelId": on_loja, "key": "checkout", "step": 3, "steps": 3})
    );
    assert_eq!(
        row("outra", "v_visitor000a")["funnel"],
        json!({"funnelId": on_outra, "key": "compra", "step": 1, "steps": 3})
    );
    assert_eq!(
        row("outra", "v_visitor000b")["funnel"],
        json!({"funnelId": on_outra, "key": "compra", "step": 2, "steps": 3})
    );
    // The server's own `now` goes through each site's cached state: the same rows.
    let now = rastrod::clock::Clock::now_ms(&*app.clock);
    let cached = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja", "outra"], "now": now})).await.unwrap();
    let funnels = |a: &Value| {
        let mut v: Vec<String> = a["visitors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {}", r["siteId"], r["visitorId"], r["funnel"]))
            .collect();
        v.sort();
        v
    };
    assert_eq!(funnels(&cached), funnels(&live));
});

// rule: ARPT-11
backend_test!(an_alias_and_its_person_are_one_visitor_of_a_funnel, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    write(&fed, &configurer(&fed), "upsertFunnel", checkout("checkout"), true).await;
    drain(app).await;
    // Anonymous: the product and the cart; identified a minute later: the thank-you page.
    let anon = "v_anonymous0001";
    track(app, "loja", anon, vec![pageview("n1", "/produto/1"), custom("add_to_cart", "/produto/1")]).await;
    app.clock.advance(MINUTE);
    let person =
        app.post("/v1/sites/loja/analytics/identify", json!({"externalId": "user-1", "visitorId": anon})).await.ok();
    assert_eq!(person["aliased"], true);
    let u = person["visitorId"].as_str().unwrap().to_string();
    track(app, "loja", &u, vec![pageview("n2", "/obrigado")]).await;
    // Someone else reaches the product only.
    track(app, "loja", "v_anonymous0002", vec![pageview("n3", "/produto/2")]).await;
    drain(app).await;
    let (d0, d1) = today();
    let r = fed.both(Some(&reader(&fed)), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await;
    let f = &r.unwrap()["funnels"][0];
    let reached: Vec<i64> = f["steps"].as_array().unwrap().iter().map(|s| s["visitors"].as_i64().unwrap()).collect();
    assert_eq!((f["entered"].as_i64(), f["completed"].as_i64(), reached), (Some(2), Some(1), vec![2, 1, 1]));
    // Forgotten, the person and its alias become one fresh id: their index
    // rows of the day merge into one, and the funnel counts the same.
    let gone = app.delete(&format!("/v1/sites/loja/analytics/people/{u}")).await.ok();
    assert_eq!(gone["removed"], true);
    let r = fed.both(Some(&reader(&fed)), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await;
    assert_eq!(r.unwrap()["funnels"][0]["steps"], f["steps"]);
    assert_eq!(app.count("web_funnel_days").await, 2, "the fresh id's day and the other visitor's");
});

// The index is written at acceptance and by a rebuild: an event accepted
// while its funnel's rebuild is pending is appended by both, and must count
// once. One event matching two steps shows it: read twice, it would be both.
// rule: ARPT-11
// rule: ARPT-13
// rule: OVR-13
backend_test!(an_event_indexed_by_acceptance_and_by_a_rebuild_counts_once, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let funnel = json!({"siteId": "loja", "key": "um", "name": "Produto um", "windowMs": 3_600_000, "steps": [
        {"label": "Produto", "matcher": path("/produto/:id")},
        {"label": "Produto um", "matcher": path("/produto/1")},
        {"label": "Obrigado", "matcher": path("/obrigado")},
    ]});
    // Saved, its rebuild pending; then the visit, indexed at acceptance; then the rebuild.
    write(&fed, &configurer(&fed), "upsertFunnel", funnel, false).await;
    track(app, "loja", "v_visitor000a", vec![pageview("a1", "/produto/1")]).await;
    app.clock.advance(MINUTE);
    track(app, "loja", "v_visitor000a", vec![pageview("a2", "/obrigado")]).await;
    drain(app).await;
    let t = reader(&fed);
    let (d0, d1) = today();
    let r = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    let reached: Vec<i64> =
        r["funnels"][0]["steps"].as_array().unwrap().iter().map(|s| s["visitors"].as_i64().unwrap()).collect();
    assert_eq!(reached, vec![1, 0, 0], "one product view is one step");
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": T0 + MINUTE})).await.unwrap();
    assert_eq!(live["visitors"][0]["funnel"]["step"], 1);
});

fn capped(backend: crate::common::Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_REPORT_FUNNEL_ROW_CAP", "3")
}

// rule: ARPT-13
backend_test!(past_the_row_cap_a_funnel_report_is_incomplete_lower_bounds, capped, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    write(&fed, &configurer(&fed), "upsertFunnel", checkout("checkout"), false).await;
    visits(app).await;
    drain(app).await;
    let (d0, d1) = today();
    let r =
        fed.both(Some(&reader(&fed)), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!(r["incomplete"], true);
    assert!(r["funnels"][0]["entered"].as_i64().unwrap() <= 4);
});

// A report reads its funnels' index rows ahead on a second pooled
// connection when one is idle: the same answer as read on one, with a
// comparison, a row cap and a funnel still rebuilt among them.
// rule: ARPT-11
// rule: ARPT-13
backend_test!(funnels_read_ahead_on_a_second_connection_count_the_same, analytics_builder, |fed| {
    use rastrod::service::analytics::reports::funnels::{FunnelsArgs, funnels_report};
    let app = &fed.app;
    checkout_day(&fed).await;
    let cfg = configurer(&fed);
    write(&fed, &cfg, "upsertFunnel", checkout("copy"), false).await;
    drain(app).await;
    let mut cart = checkout("cart");
    cart["steps"].as_array_mut().unwrap().remove(0);
    write(&fed, &cfg, "upsertFunnel", cart, false).await;
    let (d0, d1) = today();
    let args: FunnelsArgs = serde_json::from_value(json!({"siteId": "loja", "from": d0, "to": d1})).unwrap();
    let compared: FunnelsArgs =
        serde_json::from_value(json!({"siteId": "loja", "from": d0, "to": d1, "compare": "previousPeriod"})).unwrap();
    // Three funnels, "cart" still rebuilt (read from the events), then all three from the index.
    for round in ["rebuilding", "indexed"] {
        for (a, cap) in [(&args, 1_000), (&compared, 1_000), (&args, 3)] {
            let a = a.clone();
            // An idle connection is taken, never waited for: ask until the pool has one.
            let mut answers = None;
            for _ in 0..100 {
                let a = a.clone();
                answers = app
                    .state
                    .cx
                    .read_pair(move |c, helper| {
                        let Some(helper) = helper else { return Ok(None) };
                        let ahead = funnels_report(c, Some(helper), a.clone(), cap)?;
                        Ok(Some((ahead, funnels_report(c, None, a, cap)?)))
                    })
                    .await
                    .unwrap();
                if answers.is_some() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let (ahead, asked) = answers.expect("a second idle connection in the pool");
            let (ahead, asked) = (serde_json::to_value(ahead).unwrap(), serde_json::to_value(asked).unwrap());
            assert_eq!(ahead, asked, "{round}, cap {cap}");
            assert_eq!(ahead["funnels"].as_array().unwrap().len(), 3);
            assert_eq!(ahead["incomplete"], cap == 3, "{round}, cap {cap}");
            if cap > 3 {
                expected(&ahead["funnels"][1], "checkout");
                expected(&ahead["funnels"][2], "copy");
            }
        }
        drain(app).await;
    }
});

// A draft counts as the saved funnel would (its editor's live preview), and
// writes nothing: no funnel, no index rows, no rebuild.
// rule: ARPT-11
// rule: CFG-08
backend_test!(a_funnel_previewed_counts_as_saved_and_writes_nothing, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    visits(app).await;
    drain(app).await;
    let t = reader(&fed);
    let (d0, d1) = today();
    let draft =
        |steps: Value, window: i64| json!({"siteId": "loja", "from": d0, "to": d1, "windowMs": window, "steps": steps});
    let p = fed.both(Some(&t), "previewFunnel", draft(checkout("x")["steps"].clone(), 3_600_000)).await.unwrap();
    assert_eq!(p["incomplete"], false);
    let mut as_report = p.clone();
    as_report["key"] = json!("x");
    expected(&as_report, "x");
    // Another draft: A, B and D put something in the cart; only A reached the thank-you page after.
    let cart_first = json!([{"label": "Carrinho", "matcher": event("add_to_cart")}, {"label": "Obrigado", "matcher": path("/obrigado")}]);
    let other = fed.both(Some(&t), "previewFunnel", draft(cart_first, 3_600_000)).await.unwrap();
    let visitors: Vec<i64> =
        other["steps"].as_array().unwrap().iter().map(|s| s["visitors"].as_i64().unwrap()).collect();
    assert_eq!(visitors, vec![3, 1]);
    assert_eq!(other["conversionRate"].as_f64().map(|r| (r * 1e4).round()), Some(3333.0));
    // Nothing written: no funnel exists, no work is queued.
    let cfg = configurer(&fed);
    let listed = fed.both(Some(&cfg), "listFunnels", json!({"siteId": "loja"})).await.unwrap();
    assert_eq!(listed, json!([]));
    // The draft is checked as upsertFunnel checks it.
    let one = json!([{"label": "Só", "matcher": path("/")}]);
    Fed::expect_err(fed.both(Some(&t), "previewFunnel", draft(one, 3_600_000)).await, 400, "INVALID_ARGUMENT");
    Fed::expect_err(
        fed.both(Some(&t), "previewFunnel", draft(checkout("x")["steps"].clone(), 1)).await,
        400,
        "INVALID_ARGUMENT",
    );
    let bad_day =
        json!({"siteId": "loja", "from": d0 + 1, "to": d1, "windowMs": 60_000, "steps": checkout("x")["steps"]});
    Fed::expect_err(fed.both(Some(&t), "previewFunnel", bad_day).await, 400, "INVALID_ARGUMENT");
});

// Migration 30 packs the step rows a database holds: reverted (one row per
// event again, filled here with the rows the packed index held, and no
// rebuild pending), then applied again, those rows become a row per
// (funnel, day, visitor) and the report reads the same from them.
// rule: ARPT-11
backend_test!(step_rows_migrate_into_packed_days_to_the_same_answers, analytics_builder, |fed| {
    use rastrod::service::effects::{Effects, Written};
    let app = &fed.app;
    let t = checkout_day(&fed).await;
    let (d0, d1) = today();
    let before = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    expected(&before["funnels"][0], "checkout");
    let shape = app
        .state
        .cx
        .write_alone(|c| {
            use diesel::RunQueryDsl;
            use rastrod::store::analytics::funnels;
            let visits: Vec<(String, String)> =
                ["a", "b", "c", "d", "e"].iter().map(|v| ("loja".to_string(), format!("v_visitor000{v}"))).collect();
            let rows = funnels::steps_of_visitors(c, &visits)?;
            rastrod::db::revert_through(c, "20261205000030")?;
            diesel::sql_query("DELETE FROM web_funnel_rebuilds").execute(c)?;
            for r in &rows {
                diesel::sql_query(format!(
                    "INSERT INTO web_funnel_steps (funnel_id, site_id, visitor_id, at, event_id, steps) \
                     VALUES ('{}', 'loja', '{}', {}, '{}', {})",
                    r.funnel_id, r.visitor_id, r.at, r.event_id, r.steps
                ))
                .execute(c)?;
            }
            rastrod::db::migrate(c)?;
            let days = funnels::days_between(c, &rows[0].funnel_id, i64::MIN, i64::MAX, 100)?;
            let packed = days.iter().map(|d| funnels::unpack(&d.entries).count()).sum::<usize>();
            Ok(Written::new((rows.len(), days.len(), packed), Effects::quiet()))
        })
        .await
        .unwrap();
    // Nine matching events (A three, B two, C two, D two) of one day: four rows.
    assert_eq!(shape, (9, 4, 9));
    let after = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!(after, before);
    // A migrated row takes new entries: E now reaches the product.
    track(app, "loja", "v_visitor000e", vec![pageview("e2", "/produto/9")]).await;
    drain(app).await;
    let more = fed.both(Some(&t), "funnelsReport", json!({"siteId": "loja", "from": d0, "to": d1})).await.unwrap();
    assert_eq!(more["funnels"][0]["entered"], 5);
});

/// Two processes on one PostgreSQL appending to the same new (funnel, day,
/// visitor) row at once: the second waits for the first's commit and
/// appends to what it wrote, so neither event is lost.
// rule: STORE-04
#[test]
fn two_processes_appending_to_one_new_funnel_day_keep_both_events() {
    use rastrod::store::analytics::funnels::{self, StepRow};
    let Some((db, mut conn)) = crate::two_transactions::pg_database() else { return };
    let step = |at: i64, id: &str| StepRow {
        funnel_id: "f_1".into(),
        visitor_id: "v_visitor000a".into(),
        at,
        event_id: id.into(),
        steps: 1,
    };
    let (first, second) = (vec![step(T0, "e_1")], vec![step(T0 + 1, "e_2")]);
    crate::two_transactions::two_at_once(
        &db.url,
        &mut conn,
        move |c| Ok(funnels::insert_steps(c, "loja", &first).map(|_| ())?),
        move |c| Ok(funnels::insert_steps(c, "loja", &second).map(|_| ())?),
    );
    let days = funnels::days_between(&mut conn, "f_1", i64::MIN, i64::MAX, 10).unwrap();
    assert_eq!(days.len(), 1);
    let ids: Vec<String> = funnels::unpack(&days[0].entries).map(|e| e.event_id.to_text()).collect();
    assert_eq!(ids, ["e_1", "e_2"]);
}
