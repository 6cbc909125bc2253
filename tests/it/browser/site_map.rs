//! The dashboard's "Mapa do site" and "Vitals" screens in a real browser (on
//! the demo's imported days plus a few tracked pageviews): the figures on
//! screen equal the `siteMap` and `vitalsReport` answers over the same days,
//! and axe-core finds nothing serious. Skips, saying so, without chromium.
//! `RASTRO_SCREENSHOTS=docs/screenshots` (SQLite run) saves the README's
//! screenshots of both screens.

use serde_json::{Value, json};

use crate::backend_test;
use crate::browser::webdriver::Browser;
use crate::common::{T0, TestApp, fake_meta_builder};
use crate::dashboard::{PASSWORD, demo, operator};
use rastrod::demo::DEMO_OWNER;
use rastrod::service::analytics::reports::site_map::{self, SiteMapArgs};
use rastrod::service::analytics::reports::vitals::{self, VitalsArgs};

/// An integer as pt-BR writes it (`1.234`).
fn int(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('.');
        }
        out.push(ch);
    }
    out
}

/// The screens' default range: the 30 days up to the end of today in the client's zone (REPORTING §1).
fn screen_days() -> (i64, i64) {
    let sp = rastrod::service::reporting::timezone::Zone::of(Some("America/Sao_Paulo"), &[]).unwrap().unwrap();
    let today = sp.date(T0);
    (sp.start_of(today - chrono::Duration::days(29)), sp.start_of(today.succ_opt().unwrap()) - 1)
}

async fn answers(app: &TestApp) -> (Value, Value) {
    let (from, to) = screen_days();
    let zone = || Some("America/Sao_Paulo".to_string());
    let args = SiteMapArgs { site_ids: vec!["loja-x".into()], from, to, timezone: zone(), filters: Vec::new() };
    let map = app.state.cx.read(move |c| site_map::site_map(c, args)).await.unwrap();
    let args = VitalsArgs { site_id: "loja-x".into(), from, to, timezone: zone(), filters: vec![] };
    let vitals = app.state.cx.read(move |c| vitals::vitals_report(c, args)).await.unwrap();
    (serde_json::to_value(map).unwrap(), serde_json::to_value(vitals).unwrap())
}

/// The site map's route lines as the screen writes them.
fn route_cells(routes: &Value) -> Vec<Vec<String>> {
    let line = |r: &Value| {
        let n = |k: &str| int(r[k].as_i64().unwrap());
        vec![r["route"].as_str().unwrap().to_string(), n("views"), n("entries"), n("exits"), n("bounces")]
    };
    routes.as_array().unwrap().iter().map(line).collect()
}

fn cells(b_rows: &Value) -> Vec<Vec<String>> {
    serde_json::from_value(b_rows.clone()).unwrap()
}

/// `rows(selector)`: a table's cells as text, for scripts that wait on them.
const ROWS_FN: &str = "function rows(q){return Array.from(document.querySelectorAll(q+' tbody tr')).map(function(tr){\
    return Array.from(tr.children).map(function(c){return c.textContent.trim();});});}";

const ROWS: &str = "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map(function (tr) { \
    return Array.from(tr.children).map(function (c) { return c.textContent.trim(); }); });";

