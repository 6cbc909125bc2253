//! Tracker batches that arrive while the writer is busy are accepted
//! together, in one write (issue 25, STORE-10): the writer is held by a
//! write that waits on the test, 21 batches queue up, and once it is let go
//! they all commit in a single further write, each answered as if alone.

use serde_json::{Value, json};

use crate::analytics::{analytics_builder, drain, pageview, site};
use crate::backend_test;
use crate::common::{DAY, T0};
use crate::federation::READ;

/// The tracker's POST on a task of its own (the test app itself stays here).
fn post(app: &crate::common::TestApp, visitor: &str, events: Vec<Value>) -> tokio::task::JoinHandle<Value> {
    let (http, url) = (app.http.clone(), format!("{}/rastro/events", app.base));
    let body = json!({"siteId": "loja", "visitorId": visitor, "events": events}).to_string();
    tokio::spawn(async move {
        let r = http
            .post(url)
            .header("content-type", "text/plain")
            .header("user-agent", crate::analytics::UA)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()
    })
}

// rule: STORE-10
// rule: STORE-01
backend_test!(batches_waiting_together_are_accepted_in_one_write, analytics_builder, |fed| {
    let app = &fed.app;
    site(app, "loja", false).await;
    fed.grant(&["loja"], &[READ]).await;
    let cx = app.state.cx.clone();
    let writes = |cx: &rastrod::service::context::Context| cx.storage_stats().writer.writes;
    let before = writes(&cx);
    // The writer, held until the batches are queued.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let blocker = tokio::spawn({
        let cx = cx.clone();
        async move {
            cx.write_plain(move |_| {
                let _ = held.recv();
                Ok(())
            })
            .await
        }
    });
    let queued = |n: usize| {
        let cx = cx.clone();
        async move {
            for _ in 0..500 {
                if cx.analytics.tracker.queued_batches() == n {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("{} batches queued, not {n}", cx.analytics.tracker.queued_batches());
        }
    };
    // A's pageview first, then its engagement: the second needs the first stored.
    let a1 = post(app, "v_visitor000a", vec![pageview("1", "/")]);
    queued(1).await;
    let engaged = json!({"type": "engagement", "pageviewId": "p_0000000000000001", "engagedMs": 5000});
    let a2 = post(app, "v_visitor000a", vec![engaged]);
    queued(2).await;
    let others: Vec<_> = (0..19)
        .map(|i| post(app, &format!("v_visitor{i:04}b"), vec![pageview(&format!("{}", 100 + i), "/p")]))
        .collect();
    queued(21).await;
    assert_eq!(writes(&cx), before, "nothing written while the writer is held");
    release.send(()).unwrap();
    blocker.await.unwrap().unwrap();
    assert_eq!(a1.await.unwrap()["accepted"], 1);
    let second = a2.await.unwrap();
    assert_eq!((second["accepted"].clone(), second["rejected"].clone()), (json!(1), json!(0)), "{second}");
    for o in others {
        assert_eq!(o.await.unwrap()["accepted"], 1);
    }
    assert_eq!(writes(&cx) - before, 2, "the held write and one for the 21 batches");
    assert_eq!(cx.analytics.tracker.queued_batches(), 0);
    // Counted as if they came one by one.
    drain(app).await;
    let d = T0 - T0.rem_euclid(DAY);
    let t = crate::analytics::reader(&fed);
    let o = fed.both(Some(&t), "overview", json!({"siteIds": ["loja"], "from": d, "to": d + DAY - 1})).await.unwrap();
    assert_eq!(
        (o["totals"]["pageviews"].as_i64(), o["totals"]["visitors"].as_i64()),
        (Some(20), Some(20)),
        "{}",
        o["totals"]
    );
});
