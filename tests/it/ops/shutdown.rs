//! Graceful shutdown of the real binary: SIGTERM while writes are in flight.
//! Every write the daemon acknowledged is in the database afterwards, nothing
//! it did not acknowledge is half-written, and the process exits cleanly.

use std::process::{Command, Stdio};

use diesel::prelude::*;
use serde_json::json;

use crate::common::{HOST_KEY, T0, TestDb};

use crate::common::free_port;

#[actix_web::test]
async fn sigterm_lets_acknowledged_writes_finish() {
    let db = TestDb::sqlite();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .arg("serve")
        .env("RASTRO_DATABASE_URL", &db.url)
        .env("RASTRO_HOST_API_KEY", HOST_KEY)
        .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
        .env("RASTRO_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    crate::common::wait_healthy(&http, &base).await;
    http.post(format!("{base}/v1/sites"))
        .bearer_auth(HOST_KEY)
        .json(&json!({"siteId": "s1", "name": "S", "currency": "BRL", "timezone": "UTC", "ownerId": "o"}))
        .send()
        .await
        .unwrap();

    let mut tasks = Vec::new();
    for i in 0..300 {
        let (http, base) = (http.clone(), base.clone());
        tasks.push(actix_web::rt::spawn(async move {
            let res = http
                .post(format!("{base}/v1/sites/s1/leads"))
                .bearer_auth(HOST_KEY)
                .json(&json!({"leadKey": format!("k{i}"), "eventId": "e", "occurredAt": T0, "origin": "ctwa_ad"}))
                .send()
                .await;
            matches!(res, Ok(r) if r.status().as_u16() == 201)
        }));
    }
    // SIGTERM as soon as the daemon has acknowledged its first write.
    let first = tasks.remove(0).await.unwrap();
    let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let mut acknowledged = usize::from(first);
    for t in tasks {
        acknowledged += usize::from(t.await.unwrap());
    }
    let exit = child.wait().unwrap();
    assert!(exit.success(), "rastrod exited with {exit:?}");

    let mut conn = SqliteConnection::establish(&db.sqlite_path().unwrap().to_string_lossy()).unwrap();
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let leads: Vec<N> = diesel::sql_query("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM leads").load(&mut conn).unwrap();
    let rollup: Vec<N> = diesel::sql_query("SELECT CAST(COALESCE(SUM(leads), 0) AS BIGINT) AS n FROM lead_rollups")
        .load(&mut conn)
        .unwrap();
    assert!(acknowledged >= 1);
    assert_eq!(leads[0].n as usize, acknowledged, "every acknowledged write, and only those, is stored");
    assert_eq!(rollup[0].n, leads[0].n, "each stored lead is counted once");
}

// rule: SYNC-13, CAPI-08
/// On SIGTERM the supervisors stop their children after the run in flight: a
/// sync caught in the middle of a Graph call finishes and releases its lease
/// before the writer's last commit, so no lease is left held.
#[actix_web::test]
async fn sigterm_leaves_no_lease_held() {
    let fake = rastrod::meta::fake::start("127.0.0.1:0").await.unwrap();
    let http = reqwest::Client::new();
    // Every insights call answers after a while: SIGTERM lands in the middle of one.
    http.post(format!("{}/__fake/faults", fake.base_url))
        .json(&json!({"match": "insights", "kind": "slow", "delayMs": 1500, "times": 1000}))
        .send()
        .await
        .unwrap();
    let db = TestDb::sqlite();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .arg("serve")
        .env("RASTRO_DATABASE_URL", &db.url)
        .env("RASTRO_HOST_API_KEY", HOST_KEY)
        .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
        .env("RASTRO_META_GRAPH_URL", &fake.base_url)
        .env("RASTRO_SECRETS_KEY", rastrod::ids::secrets_key().unwrap())
        .env("RASTRO_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    crate::common::wait_healthy(&http, &base).await;
    let call = |req: reqwest::RequestBuilder, body: serde_json::Value| async move {
        let res = req.bearer_auth(HOST_KEY).json(&body).send().await.unwrap();
        assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    };
    call(
        http.post(format!("{base}/v1/sites")),
        json!({"siteId": "s1", "name": "S", "currency": "BRL", "timezone": "UTC", "ownerId": "o"}),
    )
    .await;
    let owner = "agency:shutdown";
    call(
        http.put(format!("{base}/v1/meta/owners/{owner}/connection")),
        json!({"accessToken": "rastro-fake-sample-token:0"}),
    )
    .await;
    call(
        http.post(format!("{base}/v1/sites/s1/ad-accounts")),
        json!({"ownerKey": owner, "adAccountId": rastrod::meta::fake::sample::LOJA_X}),
    )
    .await;
    // Wait until the account's sync is in the middle of a Graph call.
    let mut in_flight = false;
    for _ in 0..200 {
        let v: serde_json::Value =
            http.get(format!("{}/__fake/in-flight", fake.base_url)).send().await.unwrap().json().await.unwrap();
        if v["now"].as_u64().unwrap_or(0) > 0 {
            in_flight = true;
            break;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(in_flight, "the sync never called Graph");
    let status = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "rastrod exited with {exit:?}");

    let mut conn = SqliteConnection::establish(&db.sqlite_path().unwrap().to_string_lossy()).unwrap();
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let count = |sql: &str, conn: &mut SqliteConnection| diesel::sql_query(sql).load::<N>(conn).unwrap()[0].n;
    assert_eq!(count("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM account_syncs", &mut conn), 1, "the link synced");
    let held = "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM account_syncs WHERE lease_run_id IS NOT NULL";
    assert_eq!(count(held, &mut conn), 0, "no account lease is left held");
    let held = "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM conversions WHERE lease_owner IS NOT NULL";
    assert_eq!(count(held, &mut conn), 0, "no conversion lease is left held");
}
