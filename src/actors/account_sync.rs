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
use crate::service::meta_sync::{self, Outcome};
use crate::state::AppState;
use crate::store::sync as store;

/// Runs at most this many times in a row (backfill blocks go back to back).
const MAX_RUNS_IN_A_ROW: usize = 16;

pub struct AccountSync {
    pub ad_account_id: String,
    st: AppState,
    permits: Arc<Semaphore>,
    /// One drain at a time per account in this process (the lease covers other processes).
    running: Arc<Mutex<()>>,
    timer: Option<SpawnHandle>,
}

impl AccountSync {
    pub fn new(ad_account_id: String, st: AppState, permits: Arc<Semaphore>) -> Self {
        AccountSync { ad_account_id, st, permits, running: Arc::new(Mutex::new(())), timer: None }
    }

    fn drain(&self) -> impl Future<Output = Result<Vec<Outcome>>> + 'static {
        let (st, id, permits, running) =
            (self.st.clone(), self.ad_account_id.clone(), self.permits.clone(), self.running.clone());
        async move {
            let _one = running.lock().await;
            let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
            let mut outcomes = Vec::new();
            while outcomes.len() < MAX_RUNS_IN_A_ROW {
                let outcome = meta_sync::run(&st, &id).await?;
                let again = matches!(outcome, Outcome::Synced(_));
                outcomes.push(outcome);
                if !again {
                    break;
                }
            }
            Ok(outcomes)
        }
    }

    /// Sets the timer for the row's next due time (or the end of another
    /// process's lease); a Busy account is retried within a minute.
    fn schedule(&mut self, ctx: &mut Context<Self>, busy: bool) {
        let (st, id) = (self.st.clone(), self.ad_account_id.clone());
        let read = async move { st.db.run(move |c| Ok(store::get(c, &id)?)).await };
        ctx.spawn(read.into_actor(self).map(move |row, act, ctx| {
            let Ok(Some(row)) = row else { return };
            let now = act.st.now();
            let mut at = row.next_run_at;
            if let Some(until) = row.lease_until.filter(|u| *u > now) {
                at = at.max(until);
            }
            let mut delay = Duration::from_millis((at - now).max(0) as u64);
            if busy {
                delay = delay.clamp(Duration::from_secs(1), Duration::from_secs(60));
            }
            if let Some(t) = act.timer.take() {
                ctx.cancel_future(t);
            }
            act.timer = Some(ctx.notify_later(Wake, delay));
        }));
    }
}

impl Actor for AccountSync {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4);
        self.schedule(ctx, false);
    }
}

/// Run whatever is due, in the background.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake;

impl Handler<Wake> for AccountSync {
    type Result = ();

    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        ctx.spawn(self.drain().into_actor(self).map(|outcomes, act, ctx| {
            let busy = matches!(outcomes.as_deref(), Ok([Outcome::Busy]));
            if let Err(e) = &outcomes {
                tracing::warn!(ad_account = %act.ad_account_id, error = %e, "account sync run failed");
            }
            act.schedule(ctx, busy);
        }));
    }
}

/// Run whatever is due now and answer with what happened (tests, syncMetaNow).
#[derive(Message)]
#[rtype(result = "Result<Vec<Outcome>>")]
pub struct RunNow;

impl Handler<RunNow> for AccountSync {
    type Result = ResponseActFuture<Self, Result<Vec<Outcome>>>;

    fn handle(&mut self, _: RunNow, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.drain().into_actor(self).map(|outcomes, act, ctx| {
            act.schedule(ctx, false);
            outcomes
        }))
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Stop;

impl Handler<Stop> for AccountSync {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
