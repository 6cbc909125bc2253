//! The layout actor: every `RASTRO_RETENTION_INTERVAL` it lays out the
//! funnel step rows of the days completed since its last round, on
//! PostgreSQL (see `service::analytics::reports::funnel_layout`), one
//! (site, day) per transaction of the group-commit writer. The mark rows
//! are the truth: a restarted process goes on from the last day laid out.

use super::periodic::Periodic;
use crate::service::analytics::reports::funnel_layout;
use crate::service::context::Context as ServiceContext;

/// The layout actor; on SQLite its rounds find nothing to do.
pub fn actor(cx: &ServiceContext) -> Periodic {
    Periodic::new(cx.clone(), "layout", cx.config.retention_interval, |cx| {
        Box::pin(async move { funnel_layout::drain(&cx).await.map(|_| ()) })
    })
}
