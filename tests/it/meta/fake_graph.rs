//! The fake Graph API (`rastrod::meta::fake`) over real HTTP: the sample
//! agency, tokens and the date shift, login codes, conversions, every fault
//! kind, pagination, insights sums against `sample_spend`, the row cap, the
//! request log, and `rastrod fake-graph` as its own process.

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use rastrod::meta::fake::{self, FakeGraph, SAMPLE_LAST_DAY, sample_accounts, sample_ads, sample_spend};
use serde_json::{Value, json};

use crate::common::T0;

const TOKEN: &str = "rastro-fake-sample-token:0";
const LOJA_X: &str = "act_1029384756";
const PIXEL_LOJA_X: &str = "111222333444";

struct Fake {
    graph: FakeGraph,
    http: reqwest::Client,
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Reply {
    #[track_caller]
    fn ok(self) -> Value {
        assert_eq!(self.status, 200, "{}", self.body);
        self.body
    }
    #[track_caller]
    fn graph_err(&self, status: u16, code: i64, subcode: Option<i64>) {
        assert_eq!(self.status, status, "{}", self.body);
        let e = &self.body["error"];
        assert_eq!(e["code"], code, "{}", self.body);
        assert_eq!(e["error_subcode"].as_i64(), subcode, "{}", self.body);
        assert_eq!(e["type"], "OAuthException");
        assert!(e["message"].is_string());
        assert!(e["fbtrace_id"].is_string());
    }
    fn header_json(&self, name: &str) -> Value {
        serde_json::from_str(self.headers.get(name).unwrap_or_else(|| panic!("no {name}")).to_str().unwrap()).unwrap()
    }
}

impl Fake {
    async fn start() -> Fake {
        Fake { graph: fake::start_at("127.0.0.1:0", T0).await.unwrap(), http: reqwest::Client::new() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v25.0{path}", self.graph.base_url)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        Reply { status, headers, body: serde_json::from_str(&text).unwrap_or(Value::String(text)) }
    }

    async fn get_abs(&self, token: Option<&str>, url: &str) -> Reply {
        let mut req = self.http.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.send(req).await
    }

    async fn get(&self, token: Option<&str>, path: &str) -> Reply {
        self.get_abs(token, &self.url(path)).await
    }

    async fn post_json(&self, token: Option<&str>, path: &str, body: &Value) -> Reply {
        let mut req = self.http.post(self.url(path)).json(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.send(req).await
    }

    async fn oauth(&self, form: &[(&str, &str)]) -> Reply {
        self.send(self.http.post(self.url("/oauth/access_token")).form(form)).await
    }

    async fn control(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/__fake{path}", self.graph.base_url);
        let req = match method {
            "GET" => self.http.get(url),
            _ => self.http.post(url).json(&body.unwrap_or(json!({}))),
        };
        let r = self.send(req).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }

    async fn fault(&self, fault: Value) {
        self.control("POST", "/faults", Some(fault)).await;
    }

    /// Every page of a list, following `paging.next`.
    async fn all_pages(&self, token: &str, path: &str) -> (Vec<Value>, usize) {
        let mut url = self.url(path);
        let mut rows = Vec::new();
        let mut pages = 0;
        loop {
            let page = self.get_abs(Some(token), &url).await.ok();
            pages += 1;
            rows.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["paging"]["next"].as_str() {
                Some(next) => {
                    assert!(next.starts_with(&self.graph.base_url), "absolute next: {next}");
                    assert!(!next.contains(token) && !next.contains("access_token"), "no token in {next}");
                    url = next.to_string();
                }
                None => return (rows, pages),
            }
        }
    }

    async fn insights(&self, token: &str, account: &str, since: &str, until: &str, limit: usize) -> Reply {
        let range = json!({"since": since, "until": until}).to_string();
        let req = self.http.get(self.url(&format!("/{account}/insights"))).bearer_auth(token).query(&[
            ("level", "ad"),
            ("time_increment", "1"),
            ("time_range", range.as_str()),
            ("fields", "ad_id,ad_name,adset_id,adset_name,campaign_id,campaign_name,spend,impressions,clicks,date_start,date_stop"),
            ("limit", &limit.to_string()),
        ]);
        self.send(req).await
    }
}

fn d(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn cents(spend: &str) -> i64 {
    let (units, frac) = spend.split_once('.').expect("two decimals");
    assert_eq!(frac.len(), 2, "{spend}");
    units.parse::<i64>().unwrap() * 100 + frac.parse::<i64>().unwrap()
}

/// (cents, impressions, clicks, rows) summed from insights rows.
fn sum_rows(rows: &[Value]) -> (i64, i64, i64, usize) {
    rows.iter().fold((0, 0, 0, 0), |(s, i, c, n), r| {
        (
            s + cents(r["spend"].as_str().unwrap()),
            i + r["impressions"].as_str().unwrap().parse::<i64>().unwrap(),
            c + r["clicks"].as_str().unwrap().parse::<i64>().unwrap(),
            n + 1,
        )
    })
}

/// The same sums from `sample_spend` alone, for served dates under `shift`.
fn expected(account: &str, since: NaiveDate, until: NaiveDate, shift: i64) -> (i64, i64, i64, usize) {
    let mut t = (0, 0, 0, 0);
    for ad in sample_ads().iter().filter(|a| a.account == account) {
        for day in since.iter_days().take_while(|x| *x <= until) {
            if let Some((s, i, c)) = sample_spend(ad.id, day - chrono::Duration::days(shift)) {
                t = (t.0 + s, t.1 + i, t.2 + c, t.3 + 1);
            }
        }
    }
    t
}

fn event(id: &str) -> Value {
    json!({
        "event_name": "Purchase",
        "event_time": 1_796_040_000,
        "event_id": id,
        "action_source": "chat",
        "user_data": {"ph": ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]},
        "custom_data": {"value": 459.9, "currency": "BRL"}
    })
}

// rule: FAKE-01
#[actix_web::test]
async fn the_sample_agency() {
    let f = Fake::start().await;
    let me = f.get(Some("any-token"), "/me?fields=id,name").await;
    assert_eq!(me.header_json("X-App-Usage")["call_count"], 1, "low usage by default");
    assert!(me.headers.contains_key("X-Ad-Account-Usage") && me.headers.contains_key("X-Business-Use-Case-Usage"));
    assert_eq!(me.ok(), json!({"id": "10001", "name": "Gestora Fake"}));

    let accounts = f
        .get(
            Some("any-token"),
            "/me/adaccounts?fields=id,account_id,name,currency,timezone_name,account_status&limit=100",
        )
        .await
        .ok();
    let accounts = accounts["data"].as_array().unwrap();
    assert_eq!(accounts.len(), 4);
    let loja = &accounts[0];
    assert_eq!(loja["id"], LOJA_X);
    assert_eq!(loja["account_id"], "1029384756");
    assert_eq!(loja["name"], "Agência Rastro — Loja X");
    assert_eq!(loja["currency"], "BRL");
    assert_eq!(loja["timezone_name"], "America/Sao_Paulo");
    assert_eq!(loja["account_status"], 1);
    let currencies: BTreeSet<_> = accounts.iter().map(|a| a["currency"].as_str().unwrap()).collect();
    assert!(currencies.len() >= 2 && currencies.contains("USD"), "{currencies:?}");
    let zones: BTreeSet<_> = accounts.iter().map(|a| a["timezone_name"].as_str().unwrap()).collect();
    assert_eq!(zones.len(), 4, "distinct timezones");
    let ids: Vec<_> = accounts.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, sample_accounts().iter().map(|a| a.id).collect::<Vec<_>>());

    // Pixels of Loja X and Pet Mania, by their accounts.
    let mut pixels = BTreeMap::new();
    for a in sample_accounts() {
        let p = f.get(Some("t"), &format!("/{}/adspixels?fields=id,name&limit=100", a.id)).await.ok();
        for p in p["data"].as_array().unwrap() {
            pixels.insert(p["name"].as_str().unwrap().to_string(), (a.id, p["id"].as_str().unwrap().to_string()));
        }
    }
    assert_eq!(pixels.len(), 2);
    assert_eq!(pixels["Pixel Loja X"], (LOJA_X, PIXEL_LOJA_X.to_string()));
    let pet = &pixels["Pixel Pet Mania"].1;
    assert_eq!(
        f.get(Some("t"), &format!("/{pet}?fields=id,name")).await.ok(),
        json!({"id": pet, "name": "Pixel Pet Mania"})
    );
    f.get(Some("t"), "/999999?fields=id,name").await.graph_err(400, 100, Some(33));

    // The catalog: the demo's ads, statuses, creative types, thumbnails.
    let ads = f
        .get(
            Some("t"),
            &format!(
                "/{LOJA_X}/ads?fields=id,name,effective_status,adset_id,campaign_id,creative{{object_type,thumbnail_url}}\
                 &thumbnail_width=320&thumbnail_height=320&limit=500"
            ),
        )
        .await
        .ok();
    let ads = ads["data"].as_array().unwrap();
    assert!(ads.len() >= 5);
    let video = ads.iter().find(|a| a["id"] == "120200000000000301").unwrap();
    assert_eq!(video["name"], "Vídeo oferta");
    assert_eq!(video["adset_id"], "120200000000000201");
    assert_eq!(video["campaign_id"], "120200000000000101");
    assert_eq!(video["effective_status"], "ACTIVE");
    assert_eq!(video["creative"]["object_type"], "VIDEO");
    assert!(video.get("status").is_none(), "only the fields asked for");
    let statuses: BTreeSet<_> = ads.iter().map(|a| a["effective_status"].as_str().unwrap()).collect();
    assert_eq!(statuses, BTreeSet::from(["ACTIVE", "PAUSED"]));
    let types: BTreeSet<_> = ads.iter().map(|a| a["creative"]["object_type"].as_str().unwrap()).collect();
    assert!(types.is_superset(&BTreeSet::from(["VIDEO", "PHOTO", "SHARE"])), "{types:?}");
    let thumb = video["creative"]["thumbnail_url"].as_str().unwrap();
    assert_eq!(thumb, format!("{}/fake-media/thumbnails/120200000000000301.png", f.graph.base_url));
    let img = f.http.get(thumb).send().await.unwrap();
    assert_eq!(img.status(), 200);
    assert_eq!(img.headers()["content-type"], "image/png");
    assert!(img.bytes().await.unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));

