//! Tracker batches that arrive while the writer is busy are accepted
//! together, in one write (issue 25, STORE-10): the writer is held by a
//! write that waits on the test, 21 batches queue up, and once it is let go
//! they all commit in a single further write, each answered as if alone.
//! A lead queued behind them is written first, in a batch of its own (STORE-13).

use serde_json::{Value, json};

use crate::analytics::{analytics_builder, drain, pageview, site};
use crate::backend_test;
use crate::common::{DAY, T0};
use crate::federation::READ;

/// The tracker's POST on a task of its own (the test app itself stays here).
fn post(app: &crate::common::TestApp, visitor: &str, events: Vec<Value>) -> tokio::task::JoinHandle<Value> {
    let (http, url) = (app.http.clone(), format!("{}/rastro/events", app.base));
    let body = json!({"siteId": "loja", "visitorId": visitor, "events": events}).to_string();
    tokio::spawn(async move {
        let r = http
            .post(url)
            .header("content-type", "text/plain")
            .header("user-agent", crate::analytics::UA)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()
    })
}

// rule: STORE-10
// rule: STORE-01
backend_test!(batches_waiting_together_are_accepted_in_one_write, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let cx = app.state.cx.clone();
    let writes = |cx: &rastrod::service::context::Context| cx.storage_stats().writer.writes;
    let before = writes(&cx);
    // The writer, held until the batches are queued.
    let (release, blocker) = crate::common::hold_writer(&cx).await;
    let queued = |n: usize| crate::common::wait_queued(n, || cx.analytics.tracker.queued_batches());
    // A's pageview first, then its engagement: the second needs the first stored.
    let a1 = post(app, "v_visitor000a", vec![pageview("1", "/")]);
    queued(1).await;
    let engaged = json!({"type": "engagement", "pageviewId": "p_0000000000000001", "engagedMs": 5000});
    let a2 = post(app, "v_visitor000a", vec![engaged]);
    queued(2).await;
    let others: Vec<_> = (0..19)
        .map(|i| post(app, &format!("v_visitor{i:04}b"), vec![pageview(&format!("{}", 100 + i), "/p")]))
        .collect();
    queued(21).await;
    assert_eq!(writes(&cx), before, "nothing written while the writer is held");
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    assert_eq!(a1.await.unwrap()["accepted"], 1);
    let second = a2.await.unwrap();
    assert_eq!((second["accepted"].clone(), second["rejected"].clone()), (json!(1), json!(0)), "{second}");
    for o in others {
        assert_eq!(o.await.unwrap()["accepted"], 1);
    }
    assert_eq!(writes(&cx) - before, crate::common::writers(&cx) + 1, "the held writes and one for the 21 batches");
    assert_eq!(cx.analytics.tracker.queued_batches(), 0);
    // Counted as if they came one by one.
    drain(app).await;
    let d = T0 - T0.rem_euclid(DAY);
    let t = crate::analytics::reader(&fed);
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": d, "to": d + DAY - 1})).await.unwrap();
    assert_eq!(
        (o["totals"]["pageviews"].as_i64(), o["totals"]["visitors"].as_i64()),
        (Some(20), Some(20)),
        "{}",
        o["totals"]
    );
});

/// The batches of the equivalence test, in their order: per visitor, an
/// engagement of its earlier pageview, a pageview of the goal's page and the
/// goal's event; the first visitor twice (in the second, an engagement of a
/// session before its current one); a visitor never seen before.
fn round_batches() -> Vec<(String, Vec<Value>)> {
    let mut out: Vec<(String, Vec<Value>)> = (0..12)
        .map(|k| {
            let engaged = json!({"type": "engagement", "pageviewId": format!("p_{k:0>16}"), "engagedMs": 4000 + k});
            let buy = pageview(&format!("{}", 100 + k), "/buy");
            (format!("v_visitor{k:04}e"), vec![engaged, buy, crate::analytics::custom("signup", "/buy")])
        })
        .collect();
    // The first visitor again: its earlier session (not the current one
    // any more) is extended by an engagement of its first pageview.
    let old = json!({"type": "engagement", "pageviewId": format!("p_{:0>16}", 0), "engagedMs": 9000});
    out.insert(5, ("v_visitor0000e".into(), vec![pageview("200", "/thanks"), old]));
    out.push(("v_visitor0099e".into(), vec![pageview("300", "/")]));
    out
}

