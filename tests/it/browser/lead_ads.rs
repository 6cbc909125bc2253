//! Meta Lead Ads on the dashboard in a real browser (LEADADS.md §8), on the
//! demo's Page: Integrações shows the linked Page as `metaLinkedPages` tells
//! it, the handler's state and the forms; the rules editor simulates live
//! (what `simulateMetaFormRules` answers) and saves; Leads e gasto shows the
//! form origins and the channel. axe-clean. Skips, saying so, without chromium.

use rastrod::demo::DEMO_OWNER;
use rastrod::meta::fake::leads::{FORM_ORCAMENTO, PAGE_LOJA_X};
use serde_json::json;

use crate::backend_test;
use crate::browser::{no_serious_violations, screenshot, sign_in, webdriver::Browser};
use crate::common::{Backend, DAY, T0, TestAppBuilder, fake_meta_builder};
use crate::dashboard::{demo, operator};

fn lead_ads_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend)
        .env("RASTRO_FEDERATION_META_LEADS", "true")
        .env("RASTRO_META_WEBHOOK_VERIFY_TOKEN", "verify-token-0123456789")
}

/// Sets an input's value as a person's typing would end, and tells the page.
const SET: &str = "var e = document.querySelector(arguments[0]); e.value = arguments[1]; \
    e.dispatchEvent(new Event('input', {bubbles: true})); return true;";

/// The demo form's stored qualifying values.
async fn stored(app: &crate::common::TestApp) -> serde_json::Value {
    let path = format!("/v1/meta/owners/{DEMO_OWNER}/lead-ads/metaFormRules");
    let args = json!({"siteId": "loja-x", "formId": FORM_ORCAMENTO});
    app.post(&path, args).await.ok()[0]["rules"]["qualifyWhen"][0]["anyOf"].clone()
}

backend_test!(slow: integrations_show_pages_forms_and_a_live_rules_simulation, lead_ads_builder, |app| {
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    rastrod::demo::lead_ads::seed(&app.state, DEMO_OWNER, T0).await.unwrap();
    rastrod::actors::page_leads::drain(&app.state.actors).await.unwrap();
    operator(&app, "admin", true, DEMO_OWNER).await;
    let linked = app.post(&format!("/v1/meta/owners/{DEMO_OWNER}/lead-ads/metaLinkedPages"), json!({"siteIds": ["loja-x"]})).await.ok();
    let page = &linked[0]["pages"][0];
    assert_eq!(page["pageId"], PAGE_LOJA_X);

    sign_in(&b, &app.base, "admin").await;
    b.click("[data-view=integrations]").await;
    let row = format!("#lead-ads [data-site=loja-x] tr[data-page='{PAGE_LOJA_X}']");
    b.wait_for(&row).await;
    assert_eq!(b.text(&format!("{row} [data-col=pending]")).await, page["pending"].to_string());
    assert_eq!(b.text(&format!("{row} [data-col=failed]")).await, page["failed"].to_string());
    b.wait_for("#lead-ads [data-site=loja-x] [data-handler=ready]").await;
    let form = format!("#lead-ads [data-site=loja-x] tr[data-form='{FORM_ORCAMENTO}']");
    b.wait_for(&form).await;
    no_serious_violations("Integrações with Lead Ads", b.axe().await);
    b.js("document.querySelector('#lead-ads').scrollIntoView(); return true;", json!([])).await;
    screenshot(&app, &b, "integracoes-formularios").await;

    // The editor opens on the demo's rules; an answer that meets them qualifies, live.
    b.click(&format!("[data-edit-rules='{FORM_ORCAMENTO}']")).await;
    b.wait_for("#rules-editor").await;
    b.js(SET, json!(["#sim-interesse", "Sofá"])).await;
    b.wait_until("the simulation qualifies", "return document.querySelector('#sim-outcome').getAttribute('data-stage') === 'qualified';", json!([])).await;
    let api = app
        .post(
            &format!("/v1/meta/owners/{DEMO_OWNER}/lead-ads/simulateMetaFormRules"),
            json!({"siteId": "loja-x", "formId": FORM_ORCAMENTO, "answers": [{"key": "interesse", "value": "Sofá"}]}),
        )
        .await
        .ok();
    assert_eq!(api["stage"], "qualified");
    let shown = b.text("#sim-outcome [data-k=label]").await;
    assert!(shown.contains(api["label"].as_str().unwrap()), "{shown} shows {}", api["label"]);
    no_serious_violations("the rules editor", b.axe().await);
    screenshot(&app, &b, "regras-do-formulario").await;
    // Editing the condition changes the outcome before anything is saved; saving stores it.
    b.js(SET, json!(["#rule-qvalues", "Cama, Mesa"])).await;
    b.wait_until("the simulation follows the edit", "return document.querySelector('#sim-outcome').getAttribute('data-stage') === 'new';", json!([])).await;
    assert_eq!(stored(&app).await, json!(["Sofá", "Mesa"]), "nothing saved by simulating");
    b.click("#rules-save").await;
    b.wait_until("the dialog closes", "return !document.querySelector('#rules-editor');", json!([])).await;
    assert_eq!(stored(&app).await, json!(["Cama", "Mesa"]));

    // Leads e gasto: the form origins with their figures, the channel of each lead.
    b.click("[data-view=leads]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#origins tr[data-origin=lead_form]").await;
    b.wait_for("#lead-list tr[data-lead]").await;
    b.wait_until(
        "a form lead is listed as such",
        "return Array.from(document.querySelectorAll('#lead-list [data-col=channel]')).some(function (c) { return c.textContent === 'Formulário'; });",
        json!([]),
    )
    .await;
    // The summary's cost per lead is over both paid origins, not the WhatsApp ads' alone
    // (the screen's range: the 30 UTC days before today).
    let today = T0 - T0.rem_euclid(DAY);
    let report = b
        .js_async(
            "var done = arguments[arguments.length - 1]; var r = arguments[0]; \
             fetch('/dashboard/api/session', {credentials: 'same-origin'}).then(function (x) { return x.json(); }) \
             .then(function (me) { return fetch('/dashboard/api/reports/leads', {method: 'POST', credentials: 'same-origin', \
               headers: {'Content-Type': 'application/json', 'X-CSRF-Token': me.csrfToken}, body: JSON.stringify(r)}); }) \
             .then(function (x) { return x.json(); }).then(done);",
            json!([{"siteIds": ["loja-x"], "from": today - 30 * DAY, "to": today - 1}]),
        )
        .await;
    let card = b.text("[data-k=costPerLead] .v").await;
    assert_eq!(card, report["paidFmt"]["costPerLead"].as_str().unwrap_or_default(), "{report}");
    let wa = report["origins"].as_array().unwrap().iter().find(|o| o["origin"] == "ctwa_ad").unwrap();
    assert_ne!(card, wa["fmt"]["costPerLead"].as_str().unwrap_or_default(), "form leads count in the cost per lead");
    no_serious_violations("Leads e gasto with form leads", b.axe().await);
    b.quit().await;
});
