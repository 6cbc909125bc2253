//! The tracker's state in this process: the rate limits, the salts of the
//! days in use, and the copies of sites and User-Agents its checks read
//! (held by the analytics runtime of the process).

use std::collections::HashMap;
use std::sync::Mutex;

use super::agent::Seen;
use super::limits::Limits;
use super::session_cache::SessionCache;
use crate::service::read_cache::ReadCache;
use crate::service::sites::Site;

/// The tracker's state in this process: rate limits and the salts in use.
pub struct Tracker {
    pub(crate) limits: Limits,
    /// The salts of the days in use, by day (read or made through `ingest::salt`).
    pub(crate) salts: Mutex<HashMap<i64, Vec<u8>>>,
    /// The batches waiting for the next combined write (`combine`).
    pub(crate) waiting: crate::service::combine::queue::Combiner<super::accept::Batch, super::accept::Outcome>,
    /// The sites the checks before the write read (existence, cookieless,
    /// the Origin's domains): valid until a write of this process that may
    /// change them or `RASTRO_READ_CACHE_TTL`. The write itself reads the
    /// domains and route patterns again (`accept::refresh_sites`).
    pub(crate) sites: ReadCache<Site>,
    /// The User-Agents classified so far.
    pub(crate) agents: Seen,
    /// The visitors' current sessions as this process last wrote them
    /// (rule STORE-12), confirmed by their stored version before use.
    pub(crate) sessions: SessionCache,
}

impl Tracker {
    /// Tracker batches waiting for the next combined write (`combine`).
    pub fn queued_batches(&self) -> usize {
        self.waiting.queued()
    }

    /// Batches whose visitor's current session came from memory, and from a read (rule STORE-12).
    pub fn session_figures(&self) -> (u64, u64) {
        self.sessions.figures()
    }

    pub fn new(config: &crate::config::Config) -> Tracker {
        Tracker {
            limits: Limits::new(config.tracker_ip_rate, config.tracker_site_rate, config.tracker_new_visitor_rate),
            salts: Mutex::default(),
            waiting: Default::default(),
            sites: ReadCache::default(),
            agents: Seen::default(),
            sessions: SessionCache::new(config.session_cache),
        }
    }
}
