//! Meta Lead Ads (../shared/design/LEADADS.md), first slice: the `metaLeads`
//! capability, the Pages and their link to a site over the federated API,
//! the leadgen webhook (`/rastro/meta/leadgen`) and the Page actors that turn
//! receipts into form leads, against the fake Graph the daemon starts itself.
//! The fake posts Meta's signed webhook to the daemon (`/__fake/leadgen`);
//! the retries run on the manual clock through `page_leads::drain`.

use std::sync::{Arc, Mutex};

use rastrod::actors::page_leads;
use rastrod::meta::fake::leads::{FORM_AGENDA, FORM_ORCAMENTO, PAGE_CAFE, PAGE_LOJA_X, PAGE_PET_MANIA, signature};
use rastrod::meta::fake::sample::LOJA_X;
use rastrod::service::meta::lead_ads::fetch::PageRound;
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;
use crate::federation::{CONFIGURE, Fed, FedBuilder, READ, fed_builder};

const SITE: &str = "loja-x";
const VERIFY: &str = "verify-token-0123456789";
const APP_SECRET: &str = "rastro-fake-app-secret";
const MINUTE: i64 = 60_000;

/// Federation on with `metaLeads`, and a verify token.
fn leads_builder(backend: Backend) -> FedBuilder {
    fed_builder(backend).env("RASTRO_FEDERATION_META_LEADS", "true").env("RASTRO_META_WEBHOOK_VERIFY_TOKEN", VERIFY)
}

/// The same with `metaLeads` off (its default).
fn off_builder(backend: Backend) -> FedBuilder {
    fed_builder(backend).env("RASTRO_META_WEBHOOK_VERIFY_TOKEN", VERIFY)
}

/// `metaLeads` on without the app secret or the audience: not ready.
fn unready_builder(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend)
        .env("RASTRO_FEDERATION_META_LEADS", "true")
        .env("RASTRO_META_WEBHOOK_VERIFY_TOKEN", VERIFY)
}

fn fake_url(app: &TestApp) -> String {
    app.state.fake.as_ref().expect("RASTRO_META_FAKE starts the fake").base_url.clone()
}

async fn fake(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> Value {
    let http = reqwest::Client::new();
    let url = format!("{}/__fake{path}", fake_url(app));
    let req = if method == "GET" { http.get(url) } else { http.post(url).json(&body.unwrap_or(json!({}))) };
    let res = req.send().await.unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert!(status.is_success(), "fake control {path}: {status} {text}");
    serde_json::from_str(&text).unwrap()
}

/// A sample ad of Loja X's account.
fn ad() -> &'static rastrod::meta::fake::SampleAd {
    rastrod::meta::fake::sample_ads().iter().find(|a| a.account == LOJA_X).unwrap()
}

/// A grant of the site with both scopes, and its token.
async fn granted(fed: &Fed) -> String {
    fed.app.site(SITE).await;
    fed.grant(&[SITE], &[READ, CONFIGURE]).await;
    fed.token(&[READ, CONFIGURE])
}

/// The handler's secret in these tests.
const HANDLER_SECRET: &str = "handler-secret-0123456789abcdef-0123";

/// The site's form-lead handler: the fake's (a real HTTP hop on loopback).
async fn set_handler(app: &TestApp) -> Answer {
    let body = json!({"url": format!("{}/__fake/handler", fake_url(app)), "secret": HANDLER_SECRET});
    app.put(&format!("/v1/sites/{SITE}/meta/form-lead-handler"), body).await
}

/// What the fake's handler received, oldest first.
async fn handed(app: &TestApp) -> Vec<Value> {
    fake(app, "GET", "/handler/deliveries", None).await.as_array().unwrap().clone()
}

/// The connection's owner connected (a pasted token), its Pages listed, Loja X's Page linked, a handler set.
async fn linked(fed: &Fed) -> String {
    let t = linked_without_handler(fed).await;
    set_handler(&fed.app).await.ok();
    t
}

/// The same without a handler: receipts wait (LA-10).
async fn linked_without_handler(fed: &Fed) -> String {
    let t = granted(fed).await;
    link_loja_x(fed, &t).await;
    t
}

/// Connects the owner, lists its Pages and links Loja X's Page with `t`.
async fn link_loja_x(fed: &Fed, t: &str) {
    let t = t.to_string();
    fed.rest(Some(&t), "connectMeta", json!({"accessToken": "tok-agency-1"})).await.ok();
    fed.rest(Some(&t), "metaPages", json!({})).await.ok();
    let a = fed.rest(Some(&t), "linkMetaPage", json!({"siteId": SITE, "pageId": PAGE_LOJA_X})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    // The first reconciliation (at once on linking) done, so the test's leads meet the next one only.
    drain(&fed.app).await;
}

/// A lead made on the fake; its webhook posted to the daemon unless `drop`.
async fn emit(app: &TestApp, form: &str, extra: Value) -> (String, Value) {
    let mut body = json!({"pageId": PAGE_LOJA_X, "formId": form, "createdTime": T0 / 1000,
        "deliverTo": format!("{}/rastro/meta/leadgen", app.base), "appSecret": APP_SECRET});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let a = fake(app, "POST", "/leadgen", Some(body)).await;
    (a["leadgenId"].as_str().unwrap().to_string(), a["webhookStatus"].clone())
}

/// Posts `body` as Meta would, signed with `secret` (None: no signature header).
async fn deliver(app: &TestApp, body: &[u8], secret: Option<&str>) -> Answer {
    let mut req = app
        .http
        .post(format!("{}/rastro/meta/leadgen", app.base))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(s) = secret {
        req = req.header("x-hub-signature-256", signature(s, body));
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), text }
}

fn webhook(page: &str, form: &str, leadgen_id: &str) -> Vec<u8> {
    let body = rastrod::meta::fake::leads::webhook_body(page, form, leadgen_id, Some(ad().id), T0 / 1000);
    body.to_string().into_bytes()
}

/// A lead whose webhook the fake drops, a fault armed on its fetch, then its
/// webhook delivered: whoever runs the Page first (its woken actor or a
/// drain) meets the fault.
async fn arm(app: &TestApp, fault: Value) -> String {
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "drop": true})).await;
    let mut fault = fault;
    fault["match"] = json!(format!("/v25.0/{id}"));
    fake(app, "POST", "/faults", Some(fault)).await;
    let a = deliver(app, &webhook(PAGE_LOJA_X, FORM_ORCAMENTO, &id), Some(APP_SECRET)).await.ok();
    assert_eq!(a["received"], 1);
    id
}

async fn drain(app: &TestApp) -> PageRound {
    page_leads::drain(&app.state.actors).await.expect("drain")
}

async fn leads(app: &TestApp) -> Vec<Value> {
    let path = format!("/v1/leads?siteIds={SITE}&from={}&to={}&limit=50", T0 - DAY, T0 + DAY);
    app.get(&path).await.ok().as_array().unwrap().clone()
}

#[derive(diesel::QueryableByName, Debug)]
struct Receipt {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    attempts: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    next_attempt_at: i64,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    last_error: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    lead_id: Option<String>,
}

async fn receipt(app: &TestApp, leadgen_id: &str) -> Receipt {
    let id = leadgen_id.to_string();
    app.state
        .cx
        .read(move |c| {
            let rows: Vec<Receipt> = rastrod::db::sql::RawQuery::new(
                "SELECT status, attempts, next_attempt_at, last_error, lead_id FROM meta_lead_receipts WHERE leadgen_id = ?",
            )
            .text(id)
            .load(c)?;
            Ok(rows.into_iter().next().expect("the receipt"))
        })
        .await
        .unwrap()
}

// rule: LA-01
#[test]
fn meta_leads_without_meta_ads_or_leads_stops_start_up() {
    let load = |pairs: &[(&str, &str)]| {
        let env = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        rastrod::config::Config::load_from(None, &env)
    };
    let on = ("RASTRO_FEDERATION_META_LEADS", "true");
    assert!(load(&[on]).is_ok());
    let err = load(&[on, ("RASTRO_FEDERATION_META_ADS", "false")]).unwrap_err();
    assert!(err.contains("RASTRO_FEDERATION_META_LEADS"), "{err}");
    let err = load(&[on, ("RASTRO_FEDERATION_META_ADS", "false"), ("RASTRO_FEDERATION_LEADS", "false")]).unwrap_err();
    assert!(err.contains("RASTRO_FEDERATION_META_LEADS"), "{err}");
    let err = load(&[("RASTRO_META_WEBHOOK_VERIFY_TOKEN", "short")]).unwrap_err();
    assert!(err.contains("RASTRO_META_WEBHOOK_VERIFY_TOKEN"), "{err}");
}

