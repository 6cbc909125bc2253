//! The month tier of breakdowns and visitor sets (STORE-05
//! over long ranges): a year-long overview reads whole months from it. What it
//! must never change is the answer: an overview reads the same with the
//! month rows as with the day rows alone, the month rows always equal the
//! sums and unions of their days, a site that had data before the tier
//! existed gets its months built from its days (events arriving meanwhile
//! included), and retention takes a month's rows with its first day.

use std::collections::BTreeMap;

use diesel::RunQueryDsl;
use diesel::sql_types::{BigInt, Binary, Text};
use roaring::RoaringBitmap;
use serde_json::{Value, json};

use crate::analytics::{analytics_builder, drain, import, reader, site};
use crate::backend_test;
use crate::common::{DAY, T0, TestApp};
use crate::federation::{CONFIGURE, Fed, READ};

const PATHS: [&str; 4] = ["/", "/p/1", "/p/2", "/blog/a"];
const SOURCES: [Option<&str>; 3] = [None, Some("google"), Some("instagram")];

/// 130 days of pageviews before T0's day: 40 visitors who come back across
/// days and months, several paths, sources and campaigns.
fn history(days: std::ops::Range<i64>, tag: &str) -> Vec<Value> {
    let first = T0 - T0.rem_euclid(DAY) - 130 * DAY;
    let mut lines = Vec::new();
    for d in days {
        for k in 0..(d % 4 + 1) {
            let at = first + d * DAY + 3_600_000 * (k + 1);
            let v = (d * 7 + k * 13) % 40;
            let mut line = json!({"type": "pageview", "occurredAt": at, "visitorId": format!("v_month{v:08}"),
                "pageviewId": format!("p_{tag}{d:012}{k:03}"), "path": PATHS[((d + k) % 4) as usize]});
            if let Some(s) = SOURCES[(v % 3) as usize] {
                line["source"] = json!(s);
                line["campaign"] = json!(format!("c{}", v % 2));
            }
            lines.push(line);
        }
    }
    lines
}

#[derive(diesel::QueryableByName, Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct Count {
    #[diesel(sql_type = Text)]
    tier: String,
    #[diesel(sql_type = BigInt)]
    bucket: i64,
    #[diesel(sql_type = Text)]
    dim: String,
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = BigInt)]
    count: i64,
}

#[derive(diesel::QueryableByName)]
struct Set {
    #[diesel(sql_type = Text)]
    tier: String,
    #[diesel(sql_type = BigInt)]
    bucket: i64,
    #[diesel(sql_type = Text)]
    dim: String,
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = Binary)]
    bits: Vec<u8>,
}

type Rows = (BTreeMap<(i64, String, String), i64>, BTreeMap<(i64, String, String), RoaringBitmap>);

/// The site's month rows, and the sums and unions of its day rows per month.
async fn month_rows_and_days(app: &TestApp) -> (Rows, Rows) {
    app.state
        .cx

        .read(|c| {
            let counts: Vec<Count> = diesel::sql_query(
                "SELECT tier, bucket, dim, key, count FROM web_breakdowns WHERE site_id = 'loja' AND tier IN ('d', 'm')",
            )
            .load(c)?;
            let sets: Vec<Set> = diesel::sql_query(
                "SELECT tier, bucket, dim, key, bits FROM web_visitor_sets WHERE site_id = 'loja' AND tier IN ('d', 'm')",
            )
            .load(c)?;
            let (mut months, mut days): (Rows, Rows) = Default::default();
            for r in counts {
                let month = rastrod::store::analytics::rollups::month_start(r.bucket);
                let into = if r.tier == "m" { &mut months.0 } else { &mut days.0 };
                *into.entry((month, r.dim, r.key)).or_default() += r.count;
            }
            for s in sets {
                let month = rastrod::store::analytics::rollups::month_start(s.bucket);
                let into = if s.tier == "m" { &mut months.1 } else { &mut days.1 };
                *into.entry((month, s.dim, s.key)).or_default() |=
                    RoaringBitmap::deserialize_from(&s.bits[..]).unwrap();
            }
            Ok((months, days))
        })
        .await
        .unwrap()
}

async fn assert_months_equal_their_days(app: &TestApp) {
    let (months, days) = month_rows_and_days(app).await;
    assert!(!months.0.is_empty() && !months.1.is_empty(), "month rows are kept");
    assert_eq!(months.0, days.0, "each month's breakdowns are the sums of its days");
    assert_eq!(months.1, days.1, "each month's visitor sets are the unions of its days");
}

async fn sql(app: &TestApp, statement: &'static str) {
    app.state.cx.write_plain(move |c| Ok(diesel::sql_query(statement).execute(c)?)).await.unwrap();
}

/// The site's month rows unusable: reads fall back to the day rows alone.
async fn days_only(app: &TestApp) {
    sql(app, "INSERT INTO web_month_tier (site_id, complete_from) VALUES ('loja', 9000000000000)").await;
}

async fn month_tier_from(app: &TestApp) -> Option<i64> {
    #[derive(diesel::QueryableByName)]
    struct From {
        #[diesel(sql_type = BigInt)]
        complete_from: i64,
    }
    app.state
        .cx
        .read(|c| {
            let rows: Vec<From> =
                diesel::sql_query("SELECT complete_from FROM web_month_tier WHERE site_id = 'loja'").load(c)?;
            Ok(rows.first().map(|r| r.complete_from))
        })
        .await
        .unwrap()
}

