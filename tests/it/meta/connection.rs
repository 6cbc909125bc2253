//! The Meta connection over the host API, against the fake Graph API the daemon
//! starts itself (`RASTRO_META_FAKE=true`): a pasted token and the login code,
//! the listing of ad accounts and pixels, links and pixels with their ownership
//! rules, the event map's owner, sealed tokens under a key that may change, and
//! a canary run of the real binary that looks for secrets everywhere.

use std::collections::BTreeSet;
use std::sync::Arc;

use rastrod::clock::Clock;
use rastrod::config::{Config, Secret};
use rastrod::crypto::{Identity, SecretsKey};
use rastrod::error::Code;
use rastrod::meta::fake::sample::{CAFE_BROOKLYN, LOJA_X, PET_MANIA, SAMPLE_USER_ID, SAMPLE_USER_NAME};
use rastrod::meta::fake::{self, NEVER_FOR_CUSTOMERS, SamplePixel, sample_accounts, sample_pixels};
use rastrod::service::meta::connection;
use rastrod::store::meta::{self as store, ConnectionRow, LinkRow, PixelRow};
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

const OWNER: &str = "agency:1";
const OWNER2: &str = "agency:2";
const OWNER3: &str = "agency:3";
const REDIRECT: &str = "https://app.example.com/meta/retorno";

/// The fake Graph API, but no secrets key.
fn keyless_builder(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend).env("RASTRO_META_FAKE", "true")
}

const CONN11_APP_SECRET: &str = "conn11-app-secret-9f8e7d";

/// The fake with an app id and secret of the test's own (the login uses them).
fn login_app_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).env("RASTRO_META_APP_ID", "1234567890").env("RASTRO_META_APP_SECRET", CONN11_APP_SECRET)
}

fn fake_url(app: &TestApp) -> String {
    app.state.fake.as_ref().expect("RASTRO_META_FAKE starts the fake").base_url.clone()
}

async fn control(base: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let http = reqwest::Client::new();
    let url = format!("{base}/__fake{path}");
    let req = if method == "GET" { http.get(url) } else { http.post(url).json(&body.unwrap_or(json!({}))) };
    let res = req.send().await.unwrap();
    assert!(res.status().is_success(), "fake control {path}: {}", res.status());
    res.json().await.unwrap()
}

async fn fault(app: &TestApp, fault: Value) {
    control(&fake_url(app), "POST", "/faults", Some(fault)).await;
}

async fn reset_fake(app: &TestApp) {
    control(&fake_url(app), "POST", "/reset", None).await;
}

async fn requests_at(base: &str) -> Vec<Value> {
    control(base, "GET", "/requests", None).await.as_array().unwrap().clone()
}

async fn graph_requests(app: &TestApp) -> Vec<Value> {
    requests_at(&fake_url(app)).await
}

/// "METHOD path" of each request the fake saw.
fn calls(log: &[Value]) -> Vec<String> {
    log.iter().map(|r| format!("{} {}", r["method"].as_str().unwrap(), r["path"].as_str().unwrap())).collect()
}

async fn connect(app: &TestApp, owner: &str, token: &str) -> Answer {
    app.put(&format!("/v1/meta/owners/{owner}/connection"), json!({ "accessToken": token })).await
}

async fn login(app: &TestApp, owner: &str, code: &str, redirect: &str) -> Answer {
    app.post(&format!("/v1/meta/owners/{owner}/connection/code"), json!({ "code": code, "redirectUri": redirect }))
        .await
}

async fn refresh(app: &TestApp, owner: &str) -> Answer {
    app.request("POST", &format!("/v1/meta/owners/{owner}/connection/refresh"), None).await
}

async fn view(app: &TestApp, owner: &str) -> Value {
    app.get(&format!("/v1/meta/owners/{owner}/connection")).await.ok()
}

async fn link(app: &TestApp, site: &str, owner: &str, account: &str) -> Answer {
    app.post(&format!("/v1/sites/{site}/ad-accounts"), json!({ "ownerKey": owner, "adAccountId": account })).await
}

async fn set_pixel(app: &TestApp, site: &str, body: Value) -> Answer {
    app.put(&format!("/v1/sites/{site}/pixel"), body).await
}

async fn db_link(app: &TestApp, account: &str) -> Option<LinkRow> {
    let account = account.to_string();
    app.state.cx.read(move |c| Ok(store::link(c, &account)?)).await.unwrap()
}

async fn db_pixel(app: &TestApp, site: &str) -> Option<PixelRow> {
    let site = site.to_string();
    app.state.cx.read(move |c| Ok(store::pixel(c, &site)?)).await.unwrap()
}

async fn db_connection(app: &TestApp, owner: &str) -> Option<ConnectionRow> {
    let owner = owner.to_string();
    app.state.cx.read(move |c| Ok(store::connection(c, &owner)?)).await.unwrap()
}

/// The owner's stored token, opened with the app's key.
async fn stored_token(app: &TestApp, owner: &str) -> String {
    let row = db_connection(app, owner).await.expect("a stored connection");
    let key = app.state.cx.secrets.as_ref().expect("a secrets key");
    key.open(&row.sealed_token, Identity::Connection(owner)).expect("opens").expose().to_string()
}

fn all_accounts() -> Vec<&'static str> {
    sample_accounts().iter().map(|a| a.id).collect()
}

/// The listing the fake should give for `accounts`, in the fake's order, none linked.
fn expected_accounts(accounts: &[&str]) -> Value {
    sample_accounts()
        .iter()
        .filter(|a| accounts.contains(&a.id))
        .map(|a| {
            json!({"adAccountId": a.id, "name": a.name, "currency": a.currency, "timezone": a.timezone,
                "linkedSiteId": null})
        })
        .collect()
}

/// The pixels the accounts own, by pixel id.
fn expected_pixels(accounts: &[&str]) -> Value {
    let mut pixels: Vec<&SamplePixel> = sample_pixels().iter().filter(|p| accounts.contains(&p.account)).collect();
    pixels.sort_by_key(|p| p.id);
    pixels.iter().map(|p| json!({"pixelId": p.id, "name": p.name})).collect()
}

fn pixel_of(account: &str) -> &'static SamplePixel {
    sample_pixels().iter().find(|p| p.account == account).expect("the account owns a pixel")
}

fn ids(listing: &Value, list: &str, field: &str) -> Vec<String> {
    listing[list].as_array().unwrap().iter().map(|a| a[field].as_str().unwrap().to_string()).collect()
}

/// A token the fake grants only `accounts`.
fn token_for(accounts: &[&str]) -> String {
    format!("tok-{}.rastro-fake-accounts:{}", accounts.len(), accounts.join("+"))
}

fn filler(site: &str, owner: &str, i: usize) -> LinkRow {
    LinkRow {
        ad_account_id: format!("act_9{i:09}"),
        site_id: site.to_string(),
        owner_key: owner.to_string(),
        name: format!("Filler {i}"),
        currency: "BRL".into(),
        timezone: "America/Sao_Paulo".into(),
        stopped_reason: None,
        last_error: None,
        linked_at: T0,
        updated_at: T0,
    }
}

async fn insert_fillers(app: &TestApp, site: &'static str, owner: &'static str, range: std::ops::Range<usize>) {
    app.state
        .cx
        .write_plain(move |c| {
            for i in range {
                store::insert_link(c, &filler(site, owner, i))?;
            }
            Ok(())
        })
        .await
        .unwrap();
}

