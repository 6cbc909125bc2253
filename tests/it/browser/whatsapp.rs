//! WhatsApp taps in a real browser (docs/whatsapp.md, WA-01 to WA-04):
//! pages served by the test embed the daemon's tracker beside WhatsApp
//! links, Chromium clicks them (a mouse on a desktop, a finger on a phone
//! screen), and what the daemon stored is read back from its database.
//!
//! wa.me is not reachable from a test, so two honest views of the rewritten
//! link: a listener of the page's own, registered on `window` (it runs after
//! the tracker's capturing listener and before the browser follows the
//! link), notes the href the link carries at that moment and keeps the
//! browser on the page; and a link marked `data-rastro-whatsapp` whose
//! address is on the test's server is really followed, so the server sees
//! the very address the browser opened.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::analytics::{PHONE_UA, UA, analytics_builder};
use crate::backend_test;
use crate::browser::webdriver::Browser;
use crate::common::TestApp;

/// The links of every page, as written (`#own`'s address is the test server's).
const WA: &str = "https://wa.me/5511999990001?text=Ol%C3%A1%2C%20quero%20saber";
const API: &str = "https://api.whatsapp.com/send?phone=5511999990002";
const APP: &str = "whatsapp://send?phone=5511999990003&text=Oi";
const OWN: &str = "/go?to=wa&text=Quero%20saber";

/// The test's pages: `/…` embeds the tracker for site `loja`; a query of
/// `off` adds `data-whatsapp-ref="off"`, `cookieless` adds `data-cookieless`.
/// Every request's target is noted, in order.
struct Pages {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Pages {
    async fn serve(daemon: String) -> Pages {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let noted = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let daemon = daemon.clone();
                let noted = noted.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = sock.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    noted.lock().unwrap().push(target.clone());
                    let query = target.split_once('?').map_or("", |(_, q)| q);
                    let mut attrs = String::new();
                    if query.split('&').any(|p| p == "off") {
                        attrs.push_str(" data-whatsapp-ref=\"off\"");
                    }
                    if query.split('&').any(|p| p == "cookieless") {
                        attrs.push_str(" data-cookieless");
                    }
                    // The page's own listener: after the tracker's, it notes the
                    // href a WhatsApp link carries while the click is handled and
                    // keeps the browser here (wa.me is out of reach).
                    let html = format!(
                        "<!doctype html><html lang=\"pt-BR\"><head><title>Loja</title>\
                         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                         <script defer src=\"{daemon}/rastro/tracker.js\" data-site-id=\"loja\"{attrs}></script>\
                         <script>window.seen = []; addEventListener('click', function (e) {{\
                           var a = e.target.closest && e.target.closest('a[href]');\
                           if (!a || !/^(https:|whatsapp:)/.test(a.getAttribute('href'))) return;\
                           seen.push({{id: a.id, href: a.href}}); e.preventDefault(); }});\
                           addEventListener('pointerdown', function (e) {{ window.pointer = e.pointerType; }});</script>\
                         <style>a, button {{ display: block; margin: 12px; padding: 12px; font-size: 18px; }}</style>\
                         </head><body><h1>Loja {target}</h1>\
                         <a id=\"wa\" href=\"{WA}\">Fale no WhatsApp</a>\
                         <a id=\"api\" href=\"{API}\"><span id=\"api-inner\">Atendimento</span></a>\
                         <a id=\"app\" href=\"{APP}\">Abrir o app</a>\
                         <a id=\"own\" data-rastro-whatsapp=\"+55 (11) 99999-0004\" href=\"{OWN}\"><span id=\"own-inner\">Chamar</span></a>\
                         <button id=\"btn\" data-rastro-whatsapp=\"5511999990005\">Chat</button>\
                         <a id=\"other\" href=\"/p/2\">Outra página</a>\
                         </body></html>"
                    );
                    let res = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                        html.len()
                    );
                    let _ = sock.write_all(res.as_bytes()).await;
                });
            }
        });
        Pages { port, requests }
    }

    fn url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.port)
    }

    /// Waits (bounded, 15 s) for a request of a target starting with `prefix`; answers it.
    async fn request(&self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(t) = self.requests.lock().unwrap().iter().find(|t| t.starts_with(prefix)) {
                return t.clone();
            }
            assert!(Instant::now() < deadline, "no request of {prefix}: {:?}", self.requests.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A stored `whatsapp_click` and the reference bound to it, if any.
#[derive(Debug, Clone, diesel::QueryableByName)]
struct Tap {
    #[diesel(sql_type = diesel::sql_types::Text)]
    visitor_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    session_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    path: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    properties: Option<String>,
}

impl Tap {
    fn props(&self) -> Value {
        self.properties.as_deref().map_or(Value::Null, |p| serde_json::from_str(p).unwrap())
    }
}

async fn taps(app: &TestApp) -> Vec<Tap> {
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            Ok(diesel::sql_query(
                "SELECT visitor_id, session_id, path, properties FROM web_events \
                 WHERE site_id = 'loja' AND name = 'whatsapp_click' ORDER BY occurred_at, id",
            )
            .load::<Tap>(c)?)
        })
        .await
        .unwrap()
}

