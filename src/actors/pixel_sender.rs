//! `PixelSender`: one actor per pixel (per site) that drains the site's
//! Conversions API queue, and `PixelSenders`, the small supervisor that starts
//! them, wakes them and sweeps for lost sends.
//!
//! The rows are the truth, messages are wake-ups: a lead write queues its
//! conversion in its own transaction and then tells the supervisor
//! (through `Actors::dispatch`, [`notify_queued`]); a lost message only delays a send until the next sweep.
//!
//! * A sender runs [`conversions::send_due`] at once when woken, one run at a
//!   time, and then schedules itself (`run_later`) for the moment its queue next
//!   needs a look: a retry step, or a lease running out (a send lost on the way).
//! * The supervisor reconciles on start and every `capi_sweep_interval`: every
//!   site with a pending event gets its sender woken (a sender that died is
//!   started again). After events end it scrubs SQLite's WAL of their hashes.
//! * [`Drain`] runs everything due *now* (by the state's clock) and answers when
//!   it is done: tests drive the schedule with the manual clock and never sleep.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;

use super::Actors;
use crate::error::{Error, Result};
use crate::service::context::Context as ServiceContext;
use crate::service::meta::conversions::{self, Round};

/// How soon a sender looks again after a run failed (the database away).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(5);
/// The shortest self-scheduled wake (work due in the past waits this long).
const MIN_WAKE: Duration = Duration::from_millis(200);
/// How long after events end the WAL is scrubbed (erasures in between share one checkpoint).
const SCRUB_DELAY: Duration = Duration::from_millis(250);
/// Drain passes at most (each pass runs every site with pending events).
const DRAIN_PASSES: usize = 50;

/// Starts the supervisor of the pixel senders (once) and keeps its address in
/// `actors.pixels`. Must run inside the actix System.
pub fn start_pixel_senders(cx: &ServiceContext, actors: &Actors) -> Addr<PixelSenders> {
    if let Some(addr) = actors.pixels.get() {
        return addr.clone();
    }
    let permits = Arc::new(tokio::sync::Semaphore::new(cx.config.capi_max_concurrent.max(1)));
    let addr =
        PixelSenders { st: cx.clone(), children: HashMap::new(), permits, scrub_scheduled: false, stopping: false }
            .start();
    let _ = actors.pixels.set(addr.clone());
    actors.pixels.get().cloned().unwrap_or(addr)
}

/// Tells the supervisor the site may have queued a conversion (after the
/// write committed; sent by `Actors::dispatch`).
pub fn notify_queued(addr: &Addr<PixelSenders>, site_id: &str) {
    addr.do_send(Queued { site_id: site_id.to_string() });
}

/// Tells the supervisor hashes left the queue outside a send (a removed lead):
/// the WAL gets scrubbed soon.
pub fn notify_erased(addr: &Addr<PixelSenders>) {
    addr.do_send(Erased);
}

/// Runs everything due now through the supervisor; answers what was done.
pub async fn drain(actors: &Actors) -> Result<Round> {
    let addr = actors.pixels.get().cloned().ok_or_else(|| Error::internal("the pixel senders are not running"))?;
    addr.send(Drain).await.map_err(|e| Error::internal(format!("pixel senders: {e}")))?
}

/// The supervisor: it owns its children, as `supervisor::Supervisor` does.
pub struct PixelSenders {
    st: ServiceContext,
    children: HashMap<String, Addr<PixelSender>>,
    /// Runs at once across all pixels (`capi_max_concurrent`): a burst over
    /// many pixels holds that many batches in memory, not one per pixel.
    permits: Arc<tokio::sync::Semaphore>,
    scrub_scheduled: bool,
    /// Set by [`Shutdown`]: no sender is started or woken any more.
    stopping: bool,
}

impl PixelSenders {
    /// The live sender of `site_id`, started if it is not running (or died).
    fn child(&mut self, ctx: &mut Context<Self>, site_id: &str) -> Addr<PixelSender> {
        if let Some(addr) = self.children.get(site_id).filter(|a| a.connected()) {
            return addr.clone();
        }
        let addr = PixelSender {
            st: self.st.clone(),
            site_id: site_id.to_string(),
            runs: Arc::new(tokio::sync::Mutex::new(())),
            permits: self.permits.clone(),
            wake_waiting: Arc::new(AtomicBool::new(false)),
            timer: None,
            erased: ctx.address().recipient(),
        }
        .start();
        self.children.insert(site_id.to_string(), addr.clone());
        addr
    }