// rule: LA-01
backend_test!(off_its_functions_and_routes_are_absent, off_builder, |fed| {
    let app = &fed.app;
    let t = granted(&fed).await;
    let manifest = fed.rest(None, "manifest", json!({})).await.ok();
    let names = |k: &str| manifest[k].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    let (caps, functions): (Vec<String>, Vec<String>) = (names("capabilities"), names("functions"));
    assert!(!caps.contains(&"metaLeads".to_string()), "{caps:?}");
    for f in ["metaPages", "linkMetaPage", "metaLinkedPages"] {
        assert!(!functions.contains(&f.to_string()), "{f}");
    }
    fed.rest(Some(&t), "metaPages", json!({})).await.err(400, "FEDERATION_INVALID_SCOPE");
    let link = json!({"siteId": SITE, "pageId": PAGE_LOJA_X});
    fed.rest(Some(&t), "linkMetaPage", link).await.err(400, "FEDERATION_INVALID_SCOPE");
    let check = format!("/rastro/meta/leadgen?hub.mode=subscribe&hub.verify_token={VERIFY}&hub.challenge=42");
    app.get(&check).await.err(404, "NOT_FOUND");
    deliver(app, &webhook(PAGE_LOJA_X, FORM_ORCAMENTO, "1"), Some(APP_SECRET)).await.err(404, "NOT_FOUND");
    assert_eq!(app.count("meta_lead_receipts").await, 0);
});

// rule: LA-01
// rule: LA-02
backend_test!(meta_pages_lists_pages_never_a_token, leads_builder, |fed| {
    let app = &fed.app;
    let t = granted(&fed).await;
    let manifest = fed.rest(None, "manifest", json!({})).await.ok();
    assert!(manifest["capabilities"].as_array().unwrap().contains(&json!("metaLeads")));
    assert!(manifest["functions"].as_array().unwrap().contains(&json!("linkMetaPage")));
    // Without a connection there is nothing to list.
    fed.rest(Some(&t), "metaPages", json!({})).await.err(404, "NOT_FOUND");
    fed.rest(Some(&t), "connectMeta", json!({"accessToken": "tok-agency-1"})).await.ok();
    let a = fed.rest(Some(&t), "metaPages", json!({})).await;
    assert!(!a.text.contains("rastro-fake-page-token"), "no token in the answer: {}", a.text);
    let pages = a.ok()["pages"].as_array().unwrap().clone();
    let page = |id: &str| pages.iter().find(|p| p["pageId"] == id).unwrap().clone();
    assert_eq!(pages.len(), 3);
    assert_eq!(
        page(PAGE_LOJA_X),
        json!({"pageId": PAGE_LOJA_X, "name": "Loja X", "linkedSiteId": null, "canRetrieveLeads": true, "lastError": null})
    );
    assert_eq!(page(PAGE_PET_MANIA)["canRetrieveLeads"], true, "ADVERTISE is enough");
    assert_eq!(page(PAGE_CAFE)["canRetrieveLeads"], false, "ANALYZE alone reads no leads");
    // The Page tokens are stored sealed: neither the token nor its Page id in the clear.
    #[derive(diesel::QueryableByName)]
    struct Sealed {
        #[diesel(sql_type = diesel::sql_types::Text)]
        sealed_token: String,
    }
    let sealed: Vec<Sealed> = app
        .state
        .cx
        .read(|c| Ok(rastrod::db::sql::RawQuery::new("SELECT sealed_token FROM meta_pages").load(c)?))
        .await
        .unwrap();
    assert_eq!(sealed.len(), 3);
    for s in sealed {
        assert!(s.sealed_token.starts_with("v1:") && !s.sealed_token.contains("rastro-fake"), "{}", s.sealed_token);
    }
});

// rule: LA-03
backend_test!(link_meta_page_subscribes_lists_forms_and_links_one_site, leads_builder, |fed| {
    let app = &fed.app;
    let t = granted(&fed).await;
    app.site("outra").await;
    fed.grant(&[SITE, "outra"], &[READ, CONFIGURE]).await;
    fed.rest(Some(&t), "connectMeta", json!({"accessToken": "tok-agency-1"})).await.ok();
    // A Page outside the owner's listing (none read yet) is unknown.
    let link = |site: &str, page: &str| json!({"siteId": site, "pageId": page});
    fed.rest(Some(&t), "linkMetaPage", link(SITE, PAGE_LOJA_X)).await.err(404, "NOT_FOUND");
    fed.rest(Some(&t), "metaPages", json!({})).await.ok();
    fed.rest(Some(&t), "linkMetaPage", link(SITE, PAGE_CAFE)).await.err(400, "INVALID_ARGUMENT");
    let a = fed.rest(Some(&t), "linkMetaPage", link(SITE, PAGE_LOJA_X)).await.ok();
    assert_eq!(a, json!({"pageId": PAGE_LOJA_X, "siteId": SITE, "subscribed": true, "forms": 2}));
    let log = fake(app, "GET", "/requests", None).await;
    let subscribed = log.as_array().unwrap().iter().any(|r| {
        r["method"] == "POST"
            && r["path"].as_str().unwrap().ends_with(&format!("/{PAGE_LOJA_X}/subscribed_apps"))
            && r["query"].as_str().unwrap().contains("subscribed_fields=leadgen")
    });
    assert!(subscribed, "the app subscribed to the Page's leadgen field: {log}");
    assert_eq!(app.count("meta_forms").await, 2);
    // Linking again to the same site is a repeat; another site is CONFLICT.
    fed.rest(Some(&t), "linkMetaPage", link(SITE, PAGE_LOJA_X)).await.ok();
    fed.rest(Some(&t), "linkMetaPage", link("outra", PAGE_LOJA_X)).await.err(409, "CONFLICT");
    let pages = fed.rest(Some(&t), "metaPages", json!({})).await.ok();
    let loja = pages["pages"].as_array().unwrap().iter().find(|p| p["pageId"] == PAGE_LOJA_X).unwrap().clone();
    assert_eq!(loja["linkedSiteId"], SITE);
    let linked = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE, "outra"]})).await.ok();
    assert_eq!(linked[0]["pages"].as_array().unwrap().len(), 1);
    assert_eq!((linked[0]["leadgenReady"].clone(), linked[1]["pages"].clone()), (json!(true), json!([])));
    // At most 20 Pages a site: with 20 linked, a 21st is refused.
    app.state
        .cx
        .write_plain(|c| {
            for i in 0..20 {
                rastrod::db::sql::RawQuery::new(
                    "INSERT INTO meta_page_links (page_id, site_id, owner_key, name, subscribed, linked_at, updated_at) \
                     VALUES (?, 'outra', 'o', 'p', TRUE, 0, 0)",
                )
                .text(format!("9{i:03}"))
                .execute(c)?;
            }
            Ok(())
        })
        .await
        .unwrap();
    fed.rest(Some(&t), "linkMetaPage", link("outra", PAGE_PET_MANIA)).await.err(409, "CONFLICT");
});

// rule: LA-03
backend_test!(without_the_app_secret_or_audience_lead_ads_is_not_ready, unready_builder, |app| {
    app.site(SITE).await;
    let body = webhook(PAGE_LOJA_X, FORM_ORCAMENTO, "1");
    deliver(&app, &body, Some(APP_SECRET)).await.err(503, "UNAVAILABLE");
    let args = json!({"siteId": SITE, "pageId": PAGE_LOJA_X});
    let caller = rastrod::service::api::Caller::trusted("host", "host".into(), &args);
    let f = rastrod::service::api::Function::LinkMetaPage;
    let e = rastrod::service::api::call(&app.state.cx, Some(&caller), f, args).await.unwrap_err();
    assert_eq!(e.code.as_str(), "FEDERATION_NOT_CONFIGURED");
});

// rule: LA-05
backend_test!(the_verification_echoes_the_challenge_for_the_right_token, leads_builder, |fed| {
    let app = &fed.app;
    let check = |token: &str, challenge: &str| {
        format!("/rastro/meta/leadgen?hub.mode=subscribe&hub.verify_token={token}&hub.challenge={challenge}")
    };
    let res = app.http.get(format!("{}{}", app.base, check(VERIFY, "1158201444"))).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    assert_eq!(res.text().await.unwrap(), "1158201444");
    let wrong = app.get(&check("verify-token-0123456780", "1158201444")).await;
    wrong.err(403, "FORBIDDEN");
    assert!(!wrong.text.contains("1158201444") && !wrong.text.contains("verify-token"), "{}", wrong.text);
    app.get(&check(&VERIFY[..VERIFY.len() - 1], "1")).await.err(403, "FORBIDDEN");
    app.get(&format!("/rastro/meta/leadgen?hub.mode=unsubscribe&hub.verify_token={VERIFY}&hub.challenge=1"))
        .await
        .err(403, "FORBIDDEN");
    app.get("/rastro/meta/leadgen").await.err(403, "FORBIDDEN");
});

// rule: LA-06
backend_test!(a_delivery_without_the_right_signature_is_refused_and_stores_nothing, leads_builder, |fed| {
    let app = &fed.app;
    linked(&fed).await;
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "drop": true})).await;
    let body = webhook(PAGE_LOJA_X, FORM_ORCAMENTO, &id);
    for a in [
        deliver(app, &body, None).await,
        deliver(app, &body, Some("another-app-secret")).await,
        // Signed over other bytes: the same JSON with one more space.
        {
            let mut other = body.clone();
            other.push(b' ');
            let req = app
                .http
                .post(format!("{}/rastro/meta/leadgen", app.base))
                .header("x-hub-signature-256", signature(APP_SECRET, &other))
                .body(body.clone());
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let text = res.text().await.unwrap();
            Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), text }
        },
    ] {
        a.err(403, "FORBIDDEN");
        assert!(!a.text.contains(APP_SECRET) && !a.text.contains("700100299001"), "{}", a.text);
    }
    assert_eq!(app.count("meta_lead_receipts").await, 0, "nothing stored");
    // Signed but not Meta's JSON: a clear 400, never a 500.
    deliver(app, b"not json", Some(APP_SECRET)).await.err(400, "INVALID_ARGUMENT");
    deliver(app, b"{\"object\":\"page\"}", Some(APP_SECRET)).await.err(400, "INVALID_ARGUMENT");
    assert_eq!(app.count("meta_lead_receipts").await, 0);
});

