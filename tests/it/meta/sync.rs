//! The account sync against the fake Graph API inside the daemon: the
//! supervisor and its actors, driven by the manual clock and `RunDue`;
//! schedules, back-offs and leases with injected faults; spend and the catalog
//! in the reports, checked against sums computed independently from the
//! sample's own `sample_spend`.
//!
//! Every link, new token or syncMetaNow wakes the supervisor, whose new actors
//! run what is due at once in the background; `RunDue` waits for a run in
//! flight (one drain per account at a time) and then runs what is still due,
//! so tests read the rows after `settle` (two `RunDue`s) rather than count on
//! which of the two drains did the work.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use rastrod::actors::supervisor::{Children, Reconcile, RunDue};
use rastrod::meta::fake::sample::{CAFE_BROOKLYN, CASA_LISBOA, LOJA_X, PET_MANIA};
use rastrod::meta::fake::{SAMPLE_LAST_DAY, sample_ads, sample_spend_shifted};
use rastrod::service::meta::sync::schedule::Kind;
use rastrod::service::meta::sync::{self as meta_sync, Outcome};
use rastrod::store::meta::sync::{SpendRow, SyncRow};
use serde_json::{Value, json};

use crate::backend_test;
use crate::common::*;

const OWNER: &str = "agency:sync";
/// The sample on its canonical dates: its last day, 2026-11-29, is the day before T0.
const TOKEN: &str = "rastro-fake-sample-token:0";
const HOUR: i64 = DAY / 24;
const MINUTE: i64 = HOUR / 60;

/// The fake Graph inside the daemon, a fresh secrets key, a data folder of the
/// test's own and no periodic sweep during the test (the test wakes the supervisor).
fn sync_builder(backend: Backend) -> TestAppBuilder {
    fake_meta_builder(backend).own_data_dir().env("RASTRO_SYNC_RECONCILE_INTERVAL", "1h")
}

/// A one-minute sync lease.
fn short_lease_builder(backend: Backend) -> TestAppBuilder {
    sync_builder(backend).env("RASTRO_SYNC_LEASE", "1m")
}

/// One account run at a time.
fn one_run_at_a_time_builder(backend: Backend) -> TestAppBuilder {
    sync_builder(backend).env("RASTRO_SYNC_MAX_CONCURRENT", "1")
}

/// Three account runs at a time.
fn three_runs_at_once_builder(backend: Backend) -> TestAppBuilder {
    sync_builder(backend).env("RASTRO_SYNC_MAX_CONCURRENT", "3")
}

/// Spend row caps the November sample just reaches (see `november_caps`).
fn november_caps_builder(backend: Backend) -> TestAppBuilder {
    let (ads, days) = november_caps();
    sync_builder(backend)
        .env("RASTRO_REPORT_SPEND_AD_ROW_CAP", &ads.to_string())
        .env("RASTRO_REPORT_SPEND_DAY_ROW_CAP", &days.to_string())
}

/// Unlinked spend leaves 10 rows a transaction.
fn small_removal_batch_builder(backend: Backend) -> TestAppBuilder {
    sync_builder(backend).env("RASTRO_META_REMOVAL_BATCH_SIZE", "10")
}

// ---------------------------------------------------------------- dates

fn d(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

/// Midnight UTC of a date, in epoch ms.
fn ms(date: NaiveDate) -> i64 {
    date.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis()
}

fn at(date: &str, hour: i64) -> i64 {
    ms(d(date)) + hour * HOUR
}

fn date_of(day_ms: i64) -> NaiveDate {
    chrono::DateTime::from_timestamp_millis(day_ms).unwrap().date_naive()
}

fn days(from: NaiveDate, until: NaiveDate) -> impl Iterator<Item = NaiveDate> {
    from.iter_days().take_while(move |x| *x <= until)
}

/// The whole first backfill of an account linked at T0: 90 local days ending on 2026-11-30.
fn backfill_from() -> NaiveDate {
    d("2026-09-02")
}

fn t0_day() -> NaiveDate {
    d("2026-11-30")
}

// ---------------------------------------------------------------- the sample, independently

/// Spend per (account-local date, ad): (cents, impressions, clicks).
type Spend = BTreeMap<(NaiveDate, String), (i64, i64, i64)>;

fn ads_of(act: &str) -> Vec<&'static rastrod::meta::fake::SampleAd> {
    sample_ads().iter().filter(|a| a.account == act).collect()
}

fn sample_ad(id: &str) -> &'static rastrod::meta::fake::SampleAd {
    sample_ads().iter().find(|a| a.id == id).unwrap()
}

/// What Meta lists for `act` over the served dates `[from, until]` under `shift`.
fn expected(act: &str, from: NaiveDate, until: NaiveDate, shift: i64) -> Spend {
    let mut out = Spend::new();
    for ad in ads_of(act) {
        for date in days(from, until) {
            if let Some(v) = sample_spend_shifted(ad.id, date, shift) {
                out.insert((date, ad.id.to_string()), v);
            }
        }
    }
    out
}

/// What an account linked at T0 with TOKEN holds after its first sync.
fn synced(act: &str) -> Spend {
    expected(act, backfill_from(), t0_day(), 0)
}

fn within(s: &Spend, from: NaiveDate, until: NaiveDate) -> Spend {
    s.iter().filter(|((date, _), _)| *date >= from && *date <= until).map(|(k, v)| (k.clone(), *v)).collect()
}

fn sum(s: &Spend) -> (i64, i64, i64) {
    s.values().fold((0, 0, 0), |a, v| (a.0 + v.0, a.1 + v.1, a.2 + v.2))
}

fn by_ad(s: &Spend) -> BTreeMap<String, (i64, i64, i64)> {
    let mut out: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    for ((_, ad), v) in s {
        let e = out.entry(ad.clone()).or_default();
        *e = (e.0 + v.0, e.1 + v.1, e.2 + v.2);
    }
    out
}

fn by_day(s: &Spend) -> BTreeMap<NaiveDate, i64> {
    let mut out = BTreeMap::new();
    for ((date, _), v) in s {
        *out.entry(*date).or_insert(0) += v.0;
    }
    out
}

fn merge(a: &Spend, b: &Spend) -> Spend {
    a.iter().chain(b.iter()).map(|(k, v)| (k.clone(), *v)).collect()
}

/// The (spendCents, impressions, clicks) of a report row; None when spend is null.
fn amount(v: &Value) -> Option<(i64, i64, i64)> {
    let cents = v["spendCents"].as_i64()?;
    Some((cents, v["impressions"].as_i64().unwrap(), v["clicks"].as_i64().unwrap()))
}

// ---------------------------------------------------------------- the fake Graph

fn fake_url(app: &TestApp) -> String {
    app.state.fake.as_ref().expect("RASTRO_META_FAKE starts the fake").base_url.clone()
}

async fn fake(app: &TestApp, path: &str, body: Option<Value>) -> Value {
    let http = reqwest::Client::new();
    let url = format!("{}/__fake{path}", fake_url(app));
    let req = match body {
        Some(b) => http.post(url).json(&b),
        None => http.get(url),
    };
    let res = req.send().await.unwrap();
    assert!(res.status().is_success(), "fake control {path}: {}", res.status());
    res.json().await.unwrap()
}

async fn fault(app: &TestApp, f: Value) {
    fake(app, "/faults", Some(f)).await;
}

async fn fake_config(app: &TestApp, c: Value) {
    fake(app, "/config", Some(c)).await;
}

async fn fake_reset(app: &TestApp) {
    fake(app, "/reset", Some(json!({}))).await;
}

async fn graph_log(app: &TestApp) -> Vec<Value> {
    fake(app, "/requests", None).await.as_array().unwrap().clone()
}

fn query_param(query: &str, key: &str) -> Option<String> {
    let url = reqwest::Url::parse(&format!("http://x/?{query}")).ok()?;
    url.query_pairs().find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
}

fn is_insights(r: &Value, act: &str) -> bool {
    r["path"].as_str().unwrap().ends_with(&format!("/{act}/insights"))
}

/// The `time_range`s of the insights calls for `act`, in order.
fn insights_ranges(log: &[Value], act: &str) -> Vec<(NaiveDate, NaiveDate)> {
    log.iter()
        .filter(|r| is_insights(r, act))
        .map(|r| {
            let range: Value =
                serde_json::from_str(&query_param(r["query"].as_str().unwrap(), "time_range").unwrap()).unwrap();
            (d(range["since"].as_str().unwrap()), d(range["until"].as_str().unwrap()))
        })
        .collect()
}

fn thumbnail_requests(log: &[Value]) -> usize {
    log.iter().filter(|r| r["path"].as_str().unwrap().starts_with("/fake-media/thumbnails/")).count()
}

