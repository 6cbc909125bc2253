//! Two rastrod processes on one PostgreSQL: the lease lets one run at a time
//! per account, and when a process dies holding a lease, another takes the
//! account over once the lease ends.

use std::collections::BTreeMap;
use std::sync::Arc;

use rastrod::actors::supervisor::RunDue;
use rastrod::clock::{MINUTE_MS, ManualClock};
use rastrod::config::Config;
use rastrod::server::RunningServer;
use rastrod::service::meta::connection::{self as meta_connection, SecretString, SetMetaConnection};
use rastrod::service::meta::links::{self as meta_links, LinkAdAccount};
use rastrod::service::meta::sync::Outcome;
use rastrod::service::meta::sync::schedule::Kind;
use rastrod::service::sites::{self, CreateSite};

use crate::common::{T0, TestDb};

/// One daemon as `rastrod serve` starts it, on a loopback port, over `url`.
async fn process(url: &str, key: &str, clock: Arc<ManualClock>) -> RunningServer {
    let env = [
        ("RASTRO_DATABASE_URL", url),
        ("RASTRO_META_FAKE", "true"),
        ("RASTRO_SECRETS_KEY", key),
        ("RASTRO_SYNC_LEASE", "15m"),
        ("RASTRO_DATABASE_POOL_SIZE", "4"),
        ("RASTRO_LISTEN", "127.0.0.1:0"),
        ("RASTRO_WORKERS", "1"),
        // The tests apply the rollups themselves, both processes at once; the
        // actors' own 500 ms round would take the outbox first on a slow machine.
        ("RASTRO_ROLLUP_INTERVAL", "1h"),
    ];
    serve(&env, clock).await
}

/// A daemon started as `rastrod serve` starts it, with `env` as its whole environment.
async fn serve(env: &[(&str, &str)], clock: Arc<ManualClock>) -> RunningServer {
    let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let config = Config::load_from(None, &env).unwrap();
    let listener = rastrod::server::bind(&config).unwrap();
    rastrod::server::start(config, clock, listener).await.unwrap()
}

/// Two daemons on one fresh PostgreSQL schema, with one secrets key and one clock.
async fn two_processes(db: &TestDb, clock: &Arc<ManualClock>) -> (RunningServer, RunningServer) {
    let key = rastrod::ids::secrets_key().unwrap();
    (process(&db.url, &key, clock.clone()).await, process(&db.url, &key, clock.clone()).await)
}

/// A site of owner `o` on `domains`.
fn site(id: &str, domains: Option<Vec<String>>) -> CreateSite {
    CreateSite {
        site_id: id.into(),
        name: id.into(),
        currency: "BRL".into(),
        timezone: "America/Sao_Paulo".into(),
        owner_id: "o".into(),
        domains,
        cookieless: None,
    }
}

fn count(outcomes: &[BTreeMap<String, Vec<Outcome>>], account: &str, kind: Kind) -> usize {
    outcomes.iter().flat_map(|o| o.get(account)).flatten().filter(|o| **o == Outcome::Synced(kind)).count()
}