// rule: CONN-01, SEC-01
backend_test!(set_meta_connection_lists_the_sample_and_seals_the_token, fake_meta_builder, |app| {
    let token = "EAAB-conn01-pasted-5d1e";
    let listing = connect(&app, OWNER, token).await.ok();
    assert_eq!(listing["adAccounts"], expected_accounts(&all_accounts()));
    assert_eq!(listing["pixels"], expected_pixels(&[LOJA_X, PET_MANIA]));
    assert!(!listing.to_string().contains(token));

    // GET /me, GET /me/adaccounts, then the pixels of every listed account.
    let mut expected = vec!["GET /v25.0/me".to_string(), "GET /v25.0/me/adaccounts".into()];
    expected.extend(all_accounts().iter().map(|a| format!("GET /v25.0/{a}/adspixels")));
    assert_eq!(calls(&graph_requests(&app).await), expected);

    // Stored sealed: the column never holds the token, and it opens under the key and this owner only.
    let row = db_connection(&app, OWNER).await.unwrap();
    assert!(!row.sealed_token.contains(token) && !row.sealed_token.contains("conn01"));
    assert_eq!(app.count("meta_connections WHERE sealed_token LIKE '%conn01%'").await, 0);
    let key = app.state.cx.secrets.clone().unwrap();
    assert_eq!(key.open(&row.sealed_token, Identity::Connection(OWNER)).unwrap().expose(), token);
    assert!(key.open(&row.sealed_token, Identity::Connection(OWNER2)).is_err(), "bound to its row");
    assert_eq!(row.source, "token");

    // The same token pasted again is sealed with a new nonce.
    connect(&app, OWNER, token).await.ok();
    let again = db_connection(&app, OWNER).await.unwrap();
    assert_ne!(again.sealed_token, row.sealed_token);
    assert_eq!(stored_token(&app, OWNER).await, token);
    assert_eq!(app.count("meta_connections").await, 1);
    assert_eq!(app.count("meta_listed_accounts").await, sample_accounts().len() as i64);
});

// rule: CONN-02
backend_test!(without_a_secrets_key_nothing_is_stored, keyless_builder, |app| {
    app.site("s1").await;
    let a = connect(&app, OWNER, "a-good-token-02").await;
    a.err(503, "SECRETS_KEY_MISSING");
    assert!(!a.text.contains("a-good-token-02"));
    login(&app, OWNER, "code-02", REDIRECT).await.err(503, "SECRETS_KEY_MISSING");
    set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "accessToken": "own-token-02"}))
        .await
        .err(503, "SECRETS_KEY_MISSING");
    for table in ["meta_connections", "meta_listed_accounts", "meta_listed_pixels", "site_pixels"] {
        assert_eq!(app.count(table).await, 0, "{table}");
    }
    assert_eq!(view(&app, OWNER).await, Value::Null);
});

// rule: CONN-02
backend_test!(a_token_meta_refuses_stores_nothing, fake_meta_builder, |app| {
    let refused = connect(&app, OWNER, "token-invalid-02").await;
    refused.err(400, "META_TOKEN_INVALID");
    assert!(!refused.text.contains("token-invalid-02"));
    for table in ["meta_connections", "meta_listed_accounts", "meta_listed_pixels"] {
        assert_eq!(app.count(table).await, 0, "{table}");
    }
    assert_eq!(view(&app, OWNER).await, Value::Null);

    // An owner already connected keeps its token and listing when a new one is refused.
    let first = connect(&app, OWNER2, "good-token-02").await.ok();
    let before = db_connection(&app, OWNER2).await.unwrap();
    connect(&app, OWNER2, "now-invalid-02").await.err(400, "META_TOKEN_INVALID");
    let after = db_connection(&app, OWNER2).await.unwrap();
    assert_eq!((after.sealed_token, after.token_version), (before.sealed_token, before.token_version));
    assert_eq!(stored_token(&app, OWNER2).await, "good-token-02");
    let v = view(&app, OWNER2).await;
    assert_eq!(v["status"], "connected");
    assert_eq!((v["adAccounts"].clone(), v["pixels"].clone()), (first["adAccounts"].clone(), first["pixels"].clone()));
});

// rule: CONN-03, LINK-07
backend_test!(a_new_token_resumes_what_a_dead_one_stopped, fake_meta_builder, |app| {
    for s in ["s1", "s2"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "first-token-03").await.ok();
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    link(&app, "s2", OWNER, PET_MANIA).await.ok();
    set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": OWNER})).await.ok();

    // Meta refuses the stored token on the next refresh.
    fault(&app, json!({"match": "/me", "kind": "token_refused"})).await;
    app.clock.advance(DAY);
    let refused_at = app.clock.now_ms();
    refresh(&app, OWNER).await.err(400, "META_TOKEN_INVALID");
    for account in [LOJA_X, PET_MANIA] {
        let l = db_link(&app, account).await.unwrap();
        assert_eq!(l.stopped_reason.as_deref(), Some("META_TOKEN_INVALID"), "{account}");
        assert_eq!(l.last_error.as_deref(), Some("META_TOKEN_INVALID"), "{account}");
    }
    assert_eq!(db_pixel(&app, "s1").await.unwrap().stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
    let v = view(&app, OWNER).await;
    assert_eq!((v["status"].clone(), v["invalidSince"].clone()), (json!("invalid"), json!(refused_at)));
    assert_eq!(v["lastError"], "META_TOKEN_INVALID");
    // A second refusal keeps the first moment.
    fault(&app, json!({"match": "/me", "kind": "token_refused"})).await;
    app.clock.advance(DAY);
    refresh(&app, OWNER).await.err(400, "META_TOKEN_INVALID");
    assert_eq!(view(&app, OWNER).await["invalidSince"], refused_at);

    // A new token that lists only Loja X: its link and pixel resume, Pet Mania's waits for a grant.
    app.clock.advance(DAY);
    connect(&app, OWNER, &token_for(&[LOJA_X])).await.ok();
    let loja = db_link(&app, LOJA_X).await.unwrap();
    assert_eq!((loja.stopped_reason, loja.last_error), (None, None));
    let pet = db_link(&app, PET_MANIA).await.unwrap();
    assert_eq!(pet.stopped_reason.as_deref(), Some("AD_ACCOUNT_NOT_GRANTED"));
    let p = db_pixel(&app, "s1").await.unwrap();
    assert_eq!((p.stopped_reason, p.last_error), (None, None));
    let v = view(&app, OWNER).await;
    assert_eq!(
        (v["status"].clone(), v["invalidSince"].clone(), v["lastError"].clone()),
        (json!("connected"), Value::Null, Value::Null)
    );

    // The full token resumes Pet Mania too.
    connect(&app, OWNER, "third-token-03").await.ok();
    let pet = db_link(&app, PET_MANIA).await.unwrap();
    assert_eq!((pet.stopped_reason, pet.last_error), (None, None));

    // A refusal of a token that is no longer the stored one stops nothing.
    let old_version = db_connection(&app, OWNER).await.unwrap().token_version;
    connect(&app, OWNER, "fourth-token-03").await.ok();
    let now = app.clock.now_ms();
    let marked = app.state.cx.write_plain(move |c| connection::mark_refused(c, OWNER, old_version, now)).await.unwrap();
    assert!(!marked);
    assert_eq!(view(&app, OWNER).await["status"], "connected");
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().stopped_reason, None);
});

