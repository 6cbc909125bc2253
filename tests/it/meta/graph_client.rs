//! The Graph API client against a small scripted Graph server on loopback: pagination, tokens
//! only in the Authorization header, form bodies for /oauth/access_token, usage headers on
//! successes and errors, every error class (throttle, 5xx, timeout …), spend rounding and
//! creative types. Every error is checked for the canary secrets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use chrono::NaiveDate;
use rastrod::config::Secret;
use rastrod::meta::graph::{
    CreativeType, CustomData, ErrorClass, GRAPH_VERSION, GraphClient, GraphError, ServerEvent, UserData,
};
use serde_json::{Value, json};

const TOKEN: &str = "EAAGcanaryCONNECTIONtoken42";
const REFUSED_TOKEN: &str = "EAAGcanaryREFUSEDtoken43";
const APP_ID: &str = "1234";
const APP_SECRET: &str = "appSECRETcanary77";
const CODE: &str = "AQcanaryCODE99";
const USED_CODE: &str = "AQcanaryUSEDcode98";
const CANARIES: [&str; 5] = [TOKEN, REFUSED_TOKEN, APP_SECRET, CODE, USED_CODE];

#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    query: String,
    auth: Option<String>,
    content_type: Option<String>,
    body: String,
}

#[derive(Default)]
struct Log(Mutex<Vec<Seen>>);

struct Server {
    base: String,
    log: Arc<Log>,
    handle: actix_web::dev::ServerHandle,
}

