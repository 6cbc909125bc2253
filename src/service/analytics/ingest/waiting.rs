//! The tracker batches of this process waiting for their combined write
//! (`combine`): a queue under a lock and whether a write that will take
//! them is already waiting in the writer. Data only, held by the tracker.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

pub use super::accept::Batch;
use super::accept::Outcome;
use crate::error::Result;

pub(super) type Reply = oneshot::Sender<Result<Outcome>>;

pub(super) struct Queued {
    pub batch: Batch,
    pub reply: Reply,
}

#[derive(Default)]
pub(super) struct Queue {
    pub batches: Vec<Queued>,
    /// A write that will take the queued batches is waiting in the writer.
    pub scheduled: bool,
}

/// The batches waiting for the next combined write of this process.
#[derive(Default, Clone)]
pub struct Waiting {
    pub(super) queue: Arc<Mutex<Queue>>,
}

impl Waiting {
    /// The batches waiting for a write now.
    pub fn queued(&self) -> usize {
        self.lock().batches.len()
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}
