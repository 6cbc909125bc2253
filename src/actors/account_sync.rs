//! One actor per linked ad account. It holds no state of its own beyond its
//! account id: the schedule, the backfill cursor, the failures and the lease
//! live in the account's row, so a restarted process resumes exactly where the
//! rows say. It wakes itself at the row's `next_run_at`; the supervisor also
//! wakes it when the rows change.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::{Mutex, Semaphore};

use crate::error::Result;
use crate::service::context::Context as ServiceContext;
use crate::service::meta::sync::{self as meta_sync, Outcome};
use crate::store::meta::sync::{self as store, SyncRow};

/// Runs at most this many times in a row (backfill blocks go back to back).
const MAX_RUNS_IN_A_ROW: usize = 16;

pub struct AccountSync {
    pub ad_account_id: String,
    st: ServiceContext,
    permits: Arc<Semaphore>,
    /// One drain at a time per account in this process (the lease covers other processes).
    running: Arc<Mutex<()>>,
    timer: Option<SpawnHandle>,
    /// The row's next due time when the supervisor started the actor; None
    /// when the supervisor runs it at once itself (`RunDue`), which sets the timer.
    first_due: Option<i64>,
}

/// What a drain did, and the account's row as the drain left it (read while the
/// drain still holds the account, so the timer is set from it before another
/// drain of this process can run).
struct Drained {
    outcomes: Result<Vec<Outcome>>,
    row: Option<SyncRow>,
}

impl AccountSync {
    pub fn new(ad_account_id: String, st: ServiceContext, permits: Arc<Semaphore>, first_due: Option<i64>) -> Self {
        AccountSync { ad_account_id, st, permits, running: Arc::new(Mutex::new(())), timer: None, first_due }
    }

    fn drain(&self) -> impl Future<Output = Drained> + 'static {
        let (st, id, permits, running) =
            (self.st.clone(), self.ad_account_id.clone(), self.permits.clone(), self.running.clone());
        async move {
            let _one = running.lock().await;
            let outcomes = async {
                let mut outcomes = Vec::new();
                // The supervisor closes the permits on shutdown: nothing more starts.
                let Ok(_permit) = permits.clone().acquire_owned().await else { return Ok(outcomes) };
                while outcomes.len() < MAX_RUNS_IN_A_ROW && !permits.is_closed() {
                    let outcome = meta_sync::run(&st, &id).await?;
                    let again = matches!(outcome, Outcome::Synced(_));
                    outcomes.push(outcome);
                    if !again {
                        break;
                    }
                }
                Ok(outcomes)
            }
            .await;
            let row = st.read(move |c| Ok(store::get(c, &id)?)).await.ok().flatten();
            Drained { outcomes, row }
        }
    }

    /// Sets the timer for `next_run_at` (or the end of another process's
    /// lease); a Busy account is retried within a minute.
    fn arm(&mut self, ctx: &mut Context<Self>, next_run_at: i64, lease_until: Option<i64>, busy: bool) {
        let now = self.st.now();
        let mut at = next_run_at;
        if let Some(until) = lease_until.filter(|u| *u > now) {
            at = at.max(until);
        }
        let mut delay = Duration::from_millis((at - now).max(0) as u64);
        if busy {
            delay = delay.clamp(Duration::from_secs(1), Duration::from_secs(60));
        }
        if let Some(t) = self.timer.take() {
            ctx.cancel_future(t);
        }
        self.timer = Some(ctx.notify_later(Wake, delay));
    }

    /// After a drain: the timer from the row it left.
    fn rearm(&mut self, ctx: &mut Context<Self>, drained: &Drained) {
        let busy = matches!(drained.outcomes.as_deref(), Ok([Outcome::Busy]));
        if let Err(e) = &drained.outcomes {
            tracing::warn!(ad_account = %self.ad_account_id, error = %e, "account sync run failed");
        }
        if let Some(row) = &drained.row {
            self.arm(ctx, row.next_run_at, row.lease_until, busy);
        }
    }
}

impl Actor for AccountSync {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4);
        if let Some(at) = self.first_due {
            self.arm(ctx, at, None, false);
        }
    }
}

/// Run whatever is due, in the background.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake;

impl Handler<Wake> for AccountSync {
    type Result = ();

    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        ctx.spawn(self.drain().into_actor(self).map(|drained, act, ctx| act.rearm(ctx, &drained)));
    }
}

/// Run whatever is due now and answer with what happened (tests, syncMetaNow).
#[derive(Message)]
#[rtype(result = "Result<Vec<Outcome>>")]
pub struct RunNow;

impl Handler<RunNow> for AccountSync {
    type Result = ResponseActFuture<Self, Result<Vec<Outcome>>>;

    fn handle(&mut self, _: RunNow, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.drain().into_actor(self).map(|drained, act, ctx| {
            act.rearm(ctx, &drained);
            drained.outcomes
        }))
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Stop;

impl Handler<Stop> for AccountSync {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        // A drain in flight finishes first: stopping drops the actor's futures,
        // and a run dropped mid-way leaves its lease held (the account blocked
        // for RASTRO_SYNC_LEASE, here and in every other process). The lock is
        // fair, so the stop comes before any drain woken after it; those are
        // dropped while they still wait for it, before taking a lease.
        let running = self.running.clone();
        ctx.spawn(async move { drop(running.lock().await) }.into_actor(self).map(|(), _, ctx| ctx.stop()));
    }
}

/// Stop once the drain in flight (if any) has finished: its run releases the
/// account's lease before the actor goes (shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopAfterRun;

impl Handler<StopAfterRun> for AccountSync {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: StopAfterRun, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(t) = self.timer.take() {
            ctx.cancel_future(t);
        }
        let running = self.running.clone();
        Box::pin(
            async move {
                drop(running.lock().await);
            }
            .into_actor(self)
            .map(|_, _, ctx| ctx.stop()),
        )
    }
}
