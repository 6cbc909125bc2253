//! The CSV files (REPORTING §5): `leads.csv`, streamed page by page, and
//! `POST /v1/reports/{name}.csv`, each equal to the JSON answer it comes from.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

const D0: i64 = T0 - DAY / 2;

/// An RFC 4180 file read back: records of fields (quotes undone), checking
/// that every record ends in CRLF and has the header's width.
fn parse(text: &str) -> Vec<Vec<String>> {
    assert!(text.ends_with("\r\n"), "records end in CRLF");
    let (mut records, mut record, mut field) = (Vec::new(), Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => assert_eq!(chars.next(), Some('\n'), "a bare CR"),
            (false, '\n') => panic!("a bare LF ends a record"),
            (false, c) => field.push(c),
        }
        if !quoted && c == '\r' {
            record.push(std::mem::take(&mut field));
            records.push(std::mem::take(&mut record));
        }
    }
    let width = records[0].len();
    assert!(records.iter().all(|r| r.len() == width), "every record has the header's width");
    records
}

/// The records as maps from the header's names.
fn rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut records = parse(text);
    let header = records.remove(0);
    records.into_iter().map(|r| header.iter().cloned().zip(r).collect()).collect()
}

fn money(cents: &Value) -> String {
    let c = cents.as_i64().unwrap();
    format!("{}.{:02}", c / 100, c % 100)
}

async fn download(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String, bool, String) {
    let mut req = app.host_request(method, path);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let kind = res.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let chunked = res.headers().get("content-length").is_none();
    (status, kind, chunked, res.text().await.unwrap())
}

/// Leads whose names and labels a spreadsheet would run, a contact as key and a click id.
async fn seed(app: &TestApp) {
    app.site("s1").await;
    let ad = json!({"campaignId": "c1", "campaignName": "=Black Friday", "adsetId": "as1", "adsetName": "Mulheres, 25-45",
        "adId": "ad1", "adName": "Vídeo \"oferta\"", "clickId": "fbclid.SECRETCLICK"});
    for i in 0..5 {
        let mut extra = ad.clone();
        extra["label"] = json!(format!("+55 11 9{i}000-0000"));
        app.lead("s1", &format!("5511999990{i:03}"), D0 + i * 1_000, extra).await.ok();
    }
    app.lead("s1", "organic-1", D0 + 9_000, json!({"origin": "organic", "label": "@maria"})).await.ok();
    app.stage(
        "s1",
        "5511999990001",
        json!({"stage": "won", "revenueCents": 12_345, "eventId": "w", "occurredAt": D0 + 10_000}),
    )
    .await
    .ok();
}

// rule: REP-10
backend_test!(leads_csv_is_rfc_4180_formula_safe_without_contacts_and_equals_list_leads, |app| {
    seed(&app).await;
    let (status, kind, _, text) =
        download(&app, reqwest::Method::GET, &format!("/v1/sites/s1/leads.csv?from={D0}&to={}", D0 + DAY - 1), None)
            .await;
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/csv"), "{kind}");
    // No contact or click id anywhere in the file.
    for secret in ["5511999990", "SECRETCLICK", "organic-1"] {
        assert!(!text.contains(secret), "{secret} is in the CSV");
    }
    let csv = rows(&text);
    let json = app.get(&format!("/v1/leads?siteIds=s1&from={D0}&to={}&limit=100", D0 + DAY - 1)).await.ok();
    let json = json.as_array().unwrap();
    assert_eq!(csv.len(), json.len());
    assert_eq!(csv.len(), 6);
    for (row, lead) in csv.iter().zip(json) {
        assert_eq!(row["leadId"], lead["leadId"].as_str().unwrap(), "the same leads in the same order");
        assert_eq!(row["origin"], lead["origin"].as_str().unwrap());
        assert_eq!(row["channel"], lead["channel"].as_str().unwrap());
        assert_eq!(row["stage"], lead["stage"].as_str().unwrap());
        assert_eq!(row["revenue"], money(&lead["revenueCents"]));
        assert_eq!(row["currency"], "BRL");
        let arrival = chrono::DateTime::parse_from_rfc3339(&row["arrival"]).unwrap().timestamp_millis();
        assert_eq!(arrival, lead["firstAt"].as_i64().unwrap());
        // Text a spreadsheet would run is prefixed with a quote; the rest is as sent.
        let label = lead["label"].as_str().unwrap();
        assert_eq!(row["label"], format!("'{label}"), "{label} starts with + or @");
        if lead["adId"].is_string() {
            assert_eq!(row["campaign"], "'=Black Friday");
            assert_eq!(row["adSet"], "Mulheres, 25-45");
            assert_eq!(row["ad"], "Vídeo \"oferta\"");
        }
    }
    assert!(csv.iter().any(|r| r["revenue"] == "123.45"));
    // In a zone: the same instants, written with the zone's offset.
    let (_, _, _, text) = download(
        &app,
        reqwest::Method::GET,
        &format!("/v1/sites/s1/leads.csv?from={D0}&to={}&timezone=America/Sao_Paulo", D0 + DAY - 1),
        None,
    )
    .await;
    assert!(rows(&text).iter().all(|r| r["arrival"].ends_with("-03:00")));
    // Errors are answered before any byte of the file.
    let bad = |q: &'static str| {
        let app = &app;
        async move { app.get(&format!("/v1/sites/s1/leads.csv?{q}")).await }
    };
    bad("from=5&to=1").await.err(400, "INVALID_ARGUMENT");
    bad("from=0&to=999999999999999").await.err(400, "INVALID_ARGUMENT");
    bad("from=0&to=1&timezone=Mars/Olympus").await.err(400, "INVALID_ARGUMENT");
    app.get("/v1/sites/nope/leads.csv?from=0&to=1").await.err(404, "NOT_FOUND");
});

