//! `compare` (REPORTING §2): each report beside the same report over the
//! earlier range, asked for separately here and compared field by field.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

async fn host(app: &TestApp, path: &str, args: &Value) -> Value {
    app.post(path, args.clone()).await.ok()
}

fn with(args: &Value, extra: Value) -> Value {
    let mut a = args.clone();
    for (k, v) in extra.as_object().unwrap() {
        a[k] = v.clone();
    }
    a
}

/// `(now - before) / before` to 4 decimals, as the answer writes it; null on a zero base.
fn change(now: &Value, before: &Value) -> Value {
    match (now.as_f64(), before.as_f64()) {
        (Some(n), Some(b)) if b != 0.0 => {
            let scaled = ((n - b) / b * 10_000.0).round();
            json!(scaled / 10_000.0)
        }
        _ => Value::Null,
    }
}

/// Every numeric total of `now` has its change against `before` in `changes`.
#[track_caller]
fn changes_hold(changes: &Value, now: &Value, before: &Value) {
    let mut n = 0;
    for (k, v) in now.as_object().unwrap() {
        if v.is_number() || v.is_null() {
            let want = change(v, &before[k]);
            let got = &changes[k];
            let same = match (got.as_f64(), want.as_f64()) {
                (Some(g), Some(w)) => (g - w).abs() < 1e-9,
                _ => got.is_null() && want.is_null(),
            };
            assert!(same, "{k}: {got} vs {want} ({v} against {})", before[k]);
            n += 1;
        }
    }
    assert!(n > 0 && changes.as_object().unwrap().len() == n, "one change per total: {changes}");
}

// rule: REP-05
backend_test!(compare_answers_the_earlier_range_beside_with_aligned_series_and_changes, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    let today = T0 - T0.rem_euclid(DAY);
    let (from, to) = (today - 14 * DAY, today - 1);
    let earlier = (from - 14 * DAY, from - 1);

    // overview, previousPeriod: the earlier 14 days, as asked for alone.
    let args = json!({"siteIds": ["loja-x", "pet-mania"], "from": from, "to": to});
    let o = host(&app, "/v1/analytics/overview", &with(&args, json!({"compare": "previousPeriod"}))).await;
    let plain = host(&app, "/v1/analytics/overview", &args).await;
    let before = host(&app, "/v1/analytics/overview", &with(&args, json!({"from": earlier.0, "to": earlier.1}))).await;
    let c = &o["comparison"];
    assert_eq!((c["from"].as_i64(), c["to"].as_i64()), (Some(earlier.0), Some(earlier.1)));
    assert_eq!(c["totals"], before["totals"]);
    assert_eq!(c["series"], before["series"], "aligned day by day");
    assert_eq!(o["totals"], plain["totals"], "the main answer is unchanged");
    assert_eq!(o["series"], plain["series"]);
    assert!(o["totals"]["visitors"].as_i64().unwrap() > 0 && before["totals"]["visitors"].as_i64().unwrap() > 0);
    changes_hold(&o["change"], &o["totals"], &before["totals"]);
    // Without compare, neither key is there (REP-01 keeps the bytes).
    assert!(plain.get("comparison").is_none() && plain.get("change").is_none());

    // previousYear: a year before the demo there is nothing: zeros, and null changes.
    let y = host(&app, "/v1/analytics/overview", &with(&args, json!({"compare": "previousYear"}))).await;
    let series = y["comparison"]["series"].as_array().unwrap();
    assert_eq!(series.len(), o["series"].as_array().unwrap().len());
    let main_first = o["series"][0]["bucketStart"].as_i64().unwrap();
    assert_eq!(series[0]["bucketStart"].as_i64().unwrap(), main_first - 365 * DAY, "the same date a year before");
    assert!(series.iter().all(|p| p["visitors"] == 0));
    assert_eq!(y["change"]["visitors"], Value::Null, "a zero base has no change");

    // leadsReport, revenueSummary: the earlier range's totals.
    let lr = json!({"siteIds": ["loja-x"], "from": from, "to": to});
    let r = host(&app, "/v1/reports/leads", &with(&lr, json!({"compare": "previousPeriod"}))).await;
    let rb = host(&app, "/v1/reports/leads", &with(&lr, json!({"from": earlier.0, "to": earlier.1}))).await;
    assert_eq!(r["comparison"]["totals"], rb["totals"]);
    assert!(rb["totals"]["leads"].as_i64().unwrap() > 0);
    changes_hold(&r["change"], &r["totals"], &rb["totals"]);
    let rev = host(&app, "/v1/analytics/revenueSummary", &with(&lr, json!({"compare": "previousPeriod"}))).await;
    let revb =
        host(&app, "/v1/analytics/revenueSummary", &with(&lr, json!({"from": earlier.0, "to": earlier.1}))).await;
    assert_eq!(rev["comparison"]["totals"]["conversions"], revb["conversions"]);
    assert_eq!(rev["comparison"]["totals"]["revenueCents"], revb["revenueCents"]);

    // leadsDaily: each day beside its day of the earlier range.
    let daily = host(&app, "/v1/reports/leads-daily", &with(&lr, json!({"compare": "previousPeriod"}))).await;
    let dailyb = host(&app, "/v1/reports/leads-daily", &with(&lr, json!({"from": earlier.0, "to": earlier.1}))).await;
    let (daily, dailyb) = (daily.as_array().unwrap(), dailyb.as_array().unwrap());
    assert_eq!(daily.len(), dailyb.len());
    for (d, b) in daily.iter().zip(dailyb) {
        for k in ["dayStart", "leads", "qualified", "won", "revenueCents", "spendCents"] {
            assert_eq!(d["comparison"][k], b[k], "{k}");
        }
        assert_eq!(d["change"]["leads"].as_f64(), change(&d["leads"], &b["leads"]).as_f64());
    }

    // goalsReport and funnelsReport: each goal and funnel beside its earlier figures.
    let one = json!({"siteId": "loja-x", "from": from, "to": to});
    let g = host(&app, "/v1/analytics/goalsReport", &with(&one, json!({"compare": "previousPeriod"}))).await;
    let gb = host(&app, "/v1/analytics/goalsReport", &with(&one, json!({"from": earlier.0, "to": earlier.1}))).await;
    assert_eq!(g["comparison"]["totalSessions"], gb["totalSessions"]);
    for (row, b) in g["goals"].as_array().unwrap().iter().zip(gb["goals"].as_array().unwrap()) {
        assert_eq!(
            (&row["comparison"]["completions"], &row["comparison"]["sessions"]),
            (&b["completions"], &b["sessions"])
        );
    }
    let f = host(&app, "/v1/analytics/funnelsReport", &with(&one, json!({"compare": "previousYear"}))).await;
    let year = f["comparison"]["from"].as_i64().unwrap();
    assert_eq!(year, from - 365 * DAY);
    let fb = host(&app, "/v1/analytics/funnelsReport", &with(&one, json!({"from": year, "to": f["comparison"]["to"]})))
        .await;
    for (row, b) in f["funnels"].as_array().unwrap().iter().zip(fb["funnels"].as_array().unwrap()) {
        assert_eq!(row["comparison"]["entered"], b["entered"]);
    }

    // A comparison that is not one of the two, or reaches before 1970, is refused.
    app.post("/v1/analytics/overview", with(&args, json!({"compare": "lastWeek"}))).await.err(400, "INVALID_ARGUMENT");
    let early = json!({"siteIds": ["loja-x"], "from": 0, "to": DAY - 1, "compare": "previousPeriod"});
    app.post("/v1/analytics/overview", early).await.err(400, "INVALID_ARGUMENT");
});
