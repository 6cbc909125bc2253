//! The tracker's state in this process: the rate limits and the salts of
//! the days in use (held by the analytics runtime of the process).

use std::collections::HashMap;
use std::sync::Mutex;

use super::limits::Limits;

/// The tracker's state in this process: rate limits and the salts in use.
pub struct Tracker {
    pub(crate) limits: Limits,
    /// The salts of the days in use, by day (read or made through `ingest::salt`).
    pub(crate) salts: Mutex<HashMap<i64, Vec<u8>>>,
    /// The batches waiting for the next combined write (`combine`).
    pub(crate) waiting: crate::service::combine::queue::Combiner<super::accept::Batch, super::accept::Outcome>,
}

impl Tracker {
    /// Tracker batches waiting for the next combined write (`combine`).
    pub fn queued_batches(&self) -> usize {
        self.waiting.queued()
    }

    pub fn new(config: &crate::config::Config) -> Tracker {
        Tracker {
            limits: Limits::new(config.tracker_ip_rate, config.tracker_site_rate, config.tracker_new_visitor_rate),
            salts: Mutex::default(),
            waiting: Default::default(),
        }
    }
}
