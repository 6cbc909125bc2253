//! What web analytics keeps in one process: the tracker's rate limits and
//! salts, the tracked links' click window, and the database's cursor key once read.

use tokio::sync::OnceCell;

use crate::service::analytics::ingest::tracker::Tracker;

pub struct Runtime {
    pub tracker: Tracker,
    pub live: crate::service::analytics::reports::live_cache::LiveCache,
    /// The live states pushed to open dashboards (`live_push`).
    pub push: std::sync::Arc<crate::service::analytics::reports::live_push::LivePush>,
    /// Tracked links: one counted click per address and link within `RASTRO_LINK_CLICK_WINDOW`.
    pub clicks: crate::service::analytics::links::redirect::ClickWindow,
    /// The key that signs pagination cursors, once read (`reports::api::cursor_key`).
    pub(crate) cursor_key: OnceCell<Vec<u8>>,
}

impl Runtime {
    pub fn new(config: &crate::config::Config) -> Runtime {
        Runtime {
            tracker: Tracker::new(config),
            live: Default::default(),
            push: Default::default(),
            clicks: crate::service::analytics::links::redirect::ClickWindow::new(config.link_click_window),
            cursor_key: OnceCell::new(),
        }
    }
}
