//! Writes that arrive together are written together (issue 25): a request
//! queues its checked item in a [`Combiner`], and one write of the
//! group-commit writer takes every item queued when it runs and writes them
//! with one function over all of them (one multi-row statement per table
//! instead of one statement per item and table). Each request is answered
//! after that write's commit, so an answered item is durable, as before.
//!
//! At most one such write per combiner waits in the writer at a time:
//! items arriving meanwhile wait for the next one, which is the batching.
//! The write is driven by a task of its own, so a client that goes away
//! answers nobody else's request wrongly. If the combined write fails, each
//! item is written again on its own, so one bad item fails only itself;
//! a write refused before it ran (the writer full or stopping) is every
//! waiting item's answer.

pub mod queue;
pub mod read;

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use queue::Reply;
pub use queue::{Combiner, Combiners};

use crate::db::{AnyConnection, Lane};
use crate::error::{Code, Error, Result};
use crate::service::context::Context;
use crate::service::effects::Written;

/// Writes every item of a combined write: one answer per item, in their
/// order (an item's own failure is its answer; an `Err` of the whole fails
/// the write, which is then retried item by item with the single write).
pub type Many<I, O> = fn(&mut AnyConnection, Vec<I>) -> Result<Written<Vec<Result<O>>>>;
/// Writes one item alone.
pub type One<I, O> = fn(&mut AnyConnection, I) -> Result<Written<O>>;

impl<I: Clone + Send + 'static, O: Send + 'static> Combiner<I, O> {
    /// Writes `item` with whatever else is queued; answers after the
    /// commit. Past `limit` waiting items, RATE_LIMITED.
    pub async fn submit(&self, cx: &Context, item: I, limit: usize, many: Many<I, O>, one: One<I, O>) -> Result<O> {
        self.submit_in(cx, Lane::Ordered, item, limit, many, one).await
    }

    /// [`Combiner::submit`] with the combined write (and its retries) in
    /// `lane`: [`Lane::Any`] only for writes safe beside every other.
    pub async fn submit_in(
        &self,
        cx: &Context,
        lane: Lane,
        item: I,
        limit: usize,
        many: Many<I, O>,
        one: One<I, O>,
    ) -> Result<O> {
        let (reply, answer) = oneshot::channel();
        let schedule = {
            let mut q = self.lock();
            if q.items.len() >= limit {
                return Err(Error::new(Code::RateLimited, "too many writes queued; retry shortly"));
            }
            q.items.push((item, reply));
            !std::mem::replace(&mut q.scheduled, true)
        };
        if schedule {
            tokio::spawn(self.clone().write(cx.clone(), lane, many, one));
        }
        answer.await.unwrap_or_else(|_| Err(Error::unavailable("a combined write was dropped")))
    }

    /// One combined write of the items queued when it runs.
    async fn write(self, cx: Context, lane: Lane, many: Many<I, O>, one: One<I, O>) {
        let (tx, taken) = oneshot::channel::<Vec<Reply<O>>>();
        // The items, kept for a retry one by one should the combined write fail.
        let retry: Arc<Mutex<Vec<I>>> = Arc::default();
        let (keep, queue) = (retry.clone(), self.clone());
        let written = cx
            .write_in(lane, false, move |c| {
                let (items, replies): (Vec<I>, Vec<Reply<O>>) = queue.take().into_iter().unzip();
                let _ = tx.send(replies);
                *keep.lock().unwrap_or_else(|p| p.into_inner()) = items.clone();
                many(c, items)
            })
            .await;
        // Refused before it ran (the writer full or stopping): the items it
        // would have taken get that answer.
        let Ok(replies) = taken.await else {
            let e = written.err().unwrap_or_else(|| Error::unavailable("a combined write did not run"));
            for (_, reply) in self.take() {
                let _ = reply.send(Err(e.clone()));
            }
            return;
        };
        match written {
            Ok(answers) => {
                for (reply, a) in replies.into_iter().zip(answers) {
                    let _ = reply.send(a);
                }
            }
            // It ran and failed: each item alone, so only the bad one fails
            // (and should the writer be stopping, each hears it on its own).
            Err(_) => {
                let items = std::mem::take(&mut *retry.lock().unwrap_or_else(|p| p.into_inner()));
                for (reply, item) in replies.into_iter().zip(items) {
                    let _ = reply.send(cx.write_in(lane, false, move |c| one(c, item)).await);
                }
            }
        }
    }
}
