//! The WhatsApp bridge on the lead's side (docs/whatsapp.md §2-§3): a lead
//! recorded with the reference a site visit's WhatsApp tap wrote into the
//! message inherits that visit, its Meta ad and its spend; the site's own
//! sales of ad visits count on the ad's row. Driven over HTTP against the
//! demo (fake Meta: a synced catalogue with spend).

use serde_json::{Value, json};

use crate::analytics::{UA, drain, track_as};
use crate::backend_test;
use crate::common::*;

const SITE: &str = "loja-x";
const WEB: &str = "lojax.example.com";
const MINUTE: i64 = 60_000;

/// A visit landing on `/?{query}` that taps the WhatsApp link on `/produto`
/// with reference `reference` (what the tracker sends, rule WA-01).
async fn visit(app: &TestApp, visitor: &str, query: &str, reference: &str) {
    let body = json!({"siteId": SITE, "visitorId": visitor, "events": [
        {"type": "pageview", "pageviewId": format!("p_{visitor:0>16}"), "url": format!("https://{WEB}/?{query}")},
        {"type": "event", "name": "whatsapp_click", "url": format!("https://{WEB}/produto"),
            "properties": {"number": "5511999990000", "ref": reference}},
    ]});
    let a = track_as(app, &body, &[("user-agent", UA)]).await;
    assert_eq!(a.status, 200, "{}", a.text);
}

fn wa_lead(key: &str, at: i64, extra: Value) -> Value {
    let mut body = json!({"leadKey": key, "eventId": format!("{key}-new"), "occurredAt": at, "origin": "whatsapp"});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    body
}

async fn record(app: &TestApp, body: Value) -> Answer {
    app.post(&format!("/v1/sites/{SITE}/leads"), body).await
}

async fn journey(app: &TestApp, lead_id: &str) -> Value {
    app.get(&format!("/v1/sites/{SITE}/leads/{lead_id}/journey")).await.ok()
}

/// The report's range: the demo's 30 days and today.
fn range() -> (i64, i64) {
    let today = T0 - T0.rem_euclid(DAY);
    (today - 30 * DAY, today + DAY - 1)
}

async fn report(app: &TestApp) -> Value {
    let (from, to) = range();
    app.post("/v1/reports/leads", json!({"siteIds": [SITE], "from": from, "to": to})).await.ok()
}

/// Every ad row of a report, with its campaign and ad set ids.
fn ad_rows(report: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for c in report["campaigns"].as_array().unwrap() {
        for s in c["adsets"].as_array().unwrap() {
            for a in s["ads"].as_array().unwrap() {
                out.push((
                    c["campaignId"].as_str().unwrap_or("").into(),
                    s["adsetId"].as_str().unwrap_or("").into(),
                    a.clone(),
                ));
            }
        }
    }
    out
}

fn ad_row(report: &Value, ad_id: &str) -> Value {
    ad_rows(report).into_iter().find(|(_, _, a)| a["adId"] == ad_id).map(|(_, _, a)| a).expect("the ad's row")
}

