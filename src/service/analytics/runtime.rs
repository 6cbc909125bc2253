//! What web analytics keeps in one process: the tracker's rate limits and
//! salts, the tracked links' click window, and the database's cursor key once read.

use tokio::sync::OnceCell;

use crate::service::analytics::ingest::Tracker;
use crate::error::Result;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};

pub struct Runtime {
    pub tracker: Tracker,
    pub live: crate::service::analytics::reports::live::LiveCache,
    /// Tracked links: one counted click per address and link within `RASTRO_LINK_CLICK_WINDOW`.
    pub clicks: crate::service::analytics::links::redirect::ClickWindow,
    cursor_key: OnceCell<Vec<u8>>,
}

impl Runtime {
    pub fn new(config: &crate::config::Config) -> Runtime {
        Runtime {
            tracker: Tracker::new(config),
            live: Default::default(),
            clicks: crate::service::analytics::links::redirect::ClickWindow::new(config.link_click_window),
            cursor_key: OnceCell::new(),
        }
    }

    /// The key that signs pagination cursors: made once for the database.
    pub async fn cursor_key(&self, cx: &Context) -> Result<Vec<u8>> {
        self.cursor_key
            .get_or_try_init(|| async {
                let fresh: [u8; 32] = crate::ids::random_bytes()?;
                cx.write(move |c| {
                    let key = crate::store::analytics::key(c, "cursor", fresh)?;
                    Ok(Written::new(key, Effects { changes_cached_reads: false, ..Effects::default() }))
                })
                .await
            })
            .await
            .cloned()
    }
}
