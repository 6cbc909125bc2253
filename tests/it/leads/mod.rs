//! The leads context: the lead writes and reads here; `board` (columns and
//! the event map) and `reports` (leadsReport, leadsDaily) beside them.
//!
//! Leads from the host's server: recordLead, setLeadStage, removeLead,
//! listLeads and leadJourney, all through HTTP.

mod board;
mod reports;
mod together;
mod whatsapp;

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

/// Start of T0's UTC day (T0 is noon UTC).
const D0: i64 = T0 - DAY / 2;

fn id_of(v: &Value) -> String {
    v["leadId"].as_str().expect("leadId").to_string()
}

async fn list(app: &TestApp, query: &str) -> Answer {
    app.get(&format!("/v1/leads?{query}")).await
}

async fn journey(app: &TestApp, site: &str, lead_id: &str) -> Answer {
    app.get(&format!("/v1/sites/{site}/leads/{lead_id}/journey")).await
}

async fn daily(app: &TestApp, body: Value) -> Answer {
    app.post("/v1/reports/leads-daily", body).await
}

fn keys(rows: &Value) -> Vec<String> {
    rows.as_array().unwrap().iter().map(|r| r["leadKey"].as_str().unwrap().to_string()).collect()
}

// rule: LEAD-01
backend_test!(record_lead_is_once_per_key, |app| {
    app.site("s1").await;
    let first = app.lead("s1", "c1", T0, json!({"label": "Ana"})).await;
    assert_eq!(first.status, 201);
    let id = first.body["leadId"].as_str().unwrap().to_string();
    let again =
        app.lead("s1", "c1", T0 + 5, json!({"label": "Outra", "origin": "organic", "eventId": "c1-other"})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, json!({"leadId": id, "created": false}));
    let leads = app.get(&format!("/v1/leads?siteIds=s1&from={}&to={}", T0 - DAY, T0 + DAY)).await.ok();
    assert_eq!(leads.as_array().unwrap().len(), 1);
    assert_eq!(leads[0]["label"], "Ana");
    assert_eq!(leads[0]["origin"], "ctwa_ad");
    assert_eq!(leads[0]["firstAt"], T0);
});

// rule: LEAD-11
// rule: LEAD-01
backend_test!(a_replayed_record_lead_is_answered_without_a_write, |app| {
    app.site("s1").await;
    let first = app.lead("s1", "c1", T0, json!({"label": "Ana"})).await;
    assert_eq!(first.status, 201);
    // The same call again (same eventId) while a write holds the writer:
    // answered at once, so it needed no write (counting the writer's writes
    // instead would also count background writes that land meanwhile).
    let cx = app.state.cx.clone();
    let (started, running) = tokio::sync::oneshot::channel::<()>();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let blocker = tokio::spawn(async move {
        cx.write_plain(move |_| {
            let _ = started.send(());
            let _ = held.recv();
            Ok(())
        })
        .await
    });
    running.await.unwrap();
    let replay = app.lead("s1", "c1", T0, json!({"label": "Ana"}));
    let again = tokio::time::timeout(std::time::Duration::from_secs(20), replay)
        .await
        .expect("a replay is answered while the writer is held: it costs no write");
    assert_eq!((again.status, again.body.clone()), (200, json!({"leadId": first.body["leadId"], "created": false})));
    // Another event of the same lead still goes through the writer (it may
    // fill blanks or move a column): it waits for the held write.
    let other = app.lead("s1", "c1", T0 + 5, json!({"eventId": "c1-second"}));
    tokio::pin!(other);
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(300), &mut other).await.is_err(),
        "a new event waits for the writer"
    );
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    assert_eq!(other.await.status, 200);
    // A key another site holds is no repeat here.
    app.site("s2").await;
    let there = app.lead("s2", "c1", T0, json!({"label": "Ana"})).await;
    assert_eq!((there.status, there.body["created"].clone()), (201, json!(true)));
});

