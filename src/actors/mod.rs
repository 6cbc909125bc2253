//! The actors: the supervisor of one `AccountSync` per linked ad account,
//! the supervisor of one `PixelSender` per pixel, and (Lead Ads) the
//! supervisor of one `PageLeads` per linked Page. [`start`] starts them, for
//! the daemon and the tests. [`Actors`] is how the rest of the daemon reaches
//! them: it receives every committed write's effects (the services'
//! `Dispatch`) and turns them into wake-ups.

pub mod account_sync;
pub mod layout;
pub mod page_leads;
pub mod periodic;
pub mod pixel_sender;
pub mod regroup;
pub mod report;
pub mod retention;
pub mod supervisor;

use std::sync::OnceLock;
use std::time::Duration;

use actix::{Actor, Addr};

use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Dispatch, Effects};

/// The supervisors' addresses, set once they are started.
#[derive(Default)]
pub struct Actors {
    pub sync: OnceLock<Addr<supervisor::Supervisor>>,
    pub pixels: OnceLock<Addr<pixel_sender::PixelSenders>>,
    pub reports: OnceLock<Addr<periodic::Periodic>>,
    pub retention: OnceLock<Addr<periodic::Periodic>>,
    pub regroups: OnceLock<Addr<periodic::Periodic>>,
    pub layouts: OnceLock<Addr<periodic::Periodic>>,
    /// Lead Ads: one actor per linked Page (only while `metaLeads` is served).
    pub page_leads: OnceLock<Addr<page_leads::PageLeadsSupervisor>>,
}

impl Dispatch for Actors {
    /// Wake-ups only: a lost one delays work until the next sweep, never loses it.
    fn dispatch(&self, effects: &Effects) {
        if effects.sync_changed
            && let Some(addr) = self.sync.get()
        {
            addr.do_send(supervisor::Reconcile);
        }
        if let Some(addr) = self.pixels.get() {
            for site_id in &effects.conversions_queued {
                pixel_sender::notify_queued(addr, site_id);
            }
            if effects.hashes_erased {
                pixel_sender::notify_erased(addr);
            }
        }
        if !effects.leadgen_pages.is_empty()
            && let Some(addr) = self.page_leads.get()
        {
            addr.do_send(page_leads::PagesChanged(effects.leadgen_pages.iter().cloned().collect()));
        }
    }
}

/// Starts both supervisors (once) over `cx`. Must run inside the actix System.
pub fn start(cx: &ServiceContext, actors: &Actors) {
    if actors.sync.get().is_none() {
        let _ = actors.sync.set(supervisor::Supervisor::new(cx.clone()).start());
    }
    pixel_sender::start_pixel_senders(cx, actors);
    if actors.reports.get().is_none() {
        let _ = actors.reports.set(report::actor(cx).start());
    }
    if actors.retention.get().is_none() {
        let _ = actors.retention.set(retention::actor(cx).start());
    }
    if actors.regroups.get().is_none() {
        let _ = actors.regroups.set(regroup::actor(cx).start());
    }
    if actors.layouts.get().is_none() {
        let _ = actors.layouts.set(layout::actor(cx).start());
    }
    if cx.capabilities().serves(crate::service::api::Capability::MetaLeads) {
        page_leads::start(cx, actors);
    }
}

/// On SIGTERM, before the writer's last commit: both supervisors stop their
/// children, each once its run in flight has finished (a run releases its own
/// lease). A run still going after `grace` is abandoned, its lease left to
/// expire, so a stuck Graph call cannot hold the process.
pub async fn shutdown(actors: &Actors, grace: Duration) {
    let sync = actors.sync.get().cloned();
    let pixels = actors.pixels.get().cloned();
    let pages = actors.page_leads.get().cloned();
    if let Some(addr) = actors.reports.get() {
        let _ = addr.send(periodic::Shutdown).await;
    }
    if let Some(addr) = actors.retention.get() {
        let _ = addr.send(periodic::Shutdown).await;
    }
    if let Some(addr) = actors.regroups.get() {
        let _ = addr.send(periodic::Shutdown).await;
    }
    if let Some(addr) = actors.layouts.get() {
        let _ = addr.send(periodic::Shutdown).await;
    }
    let stop = async {
        let sync = async {
            if let Some(addr) = sync {
                let _ = addr.send(supervisor::Shutdown).await;
            }
        };
        let pixels = async {
            if let Some(addr) = pixels {
                let _ = addr.send(pixel_sender::Shutdown).await;
            }
        };
        let pages = async {
            if let Some(addr) = pages {
                let _ = addr.send(page_leads::Shutdown).await;
            }
        };
        tokio::join!(sync, pixels, pages);
    };
    if tokio::time::timeout(grace, stop).await.is_err() {
        tracing::warn!(?grace, "a sync or send still ran after the shutdown grace; abandoned");
    }
}