/// Waits (bounded, 15 s) for the stored tap on `number`; answers it.
async fn tap_on(app: &TestApp, number: &str) -> Tap {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let all = taps(app).await;
        if let Some(t) = all.iter().find(|t| t.props()["number"] == number) {
            return t.clone();
        }
        assert!(Instant::now() < deadline, "no tap on {number} stored: {all:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The reference a rewritten address carries: `… (ref XXXXXX)` at the end of its text.
fn ref_in(href: &str) -> String {
    let at = href.rfind("(ref%20").unwrap_or_else(|| panic!("no reference in {href}"));
    let tail = &href[at + "(ref%20".len()..];
    assert_eq!(tail.len(), 7, "the reference closes the text: {href}");
    assert!(tail.ends_with(')'), "{href}");
    let r = &tail[..6];
    assert!(r.chars().all(|c| "23456789ABCDEFGHJKMNPQRSTUVWXYZ".contains(c)), "{href}");
    r.to_string()
}

/// What the database bound to `reference`: (visitor, session, number, path).
async fn bound(app: &TestApp, reference: &str) -> Option<(String, String, String, String)> {
    let reference = reference.to_string();
    let at = rastrod::clock::Clock::now_ms(app.clock.as_ref());
    let row = app
        .state
        .cx
        .read(move |c| Ok(rastrod::store::analytics::whatsapp_refs::lookup(c, "loja", &reference, at)?))
        .await
        .unwrap();
    row.map(|r| (r.visitor_id, r.session_id, r.number, r.path))
}

/// The hrefs the page's listener saw while the clicks were handled.
async fn seen(b: &Browser) -> Vec<(String, String)> {
    let v = b.js("return window.seen || [];", json!([])).await;
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap().into(), s["href"].as_str().unwrap().into()))
        .collect()
}

/// Waits until `css`'s href attribute reads `href` again (the tracker puts it back after the click).
async fn restored(b: &Browser, css: &str, href: &str) {
    b.wait_until(
        &format!("{css}'s href put back"),
        "return document.querySelector(arguments[0]).getAttribute('href') === arguments[1];",
        json!([css, href]),
    )
    .await;
}

async fn add_site(app: &TestApp, pages: &Pages) {
    app.post(
        "/v1/sites",
        json!({"siteId": "loja", "name": "Loja", "currency": "BRL", "timezone": "America/Sao_Paulo", "ownerId": "o1",
            "domains": [format!("localhost:{}", pages.port)]}),
    )
    .await
    .ok();
}

/// Opens `path` and waits until the tracker is on the page.
async fn open(b: &Browser, pages: &Pages, path: &str) {
    b.goto(&pages.url(path)).await;
    b.wait_until("the tracker", "return !!(window.rastro && document.readyState === 'complete');", json!([])).await;
}