// rule: LA-07
backend_test!(each_leadgen_change_is_a_receipt_committed_before_the_200, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let body = webhook(PAGE_LOJA_X, FORM_ORCAMENTO, "700100299002");
    let a = deliver(app, &body, Some(APP_SECRET)).await.ok();
    assert_eq!(a, json!({"received": 1, "duplicates": 0, "ignored": 0}));
    // Committed by the time the 200 came: read straight from the database, nothing drained
    // (the Page's actor may have looked at it since: Meta knows no such lead).
    let r = receipt(app, "700100299002").await;
    assert!(r.status == "pending" || r.last_error.is_some_and(|e| e.starts_with("LEAD_EXPIRED")), "{}", r.status);
    // The same delivery again changes nothing.
    let a = deliver(app, &body, Some(APP_SECRET)).await.ok();
    assert_eq!(a, json!({"received": 0, "duplicates": 1, "ignored": 0}));
    assert_eq!(app.count("meta_lead_receipts").await, 1);
    // A Page linked to no site is counted and dropped.
    let a = deliver(app, &webhook(PAGE_PET_MANIA, "600100200303", "700100299003"), Some(APP_SECRET)).await.ok();
    assert_eq!(a, json!({"received": 0, "duplicates": 0, "ignored": 1}));
    assert_eq!(app.count("meta_lead_receipts").await, 1);
    let metrics = app.get("/metrics").await.text;
    assert!(metrics.contains("rastrod_leadgen_changes_total{outcome=\"ignored\"} 1"), "{metrics}");
    assert!(metrics.contains("rastrod_leadgen_changes_total{outcome=\"duplicate\"} 1"), "{metrics}");
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["pages"][0]["lastWebhookAt"], T0);
});

// rule: LA-11
backend_test!(a_receipt_becomes_one_form_lead, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let (paid, status) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    assert_eq!(status, 200, "the fake's webhook was accepted");
    let (organic, _) = emit(app, FORM_AGENDA, json!({})).await;
    // The Page's actor was woken by each webhook; the drain waits for what it does.
    drain(app).await;
    let list = leads(app).await;
    assert_eq!(list.len(), 2);
    let lead = |id: &str| list.iter().find(|l| l["leadKey"] == format!("fbl_{id}")).unwrap().clone();
    let p = lead(&paid);
    assert_eq!(
        (&p["origin"], &p["channel"], &p["adId"], &p["adsetId"], &p["campaignId"], &p["stage"], &p["firstAt"]),
        (
            &json!("lead_form"),
            &json!("form"),
            &json!(ad().id),
            &json!(ad().adset_id),
            &json!(ad().campaign_id),
            &json!("new"),
            &json!(T0)
        )
    );
    let o = lead(&organic);
    assert_eq!((&o["origin"], &o["channel"], &o["adId"]), (&json!("lead_form_organic"), &json!("form"), &Value::Null));
    assert_eq!(receipt(app, &paid).await.lead_id.as_deref(), p["leadId"].as_str());
    // Exactly once: the webhook again, and another run, make nothing more.
    let a = deliver(app, &webhook(PAGE_LOJA_X, FORM_ORCAMENTO, &paid), Some(APP_SECRET)).await.ok();
    assert_eq!(a["duplicates"], 1);
    assert_eq!(drain(app).await, PageRound::default());
    assert_eq!(leads(app).await.len(), 2);
    // A host lead stays on the WhatsApp channel.
    app.lead(SITE, "wa:1", T0, json!({})).await.ok();
    let host = leads(app).await.into_iter().find(|l| l["leadKey"] == "wa:1").unwrap();
    assert_eq!(host["channel"], "whatsapp");
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!((pages[0]["pages"][0]["pending"].clone(), pages[0]["pages"][0]["failed"].clone()), (json!(0), json!(0)));
});

// rule: LA-11
backend_test!(a_failed_fetch_retries_on_the_schedule_then_makes_the_lead_once, leads_builder, |fed| {
    let app = &fed.app;
    linked(&fed).await;
    let id = arm(app, json!({"kind": "server_error", "times": 2})).await;
    drain(app).await;
    let r = receipt(app, &id).await;
    assert_eq!((r.status.as_str(), r.attempts, r.next_attempt_at), ("pending", 1, T0 + MINUTE));
    assert!(r.last_error.unwrap().starts_with("META_UNAVAILABLE"));
    // Not due yet: nothing is fetched.
    assert!(!drain(app).await.worked());
    app.clock.advance(MINUTE);
    assert_eq!(drain(app).await.retried, 1);
    let r = receipt(app, &id).await;
    assert_eq!((r.attempts, r.next_attempt_at), (2, T0 + MINUTE + 5 * MINUTE), "the second step");
    app.clock.advance(5 * MINUTE);
    assert_eq!(drain(app).await.recorded, 1);
    assert_eq!(receipt(app, &id).await.status, "delivered");
    assert_eq!(leads(app).await.len(), 1);
});

// rule: LA-14
backend_test!(expired_leads_and_refused_page_tokens_end_in_their_codes, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let expired = arm(app, json!({"kind": "lead_expired"})).await;
    drain(app).await;
    let r = receipt(app, &expired).await;
    assert_eq!(r.status, "failed");
    assert!(r.last_error.unwrap().starts_with("LEAD_EXPIRED"));
    // A refused Page token stops the Page: the receipt waits, the Page says why.
    let waiting = arm(app, json!({"kind": "token_refused"})).await;
    assert!(drain(app).await.stopped);
    assert_eq!(receipt(app, &waiting).await.status, "pending");
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    let page = &pages[0]["pages"][0];
    assert!(page["lastError"].as_str().unwrap().starts_with("PAGE_TOKEN_INVALID"), "{page}");
    assert_eq!((page["pending"].clone(), page["failed"].clone()), (json!(1), json!(1)));
    // Stopped, it waits: runs fetch nothing (the fake would answer now).
    assert!(drain(app).await.stopped);
    assert_eq!(receipt(app, &waiting).await.status, "pending");
    // Listing the Pages again (a reconnect) resumes it; a missing permission stops it the same way.
    let path = format!("/v25.0/{waiting}");
    fake(app, "POST", "/faults", Some(json!({"match": path, "kind": "permission"}))).await;
    fed.rest(Some(&t), "metaPages", json!({})).await.ok();
    assert!(drain(app).await.stopped);
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    let page = &pages[0]["pages"][0];
    assert!(page["lastError"].as_str().unwrap().starts_with("LEADS_PERMISSION_MISSING"), "{page}");
    fed.rest(Some(&t), "metaPages", json!({})).await.ok();
    drain(app).await;
    assert_eq!(receipt(app, &waiting).await.status, "delivered");
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["pages"][0]["lastError"], Value::Null);
    assert_eq!(leads(app).await.len(), 1);
});

/// Every log line of this thread (where the actors and the Graph client run), at trace, as text and JSON.
#[derive(Clone, Default)]
pub(crate) struct Captured(pub(crate) Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Every row of every table, as text.
pub(crate) async fn every_row(app: &TestApp) -> String {
    #[derive(diesel::QueryableByName)]
    struct Text {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            let tables: Vec<Text> = diesel::sql_query(
                "SELECT CAST(table_name AS TEXT) AS v FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
            )
            .load(c)?;
            let mut out = String::new();
            for t in tables {
                let rows: Vec<Text> =
                    diesel::sql_query(format!("SELECT CAST(row_to_json(t) AS TEXT) AS v FROM \"{}\" t", t.v))
                        .load(c)?;
                rows.iter().for_each(|r| out.push_str(&r.v));
            }
            Ok(out)
        })
        .await
        .unwrap()
}

