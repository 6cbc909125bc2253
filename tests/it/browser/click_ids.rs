//! Meta told by click id on Integrações (docs/whatsapp.md §4), in Chromium
//! over the demo: the pixel's cell opens the two opt-ins with their plain
//! explanation, refuses the opt-in without the WhatsApp Business Account,
//! saves both as `metaStatus` then tells them, and the conversions sent list
//! a site sale of a visit from a Facebook click as such. axe-clean.

use serde_json::json;

use super::webdriver::Browser;
use super::{no_serious_violations, sign_in};
use crate::analytics::{UA, track_as};
use crate::backend_test;
use crate::common::{T0, fake_meta_builder};
use crate::dashboard::{demo, operator};
use rastrod::demo::DEMO_OWNER;

const WABA: &str = "104996632576012";

// rule: WA-30, WA-33
backend_test!(slow: integrations_set_the_click_id_opt_ins_and_list_a_site_sale, fake_meta_builder, |app| {
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    operator(&app, "admin", true, DEMO_OWNER).await;
    sign_in(&b, &app.base, "admin").await;
    b.click("[data-view=integrations]").await;
    let cell = "#clients tr[data-site=loja-x] [data-click-ids-for=loja-x]";
    b.wait_for(cell).await;
    assert_eq!(b.text(&format!("{cell} summary")).await, "Conversões pelo clique do anúncio");
    b.click(&format!("{cell} summary")).await;
    assert!(b.text(&format!("{cell} p.muted")).await.contains("código do clique"), "the plain explanation");
    no_serious_violations("Integrações with the click-id opt-ins", b.axe().await);

    // The opt-in alone is refused, and says why; nothing is stored.
    b.click("#click-ids-loja-x").await;
    b.click(&format!("{cell} button[type=submit]")).await;
    b.wait_for(&format!("{cell} [role=alert]")).await;
    let status = app.post("/v1/meta/status", json!({"siteIds": ["loja-x"]})).await.ok();
    assert!(status[0]["pixel"].get("sendClickIds").is_none());

    // With the account it saves, and the screen comes back telling it.
    b.type_into("#waba-loja-x", WABA).await;
    b.click(&format!("{cell} button[type=submit]")).await;
    b.wait_until(
        "the screen shows the opt-in on",
        "var s = document.querySelector(arguments[0]); return !!s && s.textContent.indexOf('ligado') >= 0;",
        json!([format!("{cell} summary")]),
    )
    .await;
    let status = app.post("/v1/meta/status", json!({"siteIds": ["loja-x"]})).await.ok();
    assert_eq!((&status[0]["pixel"]["sendClickIds"], &status[0]["pixel"]["whatsappBusinessAccountId"]), (&json!(true), &json!(WABA)));
    let shown = b.js("return document.querySelector('#waba-loja-x').value;", json!([])).await;
    assert_eq!(shown, json!(WABA));
    assert_eq!(b.js("return document.querySelector('#click-ids-loja-x').checked;", json!([])).await, json!(true));

    // A site sale of a visit that landed from a Facebook click: listed as a site sale.
    let body = json!({"siteId": "loja-x", "visitorId": "v_visitor0fbc", "events": [{"type": "pageview",
        "pageviewId": "p_00000000000000fb", "url": "https://lojax.example.com/?fbclid=IwAR2browser"}]});
    let tracked = track_as(&app, &body, &[("user-agent", UA)]).await;
    let session = tracked.body["sessionId"].as_str().unwrap().to_string();
    let sale = json!({"conversionKey": "browser-sale", "occurredAt": T0, "name": "Pedido", "valueCents": 12_345,
        "sessionId": session});
    assert_eq!(app.post("/v1/sites/loja-x/analytics/conversions", sale).await.status, 201);
    rastrod::actors::pixel_sender::drain(&app.state.actors).await.unwrap();
    b.refresh().await;
    b.click("[data-view=integrations]").await;
    b.wait_for("#conversion-feed [data-site-sale]").await;
    assert_eq!(b.text("#conversion-feed [data-site-sale]").await, "Venda no site");
    assert!(!b.text("#conversion-feed").await.contains("IwAR2browser"));
    no_serious_violations("the conversions sent with a site sale", b.axe().await);
    b.quit().await;
});