/// The ad account a request of the log was for.
fn account_of(r: &Value) -> Option<String> {
    let path = r["path"].as_str().unwrap();
    if let Some(name) = path.strip_prefix("/fake-media/thumbnails/") {
        let ad = name.trim_end_matches(".png");
        return sample_ads().iter().find(|a| a.id == ad).map(|a| a.account.to_string());
    }
    path.split('/').find(|s| s.starts_with("act_")).map(str::to_string)
}

// ---------------------------------------------------------------- the daemon

async fn connect(app: &TestApp, owner: &str, token: &str) -> Value {
    app.put(&format!("/v1/meta/owners/{owner}/connection"), json!({ "accessToken": token })).await.ok()
}

async fn connection(app: &TestApp, owner: &str) -> Value {
    app.get(&format!("/v1/meta/owners/{owner}/connection")).await.ok()
}

async fn site(app: &TestApp, id: &str, currency: &str, timezone: &str) {
    app.post(
        "/v1/sites",
        json!({"siteId": id, "name": format!("Site {id}"), "currency": currency, "timezone": timezone,
            "ownerId": "o1"}),
    )
    .await
    .ok();
}

async fn link(app: &TestApp, site: &str, act: &str) -> Value {
    app.post(&format!("/v1/sites/{site}/ad-accounts"), json!({"ownerKey": OWNER, "adAccountId": act})).await.ok()
}

async fn unlink(app: &TestApp, site: &str, act: &str) -> Value {
    app.delete(&format!("/v1/sites/{site}/ad-accounts/{act}")).await.ok()
}

/// Connects the agency, creates `site` and links `act` to it.
async fn linked(app: &TestApp, site_id: &str, currency: &str, timezone: &str, act: &str) {
    connect(app, OWNER, TOKEN).await;
    site(app, site_id, currency, timezone).await;
    link(app, site_id, act).await;
}

async fn run_due(app: &TestApp) -> BTreeMap<String, Vec<Outcome>> {
    app.state.actors.sync.get().expect("the supervisor runs").send(RunDue).await.unwrap().unwrap()
}

/// Runs what is due until nothing is (a run in flight finishes first).
async fn settle(app: &TestApp) {
    run_due(app).await;
    run_due(app).await;
}

async fn children(app: &TestApp) -> usize {
    app.state.actors.sync.get().unwrap().send(Children).await.unwrap()
}

async fn sync_row(app: &TestApp, act: &str) -> SyncRow {
    let act = act.to_string();
    app.state.cx.read(move |c| Ok(rastrod::store::meta::sync::get(c, &act)?)).await.unwrap().expect("a sync row")
}

/// The spend rows of `act` straight from `ad_spend`.
async fn spend_rows(app: &TestApp, act: &str) -> Spend {
    let act = act.to_string();
    let rows: Vec<SpendRow> = app
        .state
        .cx
        .read(move |c| {
            use diesel::prelude::*;
            use rastrod::db::schema::ad_spend;
            Ok(ad_spend::table.filter(ad_spend::ad_account_id.eq(act)).select(SpendRow::as_select()).load(c)?)
        })
        .await
        .unwrap();
    rows.into_iter().map(|r| ((date_of(r.day), r.ad_id), (r.spend_cents, r.impressions, r.clicks))).collect()
}

async fn status(app: &TestApp, sites: &[&str]) -> Vec<Value> {
    app.post("/v1/meta/status", json!({ "siteIds": sites })).await.ok().as_array().unwrap().clone()
}

/// The metaStatus entry of one linked account.
async fn account_status(app: &TestApp, site: &str, act: &str) -> Value {
    let s = status(app, &[site]).await;
    s[0]["adAccounts"].as_array().unwrap().iter().find(|a| a["adAccountId"] == act).cloned().expect("the account")
}

fn last_error(a: &Value) -> String {
    a["lastError"].as_str().unwrap_or("").to_string()
}

async fn report(app: &TestApp, sites: &[&str], from: NaiveDate, until: NaiveDate) -> Value {
    app.report(sites, ms(from), ms(until) + DAY - 1).await
}

async fn daily(app: &TestApp, body: Value) -> Vec<Value> {
    app.post("/v1/reports/leads-daily", body).await.ok().as_array().unwrap().clone()
}

/// The ad rows of a report's campaign tree, by ad id.
fn ad_rows(r: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for c in r["campaigns"].as_array().unwrap() {
        for s in c["adsets"].as_array().unwrap() {
            for a in s["ads"].as_array().unwrap() {
                out.insert(a["adId"].as_str().unwrap().to_string(), a.clone());
            }
        }
    }
    out
}

fn origin<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["origins"].as_array().unwrap().iter().find(|o| o["origin"] == name).expect("the origin")
}

/// Records a lead from one of the sample's ads (ids only, no names).
async fn ad_lead(app: &TestApp, site: &str, key: &str, at: i64, ad: &str) -> String {
    let a = sample_ad(ad);
    let extra = json!({"adId": a.id, "adsetId": a.adset_id, "campaignId": a.campaign_id});
    app.lead(site, key, at, extra).await.ok()["leadId"].as_str().unwrap().to_string()
}

/// Waits until `check` holds, checking every few milliseconds (an async
/// timer between checks, so the server's tasks run and no core spins).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the fake has seen `n` insights calls for `act`.
async fn insights_seen(app: &TestApp, act: &str, n: usize) {
    eventually("the insights call", || async move {
        graph_log(app).await.iter().filter(|r| is_insights(r, act)).count() >= n
    })
    .await;
}

fn failed_with(outcomes: &[Outcome], code: &str) -> bool {
    matches!(outcomes, [Outcome::Failed(why)] if why.starts_with(code))
}

fn synced_kinds(outcomes: &[Outcome]) -> Vec<Kind> {
    outcomes.iter().filter_map(|o| if let Outcome::Synced(k) = o { Some(*k) } else { None }).collect()
}

// ================================================================= SYNC

// rule: SYNC-01, LINK-05
backend_test!(one_actor_per_link_started_by_link_token_and_sync_now_stopped_by_unlink, sync_builder, |app| {
    let app = &app;
    connect(app, OWNER, TOKEN).await;
    site(app, "s1", "BRL", "America/Sao_Paulo").await;
    site(app, "s2", "BRL", "America/Manaus").await;
    assert_eq!(children(app).await, 0, "no link, no actor");

    // A link alone starts the account's actor, which backfills at once.
    link(app, "s1", LOJA_X).await;
    eventually("the first backfill of Loja X", || async move { sync_row(app, LOJA_X).await.first_synced_at.is_some() })
        .await;
    link(app, "s2", PET_MANIA).await;
    eventually("the first backfill of Pet Mania", || async move {
        sync_row(app, PET_MANIA).await.first_synced_at.is_some()
    })
    .await;
    settle(app).await;
    assert_eq!(children(app).await, 2, "one actor per linked account");

    // Unlinking stops its actor.
    assert_eq!(unlink(app, "s2", PET_MANIA).await["removed"], true);
    eventually("the unlinked account's actor to stop", || async move { children(app).await == 1 }).await;

    // A refused token stops the actor; a new token starts it again and it syncs at once.
    app.clock.advance(46 * MINUTE);
    fault(app, json!({"match": "/insights", "kind": "token_refused", "times": 1})).await;
    let out = run_due(app).await;
    assert!(failed_with(&out[LOJA_X], "META_TOKEN_INVALID"), "{out:?}");
    run_due(app).await;
    assert_eq!(children(app).await, 0, "a stopped link has no actor");
    connect(app, OWNER, TOKEN).await;
    let now = app.state.now();
    eventually("the new token to wake the account", || async move {
        let row = sync_row(app, LOJA_X).await;
        row.last_sync_at == Some(now) && row.last_error.is_none()
    })
    .await;
    assert_eq!(children(app).await, 1);

    // syncMetaNow syncs the site's accounts at once (the live run was not due for 45 minutes).
    settle(app).await;
    app.clock.advance(10 * MINUTE);
    let before = insights_ranges(&graph_log(app).await, LOJA_X).len();
    let answer = app.post("/v1/sites/s1/meta/sync", json!({})).await.ok();
    assert_eq!(answer["accounts"], 1);
    let now = app.state.now();
    eventually(
        "syncMetaNow to run the account",
        || async move { sync_row(app, LOJA_X).await.last_sync_at == Some(now) },
    )
    .await;
    let ranges = insights_ranges(&graph_log(app).await, LOJA_X);
    assert_eq!(ranges.len(), before + 1);
    assert_eq!(ranges[before], (d("2026-11-29"), d("2026-11-30")), "today and yesterday");
    app.post("/v1/sites/nope/meta/sync", json!({})).await.err(404, "NOT_FOUND");
});