    // The filter on ids, and Pet Mania's demo ads.
    let filter = json!([{"field": "id", "operator": "IN", "value": ["120200000000000304", "120200000000000305"]}]);
    let pet_ads = f
        .send(
            f.http
                .get(f.url("/act_2038475610/ads"))
                .bearer_auth("t")
                .query(&[("fields", "id,name"), ("filtering", &filter.to_string())]),
        )
        .await
        .ok();
    assert_eq!(
        pet_ads["data"],
        json!([{"id": "120200000000000304", "name": "Vídeo antes e depois"}, {"id": "120200000000000305", "name": "Imagem pacote mensal"}])
    );
    f.graph.stop().await;
}

// rule: FAKE-02
#[actix_web::test]
async fn an_invalid_token_is_refused_everywhere() {
    let f = Fake::start().await;
    let bad = "EAAB-invalid-token";
    let range = "time_range=%7B%22since%22%3A%222026-11-01%22%2C%22until%22%3A%222026-11-02%22%7D";
    let paths = [
        "/me".to_string(),
        "/me/adaccounts".into(),
        format!("/{LOJA_X}"),
        format!("/{LOJA_X}/adspixels"),
        format!("/{LOJA_X}/ads"),
        format!("/{LOJA_X}/insights?level=ad&time_increment=1&{range}"),
        format!("/{PIXEL_LOJA_X}"),
        "/debug_token?input_token=abc".into(),
    ];
    for p in &paths {
        f.get(Some(bad), p).await.graph_err(400, 190, Some(463));
        let none = f.get(None, p).await;
        assert_eq!((none.status, none.body["error"]["code"].as_i64()), (400, Some(190)), "{p}: {}", none.body);
    }
    f.post_json(Some(bad), &format!("/{PIXEL_LOJA_X}/events"), &json!({"data": [event("e1")]})).await.graph_err(
        400,
        190,
        Some(463),
    );
    assert!(f.control("GET", "/deliveries", None).await.as_object().unwrap().is_empty());
    f.graph.stop().await;
}

// rule: FAKE-02
#[actix_web::test]
async fn the_sample_token_shifts_every_date() {
    let f = Fake::start().await;
    // Started at 2026-11-30T12:00Z: yesterday is the 29th everywhere, the canonical last day.
    for a in sample_accounts() {
        assert_eq!(f.graph.default_shift(a.id), Some(0), "{}", a.id);
    }
    let rows = |r: Value| r["data"].as_array().unwrap().clone();
    let plain = rows(f.insights("plain-token", LOJA_X, "2026-11-20", "2026-11-30", 5000).await.ok());
    let zero = rows(f.insights(TOKEN, LOJA_X, "2026-11-20", "2026-11-30", 5000).await.ok());
    assert_eq!(plain, zero);
    assert!(zero.iter().all(|r| r["date_start"] != "2026-11-30"), "nothing after the last day");
    assert_eq!(sum_rows(&zero), expected(LOJA_X, d("2026-11-20"), d("2026-11-30"), 0));

    // +7: the served 2026-11-27 is the canonical 2026-11-20; the last day is 2026-12-06.
    let later = rows(f.insights("rastro-fake-sample-token:7", LOJA_X, "2026-11-27", "2026-12-07", 5000).await.ok());
    assert_eq!(later.len(), zero.len());
    for (a, b) in later.iter().zip(&zero) {
        assert_eq!((&a["ad_id"], &a["spend"], &a["clicks"]), (&b["ad_id"], &b["spend"], &b["clicks"]));
        let (da, db) = (d(a["date_start"].as_str().unwrap()), d(b["date_start"].as_str().unwrap()));
        assert_eq!((da - db).num_days(), 7);
        assert_eq!(a["date_stop"], a["date_start"]);
    }
    assert!(later.iter().any(|r| r["date_start"].as_str().unwrap() > "2026-11-29"));
    assert!(later.iter().all(|r| r["date_start"] != "2026-12-07"));
    // -30: the sample ends on 2026-10-30.
    let earlier = rows(f.insights("rastro-fake-sample-token:-30", LOJA_X, "2026-10-25", "2026-11-29", 5000).await.ok());
    assert!(earlier.iter().all(|r| r["date_start"].as_str().unwrap() <= "2026-10-30"));
    assert_eq!(sum_rows(&earlier), expected(LOJA_X, d("2026-10-25"), d("2026-11-29"), -30));
    assert_eq!(fake::sample_token_for_last_day(d("2026-10-30")), "rastro-fake-sample-token:-30");

    // The default shift follows the start clock, per account timezone:
    // 2026-11-30T02:00Z is still the 29th in São Paulo but the 30th in Lisbon.
    let g = fake::start_at("127.0.0.1:0", T0 - 10 * 3_600_000).await.unwrap();
    assert_eq!(g.default_shift(LOJA_X), Some(-1));
    assert_eq!(g.default_shift("act_4056789132"), Some(0));
    g.stop().await;
    f.graph.stop().await;
}

// rule: FAKE-03
#[actix_web::test]
async fn login_codes() {
    let f = Fake::start().await;
    f.oauth(&[
        ("client_id", "1"),
        ("client_secret", "s"),
        ("redirect_uri", "https://x/cb"),
        ("code", "an-invalid-code"),
    ])
    .await
    .graph_err(400, 100, Some(36007));
    f.oauth(&[("client_id", "1"), ("client_secret", "invalid-secret"), ("code", "abc")])
        .await
        .graph_err(400, 101, None);

    // Any other code, even without any app id or secret: a system user token that never expires.
    let sys = f.oauth(&[("code", "AQD-some-code")]).await.ok();
    let sys_token = sys["access_token"].as_str().unwrap().to_string();
    assert!(sys_token.starts_with("fake-system-token-"));
    assert_eq!(sys["token_type"], "bearer");
    assert!(sys.get("expires_in").is_none());
    let dbg = f.get(Some("1|app-secret"), &format!("/debug_token?input_token={sys_token}")).await.ok();
    assert_eq!(
        (&dbg["data"]["type"], &dbg["data"]["expires_at"], &dbg["data"]["is_valid"]),
        (&json!("SYSTEM_USER"), &json!(0), &json!(true))
    );
    assert_eq!(dbg["data"]["app_id"], "1");
    assert_eq!(f.get(Some(&sys_token), "/me").await.ok()["id"], "10001");

    // user-token: short-lived, traded for a 60-day token.
    let user = f.oauth(&[("client_id", "1"), ("client_secret", "s"), ("code", "code-user-token-1")]).await.ok();
    assert_eq!(user["expires_in"], 7200);
    let short = user["access_token"].as_str().unwrap();
    assert!(short.starts_with("fake-user-token-"));
    let dbg = f.get(Some("1|s"), &format!("/debug_token?input_token={short}")).await.ok();
    assert_eq!(dbg["data"]["type"], "USER");
    assert!(dbg["data"]["expires_at"].as_i64().unwrap() > 0);
    let long = f
        .oauth(&[
            ("grant_type", "fb_exchange_token"),
            ("client_id", "1"),
            ("client_secret", "s"),
            ("fb_exchange_token", short),
        ])
        .await
        .ok();
    assert_eq!(long["expires_in"], 5_184_000);
    let long = long["access_token"].as_str().unwrap();
    let dbg = f.get(Some("1|s"), &format!("/debug_token?input_token={long}")).await.ok();
    assert_eq!(dbg["data"]["type"], "USER");
    let left = dbg["data"]["expires_at"].as_i64().unwrap() - chrono::Utc::now().timestamp();
    assert!((5_184_000 - 60..=5_184_000).contains(&left), "{left}");
    f.oauth(&[("grant_type", "fb_exchange_token"), ("fb_exchange_token", "x-invalid")]).await.graph_err(
        400,
        190,
        Some(463),
    );

    // A code carrying the sample shift passes it on to the token.
    let shifted = f.oauth(&[("code", "c.rastro-fake-sample-token:-2")]).await.ok();
    assert_eq!(fake::token_shift(shifted["access_token"].as_str().unwrap()), Some(-2));
    // debug_token of a refused token says so.
    let dbg = f.get(Some("1|s"), "/debug_token?input_token=old-invalid").await.ok();
    assert_eq!(dbg["data"]["is_valid"], false);
    assert_eq!(dbg["data"]["error"]["code"], 190);
    f.graph.stop().await;
}

// rule: FAKE-04
#[actix_web::test]
async fn conversions_are_accepted_and_counted() {
    let f = Fake::start().await;
    let path = format!("/{PIXEL_LOJA_X}/events");
    let r =
        f.post_json(Some("t"), &path, &json!({"data": [event("e1"), event("e2")], "test_event_code": "TEST123"})).await;
    assert_eq!(r.ok(), json!({"events_received": 2, "messages": [], "fbtrace_id": "fake"}));
    f.post_json(Some("t"), &path, &json!({"data": [event("e1")]})).await.ok();
    assert_eq!(f.control("GET", "/deliveries", None).await, json!({"e1": 2, "e2": 1}));
    let kept = f.control("GET", "/events", None).await;
    assert_eq!(kept[0]["pixelId"], PIXEL_LOJA_X);
    assert_eq!(kept[0]["testEventCode"], "TEST123");
    assert_eq!(kept[0]["event"]["custom_data"]["value"], 459.9);
    assert!(kept[2]["testEventCode"].is_null());

    // One malformed event rejects the whole batch; so do 1001 events.
    let mut raw = event("e4");
    raw["user_data"]["ph"] = json!(["5511999990000"]);
    for bad in [
        json!({"data": [event("e3"), raw]}),
        json!({"data": [event("e3"), {"event_name": "Lead", "event_id": "x", "action_source": "chat", "user_data": {"ph": []}}]}),
        json!({"data": [event("e3"), {"event_name": "Lead", "event_time": 1, "event_id": "x", "action_source": "chat"}]}),
        json!({"data": []}),
        json!({"data": (0..1001).map(|i| event(&format!("m{i}"))).collect::<Vec<_>>()}),
    ] {
        f.post_json(Some("t"), &path, &bad).await.graph_err(400, 100, None);
    }
    let full: Vec<Value> = (0..1000).map(|i| event(&format!("b{i}"))).collect();
    assert_eq!(f.post_json(Some("t"), &path, &json!({"data": full})).await.ok()["events_received"], 1000);
    let counts = f.control("GET", "/deliveries", None).await;
    assert_eq!(counts.as_object().unwrap().len(), 1002);
    assert!(counts.get("e3").is_none() && counts.get("m0").is_none());

    // Unknown pixel; a refused token.
    f.post_json(Some("t"), "/123/events", &json!({"data": [event("e5")]})).await.graph_err(400, 100, Some(33));
    f.post_json(Some("expired-invalid"), &path, &json!({"data": [event("e5")]})).await.graph_err(400, 190, Some(463));
    assert!(f.control("GET", "/deliveries", None).await.get("e5").is_none());
    assert_eq!(f.graph.deliveries()["e1"], 2);
    f.graph.stop().await;
}

#[actix_web::test]
async fn every_fault_kind() {
    let f = Fake::start().await;
    let ins = || f.insights(TOKEN, LOJA_X, "2026-11-01", "2026-11-02", 5000);

    // throttle: 80000 on insights, 17 elsewhere, with the usage headers; `times` is honoured.
    f.fault(json!({"match": "/insights", "kind": "throttle", "times": 2, "usagePct": 97, "regainMinutes": 42})).await;
    for _ in 0..2 {
        let r = ins().await;
        r.graph_err(400, 80000, Some(2446079));
        assert_eq!(r.header_json("X-App-Usage")["call_count"], 97);
        assert_eq!(r.header_json("X-Ad-Account-Usage")["acc_id_util_pct"], 97.0);
        let buc = r.header_json("X-Business-Use-Case-Usage");
        let (_, v) = buc.as_object().unwrap().iter().next().unwrap();
        assert_eq!(v[0]["estimated_time_to_regain_access"], 42);
        assert_eq!(v[0]["type"], "ads_insights");
    }
    let r = ins().await;
    assert_eq!(r.header_json("X-App-Usage")["call_count"], 1);
    r.ok();
    f.fault(json!({"match": "/me", "kind": "throttle"})).await;
    f.get(Some("t"), "/me").await.graph_err(400, 17, Some(2446079));
    f.get(Some("t"), "/me").await.ok();

    f.fault(json!({"match": "/adaccounts", "kind": "server_error"})).await;
    f.get(Some("t"), "/me/adaccounts").await.graph_err(500, 2, None);
    f.fault(json!({"match": "/me", "kind": "token_refused"})).await;
    f.get(Some("t"), "/me").await.graph_err(400, 190, Some(463));
    f.fault(json!({"match": "/insights", "kind": "too_much_data"})).await;
    ins().await.graph_err(500, 1, Some(1487534));
    f.fault(json!({"match": "/adspixels", "kind": "permission"})).await;
    f.get(Some("t"), &format!("/{LOJA_X}/adspixels")).await.graph_err(403, 200, None);
    f.get(Some("t"), &format!("/{LOJA_X}/adspixels")).await.ok();

    // slow: the fake waits server-side before answering.
    f.fault(json!({"match": "/me", "kind": "slow", "delayMs": 300})).await;
    let t = std::time::Instant::now();
    f.get(Some("t"), "/me").await.ok();
    assert!(t.elapsed() >= std::time::Duration::from_millis(300));

    // reject_batch: every batch holding the bad event, while the fault lasts.
    let path = format!("/{PIXEL_LOJA_X}/events");
    f.fault(json!({"match": "/events", "kind": "reject_batch", "badEventId": "bad"})).await;
    for _ in 0..3 {
        f.post_json(Some("t"), &path, &json!({"data": [event("good"), event("bad")]})).await.graph_err(400, 100, None);
    }
    f.post_json(Some("t"), &path, &json!({"data": [event("good")]})).await.ok();
    f.post_json(Some("t"), &path, &json!({"data": [event("bad")]})).await.graph_err(400, 100, None);
    assert_eq!(f.control("GET", "/deliveries", None).await, json!({"good": 1}));
    assert_eq!(f.control("GET", "/faults", None).await.as_array().unwrap().len(), 1);
    f.control("POST", "/reset", None).await;
    assert_eq!(f.control("GET", "/faults", None).await, json!([]));
    assert_eq!(f.control("GET", "/deliveries", None).await, json!({}));
    f.post_json(Some("t"), &path, &json!({"data": [event("bad")]})).await.ok();

    // A usage level of the test's choosing on every answer.
    f.control("POST", "/config", Some(json!({"usagePct": 80}))).await;
    assert_eq!(f.get(Some("t"), "/me").await.header_json("X-App-Usage")["call_count"], 80);
    f.graph.stop().await;
}

#[actix_web::test]
async fn cursor_pagination() {
    let f = Fake::start().await;
    let (accounts, pages) = f.all_pages("pager-token", "/me/adaccounts?fields=id,currency&limit=1").await;
    assert_eq!((accounts.len(), pages), (4, 4));
    let ids: Vec<_> = accounts.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, sample_accounts().iter().map(|a| a.id).collect::<Vec<_>>());