// rule: REP-11
backend_test!(leads_csv_is_written_page_by_page, csv_page_builder, |app| {
    app.site("s1").await;
    // 23 leads over pages of 5, three of them at the same instant (the page
    // boundary falls inside the tie: the keyset goes on by lead id).
    for i in 0..23i64 {
        let at = if (10..13).contains(&i) { D0 + 10_000 } else { D0 + i * 1_000 };
        app.lead("s1", &format!("k{i:02}"), at, json!({})).await.ok();
    }
    let (status, _, chunked, text) =
        download(&app, reqwest::Method::GET, &format!("/v1/sites/s1/leads.csv?from={D0}&to={}", D0 + DAY - 1), None)
            .await;
    assert_eq!(status, 200);
    assert!(chunked, "streamed: no Content-Length");
    let csv = rows(&text);
    let json: Vec<String> = {
        let mut all = Vec::new();
        let mut before: Option<(i64, String)> = None;
        loop {
            let mut path = format!("/v1/leads?siteIds=s1&from={D0}&to={}&limit=4", D0 + DAY - 1);
            if let Some((at, id)) = &before {
                path.push_str(&format!("&before={at}&beforeLeadId={id}"));
            }
            let page = app.get(&path).await.ok();
            let page = page.as_array().unwrap().clone();
            if page.is_empty() {
                break;
            }
            let last = page.last().unwrap();
            before = Some((last["firstAt"].as_i64().unwrap(), last["leadId"].as_str().unwrap().to_string()));
            all.extend(page.iter().map(|l| l["leadId"].as_str().unwrap().to_string()));
        }
        all
    };
    assert_eq!(json.len(), 23);
    assert_eq!(csv.iter().map(|r| r["leadId"].clone()).collect::<Vec<_>>(), json, "every lead once, newest first");
});

fn csv_page_builder(backend: Backend) -> TestAppBuilder {
    plain_builder(backend).env("RASTRO_LEADS_CSV_PAGE", "5")
}

