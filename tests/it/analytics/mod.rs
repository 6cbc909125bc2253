//! The web-analytics context: the tracker's routes, ingestion and the first
//! reads here (with the helpers the other analytics tests share); beside them
//! `combined` (batches accepted together), `crash` (kill -9 of the real binary), `demo_traffic` (the demo's live
//! visitors), `definitions`, `funnels`, `ledger`,
//! `kept_sessions` (the tracker's kept sessions against their stored
//! version), `people`, `retention`, `month_tier`, `regroup`, `site_copy` (the
//! tracker's copy of a site against another process's change), `site_map`,
//! `tracked_links`, `whatsapp_refs` (the WhatsApp taps' references), and
//! `mmdb`, the tests' own MaxMind DB writer.
//!
//! Web analytics, part 1, over HTTP: the tracker's routes, ingestion's checks
//! in their order, visitors and sessions, the report actors' rollups, and the
//! federated reads (overview, liveVisitors, getSession) with public links.
//! The tracker itself runs in Chromium in `browser::tracker`.

mod combined;
mod crash;
pub mod definitions;
mod demo_traffic;
mod event_rows;
mod funnel_layout;
mod funnels;
mod hour_sets;
mod kept_sessions;
mod ledger;
mod live_count;
mod mmdb;
mod month_tier;
mod outbox;
mod people;
mod regroup;
mod retention;
mod rollup_writes;
mod site_copy;
mod site_map;
mod tracked_links;
mod whatsapp_refs;

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::{Answer, Backend, DAY, T0, TestApp};
use crate::federation::{Fed, FedBuilder, PUBLIC, READ, answer, claims, fed_builder, with};

pub const UA: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
pub const PHONE_UA: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
pub const HOST: &str = "loja.example.com";
const MINUTE: i64 = 60_000;

/// Rollups only when a test drains them: the report actor's tick is an hour away.
pub fn analytics_builder(backend: Backend) -> FedBuilder {
    fed_builder(backend).env("RASTRO_ROLLUP_INTERVAL", "1h")
}

/// A site on `loja.example.com` owned by o1.
pub async fn site(app: &TestApp, id: &str, cookieless: bool) {
    app.post(
        "/v1/sites",
        json!({"siteId": id, "name": id, "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": "o1",
            "domains": [HOST], "cookieless": cookieless}),
    )
    .await
    .ok();
}

pub fn pageview(id: &str, path: &str) -> Value {
    json!({"type": "pageview", "pageviewId": format!("p_{id:0>16}"), "url": format!("https://{HOST}{path}")})
}

pub fn custom(name: &str, path: &str) -> Value {
    json!({"type": "event", "name": name, "url": format!("https://{HOST}{path}")})
}

/// `POST /rastro/events` as a browser sends it (text/plain, no credentials).
pub async fn track_as(app: &TestApp, body: &Value, headers: &[(&str, &str)]) -> Answer {
    let mut req = app.http.post(format!("{}/rastro/events", app.base)).header("content-type", "text/plain");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    answer(req.body(body.to_string())).await
}

pub async fn track(app: &TestApp, site_id: &str, visitor: &str, events: Vec<Value>) -> Value {
    let body = json!({"siteId": site_id, "visitorId": visitor, "events": events});
    let a = track_as(app, &body, &[("user-agent", UA)]).await;
    assert_eq!(a.status, 200, "{}", a.text);
    a.body
}

/// Applies every queued event to the rollups now (what the report actor does each tick).
pub async fn drain(app: &TestApp) -> usize {
    rastrod::actors::report::drain(&app.state.cx).await.unwrap()
}

/// A reader's token valid for a month of the test's clock.
pub fn reader(fed: &Fed) -> String {
    fed.key.sign(&with(claims(&[READ]), json!({"exp": T0 / 1000 + 30 * 86_400})))
}

fn day_range() -> (i64, i64) {
    let d = T0 - T0.rem_euclid(DAY);
    (d, d + DAY - 1)
}

// rule: TRK-01
// rule: TRK-03
// rule: TRK-04
// rule: WA-05
backend_test!(health_and_the_tracker_script, |app| {
    let h = app.http.get(format!("{}/rastro/health", app.base)).send().await.unwrap();
    assert_eq!(h.status(), 200);
    assert_eq!(h.headers()["access-control-allow-origin"], "*");
    let body: Value = h.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    // Every always-on feature the health check names (TRK-01).
    for feature in ["cookieless", "vitals", "identify", "import"] {
        assert_eq!(body["features"][feature], true, "{feature}: {body}");
    }

    let js = app.http.get(format!("{}/rastro/tracker.js", app.base)).send().await.unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(js.headers()["content-type"], "application/javascript; charset=utf-8");
    assert_eq!(js.headers()["cache-control"], "public, max-age=3600");
    assert_eq!(js.headers()["access-control-allow-origin"], "*");
    let etag = js.headers()["etag"].to_str().unwrap().to_string();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "a strong ETag: {etag}");
    let bytes = js.bytes().await.unwrap();
    assert_eq!(&bytes[..], rastrod::http::tracker::TRACKER_JS);
    let again =
        app.http.get(format!("{}/rastro/tracker.js", app.base)).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());

    // At most 2,560 bytes after gzip -9 (WA-05's budget, which replaced TRK-04's 4 KiB).
    let mut gz = std::process::Command::new("gzip")
        .arg("-9c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    use std::io::Write;
    gz.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = gz.wait_with_output().unwrap();
    println!("tracker.js: {} bytes, {} bytes after gzip -9", bytes.len(), out.stdout.len());
    assert!(out.stdout.len() <= 2560, "{} bytes gzipped", out.stdout.len());
});

// rule: TRK-11
backend_test!(events_take_json_or_text_with_cors_and_a_preflight, |app| {
    site(&app, "loja", false).await;
    let pre = app
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/rastro/events", app.base))
        .header("origin", format!("https://{HOST}"))
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 204);
    assert_eq!(pre.headers()["access-control-allow-origin"], "*");
    assert_eq!(pre.headers()["access-control-allow-methods"], "POST");
    assert_eq!(pre.headers()["access-control-max-age"], "86400");
    assert!(pre.headers().get("access-control-allow-credentials").is_none());
    let body = json!({"siteId": "loja", "visitorId": "v_aaaaaaaaaa", "events": [pageview("1", "/")]});
    for ct in ["application/json", "text/plain;charset=UTF-8", "application/json; charset=utf-8"] {
        let mut b = body.clone();
        b["events"][0]["pageviewId"] = json!(format!("p_{:0>16}", ct.len()));
        let res = app
            .http
            .post(format!("{}/rastro/events", app.base))
            .header("content-type", ct)
            .header("user-agent", UA)
            .body(b.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{ct}");
        assert_eq!(res.headers()["access-control-allow-origin"], "*");
        let a: Value = res.json().await.unwrap();
        assert_eq!(a["accepted"], 1, "{ct}");
    }
});

// rule: TRK-12
// rule: TRK-13
// rule: TRK-14
backend_test!(the_checks_run_in_their_order_and_store_nothing_on_a_refusal, |app| {
    site(&app, "loja", false).await;
    let ua = [("user-agent", UA)];
    // 1. Size first: an oversized body that is also not JSON.
    let big = "x".repeat(70_000);
    let a = track_as(&app, &Value::String(big), &ua).await;
    assert_eq!((a.status, a.code()), (413, "PAYLOAD_TOO_LARGE"));
    // 2. The batch's shape before the site.
    for bad in [
        json!([1]),
        json!({"siteId": "nope", "events": []}),
        json!({"siteId": "nope", "events": vec![pageview("1", "/"); 51]}),
        json!({"siteId": "nope", "visitorId": "c_abcdefghij", "events": [pageview("1", "/")]}),
        json!({"siteId": "nope", "visitorId": "bad id!", "events": [pageview("1", "/")]}),
        json!({"events": [pageview("1", "/")]}),
    ] {
        let a = track_as(&app, &bad, &ua).await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{bad}");
    }
    // 4. An unknown site.
    let a = track_as(&app, &json!({"siteId": "nope", "events": [pageview("1", "/")]}), &ua).await;
    assert_eq!((a.status, a.code()), (404, "NOT_FOUND"));
    assert_eq!(drain(&app).await, 0, "nothing was stored");
    let count = app.state.cx.read(|c| Ok(rastrod::store::analytics::outbox_len(c)?)).await.unwrap();
    assert_eq!(count, 0);
});

