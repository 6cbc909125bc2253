//! `timezone` (REPORTING §1): the overview's days are the zone's, checked
//! against a recount of the raw rows (events and sessions) bucketed by the
//! zone's own calendar, and its ranges are checked in local days.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::NaiveDate;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use rastrod::service::reporting::timezone::Zone;
use serde_json::json;

use crate::backend_test;
use crate::common::*;

#[derive(QueryableByName)]
struct Hit {
    #[diesel(sql_type = Text)]
    visitor_id: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    route: String,
    #[diesel(sql_type = BigInt)]
    occurred_at: i64,
}

#[derive(QueryableByName)]
struct Session {
    #[diesel(sql_type = Text)]
    source: String,
    #[diesel(sql_type = BigInt)]
    started_at: i64,
}

/// A site's raw rows, straight from the database.
async fn raw(app: &TestApp, site: &'static str) -> (Vec<Hit>, Vec<Session>) {
    app.state
        .cx
        .read(move |c| {
            use diesel::RunQueryDsl;
            let hits = diesel::sql_query(format!(
                "SELECT visitor_id, kind, route, occurred_at FROM web_events WHERE site_id = '{site}'"
            ))
            .load::<Hit>(c)?;
            let sessions =
                diesel::sql_query(format!("SELECT source, started_at FROM web_sessions WHERE site_id = '{site}'"))
                    .load::<Session>(c)?;
            Ok((hits, sessions))
        })
        .await
        .unwrap()
}

#[derive(QueryableByName)]
struct GoalMark {
    #[diesel(sql_type = Text)]
    goal_id: String,
    #[diesel(sql_type = BigInt)]
    at: i64,
    /// 1: a completion (`web_goal_hits`), 0: a goal session (`web_session_goals`, at its start).
    #[diesel(sql_type = BigInt)]
    completion: i64,
}

/// A site's goal completions and goal sessions, straight from the database.
async fn goal_marks(app: &TestApp, site: &'static str) -> Vec<GoalMark> {
    app.state
        .cx
        .read(move |c| {
            use diesel::RunQueryDsl;
            Ok(diesel::sql_query(format!(
                "SELECT goal_id, at, CAST(1 AS BIGINT) AS completion FROM web_goal_hits WHERE site_id = '{site}' \
                 UNION ALL SELECT goal_id, started_at AS at, CAST(0 AS BIGINT) AS completion FROM web_session_goals WHERE site_id = '{site}'"
            ))
            .load::<GoalMark>(c)?)
        })
        .await
        .unwrap()
}

/// The overview's `topGoals` are the raw rows' (completions, goal sessions) per goal over `[from, to]`.
fn same_top_goals(o: &serde_json::Value, marks: &[GoalMark], (from, to): (i64, i64), name: &str) {
    let mut want: HashMap<&str, (i64, i64)> = HashMap::new();
    for m in marks.iter().filter(|m| (from..=to).contains(&m.at)) {
        let e = want.entry(&m.goal_id).or_default();
        if m.completion == 1 { e.0 += 1 } else { e.1 += 1 }
    }
    let got: HashMap<&str, (i64, i64)> = o["topGoals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_i64().unwrap();
            (g["goalId"].as_str().unwrap(), (n("completions"), n("sessions")))
        })
        .collect();
    assert!(!got.is_empty(), "{name}: the demo completes goals");
    assert_eq!(got, want, "{name}: topGoals");
}

/// What the raw rows say about each local day of `[from, to]` and the whole range.
#[derive(Default, Debug, PartialEq)]
struct Recount {
    /// Per local day start: (visitors, sessions, pageviews).
    days: BTreeMap<i64, (i64, i64, i64)>,
    totals: (i64, i64, i64),
    sources: HashMap<String, i64>,
    /// Per route: (pageviews, visitors).
    pages: HashMap<String, (i64, i64)>,
}

fn recount(zone: Zone, (from, to): (i64, i64), hits: &[Hit], sessions: &[Session]) -> Recount {
    let mut starts = Vec::new();
    let mut t = from;
    while t <= to {
        starts.push(t);
        t = zone.next_day(t);
    }
    recount_in(&starts, &|t| zone.day_start(t), (from, to), hits, sessions)
}

