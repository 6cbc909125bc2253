//! The regroup actor: every `RASTRO_ROLLUP_INTERVAL` it runs the queued route
//! regroup jobs (rule ROUTE-08), step after step back to back, each
//! step at most `RASTRO_ROUTE_REGROUP_BATCH` rows in one transaction of the
//! group-commit writer. The job rows are the truth: a restarted process goes
//! on from the last committed step.

use super::periodic::Periodic;
use crate::error::Result;
use crate::service::analytics::rollup::regroup;
use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Effects, Written};

/// One step of the oldest job; answers whether there was one.
pub async fn step(cx: &ServiceContext) -> Result<bool> {
    let batch = cx.config.route_regroup_batch;
    cx.write(move |c| {
        let ran = regroup::step(c, batch)?;
        Ok(Written::new(ran, Effects::quiet()))
    })
    .await
}

/// Runs every queued job to its end (the actor's tick; tests); answers the steps taken.
pub async fn drain(cx: &ServiceContext) -> Result<usize> {
    let mut steps = 0;
    while step(cx).await? {
        steps += 1;
    }
    Ok(steps)
}

/// The regroup actor: every queued job run to its end every `RASTRO_ROLLUP_INTERVAL`.
pub fn actor(cx: &ServiceContext) -> Periodic {
    Periodic::new(cx.clone(), "regroup", cx.config.rollup_interval, |cx| {
        Box::pin(async move { drain(&cx).await.map(|_| ()) })
    })
}
