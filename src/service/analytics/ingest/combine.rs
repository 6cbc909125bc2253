//! Tracker batches that arrive together are accepted together (issue 25):
//! a request queues its checked batch here, and one write of the
//! group-commit writer takes every batch queued when it runs and accepts
//! them with [`accept::accept_many`] (a site's definitions read once, one
//! insert per table). Each request is answered after that write's commit,
//! so an answered event is durable, as before.
//!
//! At most one such write waits in the writer at a time: requests arriving
//! meanwhile wait for the next one, which is the batching. The write is
//! driven by a task of its own, so a client that goes away answers nobody
//! else's request wrongly. If the combined write fails, each batch is
//! written again on its own, so one bad batch fails only itself.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::accept::{self, Outcome, Visit};
use super::batch::Incoming;
use super::waiting::{Batch, Queued, Reply, Waiting};
use crate::error::{Code, Error, Result};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};

/// Accepts one visitor's batch with whatever else is queued; answers after
/// the commit. Past `limit` waiting batches, RATE_LIMITED.
pub async fn accept(cx: &Context, visit: Visit, events: Vec<Option<Incoming>>, limit: usize) -> Result<Outcome> {
    let waiting = cx.analytics.tracker.waiting.clone();
    let (reply, answer) = oneshot::channel();
    let schedule = {
        let mut q = waiting.lock();
        if q.batches.len() >= limit {
            return Err(Error::new(Code::RateLimited, "the tracker's queue is full; retry later"));
        }
        q.batches.push(Queued { batch: (visit, events), reply });
        !std::mem::replace(&mut q.scheduled, true)
    };
    if schedule {
        tokio::spawn(write(waiting, cx.clone()));
    }
    answer.await.unwrap_or_else(|_| Err(Error::unavailable("the tracker's write was dropped")))
}

/// One combined write of the batches queued when it runs.
async fn write(waiting: Waiting, cx: Context) {
    let queue = waiting.clone();
    let (tx, taken) = oneshot::channel::<Vec<Reply>>();
    // The batches, kept for a retry one by one should the combined write fail.
    let retry: Arc<Mutex<Vec<Batch>>> = Arc::default();
    let keep = retry.clone();
    let written = cx
        .write(move |c| {
            let batches = {
                let mut q = queue.lock();
                q.scheduled = false;
                std::mem::take(&mut q.batches)
            };
            let mut replies = Vec::with_capacity(batches.len());
            let mut work = Vec::with_capacity(batches.len());
            for b in batches {
                replies.push(b.reply);
                work.push(b.batch);
            }
            let _ = tx.send(replies);
            let sites: Vec<String> = work.iter().map(|(v, _)| v.site_id.clone()).collect();
            *keep.lock().unwrap_or_else(|p| p.into_inner()) = work.clone();
            let outcomes = accept::accept_many(c, work)?;
            let mut effects = Effects::quiet();
            for (site, o) in sites.iter().zip(&outcomes) {
                effects = effects.merge(Effects::live(site, o.accepted > 0));
            }
            Ok(Written::new(outcomes, effects))
        })
        .await;
    // Refused before it ran (the writer full or stopping): the batches
    // it would have taken get that answer.
    let Ok(replies) = taken.await else {
        let waiting = {
            let mut q = waiting.lock();
            q.scheduled = false;
            std::mem::take(&mut q.batches)
        };
        let e = written.err().unwrap_or_else(|| Error::unavailable("the tracker's write did not run"));
        for b in waiting {
            let _ = b.reply.send(Err(e.clone()));
        }
        return;
    };
    match written {
        Ok(outcomes) => {
            for (reply, o) in replies.into_iter().zip(outcomes) {
                let _ = reply.send(Ok(o));
            }
        }
        // The writer is full or stopping: every batch gets that answer.
        Err(e) if matches!(e.code, Code::RateLimited | Code::Unavailable) => {
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
        // Another failure: each batch alone, so only the bad one fails.
        Err(_) => {
            let work = std::mem::take(&mut *retry.lock().unwrap_or_else(|p| p.into_inner()));
            for (reply, (v, events)) in replies.into_iter().zip(work) {
                let site = v.site_id.clone();
                let one = cx
                    .write(move |c| {
                        let o = accept::accept(c, &v, events)?;
                        let effects = Effects::live(&site, o.accepted > 0);
                        Ok(Written::new(o, effects))
                    })
                    .await;
                let _ = reply.send(one);
            }
        }
    }
}