/// The same recount over buckets that start at `starts`, `bucket_of` placing an instant.
fn recount_in(
    starts: &[i64],
    bucket_of: &dyn Fn(i64) -> i64,
    (from, to): (i64, i64),
    hits: &[Hit],
    sessions: &[Session],
) -> Recount {
    let inside = |t: i64| (from..=to).contains(&t);
    let mut r = Recount::default();
    let mut day_visitors: BTreeMap<i64, HashSet<&str>> = BTreeMap::new();
    let mut all: HashSet<&str> = HashSet::new();
    let mut page_visitors: HashMap<&str, HashSet<&str>> = HashMap::new();
    for t in starts {
        r.days.insert(*t, (0, 0, 0));
    }
    for h in hits.iter().filter(|h| inside(h.occurred_at)) {
        let day = bucket_of(h.occurred_at);
        day_visitors.entry(day).or_default().insert(&h.visitor_id);
        all.insert(&h.visitor_id);
        if h.kind == "pageview" {
            r.days.get_mut(&day).unwrap().2 += 1;
            r.totals.2 += 1;
            r.pages.entry(h.route.clone()).or_default().0 += 1;
            page_visitors.entry(&h.route).or_default().insert(&h.visitor_id);
        }
    }
    for s in sessions.iter().filter(|s| inside(s.started_at)) {
        r.days.get_mut(&bucket_of(s.started_at)).unwrap().1 += 1;
        r.totals.1 += 1;
        *r.sources.entry(s.source.clone()).or_default() += 1;
    }
    for (day, v) in day_visitors {
        r.days.get_mut(&day).unwrap().0 = v.len() as i64;
    }
    r.totals.0 = all.len() as i64;
    for (route, v) in page_visitors {
        r.pages.get_mut(route).unwrap().1 = v.len() as i64;
    }
    r
}

/// The overview's series and totals are the recount's: (visitors, sessions, pageviews) per bucket.
fn same_figures(o: &serde_json::Value, want: &Recount, name: &str) {
    let figures = |p: &serde_json::Value| {
        (p["visitors"].as_i64().unwrap(), p["sessions"].as_i64().unwrap(), p["pageviews"].as_i64().unwrap())
    };
    for p in o["series"].as_array().unwrap() {
        assert_eq!(figures(p), want.days[&p["bucketStart"].as_i64().unwrap()], "{name}: bucket {}", p["bucketStart"]);
    }
    assert_eq!(figures(&o["totals"]), want.totals, "{name}: totals");
}

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn zone(name: &str) -> Zone {
    Zone::of(Some(name), &[]).unwrap().unwrap()
}