// rule: SYNC-13
#[actix_web::test]
async fn two_processes_never_sync_one_account_at_once_and_replace_a_dead_one() {
    let Some(db) = TestDb::postgres() else { return };
    let clock = ManualClock::new(T0);
    let (server_a, server_b) = two_processes(&db, &clock).await;
    let (a, b) = (server_a.state.clone(), server_b.state.clone());

    let now = rastrod::clock::Clock::now_ms(&*clock);
    let site = site("loja-x", None);
    a.cx.write_plain(move |c| sites::create(c, now, site)).await.unwrap();
    let token =
        SetMetaConnection { access_token: SecretString(rastrod::config::Secret::new("rastro-fake-sample-token:0")) };
    meta_connection::set_connection(&a.cx, "agency", token).await.unwrap();
    let accounts = ["act_1029384756", "act_2038475610"];
    // The links are written by a third handle on the database, which wakes no
    // actor: through A, the commit would wake A's account actors, whose runs
    // (racing the RunDue below, and not in its outcomes) would hide the count.
    let third = rastrod::db::Db::open(&db.url, 1, 16, 16).unwrap();
    for account in accounts {
        let link = LinkAdAccount { owner_key: "agency".into(), ad_account_id: account.into(), only_own: false };
        third.write(move |c| meta_links::link(c, now, "loja-x", link).map(|_| ())).await.unwrap();
    }

    // Both processes run everything due, at the same time.
    let (ra, rb) = (a.actors.sync.get().unwrap().send(RunDue), b.actors.sync.get().unwrap().send(RunDue));
    let (ra, rb) = (ra.await.unwrap().unwrap(), rb.await.unwrap().unwrap());
    let outcomes = [ra, rb];
    for account in accounts {
        assert_eq!(count(&outcomes, account, Kind::Backfill), 3, "{account}: each backfill block ran once in all");
    }

    // Process A "dies" holding a lease: its run id stays on the row.
    let dead_until = rastrod::clock::Clock::now_ms(&*clock) + 15 * MINUTE_MS;
    let account = accounts[0].to_string();
    a.cx.write_plain(move |c| {
        let mut row = rastrod::store::meta::sync::get(c, &account)?.unwrap();
        row.lease_run_id = Some("dead-process".into());
        row.lease_until = Some(dead_until);
        row.next_run_at = 0;
        rastrod::store::meta::sync::save(c, &row)?;
        Ok(())
    })
    .await
    .unwrap();
    let account = accounts[0].to_string();
    let before = b.cx.read(move |c| Ok(rastrod::store::meta::sync::get(c, &account)?.unwrap())).await.unwrap();
    assert_eq!((before.lease_run_id.as_deref(), before.lease_until), (Some("dead-process"), Some(dead_until)));
    let busy = rastrod::service::meta::sync::run(&b.cx, accounts[0]).await.unwrap();
    assert_eq!(busy, Outcome::Busy, "the live lease keeps B out");
    clock.advance(15 * MINUTE_MS + 1);
    let taken = rastrod::service::meta::sync::run(&b.cx, accounts[0]).await.unwrap();
    assert_ne!(taken, Outcome::Busy, "B takes the account over when the lease ends");
    let account = accounts[0].to_string();
    let row = b.cx.read(move |c| Ok(rastrod::store::meta::sync::get(c, &account)?.unwrap())).await.unwrap();
    assert!(row.last_error.as_deref().is_some_and(|e| e.starts_with("RUN_TIMEOUT")), "{:?}", row.last_error);
    assert_eq!(row.lease_run_id, None);
    // The next successful run clears it.
    clock.advance(45 * MINUTE_MS);
    assert_eq!(rastrod::service::meta::sync::run(&b.cx, accounts[0]).await.unwrap(), Outcome::Synced(Kind::Live));
    let account = accounts[0].to_string();
    let row = b.cx.read(move |c| Ok(rastrod::store::meta::sync::get(c, &account)?.unwrap())).await.unwrap();
    assert_eq!(row.last_error, None);
    server_a.stop().await.unwrap();
    server_b.stop().await.unwrap();
}

/// A process taking the lease while another's run is finishing waits for that
/// run's commit, and takes the freed lease with the state the run wrote. (Read
/// before the row was locked, the state could predate a run that committed
/// just before the update took the freed lease: the same backfill block then
/// ran twice, once in each process.)
// rule: SYNC-13
#[test]
fn a_lease_taken_as_another_run_finishes_carries_that_runs_state() {
    use rastrod::store::meta::sync::{self as store, SyncRow};
    let Some((db, mut conn)) = crate::two_transactions::pg_database() else { return };
    let now = T0;
    let mut row = SyncRow::new("act_1", "loja", now);
    row.backfill_total = 3;
    row.lease_run_id = Some("run-a".into());
    row.lease_until = Some(now + 15 * MINUTE_MS);
    store::insert(&mut conn, &row).unwrap();
    let taken = std::sync::Mutex::new(None);
    crate::two_transactions::two_at_once(
        &db.url,
        &mut conn,
        // Run A writes its first block and releases the lease, and commits once B waits.
        |c| {
            let mut row = store::get(c, "act_1")?.unwrap();
            row.backfill_done = 1;
            row.lease_run_id = None;
            row.lease_until = None;
            Ok(store::save(c, &row)?)
        },
        |c| {
            *taken.lock().unwrap() = Some(store::take_lease(c, "act_1", "run-b", now, now + 15 * MINUTE_MS)?);
            Ok(())
        },
    );
    let taken = taken.into_inner().unwrap().expect("B ran").expect("B took the freed lease");
    assert_eq!(taken.backfill_done, 1, "B starts from the block A finished");
    assert_eq!(taken.lease_run_id, None, "the lease B took was free, not replaced");
}