// rule: SYNC-02, SYNC-07, SYNC-04, REPORT-03, STATUS-01
backend_test!(backfill_in_three_blocks_unknown_until_done_resumes_and_fills_a_gap, sync_builder, |app| {
    let app = &app;
    connect(app, OWNER, TOKEN).await;
    site(app, "s", "BRL", "America/Sao_Paulo").await;
    ad_lead(app, "s", "k1", at("2026-11-20", 12), "120200000000000301").await;
    // Block 2 is slow: the status is read while it is in flight.
    fault(app, json!({"match": "/insights", "kind": "slow", "delayMs": 1500, "skip": 1, "times": 1})).await;
    link(app, "s", LOJA_X).await;
    insights_seen(app, LOJA_X, 2).await;
    // Block 3 fails.
    fault(app, json!({"match": "/insights", "kind": "server_error", "times": 1})).await;

    let a = account_status(app, "s", LOJA_X).await;
    assert_eq!(a["syncState"], "backfill");
    assert_eq!(a["backfill"], json!({"done": 1, "total": 3}));
    assert_eq!(a["lastError"], Value::Null);
    let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
    assert_eq!(r["totals"]["spendCents"], Value::Null, "unknown until the first backfill ends");
    assert_eq!(r["bySite"][0]["spendCents"], Value::Null);
    assert_eq!(ad_rows(&r)["120200000000000301"]["spendCents"], Value::Null);
    assert_eq!(r["totals"]["leads"], 1);

    // Block 2 lands, block 3 fails: still unknown, the cursor shows where it stopped.
    run_due(app).await;
    let a = account_status(app, "s", LOJA_X).await;
    assert_eq!(a["backfill"], json!({"done": 2, "total": 3}));
    assert_eq!(a["syncState"], "error");
    assert!(last_error(&a).starts_with("META_UNAVAILABLE"), "{a}");
    let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
    assert_eq!(r["totals"]["spendCents"], Value::Null);
    let stored = spend_rows(app, LOJA_X).await;
    assert_eq!(stored, expected(LOJA_X, d("2026-10-02"), t0_day(), 0), "two blocks stored");

    // 15 minutes later it resumes with block 3 only, the catalog with it, then the weekly and live runs.
    app.clock.advance(15 * MINUTE);
    settle(app).await;
    let log = graph_log(app).await;
    assert_eq!(
        insights_ranges(&log, LOJA_X),
        [
            (d("2026-11-01"), d("2026-11-30")),
            (d("2026-10-02"), d("2026-10-31")),
            (d("2026-09-02"), d("2026-10-01")),
            (d("2026-09-02"), d("2026-10-01")),
            (d("2026-11-03"), d("2026-11-30")),
            (d("2026-11-29"), d("2026-11-30")),
        ],
        "newest block first; resumed from the last finished block; weekly 28 days; live 2 days"
    );
    let first_ads = log.iter().position(|r| r["path"].as_str().unwrap().ends_with(&format!("/{LOJA_X}/ads"))).unwrap();
    let insights_before = log[..first_ads].iter().filter(|r| is_insights(r, LOJA_X)).count();
    assert_eq!(insights_before, 4, "the catalog comes with the last block");
    let a = account_status(app, "s", LOJA_X).await;
    assert_eq!((a["syncState"].as_str(), &a["backfill"], &a["lastError"]), (Some("live"), &Value::Null, &Value::Null));
    assert_eq!(a["lastSyncAt"], T0 + 15 * MINUTE);
    assert_eq!(spend_rows(app, LOJA_X).await, synced(LOJA_X));
    let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
    let exp = within(&synced(LOJA_X), d("2026-11-01"), d("2026-11-29"));
    assert_eq!(amount(&r["totals"]), Some(sum(&exp)));

    // Back from a pause of 30 days: the gap is backfilled first, in one block.
    app.clock.advance(30 * DAY);
    let before = insights_ranges(&graph_log(app).await, LOJA_X).len();
    settle(app).await;
    let ranges = insights_ranges(&graph_log(app).await, LOJA_X);
    assert_eq!(ranges[before], (d("2026-12-01"), d("2026-12-30")), "the gap first");
    assert_eq!(ranges[before + 1], (d("2026-12-03"), d("2026-12-30")), "then the weekly run");
    let a = account_status(app, "s", LOJA_X).await;
    assert_eq!((a["syncState"].as_str(), &a["backfill"]), (Some("live"), &Value::Null));
});

// rule: SYNC-05, REPORT-11
backend_test!(
    spend_per_ad_and_day_in_cents_and_a_resynced_range_replaces_what_meta_no_longer_lists,
    sync_builder,
    |app| {
        let app = &app;
        linked(app, "s", "BRL", "America/Sao_Paulo", LOJA_X).await;
        settle(app).await;
        let first = synced(LOJA_X);
        assert_eq!(spend_rows(app, LOJA_X).await, first, "every ad and day, cents, impressions and clicks");
        let log = graph_log(app).await;
        let q = log.iter().find(|r| is_insights(r, LOJA_X)).unwrap()["query"].as_str().unwrap().to_string();
        assert_eq!(query_param(&q, "level").as_deref(), Some("ad"));
        assert_eq!(query_param(&q, "time_increment").as_deref(), Some("1"));

        // The report adds up to the sample's own sums.
        let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
        let exp = within(&first, d("2026-11-01"), d("2026-11-29"));
        assert_eq!(amount(&r["totals"]), Some(sum(&exp)));
        let rows = ad_rows(&r);
        for (ad, v) in by_ad(&exp) {
            assert_eq!(amount(&rows[&ad]), Some(v), "ad {ad}");
        }

        // Meta's numbers move (a token shifting the sample by a day): the weekly
        // run re-reads 28 days and replaces them, rows Meta no longer lists included.
        connect(app, OWNER, "rastro-fake-sample-token:1").await;
        settle(app).await;
        app.clock.advance(7 * DAY);
        let out = run_due(app).await;
        assert!(synced_kinds(&out[LOJA_X]).contains(&Kind::Weekly), "{out:?}");
        settle(app).await;
        let after = merge(
            &within(&first, backfill_from(), d("2026-11-09")),
            &expected(LOJA_X, d("2026-11-10"), d("2026-12-07"), 1),
        );
        let gone: Vec<_> = first.keys().filter(|k| k.0 >= d("2026-11-10") && !after.contains_key(*k)).collect();
        assert!(!gone.is_empty(), "the sample has rows the shifted range no longer lists");
        assert_eq!(spend_rows(app, LOJA_X).await, after, "the re-read range replaced, older days kept");
    }
);

// rule: SYNC-06, REPORT-04, LEAD-09
backend_test!(
    catalog_names_status_creative_and_thumbnails_copied_once_a_failed_thumbnail_never_fails,
    sync_builder,
    |app| {
        let app = &app;
        connect(app, OWNER, TOKEN).await;
        site(app, "s", "BRL", "America/Sao_Paulo").await;
        let plain =
            app.lead("s", "k1", at("2026-11-20", 12), json!({"adId": "120200000000000301"})).await.ok()["leadId"]
                .as_str()
                .unwrap()
                .to_string();
        let journey = app.get(&format!("/v1/sites/s/leads/{plain}/journey")).await.ok();
        assert_eq!(journey["ad"]["adName"], Value::Null, "nothing names the ad yet");

        // Every thumbnail fails: the runs still succeed.
        fault(app, json!({"match": "/fake-media/thumbnails/", "kind": "server_error", "times": 1000})).await;
        link(app, "s", LOJA_X).await;
        settle(app).await;
        let a = account_status(app, "s", LOJA_X).await;
        assert_eq!((a["syncState"].as_str(), &a["lastError"]), (Some("live"), &Value::Null));
        assert!(thumbnail_requests(&graph_log(app).await) >= 6);
        let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
        let rows = ad_rows(&r);
        assert_eq!(rows.len(), 6, "every ad of Loja X spent in November");
        for ad in ads_of(LOJA_X) {
            let row = &rows[ad.id];
            assert_eq!(row["name"], ad.name);
            assert_eq!(row["adStatus"], ad.effective_status);
            assert_eq!(row["siteId"], "s");
            assert_eq!(row["thumbnailUrl"], Value::Null, "not copied yet");
            match ad.object_type {
                "VIDEO" => assert_eq!(row["creativeType"], "video"),
                "PHOTO" => assert_eq!(row["creativeType"], "image"),
                "SHARE" => assert_eq!(row["creativeType"], "carousel", "the sample's SHARE ads are carousels"),
                _ => assert_eq!(row["creativeType"], "other"),
            }
        }
        let campaign =
            r["campaigns"].as_array().unwrap().iter().find(|c| c["campaignId"] == "120200000000000101").unwrap();
        assert_eq!(campaign["name"], "Black Friday");
        assert_eq!(campaign["adsets"][0]["name"], "Mulheres 25-45");

        // The lead's journey names its ad from the catalog.
        let journey = app.get(&format!("/v1/sites/s/leads/{plain}/journey")).await.ok();
        assert_eq!(journey["ad"]["adName"], "Vídeo oferta");
        assert_eq!(journey["ad"]["adsetName"], "Mulheres 25-45");
        assert_eq!(journey["ad"]["campaignName"], "Black Friday");

        // The next daily run (04:00 São Paulo) copies each thumbnail, which the daemon serves itself.
        fake_reset(app).await;
        app.clock.set(at("2026-12-01", 7) + 30 * MINUTE);
        let out = run_due(app).await;
        assert!(synced_kinds(&out[LOJA_X]).contains(&Kind::Daily), "{out:?}");
        assert_eq!(thumbnail_requests(&graph_log(app).await), 6, "one copy per ad");
        let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
        let rows = ad_rows(&r);
        let open = reqwest::Client::new();
        for ad in ads_of(LOJA_X) {
            let url = rows[ad.id]["thumbnailUrl"].as_str().expect("a thumbnail").to_string();
            assert!(url.starts_with("/media/thumbnails/"), "{url}");
            let res = open.get(format!("{}{url}", app.base)).send().await.unwrap();
            assert_eq!(res.status(), 200, "served without a key");
            assert_eq!(res.headers()["content-type"], "image/png");
            assert_eq!(res.bytes().await.unwrap().to_vec(), rastrod::meta::fake::png::thumbnail(ad.id));
        }
        // Copied once: the next day's catalog fetches none again.
        app.clock.advance(DAY);
        let out = run_due(app).await;
        assert!(synced_kinds(&out[LOJA_X]).contains(&Kind::Daily), "{out:?}");
        assert_eq!(thumbnail_requests(&graph_log(app).await), 6);
    }
);