// rule: LA-08
backend_test!(a_form_leads_answers_never_reach_storage_logs_metrics_or_answers, leads_builder, |fed| {
    use tracing_subscriber::layer::SubscriberExt;
    // One capture at a time: a thread's subscriber going away re-decides which
    // log lines every thread's subscribers see (tracing's callsite interest).
    let _one = crate::common::LOG_CAPTURE.lock().await;
    let app = &fed.app;
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish()
        .with(tracing_subscriber::fmt::layer().json().with_writer(logs.clone()));
    // With a single dispatcher registered, tracing decides a log line's interest once, by the
    // default of the thread that first reaches it (an HTTP worker's: none). A second one
    // makes it ask every dispatcher, ours included, so every line reaches the capture.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let _guard = tracing::subscriber::set_default(subscriber);
    let t = linked(&fed).await;
    // The pixel sends lead events, so the phone's hash has somewhere to go.
    let pixel = json!({"siteId": SITE, "pixelId": "111222333444", "sendLeadEvent": true});
    fed.rest(Some(&t), "setMetaPixel", pixel).await.ok();
    let canaries = ["Canario Zyxwvut", "canario.zyxwvut@example.com", "5511987654321", "zyxwvut-segredo"];
    let fields = json!([
        {"name": "full_name", "values": [canaries[0]]}, {"name": "email", "values": [canaries[1]]},
        {"name": "phone_number", "values": ["+55 11 98765-4321"]}, {"name": "interesse", "values": [canaries[3]]}]);
    let (id, status) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "fieldData": fields})).await;
    assert_eq!(status, 200);
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "delivered");
    rastrod::actors::pixel_sender::drain(&app.state.actors).await.unwrap();
    // The hash reached the conversion sent to Meta; the phone itself went nowhere.
    let digest: String = {
        use sha2::Digest;
        sha2::Sha256::digest(canaries[2].as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    let sent = fake(app, "GET", "/events", None).await.to_string();
    assert!(sent.contains(&digest), "the lead event carries the phone's hash: {sent}");
    let mut seen = vec![("the events sent to Meta", sent)];
    let mut answers = String::new();
    answers.push_str(&leads(app).await.iter().map(Value::to_string).collect::<String>());
    let lead_id = receipt(app, &id).await.lead_id.unwrap();
    answers.push_str(&app.get(&format!("/v1/sites/{SITE}/leads/{lead_id}/journey")).await.text);
    answers.push_str(&fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.text);
    answers.push_str(
        &fed.rest(Some(&t), "listLeads", json!({"siteIds": [SITE], "from": T0 - DAY, "to": T0 + DAY})).await.text,
    );
    seen.push(("the answers", answers));
    seen.push(("/metrics", app.get("/metrics").await.text));
    app.state.cx.truncate_wal().await.unwrap();
    let stored = match app.db.sqlite_path() {
        Some(path) => {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.extend(std::fs::read(path.with_extension("db-wal")).unwrap_or_default());
            String::from_utf8_lossy(&bytes).into_owned()
        }
        None => every_row(app).await,
    };
    seen.push(("the database", stored));
    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    // The Page's actors run on this thread: the capture saw the run that held the answers,
    // and the Graph client's lines (on every thread the daemon uses, only this one is captured).
    assert!(logged.contains("lead ads: a Page's run") && logged.contains("recorded=1"), "the capture saw the run");
    assert!(logged.contains("\"recorded\":1"), "and in JSON");
    assert!(logged.contains("graph answer") && logged.contains("form_lead"), "and the lead's fetch");
    seen.push(("the logs", logged));
    for (place, text) in &seen {
        for canary in canaries {
            assert!(!text.contains(canary), "{canary} reached {place}");
        }
        assert!(!text.contains("Zyxwvut") && !text.contains("zyxwvut"), "a canary reached {place}");
    }
});

/// The `time_created` value of each `/{form}/leads` read the fake saw, in order.
async fn reconcile_reads(app: &TestApp, form: &str) -> Vec<i64> {
    let log = fake(app, "GET", "/requests", None).await;
    log.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"].as_str().unwrap().ends_with(&format!("/{form}/leads")))
        .map(|r| {
            let url = reqwest::Url::parse(&format!("http://fake/?{}", r["query"].as_str().unwrap())).unwrap();
            let filtering = url.query_pairs().find(|(k, _)| k == "filtering").unwrap().1.into_owned();
            let f: Value = serde_json::from_str(&filtering).unwrap();
            assert_eq!((&f[0]["field"], &f[0]["operator"]), (&json!("time_created"), &json!("GREATER_THAN")));
            f[0]["value"].as_i64().unwrap()
        })
        .collect()
}

#[derive(diesel::QueryableByName)]
struct Watermark {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
    watermark: Option<i64>,
}

async fn watermark(app: &TestApp, form: &str) -> Option<i64> {
    let form = form.to_string();
    app.state
        .cx
        .read(move |c| {
            let rows: Vec<Watermark> =
                rastrod::db::sql::RawQuery::new("SELECT watermark FROM meta_forms WHERE form_id = ?")
                    .text(form)
                    .load(c)?;
            Ok(rows[0].watermark)
        })
        .await
        .unwrap()
}

// rule: LA-09
// rule: LA-11
backend_test!(reconciliation_finds_a_lead_whose_webhook_never_came, leads_builder, |fed| {
    let app = &fed.app;
    linked(&fed).await;
    // A token that outlives the test's quarter of an hour.
    let claims =
        crate::federation::with(crate::federation::claims(&[READ, CONFIGURE]), json!({"exp": T0 / 1000 + 7200}));
    let t = fed.key.sign(&claims);
    // Linking reads each form at once, 90 days back; with nothing found the watermark is the read's start.
    assert_eq!(reconcile_reads(app, FORM_ORCAMENTO).await, vec![(T0 - 90 * DAY) / 1000]);
    assert_eq!(watermark(app, FORM_ORCAMENTO).await, Some(T0));
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["pages"][0]["lastReconciledAt"], T0);
    // A lead whose webhook Meta never sent, and one whose webhook came.
    let created = T0 / 1000 + 60;
    let (lost, status) = emit(app, FORM_ORCAMENTO, json!({"drop": true, "createdTime": created})).await;
    assert_eq!(status, Value::Null, "no webhook");
    let (webhooked, _) = emit(app, FORM_ORCAMENTO, json!({"createdTime": created})).await;
    drain(app).await;
    assert_eq!(app.count("meta_lead_receipts").await, 1, "not due yet: only the webhook's receipt");
    // A failed read moves nothing; the next run reads again from the same watermark.
    app.clock.advance(15 * MINUTE);
    let path = format!("/{FORM_ORCAMENTO}/leads");
    fake(app, "POST", "/faults", Some(json!({"match": path, "kind": "server_error"}))).await;
    drain(app).await;
    assert_eq!(app.count("meta_lead_receipts").await, 1);
    assert_eq!(watermark(app, FORM_ORCAMENTO).await, Some(T0));
    drain(app).await;
    // From the watermark minus 10 minutes: the lost lead is found and made; the other is not made twice.
    let reads = reconcile_reads(app, FORM_ORCAMENTO).await;
    assert_eq!(reads[reads.len() - 2..], [(T0 - 10 * MINUTE) / 1000, (T0 - 10 * MINUTE) / 1000]);
    let r = receipt(app, &lost).await;
    assert_eq!(r.status, "delivered");
    assert_eq!(app.count("meta_lead_receipts").await, 2);
    let keys: Vec<String> = leads(app).await.iter().map(|l| l["leadKey"].as_str().unwrap().to_string()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.contains(&format!("fbl_{lost}")) && keys.contains(&format!("fbl_{webhooked}")));
    assert_eq!(watermark(app, FORM_ORCAMENTO).await, Some(T0 + 15 * MINUTE), "moved with the read committed");
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["pages"][0]["lastReconciledAt"], T0 + 15 * MINUTE);
});

/// The DELETE calls on the Page's `subscribed_apps` edge in the fake's log.
async fn unsubscribe_calls(app: &TestApp) -> usize {
    let log = fake(app, "GET", "/requests", None).await;
    log.as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["method"] == "DELETE" && r["path"].as_str().unwrap().ends_with(&format!("/{PAGE_LOJA_X}/subscribed_apps"))
        })
        .count()
}

// rule: LA-04
backend_test!(unlinking_a_page_unsubscribes_stops_it_and_keeps_its_leads, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let (made, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    assert_eq!(leads(app).await.len(), 1);
    // A receipt still waiting: its fetch failed once and retries in a minute.
    let waiting = arm(app, json!({"kind": "server_error", "times": 5})).await;
    drain(app).await;
    assert_eq!(receipt(app, &waiting).await.status, "pending");
    // Meta fails the unsubscription: recorded in the answer, the unlink stands.
    fake(app, "POST", "/faults", Some(json!({"match": "/subscribed_apps", "kind": "server_error"}))).await;
    let unlink = json!({"siteId": SITE, "pageId": PAGE_LOJA_X});
    let a = fed.rest(Some(&t), "unlinkMetaPage", unlink.clone()).await.ok();
    assert_eq!(a, json!({"unlinked": true, "unsubscribed": false}));
    assert_eq!(unsubscribe_calls(app).await, 1, "the app asked Meta to stop");
    // The lead made stays; the waiting receipt ends PAGE_UNLINKED; the Page is no longer listed.
    let list = leads(app).await;
    assert_eq!((list.len(), list[0]["leadKey"].as_str()), (1, Some(format!("fbl_{made}").as_str())));
    let r = receipt(app, &waiting).await;
    assert_eq!(r.status, "failed");
    assert!(r.last_error.unwrap().starts_with("PAGE_UNLINKED"));
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["pages"], json!([]));
    // Reconciliation stops: a reconciliation interval later, no form of the Page is read.
    let before = reconcile_reads(app, FORM_ORCAMENTO).await.len();
    app.clock.advance(16 * MINUTE);
    drain(app).await;
    assert_eq!(reconcile_reads(app, FORM_ORCAMENTO).await.len(), before);
    assert!(!drain(app).await.worked());
    // Its webhooks are now an unlinked Page's: counted and dropped.
    let a = deliver(app, &webhook(PAGE_LOJA_X, FORM_ORCAMENTO, "700100299555"), Some(APP_SECRET)).await.ok();
    assert_eq!(a["ignored"], 1);
    // The first token expired with the clock: one issued now.
    let now = (T0 + 16 * MINUTE) / 1000;
    let t = fed.key.sign(&crate::federation::with(
        crate::federation::claims(&[READ, CONFIGURE]),
        json!({"iat": now, "exp": now + 600}),
    ));
    // Unlinking again changes nothing; linked again and unlinked with Meta answering, it says so.
    let a = fed.rest(Some(&t), "unlinkMetaPage", unlink.clone()).await.ok();
    assert_eq!(a, json!({"unlinked": false, "unsubscribed": false}));
    fed.rest(Some(&t), "linkMetaPage", unlink.clone()).await.ok();
    let a = fed.rest(Some(&t), "unlinkMetaPage", unlink.clone()).await.ok();
    assert_eq!(a, json!({"unlinked": true, "unsubscribed": true}));
    assert_eq!(unsubscribe_calls(app).await, 2);
    // Only a writer unlinks.
    let reader = fed
        .key
        .sign(&crate::federation::with(crate::federation::claims(&[READ]), json!({"iat": now, "exp": now + 600})));
    fed.rest(Some(&reader), "unlinkMetaPage", unlink).await.err(403, "FEDERATION_CONFIGURE_FORBIDDEN");
});

