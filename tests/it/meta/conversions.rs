//! Conversions to the pixel (Meta's Conversions API) against the fake Graph API
//! the daemon starts itself (`RASTRO_META_FAKE=true`): what a lead write
//! queues, what is sent, the retry schedule and the sweeper on the manual
//! clock (the pixel senders run what is due when drained: no test sleeps),
//! injected faults, the erasure of the hashes (from SQLite's files too), the
//! reads, and a crash test that SIGKILLs the real binary while it sends.

use std::collections::BTreeMap;

use rastrod::actors::pixel_sender;
use rastrod::clock::Clock;
use rastrod::config::Secret;
use rastrod::crypto::Identity;
use rastrod::meta::fake::sample::LOJA_X;
use rastrod::service::meta::conversions::{self as capi, Round};
use rastrod::store::meta as meta_store;
use rastrod::store::meta::conversions::{self as store, ConversionRow};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::backend_test;
use crate::common::*;

const OWNER: &str = "agency:1";
const SITE: &str = "loja-x";
const PIXEL: &str = "111222333444";
const MINUTE: i64 = 60_000;

/// Graph calls time out after 300 ms (the fake's `slow` fault outlasts that).
fn short_timeout_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).env("RASTRO_META_REQUEST_TIMEOUT", "300ms")
}

/// At most 10 events a request.
fn small_batch_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).env("RASTRO_CAPI_BATCH_MAX", "10")
}

/// One pixel sends at a time.
fn one_sender_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).env("RASTRO_CAPI_MAX_CONCURRENT", "1")
}