// rule: SYNC-08, STATUS-02
backend_test!(throttle_and_high_usage_wait_at_least_an_hour_or_what_meta_says, sync_builder, |app| {
    let app = &app;
    linked(app, "s", "BRL", "America/Sao_Paulo", LOJA_X).await;
    settle(app).await;

    // A throttle answer: RATE_LIMITED, nothing runs for an hour.
    app.clock.advance(46 * MINUTE);
    fault(app, json!({"match": "/insights", "kind": "throttle", "times": 1})).await;
    let out = run_due(app).await;
    assert!(failed_with(&out[LOJA_X], "RATE_LIMITED"), "{out:?}");
    assert!(last_error(&account_status(app, "s", LOJA_X).await).starts_with("RATE_LIMITED"));
    app.clock.advance(59 * MINUTE);
    assert_eq!(run_due(app).await[LOJA_X], [Outcome::Idle], "59 minutes later nothing runs");
    app.clock.advance(2 * MINUTE);
    assert_eq!(synced_kinds(&run_due(app).await[LOJA_X]), [Kind::Live], "61 minutes later it runs");
    assert_eq!(account_status(app, "s", LOJA_X).await["lastError"], Value::Null);

    // Usage over 75% on a successful answer: the next run waits an hour, not 45 minutes.
    app.clock.advance(46 * MINUTE);
    fake_config(app, json!({"usagePct": 90})).await;
    assert_eq!(synced_kinds(&run_due(app).await[LOJA_X]), [Kind::Live]);
    let status = account_status(app, "s", LOJA_X).await;
    assert!(last_error(&status).starts_with("RATE_LIMITED"), "the wait is explained: {status}");
    assert_eq!(status["syncState"], "live", "the run itself succeeded");
    fake_config(app, json!({"usagePct": 1})).await;
    app.clock.advance(46 * MINUTE);
    assert_eq!(run_due(app).await[LOJA_X], [Outcome::Idle], "the live run waits for the usage to fall");
    app.clock.advance(15 * MINUTE);
    assert_eq!(synced_kinds(&run_due(app).await[LOJA_X]), [Kind::Live]);
    assert_eq!(account_status(app, "s", LOJA_X).await["lastError"], Value::Null, "cleared by a calm run");

    // Meta asks for 90 minutes (headers of the error answer): honoured.
    app.clock.advance(46 * MINUTE);
    fault(app, json!({"match": "/insights", "kind": "throttle", "times": 1, "regainMinutes": 90})).await;
    assert!(failed_with(&run_due(app).await[LOJA_X], "RATE_LIMITED"));
    app.clock.advance(89 * MINUTE);
    assert_eq!(run_due(app).await[LOJA_X], [Outcome::Idle]);
    app.clock.advance(2 * MINUTE);
    assert_eq!(synced_kinds(&run_due(app).await[LOJA_X]), [Kind::Live]);
});

// rule: SYNC-09, STATUS-01
backend_test!(other_failures_retry_after_15_minutes_doubling_to_6_hours, sync_builder, |app| {
    let app = &app;
    linked(app, "s", "BRL", "America/Sao_Paulo", LOJA_X).await;
    settle(app).await;
    app.clock.advance(46 * MINUTE);
    fault(app, json!({"match": "/insights", "kind": "server_error", "times": 1000})).await;
    for wait in [15, 30, 60, 120, 240, 360, 360] {
        let out = run_due(app).await;
        assert!(failed_with(&out[LOJA_X], "META_UNAVAILABLE"), "{out:?}");
        let row = sync_row(app, LOJA_X).await;
        assert_eq!(row.next_run_at - app.state.now(), wait * MINUTE, "after {} failures", row.fail_count);
        let a = account_status(app, "s", LOJA_X).await;
        assert_eq!(a["syncState"], "error");
        assert!(last_error(&a).starts_with("META_UNAVAILABLE"));
        app.clock.advance((wait - 1) * MINUTE);
        assert_eq!(run_due(app).await[LOJA_X], [Outcome::Idle], "not before {wait} minutes");
        app.clock.advance(MINUTE);
    }
    fake_reset(app).await;
    assert!(!synced_kinds(&run_due(app).await[LOJA_X]).is_empty());
    let a = account_status(app, "s", LOJA_X).await;
    assert_eq!((a["syncState"].as_str(), &a["lastError"]), (Some("live"), &Value::Null));
    assert_eq!(sync_row(app, LOJA_X).await.fail_count, 0);
});

// rule: SYNC-10, STATUS-02, SYNC-01
backend_test!(
    a_refused_token_stops_every_account_it_fed_until_a_new_one_unless_pasted_meanwhile,
    sync_builder,
    |app| {
        let app = &app;
        linked(app, "s1", "BRL", "America/Sao_Paulo", LOJA_X).await;
        site(app, "s2", "BRL", "America/Manaus").await;
        link(app, "s2", PET_MANIA).await;
        settle(app).await;

        app.clock.advance(46 * MINUTE);
        fault(app, json!({"match": "/insights", "kind": "token_refused", "times": 1})).await;
        let out = run_due(app).await;
        assert!(out.values().any(|o| failed_with(o, "META_TOKEN_INVALID")), "{out:?}");
        for (s, act) in [("s1", LOJA_X), ("s2", PET_MANIA)] {
            let a = account_status(app, s, act).await;
            assert_eq!(a["syncState"], "error", "{act}");
            assert!(last_error(&a).starts_with("META_TOKEN_INVALID"), "{act}: {a}");
        }
        assert_eq!(connection(app, OWNER).await["status"], "invalid");
        run_due(app).await;
        assert_eq!(children(app).await, 0);
        let calls = graph_log(app).await.len();
        app.clock.advance(2 * HOUR);
        assert!(run_due(app).await.is_empty(), "nothing runs");
        assert_eq!(graph_log(app).await.len(), calls);

        // A new token resumes both at once.
        connect(app, OWNER, TOKEN).await;
        settle(app).await;
        let now = app.state.now();
        for (s, act) in [("s1", LOJA_X), ("s2", PET_MANIA)] {
            let a = account_status(app, s, act).await;
            assert_eq!(
                (a["syncState"].as_str(), &a["lastError"], &a["lastSyncAt"]),
                (Some("live"), &Value::Null, &json!(now))
            );
        }

        // Refused while a new token is pasted: the new one wins, the account is not stopped.
        fake_reset(app).await;
        app.clock.set(at("2026-12-01", 7) + 30 * MINUTE);
        fake_config(app, json!({"insightsRowCap": 10})).await;
        let path = format!("{LOJA_X}/insights");
        fault(app, json!({"match": path, "kind": "slow", "delayMs": 1500, "times": 1})).await;
        fault(app, json!({"match": path, "kind": "token_refused", "times": 1})).await;
        let st = app.state.clone();
        let in_flight = actix_web::rt::spawn(async move { meta_sync::run(&st.cx, LOJA_X).await });
        insights_seen(app, LOJA_X, 1).await;
        connect(app, OWNER, TOKEN).await;
        let outcome = in_flight.await.unwrap().unwrap();
        assert_eq!(outcome, Outcome::Dropped, "a newer token: nothing stops, nothing is written");
        let a = account_status(app, "s1", LOJA_X).await;
        assert!(!last_error(&a).starts_with("META_TOKEN_INVALID"), "{a}");
        assert_eq!(connection(app, OWNER).await["status"], "connected");
        let out = run_due(app).await;
        assert!(synced_kinds(&out[LOJA_X]).contains(&Kind::Daily), "the new token syncs at once: {out:?}");
        assert_eq!(account_status(app, "s1", LOJA_X).await["syncState"], "live");
    }
);