    /// Wakes the sender of each site in `sites` (a dead one is started again).
    fn wake(&mut self, ctx: &mut Context<Self>, sites: Vec<String>) {
        if self.stopping {
            return;
        }
        for site in sites {
            self.child(ctx, &site).do_send(Wake);
        }
    }
}

impl Actor for PixelSenders {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Start-up reconcile: whatever a previous process left pending goes now.
        ctx.notify(Sweep);
        let every = self.st.config.capi_sweep_interval;
        ctx.run_interval(every, |_, ctx| ctx.notify(Sweep));
    }
}

/// A site may have queued a conversion.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Queued {
    pub site_id: String,
}

impl Handler<Queued> for PixelSenders {
    type Result = ();
    fn handle(&mut self, msg: Queued, ctx: &mut Self::Context) {
        self.wake(ctx, vec![msg.site_id]);
    }
}

/// The sweeper: wakes the sender of every site with a pending event (a lost
/// send, a sender that died), and scrubs the WAL.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Sweep;

impl Handler<Sweep> for PixelSenders {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, _: Sweep, _: &mut Self::Context) -> Self::Result {
        let st = self.st.clone();
        let read = async move { conversions::sites_with_pending(&st).await };
        let st = self.st.clone();
        Box::pin(read.into_actor(self).then(move |sites, act, ctx| {
            match sites {
                Ok(sites) => {
                    // The sweep, not each wake-up, forgets the children that died: a lead
                    // write's wake-up stays one map lookup however many pixels there are.
                    act.children.retain(|_, addr| addr.connected());
                    act.wake(ctx, sites)
                }
                Err(e) => tracing::warn!(error = %e, "conversions sweep: reading the queue failed"),
            }
            async move {
                if let Err(e) = conversions::scrub(&st).await {
                    tracing::warn!(error = %e, "conversions sweep: WAL checkpoint failed");
                }
            }
            .into_actor(act)
        }))
    }
}

/// The live senders of these sites, started if needed: how [`Drain`]'s pass,
/// which runs outside the actor, reaches the children the actor owns.
#[derive(Message)]
#[rtype(result = "Vec<Addr<PixelSender>>")]
struct Senders(Vec<String>);

impl Handler<Senders> for PixelSenders {
    type Result = Vec<Addr<PixelSender>>;
    fn handle(&mut self, msg: Senders, ctx: &mut Self::Context) -> Self::Result {
        msg.0.iter().map(|site| self.child(ctx, site)).collect()
    }
}

/// Runs all work due now, site after site, and answers when it is done.
#[derive(Message)]
#[rtype(result = "Result<Round>")]
pub struct Drain;

impl Handler<Drain> for PixelSenders {
    type Result = ResponseFuture<Result<Round>>;
    fn handle(&mut self, _: Drain, ctx: &mut Self::Context) -> Self::Result {
        let (st, me) = (self.st.clone(), ctx.address());
        let gone = |e: MailboxError| Error::internal(format!("pixel sender: {e}"));
        Box::pin(async move {
            let mut total = Round::default();
            for _ in 0..DRAIN_PASSES {
                let mut pass = Round::default();
                let sites = conversions::sites_with_pending(&st).await?;
                for sender in me.send(Senders(sites)).await.map_err(gone)? {
                    let r = sender.send(RunNow).await.map_err(gone)??;
                    pass.add(&r);
                }
                total.add(&pass);
                if pass.ended() + pass.retried + pass.requests == 0 {
                    break;
                }
            }
            conversions::scrub(&st).await?;
            Ok(total)
        })
    }
}

/// Stops every sender once its run in flight (if any) has finished, so no
/// event is left under a lease; answers when all have stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for PixelSenders {
    type Result = ResponseFuture<()>;
    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) -> Self::Result {
        self.stopping = true;
        // Runs waiting for a permit give up at once; a run holding one finishes its batch.
        self.permits.close();
        let stops: Vec<_> = self.children.drain().map(|(_, addr)| addr.send(StopSender)).collect();
        Box::pin(async move {
            for stop in stops {
                let _ = stop.await;
            }
        })
    }
}

/// Events ended somewhere: their hashes left the rows; scrub the WAL soon.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Erased;