// rule: LEAD-01
backend_test!(a_repeat_changes_nothing_the_first_call_set, |app| {
    app.site("s1").await;
    app.site("s2").await;
    let first = app
        .lead(
            "s1",
            "k1",
            T0,
            json!({"label": "Ana", "adId": "ad1", "adsetId": "as1", "campaignId": "c1", "adName": "Ad Um"}),
        )
        .await;
    assert_eq!(first.status, 201);
    assert_eq!(first.body["created"], true);
    let id = id_of(&first.body);

    // Every field changed, and a later time: the lead stays as it was.
    let again = app
        .lead(
            "s1",
            "k1",
            T0 + 3 * DAY,
            json!({"eventId": "k1-again", "label": "Bia", "origin": "instagram", "adId": "ad9", "adsetId": "as9",
                "campaignId": "c9", "adName": "Outro", "adsetName": "Conjunto"}),
        )
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, json!({"leadId": id, "created": false}));
    // The same body once more: still the same lead.
    let third = app.lead("s1", "k1", T0, json!({"label": "Ana"})).await;
    assert_eq!((third.status, id_of(&third.body)), (200, id.clone()));

    let rows = list(&app, &format!("siteIds=s1&from={}&to={}", T0 - DAY, T0 + 5 * DAY)).await.ok();
    assert_eq!(rows.as_array().unwrap().len(), 1);
    let l = &rows[0];
    assert_eq!(l["leadId"], id.as_str());
    assert_eq!(l["label"], "Ana");
    assert_eq!(l["origin"], "ctwa_ad");
    assert_eq!(
        (l["adId"].as_str(), l["adsetId"].as_str(), l["campaignId"].as_str()),
        (Some("ad1"), Some("as1"), Some("c1"))
    );
    assert_eq!(l["adName"], "Ad Um");
    assert_eq!(l["firstAt"], T0);
    assert_eq!(app.count("leads").await, 1);

    // One lead in the reports, on the first call's day.
    let r = app.report(&["s1"], D0, D0 + 10 * DAY - 1).await;
    assert_eq!(r["totals"]["leads"], 1);
    assert_eq!(r["origins"].as_array().unwrap().len(), 1);
    assert_eq!(r["origins"][0]["origin"], "ctwa_ad");

    // The same key on another site is another lead.
    let other = app.lead("s2", "k1", T0, json!({})).await;
    assert_eq!(other.status, 201);
    assert_ne!(id_of(&other.body), id);
    assert_eq!(app.count("leads").await, 2);
});

// rule: LEAD-02
backend_test!(a_lead_carries_origin_tree_label_and_click_id, |app| {
    app.site("s1").await;
    app.lead(
        "s1",
        "paid",
        T0,
        json!({"label": "Carla", "origin": "ctwa_ad", "campaignId": "c1", "campaignName": "Campanha Verão",
            "adsetId": "as1", "adsetName": "Conjunto SP", "adId": "ad1", "adName": "Vídeo 1", "clickId": "clk-123"}),
    )
    .await
    .ok();
    app.lead("s1", "org", T0 + 1, json!({"origin": "instagram_bio"})).await.ok();
    // A click id is stored (though never read back).
    assert_eq!(app.count("leads WHERE click_id = 'clk-123'").await, 1);

    let rows = list(&app, &format!("siteIds=s1&from={}&to={}", D0, D0 + DAY - 1)).await.ok();
    assert_eq!(keys(&rows), vec!["org", "paid"]);
    let org = &rows[0];
    assert_eq!(org["origin"], "instagram_bio");
    assert_eq!(
        (org["campaignId"].clone(), org["adsetId"].clone(), org["adId"].clone()),
        (Value::Null, Value::Null, Value::Null)
    );
    assert_eq!(org["label"], Value::Null);
    let paid = &rows[1];
    assert_eq!(paid["label"], "Carla");
    assert_eq!(paid["campaignName"], "Campanha Verão");
    assert_eq!(paid["adsetName"], "Conjunto SP");
    assert_eq!(paid["adName"], "Vídeo 1");
    assert_eq!(paid["stage"], "new");

    let r = app.report(&["s1"], D0, D0 + DAY - 1).await;
    let origins: Vec<(&str, i64)> = r["origins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["origin"].as_str().unwrap(), o["leads"].as_i64().unwrap()))
        .collect();
    assert_eq!(origins.len(), 2);
    assert!(origins.contains(&("ctwa_ad", 1)) && origins.contains(&("instagram_bio", 1)), "{origins:?}");
    // Only the paid lead is in the campaign tree, under its names.
    let c = &r["campaigns"];
    assert_eq!(c.as_array().unwrap().len(), 1);
    assert_eq!((c[0]["campaignId"].as_str(), c[0]["name"].as_str()), (Some("c1"), Some("Campanha Verão")));
    assert_eq!(c[0]["adsets"][0]["name"], "Conjunto SP");
    assert_eq!(c[0]["adsets"][0]["ads"][0]["name"], "Vídeo 1");
    assert_eq!(c[0]["adsets"][0]["ads"][0]["siteId"], "s1");
    // An organic origin never carries spend.
    let organic = r["origins"].as_array().unwrap().iter().find(|o| o["origin"] == "instagram_bio").unwrap();
    assert_eq!(organic.get("spendCents"), Some(&Value::Null));
});

// rule: LEAD-03
backend_test!(no_read_returns_the_click_id, |app| {
    const CLICK: &str = "clickcanary-Zq81xVw0pT";
    app.site("s1").await;
    let id = id_of(
        &app.lead("s1", "k1", T0, json!({"clickId": CLICK, "adId": "ad1", "campaignId": "c1", "adsetId": "as1"}))
            .await
            .ok(),
    );
    // A repeat may fill it in on a lead that had none: still never read back.
    app.lead("s1", "k2", T0 + 1, json!({"adId": "ad1"})).await.ok();
    app.lead("s1", "k2", T0 + 2, json!({"eventId": "k2-b", "clickId": format!("{CLICK}-2")})).await.ok();
    assert_eq!(app.count("leads WHERE click_id IS NOT NULL").await, 2);
    app.stage("s1", "k1", json!({"stage": "won", "revenueCents": 100, "eventId": "w", "occurredAt": T0 + 9}))
        .await
        .ok();

    let range = format!("from={}&to={}", D0, D0 + DAY - 1);
    let reads = [
        list(&app, &format!("siteIds=s1&{range}")).await,
        list(&app, &format!("siteIds=s1&{range}&adId=ad1")).await,
        journey(&app, "s1", &id).await,
        app.post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1})).await,
        // A partial-day range reads the leads themselves.
        app.post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": T0 - 5, "to": T0 + 5})).await,
        daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1})).await,
    ];
    for a in reads {
        assert_eq!(a.status, 200, "{}", a.text);
        assert!(!a.text.contains(CLICK), "the click id leaked: {}", a.text);
        assert!(!a.text.to_lowercase().contains("clickid"), "a click id field: {}", a.text);
    }
});

