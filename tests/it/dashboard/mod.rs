//! The dashboard over HTTP here; `signin_limits` (the sign-in limit cannot be
//! turned against the operators) beside it.
//!
//! The dashboard over HTTP: operators, sign-in, the session cookie, CSRF, the
//! read-only operator, the rate limit, and the routes' answers against the
//! host API's. (The browser tests are in `browser`.)

mod live_push;
mod signin_limits;

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::{Answer, DAY, T0, TestApp, fake_meta_builder};
use rastrod::config::Secret;
use rastrod::service::operators::{self, AddOperator};

pub const PASSWORD: &str = "senha-do-operador-1";

/// Creates an operator straight through the service (what `rastrod operator add` calls).
pub async fn operator(app: &TestApp, name: &str, configure: bool, owner: &str) {
    let input = AddOperator {
        name: name.into(),
        password: Secret::new(PASSWORD),
        can_configure: configure,
        owner_key: owner.into(),
    };
    operators::add(&app.state.cx, app.state.now(), input).await.unwrap();
}

/// A signed-in browser without the browser: the cookie and the CSRF token.
pub struct Dash {
    pub base: String,
    pub http: reqwest::Client,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
    pub set_cookie: String,
}

impl Dash {
    pub fn new(app: &TestApp) -> Dash {
        Dash {
            base: app.base.clone(),
            http: reqwest::Client::new(),
            cookie: None,
            csrf: None,
            set_cookie: String::new(),
        }
    }

    pub async fn sign_in(app: &TestApp, name: &str, password: &str) -> (Dash, Answer) {
        let mut d = Dash::new(app);
        let res = d
            .http
            .post(format!("{}/dashboard/api/signin", d.base))
            .json(&json!({"name": name, "password": password}))
            .send()
            .await
            .unwrap();
        d.set_cookie = res.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        d.cookie = d.set_cookie.split(';').next().filter(|c| c.starts_with("rastro_sessao=")).map(str::to_string);
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        d.csrf = body["csrfToken"].as_str().map(str::to_string);
        (d, Answer { status, body, text })
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>, csrf: bool) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(c) = &self.cookie {
            req = req.header("cookie", c);
        }
        if csrf && let Some(t) = &self.csrf {
            req = req.header("x-csrf-token", t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), text }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.call("GET", path, None, false).await
    }
    pub async fn write(&self, method: &str, path: &str, body: Value) -> Answer {
        self.call(method, path, Some(body), true).await
    }
}

/// The demo: two sites with leads, the sample agency connected, linked and synced.
pub async fn demo(app: &TestApp) {
    rastrod::demo::seed(&app.state.cx, T0).await.unwrap();
    rastrod::demo::connect_agency(&app.state, T0).await.unwrap();
}

/// The page's default range: the 30 UTC days before today.
pub fn last_30_days() -> (i64, i64) {
    let today = T0 - T0.rem_euclid(DAY);
    (today - 30 * DAY, today - 1)
}

backend_test!(the_page_and_its_files_are_served_from_the_binary, |app| {
    let page = app.with_key(None).get("/").await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains(r#"<script type="module" src="/dashboard/assets/app.js">"#), "{}", page.text);
    let res = reqwest::get(format!("{}/", app.base)).await.unwrap();
    let csp = res.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    // The script is native ES modules: every file of assets/dashboard is served,
    // each script as JavaScript (a module of any other type is refused), and
    // every import names a served file by its relative path.
    let served = |name: &str| rastrod::http::dashboard::assets::FILES.iter().any(|(n, _, _)| *n == name);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/dashboard");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".html") {
            continue;
        }
        let res = reqwest::get(format!("{}/dashboard/assets/{name}", app.base)).await.unwrap();
        assert_eq!(res.status(), 200, "{name}");
        let kind = res.headers()["content-type"].to_str().unwrap().to_string();
        let body = res.text().await.unwrap();
        if name.ends_with(".js") {
            assert!(kind.starts_with("text/javascript"), "{name}: {kind}");
            for import in body.lines().filter(|l| l.starts_with("import ")) {
                let target = import.split('"').nth(1).and_then(|t| t.strip_prefix("./"));
                assert!(target.is_some_and(served), "{name}: {import}");
            }
        }
    }
    app.with_key(None).get("/dashboard/assets/../Cargo.toml").await.err(404, "NOT_FOUND");
    let callback = app.with_key(None).get("/meta/retorno?code=abc&state=x").await;
    assert!(
        callback.status == 200
            && callback.text.contains(r#"<script type="module" src="/dashboard/assets/retorno.js">"#)
    );
    // The first screen's whole weight, uncompressed, is far under the 200 KB budget.
    assert!(rastrod::http::dashboard::assets::total_bytes() < 200 * 1024);
});

