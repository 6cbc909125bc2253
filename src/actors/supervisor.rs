//! The supervisor keeps one `AccountSync` actor per active link: it reconciles
//! its children with the rows on start, when told the rows changed (link,
//! unlink, a new token, syncMetaNow) and on a periodic sweep, and starts again a
//! child that died. It also deletes, in batches, the spend that no link covers
//! any more. Messages are only wake-ups: the rows are the truth.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::Semaphore;

use super::account_sync::{AccountSync, RunNow, Stop, StopAfterRun, Wake};
use crate::error::Result;
use crate::service::context::Context as ServiceContext;
use crate::service::meta::sync::Outcome;
use crate::store::meta::{self as meta_store, sync as store};

pub struct Supervisor {
    st: ServiceContext,
    children: HashMap<String, Addr<AccountSync>>,
    permits: Arc<Semaphore>,
    /// Snapshots of the rows taken, and the newest applied: reads finish out of
    /// order, and an older one must not stop an actor a newer link started.
    snapshots: u64,
    applied: u64,
    /// Set by [`Shutdown`]: no child is started or woken any more.
    stopping: bool,
}

impl Supervisor {
    pub fn new(st: ServiceContext) -> Self {
        let permits = Arc::new(Semaphore::new(st.config.sync_max_concurrent));
        Supervisor { st, children: HashMap::new(), permits, snapshots: 0, applied: 0, stopping: false }
    }

    /// Starts a snapshot of the rows: its number, for `apply_snapshot`.
    fn snapshot(&mut self) -> impl Future<Output = (u64, Result<BTreeMap<String, i64>>)> + 'static {
        self.snapshots += 1;
        let n = self.snapshots;
        let wanted = Self::wanted(&self.st);
        async move { (n, wanted.await) }
    }

    /// Applies snapshot `n` unless a newer one was applied already.
    fn apply_snapshot(&mut self, n: u64, wanted: BTreeMap<String, i64>, wake_due: bool) {
        if n > self.applied && !self.stopping {
            self.applied = n;
            self.apply(wanted, wake_due);
        }
    }

    /// The accounts that should have a live actor, with their next due time.
    fn wanted(st: &ServiceContext) -> impl Future<Output = Result<BTreeMap<String, i64>>> + 'static {
        let st = st.clone();
        async move {
            st.read(|c| {
                let active: Vec<String> = meta_store::active_links(c)?.into_iter().map(|l| l.ad_account_id).collect();
                let due: BTreeMap<String, i64> =
                    store::all(c)?.into_iter().map(|r| (r.ad_account_id, r.next_run_at)).collect();
                Ok(active.into_iter().filter_map(|id| due.get(&id).map(|at| (id, *at))).collect())
            })
            .await
        }
    }

    /// Makes the children match `wanted`, and wakes those due now (unless the
    /// caller runs them itself, as `RunDue` does).
    fn apply(&mut self, wanted: BTreeMap<String, i64>, wake_due: bool) {
        let now = self.st.now();
        self.children.retain(|id, addr| {
            let keep = wanted.contains_key(id) && addr.connected();
            if !keep && addr.connected() {
                addr.do_send(Stop);
            }
            keep
        });
        for (id, next_run_at) in wanted {
            match self.children.get(&id) {
                Some(addr) if wake_due && next_run_at <= now => addr.do_send(Wake),
                Some(_) => {}
                None => {
                    let first_due = wake_due.then_some(next_run_at);
                    let addr = AccountSync::new(id.clone(), self.st.clone(), self.permits.clone(), first_due).start();
                    self.children.insert(id, addr);
                }
            }
        }
    }

    fn reconcile(&mut self, ctx: &mut Context<Self>) {
        if self.stopping {
            return;
        }
        ctx.spawn(self.snapshot().into_actor(self).map(|(n, wanted), act, _| match wanted {
            Ok(w) => act.apply_snapshot(n, w, true),
            Err(e) => tracing::warn!(error = %e, "reconciling the account actors"),
        }));
        let st = self.st.clone();
        let batch = st.config.removal_batch_size;
        // Spend no link covers any more leaves in batches, one transaction each.
        actix::spawn(async move {
            loop {
                match st.write_plain(move |c| Ok(store::delete_orphan_spend(c, batch)?)).await {
                    Ok(n) if n == batch => continue,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "deleting unlinked spend");
                        break;
                    }
                }
            }
        });
    }

    pub fn live_children(&self) -> usize {
        self.children.values().filter(|a| a.connected()).count()
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.reconcile(ctx);
        ctx.run_interval(self.st.config.sync_reconcile_interval, |act, ctx| act.reconcile(ctx));
    }
}

/// The rows changed: reconcile now.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reconcile;

impl Handler<Reconcile> for Supervisor {
    type Result = ();

    fn handle(&mut self, _: Reconcile, ctx: &mut Context<Self>) {
        self.reconcile(ctx);
    }
}

/// Reconciles, then runs every account's due work now and answers when all
/// are done (how tests drive the schedule with a manual clock).
#[derive(Message)]
#[rtype(result = "Result<BTreeMap<String, Vec<Outcome>>>")]
pub struct RunDue;

impl Handler<RunDue> for Supervisor {
    type Result = ResponseActFuture<Self, Result<BTreeMap<String, Vec<Outcome>>>>;

    fn handle(&mut self, _: RunDue, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.snapshot().into_actor(self).then(|(n, wanted), act, _| {
            let result = wanted.map(|w| {
                // No wake-up: a Wake's drain would run the due work ahead of RunNow and hide it from the answer.
                act.apply_snapshot(n, w, false);
                act.children.iter().map(|(id, addr)| (id.clone(), addr.send(RunNow))).collect::<Vec<_>>()
            });
            async move {
                let mut out = BTreeMap::new();
                for (id, pending) in result? {
                    let outcomes = pending.await.map_err(crate::error::Error::internal)??;
                    out.insert(id, outcomes);
                }
                Ok(out)
            }
            .into_actor(act)
        }))
    }
}

/// How many account actors are alive (tests, metrics).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Children;

impl Handler<Children> for Supervisor {
    type Result = usize;

    fn handle(&mut self, _: Children, _ctx: &mut Context<Self>) -> usize {
        self.live_children()
    }
}

/// Stops every child once its run in flight (if any) has finished and released
/// its lease; answers when all have stopped. Sent on SIGTERM, before the
/// writer's last commit.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, _ctx: &mut Context<Self>) -> Self::Result {
        self.stopping = true;
        // A drain waiting for a permit gives up; one holding a permit ends after its current run.
        self.permits.close();
        let stops: Vec<_> = self.children.drain().map(|(_, addr)| addr.send(StopAfterRun)).collect();
        Box::pin(async move {
            for stop in stops {
                let _ = stop.await;
            }
        })
    }
}