// rule: LEAD-04
backend_test!(a_replayed_event_id_changes_nothing, |app| {
    app.site("s1").await;
    let id = id_of(&app.lead("s1", "k1", T0, json!({})).await.ok());
    let won = app
        .stage("s1", "k1", json!({"stage": "won", "revenueCents": 500, "eventId": "e1", "occurredAt": T0 + 10}))
        .await;
    assert_eq!(won.ok(), json!({"leadId": id, "accepted": true}));
    let events = app.count("lead_events").await;

    // The same eventId again, with another value, another stage, a later time.
    for replay in [
        json!({"stage": "won", "revenueCents": 900, "eventId": "e1", "occurredAt": T0 + 20}),
        json!({"stage": "lost", "eventId": "e1", "occurredAt": T0 + 30}),
        json!({"stage": "won", "revenueCents": 500, "eventId": "e1", "occurredAt": T0 + 10}),
    ] {
        let a = app.stage("s1", "k1", replay).await;
        assert_eq!(a.ok(), json!({"leadId": id, "accepted": false}));
    }
    // recordLead's own eventId is taken too.
    let a = app.stage("s1", "k1", json!({"stage": "lost", "eventId": "k1-new", "occurredAt": T0 + 40})).await;
    assert_eq!(a.ok()["accepted"], false);

    assert_eq!(app.count("lead_events").await, events);
    let rows = list(&app, &format!("siteIds=s1&from={D0}&to={}", D0 + DAY - 1)).await.ok();
    assert_eq!((rows[0]["stage"].as_str(), rows[0]["revenueCents"].as_i64()), (Some("won"), Some(500)));
    let r = app.report(&["s1"], D0, D0 + DAY - 1).await;
    assert_eq!((r["totals"]["won"].as_i64(), r["totals"]["revenueCents"].as_i64()), (Some(1), Some(500)));
    let j = journey(&app, "s1", &id).await.ok();
    assert_eq!(j["history"].as_array().unwrap().len(), 2);
});