// rule: SEC-05
backend_test!(every_dashboard_route_but_sign_in_needs_a_session, |app| {
    let d = Dash::new(&app);
    for (method, path) in [
        ("GET", "/dashboard/api/session"),
        ("GET", "/dashboard/api/sites"),
        ("POST", "/dashboard/api/reports/leads"),
        ("GET", "/dashboard/api/meta/connection"),
        ("POST", "/dashboard/api/sites/loja-x/ad-accounts"),
        ("GET", "/dashboard/api/sites/loja-x/links"),
        ("POST", "/dashboard/api/sites/loja-x/links"),
        ("PATCH", "/dashboard/api/sites/loja-x/links/l_000000000000000000000000"),
        ("DELETE", "/dashboard/api/sites/loja-x/links/l_000000000000000000000000"),
        ("POST", "/dashboard/api/signout"),
    ] {
        d.call(method, path, Some(json!({})), false).await.err(401, "UNAUTHENTICATED");
    }
    // A made-up cookie opens nothing either.
    let forged = Dash { cookie: Some(format!("rastro_sessao={}", "a".repeat(64))), ..Dash::new(&app) };
    forged.get("/dashboard/api/sites").await.err(401, "UNAUTHENTICATED");
});

backend_test!(sign_in_sets_a_strict_http_only_cookie_and_sign_out_ends_it, |app| {
    operator(&app, "ana", true, "agency:1").await;
    let (d, a) = Dash::sign_in(&app, "ana", PASSWORD).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.body["operator"], json!({"name": "ana", "canConfigure": true, "ownerKey": "agency:1"}));
    assert!(!a.text.contains(PASSWORD) && !a.text.contains("argon2"), "{}", a.text);
    let c = &d.set_cookie;
    assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Path=/"), "{c}");
    assert!(!c.contains("Secure"), "plain http on loopback: no Secure flag");
    let me = d.get("/dashboard/api/session").await.ok();
    assert_eq!(me["operator"]["name"], "ana");
    assert_eq!(me["now"], T0);
    assert_eq!(me["audience"], "agency");
    // The session id is stored hashed: the cookie's value is nowhere in the table.
    let raw = d.cookie.clone().unwrap().trim_start_matches("rastro_sessao=").to_string();
    let n = app.count("operator_sessions").await;
    assert_eq!(n, 1);
    // Sign-out needs the CSRF token too, then the cookie opens nothing.
    d.call("POST", "/dashboard/api/signout", Some(json!({})), false).await.err(403, "FORBIDDEN");
    let out = d.write("POST", "/dashboard/api/signout", json!({})).await;
    assert_eq!(out.status, 200);
    d.get("/dashboard/api/session").await.err(401, "UNAUTHENTICATED");
    assert_eq!(app.count("operator_sessions").await, 0);
    assert_eq!(raw.len(), 64);
});

