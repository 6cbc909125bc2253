//! A periodic actor: every `every` it runs one round of its work, never two
//! rounds at once; a failed round is logged by its code and the next tick
//! retries. The report, regroup and retention actors are this actor with
//! their own round; the rows their rounds read are the truth, so a restart
//! simply runs the next round.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix::{Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};

use crate::error::Result;
use crate::service::context::Context as ServiceContext;

pub type Round = fn(ServiceContext) -> Pin<Box<dyn Future<Output = Result<()>>>>;

pub struct Periodic {
    cx: ServiceContext,
    name: &'static str,
    every: Duration,
    round: Round,
    busy: bool,
}

impl Periodic {
    pub fn new(cx: ServiceContext, name: &'static str, every: Duration, round: Round) -> Periodic {
        Periodic { cx, name, every, round, busy: false }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        self.busy = true;
        let (round, name) = ((self.round)(self.cx.clone()), self.name);
        ctx.spawn(
            async move {
                if let Err(e) = round.await {
                    tracing::warn!(code = e.code.as_str(), actor = name, "a round failed; the next tick retries");
                }
            }
            .into_actor(self)
            .map(|(), act, _| act.busy = false),
        );
    }
}

impl Actor for Periodic {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.every, |act, ctx| act.tick(ctx));
    }
}

/// Stops taking rounds; a transaction in flight commits or rolls back whole.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for Periodic {
    type Result = ();
    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