/// A writer's token issued at the manual clock's now (tokens expire as it moves).
fn token_now(fed: &Fed) -> String {
    let now = rastrod::clock::Clock::now_ms(&*fed.app.clock) / 1000;
    let claims = crate::federation::claims(&[READ, CONFIGURE]);
    fed.key.sign(&crate::federation::with(claims, json!({"iat": now, "exp": now + 600})))
}

/// `metaStatus`' row of the test's site.
async fn status_of(fed: &Fed, t: &str) -> Value {
    let a = fed.rest(Some(t), "metaStatus", json!({"siteIds": [SITE]})).await.ok();
    a.as_array().and_then(|rows| rows.iter().find(|r| r["siteId"] == SITE)).cloned().expect("the site's status")
}

// rule: LA-20
backend_test!(meta_status_tells_the_lead_ads_state_as_it_is, leads_builder, |fed| {
    let app = &fed.app;
    let t = granted(&fed).await;
    // On, before any Page: zeros, never a webhook or a reconciliation.
    let before = status_of(&fed, &t).await;
    assert_eq!(
        before["leadAds"],
        json!({"pages": 0, "pending": 0, "failed": 0, "lastWebhookAt": null, "lastReconciledAt": null})
    );
    link_loja_x(&fed, &t).await;
    set_handler(app).await.ok();
    // A receipt whose fetch keeps failing (pending), one Meta no longer serves (failed).
    let waiting = arm(app, json!({"kind": "server_error", "times": 1})).await;
    let gone = arm(app, json!({"kind": "lead_expired"})).await;
    drain(app).await;
    assert_eq!(receipt(app, &waiting).await.status, "pending");
    assert_eq!(receipt(app, &gone).await.status, "failed");
    let s = status_of(&fed, &t).await;
    assert_eq!(s["leadAds"]["pages"], 1);
    assert_eq!(s["leadAds"]["pending"], 1);
    assert_eq!(s["leadAds"]["failed"], 1);
    assert_eq!(s["leadAds"]["lastWebhookAt"], rastrod::clock::Clock::now_ms(&*app.clock));
    assert_eq!(s["leadAds"]["lastReconciledAt"], T0, "the reconciliation that ran on linking");
    // The same counts as metaLinkedPages tells per Page.
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    let page = &pages[0]["pages"][0];
    assert_eq!((page["pending"].clone(), page["failed"].clone()), (json!(1), json!(1)));
    assert_eq!(page["lastWebhookAt"], s["leadAds"]["lastWebhookAt"]);
    // The retry succeeds after its wait: nothing pending; a reconciliation later moves its time.
    app.clock.advance(16 * MINUTE);
    drain(app).await;
    let s = status_of(&fed, &token_now(&fed)).await;
    assert_eq!((s["leadAds"]["pending"].clone(), s["leadAds"]["failed"].clone()), (json!(0), json!(1)));
    assert_eq!(s["leadAds"]["lastReconciledAt"], T0 + 16 * MINUTE);
});

// rule: LA-20
backend_test!(meta_status_has_no_lead_ads_while_the_capability_is_off, off_builder, |fed| {
    let t = granted(&fed).await;
    let s = status_of(&fed, &t).await;
    assert!(s.get("leadAds").is_none(), "{s}");
    assert!(s.get("pixel").is_some(), "the rest of the status stays");
});

/// The Graph requests that fetched the lead `id`.
async fn lead_fetches(app: &TestApp, id: &str) -> usize {
    let log = fake(app, "GET", "/requests", None).await;
    log.as_array().unwrap().iter().filter(|r| r["method"] == "GET" && r["path"] == format!("/v25.0/{id}")).count()
}

// rule: LA-10
backend_test!(without_a_handler_nothing_is_fetched_and_setting_one_delivers_the_waiting_leads, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked_without_handler(&fed).await;
    let (id, status) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    assert_eq!(status, 200, "the receipt is taken without a handler");
    let round = drain(app).await;
    assert!(round.held, "{round:?}");
    assert_eq!(lead_fetches(app, &id).await, 0, "nothing is fetched from Meta");
    assert_eq!(receipt(app, &id).await.status, "pending");
    assert!(leads(app).await.is_empty());
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["handlerReady"], false);
    let page = &pages[0]["pages"][0];
    assert!(page["lastError"].as_str().is_some_and(|e| e.starts_with("HANDLER_MISSING")), "{page}");
    assert_eq!(page["pending"], 1);
    // Still nothing on later runs; the reconciliation goes on meanwhile.
    app.clock.advance(16 * MINUTE);
    drain(app).await;
    assert_eq!(lead_fetches(app, &id).await, 0);
    assert_eq!(reconcile_reads(app, FORM_ORCAMENTO).await.len(), 2);
    // Setting the handler delivers what waited.
    assert_eq!(set_handler(app).await.ok(), json!({"handlerReady": true}));
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "delivered");
    assert_eq!(leads(app).await.len(), 1);
    assert_eq!(handed(app).await.len(), 1);
    let pages = fed.rest(Some(&token_now(&fed)), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["handlerReady"], true);
    assert_eq!(pages[0]["pages"][0]["lastError"], Value::Null);
    // Removed, the next lead waits again.
    let path = format!("/v1/sites/{SITE}/meta/form-lead-handler");
    assert_eq!(app.delete(&path).await.ok(), json!({"handlerReady": false}));
    let (next, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    assert_eq!((receipt(app, &next).await.status.as_str(), lead_fetches(app, &next).await), ("pending", 0));
});

// rule: LA-10
backend_test!(a_handler_must_be_https_or_loopback_with_a_long_secret, leads_builder, |fed| {
    let app = &fed.app;
    granted(&fed).await;
    let path = format!("/v1/sites/{SITE}/meta/form-lead-handler");
    let long = "x".repeat(32);
    app.put(&path, json!({"url": "http://crm.example.com/leads", "secret": long})).await.err(400, "INVALID_ARGUMENT");
    app.put(&path, json!({"url": "ftp://127.0.0.1/x", "secret": long})).await.err(400, "INVALID_ARGUMENT");
    app.put(&path, json!({"url": "https://crm.example.com/leads", "secret": "short"}))
        .await
        .err(400, "INVALID_ARGUMENT");
    app.put("/v1/sites/nope/meta/form-lead-handler", json!({"url": "https://crm.example.com/l", "secret": long}))
        .await
        .err(404, "NOT_FOUND");
    let a = app.put(&path, json!({"url": "https://crm.example.com/leads", "secret": long})).await;
    assert!(!a.text.contains(&long), "the secret is never answered");
    assert_eq!(a.ok(), json!({"handlerReady": true}));
});

// rule: LA-01
backend_test!(the_handler_route_is_absent_while_meta_leads_is_off, off_builder, |fed| {
    let app = &fed.app;
    granted(&fed).await;
    let body = json!({"url": "https://crm.example.com/leads", "secret": "x".repeat(32)});
    app.put(&format!("/v1/sites/{SITE}/meta/form-lead-handler"), body).await.err(404, "NOT_FOUND");
    app.post("/v1/meta/owners/agency/lead-ads/metaLinkedPages", json!({"siteIds": [SITE]})).await.err(404, "NOT_FOUND");
});

// rule: LA-12
backend_test!(the_handler_receives_the_signed_answers_and_its_refusal_is_visible, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let fields = json!([{"name": "full_name", "values": ["Maria Souza"]}, {"name": "email", "values": ["m@example.com"]},
        {"name": "phone_number", "values": ["+55 11 91234-5678"]}, {"name": "interesse", "values": ["Sofá"]}]);
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "fieldData": fields})).await;
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "delivered");
    let got = handed(app).await;
    assert_eq!(got.len(), 1);
    let d = &got[0];
    // Signed over the exact bytes sent with the site's secret; the delivery id is the receipt's.
    let bytes = serde_json::to_vec(&d["body"]).unwrap();
    assert_eq!(d["signature"].as_str().unwrap(), signature(HANDLER_SECRET, &bytes));
    assert!(d["delivery"].as_str().is_some_and(|s| !s.is_empty()));
    let b = &d["body"];
    let lead = &leads(app).await[0];
    assert_eq!(b["leadgenId"], id.as_str());
    assert_eq!(b["leadId"], lead["leadId"]);
    assert_eq!((b["siteId"].as_str(), b["pageId"].as_str()), (Some(SITE), Some(PAGE_LOJA_X)));
    assert_eq!((b["formId"].as_str(), b["adId"].as_str()), (Some(FORM_ORCAMENTO), Some(ad().id)));
    assert_eq!(b["isOrganic"], false);
    assert_eq!(b["fields"], json!({"fullName": "Maria Souza", "phone": "+55 11 91234-5678", "email": "m@example.com"}));
    assert!(
        b["answers"]
            .as_array()
            .unwrap()
            .contains(&json!({"key": "interesse", "label": "Qual seu interesse?", "value": "Sofá"}))
    );
    // A refusal (4xx) fails at once, visibly; the lead stays made.
    fake(app, "POST", "/handler/respond", Some(json!({"statuses": [422]}))).await;
    let (refused, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    let r = receipt(app, &refused).await;
    assert_eq!(r.status, "failed");
    assert!(r.last_error.unwrap().starts_with("HANDLER_REFUSED"));
    assert!(r.lead_id.is_some(), "the lead is made before its delivery");
    let pages = fed.rest(Some(&t), "metaLinkedPages", json!({"siteIds": [SITE]})).await.ok();
    assert_eq!(pages[0]["pages"][0]["failed"], 1);
});

