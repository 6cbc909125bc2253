//! The dashboard as a daily tool (issue 24), in a real browser: links that
//! can be shared (the screen lives in the address: reload, Back and a pasted
//! link give the same screen), and every screen on a 390 × 844 phone and in
//! the dark scheme, axe-clean, without a page wider than the phone.

use serde_json::json;

use super::webdriver::Browser;
use super::{no_serious_violations, screenshot, sign_in};
use crate::backend_test;
use crate::common::{T0, fake_meta_builder};
use crate::dashboard::{demo, operator};
use rastrod::demo::DEMO_OWNER;

/// A browser signed in as a demo operator, over the demo with its months of visits.
async fn signed_in_with_the_demo(app: &crate::common::TestApp) -> Option<Browser> {
    let b = Browser::start().await?;
    demo(app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(app).await;
    operator(app, "demo", true, DEMO_OWNER).await;
    sign_in(&b, &app.base, "demo").await;
    Some(b)
}

/// Waits until the screen has drawn its data (nothing says "Carregando…").
async fn drawn(b: &Browser, what: &str) {
    b.wait_for("main h2").await;
    b.wait_until(
        what,
        "return !!document.querySelector('main')&&!document.querySelector('main').textContent.includes('Carregando');",
        json!([]),
    )
    .await;
}

async fn picked(b: &Browser, css: &str) -> String {
    b.js("return document.querySelector(arguments[0]).value;", json!([css])).await.as_str().unwrap().to_string()
}

backend_test!(slow: a_screen_lives_in_its_address, fake_meta_builder, |app| {
    let Some(b) = signed_in_with_the_demo(&app).await else { return };

    // Visitas, one client, the last 7 days, a page as a filter.
    b.click("[data-view=visits]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#top-pages").await;
    b.select("#period-picker", "7").await;
    b.wait_until("7 days", "return document.querySelector('#period-picker').value==='7';", json!([])).await;
    drawn(&b, "the 7 days").await;
    b.click("#top-pages tbody tr:first-child [data-add-filter=page]").await;
    b.wait_for("#filters [data-filter=page]").await;
    let chip = b.text("#filters [data-filter=page]").await;
    let url = b.url().await;
    for part in ["view=visits", "siteId=loja-x", "period=7", "filters="] {
        assert!(url.contains(part), "{part} in {url}");
    }

    // A reload gives the same screen.
    b.refresh().await;
    b.wait_for("#filters [data-filter=page]").await;
    assert_eq!(b.text("#filters [data-filter=page]").await, chip);
    assert_eq!(picked(&b, "#site-picker").await, "loja-x");
    assert_eq!(picked(&b, "#period-picker").await, "7");
    assert_eq!(b.url().await, url, "the reload keeps the address");

    // Back: the screen before the filter, then before the 7 days.
    b.back().await;
    b.wait_until("no filter", "return !!document.querySelector('#top-pages')&&!document.querySelector('#filters');", json!([]))
        .await;
    assert_eq!(picked(&b, "#period-picker").await, "7");
    b.back().await;
    b.wait_until("30 days", "var p=document.querySelector('#period-picker');return !!p&&p.value==='30';", json!([])).await;

    // A pasted link, in a page of its own.
    b.goto(&format!("{}/", app.base)).await;
    b.wait_for("main h2").await;
    b.goto(&url).await;
    b.wait_for("#filters [data-filter=page]").await;
    assert_eq!(picked(&b, "#site-picker").await, "loja-x");

    // The leads' filter names its campaign after a reload too.
    b.click("[data-view=leads]").await;
    b.wait_for("#campaigns").await;
    b.click("#campaigns tr.lvl0 [data-add-filter=campaign]").await;
    b.wait_for("#filters [data-filter=campaign]").await;
    let named = b.text("#filters [data-filter=campaign]").await;
    assert!(b.url().await.contains("leadFilters="));
    b.refresh().await;
    b.wait_for("#filters [data-filter=campaign]").await;
    assert_eq!(b.text("#filters [data-filter=campaign]").await, named);

    // An address naming a client the operator cannot see shows every client, not an error.
    b.goto(&format!("{}/#view=visits&siteId=nobody", app.base)).await;
    b.wait_for("#top-pages").await;
    assert_eq!(picked(&b, "#site-picker").await, "");
    b.quit().await;
});

const SCREENS: [&str; 8] = ["leads", "visits", "people", "sitemap", "vitals", "goals", "links", "integrations"];

backend_test!(slow: every_screen_works_on_a_phone_and_in_the_dark, fake_meta_builder, |app| {
    let Some(b) = signed_in_with_the_demo(&app).await else { return };
    for (phone, dark) in [(false, true), (true, false), (true, true)] {
        let (w, h) = if phone { (390, 844) } else { (1280, 1000) };
        b.resize(w, h).await;
        b.color_scheme(dark).await;
        let background = b.js("return getComputedStyle(document.documentElement).backgroundColor;", json!([])).await;
        let want = if dark { "rgb(13, 17, 23)" } else { "rgb(255, 255, 255)" };
        assert_eq!(background, json!(want), "the scheme");
        for view in SCREENS {
            if phone {
                // The nav is folded behind "Menu".
                let hidden = b.js("return document.querySelector('#main-nav').offsetParent===null;", json!([])).await;
                assert_eq!(hidden, json!(true), "the nav is folded on a phone");
                b.click("#menu-toggle").await;
            }
            b.click(&format!("[data-view={view}]")).await;
            drawn(&b, view).await;
            let label = format!("{view} ({}, {})", if phone { "phone" } else { "desktop" }, if dark { "dark" } else { "light" });
            no_serious_violations(&label, b.axe().await);
            if phone {
                let fits = b
                    .js("return document.documentElement.scrollWidth<=window.innerWidth+1;", json!([]))
                    .await;
                assert_eq!(fits, json!(true), "{label}: nothing wider than the phone but the tables' own scroll");
                if view == "visits" || view == "leads" {
                    screenshot(&app, &b, &format!("phone-{view}{}", if dark { "-dark" } else { "" })).await;
                }
            }
        }
    }
    b.quit().await;
});

/// The 30 days up to the end of today in São Paulo (Visitas' default period).
fn thirty_days() -> (i64, i64) {
    let sp = rastrod::service::reporting::timezone::Zone::of(Some("America/Sao_Paulo"), &[]).unwrap().unwrap();
    let today = sp.date(T0);
    (sp.start_of(today - chrono::Duration::days(29)), sp.start_of(today.succ_opt().unwrap()) - 1)
}

/// The sessions listed on screen, in order.
async fn listed(b: &Browser) -> Vec<String> {
    let script = "return Array.from(document.querySelectorAll('#sessions-table tbody tr[data-session]'))\
        .map(function(e){return e.getAttribute('data-session');});";
    let v = b.js(script, json!([])).await;
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

backend_test!(slow: sessions_journeys_and_timelines_are_on_screen, fake_meta_builder, |app| {
    let Some(b) = signed_in_with_the_demo(&app).await else { return };
    b.click("[data-view=visits]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#sessions-table tbody tr[data-session]").await;

    // The sessions: listSessions' first page, in its order; then the next.
    let (from, to) = thirty_days();
    let page = |cursor: serde_json::Value| {
        json!({"siteId": "loja-x", "from": from, "to": to, "paginationOpts": {"numItems": 25, "cursor": cursor}})
    };
    let first = app.post("/v1/analytics/listSessions", page(json!(null))).await.ok();
    let want: Vec<&str> = first["page"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
    assert_eq!(listed(&b).await, want);
    b.click("#more-sessions").await;
    b.wait_until("the next page", "return document.querySelectorAll('#sessions-table tbody tr[data-session]').length===50;", json!([]))
        .await;
    let second = app.post("/v1/analytics/listSessions", page(first["continueCursor"].clone())).await.ok();
    let more: Vec<String> = listed(&b).await.split_off(25);
    let want2: Vec<&str> = second["page"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
    assert_eq!(more, want2);
    no_serious_violations("Visitas with its sessions", b.axe().await);

    // A session's journey: sessionJourney's events.
    let s = &first["page"][0];
    b.click(&format!("[data-journey='{}']", s["sessionId"].as_str().unwrap())).await;
    b.wait_for("#session-events").await;
    let journey = app
        .post(
            "/v1/analytics/sessionJourney",
            json!({"siteId": "loja-x", "sessionId": s["sessionId"], "from": s["startedAt"],
                "to": s["lastEventAt"], "paginationOpts": {"numItems": 200, "cursor": null}}),
        )
        .await
        .ok();
    let rows = b.js("return document.querySelectorAll('#session-events tbody tr').length;", json!([])).await;
    assert_eq!(rows, json!(journey["page"].as_array().unwrap().len()));
    assert!(rows.as_u64().unwrap() > 0);
    no_serious_violations("a session's journey", b.axe().await);

    // Its visitor's timeline over the period: visitorJourney's events.
    b.click("#visitor-timeline").await;
    b.wait_for("#visitor-events").await;
    let timeline = app
        .post(
            "/v1/analytics/visitorJourney",
            json!({"siteIds": ["loja-x"], "visitorId": s["visitorId"], "from": from, "to": to, "limit": 200}),
        )
        .await
        .ok();
    let rows = b.js("return document.querySelectorAll('#visitor-events tbody tr').length;", json!([])).await;
    assert_eq!(rows, json!(timeline["events"].as_array().unwrap().len()));
    assert!(rows.as_u64().unwrap() >= journey["page"].as_array().unwrap().len() as u64);
    b.click("dialog .actions button:last-child").await;

    // From a live row: someone arriving now, their timeline.
    let body = json!({"siteId": "loja-x", "visitorId": "v_visitor0042", "events": [
        {"type": "pageview", "pageviewId": "p_0000000000000042", "url": "https://lojax.example.com/p/42"}]});
    let a = crate::analytics::track_as(&app, &body, &[("user-agent", crate::analytics::UA)]).await;
    assert_eq!(a.body["accepted"], 1, "{}", a.text);
    b.wait_for("#live-visitors [data-timeline]").await;
    b.click("#live-visitors [data-timeline]").await;
    b.wait_for("#visitor-events").await;
    assert!(b.text("#visitor-events").await.contains("/p/42"));
    b.quit().await;
});

/// The first cells of a table's rows.
async fn first_cells(b: &Browser, table: &str) -> Vec<String> {
    let script = "return Array.from(document.querySelectorAll(arguments[0]+' tbody tr th')).map(function(e){return e.textContent.trim();});";
    let v = b.js(script, json!([table])).await;
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

backend_test!(slow: every_breakdown_of_the_overview_is_a_tab, fake_meta_builder, |app| {
    let Some(b) = signed_in_with_the_demo(&app).await else { return };
    b.click("[data-view=visits]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#top-pages").await;
    let (from, to) = thirty_days();
    let args = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": "America/Sao_Paulo"});
    let o = app.post("/v1/analytics/overview", args.clone()).await.ok();
    let column = |panel: &str, key: &str| -> Vec<String> {
        o[panel].as_array().unwrap().iter().map(|r| r[key].as_str().unwrap_or("—").to_string()).collect()
    };
    let per_session = o["totals"]["viewsPerSession"].as_f64().unwrap().to_string().replace('.', ",");
    assert_eq!(b.text("[data-k=viewsPerSession] .v").await, per_session);
    // The overview's own tables, each behind its tab.
    for (tab, table, panel, key) in [
        ("entry", "#entry-pages", "entryPages", "route"),
        ("referrers", "#referrers", "referrers", "referrer"),
        ("mediums", "#mediums", "mediums", "medium"),
        ("campaigns", "#web-campaigns", "campaigns", "campaign"),
        ("countries", "#countries", "countries", "country"),
        ("browsers", "#browsers", "browsers", "browser"),
        ("events", "#custom-events", "events", "name"),
        ("goals", "#top-goals", "topGoals", "name"),
    ] {
        b.click(&format!("[data-tab={tab}]")).await;
        b.wait_for(&format!("{table} tbody tr")).await;
        assert_eq!(first_cells(&b, table).await, column(panel, key), "{tab}");
        let selected = b.js("return document.querySelector(arguments[0]).getAttribute('aria-selected');", json!([format!("[data-tab={tab}]")])).await;
        assert_eq!(selected, json!("true"));
    }
    no_serious_violations("Visitas' tabs", b.axe().await);
    // A dimension without a table: its breakdown, asked when the tab opens.
    b.click("[data-tab=os]").await;
    b.wait_for("#systems tbody tr").await;
    let mut ask = args.clone();
    ask["breakdown"] = json!({"dim": "os", "limit": 10});
    let os = app.post("/v1/analytics/overview", ask).await.ok();
    let want: Vec<String> =
        os["breakdown"]["rows"].as_array().unwrap().iter().map(|r| r["value"].as_str().unwrap_or("—").to_string()).collect();
    assert_eq!(first_cells(&b, "#systems").await, want);
    // Clicking one makes it a filter.
    b.click("#systems tbody tr:first-child [data-add-filter=os]").await;
    b.wait_for("#filters [data-filter=os]").await;
    // The arrow keys move between the tabs.
    b.wait_for("[data-tab=pages]").await;
    let moved = b
        .js(
            "var t=document.querySelector('[data-tab=pages]');t.focus();\
             t.parentNode.dispatchEvent(new KeyboardEvent('keydown',{key:'ArrowRight',bubbles:true}));\
             return document.querySelector('[data-tab=entry]').getAttribute('aria-selected');",
            json!([]),
        )
        .await;
    assert_eq!(moved, json!("true"));
    b.quit().await;
});