// rule: SYNC-11
backend_test!(a_missing_secrets_key_only_delays_the_sync, sync_builder, |app| {
    let app = &app;
    linked(app, "s", "BRL", "America/Sao_Paulo", LOJA_X).await;
    settle(app).await;
    app.clock.advance(46 * MINUTE);
    let mut keyless = app.state.clone();
    keyless.cx.secrets = None;
    let outcome = meta_sync::run(&keyless.cx, LOJA_X).await.unwrap();
    assert!(matches!(&outcome, Outcome::Failed(why) if why.starts_with("SECRETS_KEY_MISSING")), "{outcome:?}");
    let a = account_status(app, "s", LOJA_X).await;
    assert!(last_error(&a).starts_with("SECRETS_KEY_MISSING"), "{a}");
    assert_eq!(sync_row(app, LOJA_X).await.next_run_at, app.state.now() + 15 * MINUTE);
    let c = connection(app, OWNER).await;
    assert_eq!(
        (c["status"].as_str(), &c["invalidSince"]),
        (Some("connected"), &Value::Null),
        "the token is not blamed"
    );
    let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
    assert!(r["totals"]["spendCents"].is_i64(), "what was synced still reads");

    app.clock.advance(15 * MINUTE);
    assert_eq!(synced_kinds(&run_due(app).await[LOJA_X]), [Kind::Live]);
    assert_eq!(account_status(app, "s", LOJA_X).await["lastError"], Value::Null);
});

// rule: SYNC-12
backend_test!(too_much_data_splits_down_to_single_days_then_truncates_keeping_what_came, sync_builder, |app| {
    let app = &app;
    connect(app, OWNER, TOKEN).await;
    site(app, "s1", "BRL", "America/Sao_Paulo").await;
    site(app, "s2", "BRL", "America/Manaus").await;
    // Loja X has at most 6 ads a day: single days always fit, longer ranges do not.
    let most = |act: &str| {
        let mut per_day: BTreeMap<NaiveDate, usize> = BTreeMap::new();
        for (date, _) in synced(act).keys() {
            *per_day.entry(*date).or_default() += 1;
        }
        per_day
    };
    assert_eq!(most(LOJA_X).values().max(), Some(&6));
    fake_config(app, json!({"insightsRowCap": 6})).await;
    link(app, "s1", LOJA_X).await;
    settle(app).await;
    assert_eq!(spend_rows(app, LOJA_X).await, synced(LOJA_X), "everything, in smaller ranges");
    let ranges = insights_ranges(&graph_log(app).await, LOJA_X);
    assert!(ranges.iter().any(|(a, b)| a == b), "down to single days");
    assert_eq!(account_status(app, "s1", LOJA_X).await["lastError"], Value::Null);

    // Pet Mania with a cap of 2: days with more rows stay over it even alone,
    // the last day included (so the last run, the live one, truncates too).
    let per_day = most(PET_MANIA);
    assert!(per_day.values().any(|n| *n > 2) && per_day.values().any(|n| *n == 2), "{per_day:?}");
    assert!(per_day[&d("2026-11-29")] > 2);
    fake_config(app, json!({"insightsRowCap": 2})).await;
    link(app, "s2", PET_MANIA).await;
    settle(app).await;
    let kept: Spend = synced(PET_MANIA).into_iter().filter(|((date, _), _)| per_day[date] <= 2).collect();
    assert_eq!(spend_rows(app, PET_MANIA).await, kept, "every row of the days that came");
    let a = account_status(app, "s2", PET_MANIA).await;
    assert!(last_error(&a).starts_with("META_TRUNCATED"), "{a}");
    assert_eq!(a["syncState"], "live");

    // Without the cap the next daily run reads its 7 days whole.
    fake_reset(app).await;
    app.clock.set(at("2026-12-01", 8) + 30 * MINUTE);
    settle(app).await;
    let full = merge(&kept, &expected(PET_MANIA, d("2026-11-25"), d("2026-12-01"), 0));
    assert_eq!(spend_rows(app, PET_MANIA).await, full);
    assert_eq!(account_status(app, "s2", PET_MANIA).await["lastError"], Value::Null);
});

// rule: SYNC-13, STATUS-02
backend_test!(
    a_run_holds_its_lease_a_run_past_it_is_replaced_and_its_late_writes_dropped,
    short_lease_builder,
    |app| {
        let app = &app;
        linked(app, "s", "BRL", "America/Sao_Paulo", LOJA_X).await;
        settle(app).await;
        app.clock.advance(46 * MINUTE);
        fault(app, json!({"match": "/insights", "kind": "slow", "delayMs": 4000, "times": 1})).await;
        let before = insights_ranges(&graph_log(app).await, LOJA_X).len();
        let st = app.state.clone();
        let slow = actix_web::rt::spawn(async move { meta_sync::run(&st.cx, LOJA_X).await });
        insights_seen(app, LOJA_X, before + 1).await;
        let row = sync_row(app, LOJA_X).await;
        assert!(row.lease_run_id.is_some());
        assert_eq!(row.lease_until, Some(app.state.now() + MINUTE));

        // A second run meanwhile is Busy.
        assert_eq!(meta_sync::run(&app.state.cx, LOJA_X).await.unwrap(), Outcome::Busy);

        // Past the lease another run takes over.
        app.clock.advance(2 * MINUTE);
        let replaced_at = app.state.now();
        assert_eq!(meta_sync::run(&app.state.cx, LOJA_X).await.unwrap(), Outcome::Synced(Kind::Live));
        let a = account_status(app, "s", LOJA_X).await;
        assert!(last_error(&a).starts_with("RUN_TIMEOUT"), "{a}");
        // A marker the late run would overwrite if it wrote anything.
        let ad = synced(LOJA_X).keys().find(|(date, _)| *date == d("2026-11-29")).unwrap().1.clone();
        let marker_day = ms(d("2026-11-29"));
        let ad2 = ad.clone();
        app.state
            .cx
            .write_plain(move |c| {
                use diesel::prelude::*;
                use rastrod::db::schema::ad_spend::dsl::*;
                diesel::update(
                    ad_spend.filter(ad_account_id.eq(LOJA_X)).filter(day.eq(marker_day)).filter(ad_id.eq(ad2)),
                )
                .set(spend_cents.eq(1))
                .execute(c)?;
                Ok(())
            })
            .await
            .unwrap();
        app.clock.advance(MINUTE);
        assert_eq!(slow.await.unwrap().unwrap(), Outcome::Dropped, "the replaced run writes nothing");
        let row = sync_row(app, LOJA_X).await;
        assert_eq!((row.last_sync_at, row.lease_run_id), (Some(replaced_at), None));
        assert_eq!(spend_rows(app, LOJA_X).await[&(d("2026-11-29"), ad.clone())].0, 1, "no late write");

        // The next run clears the note and re-reads the day.
        app.clock.advance(46 * MINUTE);
        assert_eq!(synced_kinds(&run_due(app).await[LOJA_X]), [Kind::Live]);
        assert_eq!(account_status(app, "s", LOJA_X).await["lastError"], Value::Null);
        assert_eq!(spend_rows(app, LOJA_X).await, synced(LOJA_X));
    }
);

// rule: SYNC-14, SYNC-04, SYNC-03
backend_test!(schedules_and_dates_follow_the_accounts_own_timezone, sync_builder, |app| {
    let app = &app;
    // 2026-12-01 02:00 UTC is still 2026-11-30 (21:00) in New York.
    app.clock.set(at("2026-12-01", 2));
    linked(app, "cafe", "USD", "America/New_York", CAFE_BROOKLYN).await;
    settle(app).await;
    let ranges = insights_ranges(&graph_log(app).await, CAFE_BROOKLYN);
    assert_eq!(ranges[0], (d("2026-11-01"), d("2026-11-30")), "the account's today, not UTC's");
    assert_eq!(spend_rows(app, CAFE_BROOKLYN).await, synced(CAFE_BROOKLYN), "stored on account-local dates");

    // The daily run comes at 04:00 New York time (09:00 UTC), not at 04:00 UTC.
    for (hour, minute) in [(4, 30), (8, 59)] {
        app.clock.set(at("2026-12-01", hour) + minute * MINUTE);
        let kinds = synced_kinds(&run_due(app).await[CAFE_BROOKLYN]);
        assert_eq!(kinds, [Kind::Live], "{hour}:{minute} UTC: the live run only");
    }
    let before = insights_ranges(&graph_log(app).await, CAFE_BROOKLYN).len();
    app.clock.set(at("2026-12-01", 9) + MINUTE);
    let kinds = synced_kinds(&run_due(app).await[CAFE_BROOKLYN]);
    assert_eq!(kinds, [Kind::Daily]);
    let ranges = insights_ranges(&graph_log(app).await, CAFE_BROOKLYN);
    assert_eq!(ranges[before..], [(d("2026-11-25"), d("2026-12-01"))], "the last 7 local days");
    app.clock.advance(45 * MINUTE);
    assert_eq!(synced_kinds(&run_due(app).await[CAFE_BROOKLYN]), [Kind::Live], "every 45 minutes");
    let ranges = insights_ranges(&graph_log(app).await, CAFE_BROOKLYN);
    assert_eq!(ranges.last(), Some(&(d("2026-11-30"), d("2026-12-01"))), "today and yesterday");
});

