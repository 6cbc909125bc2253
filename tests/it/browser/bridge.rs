//! The WhatsApp bridge on the dashboard's screens (docs/whatsapp.md), in
//! Chromium over the demo after its bridge path ran yesterday: Leads e gasto
//! names the new origin and shows "Retorno total" on the ad's row, a lead's
//! journey shows its visit, and Visitas counts the WhatsApp taps and the
//! leads per source, each against the API's own answer.

use serde_json::json;

use super::webdriver::Browser;
use super::{no_serious_violations, sign_in};
use crate::backend_test;
use crate::common::{DAY, T0, fake_meta_builder};
use crate::dashboard::{demo, operator};
use rastrod::demo::DEMO_OWNER;
use rastrod::service::leads::metrics::format_return;

const AD: &str = "120200000000000301";

// rule: WA-14, WA-16, WA-21
backend_test!(slow: the_bridge_is_on_leads_visits_and_a_leads_journey, fake_meta_builder, |app| {
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    // The bridge's visit, lead and sale happen yesterday, inside every screen's default range.
    app.clock.set(T0 - DAY);
    let bridged = rastrod::demo::whatsapp::seed(&app.state.cx, T0 - DAY).await.unwrap();
    app.clock.set(T0);
    assert!(bridged.matched);
    crate::analytics::drain(&app).await;
    operator(&app, "demo", true, DEMO_OWNER).await;
    sign_in(&b, &app.base, "demo").await;

    // Leads e gasto: the origin's name and the ad's "Retorno total".
    b.click("[data-view=leads]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#origins tr[data-origin=site_whatsapp]").await;
    assert_eq!(b.text("#origins tr[data-origin=site_whatsapp] th").await, "Site → WhatsApp");
    let (from, to) = crate::browser::last_30_local_days();
    let report =
        app.post("/v1/reports/leads", json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": "America/Sao_Paulo"})).await.ok();
    let row = crate::browser::ads(&report).into_iter().find(|a| a["adId"] == AD).unwrap();
    assert_eq!(row["siteConversions"], 1, "{row}");
    let shown = b.text(&format!("#campaigns tr[data-ad='{AD}'] [data-col=totalReturn]")).await;
    assert_eq!(shown, format_return(row["totalReturn"].as_f64()));
    assert_ne!(
        shown,
        b.text(&format!("#campaigns tr[data-ad='{AD}'] [data-col=returnOnSpend]")).await,
        "the site's sale adds to the leads' own return"
    );
    no_serious_violations("leads and spend with the bridge", b.axe().await);

    // The lead's journey: where its visit came from and the page it tapped on
    // (the origin as a filter, so the list holds the lead).
    b.click("#origins tr[data-origin=site_whatsapp] [data-add-filter=origin]").await;
    b.wait_for(&format!("#lead-list tr[data-lead='{}'] button", bridged.lead_id)).await;
    b.click(&format!("#lead-list tr[data-lead='{}'] button", bridged.lead_id)).await;
    b.wait_for("#lead-visit").await;
    let visit = b.text("#lead-visit").await;
    assert!(visit.contains("Black Friday") && visit.contains("/p/1"), "{visit}");
    no_serious_violations("a lead's journey with its visit", b.axe().await);
    b.click("dialog .actions button").await;

    // Visitas: the taps on WhatsApp and the leads of the visit's source.
    b.click("[data-view=visits]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#top-sources").await;
    let clicks = b.text("[data-k=whatsappClicks] .v").await;
    assert_eq!(clicks, "1");
    let sources = b
        .js(
            "var t=document.querySelector('#top-sources');var i=Array.from(t.querySelectorAll('thead th')).findIndex(function(h){return h.textContent==='Leads';});\
             return Array.from(t.querySelectorAll('tbody tr')).map(function(r){return r.cells[i].textContent;});",
            json!([]),
        )
        .await;
    assert!(sources.as_array().unwrap().iter().any(|c| c == "1"), "a source with the lead: {sources}");
    no_serious_violations("Visitas with WhatsApp taps", b.axe().await);
    b.quit().await;
});