// rule: CONN-03, LINK-07
backend_test!(a_connection_never_reads_refused_while_its_links_feed, fake_meta_builder, |app| {
    app.site("s1").await;
    connect(&app, OWNER, "token-03b").await.ok();
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": OWNER})).await.ok();
    fault(&app, json!({"match": "/me", "kind": "token_refused"})).await;
    refresh(&app, OWNER).await.err(400, "META_TOKEN_INVALID");
    // Meta answers the stored token again on the next refresh: whatever the daemon makes of it,
    // the connection's status and its links and pixels must agree.
    app.clock.advance(DAY);
    refresh(&app, OWNER).await.ok();
    let v = view(&app, OWNER).await;
    let l = db_link(&app, LOJA_X).await.unwrap();
    let p = db_pixel(&app, "s1").await.unwrap();
    if v["status"] == "invalid" {
        assert_eq!(l.stopped_reason.as_deref(), Some("META_TOKEN_INVALID"), "{v}");
        assert_eq!(p.stopped_reason.as_deref(), Some("META_TOKEN_INVALID"), "{v}");
    } else {
        assert_eq!(
            (v["status"].clone(), v["invalidSince"].clone(), v["lastError"].clone()),
            (json!("connected"), Value::Null, Value::Null)
        );
        assert_eq!((l.stopped_reason, p.stopped_reason), (None, None));
    }
});

// rule: LINK-08, CONN-03
backend_test!(a_link_taken_over_feeds_with_its_new_owners_connection, fake_meta_builder, |app| {
    app.site("s1").await;
    connect(&app, OWNER, "token-08a").await.ok();
    connect(&app, OWNER2, "token-08b").await.ok();
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    // OWNER's token dies: its link stops.
    fault(&app, json!({"match": "/me", "kind": "token_refused"})).await;
    refresh(&app, OWNER).await.err(400, "META_TOKEN_INVALID");
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
    // The host hands the link to OWNER2, whose token Meta accepts: it feeds again.
    let taken = link(&app, "s1", OWNER2, LOJA_X).await.ok();
    assert_eq!((taken["ownerKey"].clone(), taken["lastError"].clone()), (json!(OWNER2), Value::Null));
    let l = db_link(&app, LOJA_X).await.unwrap();
    assert_eq!((l.owner_key.as_str(), l.stopped_reason, l.last_error), (OWNER2, None, None));
    // And back to OWNER, whose connection is still refused: it stops again.
    let back = link(&app, "s1", OWNER, LOJA_X).await.ok();
    assert_eq!(back["lastError"], "META_TOKEN_INVALID");
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
});

// rule: CONN-04
backend_test!(connect_with_code_checks_the_redirect_the_code_and_the_app, fake_meta_builder, |app| {
    for bad in ["http://app.example.com/meta/retorno", "http://localhost.evil.com/x", "ftp://app.example.com/x", "x"] {
        login(&app, OWNER, "code-04", bad).await.err(400, "INVALID_ARGUMENT");
    }
    assert_eq!(app.count("meta_connections").await, 0);
    assert!(graph_requests(&app).await.is_empty(), "a bad redirect calls nobody");
    login(&app, OWNER, "code-04", "http://localhost:5173/meta/retorno").await.ok();
    login(&app, OWNER, "code-04b", REDIRECT).await.ok();

    // A code Meta refuses.
    let refused = login(&app, OWNER2, "code-invalid-04", REDIRECT).await;
    refused.err(400, "META_TOKEN_INVALID");
    assert!(!refused.text.contains("code-invalid-04"));
    assert_eq!(view(&app, OWNER2).await, Value::Null);

    // Without the fake and without the app env: the login is unavailable, a pasted token still connects.
    let graph = fake::start("127.0.0.1:0").await.unwrap();
    let plain = TestApp::builder(app.backend())
        .env("RASTRO_META_GRAPH_URL", &graph.base_url)
        .env("RASTRO_SECRETS_KEY", &rastrod::ids::secrets_key().unwrap())
        .start()
        .await
        .unwrap();
    login(&plain, OWNER, "code-04", REDIRECT).await.err(503, "META_LOGIN_UNAVAILABLE");
    assert_eq!(plain.count("meta_connections").await, 0);
    assert!(requests_at(&graph.base_url).await.is_empty(), "nothing reached Meta");
    connect(&plain, OWNER, "pasted-04").await.ok();

    // Meta refusing the app's secret is the same.
    let refused_app = TestApp::builder(app.backend())
        .env("RASTRO_META_GRAPH_URL", &graph.base_url)
        .env("RASTRO_SECRETS_KEY", &rastrod::ids::secrets_key().unwrap())
        .env("RASTRO_META_APP_ID", "1234567890")
        .env("RASTRO_META_APP_SECRET", "invalid-secret")
        .start()
        .await
        .unwrap();
    let a = login(&refused_app, OWNER, "code-04", REDIRECT).await;
    a.err(503, "META_LOGIN_UNAVAILABLE");
    assert!(!a.text.contains("invalid-secret"));
    assert_eq!(refused_app.count("meta_connections").await, 0);
    // The exchange went out as a POST with a form body and nothing in its URL.
    let exchanges: Vec<Value> =
        requests_at(&graph.base_url).await.into_iter().filter(|r| r["path"] == "/v25.0/oauth/access_token").collect();
    assert_eq!(exchanges.len(), 1, "{exchanges:?}");
    assert_eq!((exchanges[0]["method"].as_str(), exchanges[0]["query"].as_str()), (Some("POST"), Some("")));
    assert!(exchanges[0]["bodyBytes"].as_u64().unwrap() > 0);
    plain.finish().await;
    refused_app.finish().await;
    graph.stop().await;
});

// rule: CONN-05
backend_test!(login_expiry_and_the_long_lived_trade, fake_meta_builder, |app| {
    // A user token (2 hours) is traded at once for a 60-day one.
    let now = app.clock.now_ms();
    let listing = login(&app, OWNER, "code-user-token-05", REDIRECT).await.ok();
    assert_eq!(ids(&listing, "adAccounts", "adAccountId"), all_accounts());
    let v = view(&app, OWNER).await;
    assert_eq!(v["expiresAt"], now + 60 * DAY);
    assert_eq!((v["expiringSoon"].clone(), v["lastError"].clone()), (json!(false), Value::Null));
    let log = calls(&graph_requests(&app).await);
    assert_eq!(log.iter().filter(|c| *c == "POST /v25.0/oauth/access_token").count(), 2, "{log:?}");
    assert!(!log.iter().any(|c| c.contains("debug_token")), "expires_in said it: {log:?}");
    assert!(stored_token(&app, OWNER).await.starts_with("fake-long-user-token-"), "the traded token is kept");

    // A system user token: the exchange says nothing, debug_token says it never expires.
    reset_fake(&app).await;
    login(&app, OWNER2, "code-system-05", REDIRECT).await.ok();
    let v = view(&app, OWNER2).await;
    assert_eq!((v["expiresAt"].clone(), v["expiringSoon"].clone()), (Value::Null, json!(false)));
    assert_eq!(v["lastError"], Value::Null);
    let log = calls(&graph_requests(&app).await);
    assert_eq!(log[..2], ["POST /v25.0/oauth/access_token".to_string(), "GET /v25.0/debug_token".into()]);
    assert_eq!(log.iter().filter(|c| c.contains("oauth")).count(), 1, "no trade: {log:?}");

    // The trade fails (the second exchange): the login holds with the short-lived token.
    reset_fake(&app).await;
    fault(&app, json!({"match": "/oauth/access_token", "kind": "server_error", "skip": 1})).await;
    app.clock.advance(DAY);
    let now = app.clock.now_ms();
    login(&app, OWNER3, "code-user-token-05b", REDIRECT).await.ok();
    let v = view(&app, OWNER3).await;
    assert_eq!(v["lastError"], "TOKEN_EXCHANGE_FAILED");
    assert_eq!(v["expiringSoon"], true);
    assert_eq!(v["expiresAt"], now + fake::login::SHORT_LIVED_SECS * 1000);
    assert_eq!(v["status"], "connected");
    assert!(stored_token(&app, OWNER3).await.starts_with("fake-user-token-"), "the token that came is kept");
    let log = calls(&graph_requests(&app).await);
    assert_eq!(log.iter().filter(|c| *c == "POST /v25.0/oauth/access_token").count(), 2, "{log:?}");
});