/// Clicks `css` with a mouse, or taps it with a finger on the phone.
async fn press(b: &Browser, phone: bool, css: &str) {
    if phone { b.tap(css).await } else { b.click(css).await }
}

/// The whole tap on a desktop or a phone: each kind of WhatsApp link counted
/// with its number and a fresh reference, the link carrying the reference
/// while the click is handled and its own href afterwards, the reference
/// bound to the visit, a marked link followed with it, a marked button
/// counted without one, an ordinary link not counted.
async fn taps_on(app: &TestApp, b: &Browser, pages: &Pages, phone: bool) {
    open(b, pages, "/loja").await;
    let mut refs = Vec::new();
    for (css, number, written) in
        [("#wa", "5511999990001", WA), ("#api-inner", "5511999990002", API), ("#app", "5511999990003", APP)]
    {
        let link = css.trim_end_matches("-inner");
        press(b, phone, css).await;
        let pointer = b.js("return window.pointer;", json!([])).await;
        assert_eq!(pointer, if phone { "touch" } else { "mouse" }, "a finger on the phone, a mouse on the desktop");
        let tap = tap_on(app, number).await;
        let href = seen(b).await.into_iter().find(|(id, _)| format!("#{id}") == link).expect("seen").1;
        let r = ref_in(&href);
        // The address as written, its text gaining the reference (created when absent).
        let expected = if written.contains("text=") {
            format!("{written}%20(ref%20{r})")
        } else {
            format!("{written}&text=(ref%20{r})")
        };
        assert_eq!(href, expected);
        restored(b, link, written).await;
        // Stored with the page's URL, the number and the very reference the link carried.
        assert_eq!(tap.props(), json!({"number": number, "ref": r}), "{css}");
        assert_eq!(tap.path, "/loja");
        let (visitor, session, bound_number, path) = bound(app, &r).await.expect("the reference is bound");
        assert_eq!(
            (visitor, session, bound_number, path),
            (tap.visitor_id.clone(), tap.session_id.clone(), number.into(), "/loja".into())
        );
        assert!(!refs.contains(&r), "a fresh reference per tap");
        refs.push(r);
    }

    // A marked button: counted with its number, no reference (no message to write it in).
    press(b, phone, "#btn").await;
    assert_eq!(tap_on(app, "5511999990005").await.props(), json!({"number": "5511999990005"}));

    // An ordinary link is no tap.
    let before = taps(app).await.len();
    press(b, phone, "#other").await;
    pages.request("/p/2").await;
    b.wait_until("the next page", "return location.pathname === '/p/2';", json!([])).await;
    open(b, pages, "/loja").await;

    // A marked link on the test's server is followed with the reference in
    // its text, and the tap (sent by beacon as the page goes) names the
    // mark's number, digits only.
    press(b, phone, "#own-inner").await;
    let opened = pages.request("/go?").await;
    let r = ref_in(&opened);
    assert_eq!(opened, format!("{OWN}%20(ref%20{r})"));
    let tap = tap_on(app, "5511999990004").await;
    assert_eq!(tap.props(), json!({"number": "5511999990004", "ref": r}));
    assert!(bound(app, &r).await.is_some());
    assert_eq!(taps(app).await.len(), before + 1, "nothing counted for the ordinary link");
}

// rule: WA-01, WA-02, WA-03
backend_test!(slow: a_tap_on_whatsapp_carries_its_reference_on_a_desktop, analytics_builder, |fed| {
    let app = &fed.app;
    let ua = format!("--user-agent={UA}");
    let Some(b) = Browser::start_with(&["--disable-blink-features=AutomationControlled", &ua]).await else {
        return fed.finish().await;
    };
    let pages = Pages::serve(app.base.clone()).await;
    add_site(app, &pages).await;
    taps_on(app, &b, &pages, false).await;
    b.quit().await;
});

