//! The rules (docs/rules.md) as plain functions over a connection and the time the
//! caller read from the `Clock`. Every transport (host API, federated API,
//! dashboard) calls these; no rule is written twice.
//!
//! Folders by bounded context, each below the application API (`api`):
//! - `sites`: the sites every other context is about (below all of them);
//! - `leads`: leads, the board and its event map, the lead reports;
//! - `meta`: the connection (tokens, login), links and pixels, the account
//!   sync and its spend, `meta.status`, the Conversions API;
//! - `federation`: the local grants of dashboard connections;
//! - `operators`: who signs in to the built-in dashboard, sessions, the sign-in limit.
//!
//! Shared by every context: what a service is given (`context::Context`: db,
//! clock, config, Graph client, secrets key), what a write changed and the one
//! place that acts on it after the commit (`effects`), argument checks
//! (`validate`) and the cache of polled reads (`read_cache`).

pub mod analytics;
pub mod api;
pub mod combine;
pub mod context;
pub mod effects;
pub mod federation;
pub mod leads;
pub mod meta;
pub mod operators;
pub mod read_cache;
pub mod reporting;
pub mod sites;
pub mod validate;
