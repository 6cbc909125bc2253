//! The tracker in a real browser (Debian's chromium through chromedriver),
//! against the daemon: pages served by the test on loopback embed
//! `/rastro/tracker.js`, and what the daemon stored is read back. Chromium
//! runs with the automation markers hidden and a desktop Chrome UA given as
//! a launch switch (TRK-05, TRK-06), else the tracker rightly sends nothing.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::analytics::{UA, analytics_builder};
use crate::backend_test;
use crate::browser::webdriver::Browser;
use crate::common::TestApp;

/// Serves the test's pages: `/…` embeds the tracker for site `loja`
/// (`/cookieless/…` with `data-cookieless`). Answers its port.
pub async fn pages(daemon: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let daemon = daemon.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let cookieless = if path.starts_with("/cookieless") { " data-cookieless" } else { "" };
                let html = format!(
                    "<!doctype html><html lang=\"pt-BR\"><head><title>Loja</title>\
                     <script defer src=\"{daemon}/rastro/tracker.js\" data-site-id=\"loja\"{cookieless}></script>\
                     </head><body><h1>Loja {path}</h1><p>Produtos e ofertas.</p></body></html>"
                );
                let res = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                    html.len()
                );
                let _ = sock.write_all(res.as_bytes()).await;
            });
        }
    });
    port
}

#[derive(Debug, Clone, diesel::QueryableByName)]
struct Stored {
    #[diesel(sql_type = diesel::sql_types::Text)]
    kind: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    path: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    visitor_id: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    name: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pageview_id: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
    engaged_ms: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
    fcp: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
    ttfb: Option<i64>,
}

async fn stored(app: &TestApp) -> Vec<Stored> {
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            Ok(diesel::sql_query(
                "SELECT kind, path, visitor_id, name, pageview_id, engaged_ms, fcp, ttfb FROM web_events \
                 WHERE site_id = 'loja' ORDER BY occurred_at, id",
            )
            .load::<Stored>(c)?)
        })
        .await
        .unwrap()
}

/// Waits (bounded, 15 s) until the stored events satisfy `done`.
async fn until(app: &TestApp, what: &str, done: impl Fn(&[Stored]) -> bool) -> Vec<Stored> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows = stored(app).await;
        if done(&rows) {
            return rows;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; stored: {rows:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn pageviews(rows: &[Stored]) -> Vec<&Stored> {
    rows.iter().filter(|r| r.kind == "pageview").collect()
}

// rule: TRK-05
// rule: TRK-07
// rule: TRK-08
// rule: TRK-09
// rule: TRK-10
backend_test!(slow: the_tracker_in_a_real_browser, analytics_builder, |fed| {
    let app = &fed.app;
    let ua_switch = format!("--user-agent={UA}");
    let Some(b) = Browser::start_with(&["--disable-blink-features=AutomationControlled", &ua_switch]).await else {
        return fed.finish().await;
    };
    let port = pages(app.base.clone()).await;
    app.post(
        "/v1/sites",
        json!({"siteId": "loja", "name": "Loja", "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": "o1",
            "domains": [format!("localhost:{port}")]}),
    )
    .await
    .ok();
    let page = format!("http://localhost:{port}");

    // One pageview on load.
    b.goto(&format!("{page}/")).await;
    let rows = until(app, "the first pageview", |r| pageviews(r).len() == 1).await;
    assert_eq!(rows[0].path, "/");
    let visitor = rows[0].visitor_id.clone();
    assert!(visitor.starts_with("v_") && visitor.len() == 24, "{visitor}");
    // Only rastro_vid is stored, and it is the visitor id sent.
    let keys = b.js("return Object.keys(localStorage);", json!([])).await;
    assert_eq!(keys, json!(["rastro_vid"]));
    assert_eq!(b.js("return localStorage.getItem('rastro_vid');", json!([])).await, json!(visitor));

    // One pageview per SPA path change, none for the same path again.
    b.js("history.pushState({}, '', '/p/1'); history.pushState({}, '', '/p/1');", json!([])).await;
    let rows = until(app, "the SPA pageview", |r| pageviews(r).len() == 2).await;
    assert_eq!(pageviews(&rows)[1].path, "/p/1");
    // A custom event.
    b.js("rastro.track('add_to_cart', {sku: 'A1', qty: 2});", json!([])).await;
    until(app, "the custom event", |r| r.iter().any(|e| e.name.as_deref() == Some("add_to_cart"))).await;
    // Each pageview has its own id.
    let ids: Vec<_> = pageviews(&rows).iter().map(|p| p.pageview_id.clone().unwrap()).collect();
    assert_ne!(ids[0], ids[1]);

    // identify: the next batch carries the given id; reset: a new random one.
    b.js("rastro.identify('u_identified0000000000001'); rastro.track('after_identify');", json!([])).await;
    let rows =
        until(app, "an identified event", |r| r.iter().any(|e| e.name.as_deref() == Some("after_identify"))).await;
    let after = rows.iter().find(|e| e.name.as_deref() == Some("after_identify")).unwrap();
    assert_eq!(after.visitor_id, "u_identified0000000000001");
    b.js("rastro.reset(); rastro.track('after_reset');", json!([])).await;
    let rows = until(app, "an event after reset", |r| r.iter().any(|e| e.name.as_deref() == Some("after_reset"))).await;
    let reset = rows.iter().find(|e| e.name.as_deref() == Some("after_reset")).unwrap();
    assert!(reset.visitor_id.starts_with("v_") && reset.visitor_id != visitor, "{}", reset.visitor_id);

    // Leaving the page: engagement and vitals by sendBeacon, naming the pageview.
    b.goto("about:blank").await;
    let rows =
        until(app, "engagement and vitals of /p/1", |r| pageviews(r).last().is_some_and(|p| p.engaged_ms.is_some()))
            .await;
    let first = pageviews(&rows)[0];
    assert!(first.engaged_ms.is_some(), "the first view's engagement, sent on the SPA change");
    assert!(first.fcp.is_some() || first.ttfb.is_some(), "a hard load's vitals: {first:?}");

    // data-cookieless: nothing stored, no visitorId sent (the server derives a c_ id).
    b.goto(&format!("{page}/cookieless/x")).await;
    b.js("localStorage.clear();", json!([])).await;
    b.goto(&format!("{page}/cookieless/y")).await;
    let rows = until(app, "the cookieless pageview", |r| r.iter().any(|e| e.path == "/cookieless/y")).await;
    let c = rows.iter().find(|e| e.path == "/cookieless/y").unwrap();
    assert!(c.visitor_id.starts_with("c_"), "{}", c.visitor_id);
    assert_eq!(b.js("return Object.keys(localStorage);", json!([])).await, json!([]));

    // rule: TRK-06
    // rastro_ignore: nothing at all.
    b.goto(&format!("{page}/")).await;
    b.js("localStorage.setItem('rastro_ignore', 'true');", json!([])).await;
    b.goto(&format!("{page}/ignored")).await;
    b.js("rastro.track('ignored'); localStorage.removeItem('rastro_ignore');", json!([])).await;
    // The next page is tracked again; whatever the ignored one sent would have come first.
    b.goto(&format!("{page}/after")).await;
    let rows = until(app, "the page after the ignored one", |r| r.iter().any(|e| e.path == "/after")).await;
    assert!(
        rows.iter().all(|e| e.path != "/ignored" && e.name.as_deref() != Some("ignored")),
        "an ignored page was tracked"
    );
    b.quit().await;
});
