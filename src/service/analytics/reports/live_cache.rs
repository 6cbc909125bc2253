//! The live-visitors cache of this process (rule STORE-08): per site, its
//! visitor rows of the last window with their sessions, extras and
//! profiles, and a generation that a commit of the site's rows moves (the
//! `live_changed` effect), so the next read is fresh. Held by the process's
//! analytics runtime; `live` reads through it.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::service::analytics::people::ProfileRefs;
use crate::service::analytics::reports::session_extras::Extras;
use crate::service::read_cache::ReadCache;
use crate::store::analytics::{LiveRow, SessionRow};

/// One site's recent visitor rows and their sessions, and their `profile`s.
pub struct SiteLive {
    pub(crate) rows: Vec<(LiveRow, SessionRow)>,
    pub(crate) extras: Extras,
    pub(crate) profiles: ProfileRefs,
}

#[derive(Default)]
pub struct LiveCache {
    generations: Mutex<HashMap<String, u64>>,
    pub(crate) states: ReadCache<SiteLive>,
}

impl LiveCache {
    pub(crate) fn generation(&self, site_id: &str) -> u64 {
        self.generations.lock().unwrap_or_else(|p| p.into_inner()).get(site_id).copied().unwrap_or(0)
    }

    /// After a commit of this site's tracker events: the next read is fresh (rule STORE-08).
    pub fn changed(&self, site_id: &str) {
        let mut g = self.generations.lock().unwrap_or_else(|p| p.into_inner());
        if g.len() > 100_000 {
            g.clear();
        }
        *g.entry(site_id.to_string()).or_insert(0) += 1;
    }
}