fn sha(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn phone(i: usize) -> String {
    sha(&format!("55119999{i:05}"))
}

fn contact(i: usize) -> String {
    sha(&format!("contact-{i}"))
}

fn meta(i: usize) -> Value {
    json!({"ph": [phone(i)], "externalId": contact(i)})
}

fn fake_url(app: &TestApp) -> String {
    app.state.fake.as_ref().expect("RASTRO_META_FAKE starts the fake").base_url.clone()
}

async fn control(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> Value {
    let http = reqwest::Client::new();
    let url = format!("{}/__fake{path}", fake_url(app));
    let req = if method == "GET" { http.get(url) } else { http.post(url).json(&body.unwrap_or(json!({}))) };
    let res = req.send().await.unwrap();
    assert!(res.status().is_success(), "fake control {path}: {}", res.status());
    res.json().await.unwrap()
}

async fn fault(app: &TestApp, f: Value) {
    control(app, "POST", "/faults", Some(f)).await;
}

/// The events the fake accepted: `[{pixelId, testEventCode, event}]`.
async fn fake_events(app: &TestApp) -> Vec<Value> {
    control(app, "GET", "/events", None).await.as_array().unwrap().clone()
}

/// How many `POST /{pixel}/events` requests the fake saw.
async fn event_requests(app: &TestApp) -> usize {
    let log = control(app, "GET", "/requests", None).await;
    log.as_array().unwrap().iter().filter(|r| r["path"].as_str().unwrap().ends_with("/events")).count()
}

fn deliveries(app: &TestApp) -> BTreeMap<String, u64> {
    app.state.fake.as_ref().unwrap().deliveries()
}

/// Runs everything due now (by the manual clock) and waits for it.
async fn drain(app: &TestApp) -> Round {
    pixel_sender::drain(&app.state.actors).await.expect("drain")
}

/// A site, the sample agency connected with a pasted token, and Loja X's pixel from its listing.
async fn setup(app: &TestApp, pixel_extra: Value) {
    app.site(SITE).await;
    connect_pixel(app, pixel_extra).await;
}

/// The sample agency connected with a pasted token, and Loja X's pixel from its listing.
async fn connect_pixel(app: &TestApp, pixel_extra: Value) {
    app.put(&format!("/v1/meta/owners/{OWNER}/connection"), json!({"accessToken": "tok-agency-1"})).await.ok();
    let mut body = json!({"ownerKey": OWNER, "pixelId": PIXEL});
    for (k, v) in pixel_extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    app.put(&format!("/v1/sites/{SITE}/pixel"), body).await.ok();
}

async fn lead(app: &TestApp, key: &str, extra: Value) -> String {
    let a = app.lead(SITE, key, T0, extra).await;
    assert!(a.status == 200 || a.status == 201, "{}", a.text);
    a.body["leadId"].as_str().unwrap().to_string()
}

/// A sale of `cents` with the contact's hashes.
async fn sale(app: &TestApp, key: &str, cents: i64, event: &str, meta_v: Value) -> Answer {
    app.stage(
        SITE,
        key,
        json!({"stage": "won", "revenueCents": cents, "eventId": event, "occurredAt": T0, "meta": meta_v}),
    )
    .await
}

async fn row(app: &TestApp, event_id: &str) -> Option<ConversionRow> {
    let id = event_id.to_string();
    app.state.cx.read(move |c| Ok(store::find(c, &id)?)).await.unwrap()
}

async fn list(app: &TestApp, query: &str) -> Answer {
    app.get(&format!("/v1/sites/{SITE}/meta/conversions{query}")).await
}

async fn counters(app: &TestApp, now: Option<i64>) -> capi::ConversionCounters {
    app.state.cx.read(move |c| capi::counters(c, &[SITE.to_string()], now)).await.unwrap().remove(SITE).unwrap()
}

// rule: CAPI-02, CAPI-06, CAPI-12, FAKE-04, BOARD-10, STATUS-06
backend_test!(a_sale_and_a_new_lead_are_sent_at_once_with_the_contracts_fields, fake_meta_builder, |app| {
    setup(&app, json!({"sendLeadEvent": true, "testEventCode": "TEST4242"})).await;
    let lead_id =
        lead(&app, "conv-1", json!({"meta": meta(1), "adId": "301", "adName": "Vídeo oferta", "label": "Ana"})).await;
    sale(&app, "conv-1", 45_990, "act-3", meta(1)).await.ok();
    drain(&app).await;

    let purchase = capi::event_id(&lead_id, "Purchase");
    let lead_event = capi::event_id(&lead_id, "Lead");
    assert_eq!(purchase, sha(&format!("{lead_id}:Purchase")), "eventId = sha256(leadId:eventName), lowercase hex");
    assert_eq!(deliveries(&app), BTreeMap::from([(purchase.clone(), 1), (lead_event.clone(), 1)]));

    let events = fake_events(&app).await;
    let by_id = |id: &str| events.iter().find(|e| e["event"]["event_id"] == id).unwrap().clone();
    let p = by_id(&purchase);
    assert_eq!(p["pixelId"], PIXEL);
    assert_eq!(p["testEventCode"], "TEST4242", "test_event_code on every event when set");
    let ev = &p["event"];
    assert_eq!(ev["event_name"], "Purchase");
    assert_eq!(ev["action_source"], "chat");
    assert_eq!(ev["event_time"], T0 / 1000, "event_time in seconds");
    assert_eq!(ev["user_data"]["ph"], json!([phone(1)]));
    assert_eq!(ev["user_data"]["external_id"], json!([contact(1)]));
    assert_eq!(ev["user_data"]["country"], json!([sha("br")]));
    assert_eq!(ev["custom_data"], json!({"value": 459.9, "currency": "BRL"}));
    let l = by_id(&lead_event);
    assert_eq!(l["event"]["event_name"], "Lead");
    assert!(l["event"].get("custom_data").is_none(), "value and currency on Purchase only");
    // The token travels in the header only.
    let log = control(&app, "GET", "/requests", None).await;
    for r in log.as_array().unwrap().iter().filter(|r| r["path"].as_str().unwrap().ends_with("/events")) {
        assert_eq!(r["authorization"], true);
        assert!(!r["query"].as_str().unwrap().contains("tok-agency"), "no token in a URL");
    }

    // Purchase never comes from a column: the event map refuses it.
    app.put(&format!("/v1/sites/{SITE}/pipeline"), json!({"columns": [{"key": "fechado", "name": "Fechado"}]}))
        .await
        .ok();
    app.put(&format!("/v1/sites/{SITE}/event-map"), json!({"columns": {"fechado": "Purchase"}}))
        .await
        .err(400, "INVALID_ARGUMENT");

    let rows = list(&app, "").await.ok();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let p = rows.iter().find(|r| r["eventId"] == purchase).unwrap();
    assert_eq!(p["eventName"], "Purchase");
    assert_eq!(p["leadId"], lead_id);
    assert_eq!(p["leadLabel"], "Ana");
    assert_eq!(p["adId"], "301");
    assert_eq!(p["adName"], "Vídeo oferta");
    assert_eq!(p["valueCents"], 45_990);
    assert_eq!(p["status"], "sent");
    assert_eq!(p["sentAt"], T0);
    let l = rows.iter().find(|r| r["eventId"] == lead_event).unwrap();
    assert_eq!(l["valueCents"], Value::Null, "valueCents on Purchase only");
    let text = serde_json::to_string(rows).unwrap();
    assert!(!text.contains(&phone(1)) && !text.contains(&contact(1)), "no read returns a hash");
});

// rule: CAPI-02, CAPI-04, BOARD-10
backend_test!(column_events_go_once_per_lead_and_qualified_alone_sends_nothing, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    app.put(
        &format!("/v1/sites/{SITE}/pipeline"),
        json!({"columns": [{"key": "novo", "name": "Novo"}, {"key": "quente", "name": "Quente"},
            {"key": "agendado", "name": "Agendado"}, {"key": "fechado", "name": "Fechado"}]}),
    )
    .await
    .ok();
    app.put(
        &format!("/v1/sites/{SITE}/event-map"),
        json!({"columns": {"novo": "Lead", "quente": "QualifiedLead", "agendado": "Schedule", "fechado": null}}),
    )
    .await
    .ok();
    let id = lead(&app, "c1", json!({"meta": meta(1), "column": "novo"})).await;
    let at = |m: i64| T0 + m * MINUTE;
    // qualified alone: nothing
    app.stage(SITE, "c1", json!({"stage": "qualified", "eventId": "e1", "occurredAt": at(1), "meta": meta(1)}))
        .await
        .ok();
    // a column without meta: nothing
    app.stage(SITE, "c1", json!({"column": "quente", "eventId": "e2", "occurredAt": at(2)})).await.ok();
    app.stage(SITE, "c1", json!({"column": "agendado", "eventId": "e3", "occurredAt": at(3), "meta": meta(1)}))
        .await
        .ok();
    // back into a mapped column: once per lead per event
    app.stage(SITE, "c1", json!({"column": "novo", "eventId": "e4", "occurredAt": at(4), "meta": meta(1)})).await.ok();
    app.stage(SITE, "c1", json!({"column": "agendado", "eventId": "e5", "occurredAt": at(5), "meta": meta(1)}))
        .await
        .ok();
    // a sale moved into an unmapped column: Purchase from the sale, nothing from the column
    app.stage(
        SITE,
        "c1",
        json!({"stage": "won", "revenueCents": 1000, "column": "fechado", "eventId": "e6", "occurredAt": at(6),
            "meta": meta(1)}),
    )
    .await
    .ok();
    // a second sale: the total changes, Purchase is not sent again
    sale(&app, "c1", 2000, "e7", meta(1)).await.ok();
    drain(&app).await;
    let want: BTreeMap<String, u64> =
        ["Lead", "Schedule", "Purchase"].iter().map(|e| (capi::event_id(&id, e), 1)).collect();
    assert_eq!(deliveries(&app), want);
    assert!(row(&app, &capi::event_id(&id, "QualifiedLead")).await.is_none());
});

// rule: CAPI-01, CAPI-03, CONN-08
backend_test!(nothing_is_queued_without_meta_a_pixel_or_an_able_pixel, fake_meta_builder, |app| {
    app.site(SITE).await;
    // No pixel yet: a sale with meta queues nothing.
    lead(&app, "c0", json!({})).await;
    sale(&app, "c0", 100, "s0", meta(0)).await.ok();
    connect_pixel(&app, json!({})).await;
    // Without meta, or with a meta that is not the seed's shape (a plain phone): the call succeeds, nothing queued.
    lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 100, "s1", Value::Null).await.ok();
    lead(&app, "c2", json!({})).await;
    sale(&app, "c2", 100, "s2", json!({"ph": ["5511999991234"]})).await.ok();
    // The pixel off.
    app.put(&format!("/v1/sites/{SITE}/pixel"), json!({"ownerKey": OWNER, "pixelId": PIXEL, "enabled": false}))
        .await
        .ok();
    lead(&app, "c3", json!({})).await;
    sale(&app, "c3", 100, "s3", meta(3)).await.ok();
    // A token that no longer lists the pixel's account: PIXEL_NOT_GRANTED sends nothing.
    app.put(&format!("/v1/sites/{SITE}/pixel"), json!({"ownerKey": OWNER, "pixelId": PIXEL})).await.ok();
    app.put(
        &format!("/v1/meta/owners/{OWNER}/connection"),
        json!({"accessToken": "tok-2.rastro-fake-accounts:act_2038475610"}),
    )
    .await
    .ok();
    let p = app.state.cx.read(|c| Ok(meta_store::pixel(c, SITE)?)).await.unwrap().unwrap();
    assert_eq!(p.stopped_reason.as_deref(), Some("PIXEL_NOT_GRANTED"));
    lead(&app, "c4", json!({})).await;
    sale(&app, "c4", 100, "s4", meta(4)).await.ok();
    drain(&app).await;
    assert_eq!(app.count("conversions").await, 0);
    assert!(deliveries(&app).is_empty());
    // Listed again: it resumes.
    app.put(
        &format!("/v1/meta/owners/{OWNER}/connection"),
        json!({"accessToken": format!("tok-3.rastro-fake-accounts:{LOJA_X}")}),
    )
    .await
    .ok();
    lead(&app, "c5", json!({})).await;
    sale(&app, "c5", 100, "s5", meta(5)).await.ok();
    drain(&app).await;
    assert_eq!(deliveries(&app).len(), 1);
});