// rule: LEAD-05
backend_test!(stages_count_ever_reached_and_revenue_is_the_sale_total, |app| {
    app.site("s1").await;
    for (i, k) in ["q", "w", "ql", "wl", "r", "n", "x"].iter().enumerate() {
        app.lead("s1", k, T0 + i as i64, json!({})).await.ok();
    }
    let st = |key: &'static str, stage: &'static str, rev: Option<i64>, ev: &'static str, at: i64| {
        let mut b = json!({"stage": stage, "eventId": ev, "occurredAt": T0 + at});
        if let Some(r) = rev {
            b["revenueCents"] = json!(r);
        }
        (key, b)
    };
    let steps = [
        // q: qualified only.
        st("q", "qualified", None, "q1", 100),
        // w: won straight away (counts as qualified too).
        st("w", "won", Some(10_000), "w1", 100),
        // ql: qualified, then lost: still qualified.
        st("ql", "qualified", None, "ql1", 100),
        st("ql", "lost", None, "ql2", 200),
        // wl: won, then lost: still won, revenue kept.
        st("wl", "qualified", None, "wl1", 100),
        st("wl", "won", Some(2_500), "wl2", 200),
        st("wl", "lost", None, "wl3", 300),
        // r: a sale corrected by a later won event: the total is replaced, not added.
        st("r", "won", Some(30_000), "r1", 100),
        st("r", "won", Some(45_990), "r2", 200),
        // n: back to new after qualified: still qualified.
        st("n", "qualified", None, "n1", 100),
        st("n", "new", None, "n2", 200),
        // x: lost straight away.
        st("x", "lost", None, "x1", 100),
    ];
    for (key, body) in steps {
        let a = app.stage("s1", key, body).await.ok();
        assert_eq!(a["accepted"], true);
    }
    // Expected, counted by hand: qualified q, w, ql, wl, r, n = 6; won w, wl, r = 3;
    // revenue 10000 + 2500 + 45990.
    let r = app.report(&["s1"], D0, D0 + DAY - 1).await;
    let t = &r["totals"];
    assert_eq!(
        (t["leads"].as_i64(), t["qualified"].as_i64(), t["won"].as_i64(), t["revenueCents"].as_i64()),
        (Some(7), Some(6), Some(3), Some(58_490))
    );
    // The same by the leads themselves, and each stage as it is now.
    let rows = list(&app, &format!("siteIds=s1&from={D0}&to={}", D0 + DAY - 1)).await.ok();
    let by_key = |k: &str| rows.as_array().unwrap().iter().find(|r| r["leadKey"] == k).unwrap().clone();
    let expect = [
        ("q", "qualified", true, false, 0),
        ("w", "won", true, true, 10_000),
        ("ql", "lost", true, false, 0),
        ("wl", "lost", true, true, 2_500),
        ("r", "won", true, true, 45_990),
        ("n", "new", true, false, 0),
        ("x", "lost", false, false, 0),
    ];
    for (k, stage, q, w, rev) in expect {
        let l = by_key(k);
        assert_eq!(
            (l["stage"].as_str(), l["qualified"].as_bool(), l["won"].as_bool(), l["revenueCents"].as_i64()),
            (Some(stage), Some(q), Some(w), Some(rev)),
            "lead {k}"
        );
    }
    // The daily series agrees.
    let d = daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(d.as_array().unwrap().len(), 1);
    assert_eq!(
        (d[0]["qualified"].as_i64(), d[0]["won"].as_i64(), d[0]["revenueCents"].as_i64()),
        (Some(6), Some(3), Some(58_490))
    );
    // An unknown stage is refused.
    app.stage("s1", "q", json!({"stage": "archived", "eventId": "z", "occurredAt": T0}))
        .await
        .err(400, "INVALID_ARGUMENT");
});

// rule: LEAD-06
backend_test!(a_sale_lands_on_the_leads_first_day, |app| {
    app.site("s1").await;
    // 23:00 UTC on D0 (20:00 in São Paulo); the sale at 01:00 UTC the next day.
    let lead_at = D0 + 23 * DAY / 24;
    let sale_at = D0 + DAY + DAY / 24;
    app.lead("s1", "k1", lead_at, json!({"origin": "ctwa_ad", "adId": "ad1"})).await.ok();
    app.stage("s1", "k1", json!({"stage": "qualified", "eventId": "q", "occurredAt": sale_at - 1})).await.ok();
    app.stage("s1", "k1", json!({"stage": "won", "revenueCents": 700, "eventId": "w", "occurredAt": sale_at}))
        .await
        .ok();
    // A lead of the next day that stays new.
    app.lead("s1", "k2", D0 + DAY + 5, json!({})).await.ok();

    let d = daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + 2 * DAY - 1})).await.ok();
    assert_eq!(
        d,
        json!([
            {"dayStart": D0, "leads": 1, "qualified": 1, "won": 1, "revenueCents": 700, "spendCents": null},
            {"dayStart": D0 + DAY, "leads": 1, "qualified": 0, "won": 0, "revenueCents": 0, "spendCents": null},
        ])
    );
    // The report over the sale's day alone holds only that day's lead, not the sale.
    let next = app.report(&["s1"], D0 + DAY, D0 + 2 * DAY - 1).await;
    assert_eq!(
        (next["totals"]["leads"].as_i64(), next["totals"]["won"].as_i64(), next["totals"]["revenueCents"].as_i64()),
        (Some(1), Some(0), Some(0))
    );
    // The lead's own day has the sale; so does a partial range holding only the lead's arrival.
    for (from, to) in [(D0, D0 + DAY - 1), (lead_at, lead_at)] {
        let r = app.report(&["s1"], from, to).await;
        assert_eq!(
            (r["totals"]["leads"].as_i64(), r["totals"]["qualified"].as_i64(), r["totals"]["won"].as_i64()),
            (Some(1), Some(1), Some(1)),
            "{from}..{to}"
        );
        assert_eq!(r["totals"]["revenueCents"], 700);
        assert_eq!(r["campaigns"][0]["adsets"][0]["ads"][0]["revenueCents"], 700);
    }
    // A range from the lead's second onwards misses it, and its sale with it.
    let after = app.report(&["s1"], lead_at + 1, D0 + 2 * DAY - 1).await;
    assert_eq!((after["totals"]["leads"].as_i64(), after["totals"]["revenueCents"].as_i64()), (Some(1), Some(0)));
});

