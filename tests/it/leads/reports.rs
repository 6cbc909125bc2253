//! leadsReport and leadsDaily.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

/// Start of T0's UTC day (T0 is noon UTC).
const D0: i64 = T0 - DAY / 2;
const HOUR: i64 = DAY / 24;

async fn report(app: &TestApp, body: Value) -> Answer {
    app.post("/v1/reports/leads", body).await
}

async fn daily(app: &TestApp, body: Value) -> Answer {
    app.post("/v1/reports/leads-daily", body).await
}

/// (leads, qualified, won, revenueCents).
type C4 = (i64, i64, i64, i64);

/// The four lead counters of a report row.
fn c4(v: &Value) -> C4 {
    (
        v["leads"].as_i64().unwrap(),
        v["qualified"].as_i64().unwrap(),
        v["won"].as_i64().unwrap(),
        v["revenueCents"].as_i64().unwrap(),
    )
}

/// Records a lead and, when asked, moves it to qualified or won.
async fn lead(app: &TestApp, site: &str, key: &str, at: i64, extra: Value, outcome: Option<(&str, i64)>) {
    app.lead(site, key, at, extra).await.ok();
    match outcome {
        Some(("qualified", _)) => {
            app.stage(site, key, json!({"stage": "qualified", "eventId": "q", "occurredAt": at + 1})).await.ok();
        }
        Some(("won", cents)) => {
            app.stage(site, key, json!({"stage": "won", "revenueCents": cents, "eventId": "w", "occurredAt": at + 1}))
                .await
                .ok();
        }
        _ => {}
    }
}

fn ad(c: &str, s: &str, a: &str) -> Value {
    json!({"campaignId": c, "adsetId": s, "adId": a, "campaignName": format!("Camp {c}"), "adsetName": format!("Set {s}"),
        "adName": format!("Ad {a}")})
}

/// Two BRL sites and one USD site with a known mix of leads (see the comments for the sums).
async fn seed(app: &TestApp) {
    app.site("s1").await;
    app.site("s2").await;
    app.site_with("s3", "USD", "o1").await;
    // s1, paid.
    lead(app, "s1", "a1", T0, ad("c1", "as1", "ad1"), Some(("won", 1_000))).await;
    lead(app, "s1", "a2", T0 + 1, ad("c1", "as1", "ad1"), Some(("qualified", 0))).await;
    lead(app, "s1", "a3", T0 + 2, ad("c1", "as1", "ad2"), None).await;
    lead(app, "s1", "a4", T0 + 3, ad("c1", "as2", "ad3"), None).await;
    lead(app, "s1", "a5", T0 + 4, ad("c2", "as3", "ad4"), Some(("won", 500))).await;
    // s1, organic.
    lead(app, "s1", "o1", T0 + 5, json!({"origin": "organic"}), Some(("won", 200))).await;
    lead(app, "s1", "o2", T0 + 6, json!({"origin": "instagram"}), None).await;
    // s2.
    lead(app, "s2", "b1", T0 + 7, ad("c1", "as1", "ad5"), Some(("won", 300))).await;
    lead(app, "s2", "b2", T0 + 8, json!({"origin": "organic"}), Some(("won", 50))).await;
    // s3 (another currency).
    lead(app, "s3", "u1", T0 + 9, ad("c9", "as9", "ad9"), Some(("won", 7_700))).await;
}