// rule: LA-12
backend_test!(an_unavailable_handler_is_retried_on_the_conversions_schedule_then_fails, leads_builder, |fed| {
    let app = &fed.app;
    linked(&fed).await;
    // 503, 429, then 500 again: RASTRO_CAPI_RETRY_STEPS is 1m,10m, so the third failure is the last.
    fake(app, "POST", "/handler/respond", Some(json!({"statuses": [503, 429, 500, 503, 200]}))).await;
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    let r = receipt(app, &id).await;
    assert_eq!((r.status.as_str(), r.next_attempt_at), ("pending", T0 + MINUTE));
    assert!(r.last_error.unwrap().starts_with("HANDLER_UNAVAILABLE"));
    assert!(!drain(app).await.worked(), "not due yet");
    app.clock.advance(MINUTE);
    drain(app).await;
    assert_eq!(receipt(app, &id).await.next_attempt_at, T0 + MINUTE + 10 * MINUTE);
    app.clock.advance(10 * MINUTE);
    drain(app).await;
    let r = receipt(app, &id).await;
    assert_eq!(r.status, "failed");
    assert!(r.last_error.unwrap().starts_with("HANDLER_UNAVAILABLE"));
    // Three deliveries, each of the lead fetched again; one lead.
    assert_eq!(handed(app).await.len(), 3);
    assert_eq!(lead_fetches(app, &id).await, 3);
    assert_eq!(leads(app).await.len(), 1);
    // An unreachable handler is the same: retried, not refused.
    let body = json!({"url": "http://127.0.0.1:9/handler", "secret": HANDLER_SECRET});
    app.put(&format!("/v1/sites/{SITE}/meta/form-lead-handler"), body).await.ok();
    let (away, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    let r = receipt(app, &away).await;
    assert_eq!(r.status, "pending");
    assert!(r.last_error.unwrap().starts_with("HANDLER_UNAVAILABLE"));
});

// rule: LA-13
backend_test!(returning_a_form_lead_delivers_it_again_without_a_second_lead, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    fake(app, "POST", "/handler/respond", Some(json!({"statuses": [400]}))).await;
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "failed");
    let args = json!({"siteId": SITE, "leadgenId": id});
    assert_eq!(fed.rest(Some(&t), "returnMetaFormLead", args.clone()).await.ok(), json!({"requeued": true}));
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "delivered");
    // Delivered leads can be returned too (the host lost it): a third delivery, still one lead.
    let a = app.post("/v1/meta/owners/agency/lead-ads/returnMetaFormLead", args.clone()).await.ok();
    assert_eq!(a, json!({"requeued": true}));
    drain(app).await;
    let got = handed(app).await;
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|d| d["body"]["leadgenId"] == id.as_str()));
    assert_eq!(leads(app).await.len(), 1);
    // Unknown ids and readers are refused.
    let unknown = json!({"siteId": SITE, "leadgenId": "999999"});
    fed.rest(Some(&t), "returnMetaFormLead", unknown).await.err(404, "NOT_FOUND");
    let reader = fed.token(&[READ]);
    fed.rest(Some(&reader), "returnMetaFormLead", args).await.err(403, "FEDERATION_CONFIGURE_FORBIDDEN");
});

// rule: LA-17
backend_test!(form_rules_are_checked_simulated_and_applied_to_real_leads, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let cols =
        json!({"columns": [{"key": "orcamento", "name": "Orçamento pedido"}, {"key": "visita", "name": "Visita"}]});
    app.put(&format!("/v1/sites/{SITE}/pipeline"), cols).await.ok();
    let forms = fed.rest(Some(&t), "metaForms", json!({"siteId": SITE})).await.ok();
    let list = forms["forms"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{forms}");
    let orc = list.iter().find(|f| f["formId"] == FORM_ORCAMENTO).unwrap();
    assert_eq!((orc["rules"].clone(), orc["leads30d"].clone()), (Value::Null, json!(0)));
    assert!(
        orc["questions"]
            .as_array()
            .unwrap()
            .contains(&json!({"key": "interesse", "label": "Qual seu interesse?", "type": "CUSTOM"}))
    );
    // Refused: an undeclared column, an unknown question, a contact field in the label, a stage of the board's end.
    let set = |rules: Value| json!({"siteId": SITE, "formId": FORM_ORCAMENTO, "rules": rules});
    for bad in [
        json!({"column": "nao-existe"}),
        json!({"qualifyWhen": [{"key": "orcamento_valor", "anyOf": ["alto"]}]}),
        json!({"label": "{cidade}"}),
        json!({"label": "{full_name}"}),
        json!({"label": "{interesse"}),
        json!({"stage": "won"}),
        json!({"qualifyWhen": [{"key": "interesse", "anyOf": []}]}),
    ] {
        fed.rest(Some(&t), "setMetaFormRules", set(bad)).await.err(400, "INVALID_ARGUMENT");
    }
    let unknown = json!({"siteId": SITE, "formId": "600999", "rules": null});
    fed.rest(Some(&t), "setMetaFormRules", unknown).await.err(404, "NOT_FOUND");
    let rules = json!({"column": "orcamento", "label": "Interesse: {interesse}",
        "qualifyWhen": [{"key": "interesse", "anyOf": ["Sofá", "Mesa"]}]});
    assert_eq!(fed.rest(Some(&t), "setMetaFormRules", set(rules.clone())).await.ok()["rules"], rules);
    let stored = fed.rest(Some(&t), "metaFormRules", json!({"siteId": SITE})).await.ok();
    let stored: Vec<&Value> = stored.as_array().unwrap().iter().filter(|f| f["rules"] != Value::Null).collect();
    assert_eq!((stored.len(), stored[0]["rules"].clone()), (1, rules.clone()));
    // The simulation: the stored rules, or rules being edited; nothing is written.
    let sofa = json!([{"key": "interesse", "value": "sofá"}, {"key": "full_name", "value": "Ana"}]);
    let sim = json!({"siteId": SITE, "formId": FORM_ORCAMENTO, "answers": sofa});
    let predicted = fed.rest(Some(&t), "simulateMetaFormRules", sim.clone()).await.ok();
    assert_eq!(
        predicted,
        json!({"column": "orcamento", "stage": "qualified", "label": "Interesse: sofá", "qualified": true})
    );
    let mut trial = sim.clone();
    trial["rules"] = json!({"column": "visita"});
    let other = fed.rest(Some(&t), "simulateMetaFormRules", trial).await.ok();
    assert_eq!(other, json!({"column": "visita", "stage": "new", "label": null, "qualified": false}));
    let mut bad_trial = sim.clone();
    bad_trial["rules"] = json!({"column": "nao-existe"});
    fed.rest(Some(&t), "simulateMetaFormRules", bad_trial).await.err(400, "INVALID_ARGUMENT");
    assert_eq!(
        fed.rest(Some(&t), "metaFormRules", json!({"siteId": SITE, "formId": FORM_ORCAMENTO})).await.ok()[0]["rules"],
        rules
    );
    assert!(leads(app).await.is_empty());
    // A real lead with those answers becomes what the simulation said.
    let fields = json!([{"name": "interesse", "values": ["sofá"]}, {"name": "full_name", "values": ["Ana"]}]);
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "fieldData": fields})).await;
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "delivered");
    let lead = leads(app).await[0].clone();
    assert_eq!(lead["column"], predicted["column"], "{lead}");
    assert_eq!(lead["stage"], predicted["stage"]);
    assert_eq!(lead["label"], predicted["label"]);
    // Without a match: new, in the column, the label from its own answer.
    let fields = json!([{"name": "interesse", "values": ["Cama"]}]);
    let (plain, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "fieldData": fields})).await;
    drain(app).await;
    let row = leads(app).await.into_iter().find(|l| l["leadKey"] == format!("fbl_{plain}")).unwrap();
    assert_eq!(
        (row["stage"].as_str(), row["column"].as_str(), row["label"].as_str()),
        (Some("new"), Some("orcamento"), Some("Interesse: Cama"))
    );
    // The forms count their leads; reading them again from Meta keeps the rules.
    let forms = fed.rest(Some(&t), "metaForms", json!({"siteId": SITE})).await.ok();
    let orc = forms["forms"].as_array().unwrap().iter().find(|f| f["formId"] == FORM_ORCAMENTO).unwrap().clone();
    assert_eq!((orc["leads30d"].clone(), orc["rules"].clone()), (json!(2), rules.clone()));
    assert_eq!(fed.rest(Some(&t), "refreshMetaForms", json!({"siteId": SITE})).await.ok(), json!({"forms": 2}));
    let forms = fed.rest(Some(&t), "metaForms", json!({"siteId": SITE})).await.ok();
    assert!(forms["forms"].as_array().unwrap().iter().any(|f| f["rules"] == rules));
    // Only writers set rules; clearing them is null.
    let reader = fed.token(&[READ]);
    fed.rest(Some(&reader), "setMetaFormRules", set(Value::Null)).await.err(403, "FEDERATION_CONFIGURE_FORBIDDEN");
    assert_eq!(fed.rest(Some(&t), "setMetaFormRules", set(Value::Null)).await.ok()["rules"], Value::Null);
});

