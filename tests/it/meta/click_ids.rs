//! Meta told by click id (docs/whatsapp.md §4, WA-30 to WA-34), over HTTP
//! against the fake Graph the daemon starts itself: the per-site settings,
//! the conversions of click-to-WhatsApp leads sent by their click id on
//! `business_messaging`, the site's own sales of visits that landed with an
//! `fbclid` sent to the pixel as `website` Purchases with `fbc`, the fake's
//! checks of both shapes, and that neither click id reaches an answer, a log
//! line or a metric.

use rastrod::actors::pixel_sender;
use rastrod::crypto::Identity;
use rastrod::service::meta::conversions as capi;
use rastrod::store::analytics::click_ids;
use rastrod::store::meta::conversions as store;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::analytics::{HOST, UA, track, track_as};
use crate::backend_test;
use crate::common::*;

const OWNER: &str = "agency:1";
const SITE: &str = "loja";
const PIXEL: &str = "111222333444";
const WABA: &str = "104996632576012";
const MINUTE: i64 = 60_000;
/// A click-to-WhatsApp click id, as Meta's webhook hands it to the host.
const CTWA_CLID: &str = "ARAkLkA8rmlYlWctwacanaryQ7";
/// A Facebook click id on a landing URL.
const FBCLID: &str = "IwAR2fbclidcanary_Zx9-k";