// rule: TRK-15
// rule: TRK-16
// rule: TRK-17
// rule: TRK-29
// rule: TRK-30
// rule: SES-08
// rule: SES-01
backend_test!(each_event_is_accepted_or_rejected_and_the_counts_add_up, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let events = vec![
        pageview("1", "/"),
        json!({"type": "pageview", "pageviewId": "p_0000000000000002", "url": "https://www.loja.example.com/"}),
        json!({"type": "engagement", "pageviewId": "p_0000000000000001", "engagedMs": 5000}),
        json!({"type": "engagement", "pageviewId": "p_000000000000000x", "engagedMs": 5000}),
        json!({"type": "vitals", "pageviewId": "p_0000000000000001", "lcp": 2100, "cls": 0.05}),
        json!({"type": "bogus"}),
        custom("add_to_cart", "/p/1"),
    ];
    let a = track(app, "loja", "v_visitor0001", events).await;
    assert_eq!((a["accepted"].as_u64(), a["rejected"].as_u64(), a["bot"].as_u64()), (Some(4), Some(3), Some(0)));
    assert_eq!(a["visitorId"], "v_visitor0001");
    assert_eq!(a["cookieless"], false);
    let session = a["sessionId"].as_str().unwrap().to_string();
    assert!(session.starts_with("s_") && session.len() == 26, "{session}");
    // A resent pageview changes nothing; its engagement in a later batch still attaches.
    let again = track(app, "loja", "v_visitor0001", vec![pageview("1", "/")]).await;
    assert_eq!((again["accepted"].as_u64(), again["rejected"].as_u64()), (Some(0), Some(1)));
    assert_eq!(again["sessionId"], Value::Null, "nothing accepted");
    let later = track(
        app,
        "loja",
        "v_visitor0001",
        vec![json!({"type": "engagement", "pageviewId": "p_0000000000000001", "engagedMs": 9000})],
    )
    .await;
    assert_eq!((later["accepted"].as_u64(), later["sessionId"].as_str()), (Some(1), Some(session.as_str())));
    // A site without domains accepts nothing.
    app.post(
        "/v1/sites",
        json!({"siteId": "bare", "name": "bare", "currency": "BRL", "timezone": "UTC", "ownerId": "o1"}),
    )
    .await
    .ok();
    let bare = track(app, "bare", "v_visitor0001", vec![pageview("9", "/")]).await;
    assert_eq!((bare["accepted"].as_u64(), bare["rejected"].as_u64()), (Some(0), Some(1)));
    drain(app).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let s = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": session})).await.unwrap();
    assert_eq!((s["pageviews"].as_i64(), s["events"].as_i64(), s["bounce"].as_bool()), (Some(1), Some(1), Some(false)));
    // rule: SES-17
    // The engagement (9 s after the pageview) outlasts the custom event, sent at the same instant.
    assert_eq!(s["durationMs"], 9000);
});

// rule: TRK-18
// rule: TRK-19
backend_test!(bots_are_counted_and_never_stored_even_from_a_foreign_origin, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let body =
        json!({"siteId": "loja", "visitorId": "v_visitor0001", "events": [pageview("1", "/"), custom("x", "/")]});
    for ua in ["", "curl/8.5.0", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"] {
        let a = track_as(app, &body, &[("user-agent", ua), ("origin", "https://evil.example")]).await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert_eq!(
            (a.body["accepted"].as_u64(), a.body["rejected"].as_u64(), a.body["bot"].as_u64()),
            (Some(0), Some(0), Some(2))
        );
    }
    let mut flagged = body.clone();
    flagged["bot"] = json!(true);
    let a = track_as(app, &flagged, &[("user-agent", UA)]).await;
    assert_eq!(a.body["bot"], 2);
    assert_eq!(drain(app).await, 0, "bots store nothing");
    // rule: TRK-20
    // A person's batch from a foreign page is rejected whole; from the site's own page it is stored.
    let a = track_as(app, &body, &[("user-agent", UA), ("origin", "https://evil.example")]).await;
    assert_eq!((a.body["accepted"].as_u64(), a.body["rejected"].as_u64()), (Some(0), Some(2)));
    let a = track_as(app, &body, &[("user-agent", UA), ("origin", "null"), ("referer", &format!("https://{HOST}/p"))])
        .await;
    assert_eq!(a.body["accepted"], 2);
});

// rule: SES-07
// rule: SES-06
// rule: SES-16
// rule: SES-18
// rule: STORE-02
// rule: ARPT-03
backend_test!(sessions_open_after_thirty_idle_minutes_and_reads_see_them_at_once, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let first = track(app, "loja", "v_visitor0001", vec![pageview("1", "/")]).await["sessionId"].clone();
    // Seen at once, before any rollup.
    let s = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": first})).await.unwrap();
    assert_eq!(
        (s["pageviews"].as_i64(), s["bounce"].as_bool(), s["returning"].as_bool()),
        (Some(1), Some(true), Some(false))
    );
    // 29 minutes later: the same session; engagement and vitals never extend it.
    app.clock.advance(29 * MINUTE);
    let second = track(app, "loja", "v_visitor0001", vec![pageview("2", "/p/1")]).await["sessionId"].clone();
    assert_eq!(second, first);
    app.clock.advance(29 * MINUTE);
    let eng = json!({"type": "engagement", "pageviewId": "p_0000000000000002", "engagedMs": 1000});
    assert_eq!(track(app, "loja", "v_visitor0001", vec![eng]).await["sessionId"], first);
    app.clock.advance(2 * MINUTE);
    // 31 minutes after the last pageview: a new session, of a returning visitor.
    let third = track(app, "loja", "v_visitor0001", vec![pageview("3", "/")]).await["sessionId"].clone();
    assert_ne!(third, first);
    let s1 = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": first})).await.unwrap();
    assert_eq!(
        (s1["pageviews"].as_i64(), s1["bounce"].as_bool(), s1["exitPath"].as_str()),
        (Some(2), Some(false), Some("/p/1"))
    );
    let s3 = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": third})).await.unwrap();
    assert_eq!(s3["returning"], true);
    // Another site's session id is null here.
    site(app, "outra", false).await;
    let s =
        fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": "s_000000000000000000000000"})).await;
    assert_eq!(s.unwrap(), Value::Null);
});

// rule: SES-10
// rule: SES-11
// rule: SES-12
// rule: SES-14
// rule: TRK-23
backend_test!(a_session_keeps_the_attribution_of_its_first_event, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let landing = json!({"type": "pageview", "pageviewId": "p_0000000000000001",
        "url": format!("https://{HOST}/p/1?utm_source=ig&utm_campaign=Black+Friday&gclid=xyz&email=a@b.c"),
        "referrer": "https://l.instagram.com/"});
    let s = track(app, "loja", "v_visitor0001", vec![landing]).await["sessionId"].clone();
    let later = json!({"type": "pageview", "pageviewId": "p_0000000000000002",
        "url": format!("https://{HOST}/?utm_source=other"), "referrer": "https://www.google.com/"});
    track(app, "loja", "v_visitor0001", vec![later]).await;
    let got = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": s})).await.unwrap();
    assert_eq!(got["source"], "ig");
    assert_eq!(got["medium"], "cpc", "a gclid without utm_medium");
    assert_eq!(got["campaign"], "Black Friday");
    assert_eq!(got["referrer"], "l.instagram.com");
    assert_eq!(got["entryPath"], "/p/1", "no query string");
    assert_eq!(got["device"], "desktop");
    assert_eq!(got["browser"], "Chrome");
    assert_eq!(got["os"], "Windows");
    // An internal referrer is no referrer; no parameters: direct.
    let internal = json!({"type": "pageview", "pageviewId": "p_0000000000000003", "url": format!("https://{HOST}/"),
        "referrer": format!("https://{HOST}/x")});
    let s = track(app, "loja", "v_visitor0002", vec![internal]).await["sessionId"].clone();
    let got = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": s})).await.unwrap();
    assert_eq!(
        (got["source"].as_str(), got["medium"].as_str(), &got["referrer"]),
        (Some("(direct)"), Some("(none)"), &Value::Null)
    );
    // A referred visit groups its source.
    let referred = json!({"type": "pageview", "pageviewId": "p_0000000000000004", "url": format!("https://{HOST}/"),
        "referrer": "https://www.google.com.br/search?q=ração"});
    let s = track(app, "loja", "v_visitor0003", vec![referred]).await["sessionId"].clone();
    let got = fed.both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": s})).await.unwrap();
    assert_eq!(
        (got["source"].as_str(), got["medium"].as_str(), got["referrer"].as_str()),
        (Some("Google"), Some("referral"), Some("google.com.br"))
    );
});

