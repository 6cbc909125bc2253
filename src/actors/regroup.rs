//! The regroup actor: every `RASTRO_ROLLUP_INTERVAL` it runs the queued route
//! regroup jobs (ANALYTICS.md §5.8 "Job"), step after step back to back, each
//! step at most `RASTRO_ROUTE_REGROUP_BATCH` rows in one transaction of the
//! group-commit writer. The job rows are the truth: a restarted process goes
//! on from the last committed step.

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};

use crate::error::Result;
use crate::service::analytics::regroup;
use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Effects, Written};

pub struct RegroupActor {
    cx: ServiceContext,
    busy: bool,
}

/// One step of the oldest job; answers whether there was one.
pub async fn step(cx: &ServiceContext) -> Result<bool> {
    let batch = cx.config.route_regroup_batch;
    cx.write(move |c| {
        let ran = regroup::step(c, batch)?;
        Ok(Written::new(ran, Effects { changes_cached_reads: false, ..Effects::default() }))
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

impl RegroupActor {
    pub fn new(cx: ServiceContext) -> RegroupActor {
        RegroupActor { cx, busy: false }
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
                    tracing::warn!(code = e.code.as_str(), "a route regroup step failed; the next tick retries");
                }
            }
            .into_actor(self)
            .map(|(), act, _| act.busy = false),
        );
    }
}

impl Actor for RegroupActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = self.cx.config.rollup_interval;
        ctx.run_interval(every, |act, ctx| act.tick(ctx));
    }
}

/// Stops taking steps; a step in flight commits or rolls back whole.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for RegroupActor {
    type Result = ();
    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        use actix::ActorContext;
        ctx.stop();
    }
}
