//! The lead rollups stored in the reports' order (issue 25, "fewer pages
//! dirtied per lead"): on SQLite the table is keyed by (site, origin,
//! campaign, ad set, ad, day) and holds the counters itself (migration 38),
//! so a bump rewrites one page instead of the table's and a covering
//! index's. Migration 38 undone and applied again on a database with leads
//! keeps every counter, and the reports by tree, by day and by ad stay
//! exact before and after, and after later bumps.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

/// The indexes of `lead_rollups`, by name, and whether the table has rowids.
async fn layout(app: &TestApp) -> (Vec<String>, bool) {
    #[derive(diesel::QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            if !c.is_sqlite() {
                return Ok((Vec::new(), true));
            }
            let mut names: Vec<String> = diesel::sql_query("SELECT name FROM pragma_index_list('lead_rollups')")
                .load::<Name>(c)?
                .into_iter()
                .map(|n| n.name)
                .collect();
            names.sort();
            // A WITHOUT ROWID table has no rowid to select.
            let rowid = diesel::sql_query("SELECT CAST(rowid AS TEXT) AS name FROM lead_rollups LIMIT 1")
                .load::<Name>(c)
                .is_ok();
            Ok((names, rowid))
        })
        .await
        .unwrap()
}

/// The reports that read the rollups: the tree, each day, one ad's days.
/// Whole UTC days (the day before T0's to the day after the next), so every
/// figure comes from the rollups, none from the leads of a partial day.
async fn reports(app: &TestApp) -> (Value, Value, Value) {
    let first = T0 - T0.rem_euclid(DAY) - DAY;
    let range = json!({"siteIds": ["s1"], "from": first, "to": first + 4 * DAY - 1});
    let tree = app.post("/v1/reports/leads", range.clone()).await.ok();
    let daily = app.post("/v1/reports/leads-daily", range.clone()).await.ok();
    let mut by_ad = range;
    by_ad["adId"] = json!("a2");
    let ad = app.post("/v1/reports/leads-daily", by_ad).await.ok();
    (tree, daily, ad)
}

fn ad(n: u32) -> Value {
    json!({"campaignId": "c1", "adsetId": "s1", "adId": format!("a{n}"), "adName": format!("Anúncio {n}")})
}

// rule: REPORT-01
// rule: REPORT-09
// rule: LEAD-12
backend_test!(lead_rollups_in_report_order_keep_every_counter_across_the_migration, |app| {
    let app = &app;
    app.site("s1").await;
    // Two days, two ads and organic leads; one qualified, one won with revenue.
    let leads = [
        ("k1", T0, ad(1)),
        ("k2", T0 + 5, ad(2)),
        ("k3", T0 + DAY, ad(2)),
        ("k4", T0 + DAY, json!({"origin": "organic"})),
    ];
    for (key, at, extra) in &leads {
        assert_eq!(app.lead("s1", key, *at, extra.clone()).await.status, 201);
    }
    app.stage("s1", "k2", json!({"stage": "qualified", "eventId": "q2", "occurredAt": T0 + 10})).await.ok();
    app.stage("s1", "k3", json!({"stage": "won", "revenueCents": 4200, "eventId": "w3", "occurredAt": T0 + DAY + 10}))
        .await
        .ok();
    let (indexes, rowid) = layout(app).await;
    let sqlite = app.state.cx.read(|c| Ok(c.is_sqlite())).await.unwrap();
    if sqlite {
        assert_eq!(indexes, ["lead_rollups_site_ad_day", "lead_rollups_site_day", "sqlite_autoindex_lead_rollups_1"]);
        assert!(!rowid, "the rollups are stored by their key");
    }
    let before = reports(app).await;
    assert_eq!(before.0["totals"]["leads"], 4, "{}", before.0);
    assert_eq!(before.0["totals"]["qualified"], 2, "{}", before.0);
    assert_eq!(before.0["totals"]["revenueCents"], 4200, "{}", before.0);
    let rows = app.count("lead_rollups").await;
    assert_eq!(rows, 4, "one row per (day, origin, ad): a1 and a2 on the first day, a2 and organic on the second");

    // SQLite's migration 38 undone (rowids and the covering index back) and
    // applied again; PostgreSQL has no such migration (its table is a heap).
    if sqlite {
        redo_migrations_through(app, "20261207000038").await;
    }
    assert_eq!(layout(app).await, (indexes, rowid));
    assert_eq!(app.count("lead_rollups").await, rows);
    assert_eq!(reports(app).await, before, "every counter kept");

    // Later bumps land on the moved rows: a new lead on an existing key, one on a new key.
    assert_eq!(app.lead("s1", "k5", T0 + 7, ad(2)).await.status, 201);
    assert_eq!(app.lead("s1", "k6", T0 + DAY + 7, ad(1)).await.status, 201);
    assert_eq!(app.count("lead_rollups").await, rows + 1);
    let (tree, daily, by_ad) = reports(app).await;
    assert_eq!(tree["totals"]["leads"], 6, "{tree}");
    let days: Vec<i64> = daily.as_array().unwrap().iter().map(|d| d["leads"].as_i64().unwrap()).collect();
    assert_eq!(days, [0, 3, 3, 0], "{daily}");
    let a2: Vec<i64> = by_ad.as_array().unwrap().iter().map(|d| d["leads"].as_i64().unwrap()).collect();
    assert_eq!(a2, [0, 2, 1, 0], "{by_ad}");
});