// rule: CAPI-07
backend_test!(a_failed_send_retries_after_one_then_ten_minutes_and_fails_on_the_third, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 3})).await;
    let id = lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let pid = capi::event_id(&id, "Purchase");
    let r = row(&app, &pid).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts, r.due_at), ("pending", 1, Some(T0 + MINUTE)));
    assert!(r.last_error.as_deref().unwrap().starts_with("META_UNAVAILABLE"), "{:?}", r.last_error);
    // Not before its time.
    app.clock.advance(MINUTE - 1);
    assert_eq!(drain(&app).await.requests, 0);
    app.clock.advance(1);
    assert_eq!(drain(&app).await.requests, 1);
    let r = row(&app, &pid).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts, r.due_at), ("pending", 2, Some(T0 + 11 * MINUTE)));
    app.clock.advance(10 * MINUTE);
    drain(&app).await;
    let r = row(&app, &pid).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts), ("failed", 3));
    assert!(r.last_error.as_deref().unwrap().starts_with("META_UNAVAILABLE"));
    assert!(r.ph.is_none() && r.external_id.is_none(), "failed for good: hashes erased");
    assert!(deliveries(&app).is_empty());
    assert_eq!(counters(&app, Some(T0)).await.failed, 1);

    // Two failures then a success: sent on the third attempt.
    fault(&app, json!({"match": "/events", "kind": "throttle", "times": 2})).await;
    let id2 = lead(&app, "c2", json!({})).await;
    sale(&app, "c2", 500, "s2", meta(2)).await.ok();
    drain(&app).await;
    let pid2 = capi::event_id(&id2, "Purchase");
    assert!(row(&app, &pid2).await.unwrap().last_error.unwrap().starts_with("RATE_LIMITED"));
    app.clock.advance(MINUTE);
    drain(&app).await;
    app.clock.advance(10 * MINUTE);
    drain(&app).await;
    let r = row(&app, &pid2).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts, r.last_error.as_deref()), ("sent", 3, None));
    assert_eq!(deliveries(&app).get(&pid2), Some(&1));
});

// rule: CAPI-07
backend_test!(a_permission_error_fails_at_once, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    fault(&app, json!({"match": "/events", "kind": "permission", "times": 1})).await;
    let id = lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let r = row(&app, &capi::event_id(&id, "Purchase")).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts), ("failed", 1));
    assert!(r.last_error.unwrap().starts_with("PERMISSION_DENIED"));
    assert!(r.ph.is_none());
});

/// The site's pixel as meta.status shows it.
async fn pixel_status(app: &TestApp) -> Value {
    app.post("/v1/meta/status", json!({"siteIds": [SITE]})).await.ok()[0]["pixel"].clone()
}

// rule: CAPI-07 (the pixel shows PERMISSION_DENIED until a send succeeds; it stays on)
backend_test!(a_pixel_without_permission_says_so_until_a_send_succeeds, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    assert_eq!(pixel_status(&app).await["lastError"], Value::Null);
    fault(&app, json!({"match": "/events", "kind": "permission", "times": 1})).await;
    lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let shown = pixel_status(&app).await;
    assert!(shown["lastError"].as_str().is_some_and(|e| e.starts_with("PERMISSION_DENIED")), "{shown}");
    assert_eq!(shown["enabled"], true, "{shown}");
    // The next send goes through: the error is over.
    lead(&app, "c2", json!({})).await;
    sale(&app, "c2", 700, "s2", meta(2)).await.ok();
    drain(&app).await;
    assert_eq!(pixel_status(&app).await["lastError"], Value::Null);
});

// rule: CAPI-07
backend_test!(unexpected_failures_count_as_attempts_and_the_last_fails_unexpected, short_timeout_builder, |app| {
    setup(&app, json!({})).await;
    // Every send times out (the fake answers after 1 s; the client gives up at 300 ms).
    fault(&app, json!({"match": "/events", "kind": "slow", "delayMs": 1000, "times": 3})).await;
    let id = lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let pid = capi::event_id(&id, "Purchase");
    let r = row(&app, &pid).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts), ("pending", 1));
    assert!(r.last_error.unwrap().starts_with("UNEXPECTED"));
    app.clock.advance(MINUTE);
    drain(&app).await;
    app.clock.advance(10 * MINUTE);
    drain(&app).await;
    let r = row(&app, &pid).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts), ("failed", 3));
    assert!(r.last_error.unwrap().starts_with("UNEXPECTED"));
});