// rule: STORE-07
// rule: STORE-04
// rule: STORE-12
/// Two processes take one visitor's batches at the same time: one session,
/// and their report actors, draining together, count each event once. Each
/// process keeps the session as its own last write left it, so every batch
/// after the other process's must see the version moved and read the row.
#[actix_web::test]
async fn two_processes_share_one_visitors_session_and_count_each_event_once() {
    let Some(db) = TestDb::postgres() else { return };
    let clock = ManualClock::new(T0);
    let (server_a, server_b) = two_processes(&db, &clock).await;
    let (a, b) = (server_a.state.clone(), server_b.state.clone());
    let now = rastrod::clock::Clock::now_ms(&*clock);
    let site = site("loja", Some(vec![crate::analytics::HOST.into()]));
    a.cx.write_plain(move |c| sites::create(c, now, site)).await.unwrap();
    let http = reqwest::Client::new();
    let mut sends = Vec::new();
    for i in 0..20 {
        let addr = if i % 2 == 0 { server_a.addr } else { server_b.addr };
        let body = serde_json::json!({"siteId": "loja", "visitorId": "v_visitor0001",
            "events": [crate::analytics::pageview(&i.to_string(), &format!("/p/{i}"))]});
        let req = http
            .post(format!("http://{addr}/rastro/events"))
            .header("user-agent", crate::analytics::UA)
            .body(body.to_string());
        sends.push(tokio::spawn(async move { req.send().await.unwrap().json::<serde_json::Value>().await.unwrap() }));
    }
    let mut answers = Vec::new();
    for s in sends {
        answers.push(s.await.unwrap());
    }
    let sessions: std::collections::BTreeSet<String> =
        answers.iter().map(|a| a["sessionId"].as_str().unwrap().to_string()).collect();
    assert_eq!(sessions.len(), 1, "one session for one gap: {answers:?}");
    // Each batch built on the other process's last write, never on its own copy.
    let id = sessions.into_iter().next().unwrap();
    let stored = a.cx.read(move |c| Ok(rastrod::store::analytics::session(c, &id)?)).await.unwrap().unwrap();
    assert_eq!(stored.pageviews, 20, "{stored:?}");
    let (da, db_) = (rastrod::actors::report::drain(&a.cx), rastrod::actors::report::drain(&b.cx));
    let (na, nb) = tokio::join!(da, db_);
    assert_eq!(na.unwrap() + nb.unwrap(), 20, "each outbox row applied by one process");
    let day = T0 - T0 % 86_400_000;
    let args: rastrod::service::analytics::reports::overview::OverviewArgs =
        serde_json::from_value(serde_json::json!({"siteIds": ["loja"], "from": day, "to": day + 86_400_000 - 1}))
            .unwrap();
    let o = a.cx.read(move |c| rastrod::service::analytics::reports::overview::overview(c, args, false)).await.unwrap();
    let o = serde_json::to_value(o).unwrap();
    assert_eq!((o["totals"]["pageviews"].as_i64(), o["totals"]["sessions"].as_i64()), (Some(20), Some(1)));
    assert_eq!(o["totals"]["visitors"], 1);
    // rule: PAGE-09
    // A cursor made by one process is good on the other: one key for the database.
    let (ka, kb) = (
        rastrod::service::analytics::reports::api::cursor_key(&a.cx).await.unwrap(),
        rastrod::service::analytics::reports::api::cursor_key(&b.cx).await.unwrap(),
    );
    assert_eq!(ka, kb);
    let list = move |cursor: Option<String>| rastrod::service::analytics::reports::sessions::ListSessionsArgs {
        site_id: "loja".into(),
        from: day,
        to: day + 86_400_000 - 1,
        pagination_opts: serde_json::from_value(serde_json::json!({"numItems": 1, "cursor": cursor})).unwrap(),
        filters: Vec::new(),
    };
    let first =
        a.cx.read(move |c| rastrod::service::analytics::reports::sessions::list_sessions(c, &ka, list(None)))
            .await
            .unwrap();
    let cursor = first.continue_cursor.clone();
    let next =
        b.cx.read(move |c| rastrod::service::analytics::reports::sessions::list_sessions(c, &kb, list(Some(cursor))))
            .await
            .unwrap();
    assert_eq!((next.page.len(), next.is_done), (0, true));
    server_a.stop().await.unwrap();
    server_b.stop().await.unwrap();
}