// rule: REP-02
backend_test!(local_days_are_the_zones_own_days_exactly_as_the_raw_rows_say, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    let (hits, sessions) = raw(&app, "loja-x").await;
    let marks = goal_marks(&app, "loja-x").await;
    // São Paulo (UTC−3), Tokyo (+9, cutting the demo's afternoons), Lisbon
    // (its 25-hour day, 25 October 2026) and Sydney (its 23-hour day, 4 October 2026).
    // Kolkata (+5:30) and Kathmandu (+5:45) split UTC hours: read from the rows.
    for name in
        ["America/Sao_Paulo", "Asia/Tokyo", "Europe/Lisbon", "Australia/Sydney", "Asia/Kolkata", "Asia/Kathmandu"]
    {
        let z = zone(name);
        let (from, to) = (z.start_of(date(2026, 9, 20)), z.start_of(date(2026, 11, 11)) - 1);
        let args = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": name});
        let o = app.post("/v1/analytics/overview", args).await.ok();
        let want = recount(z, (from, to), &hits, &sessions);
        assert_eq!(o["timezone"], name);
        let series = o["series"].as_array().unwrap();
        assert_eq!(series.len(), 52, "{name}: one point per local day");
        let days: Vec<i64> = series.iter().map(|p| p["bucketStart"].as_i64().unwrap()).collect();
        assert_eq!(days, want.days.keys().copied().collect::<Vec<_>>(), "{name}: the zone's midnights");
        same_figures(&o, &want, name);
        // The whole UTC days inside from the day tier, the edge hours from the hour tier.
        same_top_goals(&o, &marks, (from, to), name);
        for row in o["sources"].as_array().unwrap() {
            assert_eq!(row["sessions"].as_i64().unwrap(), want.sources[row["source"].as_str().unwrap()], "{name}");
        }
        let pages = o["pages"].as_array().unwrap();
        assert!(!pages.is_empty());
        for row in pages {
            let got = (row["pageviews"].as_i64().unwrap(), row["visitors"].as_i64().unwrap());
            assert_eq!(got, want.pages[row["route"].as_str().unwrap()], "{name}: page {}", row["route"]);
        }
    }
    // Kolkata's and Kathmandu's hours start at :30 and :45 of UTC's: an
    // hourly overview of a local day counts the rows hour by hour.
    let day = T0 - T0.rem_euclid(DAY) - 5 * DAY;
    for name in ["Asia/Kolkata", "Asia/Kathmandu"] {
        let z = zone(name);
        let start = z.day_start(day);
        let (from, to) = (start, z.next_day(start) - 1);
        let args = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": name, "interval": "hour"});
        let o = app.post("/v1/analytics/overview", args).await.ok();
        let starts: Vec<i64> = (0..24).map(|h| from + h * HOUR).collect();
        let want = recount_in(&starts, &|t| from + (t - from).div_euclid(HOUR) * HOUR, (from, to), &hits, &sessions);
        let series = o["series"].as_array().unwrap();
        assert_eq!(series.len(), 24, "{name}");
        assert!(want.totals.2 > 0, "{name}: the demo has pageviews that day");
        same_figures(&o, &want, name);
    }

    // The DST days really are 23 and 25 hours long.
    let lisbon = zone("Europe/Lisbon");
    let day = lisbon.start_of(date(2026, 10, 25));
    assert_eq!(lisbon.next_day(day) - day, 25 * HOUR);
    let sydney = zone("Australia/Sydney");
    let day = sydney.start_of(date(2026, 10, 4));
    assert_eq!(sydney.next_day(day) - day, 23 * HOUR);

    // Without the argument the answer is the UTC one, with no `timezone` key.
    let today = T0 - T0.rem_euclid(DAY);
    let utc = json!({"siteIds": ["loja-x"], "from": today - 30 * DAY, "to": today - 1});
    let plain = app.post("/v1/analytics/overview", utc.clone()).await.ok();
    assert!(plain.get("timezone").is_none());
    let mut named = utc.clone();
    named["timezone"] = json!("UTC");
    let named = app.post("/v1/analytics/overview", named).await.ok();
    assert_eq!(named["series"], plain["series"]);
    assert_eq!(named["totals"], plain["totals"]);
});