/// Three accounts whose first runs failed, so they all come due together;
/// answers the accounts of the Graph requests of their next drains, in order.
async fn three_accounts_due_together(app: &TestApp) -> Vec<String> {
    connect(app, OWNER, TOKEN).await;
    site(app, "s1", "BRL", "America/Sao_Paulo").await;
    site(app, "s2", "BRL", "America/Manaus").await;
    site(app, "s3", "USD", "America/New_York").await;
    fault(app, json!({"match": "/insights", "kind": "server_error", "times": 3})).await;
    for (s, act) in [("s1", LOJA_X), ("s2", PET_MANIA), ("s3", CAFE_BROOKLYN)] {
        link(app, s, act).await;
    }
    settle(app).await;
    for act in [LOJA_X, PET_MANIA, CAFE_BROOKLYN] {
        assert_eq!(sync_row(app, act).await.fail_count, 1, "{act}");
    }
    fake_reset(app).await;
    fault(app, json!({"match": "/insights", "kind": "slow", "delayMs": 150, "times": 1000})).await;
    app.clock.advance(16 * MINUTE);
    let out = run_due(app).await;
    for act in [LOJA_X, PET_MANIA, CAFE_BROOKLYN] {
        assert_eq!(synced_kinds(&out[act]).len(), 5, "{act}: three blocks, weekly, live: {out:?}");
    }
    graph_log(app).await.iter().filter_map(account_of).collect()
}

/// The accounts of a request sequence with repeats folded: each account once if runs never overlapped.
fn turns(accounts: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in accounts {
        if out.last() != Some(a) {
            out.push(a.clone());
        }
    }
    out
}

// rule: SYNC-15
backend_test!(at_most_n_runs_at_once_and_backfill_blocks_back_to_back, one_run_at_a_time_builder, |app| {
    let accounts = three_accounts_due_together(&app).await;
    let turns = turns(&accounts);
    assert_eq!(turns.len(), 3, "one account's runs at a time, its blocks back to back: {turns:?}");
    assert_eq!(turns.iter().collect::<BTreeSet<_>>().len(), 3);
});

// rule: SYNC-15
backend_test!(the_measure_sees_overlap_when_runs_may_overlap, three_runs_at_once_builder, |app| {
    let accounts = three_accounts_due_together(&app).await;
    assert!(turns(&accounts).len() > 3, "three at once interleave: {accounts:?}");
});

// rule: SYNC-16
backend_test!(a_scheduled_run_keeps_expiring_soon_current, sync_builder, |app| {
    let app = &app;
    let login = app
        .post(
            &format!("/v1/meta/owners/{OWNER}/connection/code"),
            json!({"code": format!("user-token.{TOKEN}"), "redirectUri": "https://app.example.com/meta/retorno"}),
        )
        .await
        .ok();
    assert!(!login["adAccounts"].as_array().unwrap().is_empty());
    let c = connection(app, OWNER).await;
    assert_eq!(c["expiringSoon"], false);
    let expires_at = c["expiresAt"].as_i64().expect("a login token expires");
    assert!(expires_at - T0 > 50 * DAY, "traded for a long-lived token");
    site(app, "s", "BRL", "America/Sao_Paulo").await;
    link(app, "s", LOJA_X).await;
    settle(app).await;
    assert_eq!(connection(app, OWNER).await["expiringSoon"], false);

    // Fewer than 7 days left at the next scheduled run.
    app.clock.set(expires_at - 6 * DAY);
    let out = run_due(app).await;
    assert!(!synced_kinds(&out[LOJA_X]).is_empty(), "{out:?}");
    assert_eq!(connection(app, OWNER).await["expiringSoon"], true);
});

// ================================================================= REPORT