impl Handler<Erased> for PixelSenders {
    type Result = ();
    fn handle(&mut self, _: Erased, ctx: &mut Self::Context) {
        if self.scrub_scheduled {
            return;
        }
        self.scrub_scheduled = true;
        ctx.run_later(SCRUB_DELAY, |act, ctx| {
            act.scrub_scheduled = false;
            let st = act.st.clone();
            ctx.spawn(
                async move {
                    if let Err(e) = conversions::scrub(&st).await {
                        tracing::warn!(error = %e, "conversions: WAL checkpoint failed");
                    }
                }
                .into_actor(act),
            );
        });
    }
}

/// The sender of one site's pixel.
pub struct PixelSender {
    st: ServiceContext,
    site_id: String,
    /// One run at a time: a wake during a run waits for it, then runs again.
    runs: Arc<tokio::sync::Mutex<()>>,
    /// A woken run is waiting for its turn: further wakes join it.
    wake_waiting: Arc<AtomicBool>,
    /// Shared by every sender (see `PixelSenders::permits`).
    permits: Arc<tokio::sync::Semaphore>,
    /// The self-scheduled next look at the queue.
    timer: Option<SpawnHandle>,
    erased: Recipient<Erased>,
}

impl Actor for PixelSender {
    type Context = Context<Self>;
}

impl PixelSender {
    /// One run; `waiting` is cleared once it has its turn (what it sees from then on, it sends).
    fn run(&self, waiting: Option<Arc<AtomicBool>>) -> impl std::future::Future<Output = Result<Round>> + 'static {
        let (st, site, runs, permits) =
            (self.st.clone(), self.site_id.clone(), self.runs.clone(), self.permits.clone());
        async move {
            let _one_at_a_time = runs.lock().await;
            if let Some(w) = waiting {
                w.store(false, Ordering::SeqCst);
            }
            let _permit = permits.acquire_owned().await.map_err(|_| Error::unavailable("shutting down"))?;
            conversions::send_due(&st, &site).await
        }
    }

    /// After a run: ask for the WAL scrub, and wake again when the queue next needs it.
    fn after(&mut self, result: &Result<Round>, ctx: &mut Context<Self>) {
        let wait = match result {
            Ok(round) => {
                if round.ended() > 0 {
                    self.erased.do_send(Erased);
                }
                round.next_due.map(|at| {
                    let ms = u64::try_from(at.saturating_sub(self.st.now())).unwrap_or(0);
                    Duration::from_millis(ms).clamp(MIN_WAKE, self.st.config.capi_sweep_interval.max(MIN_WAKE))
                })
            }
            Err(e) => {
                tracing::warn!(site_id = %self.site_id, error = %e, "pixel sender: the run failed; trying again soon");
                Some(RETRY_AFTER_ERROR)
            }
        };
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
        if let Some(wait) = wait {
            self.timer = Some(ctx.run_later(wait, |_, ctx| ctx.notify(Wake)));
        }
    }
}

/// Look at the queue now (fire and forget).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake;

impl Handler<Wake> for PixelSender {
    type Result = ();
    fn handle(&mut self, _: Wake, ctx: &mut Self::Context) {
        if self.wake_waiting.swap(true, Ordering::SeqCst) {
            return;
        }
        ctx.spawn(
            self.run(Some(self.wake_waiting.clone())).into_actor(self).map(|result, act, ctx| act.after(&result, ctx)),
        );
    }
}

/// Run the queue now and answer what was done.
#[derive(Message)]
#[rtype(result = "Result<Round>")]
pub struct RunNow;

impl Handler<RunNow> for PixelSender {
    type Result = ResponseActFuture<Self, Result<Round>>;
    fn handle(&mut self, _: RunNow, _: &mut Self::Context) -> Self::Result {
        Box::pin(self.run(None).into_actor(self).map(|result, act, ctx| {
            act.after(&result, ctx);
            result
        }))
    }
}

/// Stop after the run in flight, if any (sent by [`Shutdown`]).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopSender;

impl Handler<StopSender> for PixelSender {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, _: StopSender, ctx: &mut Self::Context) -> Self::Result {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
        // Taking the run lock waits for the run in flight; it releases its own leases.
        let runs = self.runs.clone();
        Box::pin(
            async move {
                drop(runs.lock().await);
            }
            .into_actor(self)
            .map(|_, _, ctx| ctx.stop()),
        )
    }
}