// rule: WA-10, WA-11, WA-12, WA-13, WA-14
backend_test!(a_lead_with_the_reference_inherits_the_visit_and_its_ad, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    let before = report(&app).await;
    let (campaign_id, adset_id, ad) = ad_rows(&before)
        .into_iter()
        .find(|(_, _, a)| a["spendCents"].as_i64().is_some_and(|s| s > 0))
        .expect("an ad with spend");
    let ad_id = ad["adId"].as_str().unwrap().to_string();

    // The template's parameters: the ad set id in utm_term, the ad id in utm_content (WA-13).
    let query = format!(
        "utm_source=facebook&utm_medium=paid_social&utm_campaign=Promo&utm_term={adset_id}&utm_content={ad_id}"
    );
    visit(&app, "v_bridge_visitor_1", &query, "R7K2QX").await;
    let lead = record(&app, wa_lead("wa-1", T0 + MINUTE, json!({"webRef": "r7k2qx"}))).await.ok();
    assert_eq!(lead["created"], true);
    assert_eq!(lead["webRef"], "matched", "any case reads (WA-10): {lead}");
    let lead_id = lead["leadId"].as_str().unwrap().to_string();

    let j = journey(&app, &lead_id).await;
    assert_eq!(j["lead"]["origin"], "site_whatsapp", "{j}");
    assert_eq!(j["lead"]["adId"], ad_id.as_str());
    assert_eq!(j["lead"]["adsetId"], adset_id.as_str());
    assert_eq!(j["lead"]["campaignId"], campaign_id.as_str(), "the catalogue fills the ad's campaign");
    let v = &j["visit"];
    assert_eq!(v["visitorId"], "v_bridge_visitor_1");
    assert_eq!(v["medium"], "paid_social");
    assert_eq!(v["campaign"], "Promo");
    assert_eq!(v["landingPage"], "/");
    assert_eq!(v["clickedPage"], "/produto");
    assert!(v["sessionId"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(v["source"].as_str().is_some_and(|s| !s.is_empty()));

    // The lead counts on the ad's row, beside its spend (WA-13).
    let after = report(&app).await;
    let (was, is) = (ad_row(&before, &ad_id), ad_row(&after, &ad_id));
    assert_eq!(is["leads"].as_i64().unwrap(), was["leads"].as_i64().unwrap() + 1);
    assert_eq!(is["spendCents"], was["spendCents"]);
    let origin = after["origins"].as_array().unwrap().iter().find(|o| o["origin"] == "site_whatsapp").cloned();
    assert_eq!(origin.expect("the new origin")["leads"], 1);

    // A repeat binds nothing and says nothing of the reference (WA-12).
    visit(&app, "v_bridge_visitor_2", "utm_source=newsletter", "AAAAAA").await;
    let again = record(
        &app,
        json!({"leadKey": "wa-1", "eventId": "wa-1-again", "occurredAt": T0 + 2 * MINUTE,
        "origin": "whatsapp", "webRef": "AAAAAA"}),
    )
    .await
    .ok();
    assert_eq!(again["created"], false);
    assert!(again.get("webRef").is_none(), "{again}");
    assert_eq!(journey(&app, &lead_id).await["visit"]["visitorId"], "v_bridge_visitor_1");

    // The visitor's journey and its live row show the lead (WA-14).
    let (from, to) = range();
    let vj = app
        .post(
            "/v1/analytics/visitorJourney",
            json!({"siteIds": [SITE], "visitorId": "v_bridge_visitor_1", "from": from, "to": to}),
        )
        .await
        .ok();
    assert_eq!(vj["leads"][0]["leadId"], lead_id.as_str(), "{vj}");
    let live = app.post("/v1/analytics/liveVisitors", json!({"siteIds": [SITE], "now": T0 + 2 * MINUTE})).await.ok();
    let row = live["visitors"].as_array().unwrap().iter().find(|r| r["visitorId"] == "v_bridge_visitor_1").cloned();
    assert_eq!(row.expect("the visitor is live")["lead"]["leadId"], lead_id.as_str());
    let other = live["visitors"].as_array().unwrap().iter().find(|r| r["visitorId"] == "v_bridge_visitor_2").cloned();
    assert!(other.expect("the second visitor is live").get("lead").is_none());
});

// rule: WA-10, WA-11
backend_test!(unknown_expired_and_malformed_references, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    // Malformed: refused before anything is written.
    for bad in ["R7K2Q", "R7K2QXX", "R7K2Q0", "R7K2QI", "R7K 2Q"] {
        record(&app, wa_lead("bad", T0, json!({"webRef": bad}))).await.err(400, "INVALID_ARGUMENT");
    }
    assert_eq!(
        record(&app, wa_lead("bad", T0, json!({}))).await.ok()["created"],
        true,
        "nothing was kept of the refusals"
    );

    visit(&app, "v_bridge_old_visitor", "utm_source=newsletter", "HHHHHH").await;
    // Unknown on the site, a lead from before the tap, and one more than 7 days after it.
    for (key, reference, at) in
        [("u1", "ZZZZZZ", T0 + MINUTE), ("u2", "HHHHHH", T0 - MINUTE), ("u3", "HHHHHH", T0 + 7 * DAY + MINUTE)]
    {
        let a = record(&app, wa_lead(key, at, json!({"webRef": reference}))).await.ok();
        assert_eq!(a["webRef"], "unknown", "{key}: {a}");
        let j = journey(&app, a["leadId"].as_str().unwrap()).await;
        assert_eq!(j["lead"]["origin"], "whatsapp", "{key}: the host's origin stays");
        assert!(j.get("visit").is_none(), "{key}: {j}");
    }
    // Within the 7 days it binds.
    let a = record(&app, wa_lead("u4", T0 + 7 * DAY - MINUTE, json!({"webRef": "hhhhhh"}))).await.ok();
    assert_eq!(a["webRef"], "matched");

    // A click-to-WhatsApp ad keeps its origin and ad; the visit is context (WA-11).
    visit(&app, "v_bridge_ctwa_visitor", "utm_source=instagram", "CCCCCC").await;
    let ctwa = record(
        &app,
        json!({"leadKey": "c1", "eventId": "c1-new", "occurredAt": T0 + MINUTE, "origin": "ctwa_ad", "adId": "120000001",
            "webRef": "CCCCCC"}),
    )
    .await
    .ok();
    assert_eq!(ctwa["webRef"], "matched");
    let j = journey(&app, ctwa["leadId"].as_str().unwrap()).await;
    assert_eq!(j["lead"]["origin"], "ctwa_ad");
    assert_eq!(j["lead"]["adId"], "120000001");
    assert_eq!(j["visit"]["visitorId"], "v_bridge_ctwa_visitor");
    // A seed lead's answer has no new field.
    let plain = record(&app, wa_lead("plain", T0, json!({}))).await.ok();
    let mut keys: Vec<&String> = plain.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["created", "leadId"]);
});

