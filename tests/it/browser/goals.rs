//! The dashboard's "Metas e receita" screen in a real browser, on the demo's
//! 90 days (its goals, funnel, affiliate and sales): the figures on screen
//! equal the functions' answers over the same days; an operator allowed to
//! configure adds a goal, a retention policy and a route pattern from it, one who is not sees
//! no such forms and is refused by the route. Skips, saying so, without chromium.

use serde_json::{Value, json};

use crate::backend_test;
use crate::browser::webdriver::Browser;
use crate::common::{T0, TestApp, fake_meta_builder};
use crate::dashboard::{Dash, PASSWORD, demo, operator};
use rastrod::demo::DEMO_OWNER;

const ROWS: &str = "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map(function (tr) { \
    return Array.from(tr.children).map(function (c) { return c.textContent.trim(); }); });";

/// The screen's default range: the 30 days up to the end of today in the client's zone (REPORTING §1).
fn screen_days() -> (i64, i64) {
    let sp = rastrod::service::reporting::timezone::Zone::of(Some("America/Sao_Paulo"), &[]).unwrap().unwrap();
    let today = sp.date(T0);
    (sp.start_of(today - chrono::Duration::days(29)), sp.start_of(today.succ_opt().unwrap()) - 1)
}

async fn host(app: &TestApp, name: &str, args: Value) -> Value {
    let a = app.post(&format!("/v1/analytics/{name}"), args).await;
    assert_eq!(a.status, 200, "{name}: {}", a.text);
    a.body
}

