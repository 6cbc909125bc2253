//! `PageLeads`: one actor per linked Facebook Page that turns its leadgen
//! receipts into leads ([`lead_ads::fetch::run_page`]), and `PageLeadsSupervisor`,
//! which starts them, wakes them and sweeps for work a lost wake-up left.
//! Built like the pixel senders (`pixel_sender`): the rows are the truth and
//! messages are wake-ups; a run holds its Page's lease in the database, so
//! two processes on one PostgreSQL never work one Page at once.
//!
//! * A Page's actor runs at once when woken, one run at a time, then
//!   schedules itself for the moment its next receipt is due (a retry step).
//! * The supervisor sweeps on start and every `RASTRO_META_LEADS_SWEEP_INTERVAL`.
//! * [`drain`] runs everything due *now* (by the context's clock) and answers
//!   when done: tests drive the retries with the manual clock, never sleeping.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;

use super::Actors;
use crate::error::{Error, Result};
use crate::service::context::Context as ServiceContext;
use crate::service::meta::lead_ads::fetch::{self, PageRound};

/// How soon a Page looks again after a run failed (the database away).
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(5);
/// The shortest self-scheduled wake.
const MIN_WAKE: Duration = Duration::from_millis(200);
/// Drain passes at most (each pass runs every Page with work).
const DRAIN_PASSES: usize = 50;

/// Starts the supervisor (once) and keeps its address in `actors.page_leads`.
pub fn start(cx: &ServiceContext, actors: &Actors) {
    if actors.page_leads.get().is_none() {
        let addr = PageLeadsSupervisor { st: cx.clone(), children: HashMap::new(), stopping: false }.start();
        let _ = actors.page_leads.set(addr);
    }
}

/// Runs everything due now through the supervisor; answers what was done.
pub async fn drain(actors: &Actors) -> Result<PageRound> {
    let addr = actors.page_leads.get().cloned().ok_or_else(|| Error::internal("the Page actors are not running"))?;
    addr.send(Drain).await.map_err(|e| Error::internal(format!("page actors: {e}")))?
}

pub struct PageLeadsSupervisor {
    st: ServiceContext,
    children: HashMap<String, Addr<PageLeads>>,
    stopping: bool,
}

impl PageLeadsSupervisor {
    fn child(&mut self, page_id: &str) -> Addr<PageLeads> {
        if let Some(addr) = self.children.get(page_id).filter(|a| a.connected()) {
            return addr.clone();
        }
        let addr = PageLeads {
            st: self.st.clone(),
            page_id: page_id.to_string(),
            runs: Arc::new(tokio::sync::Mutex::new(())),
            wake_waiting: Arc::new(AtomicBool::new(false)),
            timer: None,
        }
        .start();
        self.children.insert(page_id.to_string(), addr.clone());
        addr
    }

    fn wake(&mut self, pages: Vec<String>) {
        if self.stopping {
            return;
        }
        for page in pages {
            self.child(&page).do_send(Wake);
        }
    }
}

impl Actor for PageLeadsSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.notify(Sweep);
        ctx.run_interval(self.st.config.meta_leads_sweep_interval, |_, ctx| ctx.notify(Sweep));
    }
}

/// These Pages got receipts or were linked (sent by `Actors::dispatch`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct PagesChanged(pub Vec<String>);

impl Handler<PagesChanged> for PageLeadsSupervisor {
    type Result = ();
    fn handle(&mut self, msg: PagesChanged, _: &mut Self::Context) {
        self.wake(msg.0);
    }
}

/// Wakes every Page with a pending receipt or a reconciliation due (a lost
/// wake-up, an actor that died, the reconciliation's schedule).
#[derive(Message)]
#[rtype(result = "()")]
struct Sweep;

impl Handler<Sweep> for PageLeadsSupervisor {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, _: Sweep, _: &mut Self::Context) -> Self::Result {
        let st = self.st.clone();
        Box::pin(async move { fetch::pages_with_work(&st).await }.into_actor(self).map(|pages, act, _| match pages {
            Ok(pages) => {
                act.children.retain(|_, addr| addr.connected());
                act.wake(pages);
            }
            Err(e) => tracing::warn!(code = e.code.as_str(), "lead ads sweep: reading the receipts failed"),
        }))
    }
}