// rule: STORE-12
/// One visitor's batches go to two processes in turn, each after the last is
/// answered: each process kept the session as its own previous write left
/// it, the other has moved it since, so every batch must see the version
/// moved and read the row (a copy used anyway would count from its own
/// stale pageviews).
#[actix_web::test]
async fn two_processes_taking_turns_build_on_each_others_writes() {
    let Some(db) = TestDb::postgres() else { return };
    let clock = ManualClock::new(T0);
    let (server_a, server_b) = two_processes(&db, &clock).await;
    let now = rastrod::clock::Clock::now_ms(&*clock);
    let site = site("loja", Some(vec![crate::analytics::HOST.into()]));
    server_a.state.cx.write_plain(move |c| sites::create(c, now, site)).await.unwrap();
    let http = reqwest::Client::new();
    let mut sessions = std::collections::BTreeSet::new();
    for i in 0..12 {
        let addr = if i % 2 == 0 { server_a.addr } else { server_b.addr };
        let body = serde_json::json!({"siteId": "loja", "visitorId": "v_visitor0001",
            "events": [crate::analytics::pageview(&i.to_string(), &format!("/p/{i}"))]});
        let a: serde_json::Value = http
            .post(format!("http://{addr}/rastro/events"))
            .header("user-agent", crate::analytics::UA)
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(a["accepted"], 1, "{a}");
        sessions.insert(a["sessionId"].as_str().unwrap().to_string());
    }
    assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
    let id = sessions.into_iter().next().unwrap();
    let cx = server_b.state.cx.clone();
    let stored = cx.read(move |c| Ok(rastrod::store::analytics::session(c, &id)?)).await.unwrap().unwrap();
    assert_eq!((stored.pageviews, stored.exit_path.as_str()), (12, "/p/11"), "{stored:?}");
    let memory = |st: &rastrod::server::RunningServer| st.state.cx.analytics.tracker.session_figures();
    assert_eq!(
        (memory(&server_a), memory(&server_b)),
        ((0, 5), (0, 6)),
        "every batch after the first read its session"
    );
    server_a.stop().await.unwrap();
    server_b.stop().await.unwrap();
}

/// A daemon with Meta Lead Ads on, its Graph calls going to `graph` (one fake shared by both).
async fn lead_ads_process(url: &str, key: &str, clock: Arc<ManualClock>, graph: &str) -> RunningServer {
    let env = [
        ("RASTRO_DATABASE_URL", url),
        ("RASTRO_META_GRAPH_URL", graph),
        ("RASTRO_META_APP_ID", rastrod::meta::fake::login::FAKE_APP_ID),
        ("RASTRO_META_APP_SECRET", "rastro-fake-app-secret"),
        ("RASTRO_SECRETS_KEY", key),
        ("RASTRO_FEDERATION_META_LEADS", "true"),
        ("RASTRO_META_WEBHOOK_VERIFY_TOKEN", "verify-token-0123456789"),
        ("RASTRO_DATABASE_POOL_SIZE", "4"),
        ("RASTRO_LISTEN", "127.0.0.1:0"),
        ("RASTRO_WORKERS", "1"),
    ];
    serve(&env, clock).await
}

