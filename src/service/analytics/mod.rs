//! Web analytics: the tracker's ingestion, visitors and sessions, the
//! rollups the report actor keeps, and the reads over them. Folders by
//! what they do:
//!
//! - `ingest`: `POST /rastro/events` (its checks in order), a batch's shape,
//!   what a URL, a User-Agent, a path and an address become, the rate
//!   limits, one batch's rows in one group commit (`accept`), the import and
//!   export of historical events, route patterns;
//! - `rollup`: the outbox applied to the rollups once per event, the site
//!   map's and vitals digests' deltas, the month tier's build, a
//!   `routePatterns` change's regrouping;
//! - `reports`: overview, sessions and journeys, live visitors, siteMap,
//!   vitalsReport, goals, funnels and affiliates reports;
//! - `definitions`: goals, funnels and affiliates (the configure scope);
//! - `conversions`: the trusted ledger, `listConversions`, `revenueSummary`;
//! - `people`: identify, profiles and the people search;
//! - `links`: tracked links and their redirect;
//! - `retention`: policies, the retention runs and `dataCoverage`;
//! - `runtime`: what one process keeps (rate limits, salts, the cursor key);
//! - `vocabulary`: the closed sets (tiers, dimensions, event kinds, outbox
//!   changes, retention classes), their stored strings written once.

pub mod conversions;
pub mod definitions;
pub mod ingest;
pub mod links;
pub mod people;
pub mod reports;
pub mod retention;
pub mod rollup;
pub mod runtime;
pub mod settings;
pub mod vocabulary;
