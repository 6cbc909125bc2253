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