// rule: REPORT-01
backend_test!(leads_report_totals_origins_and_tree, |app| {
    seed(&app).await;
    let r = report(&app, json!({"siteIds": ["s1", "s2"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    // Totals: 9 leads; qualified a1 a2 a5 o1 b1 b2; won a1 a5 o1 b1 b2; 1000+500+200+300+50.
    assert_eq!(c4(&r["totals"]), (9, 6, 5, 2_050));
    assert_eq!(r["currency"], "BRL");
    assert_eq!((r["spendIncomplete"].as_bool(), r["reportIncomplete"].as_bool()), (Some(false), Some(false)));
    // Origins, most leads first.
    let origins: Vec<(&str, C4)> =
        r["origins"].as_array().unwrap().iter().map(|o| (o["origin"].as_str().unwrap(), c4(o))).collect();
    assert_eq!(origins, vec![("ctwa_ad", (6, 4, 3, 1_800)), ("organic", (2, 2, 2, 250)), ("instagram", (1, 0, 0, 0))]);
    // The tree: c1 {as1 {ad1 ×2, ad2, ad5 (s2)}, as2 {ad3}}, c2 {as3 {ad4}}.
    let c = r["campaigns"].as_array().unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!((c[0]["campaignId"].as_str(), c[0]["name"].as_str()), (Some("c1"), Some("Camp c1")));
    assert_eq!(c4(&c[0]), (5, 3, 2, 1_300));
    let sets = c[0]["adsets"].as_array().unwrap();
    assert_eq!((sets[0]["adsetId"].as_str(), sets[0]["name"].as_str()), (Some("as1"), Some("Set as1")));
    assert_eq!(c4(&sets[0]), (4, 3, 2, 1_300));
    let ads: Vec<(&str, &str, Option<&str>, C4)> = sets[0]["ads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["adId"].as_str().unwrap(), a["siteId"].as_str().unwrap(), a["name"].as_str(), c4(a)))
        .collect();
    assert_eq!(
        ads,
        vec![
            ("ad1", "s1", Some("Ad ad1"), (2, 2, 1, 1_000)),
            ("ad2", "s1", Some("Ad ad2"), (1, 0, 0, 0)),
            ("ad5", "s2", Some("Ad ad5"), (1, 1, 1, 300)),
        ]
    );
    assert_eq!((sets[1]["adsetId"].as_str(), c4(&sets[1])), (Some("as2"), (1, 0, 0, 0)));
    assert_eq!(sets[1]["ads"][0]["adId"], "ad3");
    assert_eq!((c[1]["campaignId"].as_str(), c4(&c[1])), (Some("c2"), (1, 1, 1, 500)));
    assert_eq!(c[1]["adsets"][0]["ads"][0]["adId"], "ad4");
    // Ad rows carry the catalog fields, null until a catalog sync.
    let ad_row = &sets[0]["ads"][0];
    for f in ["creativeType", "adStatus", "thumbnailUrl"] {
        assert_eq!(ad_row.get(f), Some(&Value::Null), "{f}");
    }
    // Two currencies: no single currency.
    let mixed = report(&app, json!({"siteIds": ["s1", "s3"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(mixed["currency"], Value::Null);
    assert_eq!(c4(&mixed["totals"]), (8, 5, 4, 9_400));
    assert_eq!(report(&app, json!({"siteIds": ["s3"], "from": D0, "to": D0 + DAY - 1})).await.ok()["currency"], "USD");

    // 1-10 unique sites; at most 366 UTC days.
    for i in 4..=10 {
        app.site(&format!("s{i}")).await;
    }
    let ten: Vec<String> = (1..=10).map(|i| format!("s{i}")).collect();
    let all = report(&app, json!({"siteIds": ten, "from": D0, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(all["totals"]["leads"], 10);
    assert_eq!(all["bySite"].as_array().unwrap().len(), 10);
    let mut eleven = ten.clone();
    eleven.push("s11".into());
    report(&app, json!({"siteIds": eleven, "from": D0, "to": D0 + 1})).await.err(400, "INVALID_ARGUMENT");
    report(&app, json!({"siteIds": [], "from": D0, "to": D0 + 1})).await.err(400, "INVALID_ARGUMENT");
    report(&app, json!({"siteIds": ["s1", "s2", "s1"], "from": D0, "to": D0 + 1})).await.err(400, "INVALID_ARGUMENT");
    let year = report(&app, json!({"siteIds": ["s1"], "from": D0 - 365 * DAY, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(year["totals"]["leads"], 7);
    report(&app, json!({"siteIds": ["s1"], "from": D0 - 366 * DAY, "to": D0 + DAY - 1}))
        .await
        .err(400, "INVALID_ARGUMENT");
    // 366 days touched from a mid-day start is fine; one ms more touches a 367th.
    report(&app, json!({"siteIds": ["s1"], "from": T0 - 365 * DAY, "to": D0 + DAY - 1})).await.ok();
    report(&app, json!({"siteIds": ["s1"], "from": T0 - 365 * DAY, "to": D0 + DAY})).await.err(400, "INVALID_ARGUMENT");
    report(&app, json!({"siteIds": ["s1", "zz"], "from": D0, "to": D0 + 1})).await.err(404, "NOT_FOUND");
    // Leads outside the range count nowhere.
    let before = report(&app, json!({"siteIds": ["s1", "s2"], "from": D0 - DAY, "to": D0 - 1})).await.ok();
    assert_eq!(c4(&before["totals"]), (0, 0, 0, 0));
    assert_eq!(before["origins"], json!([]));
    assert_eq!(before["campaigns"], json!([]));
});

// rule: REPORT-05
backend_test!(by_site_in_request_order_with_paid_counters, |app| {
    seed(&app).await;
    app.site("empty").await;
    let r = report(&app, json!({"siteIds": ["s2", "empty", "s1"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    let rows = r["bySite"].as_array().unwrap();
    let order: Vec<&str> = rows.iter().map(|s| s["siteId"].as_str().unwrap()).collect();
    assert_eq!(order, vec!["s2", "empty", "s1"]);
    // s2: b1 paid won 300, b2 organic won 50.
    assert_eq!(c4(&rows[0]), (2, 2, 2, 350));
    assert_eq!(c4(&rows[0]["paid"]), (1, 1, 1, 300));
    assert_eq!(c4(&rows[1]), (0, 0, 0, 0));
    assert_eq!(c4(&rows[1]["paid"]), (0, 0, 0, 0));
    // s1: 7 leads, qualified a1 a2 a5 o1, won a1 a5 o1; paid a1..a5: qualified a1 a2 a5, won a1 a5, 1500.
    assert_eq!(c4(&rows[2]), (7, 4, 3, 1_700));
    assert_eq!(c4(&rows[2]["paid"]), (5, 3, 2, 1_500));
    // The sum of the sites is the totals.
    let sum = rows.iter().map(c4).fold((0, 0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3 + b.3));
    assert_eq!(sum, c4(&r["totals"]));
    // No ad account: every spend field is present and null (unknown, never zero).
    for s in rows {
        assert_eq!(s.get("spendCents"), Some(&Value::Null));
        assert_eq!(s.get("spendCurrency"), Some(&Value::Null));
        assert_eq!(s.get("currencyMismatch"), Some(&json!(false)));
    }
    for f in ["spendCents", "impressions", "clicks"] {
        assert_eq!(r["totals"].get(f), Some(&Value::Null), "totals.{f}");
        for o in r["origins"].as_array().unwrap() {
            assert_eq!(o.get(f), Some(&Value::Null), "origin.{f}");
        }
        let c = &r["campaigns"][0];
        assert_eq!(c.get(f), Some(&Value::Null));
        assert_eq!(c["adsets"][0].get(f), Some(&Value::Null));
        assert_eq!(c["adsets"][0]["ads"][0].get(f), Some(&Value::Null));
    }
    assert_eq!(r.get("spendCurrency"), Some(&Value::Null));
    assert_eq!(r["currencyMismatch"], false);
    // Another order, another row order.
    let r = report(&app, json!({"siteIds": ["s1", "s3", "s2"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    let order: Vec<&str> = r["bySite"].as_array().unwrap().iter().map(|s| s["siteId"].as_str().unwrap()).collect();
    assert_eq!(order, vec!["s1", "s3", "s2"]);
    assert_eq!(c4(&r["bySite"][1]["paid"]), (1, 1, 1, 7_700));
});

// rule: REPORT-09
backend_test!(leads_daily_every_utc_day_oldest_first, |app| {
    app.site("s1").await;
    app.site("s2").await;
    lead(&app, "s1", "p1", D0 + HOUR, json!({"adId": "ad1"}), Some(("won", 400))).await;
    lead(&app, "s1", "p2", D0 + 2 * DAY + HOUR, json!({"adId": "ad2"}), Some(("qualified", 0))).await;
    lead(&app, "s1", "o1", D0 + 2 * DAY + 2 * HOUR, json!({"origin": "organic"}), Some(("won", 90))).await;
    lead(&app, "s2", "x1", D0 + 2 * DAY, json!({"adId": "ad1"}), None).await;

    let zero =
        |d: i64| json!({"dayStart": d, "leads": 0, "qualified": 0, "won": 0, "revenueCents": 0, "spendCents": null});
    let all = daily(&app, json!({"siteIds": ["s1", "s2"], "from": D0, "to": D0 + 4 * DAY - 1})).await.ok();
    assert_eq!(
        all,
        json!([
            {"dayStart": D0, "leads": 1, "qualified": 1, "won": 1, "revenueCents": 400, "spendCents": null},
            zero(D0 + DAY),
            {"dayStart": D0 + 2 * DAY, "leads": 3, "qualified": 2, "won": 1, "revenueCents": 90, "spendCents": null},
            zero(D0 + 3 * DAY),
        ])
    );
    // adId: one ad's leads, across the sites.
    let ad1 =
        daily(&app, json!({"siteIds": ["s1", "s2"], "from": D0, "to": D0 + 3 * DAY - 1, "adId": "ad1"})).await.ok();
    let leads: Vec<i64> = ad1.as_array().unwrap().iter().map(|d| d["leads"].as_i64().unwrap()).collect();
    assert_eq!(leads, vec![1, 0, 1]);
    assert_eq!(ad1[0]["revenueCents"], 400);
    // origin: one origin's leads.
    let org =
        daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + 3 * DAY - 1, "origin": "organic"})).await.ok();
    assert_eq!(
        org,
        json!([zero(D0), zero(D0 + DAY), {"dayStart": D0 + 2 * DAY, "leads": 1, "qualified": 1, "won": 1, "revenueCents": 90, "spendCents": null}])
    );
    let paid =
        daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + 3 * DAY - 1, "origin": "ctwa_ad"})).await.ok();
    let leads: Vec<i64> = paid.as_array().unwrap().iter().map(|d| d["leads"].as_i64().unwrap()).collect();
    assert_eq!(leads, vec![1, 0, 1]);
    // Both filters: refused.
    daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1, "adId": "ad1", "origin": "ctwa_ad"}))
        .await
        .err(400, "INVALID_ARGUMENT");
    // A range starting mid-day: every day it touches, from that day's start.
    let mid = daily(&app, json!({"siteIds": ["s1"], "from": T0, "to": T0 + DAY})).await.ok();
    let days: Vec<i64> = mid.as_array().unwrap().iter().map(|d| d["dayStart"].as_i64().unwrap()).collect();
    assert_eq!(days, vec![D0, D0 + DAY]);
    // p1 came at 01:00, before `from`: the first day counts nothing.
    assert_eq!(mid[0]["leads"], 0);

    // 92 UTC days at most: every one listed, oldest first, consecutive.
    let from = D0 - 90 * DAY;
    let long = daily(&app, json!({"siteIds": ["s1"], "from": from, "to": D0 + 2 * DAY - 1})).await.ok();
    let days: Vec<i64> = long.as_array().unwrap().iter().map(|d| d["dayStart"].as_i64().unwrap()).collect();
    assert_eq!(days.len(), 92);
    assert_eq!(days, (0..92).map(|i| from + i * DAY).collect::<Vec<_>>());
    assert_eq!(long.as_array().unwrap().iter().map(|d| d["leads"].as_i64().unwrap()).sum::<i64>(), 1);
    daily(&app, json!({"siteIds": ["s1"], "from": from - 1, "to": D0 + 2 * DAY - 1}))
        .await
        .err(400, "INVALID_ARGUMENT");
    daily(&app, json!({"siteIds": ["s1"], "from": from, "to": D0 + 2 * DAY})).await.err(400, "INVALID_ARGUMENT");
    // 1-10 unique sites, known sites, a sane origin.
    let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
    for bad in [
        json!({"siteIds": [], "from": D0, "to": D0 + 1}),
        json!({"siteIds": eleven, "from": D0, "to": D0 + 1}),
        json!({"siteIds": ["s1", "s1"], "from": D0, "to": D0 + 1}),
        json!({"siteIds": ["s1"], "from": D0 + 1, "to": D0}),
        json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1, "origin": "Not An Origin"}),
        json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1, "adId": ""}),
        json!({"siteIds": ["s1"], "from": D0, "to": D0 + 1, "day": 1}),
    ] {
        daily(&app, bad).await.err(400, "INVALID_ARGUMENT");
    }
    daily(&app, json!({"siteIds": ["s1", "zz"], "from": D0, "to": D0 + 1})).await.err(404, "NOT_FOUND");
});

// rule: REPORT-11
backend_test!(ranges_are_inclusive_to_the_millisecond, |app| {
    app.site("s1").await;
    let from = D0 + 6 * HOUR;
    let to = D0 + 2 * DAY + 3 * HOUR;
    // (key, firstAt, revenue of its sale): in the range or not, decided by hand.
    let leads = [
        ("before", from - 1, 1, false),
        ("at-from", from, 10, true),
        ("day0", D0 + 18 * HOUR, 100, true),
        ("day1-start", D0 + DAY, 1_000, true),
        ("day1-end", D0 + 2 * DAY - 1, 10_000, true),
        ("at-to", to, 100_000, true),
        ("after", to + 1, 1_000_000, false),
        ("day2-late", D0 + 2 * DAY + 20 * HOUR, 10_000_000, false),
    ];
    for (key, at, cents, _) in leads {
        lead(&app, "s1", key, at, json!({"adId": "ad1"}), Some(("won", cents))).await;
    }
    let expect_in: i64 = leads.iter().filter(|l| l.3).map(|l| l.2).sum();
    assert_eq!(expect_in, 111_110);
    let r = report(&app, json!({"siteIds": ["s1"], "from": from, "to": to})).await.ok();
    assert_eq!(c4(&r["totals"]), (5, 5, 5, expect_in));
    assert_eq!(c4(&r["campaigns"][0]["adsets"][0]["ads"][0]), (5, 5, 5, expect_in));
    assert_eq!(c4(&r["bySite"][0]), (5, 5, 5, expect_in));
    // Per day: the partial days at the edges hold exactly their part.
    let d = daily(&app, json!({"siteIds": ["s1"], "from": from, "to": to})).await.ok();
    let per_day: Vec<(i64, i64, i64)> = d
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["dayStart"].as_i64().unwrap(), x["leads"].as_i64().unwrap(), x["revenueCents"].as_i64().unwrap()))
        .collect();
    assert_eq!(per_day, vec![(D0, 2, 110), (D0 + DAY, 2, 11_000), (D0 + 2 * DAY, 1, 100_000)]);
    // listLeads agrees.
    let rows = app.get(&format!("/v1/leads?siteIds=s1&from={from}&to={to}")).await.ok();
    let keys: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["leadKey"].as_str().unwrap()).collect();
    assert_eq!(keys, vec!["at-to", "day1-end", "day1-start", "day0", "at-from"]);
    // One millisecond ranges.
    for (key, at, cents, _) in leads {
        let r = report(&app, json!({"siteIds": ["s1"], "from": at, "to": at})).await.ok();
        assert_eq!(c4(&r["totals"]), (1, 1, 1, cents), "{key}");
    }
    // Whole days: [D0+DAY, D0+2DAY-1] holds day1 only; one ms more takes the next day's first lead.
    let r = report(&app, json!({"siteIds": ["s1"], "from": D0 + DAY, "to": D0 + 2 * DAY - 1})).await.ok();
    assert_eq!(c4(&r["totals"]), (2, 2, 2, 11_000));
    let r = report(&app, json!({"siteIds": ["s1"], "from": D0 + DAY + 1, "to": D0 + 2 * DAY - 1})).await.ok();
    assert_eq!(c4(&r["totals"]), (1, 1, 1, 10_000));
    // Money is whole cents, times epoch ms.
    let rows = app.get(&format!("/v1/leads?siteIds=s1&from={to}&to={to}")).await.ok();
    assert!(rows[0]["revenueCents"].is_i64() && rows[0]["firstAt"].as_i64() == Some(to));
});

/// Two rows of the campaign tree at most.
fn lead_row_cap_2_builder(backend: Backend) -> TestAppBuilder {
    TestApp::builder(backend).env("RASTRO_REPORT_LEAD_ROW_CAP", "2")
}

// rule: REPORT-12
backend_test!(report_cap_passed, lead_row_cap_2_builder, |app| {
    app.site("s1").await;
    // Three ads (three rows of the campaign tree) and an organic lead outside the tree.
    lead(&app, "s1", "a", T0, ad("c1", "as1", "ad1"), Some(("won", 100))).await;
    lead(&app, "s1", "b", T0 + 1, ad("c1", "as1", "ad2"), Some(("won", 200))).await;
    lead(&app, "s1", "c", T0 + 2, ad("c2", "as2", "ad3"), Some(("won", 400))).await;
    lead(&app, "s1", "d", T0 + 3, json!({"origin": "organic"}), Some(("won", 800))).await;
    for (from, to) in [(D0, D0 + DAY - 1), (T0 - 1, T0 + 10)] {
        let r = report(&app, json!({"siteIds": ["s1"], "from": from, "to": to})).await.ok();
        assert_eq!(r["reportIncomplete"], true);
        // The totals, origins and sites stay exact.
        assert_eq!(c4(&r["totals"]), (4, 4, 4, 1_500));
        assert_eq!(c4(&r["bySite"][0]), (4, 4, 4, 1_500));
        assert_eq!(c4(&r["bySite"][0]["paid"]), (3, 3, 3, 700));
        let ctwa = r["origins"].as_array().unwrap().iter().find(|o| o["origin"] == "ctwa_ad").unwrap().clone();
        assert_eq!(c4(&ctwa), (3, 3, 3, 700));
        // The tree lists no more than the cap.
        let ads: usize = r["campaigns"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["adsets"].as_array().unwrap().iter())
            .map(|s| s["ads"].as_array().unwrap().len())
            .sum();
        assert!(ads <= 2, "{ads} ads listed");
    }
    // leadsDaily is exact too.
    let d = daily(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(c4(&d[0]), (4, 4, 4, 1_500));
    // Removing one ad's lead brings the tree to the cap: complete again.
    app.delete("/v1/sites/s1/leads/c").await.ok();
    let r = report(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(r["reportIncomplete"], false);
    assert_eq!(c4(&r["totals"]), (3, 3, 3, 1_100));
});

// rule: REPORT-12
backend_test!(the_default_cap_is_not_passed, |app| {
    app.site("s1").await;
    for i in 0..30i64 {
        lead(
            &app,
            "s1",
            &format!("k{i}"),
            T0 + i,
            ad(&format!("c{}", i % 3), &format!("as{}", i % 5), &format!("ad{i}")),
            None,
        )
        .await;
    }
    let r = report(&app, json!({"siteIds": ["s1"], "from": D0, "to": D0 + DAY - 1})).await.ok();
    assert_eq!(r["reportIncomplete"], false);
    assert_eq!(r["spendIncomplete"], false);
    let ads: usize = r["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["adsets"].as_array().unwrap().iter())
        .map(|s| s["ads"].as_array().unwrap().len())
        .sum();
    assert_eq!(ads, 30);
    assert_eq!(r["totals"]["leads"], 30);
});