// rule: LEAD-07
backend_test!(remove_lead_takes_its_history_and_counts, |app| {
    app.site("s1").await;
    // Two leads under one rollup key (same day and ad), one more on another ad.
    let a = id_of(&app.lead("s1", "a", T0, json!({"adId": "ad1", "campaignId": "c1", "adsetId": "as1"})).await.ok());
    app.lead("s1", "b", T0 + 1, json!({"adId": "ad1", "campaignId": "c1", "adsetId": "as1"})).await.ok();
    let c =
        id_of(&app.lead("s1", "c", T0 + 2, json!({"adId": "ad2", "campaignId": "c1", "adsetId": "as1"})).await.ok());
    app.stage("s1", "a", json!({"stage": "qualified", "eventId": "a1", "occurredAt": T0 + 10})).await.ok();
    app.stage("s1", "a", json!({"stage": "won", "revenueCents": 1_000, "eventId": "a2", "occurredAt": T0 + 20}))
        .await
        .ok();
    app.stage("s1", "b", json!({"stage": "won", "revenueCents": 250, "eventId": "b1", "occurredAt": T0 + 20}))
        .await
        .ok();
    app.stage("s1", "c", json!({"stage": "won", "revenueCents": 40, "eventId": "c1", "occurredAt": T0 + 20}))
        .await
        .ok();
    assert_eq!((app.count("leads").await, app.count("lead_events").await), (3, 7));

    let removed = app.delete("/v1/sites/s1/leads/a").await;
    assert_eq!(removed.ok(), json!({"removed": true}));
    assert_eq!((app.count("leads").await, app.count("lead_events").await), (2, 4));
    journey(&app, "s1", &a).await.err(404, "NOT_FOUND");

    let whole = (D0, D0 + DAY - 1);
    let partial = (T0 - 1, T0 + 100);
    for (from, to) in [whole, partial] {
        let r = app.report(&["s1"], from, to).await;
        let t = &r["totals"];
        assert_eq!(
            (t["leads"].as_i64(), t["qualified"].as_i64(), t["won"].as_i64(), t["revenueCents"].as_i64()),
            (Some(2), Some(2), Some(2), Some(290)),
            "{from}..{to}"
        );
        let ads = &r["campaigns"][0]["adsets"][0]["ads"];
        let ad1 = ads.as_array().unwrap().iter().find(|x| x["adId"] == "ad1").unwrap();
        assert_eq!((ad1["leads"].as_i64(), ad1["revenueCents"].as_i64()), (Some(1), Some(250)));
        assert_eq!(r["bySite"][0]["paid"]["revenueCents"], 290);
    }
    let rows = list(&app, &format!("siteIds=s1&from={}&to={}", whole.0, whole.1)).await.ok();
    assert_eq!(keys(&rows), vec!["c", "b"]);

    // Removing the last lead of an ad drops the ad from the tree.
    app.delete("/v1/sites/s1/leads/c").await.ok();
    journey(&app, "s1", &c).await.err(404, "NOT_FOUND");
    let r = app.report(&["s1"], whole.0, whole.1).await;
    let ads: Vec<&str> =
        r["campaigns"][0]["adsets"][0]["ads"].as_array().unwrap().iter().map(|x| x["adId"].as_str().unwrap()).collect();
    assert_eq!(ads, vec!["ad1"]);
    let d = daily(&app, json!({"siteIds": ["s1"], "from": whole.0, "to": whole.1})).await.ok();
    assert_eq!(
        (d[0]["leads"].as_i64(), d[0]["won"].as_i64(), d[0]["revenueCents"].as_i64()),
        (Some(1), Some(1), Some(250))
    );

    // Gone: a second remove is NOT_FOUND, and the key records a new lead.
    app.delete("/v1/sites/s1/leads/a").await.err(404, "NOT_FOUND");
    let again = app.lead("s1", "a", T0 + 50, json!({})).await;
    assert_eq!(again.status, 201);
    assert_ne!(id_of(&again.body), a);
    let rows = list(&app, &format!("siteIds=s1&from={}&to={}", whole.0, whole.1)).await.ok();
    let fresh = rows.as_array().unwrap().iter().find(|r| r["leadKey"] == "a").unwrap();
    assert_eq!((fresh["stage"].as_str(), fresh["revenueCents"].as_i64()), (Some("new"), Some(0)));
});

