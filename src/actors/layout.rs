//! The layout actor: every `RASTRO_RETENTION_INTERVAL` it lays out the
//! funnel step rows of the days completed since its last round, on
//! PostgreSQL (see `service::analytics::reports::funnel_layout`), one
//! (site, day) per transaction of the group-commit writer. The mark rows
//! are the truth: a restarted process goes on from the last day laid out.

use super::periodic::Periodic;
use crate::db::Backend;
use crate::error::Result;
use crate::service::analytics::reports::funnel_layout;
use crate::service::context::Context as ServiceContext;
use crate::service::effects::{Effects, Written};

/// Every pending day laid out, a (site, day) per transaction (the actor's
/// round; the tests; the benchmark after a fill); answers the days laid out.
pub async fn drain(cx: &ServiceContext) -> Result<usize> {
    if cx.backend() == Backend::Sqlite {
        return Ok(0);
    }
    let mut days = 0;
    loop {
        let now = cx.now();
        let more = cx.write_alone(move |c| Ok(Written::new(funnel_layout::step(c, now)?, Effects::quiet()))).await?;
        if !more {
            return Ok(days);
        }
        days += 1;
    }
}

/// The layout actor; on SQLite its rounds find nothing to do.
pub fn actor(cx: &ServiceContext) -> Periodic {
    Periodic::new(cx.clone(), "layout", cx.config.retention_interval, |cx| {
        Box::pin(async move { drain(&cx).await.map(|_| ()) })
    })
}