// rule: SES-02
// rule: SES-03
backend_test!(cookieless_sites_derive_a_daily_visitor_id_and_answer_no_ids, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "pet", true).await;
    fed.grant(&["pet"], &[READ]).await;
    let t = reader(&fed);
    let send = |id: &str| json!({"siteId": "pet", "visitorId": "v_browserid01", "events": [pageview(id, "/")]});
    let a = track_as(app, &send("1"), &[("user-agent", UA)]).await.body;
    assert_eq!((a["accepted"].as_u64(), a["cookieless"].as_bool()), (Some(1), Some(true)));
    assert_eq!((&a["visitorId"], &a["sessionId"]), (&Value::Null, &Value::Null));
    let live = |now: i64| fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["pet"], "now": now}));
    let v = live(T0).await.unwrap();
    let id = v["visitors"][0]["visitorId"].as_str().unwrap().to_string();
    assert!(id.starts_with("c_") && id.len() == 24, "{id}");
    // The same address and browser later that day: the same id.
    app.clock.advance(40 * MINUTE);
    track_as(app, &send("2"), &[("user-agent", UA)]).await;
    let v = live(T0 + 40 * MINUTE).await.unwrap();
    assert_eq!((v["count"].as_i64(), v["visitors"][0]["visitorId"].as_str()), (Some(1), Some(id.as_str())));
    // Another browser on that address: another visitor.
    track_as(app, &json!({"siteId": "pet", "events": [pageview("3", "/")]}), &[("user-agent", PHONE_UA)]).await;
    let v = live(T0 + 40 * MINUTE).await.unwrap();
    assert_eq!(v["count"], 2);
    // The next day, once yesterday's session has ended: a new id.
    app.clock.advance(DAY);
    track_as(app, &send("4"), &[("user-agent", UA)]).await;
    let v = live(T0 + 40 * MINUTE + DAY).await.unwrap();
    assert_eq!(v["count"], 1);
    assert_ne!(v["visitors"][0]["visitorId"].as_str(), Some(id.as_str()));
});

// rule: OVR-03
// rule: OVR-04
// rule: OVR-05
// rule: OVR-06
// rule: OVR-07
// rule: OVR-10
// rule: STORE-03
// rule: STORE-04
// rule: OVR-09
backend_test!(overview_counts_from_the_rollups_once_each, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "dolar", false).await;
    fed.grant(&["loja", "dolar"], &[READ]).await;
    let t = reader(&fed);
    // Visitor 1: two pageviews (one session, no bounce) and an event; 20 s engaged on the first.
    track(app, "loja", "v_visitor0001", vec![pageview("1", "/"), pageview("2", "/p/1"), custom("add_to_cart", "/p/1")])
        .await;
    track(
        app,
        "loja",
        "v_visitor0001",
        vec![json!({"type": "engagement", "pageviewId": "p_0000000000000001", "engagedMs": 20_000})],
    )
    .await;
    // Visitor 2: one pageview (a bounce), with vitals only after.
    track(app, "loja", "v_visitor0002", vec![pageview("3", "/")]).await;
    track(
        app,
        "loja",
        "v_visitor0002",
        vec![json!({"type": "vitals", "pageviewId": "p_0000000000000003", "lcp": 1000})],
    )
    .await;
    // Another site, another visitor.
    track(app, "dolar", "v_visitor0003", vec![pageview("4", "/")]).await;
    let (from, to) = day_range();
    let before = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!(before["totals"]["pageviews"], 0, "rollups trail acceptance");
    assert!(drain(app).await >= 6);
    assert_eq!(drain(app).await, 0, "each outbox row is applied once");
    let o =
        fed.both(Some(&t), "overview", json!({"siteIds": ["loja", "dolar"], "from": from, "to": to})).await.unwrap();
    let totals = &o["totals"];
    assert_eq!(totals["visitors"], 3);
    assert_eq!(totals["sessions"], 3);
    assert_eq!(totals["pageviews"], 4);
    assert_eq!(totals["bounces"], 2);
    assert_eq!(totals["bounceRate"], json!(0.6667));
    assert_eq!(totals["viewsPerSession"], json!(1.33));
    assert_eq!(totals["avgEngagedMs"], 20_000);
    // Session 1 lasts 20 s (its engagement), the bounces 0: (20000 + 0 + 0) / 3 half up.
    assert_eq!(totals["avgDurationMs"], 6667);
    assert_eq!(o["currency"], "BRL");
    assert_eq!(o["series"].as_array().unwrap().len(), 1);
    assert_eq!(o["series"][0]["bucketStart"], from);
    assert_eq!(o["series"][0]["visitors"], 3);
    assert_eq!(o["pages"][0], json!({"route": "/", "pageviews": 3, "visitors": 3}));
    assert_eq!(o["pages"][1], json!({"route": "/p/1", "pageviews": 1, "visitors": 1}));
    assert_eq!(o["events"], json!([{"name": "add_to_cart", "count": 1}]));
    assert_eq!(o["entryPages"], json!([{"route": "/", "sessions": 3}]));
    assert_eq!(o["sources"], json!([{"source": "(direct)", "sessions": 3, "visitors": 3}]));
    assert_eq!(o["referrers"], json!([{"referrer": null, "sessions": 3}]));
    assert_eq!(o["devices"], json!([{"device": "desktop", "sessions": 3}]));
    assert_eq!(o["bySite"][0]["siteId"], "loja");
    assert_eq!(o["bySite"][0]["visitors"], 2);
    assert_eq!(o["bySite"][1]["siteId"], "dolar");
    assert_eq!(o["bySite"][1]["pageviews"], 1);
    // Hourly: 24 buckets, zeros where nothing happened, the same totals.
    let hour_from = T0 - T0.rem_euclid(3_600_000) - 23 * 3_600_000;
    let h = fed
        .both(
            Some(&t),
            "overview",
            json!({"siteIds": ["loja"], "from": hour_from, "to": hour_from + 24 * 3_600_000 - 1, "interval": "hour"}),
        )
        .await
        .unwrap();
    let series = h["series"].as_array().unwrap();
    assert_eq!(series.len(), 24);
    assert_eq!(series.iter().map(|b| b["pageviews"].as_i64().unwrap()).sum::<i64>(), 3);
    assert_eq!(series[0]["pageviews"], 0);
    assert_eq!(h["totals"]["visitors"], 2);
    assert_eq!(h["pages"][0]["visitors"], 2, "hourly page visitors from the hour sets");
    assert_eq!(h["sources"][0]["visitors"], 2, "hourly source visitors from the hour sets");
    // A day with nothing: zeros, not nulls, and null rates.
    let empty =
        fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from - DAY, "to": from - 1})).await.unwrap();
    assert_eq!(empty["totals"]["visitors"], 0);
    assert_eq!(empty["totals"]["bounceRate"], Value::Null);
    assert_eq!(empty["series"][0]["sessions"], 0);
    // rule: OVR-01
    Fed::expect_err(
        fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from + 1, "to": to})).await,
        400,
        "INVALID_ARGUMENT",
    );
});