// rule: LEAD-08
backend_test!(list_leads_filters_orders_and_pages, |app| {
    for s in ["s1", "s2", "s3"] {
        app.site(s).await;
    }
    // s1: five leads an hour apart, alternating ads; s2: one; s3: one (not asked for).
    let hour = DAY / 24;
    for i in 0..5i64 {
        let ad = if i % 2 == 0 { "adA" } else { "adB" };
        app.lead("s1", &format!("s1-{i}"), D0 + i * hour, json!({"adId": ad})).await.ok();
    }
    app.lead("s2", "s2-0", D0 + 2 * hour + 30, json!({"adId": "adA"})).await.ok();
    app.lead("s3", "s3-0", D0 + 3 * hour, json!({"adId": "adA"})).await.ok();
    // One just outside the range on each side.
    app.lead("s1", "before", D0 - 1, json!({})).await.ok();
    app.lead("s1", "after", D0 + DAY, json!({})).await.ok();

    let range = format!("from={D0}&to={}", D0 + DAY - 1);
    let all = list(&app, &format!("siteIds=s1,s2&{range}")).await.ok();
    assert_eq!(keys(&all), vec!["s1-4", "s1-3", "s2-0", "s1-2", "s1-1", "s1-0"]);
    let firsts: Vec<i64> = all.as_array().unwrap().iter().map(|r| r["firstAt"].as_i64().unwrap()).collect();
    assert!(firsts.windows(2).all(|w| w[0] > w[1]), "{firsts:?}");
    // from and to are inclusive.
    let edges = list(&app, &format!("siteIds=s1&from={}&to={}", D0 - 1, D0 + DAY)).await.ok();
    assert_eq!(edges.as_array().unwrap().len(), 7);
    // adId.
    let ad_a = list(&app, &format!("siteIds=s1,s2&{range}&adId=adA")).await.ok();
    assert_eq!(keys(&ad_a), vec!["s1-4", "s2-0", "s1-2", "s1-0"]);
    // Pages of two: `before` is the last row's firstAt.
    let mut seen = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let q = match before {
            Some(b) => format!("siteIds=s1,s2&{range}&limit=2&before={b}"),
            None => format!("siteIds=s1,s2&{range}&limit=2"),
        };
        let page = list(&app, &q).await.ok();
        let rows = page.as_array().unwrap();
        assert!(rows.len() <= 2);
        if rows.is_empty() {
            break;
        }
        seen.extend(keys(&page));
        before = rows.last().unwrap()["firstAt"].as_i64();
    }
    assert_eq!(seen, keys(&all));
    // The default limit is 50, the bounds 1 and 100.
    for i in 0..55i64 {
        app.lead("s2", &format!("bulk-{i}"), D0 + 12 * hour + i, json!({})).await.ok();
    }
    assert_eq!(list(&app, &format!("siteIds=s2&{range}")).await.ok().as_array().unwrap().len(), 50);
    assert_eq!(list(&app, &format!("siteIds=s2&{range}&limit=100")).await.ok().as_array().unwrap().len(), 56);
    assert_eq!(list(&app, &format!("siteIds=s2&{range}&limit=1")).await.ok().as_array().unwrap().len(), 1);
    for bad in ["limit=0", "limit=101", "limit=-1"] {
        list(&app, &format!("siteIds=s2&{range}&{bad}")).await.err(400, "INVALID_ARGUMENT");
    }
    // 1-10 unique sites.
    list(&app, &format!("siteIds=s1,s1&{range}")).await.err(400, "INVALID_ARGUMENT");
    list(&app, &format!("siteIds=&{range}")).await.err(400, "INVALID_ARGUMENT");
    list(&app, &range).await.err(400, "INVALID_ARGUMENT");
    let eleven: Vec<String> = (0..11).map(|i| format!("x{i}")).collect();
    list(&app, &format!("siteIds={}&{range}", eleven.join(","))).await.err(400, "INVALID_ARGUMENT");
    for i in 4..=10 {
        app.site(&format!("s{i}")).await;
    }
    let ten: Vec<String> = (1..=10).map(|i| format!("s{i}")).collect();
    assert_eq!(
        list(&app, &format!("siteIds={}&{range}&limit=100", ten.join(","))).await.ok().as_array().unwrap().len(),
        62
    );
    list(&app, &format!("siteIds=s1,nope&{range}")).await.err(404, "NOT_FOUND");
    // At most 366 UTC days.
    list(&app, &format!("siteIds=s1&from={D0}&to={}", D0 + 366 * DAY - 1)).await.ok();
    list(&app, &format!("siteIds=s1&from={D0}&to={}", D0 + 366 * DAY)).await.err(400, "INVALID_ARGUMENT");
    list(&app, &format!("siteIds=s1&from={}&to={D0}", D0 + 1)).await.err(400, "INVALID_ARGUMENT");
});