// rule: CAPI-08
backend_test!(the_sweeper_resends_a_send_lost_on_the_way_after_its_lease, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    let id = lead(&app, "c1", json!({})).await;
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 1})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let pid = capi::event_id(&id, "Purchase");
    // Its retry is due at +1 min; an attempt taken then is lost (lease, no result).
    app.clock.advance(MINUTE);
    let (p, now) = (pid.clone(), app.clock.now_ms());
    let lease = 15 * MINUTE;
    let taken =
        app.state.cx.write_plain(move |c| Ok(store::take_lease(c, &[p], "lost-run", now + lease, now)?)).await.unwrap();
    assert_eq!(taken.len(), 1);
    // Within the lease nothing resends it: the attempt may still be in flight.
    app.clock.advance(lease - 1);
    assert_eq!(drain(&app).await.requests, 0);
    assert!(deliveries(&app).is_empty());
    // Past it, the sweeper sends it again, counting the lost attempt.
    app.clock.advance(1);
    let r = drain(&app).await;
    assert_eq!((r.requests, r.sent), (1, 1));
    let row_now = row(&app, &pid).await.unwrap();
    assert_eq!((row_now.status.as_str(), row_now.attempts), ("sent", 3));
    assert_eq!(deliveries(&app).get(&pid), Some(&1));
    // Nothing pending: the chain stops (no site left to sweep).
    let sites = capi::sites_with_pending(&app.state.cx).await.unwrap();
    assert!(sites.is_empty());
    assert_eq!(drain(&app).await, Round::default());

    // A lost *last* attempt fails for good.
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 2})).await;
    let id2 = lead(&app, "c2", json!({})).await;
    sale(&app, "c2", 500, "s2", meta(2)).await.ok();
    drain(&app).await;
    app.clock.advance(MINUTE);
    drain(&app).await;
    app.clock.advance(10 * MINUTE);
    let (p, now) = (capi::event_id(&id2, "Purchase"), app.clock.now_ms());
    let p2 = p.clone();
    app.state.cx.write_plain(move |c| Ok(store::take_lease(c, &[p2], "lost-run-2", now + lease, now)?)).await.unwrap();
    app.clock.advance(lease);
    drain(&app).await;
    let r = row(&app, &p).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts), ("failed", 3));
    assert!(r.last_error.unwrap().starts_with("UNEXPECTED"));
});

// rule: CAPI-09, LINK-07
backend_test!(
    a_refused_connection_token_fails_the_event_and_stops_the_connection_and_its_pixels,
    fake_meta_builder,
    |app| {
        setup(&app, json!({})).await;
        // Pet Mania's pixel with its own token keeps sending.
        app.site("pet").await;
        app.put("/v1/sites/pet/pixel", json!({"pixelId": "222333444555", "accessToken": "pet-own-token"})).await.ok();
        fault(&app, json!({"match": format!("/{PIXEL}/events"), "kind": "token_refused", "times": 1})).await;
        let id = lead(&app, "c1", json!({})).await;
        sale(&app, "c1", 500, "s1", meta(1)).await.ok();
        drain(&app).await;
        let r = row(&app, &capi::event_id(&id, "Purchase")).await.unwrap();
        assert_eq!(r.status, "failed");
        assert!(r.last_error.unwrap().starts_with("META_TOKEN_INVALID"));
        let conn = app.get(&format!("/v1/meta/owners/{OWNER}/connection")).await.ok();
        assert_eq!(conn["status"], "invalid");
        let p = app.state.cx.read(|c| Ok(meta_store::pixel(c, SITE)?)).await.unwrap().unwrap();
        assert_eq!(p.stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
        // Nothing more is queued for the site until the connection is connected again.
        lead(&app, "c2", json!({})).await;
        sale(&app, "c2", 500, "s2", meta(2)).await.ok();
        assert_eq!(app.count("conversions").await, 1);
        // The token-sourced pixel keeps sending.
        let a = app.lead("pet", "p1", T0, json!({})).await.ok();
        app.stage(
            "pet",
            "p1",
            json!({"stage": "won", "revenueCents": 100, "eventId": "x", "occurredAt": T0, "meta": meta(9)}),
        )
        .await
        .ok();
        drain(&app).await;
        let pet_id = capi::event_id(a["leadId"].as_str().unwrap(), "Purchase");
        assert_eq!(deliveries(&app).get(&pet_id), Some(&1));
        // Connected again: the pixel resumes.
        app.put(&format!("/v1/meta/owners/{OWNER}/connection"), json!({"accessToken": "tok-agency-2"})).await.ok();
        let id3 = lead(&app, "c3", json!({})).await;
        sale(&app, "c3", 500, "s3", meta(3)).await.ok();
        drain(&app).await;
        assert_eq!(deliveries(&app).get(&capi::event_id(&id3, "Purchase")), Some(&1));
    }
);

// rule: CAPI-09
backend_test!(a_refused_own_token_fails_the_event_and_stops_the_pixel_until_a_new_token, fake_meta_builder, |app| {
    app.site(SITE).await;
    app.put(&format!("/v1/sites/{SITE}/pixel"), json!({"pixelId": PIXEL, "accessToken": "own-token-1"})).await.ok();
    fault(&app, json!({"match": "/events", "kind": "token_refused", "times": 1})).await;
    let id = lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let r = row(&app, &capi::event_id(&id, "Purchase")).await.unwrap();
    assert!(r.last_error.unwrap().starts_with("META_TOKEN_INVALID"));
    let p = app.state.cx.read(|c| Ok(meta_store::pixel(c, SITE)?)).await.unwrap().unwrap();
    assert_eq!(p.stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
    lead(&app, "c2", json!({})).await;
    sale(&app, "c2", 500, "s2", meta(2)).await.ok();
    assert_eq!(app.count("conversions").await, 1, "nothing queued while the pixel is stopped");
    // setSitePixel stores a token again: it sends.
    app.put(&format!("/v1/sites/{SITE}/pixel"), json!({"pixelId": PIXEL, "accessToken": "own-token-2"})).await.ok();
    let id3 = lead(&app, "c3", json!({})).await;
    sale(&app, "c3", 500, "s3", meta(3)).await.ok();
    drain(&app).await;
    assert_eq!(deliveries(&app).get(&capi::event_id(&id3, "Purchase")), Some(&1));

    // rule: FAKE-04
    // The fake refuses a token containing `invalid` like an expired one (stored
    // here straight in the row: setSitePixel would have refused it).
    let key = app.state.cx.secrets.clone().unwrap();
    app.state
        .cx
        .write_plain(move |c| {
            let mut p = meta_store::pixel(c, SITE)?.unwrap();
            p.sealed_token = Some(key.seal(&Secret::new("own-token-invalid"), Identity::Pixel(SITE))?);
            p.token_version += 1;
            meta_store::put_pixel(c, &p)?;
            Ok(())
        })
        .await
        .unwrap();
    let id4 = lead(&app, "c4", json!({})).await;
    sale(&app, "c4", 500, "s4", meta(4)).await.ok();
    drain(&app).await;
    let r = row(&app, &capi::event_id(&id4, "Purchase")).await.unwrap();
    assert!(r.last_error.unwrap().starts_with("META_TOKEN_INVALID"));
    let p = app.state.cx.read(|c| Ok(meta_store::pixel(c, SITE)?)).await.unwrap().unwrap();
    assert_eq!(p.stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
});

// rule: CAPI-05
backend_test!(a_failed_event_opens_again_with_new_hashes_when_meta_comes_again, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    fault(&app, json!({"match": "/events", "kind": "permission", "times": 1})).await;
    let id = lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(1)).await.ok();
    drain(&app).await;
    let pid = capi::event_id(&id, "Purchase");
    assert_eq!(row(&app, &pid).await.unwrap().status, "failed");
    // The next sale with meta reaches it: open again, attempts back to zero, the new hashes.
    let a = sale(&app, "c1", 700, "s2", meta(2)).await.ok();
    assert_eq!(a["accepted"], true);
    let r = row(&app, &pid).await.unwrap();
    assert_eq!((r.status.as_str(), r.value_cents), ("pending", Some(700)));
    // The sale's effects woke the pixel's sender: it may already hold the
    // reopened row (a lease, its first attempt). A failed row is never claimed,
    // so either way the attempts went back to zero.
    assert!(r.attempts == 0 || (r.attempts == 1 && r.lease_owner.is_some()), "{:?}", (r.attempts, &r.lease_owner));
    assert_eq!(r.ph.as_deref(), Some(phone(2).as_str()));
    drain(&app).await;
    let events = fake_events(&app).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["event"]["user_data"]["ph"], json!([phone(2)]));
    assert_eq!(events[0]["event"]["custom_data"]["value"], json!(7.0));
    assert_eq!(row(&app, &pid).await.unwrap().attempts, 1);
});

