//! Tracker batches that arrive together are accepted together (issue 25,
//! rule STORE-10): a request queues its checked batch in the tracker's
//! `Combiner`, and one write takes every batch queued when it runs and
//! accepts them with [`accept::accept_many`] (read and written together).
//! Each request is answered after that write's commit; if the combined
//! write fails, each batch is accepted again on its own.

use super::accept::{self, Batch, Outcome, Visit};
use super::batch::Incoming;
use crate::db::{AnyConnection, Lane};
use crate::error::Result;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};

/// Accepts one visitor's batch with whatever else is queued; answers after
/// the commit. Past `limit` waiting batches, RATE_LIMITED.
pub async fn accept(cx: &Context, visit: Visit, events: Vec<Option<Incoming>>, limit: usize) -> Result<Outcome> {
    let waiting = cx.analytics.tracker.waiting.clone();
    // Safe beside every other write (see `Lane::Any`): any writer may take it.
    waiting.submit_in(cx, Lane::Any, (visit, events), limit, many, one).await
}

fn many(c: &mut AnyConnection, mut batches: Vec<Batch>) -> Result<Written<Vec<Result<Outcome>>>> {
    accept::refresh_sites(c, &mut batches)?;
    let sites: Vec<String> = batches.iter().map(|(v, _)| v.site_id.clone()).collect();
    let outcomes = accept::accept_many(c, batches)?;
    let mut effects = Effects::quiet();
    for (site, o) in sites.iter().zip(&outcomes) {
        effects = effects.merge(Effects::live(site, o.accepted > 0));
    }
    Ok(Written::new(outcomes.into_iter().map(Ok).collect(), effects))
}

fn one(c: &mut AnyConnection, batch: Batch) -> Result<Written<Outcome>> {
    let mut batch = [batch];
    accept::refresh_sites(c, &mut batch)?;
    let [(v, events)] = batch;
    let o = accept::accept(c, &v, events)?;
    let effects = Effects::live(&v.site_id, o.accepted > 0);
    Ok(Written::new(o, effects))
}
