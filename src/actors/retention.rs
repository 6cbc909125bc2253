//! The retention actor (rules RET-03, RET-04): every `RASTRO_RETENTION_INTERVAL`
//! it runs each due class of each site with a policy, deleting at most
//! `RASTRO_RETENTION_BATCH` rows per transaction through the group-commit
//! writer, back to back until the class's backlog is 0, then records the run.
//! Nothing lives between batches but the rows themselves, so a restart (or a
//! kill -9 between batches) resumes by simply running again.
//!
//! Every round also deletes the WhatsApp references past their 7 days on
//! every site, with a policy or not (rule WA-02): a reference binds no lead
//! after them, and it names a visitor.

use super::periodic::Periodic;
use crate::error::{Error, Result};
use crate::service::analytics::retention;
use crate::service::analytics::vocabulary::RetentionClass;
use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Effects, Written};
use crate::store::analytics::retention as store;
use crate::store::analytics::whatsapp_refs;

/// Runs every class of every site with a policy now, due or not (tests,
/// operators), and the WhatsApp references' sweep; answers the rows deleted.
pub async fn drain(cx: &ServiceContext) -> Result<u64> {
    run(cx, false).await
}

/// One round: the due classes (all of them when `!only_due`) of each policy.
pub async fn run(cx: &ServiceContext, only_due: bool) -> Result<u64> {
    let now = cx.now();
    let interval = cx.config.retention_interval.as_millis() as i64;
    let batch = cx.config.retention_batch;
    let mut total = expire_refs(cx, now, batch).await;
    let policies = cx.read(|c| store::policies(c).map_err(Error::from)).await?;
    for p in policies {
        let site = p.site_id.clone();
        let (jobs, since) =
            cx.read(move |c| Ok((store::jobs(c, &site)?, crate::store::analytics::tracking_since(c, &site)?))).await?;
        for &class in RetentionClass::ALL {
            let due = jobs
                .iter()
                .find(|j| j.data_class == class.as_str())
                .and_then(|j| j.next_run_at)
                .is_none_or(|t| t <= now);
            if only_due && !due {
                continue;
            }
            let cut = retention::cutoff(&p, class, now);
            let mut deleted = 0u64;
            let mut error = None;
            loop {
                let site = p.site_id.clone();
                // Up to RASTRO_RETENTION_BATCH rows: a write of its own (see `db::writer`).
                let step = cx
                    .write_alone(move |c| {
                        let n = retention::delete_step(c, &site, class, cut, batch)?;
                        Ok(Written::new(n, Effects { changes_cached_reads: n > 0, ..Effects::default() }))
                    })
                    .await;
                match step {
                    Ok(n) => {
                        deleted += n as u64;
                        if n < batch {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(
                            code = e.code.as_str(),
                            class = class.as_str(),
                            "a retention batch failed; the next run retries"
                        );
                        error = Some(e.code.as_str());
                        break;
                    }
                }
            }
            total += deleted;
            let site = p.site_id.clone();
            // Once nothing is left past the cutoff, the class is purged below it.
            let purged = error.is_none().then_some(cut);
            cx.write(move |c| {
                store::record_run(
                    c,
                    &site,
                    class.as_str(),
                    cut,
                    now,
                    now + interval,
                    deleted as i64,
                    error,
                    purged,
                    since,
                )?;
                Ok(Written::new((), Effects::quiet()))
            })
            .await?;
        }
    }
    Ok(total)
}

/// Deletes the WhatsApp references clicked more than 7 days before `now`,
/// on every site (rule WA-02), `batch` rows a write until none is left;
/// answers how many. A failed batch is logged and retried next round.
async fn expire_refs(cx: &ServiceContext, now: i64, batch: usize) -> u64 {
    let cutoff = now - whatsapp_refs::REF_VALID_MS;
    let mut deleted = 0u64;
    loop {
        let step = cx
            .write_alone(move |c| {
                let n = whatsapp_refs::delete_expired(c, cutoff, batch)?;
                Ok(Written::new(n, Effects::quiet()))
            })
            .await;
        match step {
            Ok(n) => {
                deleted += n as u64;
                if n < batch {
                    return deleted;
                }
            }
            Err(e) => {
                tracing::warn!(
                    code = e.code.as_str(),
                    "a batch of expired WhatsApp references failed; the next run retries"
                );
                return deleted;
            }
        }
    }
}

/// The retention actor: the due classes every `RASTRO_RETENTION_INTERVAL`.
pub fn actor(cx: &ServiceContext) -> Periodic {
    Periodic::new(cx.clone(), "retention", cx.config.retention_interval, |cx| {
        Box::pin(async move { run(&cx, true).await.map(|_| ()) })
    })
}
