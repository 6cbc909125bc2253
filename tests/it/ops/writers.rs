//! Writer threads (rule STORE-11): on PostgreSQL several write connections
//! commit batches at once, so a write waits for the server's work on
//! another batch no longer; SQLite allows one writer, and keeps one.

use crate::backend_test;
use crate::common::{Backend, writers};

// rule: STORE-11
backend_test!(postgres_commits_on_two_writers_at_once_and_sqlite_on_one, |app| {
    let cx = app.state.cx.clone();
    let expected = if app.backend() == Backend::Sqlite { 1 } else { 2 };
    assert_eq!(writers(&cx), expected, "the default writers of the backend");
    // One writer held by a write that waits for the test.
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
    // A site created meanwhile, through the host API.
    let site = {
        let app = app.with_key(Some(crate::common::HOST_KEY));
        tokio::spawn(async move { app.site("loja").await })
    };
    if app.backend() == Backend::Sqlite {
        // The one writer is held: the creation cannot have committed.
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert_eq!(app.count("sites").await, 0, "nothing commits while SQLite's writer is held");
        release.send(()).unwrap();
        site.await.unwrap();
    } else {
        // The other writer commits it while the first is still held.
        let created = tokio::time::timeout(std::time::Duration::from_secs(10), site).await;
        assert!(created.is_ok(), "a second writer committed while the first was held");
        assert!(!hold.is_finished(), "the first writer is still held");
        release.send(()).unwrap();
    }
    hold.await.unwrap().unwrap();
    assert_eq!(app.count("sites").await, 1);
});