/// A report's answer for one site, with what differs between two sites
/// (the site's id, definition ids) left out.
fn comparable(mut v: Value, site: &str) -> String {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["goalId", "funnelId", "siteId", "siteIds"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v.to_string().replace(site, "SITE")
}

// rule: STORE-10
// rule: STORE-07
// rule: ARPT-09
backend_test!(a_combined_write_counts_what_batches_one_by_one_count, analytics_builder, |fed| {
    use crate::analytics::definitions::{configurer, event, path};
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "solo", false).await;
    fed.grant(&["loja", "solo"], &[READ, crate::federation::CONFIGURE]).await;
    let t = configurer(&fed);
    for s in ["loja", "solo"] {
        for (key, matcher) in [("buy", path("/buy")), ("signup", event("signup"))] {
            let g = json!({"siteId": s, "key": key, "name": key, "matcher": matcher});
            crate::analytics::definitions::write(&fed, &t, "upsertGoal", g, false).await;
        }
        let steps = json!([{"label": "home", "matcher": path("/")}, {"label": "buy", "matcher": path("/buy")}]);
        let f = json!({"siteId": s, "key": "buying", "name": "buying", "steps": steps, "windowMs": 86_400_000});
        crate::analytics::definitions::write(&fed, &t, "upsertFunnel", f, false).await;
    }
    // Earlier state, the same on both sites: six visitors 35 minutes before
    // the round (their sessions will have ended, SES-07), six 25 minutes
    // before (theirs go on), some of them with a goal already completed.
    for s in ["loja", "solo"] {
        for k in 0..6 {
            let mut events = vec![pageview(&format!("{k}"), "/")];
            if k < 3 {
                events.push(pageview(&format!("{}", 50 + k), "/buy"));
            }
            crate::analytics::track(app, s, &format!("v_visitor{k:04}e"), events).await;
        }
    }
    app.clock.advance(10 * 60_000);
    for s in ["loja", "solo"] {
        for k in 6..12 {
            let mut events = vec![pageview(&format!("{k}"), "/")];
            if k < 9 {
                events.push(crate::analytics::custom("signup", "/"));
            }
            crate::analytics::track(app, s, &format!("v_visitor{k:04}e"), events).await;
        }
    }
    app.clock.advance(25 * 60_000);
    // loja: every batch queued behind a held writer, then one write.
    let cx = app.state.cx.clone();
    let (release, blocker) = crate::common::hold_writer(&cx).await;
    let batches = round_batches();
    let mut answers = Vec::new();
    for (i, (visitor, events)) in batches.iter().enumerate() {
        answers.push(post(app, visitor, events.clone()));
        crate::common::wait_queued(i + 1, || cx.analytics.tracker.queued_batches()).await;
    }
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    // solo: the same batches one by one.
    for ((visitor, events), combined) in batches.iter().zip(answers) {
        let alone = crate::analytics::track(app, "solo", visitor, events.clone()).await;
        let combined = combined.await.unwrap();
        for k in ["accepted", "rejected", "cookieless"] {
            assert_eq!(combined[k], alone[k], "{visitor} {k}: {combined} vs {alone}");
        }
        assert_eq!(combined["sessionId"].is_string(), alone["sessionId"].is_string());
    }
    drain(app).await;
    let d = T0 - T0.rem_euclid(DAY);
    let r = crate::analytics::reader(&fed);
    for name in ["overview", "goalsReport", "funnelsReport", "siteMap"] {
        let args = |s: &str| match name {
            "overview" | "siteMap" => json!({"siteIds": [s], "from": d, "to": d + DAY - 1}),
            _ => json!({"siteId": s, "from": d, "to": d + DAY - 1}),
        };
        let loja = fed.both(Some(&r), name, args("loja")).await.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let solo = fed.both(Some(&r), name, args("solo")).await.unwrap();
        if name == "goalsReport" {
            // And right in itself: a goal its continuing session had already
            // completed counts a completion, not another session (ARPT-10).
            let figures: Vec<_> = loja["goals"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| (g["key"].clone(), g["completions"].clone(), g["sessions"].clone()))
                .collect();
            assert_eq!(figures, [(json!("buy"), json!(15), json!(15)), (json!("signup"), json!(15), json!(12))]);
        }
        if name == "overview" {
            assert_eq!(loja["totals"]["pageviews"], 29, "15 earlier, 14 in the round");
        }
        assert_eq!(comparable(loja, "loja"), comparable(solo, "solo"), "{name}");
    }
    let sessions = |s: &str| {
        let args =
            json!({"siteId": s, "from": d, "to": d + DAY - 1, "paginationOpts": {"numItems": 100, "cursor": null}});
        let fed = &fed;
        let r = r.clone();
        async move {
            let page = fed.both(Some(&r), "listSessions", args).await.unwrap();
            let mut rows: Vec<String> = page["page"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let (v, p, e, d, g) =
                        (&s["visitorId"], &s["pageviews"], &s["events"], &s["durationMs"], &s["goals"]);
                    format!("{v} {p} {e} {} {} {d} {g}", s["entryPath"], s["exitPath"])
                })
                .collect();
            rows.sort();
            rows
        }
    };
    let (loja, solo) = (sessions("loja").await, sessions("solo").await);
    assert_eq!(loja.len(), 19, "12 earlier, 6 reopened, 1 new: {loja:?}");
    assert_eq!(loja, solo);
    // The first visitor's first session: two pageviews at one instant, the
    // first engaged 9 s by the round's second batch.
    let first = loja.iter().find(|r| r.starts_with("\"v_visitor0000e\" 2 ")).unwrap();
    assert!(first.contains(" 9000 "), "{first}");
});