    // `after` by hand; the last page has no `next`.
    let first = f.get(Some("t"), "/me/adaccounts?limit=3").await.ok();
    let after = first["paging"]["cursors"]["after"].as_str().unwrap();
    let second = f.get(Some("t"), &format!("/me/adaccounts?limit=3&after={after}")).await.ok();
    assert_eq!(second["data"].as_array().unwrap().len(), 1);
    assert_eq!(second["data"][0]["id"], "act_4056789132");
    assert!(second["paging"].get("next").is_none());
    f.get(Some("t"), "/me/adaccounts?after=not-a-cursor").await.graph_err(400, 100, None);

    // Default page size 25; insights pages add up to the one-page answer.
    let (ads, pages) = f.all_pages("pager-token", &format!("/{LOJA_X}/ads?fields=id&limit=2")).await;
    assert_eq!(ads.len(), sample_ads().iter().filter(|a| a.account == LOJA_X).count());
    assert_eq!(pages, ads.len().div_ceil(2));
    let one = f.insights(TOKEN, LOJA_X, "2026-11-01", "2026-11-30", 5000).await.ok();
    let one = one["data"].as_array().unwrap();
    assert!(one.len() > 100);
    let r = f.insights(TOKEN, LOJA_X, "2026-11-01", "2026-11-30", 7).await.ok();
    let next = r["paging"]["next"].as_str().unwrap();
    let (paged, pages) = f.all_pages(TOKEN, next.strip_prefix(&f.url("")).unwrap()).await;
    let mut all: Vec<Value> = r["data"].as_array().unwrap().clone();
    all.extend(paged);
    assert_eq!(&all, one);
    assert_eq!(pages + 1, one.len().div_ceil(7));
    let default = f
        .send(f.http.get(f.url(&format!("/{LOJA_X}/insights"))).bearer_auth(TOKEN).query(&[
            ("level", "ad"),
            ("time_increment", "1"),
            ("time_range", r#"{"since":"2026-11-01","until":"2026-11-30"}"#),
        ]))
        .await
        .ok();
    assert_eq!(default["data"].as_array().unwrap().len(), 25);
    assert!(default["paging"]["next"].as_str().unwrap().contains("limit=25"));
    f.graph.stop().await;
}

#[actix_web::test]
async fn insights_sums_match_sample_spend() {
    let f = Fake::start().await;
    for a in sample_accounts() {
        let r = f.insights(TOKEN, a.id, "2026-07-01", "2026-11-30", 5000).await.ok();
        let rows = r["data"].as_array().unwrap();
        let want = expected(a.id, d("2026-07-01"), d("2026-11-30"), 0);
        assert_eq!(sum_rows(rows), want, "{}", a.id);
        // 150 days, gaps included: fewer rows than ads × days.
        let ads = sample_ads().iter().filter(|x| x.account == a.id).count();
        assert!(want.3 < ads * 150 && want.3 > ads * 100, "{}: {} rows", a.id, want.3);
        for row in rows {
            let ad = sample_ads().iter().find(|x| x.id == row["ad_id"]).unwrap();
            assert_eq!(ad.account, a.id);
            assert_eq!(
                (&row["ad_name"], &row["adset_name"], &row["campaign_name"]),
                (&json!(ad.name), &json!(ad.adset_name), &json!(ad.campaign_name))
            );
            assert_ne!(row["spend"], "0.00");
        }
    }
    // A gap: some ad has no row on some day within the range.
    let first = SAMPLE_LAST_DAY - chrono::Duration::days(149);
    assert!(sample_ads().iter().any(|a| first.iter_days().take(150).any(|day| sample_spend(a.id, day).is_none())));
    // The default token (no shift in it) sees the same, the fake having started at T0.
    let plain = f.insights("plain", LOJA_X, "2026-10-01", "2026-10-31", 5000).await.ok();
    assert_eq!(sum_rows(plain["data"].as_array().unwrap()), expected(LOJA_X, d("2026-10-01"), d("2026-10-31"), 0));
    // Bad arguments are code 100.
    f.insights(TOKEN, LOJA_X, "2026-11-02", "2026-11-01", 10).await.graph_err(400, 100, None);
    f.get(Some(TOKEN), &format!("/{LOJA_X}/insights?level=ad&time_increment=1")).await.graph_err(400, 100, None);
    f.graph.stop().await;
}

#[actix_web::test]
async fn the_row_cap_answers_too_much_data() {
    let f = Fake::start().await;
    let ads = sample_ads().iter().filter(|a| a.account == LOJA_X).count();
    f.control("POST", "/config", Some(json!({"insightsRowCap": ads}))).await;
    f.insights(TOKEN, LOJA_X, "2026-11-01", "2026-11-30", 5000).await.graph_err(500, 1, Some(1487534));
    f.insights(TOKEN, LOJA_X, "2026-11-01", "2026-11-02", 5000).await.graph_err(500, 1, Some(1487534));
    // Single days fit.
    let mut total = (0, 0, 0, 0);
    for day in d("2026-11-01").iter_days().take(30) {
        let s = day.format("%Y-%m-%d").to_string();
        let r = f.insights(TOKEN, LOJA_X, &s, &s, 5000).await.ok();
        let t = sum_rows(r["data"].as_array().unwrap());
        total = (total.0 + t.0, total.1 + t.1, total.2 + t.2, total.3 + t.3);
    }
    assert_eq!(total, expected(LOJA_X, d("2026-11-01"), d("2026-11-30"), 0));
    // A cap below one day's rows: even a single day is too much.
    f.control("POST", "/config", Some(json!({"insightsRowCap": 1}))).await;
    f.insights(TOKEN, LOJA_X, "2026-11-10", "2026-11-10", 5000).await.graph_err(500, 1, Some(1487534));
    f.graph.stop().await;
}

#[actix_web::test]
async fn the_request_log_keeps_no_token() {
    let f = Fake::start().await;
    let secret = "EAAG-secret-token-value";
    f.get(Some(secret), "/me?fields=id,name").await.ok();
    f.get(None, "/me").await;
    f.oauth(&[("client_id", "1"), ("client_secret", "app-secret"), ("code", "c1")]).await.ok();
    let log = f.control("GET", "/requests", None).await;
    assert_eq!(
        log[0],
        json!({"method": "GET", "path": "/v25.0/me", "query": "fields=id,name", "authorization": true, "bodyBytes": 0})
    );
    assert_eq!(log[1]["authorization"], false);
    assert_eq!(log[2]["method"], "POST");
    assert_eq!(log[2]["path"], "/v25.0/oauth/access_token");
    assert_eq!(log[2]["query"], "");
    assert!(log[2]["bodyBytes"].as_u64().unwrap() > 0);
    let text = log.to_string();
    assert!(!text.contains(secret) && !text.contains("app-secret"));
    f.graph.stop().await;
}

// rule: FAKE-06
#[actix_web::test]
async fn fake_graph_runs_alone() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .args(["fake-graph", "--listen", "127.0.0.1:0"])
        .env("RASTRO_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its log goes to stdout too: read up to the line announcing the URL.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("fake Graph API listening on ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "fake-graph exited early");
    }
    let base = line.split_whitespace().find(|w| w.starts_with("http://127.0.0.1:")).expect(&line).to_string();
    let me: Value = reqwest::Client::new()
        .get(format!("{base}/v25.0/me"))
        .bearer_auth("t")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["name"], "Gestora Fake");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    std::io::Read::read_to_end(&mut out, &mut Vec::new()).unwrap();
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    assert!(String::from_utf8_lossy(&done.stderr).contains("never use it for a customer"));
}