// rule: LEAD-09
backend_test!(journey_has_the_lead_its_ad_and_history_oldest_first, |app| {
    app.site("s1").await;
    app.put(
        "/v1/sites/s1/pipeline",
        json!({"columns": [{"key": "novo", "name": "Novo"}, {"key": "agendado", "name": "Agendado"}]}),
    )
    .await
    .ok();
    let id = id_of(
        &app.lead(
            "s1",
            "k1",
            T0,
            json!({"label": "Ana", "campaignId": "c1", "campaignName": "Camp", "adsetId": "as1", "adsetName": "Set",
                "adId": "ad1", "adName": "Ad velho", "column": "novo"}),
        )
        .await
        .ok(),
    );
    // A later lead names the same ad anew: the journey shows the newest name.
    app.lead("s1", "k2", T0 + 1, json!({"adId": "ad1", "adName": "Ad novo"})).await.ok();
    // Events arrive out of order: the history is oldest first all the same.
    app.stage("s1", "k1", json!({"stage": "won", "revenueCents": 990, "eventId": "e3", "occurredAt": T0 + 300}))
        .await
        .ok();
    app.stage("s1", "k1", json!({"stage": "qualified", "eventId": "e1", "occurredAt": T0 + 100})).await.ok();
    app.stage("s1", "k1", json!({"column": "agendado", "eventId": "e2", "occurredAt": T0 + 200})).await.ok();

    let j = journey(&app, "s1", &id).await.ok();
    assert_eq!(j["lead"]["leadId"], id.as_str());
    assert_eq!(j["lead"]["leadKey"], "k1");
    assert_eq!(j["lead"]["label"], "Ana");
    assert_eq!(j["lead"]["stage"], "won");
    assert_eq!(j["lead"]["column"], "agendado");
    assert_eq!(j["lead"]["revenueCents"], 990);
    assert_eq!(
        j["ad"],
        json!({"adId": "ad1", "adName": "Ad novo", "adsetId": "as1", "adsetName": "Set", "campaignId": "c1", "campaignName": "Camp"})
    );
    let h: Vec<(String, i64)> = j["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["eventId"].as_str().unwrap().to_string(), e["occurredAt"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        h,
        vec![("k1-new".into(), T0), ("e1".into(), T0 + 100), ("e2".into(), T0 + 200), ("e3".into(), T0 + 300)]
    );
    let hist = &j["history"];
    assert_eq!((hist[0]["stage"].as_str(), hist[0]["column"].as_str()), (Some("new"), Some("novo")));
    assert_eq!((hist[2]["stage"].clone(), hist[2]["column"].as_str()), (Value::Null, Some("agendado")));
    assert_eq!((hist[3]["stage"].as_str(), hist[3]["revenueCents"].as_i64()), (Some("won"), Some(990)));

    // An organic lead has no ad.
    let org = id_of(&app.lead("s1", "k3", T0, json!({"origin": "organic"})).await.ok());
    let j = journey(&app, "s1", &org).await.ok();
    assert_eq!(j["ad"], Value::Null);
    assert_eq!(j["history"].as_array().unwrap().len(), 1);
    // Unknown lead, a lead of another site, unknown site.
    app.site("s2").await;
    journey(&app, "s1", "ld_000000000000000000000000").await.err(404, "NOT_FOUND");
    journey(&app, "s2", &id).await.err(404, "NOT_FOUND");
    journey(&app, "nope", &id).await.err(404, "NOT_FOUND");
});