// rule: CAPI-10
backend_test!(too_old_events_and_unavailable_pixels_fail_with_their_codes, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    // Older than 7 days when its turn comes: not sent.
    let id = lead(&app, "c1", json!({})).await;
    app.stage(
        SITE,
        "c1",
        json!({"stage": "won", "revenueCents": 5, "eventId": "s1", "occurredAt": T0 - 8 * DAY, "meta": meta(1)}),
    )
    .await
    .ok();
    drain(&app).await;
    let r = row(&app, &capi::event_id(&id, "Purchase")).await.unwrap();
    assert_eq!((r.status.as_str(), r.attempts), ("failed", 0));
    assert!(r.last_error.unwrap().starts_with("EVENT_TOO_OLD"));
    // Waiting for a retry while 7 days pass.
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 1})).await;
    let id2 = lead(&app, "c2", json!({})).await;
    sale(&app, "c2", 5, "s2", meta(2)).await.ok();
    drain(&app).await;
    app.clock.advance(8 * DAY);
    drain(&app).await;
    let r = row(&app, &capi::event_id(&id2, "Purchase")).await.unwrap();
    assert!(r.last_error.unwrap().starts_with("EVENT_TOO_OLD"));
    // The pixel turned off, then removed, before the send.
    app.clock.set(T0);
    for (i, off) in [(3, json!({"ownerKey": OWNER, "pixelId": PIXEL, "enabled": false})), (4, Value::Null)] {
        app.put(&format!("/v1/sites/{SITE}/pixel"), json!({"ownerKey": OWNER, "pixelId": PIXEL})).await.ok();
        fault(&app, json!({"match": "/events", "kind": "server_error", "times": 1})).await;
        let key = format!("c{i}");
        let id = lead(&app, &key, json!({})).await;
        sale(&app, &key, 5, &format!("s{i}"), meta(i)).await.ok();
        drain(&app).await;
        if off.is_null() {
            app.delete(&format!("/v1/sites/{SITE}/pixel")).await.ok();
        } else {
            app.put(&format!("/v1/sites/{SITE}/pixel"), off).await.ok();
        }
        app.clock.advance(MINUTE);
        drain(&app).await;
        let r = row(&app, &capi::event_id(&id, "Purchase")).await.unwrap();
        assert_eq!(r.status, "failed");
        assert!(r.last_error.unwrap().starts_with("PIXEL_UNAVAILABLE"));
    }
    assert!(deliveries(&app).is_empty());
});