// rule: REP-10
backend_test!(report_csvs_equal_their_json_answers, |app| {
    seed(&app).await;
    let args = json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1});
    let report = app.post("/v1/reports/leads", args.clone()).await.ok();
    let (status, kind, _, text) =
        download(&app, reqwest::Method::POST, "/v1/reports/leadsReport.csv", Some(args.clone())).await;
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/csv"));
    let ads = rows(&text);
    let tree_ads: Vec<(&Value, &Value, &Value)> = report["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c["adsets"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(move |s| s["ads"].as_array().unwrap().iter().map(move |a| (c, s, a)))
        })
        .collect();
    assert_eq!(ads.len(), tree_ads.len());
    for (row, (c, s, a)) in ads.iter().zip(&tree_ads) {
        assert_eq!(row["campaignId"], c["campaignId"].as_str().unwrap());
        assert_eq!(row["campaignName"], format!("'{}", c["name"].as_str().unwrap()), "neutralised");
        assert_eq!(row["adsetName"], s["name"].as_str().unwrap());
        assert_eq!(row["adId"], a["adId"].as_str().unwrap());
        assert_eq!(row["leads"], a["leads"].to_string());
        assert_eq!(row["revenue"], money(&a["revenueCents"]));
    }
    // Another table of the same answer.
    let (_, _, _, text) =
        download(&app, reqwest::Method::POST, "/v1/reports/leadsReport.csv?breakdown=origins", Some(args.clone()))
            .await;
    let origins = rows(&text);
    let json_origins = report["origins"].as_array().unwrap();
    assert_eq!(origins.len(), json_origins.len());
    for (row, o) in origins.iter().zip(json_origins) {
        assert_eq!(row["origin"], o["origin"].as_str().unwrap());
        assert_eq!(row["leads"], o["leads"].to_string());
    }
    let (_, _, _, text) =
        download(&app, reqwest::Method::POST, "/v1/reports/leadsReport.csv?breakdown=totals", Some(args.clone())).await;
    let totals = rows(&text);
    assert_eq!((totals.len(), totals[0]["leads"].as_str()), (1, report["totals"]["leads"].to_string().as_str()));
    // leadsDaily: one row per day, its start as ISO 8601.
    let daily = app.post("/v1/reports/leads-daily", args.clone()).await.ok();
    let (_, _, _, text) = download(&app, reqwest::Method::POST, "/v1/reports/leadsDaily.csv", Some(args.clone())).await;
    let days = rows(&text);
    assert_eq!(days.len(), daily.as_array().unwrap().len());
    assert_eq!(days[0]["dayStart"], "2026-11-30T00:00:00.000Z");
    assert_eq!(days[0]["leads"], daily[0]["leads"].to_string());
    // Errors: an unknown file, an unknown table, the function's own checks.
    let post = |path: &'static str, body: Value| {
        let app = &app;
        async move { app.post(path, body).await }
    };
    post("/v1/reports/nothing.csv", args.clone()).await.err(404, "NOT_FOUND");
    post("/v1/reports/leadsReport.csv?breakdown=nope", args.clone()).await.err(400, "INVALID_ARGUMENT");
    post("/v1/reports/leadsReport.csv", json!({"siteIds": ["s1"], "from": 5, "to": 1}))
        .await
        .err(400, "INVALID_ARGUMENT");
    post("/v1/reports/goalsReport.csv", json!({"siteId": "nope", "from": D0, "to": D0 + DAY - 1}))
        .await
        .err(404, "NOT_FOUND");
});

async fn host(app: &TestApp, name: &str, args: &Value) -> Value {
    app.post(&format!("/v1/analytics/{name}"), args.clone()).await.ok()
}

/// Every page of a paged function: the `key` of each row, in order.
async fn every_id(app: &TestApp, name: &str, args: &Value, key: &str) -> Vec<String> {
    let (mut ids, mut args) = (Vec::new(), args.clone());
    loop {
        let page = host(app, name, &args).await;
        ids.extend(page["page"].as_array().unwrap().iter().map(|c| c[key].as_str().unwrap().to_string()));
        if page["isDone"] == true {
            return ids;
        }
        args["paginationOpts"]["cursor"] = page["continueCursor"].clone();
    }
}

async fn csv_of(app: &TestApp, file: &str, args: &Value) -> Vec<std::collections::BTreeMap<String, String>> {
    let (status, _, _, text) =
        download(app, reqwest::Method::POST, &format!("/v1/reports/{file}"), Some(args.clone())).await;
    assert_eq!(status, 200, "{file}: {text}");
    rows(&text)
}