// rule: CONN-06
backend_test!(a_login_records_who_and_when, fake_meta_builder, |app| {
    app.clock.advance(3 * DAY + 1234);
    let at = app.clock.now_ms();
    let code = "code-06-once";
    login(&app, OWNER, code, REDIRECT).await.ok();
    let v = view(&app, OWNER).await;
    assert_eq!(v["authorizedBy"], json!({ "name": SAMPLE_USER_NAME }));
    assert_eq!(v["authorizedAt"], at);
    let row = db_connection(&app, OWNER).await.unwrap();
    assert_eq!(row.authorized_by_id.as_deref(), Some(SAMPLE_USER_ID));
    assert_eq!(row.source, "login");
    // The code is never stored: no column holds it, and the sealed token is not it.
    let columns = format!("{row:?}");
    assert!(!columns.contains(code), "{columns}");
    assert!(!stored_token(&app, OWNER).await.contains(code));

    // A pasted token for the same owner: nobody authorized it through a login.
    app.clock.advance(DAY);
    connect(&app, OWNER, "pasted-06").await.ok();
    let v = view(&app, OWNER).await;
    assert_eq!(v["authorizedBy"], Value::Null);
    assert_eq!(v["authorizedAt"], app.clock.now_ms());
    assert_eq!(v["expiresAt"], Value::Null);
});

// rule: CONN-07
backend_test!(a_refresh_keeps_known_pixels_when_meta_throttles, fake_meta_builder, |app| {
    let first = connect(&app, OWNER, "token-07").await.ok();
    assert_eq!(refresh(&app, OWNER).await.ok(), first);

    // Meta throttles every pixel read: the pixels already known stay.
    fault(&app, json!({"match": "/adspixels", "kind": "throttle", "times": 100})).await;
    let throttled = refresh(&app, OWNER).await.ok();
    assert_eq!(throttled, first);
    reset_fake(&app).await;
    // A server error on one account: its pixels stay too.
    fault(&app, json!({"match": format!("/{LOJA_X}/adspixels"), "kind": "server_error", "times": 100})).await;
    assert_eq!(refresh(&app, OWNER).await.ok(), first);
    reset_fake(&app).await;

    // An account whose pixels the token cannot read is skipped.
    fault(&app, json!({"match": format!("/{LOJA_X}/adspixels"), "kind": "permission"})).await;
    let skipped = refresh(&app, OWNER).await.ok();
    assert_eq!(skipped["adAccounts"], first["adAccounts"]);
    assert_eq!(skipped["pixels"], expected_pixels(&[PET_MANIA]));
    // The next refresh reads them again.
    assert_eq!(refresh(&app, OWNER).await.ok()["pixels"], expected_pixels(&[LOJA_X, PET_MANIA]));

    // Throttled on the accounts themselves: RATE_LIMITED, and the listing is kept.
    fault(&app, json!({"match": "/me/adaccounts", "kind": "throttle"})).await;
    refresh(&app, OWNER).await.err(429, "RATE_LIMITED");
    let v = view(&app, OWNER).await;
    assert_eq!((v["adAccounts"].clone(), v["pixels"].clone()), (first["adAccounts"].clone(), first["pixels"].clone()));
    assert_eq!(v["status"], "connected");

    refresh(&app, OWNER2).await.err(404, "NOT_FOUND");
});