// rule: CAPI-13
backend_test!(batches_hold_at_most_the_limit_and_a_rejected_batch_isolates_its_bad_event, small_batch_builder, |app| {
    setup(&app, json!({})).await;
    // Meta is down while 25 sales come in: they pile up.
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 1000})).await;
    let mut ids = Vec::new();
    for i in 0..25 {
        let key = format!("c{i}");
        let id = lead(&app, &key, json!({})).await;
        sale(&app, &key, 100 + i as i64, &format!("s{i}"), meta(i)).await.ok();
        ids.push(capi::event_id(&id, "Purchase"));
    }
    drain(&app).await;
    control(&app, "POST", "/reset", None).await;
    // Back up, with one event Meta rejects (the whole batch holding it is refused).
    let bad = ids[13].clone();
    fault(&app, json!({"match": "/events", "kind": "reject_batch", "badEventId": bad})).await;
    app.clock.advance(MINUTE);
    let r = drain(&app).await;
    assert_eq!((r.sent, r.failed), (24, 1));
    let events = fake_events(&app).await;
    assert_eq!(events.len(), 24);
    let d = deliveries(&app);
    assert!(ids.iter().all(|id| *id == bad || d.get(id) == Some(&1)));
    let b = row(&app, &bad).await.unwrap();
    assert_eq!(b.status, "failed");
    assert!(b.last_error.unwrap().starts_with("META_INVALID"));
    // 25 events in batches of ≤ 10 (10 + 10 + 5); the batch with the bad event
    // (10) splits 5/5, then 2/3 (or 3/2), then down to the bad one alone.
    let requests = event_requests(&app).await;
    assert!((3..=3 + 2 * 4).contains(&requests), "{requests} requests");
});

// rule: CAPI-11, SEC-04
backend_test!(hashes_are_erased_when_an_event_ends_and_gone_from_sqlites_files, fake_meta_builder, |app| {
    setup(&app, json!({})).await;
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 1})).await;
    let id = lead(&app, "c1", json!({})).await;
    sale(&app, "c1", 500, "s1", meta(7)).await.ok();
    drain(&app).await;
    let pid = capi::event_id(&id, "Purchase");
    let pending = row(&app, &pid).await.unwrap();
    assert_eq!(pending.ph.as_deref(), Some(phone(7).as_str()), "pending: the hashes wait in the queue");
    let files = |app: &TestApp| -> Vec<u8> {
        let path = app.db.sqlite_path().unwrap();
        let mut all = std::fs::read(&path).unwrap();
        for ext in ["-wal", "-journal"] {
            if let Ok(b) = std::fs::read(format!("{}{ext}", path.display())) {
                all.extend(b);
            }
        }
        all
    };
    let contains = |hay: &[u8], needle: &str| hay.windows(needle.len()).any(|w| w == needle.as_bytes());
    if app.backend() == Backend::Sqlite {
        assert!(contains(&files(&app), &phone(7)), "the pending hash is on disk (the check can see it)");
    }
    app.clock.advance(MINUTE);
    drain(&app).await;
    let sent = row(&app, &pid).await.unwrap();
    assert_eq!(sent.status, "sent");
    assert!(sent.ph.is_none() && sent.external_id.is_none(), "sent: hashes erased, the row stays");
    if app.backend() == Backend::Sqlite {
        let bytes = files(&app);
        assert!(!contains(&bytes, &phone(7)), "the phone hash is gone from the database files");
        assert!(!contains(&bytes, &contact(7)), "the contact hash is gone from the database files");
    }
});

// rule: STATUS-03, STATUS-05, STATUS-06, LEAD-07
backend_test!(reads_page_newest_first_and_counters_follow_the_queue_and_removals, fake_meta_builder, |app| {
    setup(&app, json!({"sendLeadEvent": true})).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        app.clock.set(T0 + i as i64 * 1000);
        let key = format!("c{i}");
        let id = lead(&app, &key, json!({"meta": meta(i)})).await;
        // Lead (new lead) and Purchase queued in the same millisecond for c4
        if i == 4 {
            sale(&app, &key, 990, "s4", meta(i)).await.ok();
        }
        ids.push(id);
    }
    drain(&app).await;
    // limit
    list(&app, "?limit=0").await.err(400, "INVALID_ARGUMENT");
    list(&app, "?limit=51").await.err(400, "INVALID_ARGUMENT");
    list(&app, "?beforeEventId=00").await.err(400, "INVALID_ARGUMENT");
    list(&app, "?limit=5&bogus=1").await.err(400, "INVALID_ARGUMENT");
    app.get("/v1/sites/nope/meta/conversions").await.err(404, "NOT_FOUND");
    let all = list(&app, "").await.ok();
    let all = all.as_array().unwrap().clone();
    assert_eq!(all.len(), 6);
    for w in all.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let key = |r: &Value| (r["createdAt"].as_i64().unwrap(), r["eventId"].as_str().unwrap().to_string());
        assert!(key(a) > key(b), "newest first, then by eventId");
    }
    // Page through two at a time with before + beforeEventId.
    let mut paged = Vec::new();
    let mut q = "?limit=2".to_string();
    loop {
        let page = list(&app, &q).await.ok();
        let page = page.as_array().unwrap().clone();
        if page.is_empty() {
            break;
        }
        let last = page.last().unwrap();
        q = format!("?limit=2&before={}&beforeEventId={}", last["createdAt"], last["eventId"].as_str().unwrap());
        paged.extend(page);
    }
    assert_eq!(paged, all);
    // before alone pages strictly before that millisecond.
    let strictly = list(&app, &format!("?before={}", T0 + 4000)).await.ok();
    assert_eq!(strictly.as_array().unwrap().len(), 4);

    let c = counters(&app, Some(T0 + 5000)).await;
    assert_eq!((c.pending, c.sent, c.failed, c.sent_today), (0, 6, 0, Some(6)));
    let l = c.last30d.unwrap();
    assert_eq!((l.lead, l.purchase, l.qualified_lead, l.schedule), (5, 1, 0, 0));
    let none = counters(&app, None).await;
    assert_eq!((none.sent, none.last30d, none.sent_today), (6, None, None), "null without now");
    // Tomorrow: not today any more, still in the 30 days; 30 days later: gone.
    assert_eq!(counters(&app, Some(T0 + DAY)).await.sent_today, Some(0));
    assert_eq!(counters(&app, Some(T0 + DAY)).await.last30d.unwrap().lead, 5);
    assert_eq!(counters(&app, Some(T0 + 30 * DAY)).await.last30d.unwrap().lead, 0);
    let json = serde_json::to_value(c).unwrap();
    assert_eq!(json["last30d"], json!({"Purchase": 1, "QualifiedLead": 0, "Lead": 5, "Schedule": 0}));
    assert_eq!(json["sentToday"], 6);

    // removeLead takes its conversions along, from the queue and the day counters.
    app.delete(&format!("/v1/sites/{SITE}/leads/c4")).await.ok();
    let c = counters(&app, Some(T0 + 5000)).await;
    assert_eq!((c.sent, c.sent_today), (4, Some(4)));
    assert_eq!(c.last30d.unwrap().purchase, 0);
    assert_eq!(list(&app, "").await.ok().as_array().unwrap().len(), 4);
    // A pending one counts as pending, then leaves with its lead.
    fault(&app, json!({"match": "/events", "kind": "server_error", "times": 1})).await;
    sale(&app, "c0", 100, "s0", meta(0)).await.ok();
    drain(&app).await;
    assert_eq!(counters(&app, None).await.pending, 1);
    app.delete(&format!("/v1/sites/{SITE}/leads/c0")).await.ok();
    let c = counters(&app, Some(T0 + 5000)).await;
    assert_eq!((c.pending, c.sent, c.sent_today), (0, 3, Some(3)));
});

