//! The queue of a [`Combiner`]: the items of one kind waiting for their
//! combined write, and a registry of a process's combiners by item type.
//! Data only (the write is `combine::submit`), so the context can hold it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::Result;

pub(super) type Reply<O> = oneshot::Sender<Result<O>>;

pub(super) struct Queue<I, O> {
    pub(super) items: Vec<(I, Reply<O>)>,
    /// A write that will take the queued items is waiting in the writer.
    pub(super) scheduled: bool,
}

/// The items of one kind waiting for the next combined write of this process.
pub struct Combiner<I, O> {
    queue: Arc<Mutex<Queue<I, O>>>,
}

impl<I, O> Default for Combiner<I, O> {
    fn default() -> Self {
        Combiner { queue: Arc::new(Mutex::new(Queue { items: Vec::new(), scheduled: false })) }
    }
}

impl<I, O> Clone for Combiner<I, O> {
    fn clone(&self) -> Self {
        Combiner { queue: self.queue.clone() }
    }
}

impl<I, O> Combiner<I, O> {
    /// The items waiting for a write now.
    pub fn queued(&self) -> usize {
        self.lock().items.len()
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Queue<I, O>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every queued item, for the write that runs now.
    pub(super) fn take(&self) -> Vec<(I, Reply<O>)> {
        let mut q = self.lock();
        q.scheduled = false;
        std::mem::take(&mut q.items)
    }
}

/// A process's combiners, one per item and answer type, made on first use:
/// the context holds this without naming what each context combines.
#[derive(Default)]
pub struct Combiners {
    by_type: Mutex<HashMap<TypeId, Box<dyn Any + Send>>>,
}

impl Combiners {
    pub fn get<I: Send + 'static, O: Send + 'static>(&self) -> Combiner<I, O> {
        let mut map = self.by_type.lock().unwrap_or_else(|p| p.into_inner());
        let slot = map.entry(TypeId::of::<Combiner<I, O>>()).or_insert_with(|| Box::new(Combiner::<I, O>::default()));
        match slot.downcast_ref::<Combiner<I, O>>() {
            Some(c) => c.clone(),
            // Unreachable: the slot is keyed by its own type.
            None => Combiner::default(),
        }
    }
}