/// Loja X's ad account linked to the site and its spend synced from the fake.
async fn spend_synced(fed: &Fed, t: &str) {
    let a = fed.rest(Some(t), "linkMetaAdAccount", json!({"siteId": SITE, "adAccountId": LOJA_X})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    for _ in 0..2 {
        let sync = fed.app.state.actors.sync.get().expect("the sync supervisor runs");
        sync.send(rastrod::actors::supervisor::RunDue).await.unwrap().unwrap();
    }
}

/// The spend leadsReport's tree gives `ad_id` over the range.
fn ad_spend(report: &Value, ad_id: &str) -> Option<i64> {
    report["campaigns"]
        .as_array()?
        .iter()
        .flat_map(|c| c["adsets"].as_array().into_iter().flatten())
        .find_map(|s| s["ads"].as_array()?.iter().find(|a| a["adId"] == ad_id).and_then(|a| a["spendCents"].as_i64()))
}

// rule: LA-18
backend_test!(form_leads_count_as_paid_with_their_ads_spend_in_every_lead_report, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    spend_synced(&fed, &t).await;
    let other = rastrod::meta::fake::sample_ads().iter().find(|a| a.account == LOJA_X && a.id != ad().id).unwrap();
    // A paid form lead, an organic one on the other form, a click-to-WhatsApp lead of another ad.
    let (paid, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    let (organic, _) = emit(app, FORM_AGENDA, json!({"organic": true})).await;
    drain(app).await;
    assert_eq!(receipt(app, &organic).await.status, "delivered");
    app.lead(SITE, "wa:1", T0, json!({"adId": other.id})).await.ok();
    let won = json!({"stage": "won", "revenueCents": 50_000, "eventId": "won-1", "occurredAt": T0 + MINUTE});
    app.stage(SITE, &format!("fbl_{paid}"), won).await.ok();
    let (from, to) = (T0 - 20 * DAY, T0 + DAY);
    let range = json!({"siteIds": [SITE], "from": from, "to": to});
    let report = fed.rest(Some(&token_now(&fed)), "leadsReport", range.clone()).await.ok();
    let origin = |o: &str| report["origins"].as_array().unwrap().iter().find(|r| r["origin"] == o).cloned().unwrap();
    let (form_ad, wa_ad) = (ad_spend(&report, ad().id), ad_spend(&report, other.id));
    let total = report["totals"]["spendCents"].as_i64().expect("spend synced");
    assert!(form_ad.is_some_and(|s| s > 0), "the form's ad spent in the range: {report}");
    // lead_form carries its ad's spend; ctwa_ad the rest; the organic form origin none.
    assert_eq!(origin("lead_form")["leads"], 1);
    assert_eq!(origin("lead_form")["spendCents"].as_i64(), form_ad);
    assert_eq!(origin("ctwa_ad")["spendCents"].as_i64(), Some(total - form_ad.unwrap()));
    assert!(wa_ad.is_some());
    assert_eq!(origin("lead_form_organic")["spendCents"], Value::Null);
    // The site's paid counters cover both paid origins.
    let site = &report["bySite"][0];
    assert_eq!((site["paid"]["leads"].clone(), site["paid"]["won"].clone()), (json!(2), json!(1)));
    assert_eq!(site["paid"]["revenueCents"], 50_000);
    // leadsDaily's `paid`: both paid origins with the spend; `lead_form` alone too.
    let mut daily = range.clone();
    daily["origin"] = json!("paid");
    let days = fed.rest(Some(&token_now(&fed)), "leadsDaily", daily.clone()).await.ok();
    let sum = |days: &Value, k: &str| days.as_array().unwrap().iter().map(|d| d[k].as_i64().unwrap_or(0)).sum::<i64>();
    assert_eq!(sum(&days, "leads"), 2);
    assert_eq!(sum(&days, "spendCents"), total);
    // Each paid origin alone carries its own ads' spend, as leadsReport splits it.
    daily["origin"] = json!("lead_form");
    let form_days = fed.rest(Some(&token_now(&fed)), "leadsDaily", daily.clone()).await.ok();
    assert_eq!((sum(&form_days, "leads"), sum(&form_days, "spendCents")), (1, form_ad.unwrap()));
    daily["origin"] = json!("ctwa_ad");
    let wa_days = fed.rest(Some(&token_now(&fed)), "leadsDaily", daily.clone()).await.ok();
    assert_eq!((sum(&wa_days, "leads"), sum(&wa_days, "spendCents")), (1, total - form_ad.unwrap()));
    daily["origin"] = json!("lead_form_organic");
    let days = fed.rest(Some(&token_now(&fed)), "leadsDaily", daily).await.ok();
    assert_eq!(sum(&days, "leads"), 1);
    assert!(days.as_array().unwrap().iter().all(|d| d["spendCents"].is_null()));
    // metaFormsReport: per form by cohort, with its ads' spend and the ratios of what it bought.
    let args = json!({"siteId": SITE, "from": from, "to": to});
    let forms = fed.rest(Some(&token_now(&fed)), "metaFormsReport", args.clone()).await.ok();
    let form = |id: &str| forms["forms"].as_array().unwrap().iter().find(|f| f["formId"] == id).cloned().unwrap();
    let orc = form(FORM_ORCAMENTO);
    assert_eq!((orc["leads"].clone(), orc["paidLeads"].clone(), orc["won"].clone()), (json!(1), json!(1), json!(1)));
    assert_eq!((orc["revenueCents"].clone(), orc["spendCents"].as_i64()), (json!(50_000), form_ad));
    assert_eq!(orc["costPerLeadCents"].as_i64(), form_ad);
    let roas = orc["returnOnSpend"].as_f64().unwrap();
    assert!((roas - 50_000.0 / form_ad.unwrap() as f64).abs() < 1e-9);
    let agenda = form(FORM_AGENDA);
    assert_eq!((agenda["leads"].clone(), agenda["paidLeads"].clone()), (json!(1), json!(0)));
    assert_eq!((agenda["spendCents"].clone(), agenda["costPerLeadCents"].clone()), (json!(0), Value::Null));
    // The cohort: a range before the leads counts none; a range over a year is refused.
    let early = json!({"siteId": SITE, "from": from - 30 * DAY, "to": from - DAY});
    let none = fed.rest(Some(&token_now(&fed)), "metaFormsReport", early).await.ok();
    assert!(none["forms"].as_array().unwrap().iter().all(|f| f["leads"] == 0));
    let long = json!({"siteId": SITE, "from": to - 400 * DAY, "to": to});
    fed.rest(Some(&token_now(&fed)), "metaFormsReport", long).await.err(400, "INVALID_ARGUMENT");
});

// rule: LA-18
backend_test!(form_reports_have_null_spend_without_a_synced_account, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    let forms =
        fed.rest(Some(&t), "metaFormsReport", json!({"siteId": SITE, "from": T0 - DAY, "to": T0 + DAY})).await.ok();
    let orc = forms["forms"].as_array().unwrap().iter().find(|f| f["formId"] == FORM_ORCAMENTO).cloned().unwrap();
    assert_eq!((orc["leads"].clone(), orc["spendCents"].clone()), (json!(1), Value::Null));
    assert_eq!(orc["costPerLeadCents"], Value::Null);
});

/// Conversions may be 30 days old: the 7-day cap of Conversion Leads is the form lead's own.
fn long_window_builder(backend: Backend) -> FedBuilder {
    leads_builder(backend).env("RASTRO_CAPI_MAX_AGE", "30d")
}

/// The events the fake's pixel accepted for the leadgen id, oldest first.
async fn conversion_leads(app: &TestApp, leadgen_id: &str) -> Vec<Value> {
    rastrod::actors::pixel_sender::drain(&app.state.actors).await.unwrap();
    let events = fake(app, "GET", "/events", None).await;
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].clone())
        .filter(|e| e["user_data"]["lead_id"] == leadgen_id)
        .collect()
}

