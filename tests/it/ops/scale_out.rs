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
    let env: BTreeMap<String, String> = [
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
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
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
    eprintln!(
        "before: lease {:?} until {:?} now {}",
        before.lease_run_id,
        before.lease_until,
        rastrod::clock::Clock::now_ms(&*clock)
    );
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

// rule: STORE-07
// rule: STORE-04
/// Two processes take one visitor's batches at the same time: one session,
/// and their report actors, draining together, count each event once.
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
    let (da, db_) = (rastrod::actors::report::drain(&a.cx), rastrod::actors::report::drain(&b.cx));
    let (na, nb) = tokio::join!(da, db_);
    assert_eq!(na.unwrap() + nb.unwrap(), 20, "each outbox row applied by one process");
    let day = T0 - T0 % 86_400_000;
    let args = rastrod::service::analytics::reports::overview::OverviewArgs {
        site_ids: vec!["loja".into()],
        from: day,
        to: day + 86_400_000 - 1,
        interval: Default::default(),
        compare: None,
    };
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