// rule: CONN-08
backend_test!(a_token_listing_fewer_accounts_stops_what_it_lacks, fake_meta_builder, |app| {
    for s in ["s1", "s2"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "full-token-08").await.ok();
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    link(&app, "s2", OWNER, PET_MANIA).await.ok();
    set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": OWNER})).await.ok();
    set_pixel(&app, "s2", json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": OWNER})).await.ok();

    // Reconnect with a token that lists Loja X alone.
    let fewer = connect(&app, OWNER, &token_for(&[LOJA_X])).await.ok();
    let mut expected = expected_accounts(&[LOJA_X]);
    expected[0]["linkedSiteId"] = json!("s1");
    assert_eq!(fewer["adAccounts"], expected);
    assert_eq!(fewer["pixels"], expected_pixels(&[LOJA_X]));
    assert_eq!(db_link(&app, PET_MANIA).await.unwrap().last_error.as_deref(), Some("AD_ACCOUNT_NOT_GRANTED"));
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().last_error, None);
    let pet = db_pixel(&app, "s2").await.unwrap();
    assert_eq!(
        (pet.stopped_reason.as_deref(), pet.last_error.as_deref()),
        (Some("PIXEL_NOT_GRANTED"), Some("PIXEL_NOT_GRANTED"))
    );
    assert_eq!(db_pixel(&app, "s1").await.unwrap().last_error, None);
    // What the new token lacks cannot be taken either.
    app.site("s3").await;
    link(&app, "s3", OWNER, CAFE_BROOKLYN).await.err(404, "NOT_FOUND");
    set_pixel(&app, "s3", json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": OWNER})).await.err(404, "NOT_FOUND");

    // Listed again: both resume.
    connect(&app, OWNER, &token_for(&[LOJA_X, PET_MANIA])).await.ok();
    let l = db_link(&app, PET_MANIA).await.unwrap();
    assert_eq!((l.stopped_reason, l.last_error), (None, None));
    let p = db_pixel(&app, "s2").await.unwrap();
    assert_eq!((p.stopped_reason, p.last_error), (None, None));
});

// rule: CONN-09
backend_test!(meta_connection_is_null_or_its_state_and_never_a_token, fake_meta_builder, |app| {
    let unknown = app.get("/v1/meta/owners/nobody/connection").await;
    assert_eq!((unknown.status, unknown.text.trim()), (200, "null"));

    app.site("s1").await;
    let (t1, t2) = ("first-secret-09", "second-secret-09");
    let answers = [connect(&app, OWNER, t1).await, connect(&app, OWNER2, t2).await];
    let linked = link(&app, "s1", OWNER, LOJA_X).await;
    let v = view(&app, OWNER).await;
    let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let expected_keys: BTreeSet<&str> = [
        "status",
        "authorizedBy",
        "authorizedAt",
        "invalidSince",
        "lastError",
        "expiresAt",
        "expiringSoon",
        "adAccounts",
        "pixels",
    ]
    .into();
    assert_eq!(keys, expected_keys);
    assert_eq!(v["status"], "connected");
    assert_eq!(v["authorizedBy"], Value::Null);
    assert_eq!(v["authorizedAt"], T0);
    assert_eq!((v["invalidSince"].clone(), v["lastError"].clone()), (Value::Null, Value::Null));
    assert_eq!((v["expiresAt"].clone(), v["expiringSoon"].clone()), (Value::Null, json!(false)));
    let mut accounts = expected_accounts(&all_accounts());
    for a in accounts.as_array_mut().unwrap() {
        if a["adAccountId"] == LOJA_X {
            a["linkedSiteId"] = json!("s1");
        }
    }
    assert_eq!(v["adAccounts"], accounts);
    assert_eq!(v["pixels"], expected_pixels(&[LOJA_X, PET_MANIA]));
    // Whoever linked it: another owner's listing shows the site Loja X feeds.
    let v2 = view(&app, OWNER2).await;
    assert_eq!(v2["adAccounts"], accounts);

    // Never a token, nor its sealed form.
    let sealed = db_connection(&app, OWNER).await.unwrap().sealed_token;
    let texts: Vec<String> =
        answers.iter().chain([&linked]).map(|a| a.text.clone()).chain([v.to_string(), v2.to_string()]).collect();
    for text in texts {
        for secret in [t1, t2, "secret-09", sealed.as_str()] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(!text.to_lowercase().contains("token"), "{text}");
    }
});

// rule: CONN-10
backend_test!(remove_meta_connection_forgets_the_owner, fake_meta_builder, |app| {
    for s in ["s1", "s2", "s3", "s4", "s5"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "token-10a").await.ok();
    connect(&app, OWNER2, "token-10b").await.ok();
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    link(&app, "s2", OWNER, PET_MANIA).await.ok();
    set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": OWNER})).await.ok();
    let own = set_pixel(
        &app,
        "s3",
        json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": OWNER, "accessToken": "pixel-token-10"}),
    )
    .await
    .ok();
    assert_eq!(own["source"], "token");
    link(&app, "s4", OWNER2, CAFE_BROOKLYN).await.ok();
    set_pixel(&app, "s4", json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": OWNER2})).await.ok();
    // An owner with only a plan B pixel and no connection.
    set_pixel(
        &app,
        "s5",
        json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": OWNER3, "accessToken": "pixel-token-10c"}),
    )
    .await
    .ok();

    assert_eq!(app.delete(&format!("/v1/meta/owners/{OWNER}")).await.ok(), json!({"removed": true}));
    assert_eq!(view(&app, OWNER).await, Value::Null);
    assert!(db_connection(&app, OWNER).await.is_none());
    assert!(db_link(&app, LOJA_X).await.is_none() && db_link(&app, PET_MANIA).await.is_none());
    assert!(db_pixel(&app, "s1").await.is_none() && db_pixel(&app, "s3").await.is_none());
    // The other owners keep theirs.
    assert_eq!(db_link(&app, CAFE_BROOKLYN).await.unwrap().owner_key, OWNER2);
    assert_eq!(db_pixel(&app, "s4").await.unwrap().owner_key.as_deref(), Some(OWNER2));
    assert_eq!(view(&app, OWNER2).await["status"], "connected");
    assert_eq!(app.count("meta_connections").await, 1);
    assert_eq!(app.count("meta_listed_accounts").await, sample_accounts().len() as i64);
    assert_eq!(app.count("site_ad_accounts").await, 1);
    assert_eq!(app.count("site_pixels").await, 2);

    assert_eq!(app.delete(&format!("/v1/meta/owners/{OWNER}")).await.ok(), json!({"removed": false}));
    refresh(&app, OWNER).await.err(404, "NOT_FOUND");
    // Plan B pixels alone go all the same.
    assert_eq!(app.delete(&format!("/v1/meta/owners/{OWNER3}")).await.ok(), json!({"removed": true}));
    assert!(db_pixel(&app, "s5").await.is_none());
    assert_eq!(app.delete(&format!("/v1/meta/owners/{OWNER3}")).await.ok(), json!({"removed": false}));
    assert_eq!(app.delete("/v1/meta/owners/nobody").await.ok(), json!({"removed": false}));
});

// rule: CONN-11, SEC-03
backend_test!(graph_calls_carry_secrets_only_in_headers_and_bodies, login_app_builder, |app| {
    let pasted = "conn11-pasted-token-1a2b";
    let code_system = "conn11-code-system-3c4d";
    let code_user = "conn11-code-user-token-5e6f";
    let pixel_token = "conn11-pixel-token-7a8b";
    app.site("s1").await;
    let answers = vec![
        connect(&app, OWNER, pasted).await,
        login(&app, OWNER2, code_system, REDIRECT).await,
        login(&app, OWNER3, code_user, REDIRECT).await,
        refresh(&app, OWNER).await,
        refresh(&app, OWNER2).await,
        refresh(&app, OWNER3).await,
        set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "accessToken": pixel_token})).await,
        app.get(&format!("/v1/meta/owners/{OWNER2}/connection")).await,
    ];
    for a in &answers {
        assert!((200..300).contains(&a.status), "{}", a.text);
    }
    let system_token = stored_token(&app, OWNER2).await;
    let user_token = stored_token(&app, OWNER3).await;
    let secrets: [&str; 7] =
        [pasted, code_system, code_user, pixel_token, CONN11_APP_SECRET, &system_token, &user_token];

    let log = graph_requests(&app).await;
    let (mut exchanges, mut debugs) = (0, 0);
    for r in &log {
        let (method, path, query) =
            (r["method"].as_str().unwrap(), r["path"].as_str().unwrap(), r["query"].as_str().unwrap());
        assert!(path.starts_with("/v25.0/"), "pinned version: {r}");
        let exchange = method == "POST" && path == "/v25.0/oauth/access_token";
        assert_eq!(r["authorization"], !exchange, "{r}");
        if exchange {
            exchanges += 1;
            assert_eq!(query, "", "a form body, never the URL: {r}");
            assert!(r["bodyBytes"].as_u64().unwrap() > 0);
            continue;
        }
        if path == "/v25.0/debug_token" {
            debugs += 1;
            let url = reqwest::Url::parse(&format!("http://x/?{query}")).unwrap();
            let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into(), v.into())).collect();
            assert_eq!(pairs, [("input_token".to_string(), system_token.clone())], "{r}");
            continue;
        }
        for s in secrets {
            assert!(!query.contains(s), "{s} in {r}");
        }
    }
    // The system code's exchange, the user code's and its trade; one debug_token for the system token.
    assert_eq!((exchanges, debugs), (3, 1), "{log:?}");
    for a in &answers {
        for s in secrets {
            assert!(!a.text.contains(s), "{s} in {}", a.text);
        }
    }
});

// rule: LINK-01
backend_test!(a_link_needs_the_listing_and_respects_the_caps, fake_meta_builder, |app| {
    for s in ["full", "bulk", "s2", "s3"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "token-l01").await.ok();
    connect(&app, OWNER2, &token_for(&[LOJA_X])).await.ok();
    link(&app, "s2", OWNER2, PET_MANIA).await.err(404, "NOT_FOUND");
    link(&app, "s2", "agency:none", LOJA_X).await.err(404, "NOT_FOUND");
    link(&app, "s2", OWNER, "act_5555555555").await.err(404, "NOT_FOUND");
    link(&app, "nosite", OWNER, LOJA_X).await.err(404, "NOT_FOUND");
    link(&app, "s2", OWNER, "1029384756").await.err(400, "INVALID_ARGUMENT");
    assert_eq!(app.count("site_ad_accounts").await, 0);

    // The link carries the listed account's details.
    let sample = sample_accounts().iter().find(|a| a.id == LOJA_X).unwrap();
    app.clock.advance(1000);
    let linked = link(&app, "s2", OWNER2, LOJA_X).await.ok();
    assert_eq!(
        linked,
        json!({"siteId": "s2", "adAccountId": LOJA_X, "ownerKey": OWNER2, "name": sample.name,
            "currency": sample.currency, "timezone": sample.timezone, "linkedAt": T0 + 1000, "lastError": null})
    );
    app.delete(&format!("/v1/sites/s2/ad-accounts/{LOJA_X}")).await.ok();

    // At most 20 per site: 19 already there, the 20th links, the 21st does not.
    insert_fillers(&app, "full", "someone", 0..19).await;
    link(&app, "full", OWNER, LOJA_X).await.ok();
    link(&app, "full", OWNER, PET_MANIA).await.err(400, "INVALID_ARGUMENT");
    assert!(db_link(&app, PET_MANIA).await.is_none());
    assert_eq!(app.state.cx.read(|c| Ok(store::count_links_of_site(c, "full")?)).await.unwrap(), 20);

    // At most 500 per connection: with 499, the 500th links, the 501st does not.
    insert_fillers(&app, "bulk", OWNER, 100..598).await;
    link(&app, "s2", OWNER, PET_MANIA).await.ok();
    link(&app, "s3", OWNER, CAFE_BROOKLYN).await.err(400, "INVALID_ARGUMENT");
    assert!(db_link(&app, CAFE_BROOKLYN).await.is_none());
    assert_eq!(app.state.cx.read(|c| Ok(store::count_links_of_owner(c, OWNER)?)).await.unwrap(), 500);
});