// rule: WA-16, WA-20, WA-21
backend_test!(sources_gain_leads_and_the_ad_row_its_site_sales, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    let before = report(&app).await;
    let (_, _, ad) = ad_rows(&before)
        .into_iter()
        .find(|(_, _, a)| a["spendCents"].as_i64().is_some_and(|s| s > 0))
        .expect("an ad with spend");
    let ad_id = ad["adId"].as_str().unwrap().to_string();
    assert!(ad.get("siteConversions").is_none() && ad.get("totalReturn").is_none(), "no site sales yet: {ad}");

    visit(
        &app,
        "v_bridge_buyer_visitor",
        &format!("utm_source=facebook&utm_campaign=Verao&utm_content={ad_id}"),
        "BBBBBB",
    )
    .await;
    let lead = record(&app, wa_lead("buyer", T0 + MINUTE, json!({"webRef": "BBBBBB"}))).await.ok();
    let j = journey(&app, lead["leadId"].as_str().unwrap()).await;
    let session_id = j["visit"]["sessionId"].as_str().unwrap().to_string();
    let source = j["visit"]["source"].as_str().unwrap().to_string();

    // The site's own sale of that visit, in the ledger (WA-20).
    app.post(
        &format!("/v1/sites/{SITE}/analytics/conversions"),
        json!({"conversionKey": "order-1", "occurredAt": T0 + 2 * MINUTE, "name": "Pedido", "valueCents": 50_000,
            "sessionId": session_id}),
    )
    .await
    .ok();
    let after = report(&app).await;
    let row = ad_row(&after, &ad_id);
    assert_eq!(row["siteConversions"], 1, "{row}");
    assert_eq!(row["siteRevenueCents"], 50_000);
    let (revenue, spend) = (row["revenueCents"].as_i64().unwrap(), row["spendCents"].as_i64().unwrap());
    let total = row["totalReturn"].as_f64().unwrap();
    assert!((total - (revenue + 50_000) as f64 / spend as f64).abs() < 1e-9, "{row}");
    // Its campaign carries it too; an ad without site sales answers none of the fields (WA-21).
    let campaign = after["campaigns"].as_array().unwrap().iter().find(|c| {
        c["adsets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["ads"].as_array().unwrap().iter().any(|a| a["adId"] == ad_id.as_str()))
    });
    assert_eq!(campaign.unwrap()["siteRevenueCents"], 50_000);
    let plain = ad_rows(&after).into_iter().find(|(_, _, a)| a["adId"] != ad_id.as_str()).unwrap().2;
    assert!(plain.get("siteConversions").is_none() && plain.get("totalReturn").is_none(), "{plain}");

    // The overview's source and campaign rows gain the lead (WA-16).
    drain(&app).await;
    let today = T0 - T0.rem_euclid(DAY);
    let o =
        app.post("/v1/analytics/overview", json!({"siteIds": [SITE], "from": today, "to": today + DAY - 1})).await.ok();
    let src = o["sources"].as_array().unwrap().iter().find(|s| s["source"] == source.as_str()).cloned();
    assert_eq!(src.expect("the visit's source")["leads"], 1, "{o}");
    let camp = o["campaigns"].as_array().unwrap().iter().find(|c| c["campaign"] == "Verao").cloned();
    assert_eq!(camp.expect("the visit's campaign")["leads"], 1);
    assert!(
        o["sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["source"] != source.as_str())
            .all(|s| s.get("leads").is_none())
    );
});

// rule: WA-11, WA-13, WA-20, WA-33
backend_test!(the_demo_walks_the_bridge_end_to_end, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    let before = report(&app).await;
    let bridged = rastrod::demo::whatsapp::seed(&app.state.cx, T0).await.unwrap();
    assert!(bridged.matched, "the demo's lead found its visit");
    let j = journey(&app, &bridged.lead_id).await;
    assert_eq!(j["lead"]["origin"], "site_whatsapp");
    assert_eq!(j["lead"]["adId"], "120200000000000301", "the ad of the visit's URL parameters");
    assert_eq!(j["visit"]["campaign"], "Black Friday");
    let after = report(&app).await;
    let (was, is) = (ad_row(&before, "120200000000000301"), ad_row(&after, "120200000000000301"));
    assert_eq!(is["leads"].as_i64().unwrap(), was["leads"].as_i64().unwrap() + 1);
    assert_eq!(is["siteConversions"], 1);
    assert_eq!(is["siteRevenueCents"], 18_990);
    assert!(is["totalReturn"].as_f64().is_some(), "{is}");
    // The sale went to Loja X's pixel with the visit's Facebook click (WA-33): "Enviado para a Meta".
    rastrod::actors::pixel_sender::drain(&app.state.actors).await.unwrap();
    let rows = app.get(&format!("/v1/sites/{SITE}/meta/conversions")).await.ok();
    let sale = rows.as_array().unwrap().iter().find(|r| r["conversionId"] == bridged.conversion_id.as_str()).cloned();
    assert_eq!(sale.expect("the site sale is listed")["status"], "sent", "{rows}");
    // A second run changes nothing.
    let again = rastrod::demo::whatsapp::seed(&app.state.cx, T0).await.unwrap();
    assert_eq!(again, bridged);
    assert_eq!(ad_row(&report(&app).await, "120200000000000301")["leads"], is["leads"]);
});