impl Server {
    async fn start() -> Server {
        let log = Arc::new(Log::default());
        let data = web::Data::from(log.clone());
        let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(graph)))
            .workers(1)
            .bind(("127.0.0.1", 0))
            .unwrap();
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Server { base: format!("http://{addr}"), log, handle }
    }

    fn client(&self) -> GraphClient {
        GraphClient::new(&self.base, Duration::from_secs(5))
    }

    fn seen(&self) -> Vec<Seen> {
        self.log.0.lock().unwrap().clone()
    }

    fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    /// No secret in any URL, except the one Meta requires: `debug_token`'s `input_token`.
    fn assert_no_secret_in_urls(&self) {
        for s in self.seen() {
            let query = if s.path.ends_with("/debug_token") {
                s.query.split('&').filter(|p| !p.starts_with("input_token=")).collect::<Vec<_>>().join("&")
            } else {
                s.query.clone()
            };
            for c in CANARIES {
                assert!(!s.path.contains(c) && !query.contains(c), "a secret in the URL of {s:?}");
            }
            assert!(!query.contains("access_token"), "access_token in {s:?}");
        }
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

fn assert_clean(e: &GraphError) {
    for c in CANARIES {
        assert!(!format!("{e}").contains(c), "{e}");
        assert!(!format!("{e:?}").contains(c), "{e:?}");
    }
}

fn secret(s: &str) -> Secret {
    Secret::new(s)
}

fn urlencoded(s: &str) -> HashMap<String, String> {
    web::Query::<HashMap<String, String>>::from_query(s).map(|q| q.into_inner()).unwrap_or_default()
}

fn date(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn ok(body: Value) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("X-App-Usage", r#"{"call_count":28,"total_time":25,"total_cputime":25}"#))
        .insert_header(("X-Ad-Account-Usage", r#"{"acc_id_util_pct":9.67,"reset_time_duration":0}"#))
        .json(body)
}

/// A Graph error that echoes everything it was sent (as a careless server could).
fn graph_error(status: u16, code: i64, subcode: Option<i64>, req: &HttpRequest, echo: &str) -> HttpResponse {
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    let message = if code == 1 && subcode == Some(1_487_534) {
        "Please reduce the amount of data you're asking for, then retry your request".to_string()
    } else {
        format!("Invalid {auth} {} {echo}", req.query_string())
    };
    let regain = if code == 4 { 30 } else { 0 };
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .insert_header(("X-App-Usage", r#"{"call_count":100,"total_time":40,"total_cputime":40}"#))
        .insert_header((
            "X-Business-Use-Case-Usage",
            format!(
                r#"{{"777":[{{"type":"ads_insights","call_count":60,"total_cputime":20,"total_time":20,"estimated_time_to_regain_access":{regain}}}]}}"#
            ),
        ))
        .insert_header(("X-Echo", auth.to_string()))
        .json(json!({"error": {
            "message": message, "type": "OAuthException", "code": code, "error_subcode": subcode,
            "error_user_msg": format!("{auth} {echo}"), "fbtrace_id": auth,
        }}))
}

fn page(req: &HttpRequest, data: Vec<Value>, next_after: Option<&str>, extra: &str) -> Value {
    let mut body = json!({"data": data, "paging": {"cursors": {"before": "b", "after": next_after.unwrap_or("end")}}});
    if let Some(after) = next_after {
        let host = req.connection_info().host().to_string();
        let query: Vec<&str> = req.query_string().split('&').filter(|p| !p.starts_with("after=")).collect();
        body["paging"]["next"] = json!(format!("http://{host}{}?{}&after={after}{extra}", req.path(), query.join("&")));
    }
    body
}

fn insight(ad: &str, spend: &str, day: &str) -> Value {
    json!({"ad_id": ad, "ad_name": format!("Ad {ad}"), "adset_id": "5001", "adset_name": "Set", "campaign_id": "4001",
        "campaign_name": "Camp", "spend": spend, "impressions": "1000", "clicks": "37", "date_start": day, "date_stop": day})
}

fn catalog() -> Vec<Value> {
    let ad = |id: &str, creative: Value| {
        json!({"id": id, "name": format!("Ad {id}"), "effective_status": "ACTIVE", "adset_id": "5001",
            "campaign_id": "4001", "creative": creative})
    };
    let thumb = |id: &str| format!("https://scontent.test/{id}.png?stp=dst-jpg&_nc_sid=1");
    vec![
        ad("6001", json!({"id": "c1", "object_type": "VIDEO", "thumbnail_url": thumb("c1")})),
        ad("6002", json!({"id": "c2", "object_type": "PHOTO", "thumbnail_url": thumb("c2")})),
        ad(
            "6003",
            json!({"id": "c3", "object_type": "SHARE", "thumbnail_url": thumb("c3"),
                "object_story_spec": {"link_data": {"child_attachments": [{"link": "a"}, {"link": "b"}, {"link": "c"}]}}}),
        ),
        ad("6004", json!({"id": "c4", "object_type": "SHARE", "thumbnail_url": thumb("c4")})),
        ad("6005", json!({"id": "c5", "object_type": "CAROUSEL"})),
        ad("6006", json!({"id": "c6", "object_type": "STATUS"})),
        json!({"id": "6007", "name": "No creative", "effective_status": "PAUSED", "adset_id": "5001", "campaign_id": "4001"}),
    ]
}

/// The scripted Graph API.
async fn graph(req: HttpRequest, body: web::Bytes, log: web::Data<Log>) -> HttpResponse {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let auth = header("authorization");
    log.0.lock().unwrap().push(Seen {
        method: req.method().to_string(),
        path: req.path().to_string(),
        query: req.query_string().to_string(),
        auth: auth.clone(),
        content_type: header("content-type"),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let q = urlencoded(req.query_string());
    let after = q.get("after").map(String::as_str);

    // Thumbnails: no auth.
    if let Some(name) = req.path().strip_prefix("/thumb/") {
        return match name {
            "ok.png" => HttpResponse::Ok().content_type("image/png").body(vec![0x89, b'P', b'N', b'G', 1, 2, 3, 4]),
            "big.jpg" => HttpResponse::Ok().content_type("image/jpeg; charset=binary").body(vec![7u8; 4096]),
            "page.html" => HttpResponse::Ok().content_type("text/html").body("<html></html>"),
            "redirect" => {
                HttpResponse::Found().insert_header(("Location", "http://169.254.169.254/latest/meta-data")).finish()
            }
            _ => HttpResponse::NotFound().finish(),
        };
    }
    let Some(path) = req.path().strip_prefix(&format!("/{GRAPH_VERSION}")) else {
        return HttpResponse::NotFound().finish();
    };

    if path == "/oauth/access_token" {
        assert!(auth.is_none(), "no Authorization on /oauth/access_token");
        let form = urlencoded(&String::from_utf8_lossy(&body));
        let field = |k: &str| form.get(k).cloned().unwrap_or_default();
        if field("client_id") == "999" {
            return graph_error(400, 101, None, &req, &field("client_secret"));
        }
        if field("client_secret") != APP_SECRET {
            // Meta's wording for a bad secret.
            return HttpResponse::BadRequest().json(json!({"error": {"message": "Error validating client secret.",
                "type": "OAuthException", "code": 1, "fbtrace_id": "x"}}));
        }
        if field("grant_type") == "fb_exchange_token" {
            if field("fb_exchange_token") != TOKEN {
                return graph_error(400, 190, None, &req, &field("fb_exchange_token"));
            }
            return ok(json!({"access_token": "EAAlonglived", "token_type": "bearer", "expires_in": 5183944}));
        }
        if field("code").contains("USED") {
            return graph_error(400, 100, Some(36007), &req, &field("code"));
        }
        assert_eq!(field("redirect_uri"), "https://app.example.com/meta/retorno");
        return ok(json!({"access_token": "EAAsystem", "token_type": "bearer"}));
    }
    if path == "/debug_token" {
        if auth.as_deref() != Some(&format!("Bearer {APP_ID}|{APP_SECRET}")) {
            return graph_error(400, 190, None, &req, "");
        }
        let input = q.get("input_token").cloned().unwrap_or_default();
        if input.contains("slow") {
            actix_web::rt::time::sleep(Duration::from_secs(2)).await;
        }
        let (kind, expires_at) = if input == "EAAsystem" { ("SYSTEM_USER", 0) } else { ("USER", 1_800_000_000) };
        return ok(json!({"data": {"app_id": APP_ID, "type": kind, "is_valid": true, "expires_at": expires_at,
            "data_access_expires_at": 0, "scopes": ["ads_read"], "user_id": "10001"}}));
    }

    // Everything else: the connection's token in the header, only there.
    if auth.as_deref() == Some(&format!("Bearer {REFUSED_TOKEN}")) {
        return graph_error(400, 190, Some(463), &req, "");
    }
    if auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return graph_error(400, 190, None, &req, "");
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (req.method().as_str(), segments.as_slice()) {
        ("GET", ["me"]) => HttpResponse::Ok()
            .insert_header(("X-App-Usage", r#"{"call_count":28,"total_time":25,"total_cputime":25}"#))
            .insert_header(("X-Ad-Account-Usage", r#"{"acc_id_util_pct":9.67,"reset_time_duration":0}"#))
            .insert_header((
                "X-Business-Use-Case-Usage",
                r#"{"777":[{"type":"ads_insights","call_count":95,"total_cputime":20,"total_time":20,"estimated_time_to_regain_access":30}]}"#,
            ))
            .json(json!({"id": "10001", "name": "Ana Gestora"})),
        ("GET", ["me", "adaccounts"]) => {
            let account = |n: u32| {
                json!({"id": format!("act_{n}"), "account_id": n.to_string(), "name": format!("Conta {n}"),
                    "currency": "BRL", "timezone_name": "America/Sao_Paulo", "account_status": 1})
            };
            match after {
                // A careless `next` carrying the token: the client must strip it.
                None => ok(page(&req, vec![account(1), account(2)], Some("p2"), &format!("&access_token={TOKEN}"))),
                Some("p2") => HttpResponse::Ok()
                    .insert_header(("X-App-Usage", r#"{"call_count":80}"#))
                    .json(page(&req, vec![account(3)], Some("p3"), "")),
                Some("p3") => ok(page(&req, vec![account(4)], None, "")),
                _ => graph_error(400, 100, None, &req, ""),
            }
        }
        ("GET", ["act_1", "adspixels"]) => ok(page(&req, vec![json!({"id": "111222333444", "name": "Pixel Loja X"})], None, "")),
        ("GET", ["act_1", "insights"]) => {
            assert_eq!(q.get("level").map(String::as_str), Some("ad"));
            assert_eq!(q.get("time_increment").map(String::as_str), Some("1"));
            let range: Value = serde_json::from_str(q.get("time_range").unwrap()).unwrap();
            assert_eq!(range, json!({"since": "2026-10-01", "until": "2026-10-03"}));
            assert!(q.get("fields").unwrap().contains("spend"));
            match after {
                None => ok(page(
                    &req,
                    vec![insight("6001", "12.345", "2026-10-01"), insight("6002", "0.004", "2026-10-01")],
                    Some("i2"),
                    "",
                )),
                Some("i2") => ok(page(
                    &req,
                    vec![insight("6001", "123.45", "2026-10-02"), insight("6002", "0.005", "2026-10-02")],
                    Some("i3"),
                    "",
                )),
                Some("i3") => ok(page(&req, vec![insight("6001", "7", "2026-10-03")], None, "")),
                _ => graph_error(400, 100, None, &req, ""),
            }
        }
        ("GET", ["act_big", "insights"]) => graph_error(500, 1, Some(1_487_534), &req, ""),
        ("GET", ["act_partial", "insights"]) => match after {
            None => ok(page(&req, vec![insight("6001", "1.00", "2026-10-01")], Some("x2"), "")),
            _ => graph_error(500, 1, Some(1_487_534), &req, ""),
        },
        ("GET", ["act_1", "ads"]) => {
            assert_eq!(q.get("thumbnail_width").map(String::as_str), Some("320"));
            let mut ads = catalog();
            if let Some(filter) = q.get("filtering") {
                let filter: Value = serde_json::from_str(filter).unwrap();
                assert_eq!((&filter[0]["field"], &filter[0]["operator"]), (&json!("id"), &json!("IN")));
                let ids: Vec<Value> = filter[0]["value"].as_array().unwrap().clone();
                ads.retain(|a| ids.contains(&a["id"]));
                return ok(page(&req, ads, None, ""));
            }
            match after {
                None => ok(page(&req, ads[..4].to_vec(), Some("a2"), "")),
                _ => ok(page(&req, ads[4..].to_vec(), None, "")),
            }
        }
        ("POST", ["111222333444", "events"]) => {
            assert_eq!(header("content-type").as_deref(), Some("application/json"));
            let v: Value = serde_json::from_slice(&body).unwrap();
            let data = v["data"].as_array().unwrap();
            if data.iter().any(|e| e["event_id"] == "bad") {
                return graph_error(400, 100, None, &req, &String::from_utf8_lossy(&body));
            }
            ok(json!({"events_received": data.len(), "messages": [], "fbtrace_id": "t"}))
        }
        ("GET", ["111222333444"]) => ok(json!({"id": "111222333444", "name": "Pixel Loja X"})),
        ("GET", ["slow"]) => {
            actix_web::rt::time::sleep(Duration::from_secs(2)).await;
            ok(json!({"id": "slow", "name": "late"}))
        }
        ("GET", ["bare_503"]) => HttpResponse::ServiceUnavailable().content_type("text/html").body("<html>down</html>"),
        ("GET", ["bare_429"]) => HttpResponse::TooManyRequests().finish(),
        ("GET", ["not_json"]) => HttpResponse::Ok().content_type("text/html").body("<html>hi</html>"),
        ("GET", ["ok_error"]) => graph_error(200, 2, None, &req, ""),
        // err_<code>_<subcode or x>_<status>
        ("GET", [id]) if id.starts_with("err_") => {
            let parts: Vec<&str> = id.split('_').collect();
            let code = parts[1].parse().unwrap();
            let sub = parts[2].parse().ok();
            let status = parts[3].parse().unwrap();
            graph_error(status, code, sub, &req, "")
        }
        _ => graph_error(400, 100, None, &req, ""),
    }
}

#[actix_web::test]
async fn graph_pagination_follows_next_without_the_token_in_urls() {
    let s = Server::start().await;
    let got = s.client().ad_accounts(&secret(TOKEN)).await.unwrap();
    let ids: Vec<&str> = got.value.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["act_1", "act_2", "act_3", "act_4"]);
    assert_eq!(got.value[0].timezone_name, "America/Sao_Paulo");
    assert_eq!(got.value[0].account_status, 1);
    // The worst usage over the pages.
    assert_eq!(got.usage.max_pct, Some(80.0));
    assert!(got.usage.is_high());

    let seen = s.seen_at("/v25.0/me/adaccounts");
    assert_eq!(seen.len(), 3, "{seen:?}");
    for r in &seen {
        assert_eq!(r.auth.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
        assert!(r.query.contains("limit=100"), "{}", r.query);
    }
    assert!(seen[1].query.contains("after=p2") && seen[2].query.contains("after=p3"));

    let pixels = s.client().pixels(&secret(TOKEN), "act_1").await.unwrap();
    assert_eq!(pixels.value.len(), 1);
    assert_eq!(pixels.value[0].name, "Pixel Loja X");
    let pixel = s.client().pixel(&secret(TOKEN), "111222333444").await.unwrap();
    assert_eq!(pixel.value.id, "111222333444");
    let e = s.client().pixels(&secret(TOKEN), "act_1/../me").await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);

    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_usage_headers_on_success_and_on_error() {
    let s = Server::start().await;
    let me = s.client().me(&secret(TOKEN)).await.unwrap();
    assert_eq!((me.value.id.as_str(), me.value.name.as_str()), ("10001", "Ana Gestora"));
    assert_eq!(me.usage.max_pct, Some(95.0));
    assert_eq!(me.usage.regain_after, Some(Duration::from_secs(30 * 60)));

    let e = s.client().me(&secret(REFUSED_TOKEN)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::TokenRefused);
    assert_eq!(e.code_str(), "META_TOKEN_INVALID");
    assert_eq!((e.code, e.subcode, e.http_status), (Some(190), Some(463), Some(400)));
    assert_eq!(e.usage.max_pct, Some(100.0));
    assert_eq!(e.message, "Graph error code 190/463 (HTTP 400)");
    assert_clean(&e);

    let seen = s.seen_at("/v25.0/me");
    assert_eq!(seen[0].query, "fields=id%2Cname");
    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_insights_pages_and_spend_in_cents() {
    let s = Server::start().await;
    let c = s.client();
    let got = c.insights(&secret(TOKEN), "act_1", date("2026-10-01"), date("2026-10-03"), 2).await.unwrap();
    assert!(!got.value.truncated);
    let rows: Vec<(&str, NaiveDate, i64)> =
        got.value.rows.iter().map(|r| (r.ad_id.as_str(), r.date, r.spend_cents)).collect();
    assert_eq!(
        rows,
        [
            ("6001", date("2026-10-01"), 1235),
            ("6002", date("2026-10-01"), 0),
            ("6001", date("2026-10-02"), 12345),
            ("6002", date("2026-10-02"), 1),
            ("6001", date("2026-10-03"), 700),
        ]
    );
    assert_eq!((got.value.rows[0].impressions, got.value.rows[0].clicks), (1000, 37));
    assert_eq!(got.value.rows[0].campaign_name, "Camp");
    let seen = s.seen_at("/v25.0/act_1/insights");
    assert_eq!(seen.len(), 3);
    assert!(seen[0].query.contains("limit=2"));

    // Too much data on the first page: an error, so the caller asks for less.
    let e = c.insights(&secret(TOKEN), "act_big", date("2026-10-01"), date("2026-10-30"), 5000).await.unwrap_err();
    assert_eq!((e.class, e.code_str()), (ErrorClass::TooMuchData, "META_TRUNCATED"));
    assert_eq!(e.http_status, Some(500));
    assert_clean(&e);
    // On a later page: what came, marked truncated.
    let partial = c.insights(&secret(TOKEN), "act_partial", date("2026-10-01"), date("2026-10-01"), 1).await.unwrap();
    assert!(partial.value.truncated);
    assert_eq!(partial.value.rows.len(), 1);
    assert_eq!(partial.usage.max_pct, Some(100.0));
    // A range that ends before it starts asks nothing.
    let before = s.seen().len();
    let e = c.insights(&secret(TOKEN), "act_1", date("2026-10-02"), date("2026-10-01"), 10).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);
    assert_eq!(s.seen().len(), before);

    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_catalog_maps_creative_types() {
    let s = Server::start().await;
    let c = s.client();
    let all = c.ads(&secret(TOKEN), "act_1", None).await.unwrap();
    let types: Vec<(&str, &str)> = all.value.iter().map(|a| (a.id.as_str(), a.creative_type.as_str())).collect();
    assert_eq!(
        types,
        [
            ("6001", "video"),
            ("6002", "image"),
            ("6003", "carousel"),
            ("6004", "other"),
            ("6005", "carousel"),
            ("6006", "other"),
            ("6007", "other"),
        ]
    );
    assert_eq!(all.value[1].thumbnail_url.as_deref(), Some("https://scontent.test/c2.png?stp=dst-jpg&_nc_sid=1"));
    assert_eq!(all.value[0].effective_status, "ACTIVE");
    assert_eq!(all.value[6].creative_id, None);
    assert_eq!(s.seen_at("/v25.0/act_1/ads").len(), 2);

    let ids = vec!["6002".to_string(), "6005".to_string()];
    let some = c.ads(&secret(TOKEN), "act_1", Some(&ids)).await.unwrap();
    let got: Vec<(&str, CreativeType)> = some.value.iter().map(|a| (a.id.as_str(), a.creative_type)).collect();
    assert_eq!(got, [("6002", CreativeType::Image), ("6005", CreativeType::Carousel)]);
    assert!(s.seen_at("/v25.0/act_1/ads").last().unwrap().query.contains("filtering="));

    let before = s.seen().len();
    assert!(c.ads(&secret(TOKEN), "act_1", Some(&[])).await.unwrap().value.is_empty());
    assert_eq!(s.seen().len(), before, "an empty id list asks nothing");

    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_errors_by_class_with_no_secret_in_them() {
    let s = Server::start().await;
    let c = s.client();
    let cases = [
        ("err_190_460_400", ErrorClass::TokenRefused, "META_TOKEN_INVALID"),
        ("err_102_x_401", ErrorClass::TokenRefused, "META_TOKEN_INVALID"),
        ("err_10_x_403", ErrorClass::Permission, "PERMISSION_DENIED"),
        ("err_200_x_400", ErrorClass::Permission, "PERMISSION_DENIED"),
        ("err_4_x_400", ErrorClass::Throttled, "RATE_LIMITED"),
        ("err_17_x_400", ErrorClass::Throttled, "RATE_LIMITED"),
        ("err_80004_x_400", ErrorClass::Throttled, "RATE_LIMITED"),
        ("err_2_x_503", ErrorClass::Transient, "META_UNAVAILABLE"),
        ("err_1_x_500", ErrorClass::Transient, "META_UNAVAILABLE"),
        ("err_1_1487534_500", ErrorClass::TooMuchData, "META_TRUNCATED"),
        ("err_100_x_400", ErrorClass::Invalid, "META_INVALID"),
        // A Graph code wins over the status.
        ("err_100_x_503", ErrorClass::Invalid, "META_INVALID"),
        ("bare_503", ErrorClass::Transient, "META_UNAVAILABLE"),
        ("bare_429", ErrorClass::Throttled, "RATE_LIMITED"),
        ("not_json", ErrorClass::Invalid, "META_INVALID"),
        // An error envelope on a 200 is an error all the same.
        ("ok_error", ErrorClass::Transient, "META_UNAVAILABLE"),
    ];
    for (id, class, code) in cases {
        let e = c.pixel(&secret(TOKEN), id).await.unwrap_err();
        assert_eq!((e.class, e.code_str()), (class, code), "{id}: {e:?}");
        assert_eq!(e.op, "pixel");
        assert_clean(&e);
    }
    // Throttled: the usage and Meta's wait come with the error.
    let e = c.pixel(&secret(TOKEN), "err_4_x_400").await.unwrap_err();
    assert_eq!(e.usage.max_pct, Some(100.0));
    assert_eq!(e.usage.regain_after, Some(Duration::from_secs(30 * 60)));
    let e = c.pixel(&secret(TOKEN), "bare_503").await.unwrap_err();
    assert_eq!((e.code, e.http_status), (None, Some(503)));

    // A timeout (the server answers after 2 s, the client waits 200 ms).
    let quick = GraphClient::new(&s.base, Duration::from_millis(200));
    let e = quick.pixel(&secret(TOKEN), "slow").await.unwrap_err();
    assert_eq!((e.class, e.http_status), (ErrorClass::Transient, None));
    assert_eq!(e.message, "timed out");
    assert_clean(&e);
    // Nothing listening.
    let nowhere = GraphClient::new("http://127.0.0.1:1", Duration::from_secs(2));
    let e = nowhere.me(&secret(TOKEN)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Transient);
    assert_clean(&e);

    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_oauth_takes_secrets_in_a_form_body() {
    let s = Server::start().await;
    let c = s.client();
    let redirect = "https://app.example.com/meta/retorno";

    let grant = c.exchange_code(APP_ID, &secret(APP_SECRET), redirect, &secret(CODE)).await.unwrap();
    assert_eq!(grant.value.access_token.expose(), "EAAsystem");
    assert_eq!((grant.value.token_type.as_deref(), grant.value.expires_in), (Some("bearer"), None));
    assert!(!format!("{grant:?}").contains("EAAsystem"));
    let seen = s.seen_at("/v25.0/oauth/access_token");
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.query, "");
    assert_eq!(r.auth, None);
    assert_eq!(r.content_type.as_deref(), Some("application/x-www-form-urlencoded"));
    let form: HashMap<String, String> = urlencoded(&r.body);
    assert_eq!(form["client_id"], APP_ID);
    assert_eq!(form["client_secret"], APP_SECRET);
    assert_eq!(form["redirect_uri"], redirect);
    assert_eq!(form["code"], CODE);

    let long = c.exchange_long_lived(APP_ID, &secret(APP_SECRET), &secret(TOKEN)).await.unwrap();
    assert_eq!(long.value.access_token.expose(), "EAAlonglived");
    assert_eq!(long.value.expires_in, Some(5183944));
    let form = urlencoded(&s.seen_at("/v25.0/oauth/access_token")[1].body);
    assert_eq!(form["grant_type"], "fb_exchange_token");
    assert_eq!(form["fb_exchange_token"], TOKEN);

    // A used code is a refused token; a refused app id or secret is the app's problem.
    let e = c.exchange_code(APP_ID, &secret(APP_SECRET), redirect, &secret(USED_CODE)).await.unwrap_err();
    assert_eq!((e.class, e.code_str()), (ErrorClass::TokenRefused, "META_TOKEN_INVALID"));
    assert_clean(&e);
    let e = c.exchange_code(APP_ID, &secret("wrong-secret"), redirect, &secret(CODE)).await.unwrap_err();
    assert_eq!((e.class, e.code_str()), (ErrorClass::AppRefused, "META_LOGIN_UNAVAILABLE"));
    assert_clean(&e);
    let e = c.exchange_code("999", &secret(APP_SECRET), redirect, &secret(CODE)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::AppRefused);
    assert_clean(&e);
    let e = c.exchange_long_lived(APP_ID, &secret(APP_SECRET), &secret(REFUSED_TOKEN)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::TokenRefused);
    assert_clean(&e);

    // debug_token: the app's token in the header, the inspected one in the query.
    let info = c.debug_token(APP_ID, &secret(APP_SECRET), &secret("EAAsystem")).await.unwrap();
    assert!(info.value.is_valid);
    assert_eq!(info.value.expires_at, None);
    assert_eq!(info.value.token_type.as_deref(), Some("SYSTEM_USER"));
    assert_eq!(info.value.scopes, ["ads_read"]);
    let user = c.debug_token(APP_ID, &secret(APP_SECRET), &secret("EAAuser")).await.unwrap();
    assert_eq!((user.value.expires_at, user.value.token_type.as_deref()), (Some(1_800_000_000), Some("USER")));
    let seen = s.seen_at("/v25.0/debug_token");
    assert_eq!(seen[0].auth.as_deref(), Some(format!("Bearer {APP_ID}|{APP_SECRET}").as_str()));
    assert_eq!(seen[0].query, "input_token=EAAsystem");
    let e = c.debug_token(APP_ID, &secret("wrong-secret"), &secret(TOKEN)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::AppRefused);
    assert_clean(&e);
    // A timeout on the one URL that holds a token: the error does not name the URL.
    let quick = GraphClient::new(&s.base, Duration::from_millis(200));
    let slow_token = format!("{TOKEN}slow");
    let e = quick.debug_token(APP_ID, &secret(APP_SECRET), &secret(&slow_token)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Transient);
    assert!(!format!("{e} {e:?}").contains(&slow_token));
    assert_clean(&e);

    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_send_events_posts_json_with_the_token_in_the_header() {
    let s = Server::start().await;
    let c = s.client();
    let event = |id: &str| ServerEvent {
        event_name: "Purchase".into(),
        event_time: 1_764_460_800,
        event_id: id.into(),
        action_source: "chat".into(),
        messaging_channel: None,
        event_source_url: None,
        user_data: UserData {
            ph: vec!["a".repeat(64)],
            external_id: vec![],
            country: vec!["b".repeat(64)],
            lead_id: None,
            ..UserData::default()
        },
        custom_data: Some(CustomData { value: Some(459.9), currency: Some("BRL".into()), ..CustomData::default() }),
    };
    let got =
        c.send_events(&secret(TOKEN), "111222333444", &[event("e1"), event("e2")], Some("TEST123")).await.unwrap();
    assert_eq!(got.value, 2);
    assert_eq!(got.usage.max_pct, Some(28.0));
    let seen = s.seen_at("/v25.0/111222333444/events");
    assert_eq!((seen[0].method.as_str(), seen[0].query.as_str()), ("POST", ""));
    assert_eq!(seen[0].auth.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(body["test_event_code"], "TEST123");
    assert_eq!(body["data"][1]["event_id"], "e2");
    assert_eq!(body["data"][0]["custom_data"], json!({"value": 459.9, "currency": "BRL"}));
    assert_eq!(body["data"][0]["user_data"]["country"][0], "b".repeat(64));
    assert!(body["data"][0]["user_data"].get("external_id").is_none());

    // Plain JSON events, no test code.
    let raw =
        [json!({"event_name": "Lead", "event_time": 1, "event_id": "e3", "action_source": "chat", "user_data": {}})];
    assert_eq!(c.send_events(&secret(TOKEN), "111222333444", &raw, None).await.unwrap().value, 1);
    let body: Value = serde_json::from_str(&s.seen_at("/v25.0/111222333444/events")[1].body).unwrap();
    assert!(body.get("test_event_code").is_none());

    // One bad event rejects the batch.
    let bad = [json!({"event_id": "bad", "user_data": {"ph": [TOKEN]}})];
    let e = c.send_events(&secret(TOKEN), "111222333444", &bad, None).await.unwrap_err();
    assert_eq!((e.class, e.code), (ErrorClass::Invalid, Some(100)));
    assert_clean(&e);

    // Nothing is sent for an empty batch or one over 1000 events.
    let before = s.seen().len();
    let none: [Value; 0] = [];
    assert_eq!(c.send_events(&secret(TOKEN), "111222333444", &none, None).await.unwrap().value, 0);
    let many = vec![json!({}); 1001];
    let e = c.send_events(&secret(TOKEN), "111222333444", &many, None).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);
    assert_eq!(s.seen().len(), before);

    s.assert_no_secret_in_urls();
    s.stop().await;
}

#[actix_web::test]
async fn graph_downloads_thumbnails_with_a_size_cap() {
    let s = Server::start().await;
    let c = s.client();
    let got = c.download(&format!("{}/thumb/ok.png", s.base), 1024).await.unwrap();
    assert_eq!(got.content_type, "image/png");
    assert_eq!(got.bytes, [0x89, b'P', b'N', b'G', 1, 2, 3, 4]);
    assert!(s.seen_at("/thumb/ok.png")[0].auth.is_none(), "no token on a thumbnail");

    let big = c.download(&format!("{}/thumb/big.jpg", s.base), 4096).await.unwrap();
    assert_eq!((big.content_type.as_str(), big.bytes.len()), ("image/jpeg", 4096));
    let e = c.download(&format!("{}/thumb/big.jpg", s.base), 1000).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);
    let e = c.download(&format!("{}/thumb/page.html", s.base), 1000).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);
    let e = c.download(&format!("{}/thumb/missing.png", s.base), 1000).await.unwrap_err();
    assert_eq!((e.class, e.http_status), (ErrorClass::Invalid, Some(404)));
    // A redirect to a disallowed address is not followed.
    let e = c.download(&format!("{}/thumb/redirect", s.base), 1000).await.unwrap_err();
    assert_eq!((e.class, e.http_status), (ErrorClass::Invalid, Some(302)));
    let e = c.download("http://10.0.0.1/x.png", 1000).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Invalid);
    s.stop().await;
}