// rule: OVR-12
// rule: PUB-01
// rule: PUB-04
// rule: PUB-05
// rule: PUB-06
backend_test!(live_visitors_and_what_a_public_link_sees, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, PUBLIC]).await;
    let t = reader(&fed);
    track(app, "loja", "v_visitor0001", vec![pageview("1", "/p/123?utm_campaign=x"), custom("cta", "/p/123")]).await;
    app.clock.advance(MINUTE);
    track(app, "loja", "v_visitor0002", vec![pageview("2", "/")]).await;
    let now = T0 + MINUTE;
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now})).await.unwrap();
    assert_eq!((live["count"].as_i64(), live["truncated"].as_bool()), (Some(2), Some(false)));
    let first = &live["visitors"][0];
    assert_eq!(first["visitorId"], "v_visitor0002", "newest first");
    let second = &live["visitors"][1];
    assert_eq!(
        (second["currentPath"].as_str(), second["pageviews"].as_i64(), second["events"].as_i64()),
        (Some("/p/123"), Some(1), Some(1))
    );
    assert!(second.get("entryPath").is_some() && second.get("goals").is_some());
    let one = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now, "limit": 1})).await.unwrap();
    assert_eq!(
        (one["count"].as_i64(), one["truncated"].as_bool(), one["visitors"].as_array().map(Vec::len)),
        (Some(2), Some(true), Some(1))
    );
    // Five minutes later nobody is live.
    let later =
        fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now + 5 * MINUTE + 1})).await.unwrap();
    assert_eq!(later["count"], 0);
    Fed::expect_err(
        fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now, "limit": 501})).await,
        400,
        "INVALID_ARGUMENT",
    );

    // A public link: session ids as visitor ids, routes, no visitor detail.
    let public =
        fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": ["loja"], "exp": T0 / 1000 + 86_400})));
    let p = Some(public.as_str());
    let pl = fed.both(p, "liveVisitors", json!({"siteIds": ["loja"], "now": now})).await.unwrap();
    for row in pl["visitors"].as_array().unwrap() {
        assert_eq!(row["visitorId"], row["sessionId"]);
        for hidden in [
            "entryPath",
            "returning",
            "campaign",
            "affiliate",
            "conversions",
            "revenueCents",
            "goals",
            "funnel",
            "profile",
        ] {
            assert!(row.get(hidden).is_none(), "{hidden} in {row}");
        }
    }
    // A public `now` far from the server clock is refused; a reader's is not.
    Fed::expect_err(
        fed.both(p, "liveVisitors", json!({"siteIds": ["loja"], "now": now - 10 * MINUTE})).await,
        400,
        "INVALID_ARGUMENT",
    );
    assert!(fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now - 10 * MINUTE})).await.is_ok());
    drain(app).await;
    let (from, to) = day_range();
    let po = fed.both(p, "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!(po["totals"]["pageviews"], 2);
    assert_eq!(po["totals"]["revenueCents"], 0);
    for empty in ["campaigns", "mediums", "events", "topGoals"] {
        assert_eq!(po[empty], json!([]), "{empty}");
    }
    Fed::expect_err(
        fed.both(p, "getSession", json!({"siteId": "loja", "sessionId": "s_x"})).await,
        403,
        "FEDERATION_PUBLIC_FORBIDDEN",
    );
});

// rule: TRK-25
backend_test!(no_address_user_agent_query_or_click_id_is_stored, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let canary_ua = format!("{UA} CanaryAgent/7.7");
    let body = json!({"siteId": "loja", "visitorId": "v_visitor0001", "events": [
        {"type": "pageview", "pageviewId": "p_0000000000000001",
         "url": format!("https://{HOST}/p/1?utm_source=ig&gclid=CanaryGclid&fbclid=CanaryFbclid&q=CanaryQuery#frag"),
         "referrer": "https://blog.example.org/post?secret=CanaryReferrer"}]});
    let a = track_as(app, &body, &[("user-agent", &canary_ua), ("x-forwarded-for", "198.51.100.77")]).await;
    assert_eq!(a.body["accepted"], 1);
    drain(app).await;
    let dump = app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            #[derive(diesel::QueryableByName)]
            struct Row {
                #[diesel(sql_type = diesel::sql_types::Text)]
                t: String,
            }
            let mut all = String::new();
            for table in ["web_events", "web_sessions", "web_visitors", "web_outbox_packs", "web_breakdowns"] {
                let sql = format!("SELECT CAST(COUNT(*) AS TEXT) AS t FROM {table}");
                let _ = diesel::sql_query(sql).load::<Row>(c)?;
            }
            let rows: Vec<Row> = diesel::sql_query(
                "SELECT path || ' ' || route || ' ' || COALESCE(properties, '') AS t FROM web_events \
                 UNION ALL SELECT entry_path || ' ' || COALESCE(referrer, '') || ' ' || source || ' ' || medium || ' ' \
                 || COALESCE(browser, '') || ' ' || COALESCE(os, '') FROM web_sessions \
                 UNION ALL SELECT key FROM web_breakdowns",
            )
            .load(c)?;
            for r in rows {
                all.push_str(&r.t);
                all.push('\n');
            }
            Ok(all)
        })
        .await
        .unwrap();
    assert!(dump.contains("/p/1") && dump.contains("blog.example.org"), "{dump}");
    for canary in ["Canary", "198.51.100.77", "127.0.0.1", "gclid", "secret", "frag"] {
        assert!(!dump.contains(canary), "{canary} stored: {dump}");
    }
});

fn tight_limits(backend: Backend) -> crate::common::TestAppBuilder {
    TestApp::builder(backend).env("RASTRO_TRACKER_IP_RATE", "4").env("RASTRO_TRACKER_NEW_VISITOR_RATE", "2")
}

// rule: TRK-28
backend_test!(rate_limits_answer_429_with_retry_after_and_store_nothing, tight_limits, |app| {
    site(&app, "loja", false).await;
    let ok = track(&app, "loja", "v_visitor0001", vec![pageview("1", "/"), pageview("2", "/a")]).await;
    assert_eq!(ok["accepted"], 2);
    // Three more events from the same address pass its four a minute.
    let body = json!({"siteId": "loja", "visitorId": "v_visitor0001",
        "events": [pageview("3", "/b"), pageview("4", "/c"), pageview("6", "/e")]});
    let res = app
        .http
        .post(format!("{}/rastro/events", app.base))
        .header("user-agent", UA)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 429);
    let retry: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["code"], "RATE_LIMITED");
    // A third distinct visitor id from the address in the minute.
    let v2 = track(&app, "loja", "v_visitor0002", vec![custom("x", "/")]).await;
    assert_eq!(v2["accepted"], 1);
    let third = json!({"siteId": "loja", "visitorId": "v_visitor0003", "events": [custom("x", "/")]});
    let a = track_as(&app, &third, &[("user-agent", UA)]).await;
    assert_eq!((a.status, a.code()), (429, "RATE_LIMITED"));
    assert_eq!(drain(&app).await, 3, "only the admitted events were stored");
    // A new minute admits again.
    app.clock.advance(MINUTE);
    assert_eq!(track(&app, "loja", "v_visitor0001", vec![pageview("5", "/d")]).await["accepted"], 1);
});

// rule: TRK-04
/// The committed `tracker/dist/tracker.js` is what the pinned terser makes of
/// `tracker/src/rastro.js` (`.ci/run` installs it: `npm ci --prefix tracker`).
#[test]
fn the_committed_tracker_is_the_build_of_its_source() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tracker");
    if !root.join("node_modules/.bin/terser").exists() {
        crate::common::skip_or_fail(
            "terser, which rebuilds the tracker for this check, is not installed",
            "npm ci --prefix tracker --ignore-scripts",
        );
        return;
    }
    let dir = crate::common::TempDir::new("rastrod_tracker_build");
    let out = dir.0.join("tracker.js");
    let status = std::process::Command::new("npm")
        .args(["run", "--silent", "--prefix"])
        .arg(&root)
        .arg("build")
        .env("RASTRO_TRACKER_OUT", &out)
        .status()
        .expect("npm");
    assert!(status.success(), "the tracker build failed");
    let built = std::fs::read(&out).unwrap();
    let committed = std::fs::read(root.join("dist/tracker.js")).unwrap();
    assert!(built == committed, "tracker/dist/tracker.js differs from a rebuild: run `npm run --prefix tracker build`");
}