// rule: REP-03
backend_test!(local_ranges_are_whole_local_days_within_the_limits, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    let sp = zone("America/Sao_Paulo");
    let (from, to) = (sp.start_of(date(2026, 11, 1)), sp.start_of(date(2026, 11, 8)) - 1);
    let ask = |from: i64, to: i64, tz: &str| json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": tz});
    app.post("/v1/analytics/overview", ask(from, to, "America/Sao_Paulo")).await.ok();
    // A UTC midnight is not São Paulo's; nor is a to that ends mid-day.
    let refused = app.post("/v1/analytics/overview", ask(from - 3 * HOUR, to, "America/Sao_Paulo")).await;
    refused.err(400, "INVALID_ARGUMENT");
    assert!(refused.body["message"].as_str().unwrap().contains("local midnight"));
    app.post("/v1/analytics/overview", ask(from, to - HOUR, "America/Sao_Paulo")).await.err(400, "INVALID_ARGUMENT");
    // 366 local days at most.
    let long = (sp.start_of(date(2025, 11, 1)), sp.start_of(date(2026, 11, 3)) - 1);
    let over = app.post("/v1/analytics/overview", ask(long.0, long.1, "America/Sao_Paulo")).await;
    over.err(400, "INVALID_ARGUMENT");
    assert!(over.body["message"].as_str().unwrap().contains("366 local days"));
    let fits = (sp.start_of(date(2025, 11, 2)), long.1);
    app.post("/v1/analytics/overview", ask(fits.0, fits.1, "America/Sao_Paulo")).await.ok();
    // An unknown zone names the argument and not the value.
    let bad = app.post("/v1/analytics/overview", ask(from, to, "Mars/Olympus")).await;
    bad.err(400, "INVALID_ARGUMENT");
    assert!(!bad.body.to_string().contains("Olympus"));
    // "site": the site's own zone; sites of two zones are refused.
    app.patch("/v1/sites/loja-x", json!({"timezone": "America/Sao_Paulo"})).await.ok();
    app.patch("/v1/sites/pet-mania", json!({"timezone": "Europe/Lisbon"})).await.ok();
    let own = app.post("/v1/analytics/overview", ask(from, to, "site")).await.ok();
    assert_eq!(own["timezone"], "America/Sao_Paulo");
    let mixed = json!({"siteIds": ["loja-x", "pet-mania"], "from": from, "to": to, "timezone": "site"});
    let mixed = app.post("/v1/analytics/overview", mixed).await;
    mixed.err(400, "INVALID_ARGUMENT");
    assert!(mixed.body["message"].as_str().unwrap().contains("differ"));
    // An hourly overview of a local day: the day's hours, 25 on the day DST ends.
    let lisbon = zone("Europe/Lisbon");
    let day = lisbon.start_of(date(2026, 10, 25));
    let hourly = json!({"siteIds": ["pet-mania"], "from": day, "to": lisbon.next_day(day) - 1,
        "interval": "hour", "timezone": "Europe/Lisbon"});
    let h = app.post("/v1/analytics/overview", hourly).await.ok();
    assert_eq!(h["series"].as_array().unwrap().len(), 25);
    // Zones whose days start between UTC hours: their days and their own
    // hours, which start at :30; a UTC hour is not one of them.
    let kolkata = zone("Asia/Kolkata");
    let k = (kolkata.start_of(date(2026, 11, 1)), kolkata.start_of(date(2026, 11, 2)) - 1);
    app.post("/v1/analytics/overview", ask(k.0, k.1, "Asia/Kolkata")).await.ok();
    let mut hourly = ask(k.0, k.0 + 3 * HOUR - 1, "Asia/Kolkata");
    hourly["interval"] = json!("hour");
    app.post("/v1/analytics/overview", hourly).await.ok();
    let mut hourly = ask(k.0 + 30 * 60_000, k.0 + 30 * 60_000 + 3 * HOUR - 1, "Asia/Kolkata");
    hourly["interval"] = json!("hour");
    let half = app.post("/v1/analytics/overview", hourly).await;
    half.err(400, "INVALID_ARGUMENT");
    assert!(half.body["message"].as_str().unwrap().contains("whole hours"));
    // Lord Howe moves its clock by half an hour: no hourly range across the change.
    let howe = zone("Australia/Lord_Howe");
    let change = howe.start_of(date(2026, 10, 4));
    let mut across = ask(change, change + 6 * HOUR - 1, "Australia/Lord_Howe");
    across["interval"] = json!("hour");
    let refused = app.post("/v1/analytics/overview", across).await;
    refused.err(400, "INVALID_ARGUMENT");
    assert!(refused.body["message"].as_str().unwrap().contains("part of an hour"));
});

#[derive(QueryableByName)]
struct Arrival {
    #[diesel(sql_type = BigInt)]
    first_at: i64,
}

#[derive(QueryableByName)]
struct SpendDay {
    #[diesel(sql_type = BigInt)]
    day: i64,
    #[diesel(sql_type = BigInt)]
    spend_cents: i64,
}

#[derive(QueryableByName)]
struct Named {
    #[diesel(sql_type = Text)]
    timezone: String,
}