// rule: LINK-02
backend_test!(an_ad_account_feeds_one_site, fake_meta_builder, |app| {
    for s in ["s1", "s2"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "token-l02a").await.ok();
    connect(&app, OWNER2, "token-l02b").await.ok();
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    link(&app, "s2", OWNER, LOJA_X).await.err(409, "CONFLICT");
    link(&app, "s2", OWNER2, LOJA_X).await.err(409, "CONFLICT");
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().site_id, "s1");
    // Linking it again to its own site changes nothing.
    assert_eq!(link(&app, "s1", OWNER, LOJA_X).await.ok()["siteId"], "s1");
    assert_eq!(app.count("site_ad_accounts").await, 1);
    // Unlinked first, it may feed the other site.
    assert_eq!(app.delete(&format!("/v1/sites/s1/ad-accounts/{LOJA_X}")).await.ok(), json!({"removed": true}));
    link(&app, "s2", OWNER, LOJA_X).await.ok();
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().site_id, "s2");
});

// rule: LINK-06
backend_test!(set_site_pixel_from_the_listing_or_its_own_token, fake_meta_builder, |app| {
    for s in ["s1", "s2"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "token-l06").await.ok();
    let loja = pixel_of(LOJA_X);
    let p = set_pixel(&app, "s1", json!({"pixelId": loja.id, "ownerKey": OWNER})).await.ok();
    assert_eq!(
        p,
        json!({"siteId": "s1", "pixelId": loja.id, "name": loja.name, "source": "connection", "ownerKey": OWNER,
            "enabled": true, "testMode": false, "sendLeadEvent": false, "lastError": null})
    );
    assert_eq!(db_pixel(&app, "s1").await.unwrap().sealed_token, None, "sends with the connection's token");
    // Outside the listing, or without a connection.
    set_pixel(&app, "s2", json!({"pixelId": "999888777666", "ownerKey": OWNER})).await.err(404, "NOT_FOUND");
    set_pixel(&app, "s2", json!({"pixelId": loja.id, "ownerKey": OWNER2})).await.err(404, "NOT_FOUND");
    set_pixel(&app, "s2", json!({"pixelId": loja.id})).await.err(400, "INVALID_ARGUMENT");
    assert!(db_pixel(&app, "s2").await.is_none());

    // Its own token: checked against the pixel, sealed for this site.
    let pet = pixel_of(PET_MANIA);
    let token = "own-pixel-token-l06";
    let p = set_pixel(
        &app,
        "s2",
        json!({"pixelId": pet.id, "accessToken": token, "enabled": false, "testEventCode": "TEST123",
            "sendLeadEvent": true}),
    )
    .await;
    assert!(!p.text.contains(token));
    let p = p.ok();
    assert_eq!(
        (p["source"].clone(), p["name"].clone(), p["ownerKey"].clone()),
        (json!("token"), json!(pet.name), Value::Null)
    );
    assert_eq!(
        (p["enabled"].clone(), p["testMode"].clone(), p["sendLeadEvent"].clone()),
        (json!(false), json!(true), json!(true))
    );
    let row = db_pixel(&app, "s2").await.unwrap();
    let sealed = row.sealed_token.expect("sealed");
    assert!(!sealed.contains(token));
    let key = app.state.cx.secrets.clone().unwrap();
    assert_eq!(key.open(&sealed, Identity::Pixel("s2")).unwrap().expose(), token);
    assert!(key.open(&sealed, Identity::Pixel("s1")).is_err());
    assert!(calls(&graph_requests(&app).await).contains(&format!("GET /v25.0/{}", pet.id)));

    // A token Meta refuses, or one that cannot reach the pixel: nothing changes.
    set_pixel(&app, "s2", json!({"pixelId": loja.id, "accessToken": "own-invalid-l06"}))
        .await
        .err(400, "META_TOKEN_INVALID");
    set_pixel(&app, "s2", json!({"pixelId": "999888777666", "accessToken": token})).await.err(404, "NOT_FOUND");
    assert_eq!(db_pixel(&app, "s2").await.unwrap().pixel_id, pet.id);
});