// rule: LEAD-10
backend_test!(invalid_arguments_fail_and_write_nothing, |app| {
    app.site("s1").await;
    app.site("s2").await;
    app.lead("s1", "k1", T0, json!({})).await.ok();
    let before = (app.count("leads").await, app.count("lead_events").await, app.count("lead_rollups").await);
    let long = |n: usize| "x".repeat(n);
    let base = |extra: Value| {
        let mut b = json!({"leadKey": "new1", "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };

    // recordLead.
    let bad_records = [
        base(json!({"leadKey": ""})),
        base(json!({"leadKey": long(129)})),
        base(json!({"eventId": ""})),
        base(json!({"eventId": long(129)})),
        base(json!({"label": long(201)})),
        base(json!({"label": "a\u{0}b"})),
        base(json!({"origin": ""})),
        base(json!({"origin": "Ctwa_Ad"})),
        base(json!({"origin": long(65)})),
        base(json!({"adId": "a b"})),
        base(json!({"adId": long(65)})),
        base(json!({"campaignId": ""})),
        base(json!({"adName": long(257)})),
        base(json!({"campaignName": long(257)})),
        base(json!({"clickId": long(513)})),
        base(json!({"occurredAt": -1})),
        base(json!({"occurredAt": "yesterday"})),
        base(json!({"stage": "won"})),
        json!({"eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"}),
        json!({"leadKey": "new1", "eventId": "e", "occurredAt": T0}),
    ];
    for body in bad_records {
        let a = app.post("/v1/sites/s1/leads", body.clone()).await;
        a.err(400, "INVALID_ARGUMENT");
        assert!(!a.body["message"].as_str().unwrap_or("").is_empty(), "{body}");
    }
    app.post("/v1/sites/nope/leads", base(json!({}))).await.err(404, "NOT_FOUND");
    app.post(&format!("/v1/sites/{}/leads", long(65)), base(json!({}))).await.err(400, "INVALID_ARGUMENT");

    // setLeadStage.
    let bad_stages = [
        json!({"stage": "archived", "eventId": "s", "occurredAt": T0}),
        json!({"stage": "won", "revenueCents": -1, "eventId": "s", "occurredAt": T0}),
        json!({"stage": "won", "revenueCents": 1.5, "eventId": "s", "occurredAt": T0}),
        json!({"stage": "won", "revenueCents": "100", "eventId": "s", "occurredAt": T0}),
        json!({"stage": "qualified", "revenueCents": 100, "eventId": "s", "occurredAt": T0}),
        json!({"eventId": "s", "occurredAt": T0}),
        json!({"stage": "won", "eventId": "", "occurredAt": T0}),
        json!({"stage": "won", "eventId": long(129), "occurredAt": T0}),
        json!({"stage": "won", "occurredAt": T0}),
        json!({"stage": "won", "eventId": "s"}),
        json!({"stage": "won", "eventId": "s", "occurredAt": -5}),
    ];
    for body in bad_stages {
        app.stage("s1", "k1", body.clone()).await.err(400, "INVALID_ARGUMENT");
    }
    let ok_stage = json!({"stage": "won", "revenueCents": 100, "eventId": "s", "occurredAt": T0});
    app.stage("s1", "unknown", ok_stage.clone()).await.err(404, "NOT_FOUND");
    app.stage("nope", "k1", ok_stage.clone()).await.err(404, "NOT_FOUND");
    app.stage("s2", "k1", ok_stage.clone()).await.err(404, "NOT_FOUND");
    // removeLead.
    app.delete("/v1/sites/s1/leads/unknown").await.err(404, "NOT_FOUND");
    app.delete("/v1/sites/nope/leads/k1").await.err(404, "NOT_FOUND");
    app.delete("/v1/sites/s2/leads/k1").await.err(404, "NOT_FOUND");

    // Reads refuse the same way.
    let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
    for body in [
        json!({"siteIds": [], "from": D0, "to": D0 + 1}),
        json!({"siteIds": eleven, "from": D0, "to": D0 + 1}),
        json!({"siteIds": ["s1", "s1"], "from": D0, "to": D0 + 1}),
        json!({"siteIds": ["s1"], "from": D0, "to": D0 + 366 * DAY}),
        json!({"siteIds": ["s1"], "from": D0 + 1, "to": D0}),
        json!({"siteIds": ["s1"], "from": -1, "to": D0}),
    ] {
        app.post("/v1/reports/leads", body.clone()).await.err(400, "INVALID_ARGUMENT");
    }
    app.post("/v1/reports/leads", json!({"siteIds": ["s1", "nope"], "from": D0, "to": D0 + 1}))
        .await
        .err(404, "NOT_FOUND");

    assert_eq!((app.count("leads").await, app.count("lead_events").await, app.count("lead_rollups").await), before);
    // The stage was never applied.
    let rows = list(&app, &format!("siteIds=s1&from={D0}&to={}", D0 + DAY - 1)).await.ok();
    assert_eq!((rows[0]["stage"].as_str(), rows[0]["revenueCents"].as_i64()), (Some("new"), Some(0)));
    // A valid call after all that goes through.
    assert_eq!(app.stage("s1", "k1", ok_stage).await.ok()["accepted"], true);
});

// rule: LEAD-01, LEAD-04
backend_test!(lead_keys_with_reserved_characters_work_in_paths, |app| {
    app.site("s1").await;
    for key in ["a b", "a/b", "ação", "x%y", "q?r#s"] {
        let created = app.lead("s1", key, T0, json!({"eventId": "new"})).await;
        assert_eq!(created.status, 201, "{key}: {}", created.text);
        let enc: String = key
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let a = app
            .stage("s1", &enc, json!({"stage": "won", "revenueCents": 10, "eventId": "w", "occurredAt": T0 + 1}))
            .await;
        assert_eq!(a.ok()["accepted"], true, "{key}");
        app.delete(&format!("/v1/sites/s1/leads/{enc}")).await.ok();
    }
    assert_eq!(app.count("leads").await, 0);
});