/// loja-x's leads' arrivals, its spend rows (day = the account's date at
/// 00:00 UTC) and its ad account's zone, straight from the database.
async fn lead_rows(app: &TestApp) -> (Vec<i64>, Vec<(i64, i64)>, String) {
    app.state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            let leads = diesel::sql_query("SELECT first_at FROM leads WHERE site_id = 'loja-x'").load::<Arrival>(c)?;
            let spend = diesel::sql_query("SELECT day, spend_cents FROM ad_spend WHERE site_id = 'loja-x'")
                .load::<SpendDay>(c)?;
            let zone =
                diesel::sql_query("SELECT timezone FROM site_ad_accounts WHERE site_id = 'loja-x'").load::<Named>(c)?;
            Ok((
                leads.into_iter().map(|l| l.first_at).collect(),
                spend.into_iter().map(|s| (s.day, s.spend_cents)).collect(),
                zone[0].timezone.clone(),
            ))
        })
        .await
        .unwrap()
}

// rule: REP-04
backend_test!(leads_count_on_their_local_day_and_spend_on_the_same_date, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    let (_, _, name) = lead_rows(&app).await;
    let z = zone(&name);
    let today = z.date(T0);
    let first = today - chrono::Duration::days(20);
    let (from, to) = (z.start_of(first), z.start_of(today) - 1);
    // Two leads in the last local hours of a day, already the next UTC day.
    let late = z.start_of(today - chrono::Duration::days(3)) - 30 * 60_000;
    assert_ne!(chrono::DateTime::from_timestamp_millis(late).unwrap().date_naive(), z.date(late));
    app.lead("loja-x", "late-1", late, json!({})).await.ok();
    app.lead("loja-x", "late-2", late + 60_000, json!({"origin": "organic"})).await.ok();
    let (arrivals, spend, _) = lead_rows(&app).await;
    let utc_ms = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis();

    let daily = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": name});
    let rows = app.post("/v1/reports/leads-daily", daily).await.ok();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 20);
    let mut spent_somewhere = false;
    for (i, row) in rows.iter().enumerate() {
        let date = first + chrono::Duration::days(i as i64);
        let start = row["dayStart"].as_i64().unwrap();
        assert_eq!(start, z.start_of(date), "day {i} starts at the local midnight");
        let leads = arrivals.iter().filter(|t| z.date(**t) == date).count() as i64;
        assert_eq!(row["leads"].as_i64().unwrap(), leads, "{date}: leads of the local day");
        let cents: i64 = spend.iter().filter(|(d, _)| *d == utc_ms(date)).map(|(_, c)| c).sum();
        assert_eq!(row["spendCents"].as_i64().unwrap(), cents, "{date}: the same date's spend");
        spent_somewhere |= cents > 0;
    }
    assert!(spent_somewhere, "the demo's account spent in the range");
    let late_day = &rows[17];
    assert!(late_day["leads"].as_i64().unwrap() >= 2, "the late leads count on their local day: {late_day}");

    // leadsReport: the range's leads, the spend of its local dates, and the accounts' zone per site.
    let report = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": name});
    let r = app.post("/v1/reports/leads", report).await.ok();
    let leads = arrivals.iter().filter(|t| (from..=to).contains(*t)).count() as i64;
    assert_eq!(r["totals"]["leads"].as_i64().unwrap(), leads);
    let cents: i64 = spend.iter().filter(|(d, _)| (utc_ms(first)..utc_ms(today)).contains(d)).map(|(_, c)| c).sum();
    assert_eq!(r["totals"]["spendCents"].as_i64().unwrap(), cents);
    assert_eq!(r["bySite"][0]["spendTimezone"], name.as_str());
    // Without the argument: UTC days, and no spendTimezone.
    let plain = app.report(&["loja-x"], from, to).await;
    assert!(plain["bySite"][0].get("spendTimezone").is_none());
    // "site" reads the site's zone, and limits count local days.
    app.patch("/v1/sites/loja-x", json!({"timezone": name})).await.ok();
    let own = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": "site"});
    assert_eq!(app.post("/v1/reports/leads-daily", own).await.ok().as_array().unwrap().len(), 20);
    let long = json!({"siteIds": ["loja-x"], "from": z.start_of(today - chrono::Duration::days(93)), "to": to, "timezone": name});
    app.post("/v1/reports/leads-daily", long).await.err(400, "INVALID_ARGUMENT");
});