// rule: PAGE-01
// rule: PAGE-03
// rule: PAGE-04
// rule: PAGE-05
// rule: PAGE-06
// rule: PAGE-07
// rule: PAGE-08
// rule: ARPT-04
backend_test!(list_sessions_pages_by_signed_cursors, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let mut sessions = Vec::new();
    for i in 1..=5 {
        let s = track(app, "loja", &format!("v_visitor000{i}"), vec![pageview(&i.to_string(), "/")]).await;
        sessions.push(s["sessionId"].as_str().unwrap().to_string());
        app.clock.advance(MINUTE);
    }
    let (from, to) = day_range();
    let list = |cursor: Value, n: Value| {
        fed.both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": from, "to": to,
            "paginationOpts": {"numItems": n, "cursor": cursor, "id": 7, "maximumRowsRead": 1000}}),
        )
    };
    let first = list(Value::Null, json!(2.0)).await.unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["continueCursor", "isDone", "page"]);
    assert_eq!(first["isDone"], false);
    let ids = |page: &Value| {
        page["page"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&first), vec![sessions[4].clone(), sessions[3].clone()], "startedAt desc");
    // A session started meanwhile is newer than the first page: it never shows in later pages.
    track(app, "loja", "v_visitor0009", vec![pageview("9", "/")]).await;
    let second = list(first["continueCursor"].clone(), json!(2)).await.unwrap();
    assert_eq!(ids(&second), vec![sessions[2].clone(), sessions[1].clone()]);
    let third = list(second["continueCursor"].clone(), json!(2)).await.unwrap();
    assert_eq!((ids(&third), third["isDone"].as_bool()), (vec![sessions[0].clone()], Some(true)));
    let after = list(third["continueCursor"].clone(), json!(2)).await.unwrap();
    assert_eq!((after["page"].clone(), after["isDone"].as_bool()), (json!([]), Some(true)));
    // A page exactly full at the end says isDone.
    let all = list(Value::Null, json!(6)).await.unwrap();
    assert_eq!((ids(&all).len(), all["isDone"].as_bool()), (6, Some(true)));
    // Cursors of another call, altered ones, bad sizes, unknown options.
    let other = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": from, "to": to - 1,
            "paginationOpts": {"numItems": 2, "cursor": first["continueCursor"]}}),
        )
        .await;
    Fed::expect_err(other, 400, "INVALID_ARGUMENT");
    let mut altered = first["continueCursor"].as_str().unwrap().to_string();
    let last = altered.pop().unwrap();
    altered.push(if last == 'A' { 'B' } else { 'A' });
    Fed::expect_err(list(json!(altered), json!(2)).await, 400, "INVALID_ARGUMENT");
    for n in [json!(0), json!(101), json!(2.5)] {
        Fed::expect_err(list(Value::Null, n).await, 400, "INVALID_ARGUMENT");
    }
    let extra = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": from, "to": to,
            "paginationOpts": {"numItems": 2, "cursor": null, "pageSize": 3}}),
        )
        .await;
    Fed::expect_err(extra, 400, "INVALID_ARGUMENT");
    // rule: PAGE-02
    let end = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": from, "to": to,
            "paginationOpts": {"numItems": 2, "cursor": null, "endCursor": "x"}}),
        )
        .await;
    Fed::expect_err(end, 400, "INVALID_ARGUMENT");
});

// rule: ARPT-05
// rule: ARPT-07
// rule: SES-09
backend_test!(journeys_list_a_sessions_and_a_visitors_events_in_order, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "outra", false).await;
    fed.grant(&["loja", "outra"], &[READ]).await;
    let t = reader(&fed);
    let mut events = vec![pageview("1", "/"), custom("cta", "/")];
    events[1]["properties"] = json!({"sku": "A1", "qty": 2, "bad": {"x": 1}});
    let s = track(app, "loja", "v_visitor0001", events).await["sessionId"].clone();
    app.clock.advance(MINUTE);
    track(app, "loja", "v_visitor0001", vec![pageview("2", "/p/1")]).await;
    app.clock.advance(MINUTE);
    let other = track(app, "outra", "v_visitor0001", vec![pageview("3", "/x")]).await["sessionId"].clone();
    assert_ne!(other, s, "one visitor on two sites has two sessions");
    let (from, to) = day_range();
    let page = fed
        .both(
            Some(&t),
            "sessionJourney",
            json!({"siteId": "loja", "sessionId": s, "from": from, "to": to,
            "paginationOpts": {"numItems": 2, "cursor": null}}),
        )
        .await
        .unwrap();
    let rows = page["page"].as_array().unwrap();
    assert_eq!((rows.len(), page["isDone"].as_bool()), (2, Some(false)));
    assert_eq!((rows[0]["type"].as_str(), rows[1]["type"].as_str()), (Some("pageview"), Some("event")));
    assert_eq!(rows[1]["properties"], json!({"sku": "A1", "qty": 2}), "the bad property was dropped");
    assert!(rows[0]["eventId"].as_str().unwrap() < rows[1]["eventId"].as_str().unwrap(), "time-ordered ids");
    let rest = fed
        .both(
            Some(&t),
            "sessionJourney",
            json!({"siteId": "loja", "sessionId": s, "from": from, "to": to,
            "paginationOpts": {"numItems": 2, "cursor": page["continueCursor"]}}),
        )
        .await
        .unwrap();
    assert_eq!(rest["page"][0]["path"], "/p/1");
    assert_eq!(rest["isDone"], true);
    // Another site's session id has no journey here.
    let none = fed
        .both(
            Some(&t),
            "sessionJourney",
            json!({"siteId": "outra", "sessionId": s, "from": from, "to": to,
            "paginationOpts": {"numItems": 2, "cursor": null}}),
        )
        .await
        .unwrap();
    assert_eq!(none["page"], json!([]));
    // The visitor across both sites: the newest two, oldest first.
    let v = fed
        .both(
            Some(&t),
            "visitorJourney",
            json!({"siteIds": ["loja", "outra"], "visitorId": "v_visitor0001",
            "from": from, "to": to, "limit": 2}),
        )
        .await
        .unwrap();
    let paths: Vec<&str> = v["events"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!((paths, v["truncated"].as_bool()), (vec!["/p/1", "/x"], Some(true)));
});

/// `POST /v1/sites/{site}/analytics/import?importId=` with NDJSON lines.
pub async fn import(app: &TestApp, site: &str, import_id: &str, lines: &[Value]) -> Answer {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let req = app
        .http
        .post(format!("{}/v1/sites/{site}/analytics/import?importId={import_id}", app.base))
        .bearer_auth(crate::common::HOST_KEY)
        .header("content-type", "application/x-ndjson")
        .body(body);
    answer(req).await
}

fn line(kind: &str, at: i64, visitor: &str, extra: Value) -> Value {
    let mut l = json!({"type": kind, "occurredAt": at, "visitorId": visitor});
    for (k, v) in extra.as_object().unwrap() {
        l[k] = v.clone();
    }
    l
}