// rule: LINK-07, CONN-03
backend_test!(a_refused_connection_stops_its_pixels_but_not_one_with_its_own_token, fake_meta_builder, |app| {
    for s in ["s1", "s2", "s3"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "token-l07").await.ok();
    set_pixel(&app, "s1", json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": OWNER})).await.ok();
    let own = json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": OWNER, "accessToken": "own-token-l07"});
    assert_eq!(set_pixel(&app, "s2", own).await.ok()["source"], "token");

    fault(&app, json!({"match": "/me", "kind": "token_refused"})).await;
    refresh(&app, OWNER).await.err(400, "META_TOKEN_INVALID");
    assert_eq!(db_pixel(&app, "s1").await.unwrap().stopped_reason.as_deref(), Some("META_TOKEN_INVALID"));
    let kept = db_pixel(&app, "s2").await.unwrap();
    assert_eq!((kept.stopped_reason, kept.last_error), (None, None), "a token-sourced pixel keeps sending");
    // A connection pixel set while the connection is refused is stopped from the start.
    let p = set_pixel(&app, "s3", json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": OWNER})).await.ok();
    assert_eq!(p["lastError"], "META_TOKEN_INVALID");

    // removeSitePixel forgets it.
    assert_eq!(app.delete("/v1/sites/s1/pixel").await.ok(), json!({"removed": true}));
    assert!(db_pixel(&app, "s1").await.is_none());
    app.delete("/v1/sites/s1/pixel").await.err(404, "NOT_FOUND");
    assert_eq!(app.delete(&format!("/v1/sites/s2/pixel?ownerKey={OWNER}")).await.ok(), json!({"removed": true}));
    assert_eq!(app.count("site_pixels").await, 1);
});

// rule: LINK-08
backend_test!(only_own_and_owner_key_refuse_another_owners_work, fake_meta_builder, |app| {
    for s in ["s1", "s2"] {
        app.site(s).await;
    }
    connect(&app, OWNER, "token-l08a").await.ok();
    connect(&app, OWNER2, "token-l08b").await.ok();
    let unlink = |owner: Option<&str>| {
        let q = owner.map(|o| format!("?ownerKey={o}")).unwrap_or_default();
        format!("/v1/sites/s1/ad-accounts/{LOJA_X}{q}")
    };

    // Links.
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    let take = |owner: &str, only_own: bool| json!({"ownerKey": owner, "adAccountId": LOJA_X, "onlyOwn": only_own});
    app.post("/v1/sites/s1/ad-accounts", take(OWNER2, true)).await.err(409, "CONFLICT");
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().owner_key, OWNER);
    app.delete(&unlink(Some(OWNER2))).await.err(409, "CONFLICT");
    assert!(db_link(&app, LOJA_X).await.is_some());
    assert_eq!(app.post("/v1/sites/s1/ad-accounts", take(OWNER, true)).await.ok()["ownerKey"], OWNER);
    // Without onlyOwn the host hands it over.
    assert_eq!(app.post("/v1/sites/s1/ad-accounts", take(OWNER2, false)).await.ok()["ownerKey"], OWNER2);
    assert_eq!(db_link(&app, LOJA_X).await.unwrap().owner_key, OWNER2);
    app.delete(&unlink(Some(OWNER))).await.err(409, "CONFLICT");
    assert_eq!(app.delete(&unlink(Some(OWNER2))).await.ok(), json!({"removed": true}));
    // Without ownerKey the host undoes anyone's.
    link(&app, "s1", OWNER, LOJA_X).await.ok();
    assert_eq!(app.delete(&unlink(None)).await.ok(), json!({"removed": true}));
    assert!(db_link(&app, LOJA_X).await.is_none());

    // Pixels.
    let pet = pixel_of(PET_MANIA).id;
    set_pixel(&app, "s2", json!({"pixelId": pet, "ownerKey": OWNER})).await.ok();
    set_pixel(&app, "s2", json!({"pixelId": pet, "ownerKey": OWNER2, "onlyOwn": true})).await.err(409, "CONFLICT");
    assert_eq!(db_pixel(&app, "s2").await.unwrap().owner_key.as_deref(), Some(OWNER));
    let mine = set_pixel(&app, "s2", json!({"pixelId": pet, "ownerKey": OWNER, "onlyOwn": true, "enabled": false}));
    assert_eq!(mine.await.ok()["enabled"], false);
    app.delete(&format!("/v1/sites/s2/pixel?ownerKey={OWNER2}")).await.err(409, "CONFLICT");
    assert!(db_pixel(&app, "s2").await.is_some());
    assert_eq!(set_pixel(&app, "s2", json!({"pixelId": pet, "ownerKey": OWNER2})).await.ok()["ownerKey"], OWNER2);
    app.delete(&format!("/v1/sites/s2/pixel?ownerKey={OWNER}")).await.err(409, "CONFLICT");
    assert_eq!(app.delete("/v1/sites/s2/pixel").await.ok(), json!({"removed": true}));
    // A pixel the host set (no owner) is another owner's too.
    set_pixel(&app, "s2", json!({"pixelId": pet, "accessToken": "host-token-l08"})).await.ok();
    set_pixel(&app, "s2", json!({"pixelId": pet, "ownerKey": OWNER, "onlyOwn": true})).await.err(409, "CONFLICT");
    app.delete(&format!("/v1/sites/s2/pixel?ownerKey={OWNER}")).await.err(409, "CONFLICT");
    assert_eq!(db_pixel(&app, "s2").await.unwrap().owner_key, None);
});

// rule: BOARD-08
backend_test!(an_owners_event_map_needs_its_own_pixel_or_none, fake_meta_builder, |app| {
    connect(&app, OWNER, "token-b08a").await.ok();
    connect(&app, OWNER2, "token-b08b").await.ok();
    for s in ["own", "other", "host", "bare"] {
        app.site(s).await;
        app.put(&format!("/v1/sites/{s}/pipeline"), json!({"columns": [{"key": "novo", "name": "Novo"}]})).await.ok();
    }
    let loja = pixel_of(LOJA_X).id;
    set_pixel(&app, "own", json!({"pixelId": loja, "ownerKey": OWNER})).await.ok();
    set_pixel(&app, "other", json!({"pixelId": loja, "ownerKey": OWNER2})).await.ok();
    set_pixel(&app, "host", json!({"pixelId": loja, "accessToken": "host-token-b08"})).await.ok();
    let map = async |site: &str, owner: Option<&str>| {
        let mut body = json!({"columns": {"novo": "Lead"}});
        if let Some(o) = owner {
            body["ownerKey"] = json!(o);
        }
        app.put(&format!("/v1/sites/{site}/event-map"), body).await
    };
    map("own", Some(OWNER)).await.ok();
    map("other", Some(OWNER)).await.err(409, "CONFLICT");
    map("host", Some(OWNER)).await.err(409, "CONFLICT");
    map("bare", Some(OWNER)).await.ok();
    map("bare", Some(OWNER2)).await.ok();
    // The host itself may.
    map("other", None).await.ok();
    // The refused maps changed nothing.
    let host_map = app.get("/v1/sites/host/event-map").await.ok();
    assert_eq!(host_map["columns"][0]["event"], Value::Null);
    assert_eq!(app.get("/v1/sites/other/event-map").await.ok()["columns"][0]["event"], "Lead");
});

// rule: SEC-01, SEC-02
backend_test!(another_key_cannot_read_the_tokens, fake_meta_builder, |app| {
    connect(&app, OWNER, "token-sec-a").await.ok();
    connect(&app, OWNER2, "token-sec-b").await.ok();
    assert_eq!(view(&app, OWNER).await["status"], "connected");
    let other = SecretsKey::from_base64(&Secret::new(rastrod::ids::secrets_key().unwrap())).unwrap();
    let k = other.clone();
    let status = app.state.cx.read(move |c| connection::view(c, Some(&k), OWNER)).await.unwrap().unwrap().status;
    assert_eq!(status, "key_changed");
    let status = app.state.cx.read(|c| connection::view(c, None, OWNER)).await.unwrap().unwrap().status;
    assert_eq!(status, "key_missing");

    // A ciphertext moved to another owner's row does not open: it fails closed.
    let sealed = db_connection(&app, OWNER).await.unwrap().sealed_token;
    app.state
        .cx
        .write_plain(move |c| {
            use diesel::prelude::*;
            use rastrod::db::schema::meta_connections::dsl as mc;
            diesel::update(mc::meta_connections.find(OWNER2)).set(mc::sealed_token.eq(sealed)).execute(c)?;
            Ok(())
        })
        .await
        .unwrap();
    assert_ne!(view(&app, OWNER2).await["status"], "connected");
    let before = graph_requests(&app).await.len();
    let moved = refresh(&app, OWNER2).await;
    assert!(moved.status >= 400, "{}", moved.text);
    assert_eq!(graph_requests(&app).await.len(), before, "nothing went to Meta");

    // A second daemon over the same database with a new key: it cannot use the old token,
    // the status says so, and connecting again under the new key works.
    let mut env = std::collections::BTreeMap::new();
    env.insert("RASTRO_DATABASE_URL".to_string(), app.db.url.clone());
    env.insert("RASTRO_SECRETS_KEY".to_string(), rastrod::ids::secrets_key().unwrap());
    let config = Arc::new(Config::load_from(None, &env).unwrap());
    // A service context alone, without actors or HTTP: services run on just this.
    let second = app.state.cx.reconfigured(config, &fake_url(&app)).unwrap();
    let key2 = second.secrets.clone();
    let err = connection::refresh(&second, OWNER).await.unwrap_err();
    assert_eq!(err.code, Code::SecretsKeyMissing);
    assert_eq!(graph_requests(&app).await.len(), before, "nothing went to Meta");
    let k = key2.clone();
    let status = app.state.cx.read(move |c| connection::view(c, k.as_ref(), OWNER)).await.unwrap().unwrap().status;
    assert_eq!(status, "key_changed");
    let input = serde_json::from_value(json!({"accessToken": "token-sec-c"})).unwrap();
    connection::set_connection(&second, OWNER, input).await.unwrap();
    let k = key2.clone();
    let status = app.state.cx.read(move |c| connection::view(c, k.as_ref(), OWNER)).await.unwrap().unwrap().status;
    assert_eq!(status, "connected");
    connection::refresh(&second, OWNER).await.unwrap();
    // The first daemon, still on the old key, now sees a token it cannot read.
    assert_eq!(view(&app, OWNER).await["status"], "key_changed");
    refresh(&app, OWNER).await.err(503, "SECRETS_KEY_MISSING");
});

use crate::common::free_port;

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

// rule: SEC-03, FAKE-06
#[actix_web::test]
async fn no_secret_leaves_the_real_binary() {
    use std::process::{Command, Stdio};

    let db = TestDb::sqlite();
    let db_path = db.sqlite_path().unwrap();
    let dir = db_path.parent().unwrap().to_path_buf();
    let logs = std::env::temp_dir().join(format!(
        "rastrod_canary_{}_{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&logs).unwrap();
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 1_000_000_007;
    let pasted = format!("CANARYpasted{n}x");
    let refused_token = format!("CANARYrefused{n}x-invalid");
    let code_user = format!("CANARYcode{n}x-user-token");
    let code_system = format!("CANARYsyscode{n}x");
    let code_refused = format!("CANARYbadcode{n}x-invalid");
    let app_secret = format!("CANARYappsecret{n}x");
    let pixel_token = format!("CANARYpixel{n}x");
    let pixel_refused = format!("CANARYbadpixel{n}x-invalid");
    let key = rastrod::ids::secrets_key().unwrap();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .arg("serve")
        .env("RASTRO_DATABASE_URL", &db.url)
        .env("RASTRO_HOST_API_KEY", HOST_KEY)
        .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
        .env("RASTRO_META_FAKE", "true")
        .env("RASTRO_LOG", "debug")
        .env("RASTRO_META_APP_ID", "1234567890")
        .env("RASTRO_META_APP_SECRET", &app_secret)
        .env("RASTRO_SECRETS_KEY", &key)
        .stdout(Stdio::from(std::fs::File::create(logs.join("stdout.log")).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(logs.join("stderr.log")).unwrap()))
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    crate::common::wait_healthy(&http, &base).await;

    let mut answers: Vec<String> = Vec::new();
    let mut call = async |method: &str, path: &str, body: Option<Value>, expect: u16| {
        let mut req = http.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{base}{path}"));
        req = req.bearer_auth(HOST_KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        assert_eq!(status, expect, "{method} {path}: {text}");
        answers.push(text);
    };
    for s in ["s1", "s2"] {
        let site = json!({"siteId": s, "name": s, "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": "o"});
        call("POST", "/v1/sites", Some(site), 201).await;
    }
    let owners = ["agency:pasted", "agency:login", "agency:system"];
    let conn = |o: &str| format!("/v1/meta/owners/{o}/connection");
    call("PUT", &conn(owners[0]), Some(json!({"accessToken": pasted})), 200).await;
    call("PUT", &conn(owners[0]), Some(json!({"accessToken": refused_token})), 400).await;
    let code = |c: &str| json!({"code": c, "redirectUri": REDIRECT});
    call("POST", &format!("{}/code", conn(owners[1])), Some(code(&code_user)), 200).await;
    call("POST", &format!("{}/code", conn(owners[2])), Some(code(&code_system)), 200).await;
    call("POST", &format!("{}/code", conn(owners[2])), Some(code(&code_refused)), 400).await;
    call("POST", "/v1/sites/s1/ad-accounts", Some(json!({"ownerKey": owners[0], "adAccountId": LOJA_X})), 200).await;
    let own_pixel = json!({"pixelId": pixel_of(LOJA_X).id, "ownerKey": owners[0], "accessToken": pixel_token});
    call("PUT", "/v1/sites/s1/pixel", Some(own_pixel), 200).await;
    let refused_pixel = json!({"pixelId": pixel_of(LOJA_X).id, "accessToken": pixel_refused});
    call("PUT", "/v1/sites/s1/pixel", Some(refused_pixel), 400).await;
    call("PUT", "/v1/sites/s2/pixel", Some(json!({"pixelId": pixel_of(PET_MANIA).id, "ownerKey": owners[1]})), 200)
        .await;
    for o in owners {
        call("GET", &conn(o), None, 200).await;
        call("POST", &format!("{}/refresh", conn(o)), None, 200).await;
        call("GET", &conn(o), None, 200).await;
    }
    call("GET", "/v1/sites", None, 200).await;
    call("GET", "/v1/sites/s1/event-map", None, 200).await;
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("connection"), "the Meta routes are counted: {metrics}");

    let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "rastrod exited with {exit:?}");

    // The raw bytes of the database files, read before anything opens them again.
    let mut db_bytes = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("rastrod.db") {
            db_bytes.push((entry.file_name(), std::fs::read(entry.path()).unwrap()));
        }
    }
    assert!(!db_bytes.is_empty());
    let log =
        [std::fs::read(logs.join("stdout.log")).unwrap(), std::fs::read(logs.join("stderr.log")).unwrap()].concat();
    let log_text = String::from_utf8_lossy(&log).to_string();
    assert!(log_text.contains(NEVER_FOR_CUSTOMERS), "the fake's warning: {log_text}");
    assert!(log_text.contains("DEBUG"), "debug logging was on");

    // The tokens the logins brought, opened from the database with the key.
    let sealed = {
        use diesel::prelude::*;
        #[derive(QueryableByName)]
        struct Sealed {
            #[diesel(sql_type = diesel::sql_types::Text)]
            owner_key: String,
            #[diesel(sql_type = diesel::sql_types::Text)]
            sealed_token: String,
        }
        let mut c = SqliteConnection::establish(&db_path.to_string_lossy()).unwrap();
        diesel::sql_query("SELECT owner_key, sealed_token FROM meta_connections ORDER BY owner_key")
            .load::<Sealed>(&mut c)
            .unwrap()
    };
    let k = SecretsKey::from_base64(&Secret::new(key.clone())).unwrap();
    let mut canaries = vec![
        pasted.clone(),
        refused_token,
        code_user,
        code_system,
        code_refused,
        app_secret,
        pixel_token,
        pixel_refused,
    ];
    assert_eq!(sealed.len(), owners.len());
    for s in &sealed {
        let token = k.open(&s.sealed_token, Identity::Connection(&s.owner_key)).unwrap().expose().to_string();
        if s.owner_key == owners[0] {
            assert_eq!(token, pasted);
        } else {
            assert!(token.starts_with("fake-"), "{}", s.owner_key);
            canaries.push(token);
        }
    }
    for canary in &canaries {
        for a in &answers {
            assert!(!a.contains(canary.as_str()), "{canary} in an answer: {a}");
        }
        assert!(!log_text.contains(canary.as_str()), "{canary} in the log");
        assert!(!metrics.contains(canary.as_str()), "{canary} in /metrics");
        for (name, bytes) in &db_bytes {
            assert!(!contains(bytes, canary), "{canary} in {name:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&logs);
}