// rule: LA-15
#[actix_web::test]
async fn two_processes_never_work_one_page_at_once_nor_make_a_form_lead_twice() {
    use rastrod::meta::fake::leads::{FORM_AGENDA, FORM_ORCAMENTO, PAGE_LOJA_X};
    use rastrod::service::meta::lead_ads::{self, handler};
    use serde_json::{Value, json};
    let Some(db) = TestDb::postgres() else { return };
    let clock = ManualClock::new(T0);
    let fake = rastrod::meta::fake::start_at("127.0.0.1:0", T0).await.unwrap();
    let key = rastrod::ids::secrets_key().unwrap();
    let server_a = lead_ads_process(&db.url, &key, clock.clone(), &fake.base_url).await;
    let server_b = lead_ads_process(&db.url, &key, clock.clone(), &fake.base_url).await;
    let (a, b) = (server_a.state.clone(), server_b.state.clone());
    let now = rastrod::clock::Clock::now_ms(&*clock);
    a.cx.write_plain(move |c| sites::create(c, now, site("loja-x", None))).await.unwrap();
    let token = SetMetaConnection { access_token: SecretString(rastrod::config::Secret::new("tok-agency-1")) };
    meta_connection::set_connection(&a.cx, "agency", token).await.unwrap();
    lead_ads::list_pages(&a.cx, "agency", &["loja-x".to_string()]).await.unwrap();
    lead_ads::link_page(&a.cx, "agency", "loja-x", PAGE_LOJA_X).await.unwrap();
    let secret = "handler-secret-0123456789abcdef-0123".to_string();
    let set = handler::SetFormLeadHandler { url: format!("{}/__fake/handler", fake.base_url), secret };
    handler::set(&a.cx, "loja-x", set).await.unwrap();
    // Forty leads, their webhooks posted to either process, while both drain the Page at once.
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for i in 0..40 {
        let to = if i % 2 == 0 { server_a.addr } else { server_b.addr };
        let form = if i % 3 == 0 { FORM_AGENDA } else { FORM_ORCAMENTO };
        let body = json!({"pageId": PAGE_LOJA_X, "formId": form, "createdTime": T0 / 1000,
            "deliverTo": format!("http://{to}/rastro/meta/leadgen"), "appSecret": "rastro-fake-app-secret"});
        let made: Value = http
            .post(format!("{}/__fake/leadgen", fake.base_url))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(made["webhookStatus"], 200, "{made}");
        ids.push(made["leadgenId"].as_str().unwrap().to_string());
        if i % 10 == 9 {
            let _ = tokio::join!(page_leads_drain(&a), page_leads_drain(&b));
        }
    }
    for _ in 0..5 {
        let _ = tokio::join!(page_leads_drain(&a), page_leads_drain(&b));
    }
    // Every receipt made exactly one lead and one delivery; each lead was fetched once in all.
    #[derive(diesel::QueryableByName)]
    struct Text {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let texts = |sql: &'static str| a.cx.read(move |c| Ok(rastrod::db::sql::RawQuery::new(sql).load::<Text>(c)?));
    let undelivered =
        texts("SELECT leadgen_id AS v FROM meta_lead_receipts WHERE status <> 'delivered'").await.unwrap();
    assert!(undelivered.is_empty(), "{} receipts not delivered", undelivered.len());
    let leads: Vec<String> =
        texts("SELECT lead_key AS v FROM leads ORDER BY lead_key").await.unwrap().into_iter().map(|t| t.v).collect();
    let mut want: Vec<String> = ids.iter().map(|id| format!("fbl_{id}")).collect();
    want.sort();
    assert_eq!(leads, want, "one lead per leadgen id");
    let delivered: Value =
        http.get(format!("{}/__fake/handler/deliveries", fake.base_url)).send().await.unwrap().json().await.unwrap();
    let mut got: Vec<String> =
        delivered.as_array().unwrap().iter().map(|d| d["body"]["leadgenId"].as_str().unwrap().to_string()).collect();
    got.sort();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(got, sorted, "one delivery per lead");
    let log: Value = http.get(format!("{}/__fake/requests", fake.base_url)).send().await.unwrap().json().await.unwrap();
    for id in &ids {
        let fetches = log.as_array().unwrap().iter().filter(|r| r["path"] == format!("/v25.0/{id}")).count();
        assert_eq!(fetches, 1, "{id} fetched once: one process held the Page at a time");
    }
    server_a.stop().await.unwrap();
    server_b.stop().await.unwrap();
    fake.stop().await;
}

async fn page_leads_drain(
    s: &rastrod::http::AppState,
) -> rastrod::error::Result<rastrod::service::meta::lead_ads::fetch::PageRound> {
    rastrod::actors::page_leads::drain(&s.actors).await
}
