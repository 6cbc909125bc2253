//! The report actor: applies the rollup outbox every `RASTRO_ROLLUP_INTERVAL`,
//! a batch of about `RASTRO_ROLLUP_BATCH_MAX` events per transaction (the
//! oldest whole packs that reach it) through the group-commit writer, batch
//! after batch until the outbox is empty
//! (rule STORE-04). The outbox rows are the truth: a kill -9 between
//! acceptance and application loses nothing (the restarted actor takes them),
//! and a batch is applied and deleted in one transaction, so nothing counts
//! twice. On PostgreSQL the actors of several processes take disjoint batches.
//! Then it moves pending funnel index rebuilds on, one bounded step per
//! transaction, each step's position kept, so a restart resumes them, and
//! builds the month tier of sites that had data before it existed, one
//! (site, month) per transaction, and on PostgreSQL drops the live counters
//! of buckets older than an hour past the live window.

use super::periodic::Periodic;
use crate::clock::HOUR_MS;
use crate::db::Backend;
use crate::error::Result;
use crate::service::analytics::{reports::funnels, rollup, rollup::month_tier};
use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Effects, Written};
use crate::store::analytics::{self as store, live_counts};

/// Moves the rollup rows an older version left in `web_outbox` (a row per
/// event) into packs, a batch per transaction; answers how many. Run at
/// start, before any actor or request reads or rewrites the outbox.
pub async fn pack_legacy(cx: &ServiceContext) -> Result<usize> {
    let max = cx.config.rollup_batch_max;
    let mut total = 0;
    loop {
        let n = cx.write_alone(move |c| Ok(Written::new(store::pack_legacy(c, max)?, Effects::quiet()))).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n;
    }
}

/// Applies every queued event now (tests, shutdown); answers how many.
pub async fn drain(cx: &ServiceContext) -> Result<usize> {
    let max = cx.config.rollup_batch_max;
    let mut total = 0;
    loop {
        // The packs making RASTRO_ROLLUP_BATCH_MAX rows: a write of its own (see `db::writer`).
        let n = cx
            .write_alone(move |c| {
                let n = rollup::apply(c, max)?;
                // The rollups feed no cached read (meta.status).
                Ok(Written::new(n, Effects::quiet()))
            })
            .await?;
        total += n;
        if n < max {
            break;
        }
    }
    // Funnel index rebuilds, a bounded step per transaction, back to back.
    loop {
        let n = cx
            .write_alone(move |c| {
                let n = funnels::rebuild_step(c, max)?;
                Ok(Written::new(n, Effects::quiet()))
            })
            .await?;
        if n == 0 {
            break;
        }
    }
    // The month tier of data older than it, a (site, month) per transaction.
    while cx
        .write_alone(|c| {
            let more = month_tier::build_step(c)?;
            Ok(Written::new(more, Effects::quiet()))
        })
        .await?
    {}
    // PostgreSQL's live counters of buckets no window of the present reaches
    // (a window asked of an older `now` counts the rows instead).
    if cx.backend() == Backend::Postgres {
        let keep = cx.config.live_window.as_millis() as i64 + HOUR_MS;
        let before = cx.now() - keep;
        let before = before - before.rem_euclid(live_counts::BUCKET_MS);
        cx.write_alone(move |c| Ok(Written::new(live_counts::prune(c, before)?, Effects::quiet()))).await?;
    }
    Ok(total)
}

/// The report actor: a drain every `RASTRO_ROLLUP_INTERVAL`.
pub fn actor(cx: &ServiceContext) -> Periodic {
    Periodic::new(cx.clone(), "report", cx.config.rollup_interval, |cx| {
        Box::pin(async move { drain(&cx).await.map(|_| ()) })
    })
}