/// Overview answers over ranges with whole months inside (and without).
async fn overviews(fed: &Fed, token: &str) -> Vec<Value> {
    let today = T0 - T0.rem_euclid(DAY);
    let mut out = Vec::new();
    for (from, to) in
        [(today - 130 * DAY, today - 1), (today - 100 * DAY, today - 10 * DAY - 1), (today - 20 * DAY, today - 1)]
    {
        let args = json!({"siteIds": ["loja"], "from": from, "to": to});
        out.push(fed.both(Some(token), "overview", args).await.unwrap());
    }
    out
}

backend_test!(the_month_tier_answers_as_the_days_do, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    let lines = history(0..130, "a");
    let answer = import(app, "loja", "history", &lines).await;
    assert_eq!(answer.status, 201, "{:?}", answer.body);
    // A sale of a campaign's session feeds the campaign's month rows too.
    let of_campaign = lines.iter().find(|l| l.get("campaign").is_some()).unwrap();
    let sale = json!({"conversionKey": "s-1", "occurredAt": of_campaign["occurredAt"], "name": "Pedido",
        "valueCents": 990, "visitorId": of_campaign["visitorId"]});
    assert_eq!(app.post("/v1/sites/loja/analytics/conversions", sale).await.status, 201);
    drain(app).await;
    assert_months_equal_their_days(app).await;

    // Independent figures for the whole 130 days: distinct visitors per page.
    let t = reader(&fed);
    let with_months = overviews(&fed, &t).await;
    let mut per_page: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for l in &lines {
        per_page.entry(l["path"].as_str().unwrap().into()).or_default().insert(l["visitorId"].as_str().unwrap().into());
    }
    let whole = &with_months[0];
    assert_eq!(whole["totals"]["visitors"], 40);
    assert_eq!(whole["totals"]["pageviews"], lines.len());
    for p in whole["pages"].as_array().unwrap() {
        assert_eq!(p["visitors"], per_page[p["route"].as_str().unwrap()].len(), "{p}");
    }
    assert_eq!(
        whole["campaigns"].as_array().unwrap().iter().map(|c| c["conversions"].as_i64().unwrap()).sum::<i64>(),
        1
    );

    // The same answers from the day rows alone.
    days_only(app).await;
    assert_eq!(overviews(&fed, &t).await, with_months);
});

// rule: RET-03
backend_test!(an_older_site_gets_its_months_built_from_its_days, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ, CONFIGURE]).await;
    assert_eq!(import(app, "loja", "first", &history(0..100, "a")).await.status, 201);
    drain(app).await;
    let t = reader(&fed);
    let before = overviews(&fed, &t).await;

    // As a database from before the month tier: no month rows, the tier complete only from next month.
    sql(app, "DELETE FROM web_breakdowns WHERE tier = 'm'").await;
    sql(app, "DELETE FROM web_visitor_sets WHERE tier = 'm'").await;
    let next = rastrod::store::analytics::rollups::next_month(T0 + 2 * DAY);
    app.state
        .cx
        .write_plain(move |c| {
            let q = format!("INSERT INTO web_month_tier (site_id, complete_from) VALUES ('loja', {next})");
            Ok(diesel::sql_query(q).execute(c)?)
        })
        .await
        .unwrap();
    assert_eq!(overviews(&fed, &t).await, before, "the day rows answer meanwhile");

    // Events of old months arrive before the build: they go to the day rows
    // only, and the build then counts them once.
    let late = history(100..130, "b");
    assert_eq!(import(app, "loja", "late", &late).await.status, 201);
    let applied = rastrod::service::analytics::rollup::apply;
    app.state.cx.write_plain(move |c| applied(c, 100_000)).await.unwrap();
    let meanwhile = overviews(&fed, &t).await;
    drain(app).await;
    assert_eq!(month_tier_from(app).await, Some(0), "built back to the site's first day");
    assert_months_equal_their_days(app).await;
    assert_eq!(overviews(&fed, &t).await, meanwhile);

    // Retention takes a month's rows with its first day; the days left answer for it.
    let purge = json!({"siteId": "loja", "eventsDays": 60, "sessionsDays": 60, "conversionsDays": 60,
        "profilesDays": 60, "aggregatesDays": 110});
    let cfg = crate::analytics::definitions::configurer(&fed);
    crate::analytics::definitions::write(&fed, &cfg, "setRetentionPolicy", purge, true).await;
    rastrod::actors::retention::drain(&app.state.cx).await.unwrap();
    let after_purge = overviews(&fed, &t).await;
    let (months, days) = month_rows_and_days(app).await;
    let cutoff = T0 - 110 * DAY;
    assert!(months.0.keys().all(|(m, _, _)| *m >= cutoff - cutoff.rem_euclid(DAY)), "no month row before the cutoff");
    assert!(days.0.keys().any(|(m, _, _)| *m < cutoff), "the month of the cutoff keeps its later days");
    sql(app, "UPDATE web_month_tier SET complete_from = 9000000000000 WHERE site_id = 'loja'").await;
    assert_eq!(overviews(&fed, &t).await, after_purge, "month rows used only where they are whole");
});
