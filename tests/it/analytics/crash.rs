//! Web analytics across a kill -9 of the real binary: every event the daemon
//! acknowledged is stored, and after a restart the report actor applies each
//! stored event to the rollups exactly once. The slow tier (`slow_tests!`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use serde_json::json;

use crate::analytics::{HOST, UA, pageview};
use crate::common::{HOST_KEY, TestDb, free_port};

fn serve(db: &TestDb, port: u16, rollup_interval: &str) -> Child {
    crate::common::slow_tier("kills the real binary");
    Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .arg("serve")
        .env("RASTRO_DATABASE_URL", &db.url)
        .env("RASTRO_HOST_API_KEY", HOST_KEY)
        .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
        .env("RASTRO_ROLLUP_INTERVAL", rollup_interval)
        .env("RASTRO_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[derive(QueryableByName)]
struct N {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

fn count(conn: &mut SqliteConnection, sql: &str) -> i64 {
    diesel::sql_query(sql).load::<N>(conn).unwrap()[0].n
}

// rule: STORE-01
// rule: STORE-04
async fn a_kill_9_loses_no_acknowledged_event_and_counts_none_twice() {
    let db = TestDb::sqlite();
    let port = free_port();
    // Rollups wait: the kill comes between acceptance and application.
    let mut child = serve(&db, port, "1h");
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    crate::common::wait_healthy(&http, &base).await;
    http.post(format!("{base}/v1/sites"))
        .bearer_auth(HOST_KEY)
        .json(&json!({"siteId": "loja", "name": "L", "currency": "BRL", "timezone": "UTC", "ownerId": "o", "domains": [HOST]}))
        .send()
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..400 {
        let (http, base) = (http.clone(), base.clone());
        tasks.push(actix_web::rt::spawn(async move {
            let body = json!({"siteId": "loja", "visitorId": format!("v_visitor{i:04}"), "events": [pageview(&i.to_string(), "/")]});
            let res = http.post(format!("{base}/rastro/events")).header("user-agent", UA).body(body.to_string()).send().await;
            match res {
                Ok(r) if r.status().as_u16() == 200 => r.json::<serde_json::Value>().await.ok().and_then(|v| v["accepted"].as_u64()).unwrap_or(0),
                _ => 0,
            }
        }));
    }
    let first = tasks.remove(0).await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let mut acknowledged = first;
    for t in tasks {
        acknowledged += t.await.unwrap();
    }
    assert!(acknowledged >= 1);
    let path = db.sqlite_path().unwrap().to_string_lossy().to_string();
    let stored = {
        let mut conn = SqliteConnection::establish(&path).unwrap();
        count(&mut conn, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_events")
    };
    assert!(stored as u64 >= acknowledged, "{stored} stored, {acknowledged} acknowledged");

    // Restart: the report actor applies the outbox left behind, once.
    let port = free_port();
    let mut child = serve(&db, port, "100ms");
    crate::common::wait_healthy(&http, &format!("http://127.0.0.1:{port}")).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut conn = SqliteConnection::establish(&path).unwrap();
    while count(&mut conn, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_outbox_packs") > 0 {
        assert!(Instant::now() < deadline, "the outbox was not applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let counted =
        count(&mut conn, "SELECT CAST(COALESCE(SUM(pageviews), 0) AS BIGINT) AS n FROM web_counters WHERE tier = 'd'");
    let sessions =
        count(&mut conn, "SELECT CAST(COALESCE(SUM(sessions), 0) AS BIGINT) AS n FROM web_counters WHERE tier = 'd'");
    assert_eq!(counted, stored, "each stored pageview counted once");
    assert_eq!(sessions, stored, "one session per visitor");
    child.kill().unwrap();
    child.wait().unwrap();
}

fn serve_with_retention(db: &TestDb, port: u16) -> Child {
    crate::common::slow_tier("kills the real binary");
    Command::new(env!("CARGO_BIN_EXE_rastrod"))
        .arg("serve")
        .env("RASTRO_DATABASE_URL", &db.url)
        .env("RASTRO_HOST_API_KEY", HOST_KEY)
        .env("RASTRO_LISTEN", format!("127.0.0.1:{port}"))
        .env("RASTRO_RETENTION_INTERVAL", "100ms")
        .env("RASTRO_RETENTION_BATCH", "1")
        .env("RASTRO_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

// rule: RET-04
async fn retention_killed_midway_resumes_after_a_restart() {
    let db = TestDb::sqlite();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let mut child = serve_with_retention(&db, port);
    crate::common::wait_healthy(&http, &base).await;
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("{base}{path}")).bearer_auth(HOST_KEY).json(&body).send()
    };
    post(
        "/v1/sites",
        json!({"siteId": "loja", "name": "L", "currency": "BRL", "timezone": "UTC", "ownerId": "o", "domains": [HOST]}),
    )
    .await
    .unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let (old, recent) = (now - 40 * 86_400_000, now - 86_400_000);
    let mut lines = String::new();
    for i in 0..2100 {
        let at = if i < 2000 { old + i } else { recent + i };
        lines.push_str(&format!(
            "{}\n",
            json!({"type": "pageview", "occurredAt": at, "visitorId": format!("v_visitor{i:04}"),
                "pageviewId": format!("p_{i:0>16}"), "path": "/"})
        ));
    }
    let imported = http
        .post(format!("{base}/v1/sites/loja/analytics/import?importId=history"))
        .bearer_auth(HOST_KEY)
        .header("content-type", "application/x-ndjson")
        .body(lines)
        .send()
        .await
        .unwrap();
    assert_eq!(imported.status(), 201);
    let path = db.sqlite_path().unwrap().to_string_lossy().to_string();
    let mut conn = SqliteConnection::establish(&path).unwrap();
    let events = "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_events";
    assert_eq!(count(&mut conn, events), 2100, "every line stored");
    let policy = json!({"siteId": "loja", "eventsDays": 20, "sessionsDays": 20, "conversionsDays": 20,
        "profilesDays": 20, "aggregatesDays": 30});
    assert_eq!(post("/v1/analytics/setRetentionPolicy", policy).await.unwrap().status(), 200);
    // Killed while the first round deletes, one row a transaction: as soon as
    // some old rows are gone and most are not (observed, not guessed by a sleep).
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&mut conn, events) == 2100 {
        assert!(Instant::now() < deadline, "retention did not start");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = count(&mut conn, events);
    // The kill came midway: old rows were deleted and old rows remain, so
    // only a resumed run can delete the rest.
    assert!(left < 2100 && left > 100, "killed midway: {left} of 2100 rows left (100 recent)");
    println!("killed with {} old events left", left - 100);

    // Restarted, the actor goes on until nothing is past the cutoffs; the recent rows stay.
    let port = free_port();
    let mut child = serve_with_retention(&db, port);
    crate::common::wait_healthy(&http, &format!("http://127.0.0.1:{port}")).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&mut conn, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_events") > 100
        || count(&mut conn, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_sessions") > 100
    {
        assert!(Instant::now() < deadline, "retention did not resume");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count(&mut conn, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_events"), 100);
    assert_eq!(count(&mut conn, "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_sessions"), 100);
    let kept = count(
        &mut conn,
        &format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM web_events WHERE occurred_at >= {recent}"),
    );
    assert_eq!(kept, 100);
    child.kill().unwrap();
    child.wait().unwrap();
}

crate::slow_tests!(
    a_kill_9_loses_no_acknowledged_event_and_counts_none_twice,
    retention_killed_midway_resumes_after_a_restart
);
