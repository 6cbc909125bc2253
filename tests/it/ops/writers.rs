//! Writer threads (rule STORE-11): on PostgreSQL a second write connection
//! takes the tracker's combined writes, so they commit while the first
//! writer is busy; every other write keeps its order on the first. SQLite
//! allows one writer, and keeps one.

use serde_json::json;

use crate::analytics::{HOST, site, track_as};
use crate::backend_test;
use crate::common::{Backend, writers};

// rule: STORE-11
backend_test!(
    tracker_writes_commit_beside_a_held_writer_on_postgres_and_wait_on_sqlite,
    crate::analytics::analytics_builder,
    |fed| {
        let app = &fed.app;
        let cx = app.state.cx.clone();
        let postgres = app.backend() == Backend::Postgres;
        assert_eq!(writers(&cx), if postgres { 2 } else { 1 }, "the default writers of the backend");
        site(app, "loja", false).await;
        // The first writer held by a write that waits for the test.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let holder = cx.clone();
        let hold = tokio::spawn(async move {
            holder
                .write_alone(move |_| {
                    let _ = held.recv();
                    Ok(rastrod::service::effects::Written::plain(()))
                })
                .await
        });
        tokio::task::yield_now().await;
        // An ordered write (a site) and a tracker batch, submitted meanwhile.
        let other = {
            let app = app.with_key(Some(crate::common::HOST_KEY));
            tokio::spawn(async move { app.site("outra").await })
        };
        let body = json!({"siteId": "loja", "visitorId": "v_visitor0001", "events": [
        {"type": "pageview", "pageviewId": "p_0000000000000001", "url": format!("https://{HOST}/")}]});
        let tracked = {
            let app = app.with_key(None);
            tokio::spawn(async move { track_as(&app, &body, &[("user-agent", crate::analytics::UA)]).await })
        };
        if postgres {
            // The second writer commits the batch while the first is still held.
            let a = tokio::time::timeout(std::time::Duration::from_secs(10), tracked).await;
            let a = a.expect("a tracker batch commits beside the held writer").unwrap();
            assert_eq!(a.body["accepted"], 1, "{}", a.text);
            assert_eq!(app.count("web_events").await, 1);
            assert!(!hold.is_finished(), "the first writer is still held");
            assert!(!other.is_finished(), "an ordered write waits for the first writer");
            release.send(()).unwrap();
        } else {
            // The one writer is held: neither can have committed.
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            assert_eq!((app.count("web_events").await, app.count("sites").await), (0, 1), "nothing commits");
            release.send(()).unwrap();
            assert_eq!(tracked.await.unwrap().body["accepted"], 1);
        }
        hold.await.unwrap().unwrap();
        other.await.unwrap();
        assert_eq!((app.count("web_events").await, app.count("sites").await), (1, 2));
    }
);
