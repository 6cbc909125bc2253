//! The tracker keeps each visitor's current session as its last write left
//! it and uses it only while the stored version is the kept one (issue 25,
//! rule STORE-12). Another handle on the same database stands for every
//! other writer (another process, a conversion, retention, forget): what it
//! changes is always what the next batch builds on, and `/metrics` shows
//! when the kept row stood in for a read.

use diesel::RunQueryDsl;
use serde_json::Value;

use crate::analytics::{analytics_builder, pageview, site, track};
use crate::backend_test;
use crate::common::{Backend, TestApp};
use crate::federation::FedBuilder;
use rastrod::db::{AnyConnection, Db};
use rastrod::store::analytics as store;

/// The tracker batches whose current session came from memory, and from a read.
async fn sources(app: &TestApp) -> (u64, u64) {
    let text = app.with_key(None).get("/metrics").await.text;
    let figure = |source: &str| {
        let prefix = format!("rastrod_tracker_sessions_total{{source=\"{source}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in {text}"))
    };
    (figure("memory"), figure("read"))
}

/// A one-pageview batch of `v_kept0001`; answers its session id.
async fn view(app: &TestApp, id: &str, path: &str) -> String {
    let a: Value = track(app, "loja", "v_kept0001", vec![pageview(id, path)]).await;
    assert_eq!(a["accepted"], 1, "{a}");
    a["sessionId"].as_str().unwrap().to_string()
}

#[derive(diesel::QueryableByName)]
struct Stored {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pageviews: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    conversions: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    version: i64,
    #[diesel(sql_type = diesel::sql_types::Text)]
    exit_path: String,
}

/// A session as stored: (pageviews, conversions, version, exit path).
async fn stored(app: &TestApp, id: &str) -> (i64, i64, i64, String) {
    let id = id.to_string();
    app.state
        .cx
        .read(move |c| {
            let s: Stored = diesel::sql_query(
                "SELECT pageviews, conversions, version, exit_path FROM web_sessions WHERE id = '".to_string()
                    + &id
                    + "'",
            )
            .get_result(c)?;
            Ok((s.pageviews, s.conversions, s.version, s.exit_path))
        })
        .await
        .unwrap()
}

/// A statement run by another handle on the database (which moves nothing in
/// this process), as another process or another writer would.
async fn elsewhere(other: &Db, sql: String) {
    other
        .write(move |c: &mut AnyConnection| {
            diesel::sql_query(sql).execute(c)?;
            Ok(())
        })
        .await
        .unwrap();
}

// rule: STORE-12
// rule: STORE-07
backend_test!(a_kept_session_is_used_only_while_its_stored_version_is_the_kept_one, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let other = Db::open(&app.db.url, 1, 16, 16).unwrap();

    // A new visitor has no session to read; its first write keeps the new one.
    let s = view(app, "1", "/").await;
    assert_eq!(sources(app).await, (0, 0));
    assert_eq!(stored(app, &s).await, (1, 0, 0, "/".into()), "a new session starts at version 0");
    // The next batch takes it from memory, and moves the version itself.
    assert_eq!(view(app, "2", "/a").await, s);
    assert_eq!(sources(app).await, (1, 0));
    assert_eq!(stored(app, &s).await, (2, 0, 1, "/a".into()));

    // Another writer changes it without naming the version: the trigger moves
    // it, so the next batch reads the row and builds on what that writer left.
    elsewhere(&other, format!("UPDATE web_sessions SET pageviews = 40, exit_path = '/outro' WHERE id = '{s}'")).await;
    assert_eq!(stored(app, &s).await.2, 2, "an update that leaves the version alone still moves it");
    assert_eq!(view(app, "3", "/b").await, s);
    assert_eq!(sources(app).await, (1, 1));
    assert_eq!(stored(app, &s).await, (41, 0, 3, "/b".into()), "built on the stored row, not the kept one");
    // Kept again from that write: memory again.
    assert_eq!(view(app, "4", "/c").await, s);
    assert_eq!(sources(app).await, (2, 1));
    assert_eq!(stored(app, &s).await, (42, 0, 4, "/c".into()));

    // A conversion elsewhere (its own columns only): read again, and kept.
    elsewhere(&other, format!("UPDATE web_sessions SET conversions = conversions + 1 WHERE id = '{s}'")).await;
    assert_eq!(view(app, "5", "/d").await, s);
    assert_eq!(sources(app).await, (2, 2));
    assert_eq!(stored(app, &s).await, (43, 1, 6, "/d".into()));

    // The session deleted elsewhere (retention, forget): it has no version,
    // so the kept row is not used (the read finds nothing), and the batch
    // opens a new session instead of bringing the old one back.
    elsewhere(&other, format!("DELETE FROM web_sessions WHERE id = '{s}'")).await;
    let s2 = view(app, "6", "/e").await;
    assert_ne!(s2, s, "a deleted session stays deleted");
    assert_eq!(sources(app).await, (2, 3));
    let gone = app.state.cx.read(move |c| Ok(store::session(c, &s)?)).await.unwrap();
    assert!(gone.is_none());
    assert_eq!(stored(app, &s2).await, (1, 0, 0, "/e".into()));
    assert_eq!(view(app, "7", "/f").await, s2);
    assert_eq!(sources(app).await, (3, 3));
    assert_eq!(stored(app, &s2).await, (2, 0, 1, "/f".into()));
});

fn keeping_none(backend: Backend) -> FedBuilder {
    analytics_builder(backend).env("RASTRO_SESSION_CACHE", "0")
}

// rule: STORE-12
backend_test!(with_no_sessions_kept_every_batch_reads, keeping_none, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    let s = view(app, "1", "/").await;
    assert_eq!(view(app, "2", "/a").await, s);
    assert_eq!(view(app, "3", "/b").await, s);
    assert_eq!(sources(app).await, (0, 2));
    assert_eq!(stored(app, &s).await, (3, 0, 2, "/b".into()));
});