/// The live actors of these Pages, started if needed (for [`Drain`]).
#[derive(Message)]
#[rtype(result = "Vec<Addr<PageLeads>>")]
struct Children(Vec<String>);

impl Handler<Children> for PageLeadsSupervisor {
    type Result = Vec<Addr<PageLeads>>;
    fn handle(&mut self, msg: Children, _: &mut Self::Context) -> Self::Result {
        msg.0.iter().map(|p| self.child(p)).collect()
    }
}

/// Runs all work due now, Page after Page, and answers when it is done.
#[derive(Message)]
#[rtype(result = "Result<PageRound>")]
pub struct Drain;

impl Handler<Drain> for PageLeadsSupervisor {
    type Result = ResponseFuture<Result<PageRound>>;
    fn handle(&mut self, _: Drain, ctx: &mut Self::Context) -> Self::Result {
        let (st, me) = (self.st.clone(), ctx.address());
        let gone = |e: MailboxError| Error::internal(format!("page actor: {e}"));
        Box::pin(async move {
            let mut total = PageRound::default();
            for _ in 0..DRAIN_PASSES {
                let mut pass = PageRound::default();
                let pages = fetch::pages_with_work(&st).await?;
                for page in me.send(Children(pages)).await.map_err(gone)? {
                    pass.add(&page.send(RunNow).await.map_err(gone)??);
                }
                total.add(&pass);
                if !pass.worked() {
                    break;
                }
            }
            Ok(total)
        })
    }
}

/// Stops every Page's actor once its run in flight has finished (it releases its own lease).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for PageLeadsSupervisor {
    type Result = ResponseFuture<()>;
    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) -> Self::Result {
        self.stopping = true;
        let stops: Vec<_> = self.children.drain().map(|(_, addr)| addr.send(Stop)).collect();
        Box::pin(async move {
            for stop in stops {
                let _ = stop.await;
            }
        })
    }
}

/// The actor of one Page.
pub struct PageLeads {
    st: ServiceContext,
    page_id: String,
    /// One run at a time: a wake during a run waits for it, then runs again.
    runs: Arc<tokio::sync::Mutex<()>>,
    /// A woken run is waiting for its turn: further wakes join it.
    wake_waiting: Arc<AtomicBool>,
    timer: Option<SpawnHandle>,
}

impl Actor for PageLeads {
    type Context = Context<Self>;
}

impl PageLeads {
    fn run(&self, waiting: Option<Arc<AtomicBool>>) -> impl std::future::Future<Output = Result<PageRound>> + 'static {
        let (st, page, runs) = (self.st.clone(), self.page_id.clone(), self.runs.clone());
        async move {
            let _one_at_a_time = runs.lock().await;
            if let Some(w) = waiting {
                w.store(false, Ordering::SeqCst);
            }
            fetch::run_page(&st, &page).await
        }
    }

    /// After a run: wake again when the Page's next receipt is due.
    fn after(&mut self, result: &Result<PageRound>, ctx: &mut Context<Self>) {
        let sweep = self.st.config.meta_leads_sweep_interval.max(MIN_WAKE);
        let wait = match result {
            Ok(round) => round.next_due.map(|at| {
                let ms = u64::try_from(at.saturating_sub(self.st.now())).unwrap_or(0);
                Duration::from_millis(ms).clamp(MIN_WAKE, sweep)
            }),
            Err(e) => {
                tracing::warn!(code = e.code.as_str(), "a Page's lead run failed; trying again soon");
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

#[derive(Message)]
#[rtype(result = "()")]
struct Wake;

impl Handler<Wake> for PageLeads {
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

#[derive(Message)]
#[rtype(result = "Result<PageRound>")]
struct RunNow;

impl Handler<RunNow> for PageLeads {
    type Result = ResponseActFuture<Self, Result<PageRound>>;
    fn handle(&mut self, _: RunNow, _: &mut Self::Context) -> Self::Result {
        Box::pin(self.run(None).into_actor(self).map(|result, act, ctx| {
            act.after(&result, ctx);
            result
        }))
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

impl Handler<Stop> for PageLeads {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, _: Stop, ctx: &mut Self::Context) -> Self::Result {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
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