backend_test!(slow: the_site_map_and_vitals_screens_show_the_reports, fake_meta_builder, |app| {
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    // The demo's 90 days of analytics (through the import) end yesterday.
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    operator(&app, "demo", false, DEMO_OWNER).await;
    // Today, on top of the demo's days: one session over three pages.
    let body = json!({"siteId": "loja-x", "visitorId": "v_visitor0001", "events": [
        {"type": "pageview", "pageviewId": "p_0000000000000001", "url": "https://lojax.example.com/"},
        {"type": "pageview", "pageviewId": "p_0000000000000002", "url": "https://lojax.example.com/p/1"},
        {"type": "vitals", "pageviewId": "p_0000000000000002", "lcp": 1234, "cls": 0.02}]});
    let a = crate::analytics::track_as(&app, &body, &[("user-agent", crate::analytics::UA)]).await;
    assert_eq!(a.body["accepted"], 3, "{}", a.text);
    crate::analytics::drain(&app).await;
    let (map, vitals) = answers(&app).await;
    let site = &map["sites"][0];
    assert!(site["routes"].as_array().unwrap().len() > 2, "the demo's days are on the map");
    assert!(vitals["metrics"][0]["samples"].as_i64().unwrap() > 1, "and its vitals");

    b.goto(&format!("{}/", app.base)).await;
    b.type_into("#op-name", "demo").await;
    b.type_into("#op-password", PASSWORD).await;
    b.click("#signin").await;
    b.wait_for("#main").await;
    b.click("[data-view=sitemap]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#sitemap-routes").await;
    let rows = cells(&b.js(ROWS, json!(["#sitemap-routes"])).await);
    let want = route_cells(&site["routes"]);
    assert_eq!(rows, want);
    let pairs = cells(&b.js(ROWS, json!(["#sitemap-transitions"])).await);
    let first = &site["transitions"][0];
    assert_eq!(
        pairs[0],
        vec![
            first["from"].as_str().unwrap().to_string(),
            first["to"].as_str().unwrap().to_string(),
            int(first["count"].as_i64().unwrap())
        ]
    );
    assert_eq!(pairs.len(), site["transitions"].as_array().unwrap().len().min(50));
    crate::browser::no_serious_violations("the site map screen", b.axe().await);
    crate::browser::screenshot(&app, &b, "mapa-do-site").await;

    // A page clicked becomes a filter: the map of the sessions that saw it
    // (REPORTING §3), equal to the API's; its CSV is the host's file.
    let route = "/checkout".to_string();
    assert!(site["routes"].as_array().unwrap().iter().any(|r| r["route"] == "/checkout"));
    let click = "var r=arguments[0];Array.from(document.querySelectorAll('#sitemap-routes [data-add-filter=page]'))\
        .find(function(x){return x.textContent===r;}).click();";
    b.js(click, json!([route])).await;
    b.wait_for("#filters [data-filter=page]").await;
    let (from, to) = screen_days();
    let filters = vec![rastrod::service::reporting::filters::Filter {
        dim: "page".into(),
        op: rastrod::service::reporting::filters::Op::Is,
        values: vec![route.clone()],
    }];
    let args = SiteMapArgs {
        site_ids: vec!["loja-x".into()],
        from,
        to,
        timezone: Some("America/Sao_Paulo".into()),
        filters: filters.clone(),
    };
    let filtered = app.state.cx.read(move |c| site_map::site_map(c, args)).await.unwrap();
    let filtered = serde_json::to_value(filtered).unwrap();
    let want = route_cells(&filtered["sites"][0]["routes"]);
    assert_ne!(filtered["sites"][0]["routes"], site["routes"], "the filter narrows the map");
    b.wait_until(
        "the filtered map",
        &format!("{ROWS_FN}return JSON.stringify(rows('#sitemap-routes'))===arguments[0];"),
        json!([serde_json::to_string(&want).unwrap()]),
    )
    .await;
    crate::browser::no_serious_violations("the site map with a filter", b.axe().await);
    let body = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": "America/Sao_Paulo",
        "filters": [{"dim": "page", "op": "is", "values": [route]}]});
    let from_page = b.js_async(crate::browser::CSV_FETCH, json!(["/dashboard/api/reports/siteMap.csv?breakdown=routes", body.clone()])).await;
    let from_host = app.post("/v1/reports/siteMap.csv?breakdown=routes", body).await;
    assert_eq!(from_host.status, 200, "{}", from_host.text);
    assert_eq!(from_page.as_str().unwrap(), from_host.text);
    b.wait_for("[data-csv=routes]").await;
    b.click("#clear-filters").await;
    b.wait_until("no filter", "return !document.querySelector('#filters');", json!([])).await;

    b.click("[data-view=vitals]").await;
    b.wait_for("#vitals-metrics").await;
    let rows = cells(&b.js(ROWS, json!(["#vitals-metrics"])).await);
    let names = ["LCP", "INP", "CLS", "FCP", "TTFB"];
    for (i, m) in vitals["metrics"].as_array().unwrap().iter().enumerate() {
        assert_eq!(rows[i][0], names[i]);
        let p75 = match (m["metric"].as_str(), &m["p75"]) {
            (_, Value::Null) => "—".to_string(),
            (Some("cls"), v) => v.as_f64().unwrap().to_string().replace('.', ","),
            (_, v) => format!("{} ms", int(v.as_i64().unwrap())),
        };
        assert_eq!(rows[i][1], p75, "{m}");
        let rating = match m["rating"].as_str() {
            Some("good") => "bom",
            Some("needs-improvement") => "a melhorar",
            Some("poor") => "ruim",
            _ => "—",
        };
        assert_eq!(rows[i][2], rating, "{m}");
        assert_eq!(rows[i][3], int(m["samples"].as_i64().unwrap()));
    }
    let pages = cells(&b.js(ROWS, json!(["#vitals-pages"])).await);
    assert_eq!(pages.len(), vitals["byPage"].as_array().unwrap().len());
    assert_eq!(pages[0][0], vitals["byPage"][0]["route"].as_str().unwrap());
    let devices = cells(&b.js(ROWS, json!(["#vitals-devices"])).await);
    let device_names: Vec<&str> = devices.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(device_names, vec!["Celular", "Tablet", "Computador", "—"]);
    crate::browser::no_serious_violations("the vitals screen", b.axe().await);
    crate::browser::screenshot(&app, &b, "vitals").await;
    b.quit().await;
});