backend_test!(the_cookie_is_secure_behind_https, |app| {
    operator(&app, "ana", true, "agency:1").await;
    let res = reqwest::Client::new()
        .post(format!("{}/dashboard/api/signin", app.base))
        .header("x-forwarded-proto", "https")
        .json(&json!({"name": "ana", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let c = res.headers()["set-cookie"].to_str().unwrap();
    assert!(c.contains("; Secure"), "{c}");
});

backend_test!(the_session_ends_after_twelve_hours, |app| {
    operator(&app, "ana", false, "agency:1").await;
    let (d, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    app.clock.advance(operators::SESSION_TTL_MS - 1);
    assert_eq!(d.get("/dashboard/api/sites").await.status, 200);
    app.clock.advance(1);
    d.get("/dashboard/api/sites").await.err(401, "UNAUTHENTICATED");
});

backend_test!(wrong_passwords_are_refused_alike_and_rate_limited, |app| {
    operator(&app, "ana", true, "agency:1").await;
    let (_, a) = Dash::sign_in(&app, "ana", "senha-errada-123").await;
    a.err(401, "UNAUTHENTICATED");
    let (_, b) = Dash::sign_in(&app, "ninguem", "senha-errada-123").await;
    b.err(401, "UNAUTHENTICATED");
    assert_eq!(a.body["message"], b.body["message"], "an unknown name and a wrong password look alike");
    for _ in 1..operators::MAX_FAILURES_PER_NAME {
        Dash::sign_in(&app, "ana", "senha-errada-123").await.1.err(401, "UNAUTHENTICATED");
    }
    // Past the limit even the right password waits.
    let (d, c) = Dash::sign_in(&app, "ana", PASSWORD).await;
    c.err(429, "RATE_LIMITED");
    assert!(d.cookie.is_none());
    app.clock.advance(operators::FAILURE_WINDOW_MS);
    let (_, ok) = Dash::sign_in(&app, "ana", PASSWORD).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // Malformed bodies are 400, never a 500.
    let res = reqwest::Client::new()
        .post(format!("{}/dashboard/api/signin", app.base))
        .header("content-type", "application/json")
        .body("{\"name\": 1}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
});

backend_test!(writes_need_the_csrf_token_and_the_right_to_configure, fake_meta_builder, |app| {
    demo(&app).await;
    operator(&app, "leitor", false, rastrod::demo::DEMO_OWNER).await;
    operator(&app, "ana", true, rastrod::demo::DEMO_OWNER).await;
    let (reader, _) = Dash::sign_in(&app, "leitor", PASSWORD).await;
    let (writer, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    let sync = "/dashboard/api/sites/loja-x/meta/sync";
    // No token, or another session's token: refused before anything runs.
    writer.call("POST", sync, Some(json!({})), false).await.err(403, "FORBIDDEN");
    let crossed = Dash { csrf: reader.csrf.clone(), ..Dash::new(&app) };
    let crossed = Dash { cookie: writer.cookie.clone(), ..crossed };
    crossed.write("POST", sync, json!({})).await.err(403, "FORBIDDEN");
    // A read-only operator reads everything and changes nothing.
    assert_eq!(reader.get("/dashboard/api/meta/connection").await.status, 200);
    let refused = reader.write("POST", sync, json!({})).await;
    refused.err(403, "FORBIDDEN");
    assert!(refused.body["message"].as_str().unwrap().contains("read"));
    let unlink = "/dashboard/api/sites/loja-x/ad-accounts/act_1029384756";
    reader.write("DELETE", unlink, json!({})).await.err(403, "FORBIDDEN");
    let s = app.post("/v1/meta/status", json!({"siteIds": ["loja-x"]})).await.ok();
    assert_eq!(s[0]["linked"], true, "the refused unlink changed nothing");
    assert_eq!(writer.write("POST", sync, json!({})).await.status, 200);
});

backend_test!(the_report_carries_the_metrics_of_the_service, fake_meta_builder, |app| {
    demo(&app).await;
    operator(&app, "ana", false, rastrod::demo::DEMO_OWNER).await;
    let (d, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    let (from, to) = last_30_days();
    let args = json!({"siteIds": ["loja-x", "pet-mania"], "from": from, "to": to});
    let mine = d.write("POST", "/dashboard/api/reports/leads", args.clone()).await.ok();
    let host = app.post("/v1/reports/leads", args).await.ok();
    assert_eq!(mine["totals"]["leads"], host["totals"]["leads"]);
    assert!(host["totals"]["spendCents"].as_i64().unwrap() > 0);
    use rastrod::service::leads::metrics::{RowCounts, format_money, format_return, row_metrics};
    let mut ads = 0;
    for (c_mine, c_host) in mine["campaigns"].as_array().unwrap().iter().zip(host["campaigns"].as_array().unwrap()) {
        for (a_mine, a_host) in c_mine["adsets"].as_array().unwrap().iter().zip(c_host["adsets"].as_array().unwrap()) {
            for (ad, h) in a_mine["ads"].as_array().unwrap().iter().zip(a_host["ads"].as_array().unwrap()) {
                let m = row_metrics(RowCounts {
                    leads: h["leads"].as_i64().unwrap(),
                    qualified: h["qualified"].as_i64().unwrap(),
                    won: h["won"].as_i64().unwrap(),
                    revenue_cents: h["revenueCents"].as_i64().unwrap(),
                    spend_cents: h["spendCents"].as_i64(),
                });
                assert_eq!(ad["fmt"]["spend"], format_money(h["spendCents"].as_i64(), "BRL"));
                assert_eq!(ad["fmt"]["costPerLead"], format_money(m.cost_per_lead_cents, "BRL"));
                assert_eq!(ad["fmt"]["returnOnSpend"], format_return(m.return_on_spend));
                ads += 1;
            }
        }
    }
    assert!(ads >= 5);
    // rule: METRIC-03
    // The totals include organic leads: no cost is computed from them.
    assert_eq!(mine["totals"]["fmt"]["costPerLead"], "—");
    let paid = mine["origins"].as_array().unwrap().iter().find(|o| o["origin"] == "ctwa_ad").unwrap();
    assert_ne!(paid["fmt"]["costPerLead"], "—");
});

// rule: FAKE-07
backend_test!(the_demo_ads_land_in_the_three_return_bands, fake_meta_builder, |app| {
    demo(&app).await;
    operator(&app, "ana", false, rastrod::demo::DEMO_OWNER).await;
    let (d, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    let (from, to) = last_30_days();
    let args = json!({"siteIds": ["loja-x", "pet-mania"], "from": from, "to": to});
    let report = d.write("POST", "/dashboard/api/reports/leads", args).await.ok();
    let mut bands = std::collections::BTreeMap::new();
    for c in report["campaigns"].as_array().unwrap() {
        bands.insert(c["campaignId"].as_str().unwrap().to_string(), c["fmt"]["band"].clone());
        for s in c["adsets"].as_array().unwrap() {
            for ad in s["ads"].as_array().unwrap() {
                bands.insert(ad["adId"].as_str().unwrap().to_string(), ad["fmt"]["band"].clone());
            }
        }
    }
    // Each ad aimed well inside its band (14x, 6x, 2x), and so are the campaigns.
    let want = [
        ("120200000000000301", "strong"),
        ("120200000000000302", "ok"),
        ("120200000000000303", "weak"),
        ("120200000000000304", "ok"),
        ("120200000000000305", "ok"),
    ];
    for (ad, band) in want {
        assert!(rastrod::demo::DEMO_ADS.iter().any(|a| a.5 == ad));
        assert_eq!(bands[ad], band, "{ad}: {report}");
    }
    let campaigns = [("120200000000000101", "strong"), ("120200000000000103", "ok"), ("120200000000000102", "weak")];
    for (campaign, band) in campaigns {
        assert_eq!(bands[campaign], band, "{campaign}: {report}");
    }
    // A day of slack either side of the range moves no ad to another band.
    for (from, to) in [(from - DAY, to - DAY), (from + DAY, to)] {
        let args = json!({"siteIds": ["loja-x", "pet-mania"], "from": from, "to": to});
        let r = d.write("POST", "/dashboard/api/reports/leads", args).await.ok();
        for c in r["campaigns"].as_array().unwrap() {
            for s in c["adsets"].as_array().unwrap() {
                for ad in s["ads"].as_array().unwrap() {
                    if let Some((_, band)) = want.iter().find(|(id, _)| ad["adId"] == *id) {
                        assert_eq!(ad["fmt"]["band"], *band, "{}", ad["adId"]);
                    }
                }
            }
        }
    }
});

// rule: LINK-08
backend_test!(an_operator_cannot_undo_what_another_owner_linked, fake_meta_builder, |app| {
    demo(&app).await;
    // The operator acts for another agency, connected through the fake too.
    operator(&app, "outra", true, "agency:other").await;
    let (d, _) = Dash::sign_in(&app, "outra", PASSWORD).await;
    let conn = d.write("PUT", "/dashboard/api/meta/connection", json!({"accessToken": "any-token"})).await;
    assert_eq!(conn.status, 200, "{}", conn.text);
    assert!(!conn.text.contains("any-token"));
    let status = d.write("POST", "/dashboard/api/meta/status", json!({"siteIds": ["loja-x"]})).await.ok();
    assert_eq!(status[0]["adAccounts"][0]["own"], false);
    assert_eq!(status[0]["pixel"]["own"], false);
    d.write("DELETE", "/dashboard/api/sites/loja-x/ad-accounts/act_1029384756", json!({})).await.err(409, "CONFLICT");
    d.write("DELETE", "/dashboard/api/sites/loja-x/pixel", json!({})).await.err(409, "CONFLICT");
    // rule: BOARD-08
    d.write("PUT", "/dashboard/api/sites/loja-x/event-map", json!({"columns": {"agendado": "Schedule"}}))
        .await
        .err(409, "CONFLICT");
});

backend_test!(the_events_sheet_saves_and_copies_to_the_other_clients, fake_meta_builder, |app| {
    demo(&app).await;
    operator(&app, "ana", true, rastrod::demo::DEMO_OWNER).await;
    let (d, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    let body =
        json!({"columns": {"agendado": "Schedule", "fechado": null}, "sendLeadEvent": false, "copyToOthers": true});
    let saved = d.write("PUT", "/dashboard/api/sites/loja-x/event-map", body).await.ok();
    assert_eq!(saved["copiedTo"], json!(["pet-mania"]));
    for site in ["loja-x", "pet-mania"] {
        let map = app.get(&format!("/v1/sites/{site}/event-map")).await.ok();
        let col = map["columns"].as_array().unwrap().iter().find(|c| c["key"] == "agendado").unwrap().clone();
        assert_eq!(col["event"], "Schedule", "{site}");
    }
    // rule: BOARD-06
    d.write("PUT", "/dashboard/api/sites/loja-x/event-map", json!({"columns": {"nope": "Lead"}}))
        .await
        .err(400, "INVALID_ARGUMENT");
});

backend_test!(link_preview_and_unlink_through_the_dashboard, fake_meta_builder, |app| {
    demo(&app).await;
    operator(&app, "ana", true, rastrod::demo::DEMO_OWNER).await;
    let (d, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    let p = d.get("/dashboard/api/sites/loja-x/ad-accounts/act_1029384756/unlink-preview").await.ok();
    let host = app.get("/v1/sites/loja-x/ad-accounts/act_1029384756/unlink-preview").await.ok();
    assert_eq!(p["spendCents"], host["spendCents"]);
    assert_eq!(p["spend"], rastrod::service::leads::metrics::format_money(host["spendCents"].as_i64(), "BRL"));
    let removed = d.write("DELETE", "/dashboard/api/sites/loja-x/ad-accounts/act_1029384756", json!({})).await.ok();
    assert_eq!(removed["removed"], true);
    let linked =
        d.write("POST", "/dashboard/api/sites/loja-x/ad-accounts", json!({"adAccountId": "act_1029384756"})).await;
    assert_eq!(linked.status, 200, "{}", linked.text);
    let s = app.post("/v1/meta/status", json!({"siteIds": ["loja-x"]})).await.ok();
    assert_eq!(s[0]["adAccounts"][0]["adAccountId"], "act_1029384756");
    // The login code path: any code logs in under the fake; the redirect must be ours.
    let code = d
        .write(
            "POST",
            "/dashboard/api/meta/connection/code",
            json!({"code": "code-1", "redirectUri": format!("{}/meta/retorno", app.base)}),
        )
        .await;
    assert_eq!(code.status, 200, "{}", code.text);
    let conn = d.get("/dashboard/api/meta/connection").await.ok();
    assert_eq!(conn["status"], "connected");
    assert!(conn["authorizedBy"]["name"].is_string());
});

backend_test!(the_fake_serves_a_login_dialog_that_returns_code_and_state, fake_meta_builder, |app| {
    let fake = app.state.fake.as_ref().unwrap().base_url.clone();
    let redirect = format!("{}/meta/retorno", app.base);
    let url = format!(
        "{fake}/v25.0/dialog/oauth?client_id=1&redirect_uri={}&state=abc%3C",
        crate::common::urlencode(&redirect)
    );
    let page = reqwest::get(url).await.unwrap().text().await.unwrap();
    assert!(page.contains(&format!("href=\"{redirect}?code=fake-login-code-")), "{page}");
    assert!(page.contains("state=abc%3C") && !page.contains("abc<"), "the state is encoded, never raw HTML");
});

#[actix_web::test]
async fn operator_add_reads_the_password_from_stdin() {
    use std::io::Write;
    let db = crate::common::TestDb::sqlite();
    let run = |args: &[&str], stdin: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rastrod"))
            .args(args)
            .env("RASTRO_DATABASE_URL", &db.url)
            .env("RASTRO_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(&["operator", "add", "bia", "--configure", "--owner-key", "agency:bia"], "uma-senha-longa\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("operator bia created") && !text.contains("uma-senha-longa"), "{text}");
    let short = run(&["operator", "add", "bia"], "curta\n");
    assert!(!short.status.success(), "a short password is refused");
    // The stored hash is Argon2id.
    let url = db.url.clone();
    let hash: String = {
        use diesel::prelude::*;
        let mut c = diesel::SqliteConnection::establish(url.trim_start_matches("sqlite://")).unwrap();
        #[derive(diesel::QueryableByName)]
        struct H {
            #[diesel(sql_type = diesel::sql_types::Text)]
            password_hash: String,
        }
        let rows: Vec<H> = diesel::sql_query("SELECT password_hash FROM operators").load(&mut c).unwrap();
        rows[0].password_hash.clone()
    };
    assert!(hash.starts_with("$argon2id$"), "{hash}");
}

// "Todos os clientes" reads every client, past the API's ten sites per report.
backend_test!(all_clients_reads_more_than_ten_sites, |app| {
    let mut ids = Vec::new();
    for i in 0..12 {
        let id = format!("cliente-{i:02}");
        app.site(&id).await;
        app.lead(&id, &format!("l{i}"), T0 - DAY, json!({})).await.ok();
        ids.push(id);
    }
    operator(&app, "ana", false, "o1").await;
    let (d, _) = Dash::sign_in(&app, "ana", PASSWORD).await;
    let (from, to) = (T0 - 3 * DAY, T0);
    let from = from - from.rem_euclid(DAY);
    let args = json!({"siteIds": ids, "from": from, "to": to});
    let mine = d.write("POST", "/dashboard/api/reports/leads", args.clone()).await.ok();
    assert_eq!(mine["totals"]["leads"], 12);
    assert_eq!(mine["bySite"].as_array().map(Vec::len), Some(12), "{mine}");
    let daily = d.write("POST", "/dashboard/api/reports/leads-daily", args.clone()).await.ok();
    let total: i64 = daily.as_array().unwrap().iter().map(|r| r["leads"].as_i64().unwrap_or(0)).sum();
    assert_eq!(total, 12);
    // The host API keeps its ten.
    assert_eq!(app.post("/v1/reports/leads", args).await.status, 400);
});