use crate::common::{Moments, Proc, free_port, wait_for};

fn sqlite_count(path: &std::path::Path, sql: &str) -> i64 {
    use diesel::{Connection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut c = diesel::SqliteConnection::establish(&path.to_string_lossy()).unwrap();
    diesel::sql_query(sql).load::<N>(&mut c).unwrap()[0].n
}

// rule: CAPI-08, CAPI-11, CAPI-04, FAKE-06
// The crash test: the real binary is SIGKILLed at random moments (six times)
// while thousands of conversions are queued and sent to the fake Graph running
// on its own (so its delivery counts survive), and restarted each time. With
// the leases and retry steps shortened, every conversion ends sent or failed
// with a reason, no hash stays in an ended row, and every repeat delivery
// carries the same event_id and event_name (Meta deduplicates on them).
async fn sigkill_while_sending_loses_nothing_and_repeats_only_the_same_event_ids() {
    const LEADS: usize = 3000;
    const KILLS: usize = 6;
    let bin = env!("CARGO_BIN_EXE_rastrod");
    let http = reqwest::Client::new();
    let (_fake, fake_base) = crate::common::fake_graph_process(&http).await;

    let db = TestDb::sqlite();
    let path = db.sqlite_path().unwrap();
    let key = rastrod::ids::secrets_key().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let start = || {
        Proc(
            std::process::Command::new(bin)
                .arg("serve")
                .env("RASTRO_DATABASE_URL", &db.url)
                .env("RASTRO_HOST_API_KEY", HOST_KEY)
                .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
                .env("RASTRO_SECRETS_KEY", &key)
                .env("RASTRO_META_GRAPH_URL", &fake_base)
                .env("RASTRO_CAPI_ATTEMPT_LEASE", "1500ms")
                .env("RASTRO_CAPI_RETRY_STEPS", "200ms,400ms")
                .env("RASTRO_CAPI_SWEEP_INTERVAL", "1s")
                .env("RASTRO_CAPI_BATCH_MAX", "50")
                .env("RASTRO_META_REQUEST_TIMEOUT", "1s")
                .env("RASTRO_LOG", "error")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let call = |method: reqwest::Method, path: String, body: Value| {
        let (http, url) = (http.clone(), format!("{base}{path}"));
        async move { http.request(method, url).bearer_auth(HOST_KEY).json(&body).send().await }
    };
    let started = std::time::Instant::now();
    let mut daemon = start();
    wait_for(&http, &format!("{base}/health")).await;
    let ok = |r: Result<reqwest::Response, reqwest::Error>| r.is_ok_and(|r| r.status().is_success());
    assert!(ok(call(
        reqwest::Method::POST,
        "/v1/sites".into(),
        json!({"siteId": SITE, "name": "Loja X",
        "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": "o1"})
    )
    .await));
    assert!(ok(call(
        reqwest::Method::PUT,
        format!("/v1/meta/owners/{OWNER}/connection"),
        json!({"accessToken": "crash-test-token"})
    )
    .await));
    assert!(ok(call(
        reqwest::Method::PUT,
        format!("/v1/sites/{SITE}/pixel"),
        json!({"ownerKey": OWNER, "pixelId": PIXEL, "sendLeadEvent": true})
    )
    .await));

    // Each new lead with meta queues one Lead; the leads come in chunks, and
    // after each chunk the daemon dies at a random moment while it sends.
    let chunk = LEADS / KILLS;
    let mut moments = Moments::from_env();
    let now_ms = chrono::Utc::now().timestamp_millis();
    for k in 0..KILLS {
        let mut tasks = Vec::new();
        for i in k * chunk..(k + 1) * chunk {
            let body = json!({"leadKey": format!("crash-{i}"), "eventId": format!("crash-{i}-new"),
                "occurredAt": now_ms, "origin": "ctwa_ad", "meta": meta(i)});
            tasks.push(actix_web::rt::spawn(call(reqwest::Method::POST, format!("/v1/sites/{SITE}/leads"), body)));
            if tasks.len() >= 64 {
                for t in tasks.drain(..) {
                    let _ = t.await;
                }
            }
        }
        // Kill while the last requests are still in flight, or a little after.
        let moment = moments.below(120);
        eprintln!("kill {k}: {moment} ms after the chunk's last request started");
        actix_web::rt::time::sleep(std::time::Duration::from_millis(moment)).await;
        daemon.0.kill().unwrap();
        daemon.0.wait().unwrap();
        for t in tasks {
            let _ = t.await;
        }
        daemon = start();
        wait_for(&http, &format!("{base}/health")).await;
    }

    // Bounded real-time wait for the queue to drain (leases of 1.5 s, a sweep a second).
    let pending = "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE status = 'pending'";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while sqlite_count(&path, pending) > 0 && std::time::Instant::now() < deadline {
        actix_web::rt::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let _ = std::process::Command::new("kill").arg("-TERM").arg(daemon.0.id().to_string()).status();
    let _ = daemon.0.wait();

    let total = sqlite_count(&path, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions");
    let leads = sqlite_count(&path, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM leads");
    assert_eq!(total, leads, "every stored lead queued its Lead");
    assert!(total as usize >= LEADS / 2, "a few thousand conversions were queued ({total})");
    assert_eq!(sqlite_count(&path, pending), 0, "none stuck pending");
    assert_eq!(
        sqlite_count(
            &path,
            "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE status NOT IN ('sent', 'failed')"
        ),
        0
    );
    assert_eq!(
        sqlite_count(
            &path,
            "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE status = 'failed' AND last_error IS NULL"
        ),
        0,
        "a failed conversion says why"
    );
    assert_eq!(
        sqlite_count(
            &path,
            "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE ph IS NOT NULL OR external_id IS NOT NULL"
        ),
        0,
        "no hash survives in an ended row"
    );
    let sent = sqlite_count(&path, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE status = 'sent'");

    let deliveries: BTreeMap<String, u64> =
        http.get(format!("{fake_base}/__fake/deliveries")).send().await.unwrap().json().await.unwrap();
    let events: Vec<Value> = http.get(format!("{fake_base}/__fake/events")).send().await.unwrap().json().await.unwrap();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for e in &events {
        let (id, name) = (e["event"]["event_id"].as_str().unwrap(), e["event"]["event_name"].as_str().unwrap());
        let first = names.entry(id.to_string()).or_insert_with(|| name.to_string());
        assert_eq!(first, name, "a repeat carries the same event_name");
    }
    let mut histogram: BTreeMap<u64, usize> = BTreeMap::new();
    for n in deliveries.values() {
        *histogram.entry(*n).or_default() += 1;
    }
    println!("deliveries per eventId ({} events):", deliveries.len());
    for (id, n) in &deliveries {
        println!("  {id} {n}");
    }
    println!(
        "conversions {total}: sent {sent}, failed {}; events delivered once/twice/...: {histogram:?}; {:.1} s",
        total - sent,
        started.elapsed().as_secs_f64()
    );
    assert!(deliveries.len() as i64 >= sent, "every sent conversion reached the fake at least once");
}

/// Two pixels each get a Lead event while Meta answers every send slowly;
/// answers the most Graph requests the fake saw at once.
async fn two_slow_pixels(app: &TestApp) -> u64 {
    setup(app, json!({"sendLeadEvent": true})).await;
    app.site("pet-mania").await;
    let other = json!({"ownerKey": OWNER, "pixelId": "222333444555", "sendLeadEvent": true});
    app.put("/v1/sites/pet-mania/pixel", other).await.ok();
    fault(app, json!({"match": "/events", "kind": "slow", "delayMs": 1000, "times": 2})).await;
    lead(app, "a1", json!({"meta": meta(1)})).await;
    let b = app.lead("pet-mania", "b1", T0, json!({"meta": meta(2)})).await;
    assert_eq!(b.status, 201, "{}", b.text);
    // The queued events woke their senders at once; the drain waits for their runs.
    drain(app).await;
    let deliveries = control(app, "GET", "/deliveries", None).await;
    assert_eq!(deliveries.as_object().map(|d| d.len()), Some(2), "{deliveries}");
    let in_flight = control(app, "GET", "/in-flight", None).await;
    assert_eq!(in_flight["now"], 0);
    in_flight["peak"].as_u64().unwrap()
}

// A burst over many pixels holds RASTRO_CAPI_MAX_CONCURRENT batches in memory, not one per pixel.
backend_test!(pixels_sending_at_once_are_capped, one_sender_builder, |app| {
    assert_eq!(two_slow_pixels(&app).await, 1, "the second pixel waited for the first");
});

backend_test!(pixels_send_side_by_side_under_the_cap, fake_meta_builder, |app| {
    assert_eq!(two_slow_pixels(&app).await, 2, "both pixels sent at once");
});

/// The demo as `rastrod demo` runs it: Lead Ads on, like the demo.
fn demo_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).env("RASTRO_FEDERATION_META_LEADS", "true")
}

// rule: FAKE-08
backend_test!(the_demo_sends_loja_x_recent_qualified_leads_and_sales_to_its_pixel, demo_builder, |app| {
    let seeded = rastrod::demo::run(&app.state, T0, true).await.unwrap();
    assert!(seeded.leads > 0 && seeded.events > 0 && seeded.forms == Some(12), "{seeded:?}");
    rastrod::actors::page_leads::drain(&app.state.actors).await.unwrap();
    drain(&app).await;
    let rows = list(&app, "?limit=50").await.ok();
    let rows = rows.as_array().unwrap();
    let sent: Vec<&Value> = rows.iter().filter(|r| r["status"] == "sent").collect();
    assert!(sent.iter().any(|r| r["eventName"] == "Purchase" && r["valueCents"].as_i64().unwrap() > 0), "{rows:?}");
    assert!(sent.iter().any(|r| r["eventName"] == "QualifiedLead"), "{rows:?}");
    // Only moves inside the Conversions API's window were sent: none refused as too old.
    assert!(rows.iter().all(|r| r["status"] == "sent"), "{rows:?}");
    let events = fake_events(&app).await;
    assert!(events.iter().all(|e| e["pixelId"] == PIXEL));
    assert!(events.iter().all(|e| T0 / 1000 - e["event"]["event_time"].as_i64().unwrap() < 7 * 86_400));
    assert!(events.len() >= sent.len());
    // Running the seed again adds nothing, and queues nothing.
    assert_eq!(rastrod::demo::seed(&app.state.cx, T0).await.unwrap(), 0);
    drain(&app).await;
    assert_eq!(list(&app, "?limit=50").await.ok().as_array().unwrap().len(), rows.len());
    assert_eq!(fake_events(&app).await.len(), events.len());
    // Pet Mania has no pixel: nothing of its own.
    let pet = app.get("/v1/sites/pet-mania/meta/conversions").await.ok();
    assert_eq!(pet.as_array().unwrap().len(), 0);
});

// The crash test is in the slow tier.
crate::slow_tests!(sigkill_while_sending_loses_nothing_and_repeats_only_the_same_event_ids);