// rule: REPORT-02, REPORT-03, REPORT-04, REPORT-05, REPORT-06, REPORT-08, REPORT-10, REPORT-11
backend_test!(reports_carry_spend_that_adds_up_to_the_sample, sync_builder, |app| {
    let app = &app;
    connect(app, OWNER, TOKEN).await;
    for (s, cur, tz) in [
        ("loja", "BRL", "America/Sao_Paulo"),
        ("pet", "BRL", "America/Manaus"),
        ("cafe", "USD", "America/New_York"),
        ("lisboa", "BRL", "Europe/Lisbon"),
        ("bare", "BRL", "America/Sao_Paulo"),
    ] {
        site(app, s, cur, tz).await;
    }
    ad_lead(app, "loja", "k1", at("2026-11-10", 13), "120200000000000301").await;
    app.stage(
        "loja",
        "k1",
        json!({"stage": "won", "revenueCents": 50_000, "eventId": "w", "occurredAt": at("2026-11-10", 14)}),
    )
    .await
    .ok();
    ad_lead(app, "loja", "k2", at("2026-11-12", 13), "120200000000000303").await;
    app.lead("loja", "k3", at("2026-11-12", 14), json!({"origin": "organic_whatsapp"})).await.ok();
    ad_lead(app, "loja", "k4", at("2026-11-20", 13), "120200000000000306").await;
    ad_lead(app, "pet", "p1", at("2026-11-15", 13), "120200000000000304").await;
    ad_lead(app, "cafe", "c1", at("2026-11-15", 13), "120200000000000311").await;
    app.lead("bare", "b1", at("2026-11-15", 13), json!({"adId": "999000"})).await.ok();
    for (s, act) in [("loja", LOJA_X), ("pet", PET_MANIA), ("cafe", CAFE_BROOKLYN), ("lisboa", CASA_LISBOA)] {
        link(app, s, act).await;
    }
    settle(app).await;
    let (from, until) = (d("2026-11-01"), d("2026-11-29"));
    let [loja, pet, cafe, lisboa] =
        [LOJA_X, PET_MANIA, CAFE_BROOKLYN, CASA_LISBOA].map(|act| within(&synced(act), from, until));

    // One currency: everything adds up.
    let r = report(app, &["loja", "pet"], from, until).await;
    let both = merge(&loja, &pet);
    assert_eq!((r["currency"].as_str(), r["spendCurrency"].as_str()), (Some("BRL"), Some("BRL")));
    assert_eq!((r["currencyMismatch"].as_bool(), r["spendIncomplete"].as_bool()), (Some(false), Some(false)));
    assert_eq!(r["totals"]["leads"], 5);
    assert_eq!(amount(&r["totals"]), Some(sum(&both)));
    assert_eq!(amount(origin(&r, "ctwa_ad")), Some(sum(&both)), "the paid origin carries the spend");
    assert_eq!(origin(&r, "ctwa_ad")["leads"], 4);
    let organic = origin(&r, "organic_whatsapp");
    assert_eq!(
        (&organic["spendCents"], &organic["impressions"], &organic["clicks"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    let rows = ad_rows(&r);
    let spent = by_ad(&both);
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        spent.keys().cloned().collect(),
        "ads that spent, led or not"
    );
    for (ad, v) in &spent {
        let row = &rows[ad];
        assert_eq!(amount(row), Some(*v), "ad {ad}");
        let leads = ["120200000000000301", "120200000000000303", "120200000000000306", "120200000000000304"];
        assert_eq!(row["leads"], i64::from(leads.contains(&ad.as_str())), "ad {ad}");
        assert_eq!(row["siteId"], if sample_ad(ad).account == LOJA_X { "loja" } else { "pet" });
    }
    for c in r["campaigns"].as_array().unwrap() {
        let id = c["campaignId"].as_str().unwrap();
        let ads: Spend =
            both.iter().filter(|((_, ad), _)| sample_ad(ad).campaign_id == id).map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(amount(c), Some(sum(&ads)), "campaign {id}");
        assert_eq!(c["name"], sample_ads().iter().find(|a| a.campaign_id == id).unwrap().campaign_name);
        for s in c["adsets"].as_array().unwrap() {
            let sid = s["adsetId"].as_str().unwrap();
            let ads: Spend = both
                .iter()
                .filter(|((_, ad), _)| sample_ad(ad).adset_id == sid)
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            assert_eq!(amount(s), Some(sum(&ads)), "ad set {sid}");
        }
    }
    let by_site = r["bySite"].as_array().unwrap();
    assert_eq!(by_site[0]["siteId"], "loja");
    assert_eq!(
        (by_site[0]["leads"].as_i64(), by_site[0]["spendCents"].as_i64(), by_site[0]["spendCurrency"].as_str()),
        (Some(4), Some(sum(&loja).0), Some("BRL"))
    );
    assert_eq!(by_site[0]["paid"], json!({"leads": 3, "qualified": 1, "won": 1, "revenueCents": 50_000}));
    assert_eq!(by_site[0]["currencyMismatch"], false);
    assert_eq!((by_site[1]["siteId"].as_str(), by_site[1]["spendCents"].as_i64()), (Some("pet"), Some(sum(&pet).0)));
    let r = report(app, &["pet", "loja"], from, until).await;
    assert_eq!(r["bySite"][0]["siteId"], "pet", "request order");

    // Two billing currencies: no total, each site's spend in its own row.
    let r = report(app, &["loja", "cafe"], from, until).await;
    assert_eq!(
        (&r["currency"], &r["spendCurrency"], &r["currencyMismatch"]),
        (&Value::Null, &Value::Null, &json!(true))
    );
    assert_eq!(r["totals"]["spendCents"], Value::Null);
    assert_eq!(r["totals"]["leads"], 5);
    assert_eq!(origin(&r, "ctwa_ad")["spendCents"], Value::Null);
    assert_eq!(ad_rows(&r)["120200000000000301"]["spendCents"], Value::Null);
    assert_eq!(
        (r["bySite"][0]["spendCents"].as_i64(), r["bySite"][0]["spendCurrency"].as_str()),
        (Some(sum(&loja).0), Some("BRL"))
    );
    assert_eq!(
        (r["bySite"][1]["spendCents"].as_i64(), r["bySite"][1]["spendCurrency"].as_str()),
        (Some(sum(&cafe).0), Some("USD"))
    );
    assert_eq!(
        (&r["bySite"][0]["currencyMismatch"], &r["bySite"][1]["currencyMismatch"]),
        (&json!(false), &json!(false))
    );

    // A BRL site fed by a EUR account: the spend shows, marked as not comparable.
    let r = report(app, &["lisboa"], from, until).await;
    assert_eq!((r["currency"].as_str(), r["spendCurrency"].as_str()), (Some("BRL"), Some("EUR")));
    assert_eq!(r["currencyMismatch"], true);
    assert_eq!(amount(&r["totals"]), Some(sum(&lisboa)));
    assert_eq!(
        (r["bySite"][0]["currencyMismatch"].as_bool(), r["bySite"][0]["spendCents"].as_i64()),
        (Some(true), Some(sum(&lisboa).0))
    );

    // No account covers it: null, never 0; a covered ad that spent nothing: 0.
    let r = report(app, &["bare"], from, until).await;
    assert_eq!((&r["totals"]["spendCents"], &r["spendCurrency"]), (&Value::Null, &Value::Null));
    assert_eq!((&r["bySite"][0]["spendCents"], &r["bySite"][0]["spendCurrency"]), (&Value::Null, &Value::Null));
    assert_eq!(ad_rows(&r)["999000"]["spendCents"], Value::Null);
    let r = report(app, &["loja", "bare"], from, until).await;
    assert_eq!(amount(&r["totals"]), Some(sum(&loja)));
    assert_eq!(r["bySite"][1]["spendCents"], Value::Null);
    let quiet = within(&loja, d("2026-11-20"), until);
    assert!(!quiet.keys().any(|(_, ad)| ad == "120200000000000306"), "the paused ad is quiet");
    let r = report(app, &["loja"], d("2026-11-20"), until).await;
    assert_eq!(amount(&ad_rows(&r)["120200000000000306"]), Some((0, 0, 0)));
    assert_eq!(amount(&r["totals"]), Some(sum(&quiet)));

    // leadsDaily: each UTC day's spend of the scope, on account-local dates.
    let body = |extra: Value| {
        let mut b = json!({"siteIds": ["loja"], "from": ms(from), "to": ms(until) + DAY - 1});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let series = daily(app, body(json!({}))).await;
    assert_eq!(series.len(), 29);
    let per_day = by_day(&loja);
    for row in &series {
        let date = date_of(row["dayStart"].as_i64().unwrap());
        assert_eq!(row["spendCents"], per_day.get(&date).copied().unwrap_or(0), "{date}");
    }
    assert_eq!(series[9]["leads"], 1, "2026-11-10");
    assert_eq!(series[11]["leads"], 2, "2026-11-12");
    let paid = daily(app, body(json!({"origin": "ctwa_ad"}))).await;
    assert_eq!(
        paid.iter().map(|r| r["spendCents"].clone()).collect::<Vec<_>>(),
        series.iter().map(|r| r["spendCents"].clone()).collect::<Vec<_>>()
    );
    assert_eq!(paid[11]["leads"], 1);
    let organic = daily(app, body(json!({"origin": "organic_whatsapp"}))).await;
    assert!(organic.iter().all(|r| r["spendCents"].is_null()));
    assert_eq!(organic[11]["leads"], 1);
    let one: Spend =
        loja.iter().filter(|((_, ad), _)| ad == "120200000000000301").map(|(k, v)| (k.clone(), *v)).collect();
    let one_per_day = by_day(&one);
    for row in daily(app, body(json!({"adId": "120200000000000301"}))).await {
        let date = date_of(row["dayStart"].as_i64().unwrap());
        assert_eq!(row["spendCents"], one_per_day.get(&date).copied().unwrap_or(0), "{date}");
    }
    let both_per_day = by_day(&both);
    for row in daily(app, json!({"siteIds": ["loja", "pet"], "from": ms(from), "to": ms(until) + DAY - 1})).await {
        let date = date_of(row["dayStart"].as_i64().unwrap());
        assert_eq!(row["spendCents"], both_per_day.get(&date).copied().unwrap_or(0), "{date}");
    }
    for sites in [json!(["bare"]), json!(["loja", "cafe"])] {
        let series = daily(app, json!({"siteIds": sites, "from": ms(from), "to": ms(until) + DAY - 1})).await;
        assert!(series.iter().all(|r| r["spendCents"].is_null()), "{sites}");
    }
});

/// The spend budgets of the next test: Loja X's ads and days in November, exactly.
fn november_caps() -> (usize, usize) {
    let loja = within(&synced(LOJA_X), d("2026-11-01"), d("2026-11-29"));
    (by_ad(&loja).len(), by_day(&loja).len())
}

// rule: REPORT-12, REPORT-07
backend_test!(spend_budgets_only_mark_spend_incomplete_when_really_passed, november_caps_builder, |app| {
    let app = &app;
    let (ad_cap, day_cap) = november_caps();
    connect(app, OWNER, TOKEN).await;
    site(app, "loja", "BRL", "America/Sao_Paulo").await;
    site(app, "pet", "BRL", "America/Manaus").await;
    ad_lead(app, "loja", "k1", at("2026-11-20", 13), "120200000000000301").await;
    ad_lead(app, "pet", "p1", at("2026-11-20", 13), "120200000000000304").await;
    link(app, "loja", LOJA_X).await;
    link(app, "pet", PET_MANIA).await;
    settle(app).await;

    // Exactly at the budgets: complete.
    let (from, until) = (d("2026-11-01"), d("2026-11-29"));
    let loja = within(&synced(LOJA_X), from, until);
    let r = report(app, &["loja"], from, until).await;
    assert_eq!(r["spendIncomplete"], false);
    assert_eq!(amount(&r["totals"]), Some(sum(&loja)));
    assert_eq!(amount(&ad_rows(&r)["120200000000000301"]), Some(by_ad(&loja)["120200000000000301"]));

    // Past the per-ad budget only: the tree's spend is unknown, the totals exact.
    let (from2, until2) = (d("2026-11-16"), d("2026-11-29"));
    let both = merge(&within(&synced(LOJA_X), from2, until2), &within(&synced(PET_MANIA), from2, until2));
    let day_groups = by_day(&within(&synced(LOJA_X), from2, until2)).len()
        + by_day(&within(&synced(PET_MANIA), from2, until2)).len();
    assert!(by_ad(&both).len() > ad_cap && day_groups <= day_cap, "the test's premise");
    let r = report(app, &["loja", "pet"], from2, until2).await;
    assert_eq!(r["spendIncomplete"], true);
    assert_eq!(amount(&r["totals"]), Some(sum(&both)));
    assert_eq!(r["bySite"][0]["spendCents"].as_i64(), Some(sum(&within(&synced(LOJA_X), from2, until2)).0));
    assert_eq!(r["totals"]["leads"], 2);
    let rows = ad_rows(&r);
    assert_eq!(rows["120200000000000301"]["spendCents"], Value::Null);
    assert_eq!(rows["120200000000000301"]["leads"], 1);
    assert!(r["campaigns"].as_array().unwrap().iter().all(|c| c["spendCents"].is_null()));

    // Past the site-day budget: all spend unknown; leads still exact, never a failure.
    let r = report(app, &["loja", "pet"], from, until).await;
    assert_eq!(r["spendIncomplete"], true);
    assert_eq!((&r["totals"]["spendCents"], &r["bySite"][0]["spendCents"]), (&Value::Null, &Value::Null));
    assert_eq!(r["totals"]["leads"], 2);

    // The federated transport runs the same use case, so the same budgets
    // (it once honoured only the lead-row cap and answered spend here).
    let caller = rastrod::service::api::Caller {
        connection_id: "c1".into(),
        owner: "rastro:connection:c1".into(),
        public: false,
        sites: vec!["loja".into(), "pet".into()],
        permissions: vec!["analytics:read"],
        max_sites: 10,
    };
    let args = json!({"siteIds": ["loja", "pet"], "from": ms(from), "to": ms(until) + DAY - 1});
    let function = rastrod::service::api::Function::LeadsReport;
    let federated = rastrod::service::api::call(&app.state.cx, Some(&caller), function, args).await.unwrap();
    assert_eq!(federated.value(), &r);
});

// ================================================================= STATUS, LINK, LEAD, FAKE

// rule: STATUS-01, STATUS-02
backend_test!(meta_status_per_site_never_a_token, sync_builder, |app| {
    let app = &app;
    linked(app, "s1", "BRL", "America/Sao_Paulo", LOJA_X).await;
    site(app, "s2", "BRL", "America/Sao_Paulo").await;
    settle(app).await;
    let res = app.post("/v1/meta/status", json!({"siteIds": ["s2", "s1"]})).await;
    assert!(!res.text.contains(TOKEN) && !res.text.contains("rastro-fake-sample-token"), "{}", res.text);
    let s = res.ok();
    assert_eq!((s[0]["siteId"].as_str(), s[0]["linked"].as_bool()), (Some("s2"), Some(false)));
    assert_eq!(s[0]["adAccounts"], json!([]));
    assert_eq!((s[1]["siteId"].as_str(), s[1]["linked"].as_bool()), (Some("s1"), Some(true)));
    let a = &s[1]["adAccounts"][0];
    assert_eq!(a["adAccountId"], LOJA_X);
    assert_eq!(a["name"], "Agência Rastro — Loja X");
    assert_eq!((a["currency"].as_str(), a["timezone"].as_str()), (Some("BRL"), Some("America/Sao_Paulo")));
    assert_eq!(
        (a["syncState"].as_str(), &a["lastSyncAt"], &a["lastError"], &a["backfill"]),
        (Some("live"), &json!(T0), &Value::Null, &Value::Null)
    );
    assert_eq!(s[1]["pixel"]["enabled"], false);
    assert_eq!(s[1]["conversions"]["pending"], 0);
    for text in [
        app.get(&format!("/v1/meta/owners/{OWNER}/connection")).await.text,
        app.post("/v1/reports/leads", json!({"siteIds": ["s1"], "from": T0 - 30 * DAY, "to": T0})).await.text,
    ] {
        assert!(!text.contains("rastro-fake-sample-token"), "{text}");
    }
});

// rule: LINK-03, LINK-04
backend_test!(
    unlink_preview_adds_up_and_unlink_takes_the_spend_out_at_once_then_in_batches,
    small_removal_batch_builder,
    |app| {
        let app = &app;
        linked(app, "s", "BRL", "America/Sao_Paulo", LOJA_X).await;
        site(app, "p", "BRL", "America/Manaus").await;
        link(app, "p", PET_MANIA).await;
        settle(app).await;

        // The preview: what unlinking takes out, computed again from the sample.
        let all = synced(LOJA_X);
        let preview = app.get(&format!("/v1/sites/s/ad-accounts/{LOJA_X}/unlink-preview")).await.ok();
        let dates: BTreeSet<NaiveDate> = all.keys().map(|(date, _)| *date).collect();
        let campaigns: BTreeSet<&str> = all.keys().map(|(_, ad)| sample_ad(ad).campaign_id).collect();
        assert_eq!(
            preview,
            json!({"spendCents": sum(&all).0, "currency": "BRL", "days": dates.len(), "campaigns": campaigns.len(),
            "partial": false})
        );
        app.get(&format!("/v1/sites/p/ad-accounts/{LOJA_X}/unlink-preview")).await.err(404, "NOT_FOUND");

        // Unlinked without waking the janitor: the reports drop the spend at once,
        // the rows go in batches of 10.
        let pet_rows = synced(PET_MANIA).len();
        assert!(pet_rows > 20);
        app.state.cx.write_plain(|c| rastrod::service::meta::links::unlink(c, "p", PET_MANIA, None)).await.unwrap();
        let r = report(app, &["p"], d("2026-11-01"), d("2026-11-29")).await;
        assert_eq!(r["totals"]["spendCents"], Value::Null);
        assert_eq!(spend_rows(app, PET_MANIA).await.len(), pet_rows, "the rows are still there");
        let batch =
            app.state.cx.write_plain(|c| Ok(rastrod::store::meta::sync::delete_orphan_spend(c, 10)?)).await.unwrap();
        assert_eq!(batch, 10);
        assert_eq!(spend_rows(app, PET_MANIA).await.len(), pet_rows - 10);
        assert_eq!(spend_rows(app, LOJA_X).await, all, "a linked account's rows are no orphans");
        // One sweep deletes every batch.
        app.state.actors.sync.get().unwrap().send(Reconcile).await.unwrap();
        eventually(
            "the janitor to empty Pet Mania's spend",
            || async move { spend_rows(app, PET_MANIA).await.is_empty() },
        )
        .await;
        assert_eq!(spend_rows(app, LOJA_X).await, all);
        settle(app).await;

        // Unlinked over HTTP while a run is in flight: it writes nothing more.
        app.clock.advance(46 * MINUTE);
        fault(app, json!({"match": "/insights", "kind": "slow", "delayMs": 1500, "times": 1})).await;
        let before = graph_log(app).await.iter().filter(|r| is_insights(r, LOJA_X)).count();
        let st = app.state.clone();
        let in_flight = actix_web::rt::spawn(async move { meta_sync::run(&st.cx, LOJA_X).await });
        insights_seen(app, LOJA_X, before + 1).await;
        assert_eq!(unlink(app, "s", LOJA_X).await["removed"], true);
        let r = report(app, &["s"], d("2026-11-01"), d("2026-11-29")).await;
        assert_eq!(
            (&r["totals"]["spendCents"], &r["bySite"][0]["spendCents"]),
            (&Value::Null, &Value::Null),
            "at once"
        );
        assert_eq!(in_flight.await.unwrap().unwrap(), Outcome::Dropped);
        eventually("the janitor to empty Loja X's spend", || async move { spend_rows(app, LOJA_X).await.is_empty() })
            .await;
        run_due(app).await;
        assert_eq!(children(app).await, 0, "both unlinked: no actor");
        let s = status(app, &["s"]).await;
        assert_eq!(s[0]["linked"], false);
    }
);

// rule: FAKE-05
backend_test!(the_demo_agency_shows_spend_and_leads_for_its_last_30_days, sync_builder, |app| {
    let app = &app;
    let now = app.state.now();
    let leads = rastrod::demo::seed(&app.state.cx, now).await.unwrap();
    assert!(leads > 0);
    rastrod::demo::connect_agency(&app.state, now).await.unwrap();
    // The sample's last day is yesterday (the clock's), its dates canonical.
    assert_eq!(SAMPLE_LAST_DAY, d("2026-11-29"));
    let (from, until) = (d("2026-10-31"), d("2026-11-29"));
    let r = report(app, &["loja-x", "pet-mania"], from, until).await;
    let [loja, pet] = [LOJA_X, PET_MANIA].map(|act| within(&synced(act), from, until));
    assert_eq!(amount(&r["totals"]), Some(sum(&merge(&loja, &pet))));
    assert_eq!(r["totals"]["leads"].as_i64(), Some(leads as i64));
    for (i, s) in [&loja, &pet].into_iter().enumerate() {
        let row = &r["bySite"][i];
        assert_eq!(row["spendCents"].as_i64(), Some(sum(s).0));
        assert!(row["leads"].as_i64().unwrap() > 0 && row["paid"]["leads"].as_i64().unwrap() > 0);
    }
    // The demo's ads carry their own spend in the tree.
    let rows = ad_rows(&r);
    for (_, _, _, _, _, ad, name) in rastrod::demo::DEMO_ADS {
        assert_eq!(rows[*ad]["name"], *name);
        assert!(rows[*ad]["leads"].as_i64().unwrap() > 0);
        assert_eq!(amount(&rows[*ad]), by_ad(&merge(&loja, &pet)).get(*ad).copied());
    }
});
