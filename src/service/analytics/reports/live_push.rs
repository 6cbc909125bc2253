//! The live states pushed to open dashboards (Server-Sent Events): per
//! site, its watchers and the latest state (`liveVisitors`' answer as JSON),
//! held by the process's analytics runtime. A commit of a watched site (the
//! `live_changed` effect) marks it; the publisher (`live_publisher`) reads
//! the marked sites, once for every watcher, and hands each state out here.
//! The database reads thus depend on the sites watched and their commits,
//! never on the number of dashboards.
//!
//! Each update has an id from one increasing sequence (seeded from the clock,
//! so it keeps increasing across restarts): a dashboard that reconnects with
//! `Last-Event-ID` gets only the sites' states newer than the last it saw.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, watch};

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
    /// States read by the publisher since the start (`/metrics`): what the
    /// pushes cost the database, whatever the number of dashboards.
    reads: AtomicU64,
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
            reads: AtomicU64::new(0),
        }
    }
}

/// One dashboard's watch of some sites; dropping it stops watching.
pub struct Watcher {
    push: Arc<LivePush>,
    sites: Vec<String>,
    epoch: watch::Receiver<u64>,
}

impl Watcher {
    /// The watched sites' states newer than `seen` (per site, the last id sent), oldest first.
    pub fn newer(&self, seen: &mut HashMap<String, u64>) -> Vec<Arc<Update>> {
        let sites = self.push.sites.lock().unwrap_or_else(|p| p.into_inner());
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
        let mut sites = self.push.sites.lock().unwrap_or_else(|p| p.into_inner());
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
    /// Watches the sites' live states. A site nobody watched yet is marked
    /// to be read at once (by the publisher, `live_publisher`).
    pub fn watch(push: &Arc<LivePush>, site_ids: &[String]) -> Watcher {
        let epoch = push.epoch.subscribe();
        let mut sites = push.sites.lock().unwrap_or_else(|p| p.into_inner());
        for site in site_ids {
            let w = sites.entry(site.clone()).or_default();
            w.watchers += 1;
            if w.latest.is_none() {
                push.mark(site);
            }
        }
        Watcher { push: push.clone(), sites: site_ids.to_vec(), epoch }
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

    /// Whether the publisher still has to be started (true once).
    pub(crate) fn first_start(&self) -> bool {
        !self.running.swap(true, Ordering::SeqCst)
    }

    /// Waits until a site is marked.
    pub(crate) async fn marked(&self) {
        self.wake.notified().await
    }

    /// The marked sites still watched.
    pub(crate) fn take_marked(&self) -> Vec<String> {
        let marked = std::mem::take(&mut *self.marked.lock().unwrap_or_else(|p| p.into_inner()));
        let sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        marked.into_iter().filter(|s| sites.contains_key(s)).collect()
    }

    pub(crate) fn mark_all_watched(&self) {
        let sites: Vec<String> = self.sites.lock().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
        self.marked.lock().unwrap_or_else(|p| p.into_inner()).extend(sites);
    }

    /// The publisher read a site's state (counted whether it succeeded or not).
    pub(crate) fn count_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// The states read by the publisher so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// A site's new state (its JSON), handed to every watcher.
    pub(crate) fn send(&self, site_id: &str, json: String) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let Some(w) = self.sites.lock().unwrap_or_else(|p| p.into_inner()).get_mut(site_id) {
            w.latest = Some(Arc::new(Update { id, json }));
        }
        self.epoch.send_modify(|e| *e += 1);
    }
}