// rule: IMP-01
// rule: IMP-02
// rule: IMP-03
// rule: IMP-04
// rule: IMP-06
// rule: IMP-07
backend_test!(imports_are_checked_whole_and_idempotent, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let y = T0 - DAY;
    let good = vec![
        line(
            "pageview",
            y,
            "v_visitor0001",
            json!({"pageviewId": "p_0000000000000001", "path": "/", "source": "newsletter", "medium": "email"}),
        ),
        line("engagement", y, "v_visitor0001", json!({"pageviewId": "p_0000000000000001", "engagedMs": 4000})),
        line(
            "event",
            y + 1000,
            "v_visitor0001",
            json!({"name": "cta", "url": format!("https://{HOST}/?utm_source=ig")}),
        ),
        line(
            "pageview",
            y,
            "v_visitor0002",
            json!({"pageviewId": "p_0000000000000002", "path": "/", "userAgent": crate::analytics::PHONE_UA}),
        ),
        line(
            "pageview",
            y,
            "v_visitor0003",
            json!({"pageviewId": "p_0000000000000003", "path": "/", "userAgent": "curl/8.5.0"}),
        ),
    ];
    // Bad importIds, no lines, a wrong content type.
    for id in ["", "bad id", &"x".repeat(129)] {
        let a = import(app, "loja", &urlencoding(id), &good).await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{id:?}");
    }
    assert_eq!(import(app, "loja", "empty", &[]).await.status, 400);
    // Invalid lines are named and nothing is stored.
    let mut bad = good.clone();
    bad.push(line("pageview", T0 + 60_000, "v_visitor0001", json!({"pageviewId": "p_0000000000000009", "path": "/"})));
    bad.push(line(
        "pageview",
        T0 - 500 * DAY,
        "v_visitor0001",
        json!({"pageviewId": "p_0000000000000008", "path": "/"}),
    ));
    bad.push(line(
        "pageview",
        y,
        "v_visitor0001",
        json!({"pageviewId": "p_0000000000000007", "path": "/", "device": "phone"}),
    ));
    bad.push(line(
        "pageview",
        y,
        "v_visitor0001",
        json!({"pageviewId": "p_0000000000000006", "path": "/", "url": format!("https://{HOST}/")}),
    ));
    bad.push(line(
        "pageview",
        y,
        "v_visitor0001",
        json!({"pageviewId": "p_0000000000000005", "url": "https://elsewhere.example/"}),
    ));
    let a = import(app, "loja", "first", &bad).await;
    assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"));
    assert!(a.body["message"].as_str().unwrap().contains("6, 7, 8, 9, 10"), "{}", a.text);
    assert_eq!(drain(app).await, 0, "nothing stored");
    // The good import: bots counted apart, sessions opened.
    let a = import(app, "loja", "first", &good).await;
    assert_eq!(a.status, 201, "{}", a.text);
    assert_eq!(a.body, json!({"importId": "first", "created": true, "accepted": 4, "bot": 1, "sessions": 2}));
    // The same body again: the first answer; another body under the id: a conflict.
    let again = import(app, "loja", "first", &good).await;
    assert_eq!(
        (again.status, again.body["created"].as_bool(), again.body["accepted"].as_u64()),
        (200, Some(false), Some(4))
    );
    let other = import(app, "loja", "first", &good[..2]).await;
    assert_eq!((other.status, other.code()), (409, "CONFLICT"));
    // Older than the visitor's latest stored event: invalid, nothing stored.
    let older =
        vec![line("pageview", y - 1000, "v_visitor0001", json!({"pageviewId": "p_0000000000000010", "path": "/old"}))];
    let a = import(app, "loja", "older", &older).await;
    assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{}", a.text);
    assert_eq!(drain(app).await, 4, "the first import's outbox only");
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let (from, to) = (y - y.rem_euclid(DAY), y - y.rem_euclid(DAY) + DAY - 1);
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!((o["totals"]["sessions"].as_i64(), o["totals"]["pageviews"].as_i64()), (Some(2), Some(2)));
    assert_eq!(o["sources"][0], json!({"source": "(direct)", "sessions": 1, "visitors": 1}));
    assert_eq!(o["sources"][1], json!({"source": "newsletter", "sessions": 1, "visitors": 1}));
    assert_eq!(o["devices"], json!([{"device": "mobile", "sessions": 1}, {"device": null, "sessions": 1}]));
    assert_eq!(o["totals"]["avgEngagedMs"], 4000);
});

fn urlencoding(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

// rule: IMP-05
// rule: IMP-08
// rule: IMP-09
backend_test!(an_export_imported_elsewhere_gives_the_same_overview, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    site(app, "copia", false).await;
    let y = T0 - DAY;
    let mut lines = Vec::new();
    for v in 0..6 {
        let visitor = format!("v_visitor{v:04}");
        let at = y + v * 3_600_000;
        let src = if v % 2 == 0 { json!({"source": "ig", "medium": "social", "campaign": "Natal"}) } else { json!({}) };
        let mut pv = line("pageview", at, &visitor, json!({"pageviewId": format!("p_{:0>16}", v * 10), "path": "/"}));
        for (k, val) in src.as_object().unwrap() {
            pv[k] = val.clone();
        }
        lines.push(pv);
        lines.push(line(
            "engagement",
            at,
            &visitor,
            json!({"pageviewId": format!("p_{:0>16}", v * 10), "engagedMs": 1000 * v}),
        ));
        if v % 3 == 0 {
            lines.push(line(
                "pageview",
                at + 60_000,
                &visitor,
                json!({"pageviewId": format!("p_{:0>16}", v * 10 + 1), "path": format!("/p/{v}")}),
            ));
            lines.push(line(
                "vitals",
                at + 60_000,
                &visitor,
                json!({"pageviewId": format!("p_{:0>16}", v * 10 + 1), "lcp": 1200, "cls": 0.02}),
            ));
            lines.push(line(
                "event",
                at + 90_000,
                &visitor,
                json!({"name": "cta", "path": format!("/p/{v}"), "properties": {"k": "v"}}),
            ));
        }
    }
    assert_eq!(import(app, "loja", "history", &lines).await.status, 201);
    let (from, to) = (y - y.rem_euclid(DAY), y - y.rem_euclid(DAY) + DAY - 1);
    let res = app
        .http
        .get(format!("{}/v1/sites/loja/analytics/export?from={from}&to={to}", app.base))
        .bearer_auth(crate::common::HOST_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/x-ndjson");
    let text = res.text().await.unwrap();
    let exported: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(exported.len(), lines.len(), "{text}");
    // Ordered by time; each pageview's engagement and vitals right after it.
    for pair in exported.windows(2) {
        assert!(pair[0]["occurredAt"].as_i64() <= pair[1]["occurredAt"].as_i64());
        if pair[1]["type"] == "engagement" || pair[1]["type"] == "vitals" {
            assert_eq!(pair[0]["pageviewId"], pair[1]["pageviewId"]);
        }
    }
    assert!(
        exported
            .iter()
            .filter(|l| l["type"] == "pageview" || l["type"] == "event")
            .all(|l| l["eventId"].is_string() && l["sessionId"].is_string())
    );
    let first_of_ig = exported.iter().find(|l| l["visitorId"] == "v_visitor0000").unwrap();
    assert_eq!((first_of_ig["source"].as_str(), first_of_ig["campaign"].as_str()), (Some("ig"), Some("Natal")));
    // Into a fresh site: the same overview.
    let a = import(app, "copia", "from-loja", &exported).await;
    assert_eq!(a.status, 201, "{}", a.text);
    drain(app).await;
    fed.grant(&["loja", "copia"], &[READ]).await;
    let t = reader(&fed);
    let of = |s: &str| fed.both(Some(&t), "overview", json!({"siteIds": [s], "from": from, "to": to}));
    let (a, b) = (of("loja").await.unwrap(), of("copia").await.unwrap());
    assert_eq!(a["totals"], b["totals"]);
    assert_eq!(a["series"], b["series"]);
    assert_eq!(a["sources"], b["sources"]);
    assert_eq!(a["campaigns"], b["campaigns"]);
    assert_eq!(a["totals"]["sessions"], 6);
    assert_eq!(a["totals"]["pageviews"], 8);
});

// rule: IMP-10
backend_test!(the_demo_seeds_ninety_days_of_analytics_once, analytics_builder, |fed| {
    let app = &fed.app;
    rastrod::demo::seed(&app.state.cx, T0).await.unwrap();
    let first = rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap();
    assert!(first > 5_000, "{first} lines");
    assert_eq!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap(), 0, "a second run adds nothing");
    drain(app).await;
    let (conn, org) = (crate::federation::CONN, crate::federation::ORG);
    fed.grant_for(conn, org, "demo-owner", &["loja-x", "pet-mania"], &[READ]).await.ok();
    let t = reader(&fed);
    let today = T0 - T0.rem_euclid(DAY);
    let o = fed
        .both(
            Some(&t),
            "overview",
            json!({"siteIds": ["loja-x", "pet-mania"], "from": today - 90 * DAY, "to": today - 1}),
        )
        .await
        .unwrap();
    let series = o["series"].as_array().unwrap();
    assert_eq!(series.len(), 90);
    assert!(series.iter().all(|b| b["pageviews"].as_i64().unwrap() > 0), "every day has visits");
    assert!(
        o["pages"].as_array().unwrap().iter().any(|p| p["route"] == "/p/:id"),
        "the route pattern groups product pages"
    );
    assert!(o["sources"].as_array().unwrap().iter().any(|s| s["source"] == "Google"));
    assert!(o["totals"]["avgEngagedMs"].as_i64().unwrap() > 0);
});

