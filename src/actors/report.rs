//! The report actor: applies the rollup outbox every `RASTRO_ROLLUP_INTERVAL`,
//! a batch of at most `RASTRO_ROLLUP_BATCH_MAX` events per transaction through
//! the group-commit writer, batch after batch until the outbox is empty
//! (ANALYTICS.md §2). The outbox rows are the truth: a kill -9 between
//! acceptance and application loses nothing (the restarted actor takes them),
//! and a batch is applied and deleted in one transaction, so nothing counts
//! twice. On PostgreSQL the actors of several processes take disjoint batches.
//! Then it moves pending funnel index rebuilds on, one bounded step per
//! transaction, each step's position kept, so a restart resumes them.

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};

use crate::error::Result;
use crate::service::analytics::{funnels, rollup};
use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Effects, Written};

pub struct ReportActor {
    cx: ServiceContext,
    busy: bool,
}

/// Applies every queued event now (tests, shutdown); answers how many.
pub async fn drain(cx: &ServiceContext) -> Result<usize> {
    let max = cx.config.rollup_batch_max;
    let mut total = 0;
    loop {
        let n = cx
            .write(move |c| {
                let n = rollup::apply(c, max)?;
                // The rollups feed no cached read (meta.status).
                Ok(Written::new(n, Effects { changes_cached_reads: false, ..Effects::default() }))
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
            .write(move |c| {
                let n = funnels::rebuild_step(c, max)?;
                Ok(Written::new(n, Effects { changes_cached_reads: false, ..Effects::default() }))
            })
            .await?;
        if n == 0 {
            return Ok(total);
        }
    }
}

impl ReportActor {
    pub fn new(cx: ServiceContext) -> ReportActor {
        ReportActor { cx, busy: false }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let cx = self.cx.clone();
        ctx.spawn(
            async move {
                if let Err(e) = drain(&cx).await {
                    tracing::warn!(code = e.code.as_str(), "applying the rollup outbox failed; the next tick retries");
                }
            }
            .into_actor(self)
            .map(|(), act, _| act.busy = false),
        );
    }
}

impl Actor for ReportActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = self.cx.config.rollup_interval;
        ctx.run_interval(every, |act, ctx| act.tick(ctx));
    }
}

/// Stops taking batches; a batch in flight commits or rolls back whole.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for ReportActor {
    type Result = ();
    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        use actix::ActorContext;
        ctx.stop();
    }
}