// rule: STORE-13
// A lead that comes while the tracker's batches wait for the writer is
// written first, in a batch of its own: it waits for no tracker commit
// (issue 25's flood). Before, the first writer took both in one batch.
backend_test!(a_lead_queued_behind_tracker_batches_is_committed_in_a_batch_of_its_own, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let cx = app.state.cx.clone();
    let stats = |cx: &rastrod::service::context::Context| cx.storage_stats().writer;
    let before = stats(&cx);
    let held = crate::common::writers(&cx);
    let (release, blocker) = crate::common::hold_writer(&cx).await;
    let tracker: Vec<_> =
        (0..3).map(|i| post(app, &format!("v_visitor{i:04}c"), vec![pageview(&format!("{}", 200 + i), "/")])).collect();
    crate::common::wait_queued(3, || cx.analytics.tracker.queued_batches()).await;
    let req =
        app.host_request(reqwest::Method::POST, "/v1/sites/loja/leads").header("content-type", "application/json");
    let body = json!({"leadKey": "k1", "eventId": "k1-new", "occurredAt": T0, "origin": "ctwa_ad"});
    let lead = tokio::spawn(async move { req.body(body.to_string()).send().await.unwrap().status().as_u16() });
    // Both writes in the writer's queue, behind the held ones.
    crate::common::wait_queued(held as usize + 2, || stats(&cx).pending as usize).await;
    assert_eq!(stats(&cx).writes, before.writes, "nothing written while the writer is held");
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    assert_eq!(lead.await.unwrap(), 201);
    for t in tracker {
        assert_eq!(t.await.unwrap()["accepted"], 1);
    }
    let after = stats(&cx);
    assert_eq!(after.writes - before.writes, held + 2, "the held writes, the tracker's combined write, the lead's");
    assert_eq!(
        after.batches - before.batches,
        held + 2,
        "the lead in a batch of its own, not with the tracker's write"
    );
    assert_eq!(after.pending, 0);
});
