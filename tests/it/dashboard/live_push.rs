//! The live visitors pushed to open dashboards (issue 24, Server-Sent
//! Events): a tracker commit reaches every open stream, the database reads
//! do not grow with the number of dashboards, and a reconnect with
//! `Last-Event-ID` gets only what it has not seen.

use std::time::Duration;

use serde_json::Value;

use super::{Dash, operator};
use crate::analytics::{pageview, site, track};
use crate::backend_test;

/// One open stream, read event by event.
struct Stream {
    res: reqwest::Response,
    buffer: String,
}

/// An event of the stream: its id and its data.
struct Event {
    id: u64,
    data: Value,
}

impl Stream {
    async fn open(d: &Dash, sites: &str, last_id: Option<u64>) -> Stream {
        let mut req = d.http.get(format!("{}/dashboard/api/live/stream?siteIds={sites}", d.base));
        req = req.header("cookie", d.cookie.clone().unwrap());
        if let Some(id) = last_id {
            req = req.header("Last-Event-ID", id.to_string());
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        Stream { res, buffer: String::new() }
    }

    /// The next `live` event, or None when none comes within `wait` (a
    /// bounded wait on the stream itself, never a sleep).
    async fn next(&mut self, wait: Duration) -> Option<Event> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field =
                    |name: &str| block.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim_start().to_string());
                if field("event:").as_deref() == Some("live") {
                    let id = field("id:").unwrap().parse().unwrap();
                    let data = serde_json::from_str(&field("data:").unwrap()).unwrap();
                    return Some(Event { id, data });
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.res.chunk()).await.ok()?.unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

const WAIT: Duration = Duration::from_secs(10);

/// The live states the publisher has read, from `/metrics`. Counted by the
/// publisher itself, so the daemon's other work (the report actor, the
/// periodic actors) cannot move it, as it moves the process's statements.
async fn states_read(app: &crate::common::TestApp) -> u64 {
    let text = app.with_key(None).get("/metrics").await.text;
    text.lines()
        .find_map(|l| l.strip_prefix("rastrod_live_states_read_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rastrod_live_states_read_total in {text}"))
}

backend_test!(
    tracker_commits_are_pushed_with_reads_independent_of_dashboards,
    crate::analytics::analytics_builder,
    |fed| {
        let app = &fed.app;
        site(app, "loja", false).await;
        operator(app, "ana", false, "agency:1").await;
        let (d, a) = Dash::sign_in(app, "ana", crate::dashboard::PASSWORD).await;
        assert_eq!(a.status, 200);
        track(app, "loja", "v_visitor0001", vec![pageview("1", "/")]).await;

        // One dashboard: its first state, then a commit's.
        let mut first = Stream::open(&d, "loja", None).await;
        let snapshot = first.next(WAIT).await.expect("the state at once");
        assert_eq!(snapshot.data["siteId"], "loja");
        assert_eq!(snapshot.data["count"], 1);
        let before = states_read(app).await;
        track(app, "loja", "v_visitor0002", vec![pageview("2", "/p/1")]).await;
        let pushed = first.next(WAIT).await.expect("the commit's state");
        assert_eq!(pushed.data["count"], 2);
        assert!(pushed.id > snapshot.id);
        let with_one = states_read(app).await - before;
        assert_eq!(with_one, 1, "a commit is read once for its one dashboard");

        // Twenty dashboards: each gets the current state without a read, and a
        // commit costs what it cost with one.
        let mut streams = vec![first];
        let before_open = states_read(app).await;
        for _ in 0..19 {
            let mut s = Stream::open(&d, "loja", None).await;
            assert_eq!(s.next(WAIT).await.expect("the current state").id, pushed.id);
            streams.push(s);
        }
        let opening = states_read(app).await - before_open;
        let before = states_read(app).await;
        track(app, "loja", "v_visitor0003", vec![pageview("3", "/")]).await;
        let mut ids = Vec::new();
        for s in &mut streams {
            let e = s.next(WAIT).await.expect("every dashboard hears the commit");
            assert_eq!(e.data["count"], 3);
            ids.push(e.id);
        }
        assert!(ids.windows(2).all(|w| w[0] == w[1]), "one state for all");
        let with_twenty = states_read(app).await - before;
        assert_eq!(with_twenty, with_one, "reads per commit do not grow with the dashboards");
        // A stream opened on a watched site gets the state already read.
        assert_eq!(opening, 0, "opening 19 streams read {opening} states");

        // A reconnect with the last id seen: nothing until something changes.
        let mut again = Stream::open(&d, "loja", Some(ids[0])).await;
        assert!(again.next(Duration::from_millis(500)).await.is_none(), "nothing new");
        track(app, "loja", "v_visitor0004", vec![pageview("4", "/")]).await;
        assert_eq!(again.next(WAIT).await.expect("the next state").data["count"], 4);
        // With an older id: the current state at once.
        let mut late = Stream::open(&d, "loja", Some(snapshot.id)).await;
        assert_eq!(late.next(WAIT).await.expect("the missed state").data["count"], 4);

        // Signed out, an unknown site, too many sites: refused before any stream.
        let anon = reqwest::get(format!("{}/dashboard/api/live/stream?siteIds=loja", d.base)).await.unwrap();
        assert_eq!(anon.status(), 401);
        assert_eq!(d.get("/dashboard/api/live/stream?siteIds=nope").await.status, 404);
        let many: Vec<String> = (0..51).map(|i| format!("s{i}")).collect();
        assert_eq!(d.get(&format!("/dashboard/api/live/stream?siteIds={}", many.join(","))).await.status, 400);
    }
);