// rule: WA-01, WA-02, WA-03
backend_test!(slow: a_tap_on_whatsapp_carries_its_reference_on_a_phone, analytics_builder, |fed| {
    let app = &fed.app;
    let ua = format!("--user-agent={PHONE_UA}");
    let Some(b) = Browser::start_with(&["--disable-blink-features=AutomationControlled", &ua]).await else {
        return fed.finish().await;
    };
    let pages = Pages::serve(app.base.clone()).await;
    add_site(app, &pages).await;
    // A phone's screen and a touch screen: the page sees a finger.
    b.resize(390, 844).await;
    let metrics = json!({"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": true});
    b.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    b.cdp("Emulation.setTouchEmulationEnabled", json!({"enabled": true, "maxTouchPoints": 5})).await;
    open(&b, &pages, "/loja").await;
    let touch = b.js("return [innerWidth, navigator.maxTouchPoints, matchMedia('(pointer: coarse)').matches];", json!([])).await;
    assert_eq!(touch, json!([390, 5, true]), "a phone's screen");
    taps_on(app, &b, &pages, true).await;
    b.quit().await;
});

// rule: WA-04
// rule: WA-01
backend_test!(slow: whatsapp_ref_off_counts_taps_without_a_reference_and_cookieless_binds_them, analytics_builder, |fed| {
    let app = &fed.app;
    let ua = format!("--user-agent={UA}");
    let Some(b) = Browser::start_with(&["--disable-blink-features=AutomationControlled", &ua]).await else {
        return fed.finish().await;
    };
    let pages = Pages::serve(app.base.clone()).await;
    add_site(app, &pages).await;

    // data-whatsapp-ref="off": counted, the link untouched, nothing bound.
    open(&b, &pages, "/loja?off").await;
    b.click("#wa").await;
    let tap = tap_on(app, "5511999990001").await;
    assert_eq!(tap.props(), json!({"number": "5511999990001"}));
    assert_eq!(seen(&b).await, [("wa".to_string(), WA.to_string())], "the link as written");
    b.click("#own-inner").await;
    assert_eq!(pages.request("/go?").await, OWN, "followed as written");
    assert_eq!(tap_on(app, "5511999990004").await.props(), json!({"number": "5511999990004"}));
    assert_eq!(app.count("web_whatsapp_refs").await, 0);

    // data-cookieless: the tap is counted and its reference bound to the day's c_ visitor.
    open(&b, &pages, "/loja?cookieless").await;
    b.click("#api").await;
    let tap = tap_on(app, "5511999990002").await;
    let r = ref_in(&seen(&b).await[0].1);
    assert_eq!(tap.props()["ref"], r);
    assert!(tap.visitor_id.starts_with("c_"), "{}", tap.visitor_id);
    assert_eq!(bound(app, &r).await.map(|b| b.0), Some(tap.visitor_id.clone()));
    assert_eq!(b.js("return Object.keys(localStorage);", json!([])).await, json!([]), "nothing stored in the browser");
    b.quit().await;
});

// rule: WA-03
backend_test!(slow: without_javascript_a_whatsapp_link_opens_as_written, analytics_builder, |fed| {
    let app = &fed.app;
    let ua = format!("--user-agent={UA}");
    let prefs = json!({"profile": {"managed_default_content_settings": {"javascript": 2}}});
    let Some(b) = Browser::start_with_prefs(&["--disable-blink-features=AutomationControlled", &ua], prefs).await else {
        return fed.finish().await;
    };
    let pages = Pages::serve(app.base.clone()).await;
    add_site(app, &pages).await;
    b.goto(&pages.url("/loja")).await;
    b.click("#own-inner").await;
    assert_eq!(pages.request("/go?").await, OWN, "followed exactly as written");
    // The page's scripts never ran: no tracker, nothing stored.
    assert_eq!(app.count("web_events").await, 0);
    b.quit().await;
});