// rule: MAN-01
// rule: MAN-02
// rule: MAN-03
backend_test!(the_manifest_names_the_analytics_functions_and_their_limits, analytics_builder, |fed| {
    let m = fed.both(None, "manifest", json!({})).await.unwrap();
    let functions: Vec<&str> = m["functions"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    for f in
        ["overview", "liveVisitors", "getSession", "listSessions", "sessionJourney", "visitorJourney", "dataCoverage"]
    {
        assert!(functions.contains(&f), "{f}");
    }
    let l = &m["limits"];
    assert_eq!((l["maxLiveVisitors"].as_i64(), l["liveWindowMs"].as_i64()), (Some(500), Some(300_000)));
    assert_eq!((l["maxHourlyOverviewHours"].as_i64(), l["maxSessionsPage"].as_i64()), (Some(24), Some(100)));
    assert_eq!(
        (l["maxJourneyPage"].as_i64(), l["maxJourneyEvents"].as_i64(), l["maxEventsPerBatch"].as_i64()),
        (Some(200), Some(500), Some(50))
    );
    assert_eq!(l["maxRoutePatternLength"], 256);
    site(&fed.app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let status = fed.both(Some(&reader(&fed)), "connectionStatus", json!({})).await.unwrap();
    assert_eq!(status["capabilities"], m["capabilities"]);
});

fn short_live_window(backend: Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_LIVE_WINDOW", "1m")
}

// rule: MAN-02
backend_test!(the_live_window_is_the_setting_in_the_manifest_and_the_reads, short_live_window, |fed| {
    let m = fed.both(None, "manifest", json!({})).await.unwrap();
    assert_eq!(m["limits"]["liveWindowMs"], 60_000);
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    track(app, "loja", "v_visitor0001", vec![pageview("1", "/")]).await;
    let t = reader(&fed);
    let live = |now: i64| fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": now}));
    assert_eq!(live(T0 + 60_000).await.unwrap()["count"], 1);
    assert_eq!(live(T0 + 60_001).await.unwrap()["count"], 0);
});

// rule: ARPT-22
// rule: ARPT-24
// rule: ARPT-26
backend_test!(data_coverage_tells_collected_from_missing, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, PUBLIC]).await;
    let t = reader(&fed);
    let (from, to) = day_range();
    let cov = |args: Value| fed.both(Some(&t), "dataCoverage", args);
    let before = cov(json!({"siteId": "loja", "from": from, "to": to})).await.unwrap();
    assert_eq!(before["trackingSince"], Value::Null);
    assert_eq!(before["classes"]["events"]["status"], "unavailable", "an empty report is no proof of no visits");
    track(app, "loja", "v_visitor0001", vec![pageview("1", "/")]).await;
    // The day of the first event, read at its end: partial (tracking began inside it).
    let day = cov(json!({"siteId": "loja", "from": from, "to": to, "now": to})).await.unwrap();
    assert_eq!(day["trackingSince"], T0);
    assert_eq!(day["classes"]["sessions"], json!({"status": "partial", "coveredFrom": T0, "coveredTo": to}));
    // A range after tracking began, in the past: complete.
    let later = cov(json!({"siteId": "loja", "from": T0 + 1, "to": T0 + 1000, "now": T0 + DAY})).await.unwrap();
    assert_eq!(
        later["classes"]["aggregates"],
        json!({"status": "complete", "coveredFrom": T0 + 1, "coveredTo": T0 + 1000})
    );
    // Before tracking: unavailable.
    let earlier = cov(json!({"siteId": "loja", "from": from - DAY, "to": from - 1})).await.unwrap();
    assert_eq!(earlier["classes"]["events"]["status"], "unavailable");
    assert!(!earlier.to_string().contains("v_visitor") && !earlier.to_string().contains("s_"), "no ids");
    Fed::expect_err(cov(json!({"siteId": "loja", "from": 1.5, "to": to})).await, 400, "INVALID_ARGUMENT");
    // A public link may ask.
    let public =
        fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": ["loja"], "exp": T0 / 1000 + 86_400})));
    assert!(fed.both(Some(&public), "dataCoverage", json!({"siteId": "loja", "from": from, "to": to})).await.is_ok());
});

// rule: STORE-08
backend_test!(live_reads_come_from_the_cache_until_a_tracker_commit, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    track(app, "loja", "v_visitor0001", vec![pageview("1", "/")]).await;
    let cx = &app.state.cx;
    let args = || rastrod::service::analytics::reports::live::LiveArgs {
        site_ids: vec!["loja".into()],
        now: T0,
        limit: None,
        filters: Vec::new(),
    };
    let first = serde_json::to_value(
        rastrod::service::analytics::reports::live::live_visitors(cx, args(), false, 10).await.unwrap(),
    )
    .unwrap();
    assert_eq!(first["count"], 1);
    let before = cx.storage_stats().queries;
    for _ in 0..20 {
        assert_eq!(
            serde_json::to_value(
                rastrod::service::analytics::reports::live::live_visitors(cx, args(), false, 10).await.unwrap()
            )
            .unwrap(),
            first
        );
    }
    assert_eq!(cx.storage_stats().queries, before, "twenty polls, no database read");
    // A tracker commit of the site: the next read is fresh.
    track(app, "loja", "v_visitor0002", vec![pageview("2", "/")]).await;
    assert_eq!(
        serde_json::to_value(
            rastrod::service::analytics::reports::live::live_visitors(cx, args(), false, 10).await.unwrap()
        )
        .unwrap()["count"],
        2
    );
    // Past the TTL a read is fresh too, and a reader's far `now` reads the database.
    let far = rastrod::service::analytics::reports::live::LiveArgs { now: T0 - DAY, ..args() };
    assert_eq!(
        serde_json::to_value(
            rastrod::service::analytics::reports::live::live_visitors(cx, far, false, 10).await.unwrap()
        )
        .unwrap()["count"],
        0
    );
    let unknown = rastrod::service::analytics::reports::live::LiveArgs { site_ids: vec!["nope".into()], ..args() };
    assert_eq!(
        rastrod::service::analytics::reports::live::live_visitors(cx, unknown, false, 10)
            .await
            .unwrap_err()
            .code
            .as_str(),
        "NOT_FOUND"
    );
});

/// A GeoIP database of the test's own: 203.0.113.0/24 in São Paulo, Brazil
/// (with a city, which must never be stored), 198.51.100.0/24 in the US with
/// no region.
fn geo_db() -> (crate::common::TempDir, String) {
    use crate::analytics::mmdb::{V, ipv4_db, s};
    let br = V::Map(vec![
        ("city", V::Map(vec![("names", V::Map(vec![("en", s("São Paulo"))]))])),
        ("country", V::Map(vec![("iso_code", s("BR"))])),
        ("subdivisions", V::Arr(vec![V::Map(vec![("iso_code", s("SP"))])])),
    ]);
    let us = V::Map(vec![("country", V::Map(vec![("iso_code", s("US"))]))]);
    let bytes = ipv4_db(&[("203.0.113.0".parse().unwrap(), 24, br), ("198.51.100.0".parse().unwrap(), 24, us)]);
    let dir = crate::common::TempDir::new("rastrod_geoip");
    let path = dir.0.join("test-city.mmdb");
    std::fs::write(&path, bytes).unwrap();
    let path = path.to_string_lossy().to_string();
    (dir, path)
}