#[derive(QueryableByName)]
struct Ledger {
    #[diesel(sql_type = BigInt)]
    occurred_at: i64,
    #[diesel(sql_type = BigInt)]
    value_cents: i64,
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    affiliate_id: Option<String>,
}

#[derive(QueryableByName)]
struct Lcp {
    #[diesel(sql_type = BigInt)]
    occurred_at: i64,
    #[diesel(sql_type = BigInt)]
    lcp: i64,
}

#[derive(QueryableByName)]
struct View {
    #[diesel(sql_type = Text)]
    session_id: String,
    #[diesel(sql_type = Text)]
    route: String,
    #[diesel(sql_type = BigInt)]
    occurred_at: i64,
}

#[derive(QueryableByName)]
struct Tagged {
    #[diesel(sql_type = BigInt)]
    started_at: i64,
}

/// The demo with Lead Ads on, so `metaFormsReport` answers.
fn with_lead_ads(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).env("RASTRO_FEDERATION_META_LEADS", "true")
}

// rule: REP-02
backend_test!(every_day_range_function_reads_the_zones_days, with_lead_ads, |app| {
    crate::dashboard::demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    let (ledger, tagged, lcp, views) = app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            let ledger = diesel::sql_query(
                "SELECT occurred_at, value_cents, affiliate_id FROM web_conversions WHERE site_id = 'loja-x'",
            )
            .load::<Ledger>(c)?;
            let tagged = diesel::sql_query(
                "SELECT started_at FROM web_sessions WHERE site_id = 'loja-x' AND affiliate_id IS NOT NULL",
            )
            .load::<Tagged>(c)?;
            let lcp = diesel::sql_query(
                "SELECT occurred_at, lcp FROM web_events WHERE site_id = 'loja-x' AND kind = 'pageview' AND lcp IS NOT NULL",
            )
            .load::<Lcp>(c)?;
            let views = diesel::sql_query(
                "SELECT session_id, route, occurred_at FROM web_events WHERE site_id = 'loja-x' AND kind = 'pageview' \
                 ORDER BY session_id, occurred_at, id",
            )
            .load::<View>(c)?;
            Ok((ledger, tagged, lcp, views))
        })
        .await
        .unwrap();
    // Tokyo's days end at 15:00 UTC, inside the demo's afternoons.
    let z = zone("Asia/Tokyo");
    let today = z.date(T0);
    let (from, to) = (z.start_of(today - chrono::Duration::days(30)), z.start_of(today) - 1);
    let inside = |t: i64| (from..=to).contains(&t);
    let one = json!({"siteId": "loja-x", "from": from, "to": to, "timezone": "Asia/Tokyo"});
    let many = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": "Asia/Tokyo"});

    let rev = app.post("/v1/analytics/revenueSummary", many.clone()).await.ok();
    let sold: Vec<&Ledger> = ledger.iter().filter(|l| inside(l.occurred_at)).collect();
    assert!(!sold.is_empty());
    assert_eq!(rev["conversions"].as_i64().unwrap(), sold.len() as i64);
    assert_eq!(rev["revenueCents"].as_i64().unwrap(), sold.iter().map(|l| l.value_cents).sum::<i64>());
    assert_eq!(rev["timezone"], "Asia/Tokyo");

    let aff = app.post("/v1/analytics/affiliatesReport", one.clone()).await.ok();
    let sessions = tagged.iter().filter(|s| inside(s.started_at)).count() as i64;
    let credited: Vec<&&Ledger> = sold.iter().filter(|l| l.affiliate_id.is_some()).collect();
    assert!(sessions > 0, "the demo tags sessions with affiliates");
    assert_eq!(aff["totals"]["sessions"].as_i64().unwrap(), sessions);
    assert_eq!(aff["totals"]["conversions"].as_i64().unwrap(), credited.len() as i64);
    assert_eq!(aff["totals"]["revenueCents"].as_i64().unwrap(), credited.iter().map(|l| l.value_cents).sum::<i64>());

    // Goals are exact to the millisecond: the zone's days give what the same instants give.
    let goals = app.post("/v1/analytics/goalsReport", one.clone()).await.ok();
    let plain = app.post("/v1/analytics/goalsReport", json!({"siteId": "loja-x", "from": from, "to": to})).await.ok();
    assert_eq!(goals["goals"], plain["goals"]);
    assert_eq!(goals["totalSessions"], plain["totalSessions"]);
    assert!(goals["totalSessions"].as_i64().unwrap() > 0);
    assert_eq!(goals["timezone"], "Asia/Tokyo");

    // Vitals: the digests of the UTC days inside, the pageviews' own values at the edges.
    let mut vitals = one.clone();
    vitals["from"] = json!(z.start_of(today - chrono::Duration::days(20)));
    let v = app.post("/v1/analytics/vitalsReport", vitals.clone()).await.ok();
    let mut values: Vec<i64> = lcp
        .iter()
        .filter(|r| (vitals["from"].as_i64().unwrap()..=to).contains(&r.occurred_at))
        .map(|r| r.lcp)
        .collect();
    values.sort_unstable();
    assert!(!values.is_empty());
    let row = &v["metrics"][0];
    assert_eq!(row["metric"], "lcp");
    assert_eq!(row["samples"].as_i64().unwrap(), values.len() as i64);
    // p75 by nearest rank (ARPT-17).
    let rank = (values.len() * 3).div_ceil(4) - 1;
    assert_eq!(row["p75"].as_i64().unwrap(), values[rank]);
    assert_eq!(v["timezone"], "Asia/Tokyo");

    // siteMap: views and entries per route, the day rollups inside, the pageviews at the edges.
    let mut map = many.clone();
    map["from"] = vitals["from"].clone();
    let m = app.post("/v1/analytics/siteMap", map.clone()).await.ok();
    let map_from = map["from"].as_i64().unwrap();
    let in_map = |t: i64| (map_from..=to).contains(&t);
    let mut want: HashMap<&str, (i64, i64)> = HashMap::new();
    let mut previous: Option<&str> = None;
    let mut transitions = 0;
    for v in &views {
        let first = previous != Some(v.session_id.as_str());
        previous = Some(&v.session_id);
        if in_map(v.occurred_at) {
            let e = want.entry(&v.route).or_default();
            e.0 += 1;
            e.1 += i64::from(first);
            transitions += i64::from(!first);
        }
    }
    let site = &m["sites"][0];
    for r in site["routes"].as_array().unwrap() {
        let got = (r["views"].as_i64().unwrap(), r["entries"].as_i64().unwrap());
        assert_eq!(got, want[r["route"].as_str().unwrap()], "siteMap {}", r["route"]);
    }
    let counted: i64 = site["transitions"].as_array().unwrap().iter().map(|t| t["count"].as_i64().unwrap()).sum();
    assert_eq!(counted, transitions);
    assert_eq!(m["timezone"], "Asia/Tokyo");
    // dataCoverage: the range checked as local days.
    let cov = app.post("/v1/analytics/dataCoverage", one.clone()).await.ok();
    assert_eq!(cov["timezone"], "Asia/Tokyo");

    let funnels = app.post("/v1/analytics/funnelsReport", one.clone()).await.ok();
    assert_eq!(funnels["timezone"], "Asia/Tokyo");
    assert!(!funnels["funnels"].as_array().unwrap().is_empty());
    let forms = app.post("/v1/meta/owners/demo%3Aagency/lead-ads/metaFormsReport", one.clone()).await;
    assert_eq!(forms.status, 200, "{}", forms.text);
    assert_eq!(forms.body["timezone"], "Asia/Tokyo");

    // Each refuses a range that is not whole local days of the zone.
    let mut off = one.clone();
    off["from"] = json!(from + HOUR);
    for f in ["goalsReport", "funnelsReport", "affiliatesReport", "dataCoverage"] {
        app.post(&format!("/v1/analytics/{f}"), off.clone()).await.err(400, "INVALID_ARGUMENT");
    }
    let mut off = many.clone();
    off["to"] = json!(to - HOUR);
    app.post("/v1/analytics/revenueSummary", off).await.err(400, "INVALID_ARGUMENT");
});

