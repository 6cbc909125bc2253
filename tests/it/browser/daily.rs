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
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    operator(&app, "demo", true, DEMO_OWNER).await;
    sign_in(&b, &app.base, "demo").await;

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
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    operator(&app, "demo", true, DEMO_OWNER).await;
    sign_in(&b, &app.base, "demo").await;
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