// rule: WA-15
backend_test!(a_goal_can_be_becoming_a_lead_while_the_visit_is_open, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    let goal = json!({"siteId": SITE, "key": "virou_lead", "name": "Virou lead", "matcher": {"kind": "event", "name": "lead"}});
    app.post("/v1/analytics/upsertGoal", goal).await.ok();
    let today = T0 - T0.rem_euclid(DAY);
    let (from, to) = (today, today + DAY - 1);
    assert_eq!(goals(&app, (from, to)).await, 0);

    // A lead two minutes after the tap: the visit is open, the goal completes in its session.
    visit(&app, "v_bridge_goal_visitor", "utm_source=instagram", "GGGGGG").await;
    let before = sessions(&app, (from, to)).await;
    app.clock.advance(2 * MINUTE);
    let lead = record(&app, wa_lead("g1", T0 + 2 * MINUTE, json!({"webRef": "GGGGGG"}))).await.ok();
    assert_eq!(lead["webRef"], "matched");
    assert_eq!(goals(&app, (from, to)).await, 1);
    assert_eq!(sessions(&app, (from, to)).await, before, "the lead joined the visit's session");
    let session =
        journey(&app, lead["leadId"].as_str().unwrap()).await["visit"]["sessionId"].as_str().unwrap().to_string();
    let events = app
        .post(
            "/v1/analytics/sessionJourney",
            json!({"siteId": SITE, "sessionId": session, "from": from, "to": to,
        "paginationOpts": {"numItems": 50, "cursor": null}}),
        )
        .await
        .ok();
    assert!(events.to_string().contains("\"lead\""), "the session holds the lead's event: {events}");

    // A lead an hour after the tap: the visit is over; no event, no new session, the lead still matched.
    visit(&app, "v_bridge_late_visitor", "utm_source=instagram", "KKKKKK").await;
    let before = sessions(&app, (from, to)).await;
    app.clock.advance(60 * MINUTE);
    let late = record(&app, wa_lead("g2", T0 + 62 * MINUTE, json!({"webRef": "KKKKKK"}))).await.ok();
    assert_eq!(late["webRef"], "matched");
    assert_eq!(goals(&app, (from, to)).await, 1);
    assert_eq!(sessions(&app, (from, to)).await, before);
});

/// The "virou_lead" goal's completions over the range, after the rollups ran.
async fn goals(app: &TestApp, (from, to): (i64, i64)) -> i64 {
    drain(app).await;
    let r = app.post("/v1/analytics/goalsReport", json!({"siteId": SITE, "from": from, "to": to})).await.ok();
    r["goals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "virou_lead")
        .map(|g| g["completions"].as_i64().unwrap())
        .unwrap()
}

async fn sessions(app: &TestApp, (from, to): (i64, i64)) -> i64 {
    drain(app).await;
    let o = app.post("/v1/analytics/overview", json!({"siteIds": [SITE], "from": from, "to": to})).await.ok();
    o["totals"]["sessions"].as_i64().unwrap()
}