// rule: LA-19
backend_test!(a_form_leads_board_moves_go_to_the_pixel_as_conversion_leads, long_window_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    let cols =
        json!({"columns": [{"key": "orcamento", "name": "Orçamento pedido"}, {"key": "visita", "name": "Visita"}]});
    app.put(&format!("/v1/sites/{SITE}/pipeline"), cols).await.ok();
    let map = json!({"columns": {"orcamento": "QualifiedLead", "visita": "Schedule"}, "sendLeadEvent": true});
    app.put(&format!("/v1/sites/{SITE}/event-map"), map).await.ok();
    fed.rest(Some(&t), "setMetaPixel", json!({"siteId": SITE, "pixelId": "111222333444", "sendLeadEvent": true}))
        .await
        .ok();
    let rules = json!({"siteId": SITE, "formId": FORM_ORCAMENTO, "rules": {"column": "orcamento"}});
    fed.rest(Some(&t), "setMetaFormRules", rules).await.ok();
    // A lead without a phone: Meta matches it by its lead id, so it goes all the same.
    let (id, _) =
        emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "fieldData": [{"name": "interesse", "values": ["x"]}]}))
            .await;
    drain(app).await;
    let key = format!("fbl_{id}");
    // A visit booked, then the sale (a few minutes on: a future time is sent as now).
    app.clock.advance(5 * MINUTE);
    app.stage(SITE, &key, json!({"column": "visita", "eventId": "visita", "occurredAt": T0 + 30_000})).await.ok();
    let won = json!({"stage": "won", "revenueCents": 12_990, "eventId": "won", "occurredAt": T0 + MINUTE});
    app.stage(SITE, &key, won).await.ok();
    let sent = conversion_leads(app, &id).await;
    let names: Vec<&str> = sent.iter().map(|e| e["event_name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 4, "{sent:?}");
    for name in ["Lead", "Orçamento pedido", "Purchase", "Visita"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for e in &sent {
        assert_eq!(e["action_source"], "system_generated", "{e}");
        assert_eq!(e["custom_data"]["event_source"], "crm");
        assert_eq!(e["custom_data"]["lead_event_source"], "rastrod");
        assert!(e["user_data"].get("ph").is_none(), "no phone was given");
        assert!(e["event_time"].as_i64().unwrap() >= T0 / 1000, "never before the lead: {e}");
    }
    let purchase = sent.iter().find(|e| e["event_name"] == "Purchase").unwrap();
    assert_eq!(
        (purchase["custom_data"]["value"].as_f64(), purchase["custom_data"]["currency"].as_str()),
        (Some(129.9), Some("BRL"))
    );
    let visita = sent.iter().find(|e| e["event_name"] == "Visita").unwrap();
    assert_eq!(visita["event_time"], (T0 + 30_000) / 1000, "the move's own time");
    // Deduplicated by eventId: moving into a column again sends nothing more.
    app.stage(SITE, &key, json!({"column": "orcamento", "eventId": "again", "occurredAt": T0 + 2 * MINUTE})).await.ok();
    app.stage(SITE, &key, json!({"column": "visita", "eventId": "again-2", "occurredAt": T0 + 3 * MINUTE})).await.ok();
    assert_eq!(conversion_leads(app, &id).await.len(), 4);
    let deliveries = fake(app, "GET", "/deliveries", None).await;
    for e in &sent {
        assert_eq!(deliveries[e["event_id"].as_str().unwrap()], 1, "each event once");
    }
    // A move more than 7 days old is not sent (expired), though conversations' events may be 30 days old.
    let (late, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    drain(app).await;
    app.clock.advance(8 * DAY - 5 * MINUTE);
    let late_key = format!("fbl_{late}");
    app.stage(SITE, &late_key, json!({"column": "visita", "eventId": "late", "occurredAt": T0 + MINUTE})).await.ok();
    app.lead(SITE, "wa:late", T0 + MINUTE, json!({"meta": {"ph": ["a".repeat(64)]}})).await.ok();
    let wa_move = json!({"column": "visita", "eventId": "wa-late", "occurredAt": T0 + 2 * MINUTE,
        "meta": {"ph": ["a".repeat(64)]}});
    app.stage(SITE, "wa:late", wa_move).await.ok();
    let late_sent = conversion_leads(app, &late).await;
    assert!(late_sent.iter().all(|e| e["event_name"] != "Visita"), "{late_sent:?}");
    let all = fake(app, "GET", "/events", None).await;
    let wa_visits = all.as_array().unwrap().iter().filter(|e| e["event"]["event_name"] == "Schedule").count();
    assert_eq!(wa_visits, 1, "the conversation's 8-day-old move is sent as Schedule");
    let convs = fed.rest(Some(&token_now(&fed)), "metaConversions", json!({"siteId": SITE})).await;
    assert!(convs.text.contains("EVENT_TOO_OLD"), "the expired move is visible: {}", convs.text);
});

/// Posts `body` unsigned with `Authorization: Bearer <token>`, as a control plane forwards Meta's POST.
async fn forward(app: &TestApp, body: &[u8], token: &str) -> Answer {
    let res = app
        .http
        .post(format!("{}/rastro/meta/leadgen", app.base))
        .header("content-type", "application/json")
        .bearer_auth(token)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), text }
}

// rule: LA-06
backend_test!(a_forwarded_delivery_counts_with_a_federation_token_carrying_meta_leadgen, leads_builder, |fed| {
    let app = &fed.app;
    linked(&fed).await;
    let (id, _) = emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "drop": true})).await;
    let body = webhook(PAGE_LOJA_X, FORM_ORCAMENTO, &id);
    // Tokens that do not admit it: no meta:leadgen, another audience, a key the JWKS does not hold.
    forward(app, &body, &fed.token(&[READ, CONFIGURE])).await.err(403, "FORBIDDEN");
    let elsewhere = crate::federation::with(
        crate::federation::claims(&[READ, "meta:leadgen"]),
        json!({"aud": "https://other.example.com/api"}),
    );
    forward(app, &body, &fed.key.sign(&elsewhere)).await.err(403, "FORBIDDEN");
    forward(app, &body, "not-a-jwt").await.err(403, "FORBIDDEN");
    assert_eq!(app.count("meta_lead_receipts").await, 0, "nothing stored");
    // The control plane's token: the receipt is stored and the lead made like a signed delivery's.
    let a = forward(app, &body, &fed.token(&[READ, "meta:leadgen"])).await.ok();
    assert_eq!(a, json!({"received": 1, "duplicates": 0, "ignored": 0}));
    drain(app).await;
    assert_eq!(receipt(app, &id).await.status, "delivered");
});

// The demo (`rastrod demo`) links Loja X's Page with its forms and a handler: its form leads,
// found by the first reconciliation, land on the board with the rules applied and reach the handler.
backend_test!(the_demo_shows_form_leads_beside_the_whatsapp_leads, leads_builder, |fed| {
    let app = &fed.app;
    rastrod::demo::seed(&app.state.cx, T0).await.unwrap();
    let token = rastrod::service::meta::connection::SetMetaConnection {
        access_token: rastrod::service::meta::connection::SecretString(rastrod::config::Secret::new("tok-agency-1")),
    };
    rastrod::service::meta::connection::set_connection(&app.state.cx, rastrod::demo::DEMO_OWNER, token).await.unwrap();
    let made = rastrod::demo::lead_ads::seed(&app.state, rastrod::demo::DEMO_OWNER, T0).await.unwrap();
    assert_eq!(made, 12);
    drain(app).await;
    let path = format!("/v1/leads?siteIds={SITE}&from={}&to={}&limit=100", T0 - 7 * DAY, T0 + DAY);
    let list = app.get(&path).await.ok();
    let forms: Vec<&Value> = list.as_array().unwrap().iter().filter(|l| l["channel"] == "form").collect();
    assert_eq!(forms.len(), 12, "every form lead made");
    assert!(list.as_array().unwrap().iter().any(|l| l["channel"] == "whatsapp"), "beside the WhatsApp leads");
    assert!(forms.iter().any(|l| l["origin"] == "lead_form_organic"));
    assert!(forms.iter().any(|l| l["stage"] == "qualified" && l["label"] == "Orçamento: Sofá"), "the rules applied");
    assert_eq!(handed(app).await.len(), 12, "each delivered to the handler");
});

// rule: REP-05
backend_test!(meta_forms_report_compares_each_form_with_the_earlier_period, leads_builder, |fed| {
    let app = &fed.app;
    let t = linked(&fed).await;
    // Two leads in the range, one in the period before it.
    emit(app, FORM_ORCAMENTO, json!({"adId": ad().id})).await;
    emit(app, FORM_ORCAMENTO, json!({"adId": ad().id, "createdTime": (T0 - DAY) / 1000})).await;
    emit(app, FORM_ORCAMENTO, json!({"organic": true, "createdTime": (T0 - 4 * DAY) / 1000})).await;
    drain(app).await;
    let (from, to) = (T0 - 2 * DAY, T0 + DAY - 1);
    let args = json!({"siteId": SITE, "from": from, "to": to, "compare": "previousPeriod"});
    let a = fed.rest(Some(&t), "metaFormsReport", args).await.ok();
    assert_eq!(a["comparison"], json!({"from": from - 3 * DAY, "to": from - 1}));
    let orc = a["forms"].as_array().unwrap().iter().find(|f| f["formId"] == FORM_ORCAMENTO).cloned().unwrap();
    assert_eq!((orc["leads"].clone(), orc["paidLeads"].clone()), (json!(2), json!(2)));
    assert_eq!((orc["comparison"]["leads"].clone(), orc["comparison"]["paidLeads"].clone()), (json!(1), json!(0)));
    assert_eq!(orc["change"]["leads"].as_f64(), Some(1.0), "2 against 1");
    assert_eq!(orc["change"]["paidLeads"], Value::Null, "nothing to compare against");
    // Without compare the answer has no comparison at all.
    let plain = fed.rest(Some(&t), "metaFormsReport", json!({"siteId": SITE, "from": from, "to": to})).await.ok();
    assert!(plain.get("comparison").is_none() && plain["forms"][0].get("change").is_none());
});