// rule: REP-10
backend_test!(web_analytics_csvs_equal_their_json_answers, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    let today = T0 - T0.rem_euclid(DAY);
    let range = json!({"siteIds": ["loja-x"], "from": today - 30 * DAY, "to": today - 1});
    let one = json!({"siteId": "loja-x", "from": today - 30 * DAY, "to": today - 1});
    // overview: the series by default, any breakdown on request.
    let overview = host(&app, "overview", &range).await;
    let series = csv_of(&app, "overview.csv", &range).await;
    assert_eq!(series.len(), overview["series"].as_array().unwrap().len());
    for (row, s) in series.iter().zip(overview["series"].as_array().unwrap()) {
        let start = chrono::DateTime::parse_from_rfc3339(&row["bucketStart"]).unwrap().timestamp_millis();
        assert_eq!(start, s["bucketStart"].as_i64().unwrap());
        assert_eq!(
            (row["visitors"].as_str(), row["revenue"].clone()),
            (s["visitors"].to_string().as_str(), money(&s["revenueCents"]))
        );
    }
    let pages = csv_of(&app, "overview.csv?breakdown=pages", &range).await;
    let json_pages = overview["pages"].as_array().unwrap();
    assert_eq!(pages.len(), json_pages.len());
    assert!(pages.iter().zip(json_pages).all(|(r, p)| r["route"] == p["route"].as_str().unwrap()
        && r["pageviews"].parse::<i64>().ok() == p["pageviews"].as_i64()));
    // funnelsReport's steps carry their funnel.
    let funnels = host(&app, "funnelsReport", &one).await;
    let steps = csv_of(&app, "funnelsReport.csv?breakdown=steps", &one).await;
    let json_steps: Vec<(&Value, &Value)> = funnels["funnels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["steps"].as_array().unwrap().iter().map(move |s| (f, s)))
        .collect();
    assert!(!json_steps.is_empty());
    assert_eq!(steps.len(), json_steps.len());
    for (row, (f, s)) in steps.iter().zip(&json_steps) {
        assert_eq!(
            (row["funnelKey"].as_str(), row["visitors"].clone()),
            (f["key"].as_str().unwrap(), s["visitors"].to_string())
        );
    }
    // listConversions: every page of the range in one file.
    let paged = json!({"siteId": "loja-x", "from": today - 30 * DAY, "to": today - 1,
        "paginationOpts": {"numItems": 25, "cursor": null}});
    let ids = every_id(&app, "listConversions", &paged, "conversionId").await;
    assert!(ids.len() > 25, "more than one page");
    let conversions = csv_of(&app, "listConversions.csv", &paged).await;
    assert_eq!(conversions.iter().map(|r| r["conversionId"].clone()).collect::<Vec<_>>(), ids);
    assert!(conversions.iter().all(|r| !r.contains_key("properties")), "free-form properties stay out");
    // listSessions, filtered, every page; its sessions' ids in the same order.
    let mut sessions_args = paged.clone();
    sessions_args["filters"] = json!([{"dim": "page", "op": "is", "values": ["/checkout"]}]);
    let ids = every_id(&app, "listSessions", &sessions_args, "sessionId").await;
    let sessions = csv_of(&app, "listSessions.csv", &sessions_args).await;
    assert!(!ids.is_empty());
    assert_eq!(sessions.iter().map(|r| r["sessionId"].clone()).collect::<Vec<_>>(), ids);
    // siteMap: each site's routes, carrying the site; the transitions on request.
    let map = host(&app, "siteMap", &range).await;
    let routes = csv_of(&app, "siteMap.csv", &range).await;
    let json_routes = map["sites"][0]["routes"].as_array().unwrap();
    assert_eq!(routes.len(), json_routes.len());
    assert!(routes.iter().zip(json_routes).all(|(r, j)| r["siteId"] == "loja-x"
        && r["route"] == j["route"].as_str().unwrap()
        && r["views"].parse::<i64>().ok() == j["views"].as_i64()));
    let transitions = csv_of(&app, "siteMap.csv?breakdown=transitions", &range).await;
    assert_eq!(transitions.len(), map["sites"][0]["transitions"].as_array().unwrap().len());
    // vitalsReport by page: one row per (page, metric), the page carried.
    let vitals = host(&app, "vitalsReport", &one).await;
    let by_page = csv_of(&app, "vitalsReport.csv?breakdown=pages", &one).await;
    let json_cells: Vec<(&Value, &Value)> = vitals["byPage"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["metrics"].as_array().unwrap().iter().map(move |m| (p, m)))
        .collect();
    assert!(!json_cells.is_empty());
    assert_eq!(by_page.len(), json_cells.len());
    for (row, (p, m)) in by_page.iter().zip(&json_cells) {
        assert_eq!(
            (row["route"].as_str(), row["metric"].as_str()),
            (p["route"].as_str().unwrap(), m["metric"].as_str().unwrap())
        );
        assert_eq!(row["samples"], m["samples"].to_string());
    }
});
