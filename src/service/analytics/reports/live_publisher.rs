//! The publisher of the live states (`live_push`): one task per process,
//! started with the daemon. It reads the marked sites'
//! `liveVisitors` through the live read cache (rule STORE-08) at most once a
//! second, and every `REFRESH` the watched ones again so visitors who left
//! drop off without a commit.

use std::time::Duration;

use serde::Serialize;

use crate::service::analytics::reports::live::{LiveArgs, LiveVisitors, live_visitors_with};
use crate::service::analytics::reports::live_push::{LivePush, Watcher};
use crate::service::api::Capability;
use crate::service::context::Context;

/// The rows each pushed state carries (the dashboard shows 20).
pub const PUSHED_ROWS: i64 = 50;
/// At most one update per site in this long.
const THROTTLE: Duration = Duration::from_secs(1);
/// The watched sites are read again this often, commits or not.
const REFRESH: Duration = Duration::from_secs(30);

/// One site's live state as pushed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteState<'a> {
    pub site_id: &'a str,
    #[serde(flatten)]
    pub live: &'a LiveVisitors,
}

/// Starts the publisher once per process (the daemon does at start-up, on
/// its main runtime rather than on an HTTP worker's).
pub fn start(cx: &Context) {
    if cx.analytics.push.first_start() {
        let cx = cx.clone();
        tokio::spawn(async move { publish(cx).await });
    }
}

/// Watches the sites' live states, the publisher started if it is not yet.
pub fn watch(cx: &Context, site_ids: &[String]) -> Watcher {
    start(cx);
    LivePush::watch(&cx.analytics.push, site_ids)
}

/// Reads the marked sites' states and hands them out, then rests a second.
async fn publish(cx: Context) {
    let push = &cx.analytics.push;
    loop {
        tokio::select! {
            _ = push.marked() => {}
            _ = tokio::time::sleep(REFRESH) => push.mark_all_watched(),
        }
        let profiles = cx.capabilities().serves(Capability::VisitorProfiles);
        for site in push.take_marked() {
            let args =
                LiveArgs { site_ids: vec![site.clone()], now: cx.now(), limit: Some(PUSHED_ROWS), filters: Vec::new() };
            push.count_read();
            match live_visitors_with(&cx, args, false, 1, profiles).await {
                Ok(live) => match serde_json::to_string(&SiteState { site_id: &site, live: &live }) {
                    Ok(json) => push.send(&site, json),
                    Err(_) => tracing::warn!("a live state was not written"),
                },
                // A removed site, a database away: the next commit or refresh tries again.
                Err(e) => tracing::warn!(code = e.code.as_str(), "a live state was not pushed"),
            }
        }
        tokio::time::sleep(THROTTLE).await;
    }
}
