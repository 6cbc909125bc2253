//! The reads over the rollups and the session rows: `overview`,
//! `liveVisitors` through the read cache (`live`), sessions, their lists
//! and journeys paginated by signed cursors (`sessions`, `pages`), `siteMap`,
//! `vitalsReport`, the definition reports (`goals`, `funnels` with the funnel
//! step index, `affiliates`), and how a range is read from the tiers exactly
//! (`span`, `range_parts`); `session_extras` is what a session or live row
//! carries beyond its own row; `filtered`, what `filters` and `breakdown` keep;
//! `approximate`, which days read rows retention has deleted.

pub mod affiliates;
pub mod api;
pub mod approximate;
pub mod filtered;
pub mod funnel_layout;
pub mod funnel_preview;
pub mod funnels;
pub mod goals;
pub mod live;
pub mod live_cache;
pub mod live_publisher;
pub mod live_push;
pub mod numbers;
pub mod overview;
pub mod pages;
pub mod range_parts;
pub mod session_extras;
pub mod sessions;
pub mod site_map;
pub mod site_map_local;
pub mod span;
pub mod vitals;
pub mod zone;