fn sha(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn meta(i: usize) -> Value {
    json!({"ph": [sha(&format!("55119999{i:05}"))], "externalId": sha(&format!("contact-{i}"))})
}

async fn control(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> Value {
    let base = app.state.fake.as_ref().expect("RASTRO_META_FAKE starts the fake").base_url.clone();
    let http = reqwest::Client::new();
    let url = format!("{base}/__fake{path}");
    let req = if method == "GET" { http.get(url) } else { http.post(url).json(&body.unwrap_or(json!({}))) };
    let res = req.send().await.unwrap();
    assert!(res.status().is_success(), "fake control {path}: {}", res.status());
    res.json().await.unwrap()
}

/// The events the fake accepted (`event` of each `{pixelId, testEventCode, event}`).
async fn sent(app: &TestApp) -> Vec<Value> {
    let all = control(app, "GET", "/events", None).await;
    all.as_array().unwrap().iter().map(|e| e["event"].clone()).collect()
}

async fn sent_by_id(app: &TestApp, event_id: &str) -> Value {
    let all = sent(app).await;
    let found: Vec<&Value> = all.iter().filter(|e| e["event_id"] == event_id).collect();
    assert_eq!(found.len(), 1, "{event_id} sent once: {all:?}");
    found[0].clone()
}

async fn drain(app: &TestApp) {
    pixel_sender::drain(&app.state.actors).await.expect("drain");
}

/// A site on `loja.example.com` (the tracker's host) and the sample agency connected.
async fn site_and_connection(app: &TestApp) {
    crate::analytics::site(app, SITE, false).await;
    app.put(&format!("/v1/meta/owners/{OWNER}/connection"), json!({"accessToken": "tok-agency-1"})).await.ok();
}

/// `setSitePixel` with Loja X's pixel from the agency's listing and `extra`.
async fn set_pixel(app: &TestApp, extra: Value) -> Answer {
    let mut body = json!({"ownerKey": OWNER, "pixelId": PIXEL});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    app.put(&format!("/v1/sites/{SITE}/pixel"), body).await
}

async fn status_pixel(app: &TestApp) -> Value {
    app.post("/v1/meta/status", json!({"siteIds": [SITE]})).await.ok()[0]["pixel"].clone()
}

async fn lead(app: &TestApp, key: &str, extra: Value) -> String {
    let a = app.lead(SITE, key, T0, extra).await;
    assert!(a.status == 200 || a.status == 201, "{}", a.text);
    a.body["leadId"].as_str().unwrap().to_string()
}

/// A visit landing on `/{query}`: its session id.
async fn land(app: &TestApp, visitor: &str, query: &str) -> String {
    let pv = json!({"type": "pageview", "pageviewId": format!("p_{visitor:0>16}"),
        "url": format!("https://{HOST}/{query}")});
    let a = track(app, SITE, visitor, vec![pv]).await;
    a["sessionId"].as_str().expect("a session").to_string()
}

async fn record_conversion(app: &TestApp, body: Value) -> String {
    let a = app.post(&format!("/v1/sites/{SITE}/analytics/conversions"), body).await;
    assert_eq!(a.status, 201, "{}", a.text);
    a.body["conversionId"].as_str().unwrap().to_string()
}

fn key_open(app: &TestApp, sealed: &str, session: &str) -> String {
    let key = app.state.cx.secrets.clone().unwrap();
    key.open(sealed, Identity::WebClickId(SITE, session)).unwrap().expose().to_string()
}

async fn click_row(app: &TestApp, session: &str) -> Option<click_ids::ClickIdRow> {
    let s = session.to_string();
    app.state.cx.read(move |c| Ok(click_ids::find(c, SITE, &s)?)).await.unwrap()
}

// rule: WA-30
backend_test!(the_click_id_settings_are_the_sites_and_need_the_account, fake_meta_builder, |app| {
    site_and_connection(&app).await;
    crate::analytics::site(&app, "outra", false).await;
    // Off by default: the answers say nothing of them (as before).
    let p = set_pixel(&app, json!({})).await.ok();
    assert!(p.get("sendClickIds").is_none() && p.get("whatsappBusinessAccountId").is_none(), "{p}");
    let s = status_pixel(&app).await;
    assert!(s.get("sendClickIds").is_none() && s.get("whatsappBusinessAccountId").is_none(), "{s}");

    // On needs the account; an account is 5-20 digits.
    set_pixel(&app, json!({"sendClickIds": true})).await.err(400, "INVALID_ARGUMENT");
    for bad in [
        json!("1234"),
        json!("123456789012345678901"),
        json!("12345a"),
        json!(" 123456"),
        json!(""),
        json!(104996632576012u64),
    ] {
        set_pixel(&app, json!({"sendClickIds": true, "whatsappBusinessAccountId": bad}))
            .await
            .err(400, "INVALID_ARGUMENT");
    }
    assert!(status_pixel(&app).await.get("sendClickIds").is_none(), "a refused call changed nothing");

    let p = set_pixel(&app, json!({"sendClickIds": true, "whatsappBusinessAccountId": WABA})).await.ok();
    assert_eq!((&p["sendClickIds"], &p["whatsappBusinessAccountId"]), (&json!(true), &json!(WABA)));
    let s = status_pixel(&app).await;
    assert_eq!((&s["sendClickIds"], &s["whatsappBusinessAccountId"]), (&json!(true), &json!(WABA)));
    // A later setSitePixel without them keeps them.
    let p = set_pixel(&app, json!({"sendLeadEvent": true})).await.ok();
    assert_eq!((&p["sendClickIds"], &p["sendLeadEvent"]), (&json!(true), &json!(true)));
    // The account goes only once the click ids are off.
    set_pixel(&app, json!({"whatsappBusinessAccountId": null})).await.err(400, "INVALID_ARGUMENT");
    let p = set_pixel(&app, json!({"sendClickIds": false})).await.ok();
    assert_eq!((p.get("sendClickIds"), &p["whatsappBusinessAccountId"]), (None, &json!(WABA)));
    let p = set_pixel(&app, json!({"whatsappBusinessAccountId": null})).await.ok();
    assert!(p.get("whatsappBusinessAccountId").is_none(), "{p}");
    // Per site: the other one never had them.
    let both = app.post("/v1/meta/status", json!({"siteIds": ["outra"]})).await.ok();
    assert!(both[0]["pixel"].get("sendClickIds").is_none());
    // openapi.json documents both fields where the pixel is set.
    let doc = app.get("/openapi.json").await.ok();
    let props = &doc["components"]["schemas"]["SetSitePixel"]["properties"];
    assert!(props.get("sendClickIds").is_some(), "{props}");
    assert_eq!(props["whatsappBusinessAccountId"]["pattern"], "^[0-9]{5,20}$");
    assert!(doc["components"]["schemas"]["Pixel"]["properties"].get("whatsappBusinessAccountId").is_some());
});

// rule: WA-31, WA-32
backend_test!(click_to_whatsapp_leads_go_by_their_click_id_while_the_site_says_so, fake_meta_builder, |app| {
    site_and_connection(&app).await;
    set_pixel(&app, json!({"sendLeadEvent": true, "sendClickIds": true, "whatsappBusinessAccountId": WABA})).await.ok();
    app.put(
        &format!("/v1/sites/{SITE}/pipeline"),
        json!({"columns": [{"key": "novo", "name": "Novo"}, {"key": "quente", "name": "Quente"},
            {"key": "agendado", "name": "Agendado"}]}),
    )
    .await
    .ok();
    app.put(
        &format!("/v1/sites/{SITE}/event-map"),
        json!({"columns": {"quente": "QualifiedLead", "agendado": "Schedule"}}),
    )
    .await
    .ok();
    // A click-to-WhatsApp lead with its click id, through the board to a sale.
    let ad = lead(&app, "ad-1", json!({"clickId": CTWA_CLID, "adId": "301", "meta": meta(1)})).await;
    let at = |m: i64| T0 + m * MINUTE;
    for (i, column) in ["quente", "agendado"].iter().enumerate() {
        let body =
            json!({"column": column, "eventId": format!("m{i}"), "occurredAt": at(i as i64 + 1), "meta": meta(1)});
        app.stage(SITE, "ad-1", body).await.ok();
    }
    let won = json!({"stage": "won", "revenueCents": 45_990, "eventId": "won", "occurredAt": at(5), "meta": meta(1)});
    app.stage(SITE, "ad-1", won).await.ok();
    // Without a click id, or not from an ad: the hashed-phone path.
    let no_click = lead(&app, "ad-2", json!({"meta": meta(2)})).await;
    let organic = lead(&app, "org-1", json!({"origin": "whatsapp", "clickId": "organic-click", "meta": meta(3)})).await;
    drain(&app).await;

    let by_click = json!({"ctwa_clid": CTWA_CLID, "whatsapp_business_account_id": WABA});
    let l = sent_by_id(&app, &capi::event_id(&ad, "Lead")).await;
    assert_eq!(
        (&l["event_name"], &l["action_source"], &l["messaging_channel"]),
        (&json!("LeadSubmitted"), &json!("business_messaging"), &json!("whatsapp"))
    );
    assert_eq!(l["user_data"], by_click, "unhashed, and nothing else of the person");
    assert_eq!(l["event_time"], T0 / 1000);
    let q = sent_by_id(&app, &capi::event_id(&ad, "QualifiedLead")).await;
    assert_eq!((&q["event_name"], &q["action_source"]), (&json!("QualifiedLead"), &json!("business_messaging")));
    assert_eq!(q["user_data"], by_click);
    let p = sent_by_id(&app, &capi::event_id(&ad, "Purchase")).await;
    assert_eq!((&p["event_name"], &p["action_source"]), (&json!("Purchase"), &json!("business_messaging")));
    assert_eq!(p["custom_data"], json!({"value": 459.9, "currency": "BRL"}));
    // Meta refuses Schedule on business_messaging: it keeps the chat path, hashed.
    let chat_user =
        |i: usize| json!({"ph": meta(i)["ph"], "external_id": [meta(i)["externalId"]], "country": [sha("br")]});
    let s = sent_by_id(&app, &capi::event_id(&ad, "Schedule")).await;
    assert_eq!((&s["event_name"], &s["action_source"]), (&json!("Schedule"), &json!("chat")));
    assert_eq!(s["user_data"], chat_user(1));
    assert!(s.get("messaging_channel").is_none());
    for (id, i) in [(&no_click, 2), (&organic, 3)] {
        let e = sent_by_id(&app, &capi::event_id(id, "Lead")).await;
        assert_eq!((&e["event_name"], &e["action_source"]), (&json!("Lead"), &json!("chat")));
        assert_eq!(e["user_data"], chat_user(i));
    }
    // Listed and counted under the board's names, every one sent.
    let rows = app.get(&format!("/v1/sites/{SITE}/meta/conversions")).await.ok();
    assert_eq!(rows.as_array().unwrap().len(), 6);
    assert!(rows.as_array().unwrap().iter().all(|r| r["status"] == "sent"), "{rows}");
    let last30d =
        app.post("/v1/meta/status", json!({"siteIds": [SITE], "now": T0})).await.ok()[0]["conversions"]["last30d"]
            .clone();
    assert_eq!(last30d, json!({"Lead": 3, "QualifiedLead": 1, "Schedule": 1, "Purchase": 1}));

    // Off: the same kind of lead goes the hashed way again (WA-32).
    set_pixel(&app, json!({"sendLeadEvent": true, "sendClickIds": false})).await.ok();
    let later = lead(&app, "ad-3", json!({"clickId": format!("{CTWA_CLID}-3"), "meta": meta(4)})).await;
    drain(&app).await;
    let e = sent_by_id(&app, &capi::event_id(&later, "Lead")).await;
    assert_eq!((&e["event_name"], &e["action_source"]), (&json!("Lead"), &json!("chat")));
    assert_eq!(e["user_data"], chat_user(4));
});

// rule: WA-31
backend_test!(a_click_id_alone_is_enough_to_match_on_business_messaging, fake_meta_builder, |app| {
    site_and_connection(&app).await;
    set_pixel(&app, json!({"sendLeadEvent": true, "sendClickIds": true, "whatsappBusinessAccountId": WABA})).await.ok();
    app.put(
        &format!("/v1/sites/{SITE}/pipeline"),
        json!({"columns": [{"key": "novo", "name": "Novo"},
        {"key": "agendado", "name": "Agendado"}]}),
    )
    .await
    .ok();
    app.put(&format!("/v1/sites/{SITE}/event-map"), json!({"columns": {"agendado": "Schedule"}})).await.ok();
    // No contact hashes at all: the click id matches, for the events Meta takes on that channel.
    let ad = lead(&app, "bare-1", json!({"clickId": CTWA_CLID, "adId": "301"})).await;
    app.stage(SITE, "bare-1", json!({"column": "agendado", "eventId": "s1", "occurredAt": T0 + MINUTE})).await.ok();
    let won = json!({"stage": "won", "revenueCents": 10_000, "eventId": "w1", "occurredAt": T0 + 2 * MINUTE});
    app.stage(SITE, "bare-1", won).await.ok();
    // Neither a hash nor a click id (or not from an ad): nothing can match, nothing is queued.
    lead(&app, "bare-2", json!({"adId": "301"})).await;
    lead(&app, "bare-3", json!({"origin": "whatsapp", "clickId": "organic-click"})).await;
    drain(&app).await;
    let l = sent_by_id(&app, &capi::event_id(&ad, "Lead")).await;
    assert_eq!((&l["event_name"], &l["action_source"]), (&json!("LeadSubmitted"), &json!("business_messaging")));
    let p = sent_by_id(&app, &capi::event_id(&ad, "Purchase")).await;
    assert_eq!(p["user_data"], json!({"ctwa_clid": CTWA_CLID, "whatsapp_business_account_id": WABA}));
    let rows = app.get(&format!("/v1/sites/{SITE}/meta/conversions")).await.ok();
    let names: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["eventName"].as_str().unwrap_or("")).collect();
    assert_eq!(rows.as_array().unwrap().len(), 2, "Schedule has no hash to go by, and the others nothing: {names:?}");
    // With the setting off, the bare lead's events have nothing to match by.
    set_pixel(&app, json!({"sendLeadEvent": true, "sendClickIds": false})).await.ok();
    lead(&app, "bare-4", json!({"clickId": format!("{CTWA_CLID}-4"), "adId": "301"})).await;
    assert_eq!(app.get(&format!("/v1/sites/{SITE}/meta/conversions")).await.ok().as_array().unwrap().len(), 2);
});

// rule: WA-33
backend_test!(a_site_sale_of_a_visit_from_a_facebook_click_reaches_the_pixel_with_fbc, fake_meta_builder, |app| {
    site_and_connection(&app).await;
    set_pixel(&app, json!({})).await.ok();
    // The visit landed with fbclid: kept sealed, bound to its site and session.
    let session = land(&app, "v_visitor0001", &format!("?utm_source=facebook&fbclid={FBCLID}")).await;
    let row = click_row(&app, &session).await.expect("the landing's fbclid is kept");
    assert_eq!(row.landed_at, T0, "the session's start");
    assert!(!row.sealed_fbclid.contains(FBCLID), "sealed");
    let agent = row.sealed_user_agent.clone().expect("the landing's user agent is kept beside it");
    assert!(!agent.contains("Mozilla"), "sealed too");
    assert_eq!(key_open(&app, &agent, &session), UA);
    let key = app.state.cx.secrets.clone().unwrap();
    let who = Identity::WebClickId(SITE, &session);
    assert_eq!(key.open(&row.sealed_fbclid, who).unwrap().expose(), FBCLID);
    assert!(key.open(&row.sealed_fbclid, Identity::WebClickId(SITE, "s_other")).is_err(), "bound to its session");
    // A later pageview with another fbclid in the same session keeps the first.
    let pv = json!({"type": "pageview", "pageviewId": "p_0000000000000099", "url": format!("https://{HOST}/p?fbclid=other")});
    track(&app, SITE, "v_visitor0001", vec![pv]).await;
    assert_eq!(app.count("web_click_ids").await, 1);

    // The host's sale with its own event id (a lead's Purchase of the same sale, say).
    let lead_id = lead(&app, "ad-9", json!({"meta": meta(9)})).await;
    let lead_purchase = capi::event_id(&lead_id, "Purchase");
    app.stage(
        SITE,
        "ad-9",
        json!({"stage": "won", "revenueCents": 45_990, "eventId": "w9", "occurredAt": T0, "meta": meta(9)}),
    )
    .await
    .ok();
    let sale = json!({"conversionKey": "order-1", "occurredAt": T0 + MINUTE, "name": "Pedido", "valueCents": 45_990,
        "sessionId": session, "properties": {"eventId": lead_purchase, "plano": "anual"}});
    let with_id = record_conversion(&app, sale).await;
    // Attributed by visitor (last touch), no eventId property: conv:<conversion id>.
    let by_visitor = json!({"conversionKey": "order-2", "occurredAt": T0 + 2 * MINUTE, "name": "Pedido",
        "valueCents": 1_000, "visitorId": "v_visitor0001", "properties": {"eventId": 42}});
    let plain = record_conversion(&app, by_visitor).await;
    // A repeat changes nothing; a visit without fbclid sends nothing.
    let again = json!({"conversionKey": "order-2", "occurredAt": T0 + 2 * MINUTE, "name": "Pedido", "valueCents": 1_000,
        "visitorId": "v_visitor0001"});
    assert_eq!(app.post(&format!("/v1/sites/{SITE}/analytics/conversions"), again).await.status, 200);
    let other = land(&app, "v_visitor0002", "?utm_source=google").await;
    assert!(click_row(&app, &other).await.is_none(), "only landings with fbclid have a row");
    record_conversion(
        &app,
        json!({"conversionKey": "order-3", "occurredAt": T0, "name": "Pedido", "valueCents": 5,
        "sessionId": other}),
    )
    .await;
    drain(&app).await;

    let fbc = format!("fb.1.{T0}.{FBCLID}");
    let site_sales: Vec<Value> = sent(&app).await.into_iter().filter(|e| e["action_source"] == "website").collect();
    assert_eq!(site_sales.len(), 2, "{site_sales:?}");
    let first = site_sales.iter().find(|e| e["event_id"] == lead_purchase.as_str()).expect("the given event id");
    assert_eq!(
        *first,
        // occurredAt a minute ahead of the clock: sent as now.
        // Its page (the landing's path on the site) and the landing browser's user agent, as Meta requires.
        json!({"event_name": "Purchase", "event_time": T0 / 1000, "event_id": lead_purchase,
            "action_source": "website", "event_source_url": format!("https://{HOST}/"),
            "user_data": {"fbc": fbc, "client_user_agent": UA}, "custom_data": {"value": 459.9, "currency": "BRL"}})
    );
    let second = site_sales.iter().find(|e| e["event_id"] == format!("conv:{plain}")).expect("conv:<id>");
    assert_eq!((&second["user_data"]["fbc"], &second["custom_data"]["value"]), (&json!(fbc), &json!(10.0)));
    // The lead's own Purchase went too, with the same id: Meta deduplicates the two.
    assert_eq!(app.state.fake.as_ref().unwrap().deliveries().get(&lead_purchase), Some(&2));

    // Listed among the pixel's conversions as site sales (no lead), counted as Purchases.
    let rows = app.get(&format!("/v1/sites/{SITE}/meta/conversions")).await.ok();
    let sales: Vec<&Value> = rows.as_array().unwrap().iter().filter(|r| r.get("conversionId").is_some()).collect();
    let mut ids: Vec<&str> = sales.iter().map(|r| r["conversionId"].as_str().unwrap()).collect();
    ids.sort();
    let mut want = vec![with_id.as_str(), plain.as_str()];
    want.sort();
    assert_eq!(ids, want);
    for r in &sales {
        assert_eq!((&r["eventName"], &r["status"], &r["leadId"]), (&json!("Purchase"), &json!("sent"), &Value::Null));
        assert_eq!(r["eventId"].as_str().unwrap().len(), 64, "the row's own id pages like any other");
    }
    assert!(rows.as_array().unwrap().iter().all(|r| r.get("conversionId").is_none() || r["leadId"].is_null()));
    let c = app.post("/v1/meta/status", json!({"siteIds": [SITE], "now": T0})).await.ok()[0]["conversions"].clone();
    assert_eq!(c["last30d"]["Purchase"], 3);
    assert!(!rows.to_string().contains(FBCLID) && !c.to_string().contains(FBCLID));
});

// rule: WA-33
backend_test!(a_landings_fbclid_goes_with_its_session, fake_meta_builder, |app| {
    site_and_connection(&app).await;
    set_pixel(&app, json!({})).await.ok();
    let kept = land(&app, "v_visitor0001", &format!("?fbclid={FBCLID}")).await;
    let forgotten = land(&app, "v_visitor0002", &format!("?fbclid={FBCLID}-2")).await;
    assert_eq!(app.count("web_click_ids").await, 2);
    // Forgetting the person rewrites its sessions and deletes their fbclids.
    app.state
        .cx
        .write_plain(|c| {
            Ok(rastrod::store::analytics::people::rewrite_ids(c, SITE, &["v_visitor0002".into()], "v_fresh0000001")?)
        })
        .await
        .unwrap();
    assert!(click_row(&app, &forgotten).await.is_none());
    assert!(click_row(&app, &kept).await.is_some());

    // A sale whose first send failed waits; its session's retention takes the fbclid meanwhile.
    control(&app, "POST", "/faults", Some(json!({"match": "/events", "kind": "server_error", "times": 1}))).await;
    let sale = record_conversion(
        &app,
        json!({"conversionKey": "o-1", "occurredAt": T0, "name": "Pedido",
        "valueCents": 100, "sessionId": kept}),
    )
    .await;
    drain(&app).await;
    let own = capi::web_event_id(&sale);
    let row = |app: &TestApp| {
        let own = own.clone();
        let cx = app.state.cx.clone();
        async move { cx.read(move |c| Ok(store::find(c, &own)?)).await.unwrap().unwrap() }
    };
    assert_eq!((row(&app).await.status.as_str(), row(&app).await.attempts), ("pending", 1));
    app.clock.advance(2 * DAY);
    let policy = rastrod::service::analytics::retention::SetPolicy {
        site_id: SITE.into(),
        events_days: 1,
        sessions_days: 1,
        conversions_days: 30,
        profiles_days: 30,
        aggregates_days: 30,
    };
    let now = app.state.now();
    app.state
        .cx
        .write_plain(move |c| rastrod::service::analytics::retention::set_policy(c, now, policy))
        .await
        .unwrap();
    rastrod::actors::retention::drain(&app.state.cx).await.unwrap();
    assert_eq!(app.count("web_click_ids").await, 0, "deleted with the sessions' class");
    assert_eq!(app.count("web_sessions").await, 0);
    drain(&app).await;
    let ended = row(&app).await;
    assert_eq!(ended.status, "failed");
    assert!(ended.last_error.unwrap().starts_with("UNEXPECTED: the visit's fbclid is no longer kept"));
    assert!(!sent(&app).await.iter().any(|e| e["action_source"] == "website"), "nothing went without its fbc");
});

// rule: WA-34
backend_test!(the_fake_graph_refuses_lead_on_business_messaging_with_2804066, fake_meta_builder, |app| {
    let base = app.state.fake.as_ref().unwrap().base_url.clone();
    let post = |event: Value| {
        let (base, http) = (base.clone(), app.http.clone());
        async move {
            let res = http
                .post(format!("{base}/v25.0/{PIXEL}/events"))
                .bearer_auth("tok-agency-1")
                .json(&json!({"data": [event]}))
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        }
    };
    let messaging = |name: &str| {
        json!({"event_name": name, "event_time": T0 / 1000, "event_id": format!("e-{name}"),
            "action_source": "business_messaging", "messaging_channel": "whatsapp",
            "user_data": {"ctwa_clid": CTWA_CLID, "whatsapp_business_account_id": WABA}})
    };
    let (status, body) = post(messaging("Lead")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!((&body["error"]["code"], &body["error"]["error_subcode"]), (&json!(100), &json!(2_804_066)));
    assert!(!body.to_string().contains(CTWA_CLID), "the refusal never echoes the click id");
    let (status, body) = post(messaging("LeadSubmitted")).await;
    assert_eq!((status, &body["events_received"]), (200, &json!(1)));
    // The channel's required keys, and a website fbc's shape.
    let mut no_account = messaging("Purchase");
    no_account["user_data"] = json!({"ctwa_clid": CTWA_CLID});
    let (status, body) = post(no_account).await;
    assert_eq!((status, &body["error"]["code"], body["error"].get("error_subcode")), (400, &json!(100), None));
    let website = |fbc: &str| {
        json!({"event_name": "Purchase", "event_time": T0 / 1000, "event_id": "w", "action_source": "website",
            "event_source_url": format!("https://{HOST}/"), "user_data": {"fbc": fbc, "client_user_agent": UA},
            "custom_data": {"value": 1.0, "currency": "BRL"}})
    };
    assert_eq!(post(website(FBCLID)).await.0, 400);
    assert_eq!(post(website(&format!("fb.1.{T0}.{FBCLID}"))).await.0, 200);
    // A website event names its page and the browser's user agent.
    let mut no_agent = website(&format!("fb.1.{T0}.{FBCLID}"));
    no_agent["user_data"].as_object_mut().unwrap().remove("client_user_agent");
    assert_eq!(post(no_agent).await.0, 400);
    let mut no_page = website(&format!("fb.1.{T0}.{FBCLID}"));
    no_page.as_object_mut().unwrap().remove("event_source_url");
    assert_eq!(post(no_page).await.0, 400);
});

/// Every log line of this thread at trace, as text and JSON.
fn capture() -> (crate::meta::lead_ads::Captured, tracing::subscriber::DefaultGuard, tracing::Dispatch) {
    use tracing_subscriber::layer::SubscriberExt;
    let logs = crate::meta::lead_ads::Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish()
        .with(tracing_subscriber::fmt::layer().json().with_writer(logs.clone()));
    // A second dispatcher makes tracing ask every one of them, ours included (see lead_ads.rs).
    let second = tracing::Dispatch::new(tracing_subscriber::registry());
    let guard = tracing::subscriber::set_default(subscriber);
    (logs, guard, second)
}

// rule: WA-31, WA-33, WA-40
backend_test!(neither_click_id_reaches_an_answer_a_log_line_or_a_metric, fake_meta_builder, |app| {
    let _one = LOG_CAPTURE.lock().await;
    let (logs, _guard, _second) = capture();
    site_and_connection(&app).await;
    set_pixel(&app, json!({"sendLeadEvent": true, "sendClickIds": true, "whatsappBusinessAccountId": WABA})).await.ok();
    let lead_id = lead(&app, "ad-1", json!({"clickId": CTWA_CLID, "meta": meta(1)})).await;
    let body = json!({"siteId": SITE, "visitorId": "v_visitor0001", "events": [{"type": "pageview",
        "pageviewId": "p_0000000000000001", "url": format!("https://{HOST}/?fbclid={FBCLID}")}]});
    let tracked = track_as(&app, &body, &[("user-agent", UA)]).await;
    let session = tracked.body["sessionId"].as_str().unwrap().to_string();
    let sale = json!({"conversionKey": "order-1", "occurredAt": T0, "name": "Pedido", "valueCents": 100,
        "sessionId": session});
    let conversion = app.post(&format!("/v1/sites/{SITE}/analytics/conversions"), sale).await;
    // Meta refuses one send of each: the stored error says why without either id.
    control(&app, "POST", "/faults", Some(json!({"match": "/events", "kind": "server_error", "times": 1}))).await;
    drain(&app).await;
    app.clock.advance(2 * MINUTE);
    drain(&app).await;
    // Both went, each with its click id: there was something to leak.
    let events = control(&app, "GET", "/events", None).await.to_string();
    assert!(events.contains(CTWA_CLID) && events.contains(&format!("fb.1.{T0}.{FBCLID}")), "{events}");
    let mut answers = vec![tracked.text, conversion.text];
    let range = format!("from={}&to={}", T0 - DAY, T0 + DAY);
    for path in [
        format!("/v1/sites/{SITE}/meta/conversions"),
        format!("/v1/leads?siteIds={SITE}&{range}"),
        format!("/v1/sites/{SITE}/leads/{lead_id}/journey"),
        format!("/v1/sites/{SITE}/analytics/export?{range}"),
        "/metrics".to_string(),
    ] {
        let a = app.get(&path).await;
        assert_eq!(a.status, 200, "{path}: {}", a.text);
        answers.push(a.text);
    }
    answers.push(app.post("/v1/meta/status", json!({"siteIds": [SITE], "now": T0})).await.text);
    answers.push(set_pixel(&app, json!({"sendClickIds": true})).await.text);
    let answers = answers.join("\n");
    assert!(answers.contains("conversionId"), "the site sale is listed");
    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(logged.contains("graph answer") && logged.contains("send_events"), "the capture saw the sends");
    // The fbclid is stored only sealed (the click id of a lead is LEAD-03's: stored, never read back).
    app.state.cx.truncate_wal().await.unwrap();
    let stored = match app.db.sqlite_path() {
        Some(path) => {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.extend(std::fs::read(path.with_extension("db-wal")).unwrap_or_default());
            String::from_utf8_lossy(&bytes).into_owned()
        }
        None => crate::meta::lead_ads::every_row(&app).await,
    };
    for (place, text) in [("an answer", &answers), ("the logs", &logged)] {
        for canary in [CTWA_CLID, FBCLID, "ctwacanary", "fbclidcanary"] {
            assert!(!text.contains(canary), "{canary} reached {place}");
        }
    }
    assert!(!stored.contains(FBCLID) && !stored.contains("fbclidcanary"), "the fbclid is stored sealed only");
});