backend_test!(slow: the_goals_screen_shows_the_reports_and_configures, fake_meta_builder, |app| {
    let Some(b) = Browser::start().await else { return };
    demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    operator(&app, "admin", true, DEMO_OWNER).await;
    operator(&app, "viewer", false, DEMO_OWNER).await;
    let (from, to) = screen_days();
    let goals = host(&app, "goalsReport", json!({"siteId": "loja-x", "from": from, "to": to})).await;
    let revenue = host(&app, "revenueSummary", json!({"siteIds": ["loja-x"], "from": from, "to": to})).await;
    assert!(goals["goals"][0]["completions"].as_i64().unwrap() > 0, "the demo's goals have completions");
    assert!(revenue["conversions"].as_i64().unwrap() > 0, "and its sales");

    b.goto(&format!("{}/", app.base)).await;
    b.type_into("#op-name", "admin").await;
    b.type_into("#op-password", PASSWORD).await;
    b.click("#signin").await;
    b.wait_for("#main").await;
    b.click("[data-view=goals]").await;
    b.select("#site-picker", "loja-x").await;
    b.wait_for("#goals-table").await;
    let rows: Vec<Vec<String>> = serde_json::from_value(b.js(ROWS, json!(["#goals-table"])).await).unwrap();
    assert_eq!(rows.len(), goals["goals"].as_array().unwrap().len());
    for (row, g) in rows.iter().zip(goals["goals"].as_array().unwrap()) {
        assert!(row[0].starts_with(g["name"].as_str().unwrap()), "{row:?}");
        assert_eq!(row[1].replace('.', ""), g["completions"].to_string());
        assert_eq!(row[2].replace('.', ""), g["sessions"].to_string());
    }
    let conversions = b.text("#revenue-cards [data-k=conversions] .v").await;
    assert_eq!(conversions.replace('.', ""), revenue["conversions"].to_string());
    b.wait_for("#funnel-compra").await;
    b.wait_for("#affiliates-table").await;
    crate::browser::no_serious_violations("the goals screen", b.axe().await);

    // Configure: a goal, then a retention policy.
    b.wait_for("#goal-form").await;
    b.type_into("#goal-key", "contato").await;
    b.type_into("#goal-name", "Contato").await;
    b.type_into("#goal-path", "/contato").await;
    b.click("#goal-save").await;
    b.wait_until("the new goal is listed", "return !!document.querySelector('#goal-defs') && document.querySelector('#goal-defs').textContent.indexOf('contato') >= 0;", json!([])).await;
    let listed = host(&app, "listGoals", json!({"siteId": "loja-x"})).await;
    assert!(listed.as_array().unwrap().iter().any(|g| g["key"] == "contato" && g["matcher"]["path"] == "/contato"));
    b.wait_for("#retention-form").await;
    for (field, days) in [
        ("eventsDays", "30"),
        ("sessionsDays", "60"),
        ("conversionsDays", "365"),
        ("profilesDays", "365"),
        ("aggregatesDays", "730"),
    ] {
        b.type_into(&format!("#ret-{field}"), days).await;
    }
    b.click("#retention-save").await;
    b.wait_until("the policy is on", "return !!document.querySelector('#retention-off');", json!([])).await;
    let status = host(&app, "retentionStatus", json!({"siteId": "loja-x"})).await;
    assert_eq!(status["policy"]["aggregatesDays"], 730);
    // The site's settings: one more route pattern (regrouping starts).
    b.wait_for("#settings-form").await;
    b.type_into("#set-routes", "/p/:id\n/blog/**").await;
    // The screen as drawn now is marked: the save redraws it.
    b.js("document.querySelector('main').__before_save = true;", json!([])).await;
    b.click("#settings-save").await;
    // The save is done when the server says so (the field shows the typed text at once).
    let mut settings = Value::Null;
    for _ in 0..100 {
        settings = host(&app, "siteSettings", json!({"siteId": "loja-x"})).await;
        if settings["routePatterns"].as_array().is_some_and(|p| p.len() == 2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(settings["routePatterns"], json!(["/p/:id", "/blog/**"]));
    edits_pauses_and_pages(&app, &b, from, to).await;
    crate::browser::screenshot(&app, &b, "metas").await;
    b.quit().await;

    // A read-only operator reads the reports but cannot configure.
    let (viewer, _) = Dash::sign_in(&app, "viewer", PASSWORD).await;
    let read = viewer
        .write("POST", "/dashboard/api/fn/goalsReport", json!({"siteId": "loja-x", "from": from, "to": to}))
        .await;
    assert_eq!(read.body, host(&app, "goalsReport", json!({"siteId": "loja-x", "from": from, "to": to})).await);
    let refused = viewer
        .write(
            "POST",
            "/dashboard/api/fn/upsertGoal",
            json!({"siteId": "loja-x", "key": "x", "name": "x",
            "matcher": {"kind": "event", "name": "x"}}),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let (admin, _) = Dash::sign_in(&app, "admin", PASSWORD).await;
    let no_csrf = admin
        .call("POST", "/dashboard/api/fn/removeGoal", Some(json!({"siteId": "loja-x", "goalId": "g_0"})), false)
        .await;
    assert_eq!(no_csrf.status, 403, "a write needs the CSRF token");
});

/// A goal edited then paused and resumed, an affiliate edited, a funnel
/// drafted with its live preview (the figures `previewFunnel` answers) and
/// saved, then loaded back and removed; the conversions paged past the first 20.
async fn edits_pauses_and_pages(app: &TestApp, b: &Browser, from: i64, to: i64) {
    let goal = |key: &'static str| async move {
        let listed = host(app, "listGoals", json!({"siteId": "loja-x"})).await;
        listed.as_array().unwrap().iter().find(|g| g["key"] == key).cloned().unwrap()
    };
    // The screen redrawn after the settings' save, its definitions listed.
    b.wait_until(
        "the screen redrawn",
        "var m=document.querySelector('main'),g=document.querySelector('#goal-defs');\
         return !!m && !m.__before_save && !!g && g.textContent.indexOf('contato')>=0 && !!document.querySelector('#affiliate-defs');",
        json!([]),
    )
    .await;
    let before = goal("contato").await;
    b.click("[data-edit-goal=contato]").await;
    b.wait_until("the form holds the goal", "return document.querySelector('#goal-key').value==='contato';", json!([]))
        .await;
    b.type_into("#goal-name", "Fale conosco").await;
    b.click("#goal-save").await;
    b.wait_until("the goal renamed", "return !!document.querySelector('[data-edit-goal=contato]') && document.querySelector('#goal-form-title').textContent==='Nova meta';", json!([])).await;
    let after = goal("contato").await;
    assert_eq!(
        (after["goalId"].clone(), after["name"].clone()),
        (before["goalId"].clone(), json!("Fale conosco")),
        "edited in place"
    );
    b.click("[data-pause=contato]").await;
    b.wait_for("#goal-defs [data-state=paused]").await;
    assert_eq!(goal("contato").await["active"], false);
    b.click("[data-pause=contato]").await;
    b.wait_until("resumed", "return !document.querySelector('#goal-defs [data-state=paused]') && !!document.querySelector('[data-pause=contato]');", json!([])).await;
    assert_eq!(goal("contato").await["active"], true);

    // The demo's affiliate, edited: same id, a new commission.
    let aff = host(app, "listAffiliates", json!({"siteId": "loja-x"})).await[0].clone();
    let slug = aff["slug"].as_str().unwrap().to_string();
    b.click(&format!("[data-edit-affiliate={slug}]")).await;
    b.type_into("#aff-bps", "1234").await;
    b.click("#affiliate-save").await;
    // Saved once the screen drawn after the save lists the new commission.
    b.wait_until(
        "the affiliate redrawn",
        "var t=document.querySelector('#affiliate-defs');return !!t && t.textContent.indexOf('1.234')>=0;",
        json!([]),
    )
    .await;
    let edited = host(app, "listAffiliates", json!({"siteId": "loja-x"})).await[0].clone();
    assert_eq!(
        (edited["affiliateId"].clone(), edited["commissionBps"].clone()),
        (aff["affiliateId"].clone(), json!(1234))
    );
    // Paused, then resumed.
    b.click(&format!("[data-pause-affiliate={slug}]")).await;
    b.wait_for("#affiliate-defs [data-state=paused]").await;
    assert_eq!(host(app, "listAffiliates", json!({"siteId": "loja-x"})).await[0]["active"], false);
    b.click(&format!("[data-pause-affiliate={slug}]")).await;
    b.wait_until("resumed", "return !!document.querySelector('#affiliate-defs [data-state=active]');", json!([])).await;
    assert_eq!(host(app, "listAffiliates", json!({"siteId": "loja-x"})).await[0]["active"], true);

    // A funnel drafted: its preview is what previewFunnel answers for the screen's days.
    b.wait_for("#funnel-form").await;
    b.type_into("#funnel-key", "carrinho").await;
    b.type_into("#funnel-name", "Carrinho").await;
    b.type_into("#funnel-steps li:nth-child(1) .step-label", "Produto").await;
    b.type_into("#funnel-steps li:nth-child(1) .step-matcher", "/p/:id").await;
    b.type_into("#funnel-steps li:nth-child(2) .step-label", "Carrinho").await;
    b.type_into("#funnel-steps li:nth-child(2) .step-matcher", "add_to_cart").await;
    b.click("#funnel-add-step").await;
    b.type_into("#funnel-steps li:nth-child(3) .step-label", "Checkout").await;
    b.type_into("#funnel-steps li:nth-child(3) .step-matcher", "/checkout").await;
    let steps = json!([
        {"label": "Produto", "matcher": {"kind": "pageview", "path": "/p/:id"}},
        {"label": "Carrinho", "matcher": {"kind": "event", "name": "add_to_cart"}},
        {"label": "Checkout", "matcher": {"kind": "pageview", "path": "/checkout"}},
    ]);
    let preview = host(
        app,
        "previewFunnel",
        json!({"siteId": "loja-x", "from": from, "to": to,
        "timezone": "America/Sao_Paulo", "steps": steps, "windowMs": 3_600_000}),
    )
    .await;
    assert!(preview["entered"].as_i64().unwrap() > 0, "the demo's visitors see products");
    b.wait_until("the preview of three steps", "var t=document.querySelector('#funnel-preview-table');return !!t && t.querySelectorAll('tbody tr').length===3;", json!([])).await;
    let rows: Vec<Vec<String>> = serde_json::from_value(b.js(ROWS, json!(["#funnel-preview-table"])).await).unwrap();
    for (row, st) in rows.iter().zip(preview["steps"].as_array().unwrap()) {
        assert_eq!(row[1].replace('.', ""), st["visitors"].to_string(), "{row:?}");
        assert_eq!(row[2].replace('.', ""), st["dropoff"].to_string(), "{row:?}");
    }
    crate::browser::no_serious_violations("the funnel editor", b.axe().await);
    b.click("#funnel-save").await;
    b.wait_for("[data-edit-funnel=carrinho]").await;
    let funnels = host(app, "listFunnels", json!({"siteId": "loja-x"})).await;
    let saved = funnels.as_array().unwrap().iter().find(|f| f["key"] == "carrinho").cloned().unwrap();
    assert_eq!((saved["steps"].clone(), saved["windowMs"].clone()), (steps, json!(3_600_000)));
    // Loaded back into the editor, then removed.
    b.click("[data-edit-funnel=carrinho]").await;
    b.wait_until("the funnel in the form", "return document.querySelectorAll('#funnel-steps li').length===3 && document.querySelector('#funnel-key').value==='carrinho';", json!([])).await;
    b.click("[data-remove-funnel=carrinho]").await;
    b.wait_until("the funnel removed", "return !!document.querySelector('#funnel-defs-box') && !document.querySelector('[data-edit-funnel=carrinho]') && !!document.querySelector('#funnel-form');", json!([])).await;
    let left = host(app, "listFunnels", json!({"siteId": "loja-x"})).await;
    assert!(left.as_array().unwrap().iter().all(|f| f["key"] != "carrinho"));

    // The conversions, 20 at a time, as listConversions pages them.
    let all = host(
        app,
        "listConversions",
        json!({"siteId": "loja-x", "from": from, "to": to, "paginationOpts": {"numItems": 40, "cursor": null}}),
    )
    .await;
    let total = all["page"].as_array().unwrap().len();
    assert!(total > 20, "the demo has more than a page of sales ({total})");
    let shown = "return document.querySelectorAll('#conversions-table tbody tr').length;";
    b.wait_for("#conversions-table").await;
    assert_eq!(b.js(shown, json!([])).await, json!(20));
    b.click("#more-conversions").await;
    b.wait_until(
        "the second page",
        "return document.querySelectorAll('#conversions-table tbody tr').length>20;",
        json!([]),
    )
    .await;
    let rows: Vec<Vec<String>> = serde_json::from_value(b.js(ROWS, json!(["#conversions-table"])).await).unwrap();
    assert_eq!(rows.len(), total.min(40));
    for (row, c) in rows.iter().zip(all["page"].as_array().unwrap()) {
        let want = rastrod::service::leads::metrics::format_money(c["valueCents"].as_i64(), "BRL");
        assert_eq!(row[2].replace('\u{a0}', " "), want.replace('\u{a0}', " "), "{row:?}");
    }
}