// rule: REP-02
backend_test!(days_read_from_rows_past_retention_are_said_to_be_approximate, fake_meta_builder, |app| {
    crate::dashboard::demo(&app).await;
    assert!(rastrod::demo::analytics::seed(&app.state.cx, T0).await.unwrap() > 0);
    crate::analytics::drain(&app).await;
    let policy = json!({"siteId": "loja-x", "eventsDays": 10, "sessionsDays": 10, "conversionsDays": 10,
        "profilesDays": 10, "aggregatesDays": 3650});
    app.post("/v1/analytics/setRetentionPolicy", policy).await.ok();
    assert!(rastrod::actors::retention::drain(&app.state.cx).await.unwrap() > 0, "the run deleted old rows");
    let z = zone("America/Sao_Paulo");
    let today = z.date(T0);
    let (from, to) = (z.start_of(today - chrono::Duration::days(30)), z.start_of(today) - 1);
    let args = json!({"siteIds": ["loja-x"], "from": from, "to": to, "timezone": "America/Sao_Paulo"});
    // From the rollups: exact, the edge hours' page and source visitors included (hour sets).
    let o = app.post("/v1/analytics/overview", args.clone()).await.ok();
    assert!(o.get("approximateDays").is_none(), "{}", o["approximateDays"]);
    // From the rows (a filter): every day before the cutoff.
    let mut filtered = args.clone();
    filtered["filters"] = json!([{"dim": "source", "op": "isNot", "values": ["-"]}]);
    let f = app.post("/v1/analytics/overview", filtered).await.ok();
    let days = f["approximateDays"].as_array().unwrap();
    assert!(days.len() >= 19 && days.len() <= 21, "about 20 of the 30 days are past the 10-day cutoff: {days:?}");
    assert_eq!(days[0], json!(from));
    // UTC days from the rollups: exact, nothing said.
    let today_utc = T0 - T0.rem_euclid(DAY);
    let utc = json!({"siteIds": ["loja-x"], "from": today_utc - 30 * DAY, "to": today_utc - 1});
    assert!(app.post("/v1/analytics/overview", utc).await.ok().get("approximateDays").is_none());

    // The other reports that read rows say the same of their days.
    let one = json!({"siteId": "loja-x", "from": from, "to": to, "timezone": "America/Sao_Paulo"});
    let keep_all = json!([{"dim": "source", "op": "isNot", "values": ["-"]}]);
    let with = |args: &serde_json::Value, filters: bool| {
        let mut a = args.clone();
        if filters {
            a["filters"] = keep_all.clone();
        }
        a
    };
    // Local days over day rollups: the first day's hours before its UTC midnight.
    for (name, args) in [("vitalsReport", &one), ("affiliatesReport", &one), ("siteMap", &args)] {
        let r = app.post(&format!("/v1/analytics/{name}"), args.clone()).await.ok();
        assert_eq!(r["approximateDays"], json!([from]), "{name}");
    }
    // With filters: every day before the cutoff.
    for (name, args) in [("goalsReport", &one), ("vitalsReport", &one), ("funnelsReport", &one), ("siteMap", &args)] {
        let r = app.post(&format!("/v1/analytics/{name}"), with(args, true)).await.ok();
        let days = r["approximateDays"].as_array().unwrap_or_else(|| panic!("{name}: {r}"));
        assert!(days.len() >= 19 && days.len() <= 21, "{name}: {days:?}");
        assert_eq!(days[0], json!(from), "{name}");
    }
    // Goals and funnels from their hour counters and index: exact, nothing said.
    for name in ["goalsReport", "funnelsReport"] {
        let r = app.post(&format!("/v1/analytics/{name}"), one.clone()).await.ok();
        assert!(r.get("approximateDays").is_none(), "{name}");
    }
});
