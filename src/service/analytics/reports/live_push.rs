//! The live state pushed to open dashboards (Server-Sent Events): per site,
//! the latest `liveVisitors` answer, read once through the live read cache
//! (rule STORE-08) whoever is watching, and handed to every watcher. A
//! tracker commit of a watched site (the `live_changed` effect) marks it; one
//! publisher per process reads the marked sites at most once a second, and
//! every `REFRESH` re-reads the watched ones so visitors who left drop off
//! without a commit. The database reads thus depend on the sites watched and
//! their commits, never on the number of dashboards.
//!
//! Each update has an id from one increasing sequence (seeded from the clock,
//! so it keeps increasing across restarts): a dashboard that reconnects with
//! `Last-Event-ID` gets only the sites' states newer than the last it saw.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{Notify, watch};

use crate::service::analytics::reports::live::{LiveArgs, LiveVisitors, live_visitors_with};
use crate::service::analytics::runtime::Runtime;
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

/// A pushed state: its id and its JSON (`SiteState`), written once for every watcher.
#[derive(Debug)]
pub struct Update {
    pub id: u64,
    pub json: String,
}

/// A site's watchers and its latest state.
#[derive(Default)]
struct Watched {
    watchers: usize,
    latest: Option<Arc<Update>>,
}

pub struct LivePush {
    sites: Mutex<HashMap<String, Watched>>,
    /// Moves on every update: each watcher waits on it alone.
    epoch: watch::Sender<u64>,
    marked: Mutex<BTreeSet<String>>,
    wake: Notify,
    next_id: AtomicU64,
    running: AtomicBool,
}

impl Default for LivePush {
    fn default() -> Self {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        LivePush {
            sites: Mutex::default(),
            epoch: watch::channel(0).0,
            marked: Mutex::default(),
            wake: Notify::new(),
            // Microseconds: ids of a later start are larger.
            next_id: AtomicU64::new(now.as_micros() as u64),
            running: AtomicBool::new(false),
        }
    }
}

/// One dashboard's watch of some sites; dropping it stops watching.
pub struct Watcher {
    runtime: Arc<Runtime>,
    sites: Vec<String>,
    epoch: watch::Receiver<u64>,
}

impl Watcher {
    /// The watched sites' states newer than `seen` (per site, the last id sent), oldest first.
    pub fn newer(&self, seen: &mut HashMap<String, u64>) -> Vec<Arc<Update>> {
        let sites = self.runtime.push.sites.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<Arc<Update>> = Vec::new();
        for site in &self.sites {
            let Some(latest) = sites.get(site).and_then(|w| w.latest.clone()) else { continue };
            let last = seen.entry(site.clone()).or_insert(0);
            if latest.id > *last {
                *last = latest.id;
                out.push(latest);
            }
        }
        out.sort_by_key(|u| u.id);
        out
    }

    /// Waits for the next update of any site (false: the daemon is stopping).
    pub async fn changed(&mut self) -> bool {
        self.epoch.changed().await.is_ok()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let mut sites = self.runtime.push.sites.lock().unwrap_or_else(|p| p.into_inner());
        for site in &self.sites {
            if let Some(w) = sites.get_mut(site) {
                w.watchers -= 1;
                if w.watchers == 0 {
                    sites.remove(site);
                }
            }
        }
    }
}

impl LivePush {
    /// Watches the sites' live states. A site nobody watched yet is read at once.
    pub fn watch(cx: &Context, site_ids: &[String]) -> Watcher {
        let push = &cx.analytics.push;
        push.start(cx);
        let epoch = push.epoch.subscribe();
        let mut sites = push.sites.lock().unwrap_or_else(|p| p.into_inner());
        for site in site_ids {
            let w = sites.entry(site.clone()).or_default();
            w.watchers += 1;
            if w.latest.is_none() {
                push.mark(site);
            }
        }
        Watcher { runtime: cx.analytics.clone(), sites: site_ids.to_vec(), epoch }
    }

    /// A commit changed `site_id`'s live rows: a watched site is read again.
    pub fn changed(&self, site_id: &str) {
        if self.sites.lock().unwrap_or_else(|p| p.into_inner()).contains_key(site_id) {
            self.mark(site_id);
        }
    }

    fn mark(&self, site_id: &str) {
        self.marked.lock().unwrap_or_else(|p| p.into_inner()).insert(site_id.to_string());
        self.wake.notify_one();
    }

    /// The publisher, once per process, from the first watch on.
    fn start(&self, cx: &Context) {
        if self.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let cx = cx.clone();
        tokio::spawn(async move { publish(cx).await });
    }

    /// The marked sites still watched.
    fn take_marked(&self) -> Vec<String> {
        let marked = std::mem::take(&mut *self.marked.lock().unwrap_or_else(|p| p.into_inner()));
        let sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        marked.into_iter().filter(|s| sites.contains_key(s)).collect()
    }

    fn mark_all_watched(&self) {
        let sites: Vec<String> = self.sites.lock().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
        self.marked.lock().unwrap_or_else(|p| p.into_inner()).extend(sites);
    }

    fn send(&self, site_id: &str, live: &LiveVisitors) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let Ok(json) = serde_json::to_string(&SiteState { site_id, live }) else { return };
        if let Some(w) = self.sites.lock().unwrap_or_else(|p| p.into_inner()).get_mut(site_id) {
            w.latest = Some(Arc::new(Update { id, json }));
        }
        self.epoch.send_modify(|e| *e += 1);
    }
}

/// Reads the marked sites' states and hands them out, then rests a second.
async fn publish(cx: Context) {
    let push = &cx.analytics.push;
    loop {
        tokio::select! {
            _ = push.wake.notified() => {}
            _ = tokio::time::sleep(REFRESH) => push.mark_all_watched(),
        }
        let profiles = cx.capabilities().serves(Capability::VisitorProfiles);
        for site in push.take_marked() {
            let args =
                LiveArgs { site_ids: vec![site.clone()], now: cx.now(), limit: Some(PUSHED_ROWS), filters: Vec::new() };
            match live_visitors_with(&cx, args, false, 1, profiles).await {
                Ok(live) => push.send(&site, &live),
                // A removed site, a database away: the next commit or refresh tries again.
                Err(e) => tracing::warn!(code = e.code.as_str(), "a live state was not pushed"),
            }
        }
        tokio::time::sleep(THROTTLE).await;
    }
}