// rule: TRK-33
#[actix_web::test]
async fn sessions_carry_country_and_region_from_the_geoip_database() {
    let (_dir, path) = geo_db();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(fed) = analytics_builder(backend)
            .env("RASTRO_GEOIP_DB", &path)
            .env("RASTRO_TRUSTED_PROXIES", "127.0.0.1/32")
            .start()
            .await
        else {
            continue;
        };
        let app = &fed.app;
        site(app, "loja", false).await;
        fed.grant(&["loja"], &[READ]).await;
        let t = reader(&fed);
        let mut found = Vec::new();
        for (i, ip) in ["203.0.113.9", "198.51.100.7", "192.0.2.1"].iter().enumerate() {
            let body = json!({"siteId": "loja", "visitorId": format!("v_visitor000{i}"), "events": [pageview(&i.to_string(), "/")]});
            let a = track_as(app, &body, &[("user-agent", UA), ("x-forwarded-for", ip)]).await;
            let s = fed
                .both(Some(&t), "getSession", json!({"siteId": "loja", "sessionId": a.body["sessionId"]}))
                .await
                .unwrap();
            found.push((s["country"].clone(), s["region"].clone()));
            assert!(!s.to_string().contains("Paulo") && !s.to_string().contains(ip), "no city, no address: {s}");
        }
        assert_eq!(found, vec![(json!("BR"), json!("BR-SP")), (json!("US"), Value::Null), (Value::Null, Value::Null)]);
        drain(app).await;
        let (from, to) = day_range();
        let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
        assert_eq!(
            o["countries"],
            json!([{"country": "BR", "sessions": 1}, {"country": "US", "sessions": 1}, {"country": null, "sessions": 1}])
        );
        fed.finish().await;
    }
    // An unreadable file stops start-up, naming the setting.
    let err = rastrod::config::Config::load_from(
        None,
        &[("RASTRO_GEOIP_DB".to_string(), "/nonexistent.mmdb".to_string())].into(),
    )
    .unwrap_err();
    assert!(err.contains("RASTRO_GEOIP_DB"), "{err}");
}

// rule: ARPT-01
backend_test!(report_ranges_are_integers_in_order_within_366_days, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let t = reader(&fed);
    let (from, to) = day_range();
    let page = json!({"numItems": 10, "cursor": null});
    for (f, tt) in [(json!(to), json!(from)), (json!(from - 400 * DAY), json!(to)), (json!("yesterday"), json!(to))] {
        let a = fed
            .both(Some(&t), "listSessions", json!({"siteId": "loja", "from": f, "to": tt, "paginationOpts": page}))
            .await;
        Fed::expect_err(a, 400, "INVALID_ARGUMENT");
        let c = fed.both(Some(&t), "dataCoverage", json!({"siteId": "loja", "from": f, "to": tt})).await;
        Fed::expect_err(c, 400, "INVALID_ARGUMENT");
    }
    let ok = fed
        .both(
            Some(&t),
            "listSessions",
            json!({"siteId": "loja", "from": from - 365 * DAY, "to": to, "paginationOpts": page}),
        )
        .await;
    assert!(ok.is_ok(), "366 UTC days");
});

// rule: CFG-03
backend_test!(domains_are_unique_lowercase_hosts_with_an_optional_port, analytics_builder, |fed| {
    let app = &fed.app;
    let create = |domains: Value| {
        app.post("/v1/sites", json!({"siteId": "loja", "name": "L", "currency": "BRL", "timezone": "UTC", "ownerId": "o1", "domains": domains}))
    };
    for bad in [
        json!(["Loja.com"]),
        json!(["https://loja.com"]),
        json!(["loja.com/x"]),
        json!(["*.loja.com"]),
        json!(["a@loja.com"]),
        json!(["loja.com", "loja.com"]),
        json!(["loja.com:0"]),
        json!(["loja.com:99999"]),
    ] {
        let a = create(bad.clone()).await;
        assert_eq!((a.status, a.code()), (400, "INVALID_ARGUMENT"), "{bad}");
    }
    assert_eq!(create(json!(["loja.com", "localhost:8080", "shop.loja.com"])).await.status, 201);
    assert_eq!(app.patch("/v1/sites/loja", json!({"domains": ["LOJA.com"]})).await.status, 400);
    fed.grant(&["loja"], &[READ, crate::federation::CONFIGURE]).await;
    let admin = fed.token(&[READ, crate::federation::CONFIGURE]);
    let a = fed.both(Some(&admin), "updateSite", json!({"siteId": "loja", "domains": ["Loja.com"]})).await;
    Fed::expect_err(a, 400, "INVALID_ARGUMENT");
});

// rule: SES-05
// rule: SES-04
backend_test!(a_cookieless_session_open_at_midnight_continues_under_its_id, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "pet", true).await;
    fed.grant(&["pet"], &[READ]).await;
    let t = reader(&fed);
    // Ten minutes before midnight, then fifteen after: one session, one visitor id.
    let midnight = T0 - T0.rem_euclid(DAY) + DAY;
    app.clock.set(midnight - 10 * MINUTE);
    let send = |id: &str| json!({"siteId": "pet", "events": [pageview(id, "/")]});
    track_as(app, &send("1"), &[("user-agent", UA)]).await;
    app.clock.set(midnight + 15 * MINUTE);
    track_as(app, &send("2"), &[("user-agent", UA)]).await;
    let live =
        fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["pet"], "now": midnight + 15 * MINUTE})).await.unwrap();
    assert_eq!(live["count"], 1, "{live}");
    assert_eq!(live["visitors"][0]["pageviews"], 2);
    // Salts of days that ended more than 48 hours ago go when a new day's salt is made.
    app.clock.set(midnight + 3 * DAY);
    track_as(app, &send("3"), &[("user-agent", UA)]).await;
    let days = app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            #[derive(diesel::QueryableByName)]
            struct D {
                #[diesel(sql_type = diesel::sql_types::BigInt)]
                day: i64,
            }
            Ok(diesel::sql_query("SELECT day FROM web_salts ORDER BY day")
                .load::<D>(c)?
                .into_iter()
                .map(|d| d.day)
                .collect::<Vec<_>>())
        })
        .await
        .unwrap();
    assert!(days.iter().all(|d| *d >= midnight + DAY), "old salts remain: {days:?}");
    assert!(days.contains(&(midnight + 3 * DAY)));
});

// rule: ROUTE-03
// rule: ROUTE-06
backend_test!(routes_group_pages_while_journeys_keep_raw_paths, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    app.patch("/v1/sites/loja", json!({"routePatterns": ["/p/:id"]})).await.ok();
    fed.grant(&["loja"], &[READ, PUBLIC]).await;
    let t = reader(&fed);
    let s = track(app, "loja", "v_visitor0001", vec![pageview("1", "/p/7"), pageview("2", "/p/8")]).await["sessionId"]
        .clone();
    let (from, to) = day_range();
    let j = fed
        .both(
            Some(&t),
            "sessionJourney",
            json!({"siteId": "loja", "sessionId": s, "from": from, "to": to,
            "paginationOpts": {"numItems": 10, "cursor": null}}),
        )
        .await
        .unwrap();
    assert_eq!((j["page"][0]["path"].as_str(), j["page"][0]["route"].as_str()), (Some("/p/7"), Some("/p/:id")));
    let live = fed.both(Some(&t), "liveVisitors", json!({"siteIds": ["loja"], "now": T0})).await.unwrap();
    assert_eq!(
        (live["visitors"][0]["currentPath"].as_str(), live["visitors"][0]["entryPath"].as_str()),
        (Some("/p/8"), Some("/p/7"))
    );
    let public =
        fed.key.sign(&with(claims(&[PUBLIC]), json!({"rastro_site_ids": ["loja"], "exp": T0 / 1000 + 86_400})));
    let pl = fed.both(Some(&public), "liveVisitors", json!({"siteIds": ["loja"], "now": T0})).await.unwrap();
    assert_eq!(pl["visitors"][0]["currentPath"], "/p/:id", "a public page sees the route, not the raw path");
    drain(app).await;
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": from, "to": to})).await.unwrap();
    assert_eq!(o["pages"], json!([{"route": "/p/:id", "pageviews": 2, "visitors": 1}]));
    assert_eq!(o["entryPages"], json!([{"route": "/p/:id", "sessions": 1}]));
});
