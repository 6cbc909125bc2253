//! Web analytics (the TRK to IMP rules of docs/rules.md): the tracker's ingestion, visitors and
//! sessions, the rollups the report actors keep, and the reads over them.
//!
//! - `batch`: a tracker batch's shape and each event's checks;
//! - `urls`, `agent`, `routes`, `geo`: what a URL, a User-Agent, a path and an address become;
//! - `limits`: the tracker's rate limits;
//! - `ingest`: `POST /rastro/events`, the checks in their order;
//! - `accept`: one batch's rows, written in one group commit;
//! - `import`, `export`: historical events in and out (NDJSON);
//! - `rollup`: the outbox applied to the rollups, once per event;
//! - `site_map`, `vitals`: the site map's and the vitals digests' deltas;
//! - `site_map_report`, `vitals_report`: `siteMap` and `vitalsReport`;
//! - `regroup`: a `routePatterns` change's background regrouping, step by step;
//! - `reads`: overview, live visitors, a session;
//! - `live`: `liveVisitors` through the read cache;
//! - `coverage`: `dataCoverage`;
//! - `links`, `redirect`: tracked links, and their redirect with its click window;
//! - `sessions`, `pages`: session lists and journeys, paginated by signed cursors;
//! - `runtime`: what one process keeps (rate limits, salts, the cursor key);
//! - `definitions`: goals, funnels and affiliates (the configure scope);
//! - `conversions`: the trusted ledger, `listConversions`, `revenueSummary`;
//! - `goals`, `affiliates`, `funnels`: the definition reports (and the funnel step index); `span`: exact ranges over rollups.
//! - `identify`, `people`, `search`: identified people, their profiles and the people search;
//! - `runtime`: what one process keeps (rate limits, salts, the cursor key).

pub mod accept;
pub mod affiliates;
pub mod agent;
pub mod batch;
pub mod conversions;
pub mod coverage;
pub mod definitions;
pub mod export;
pub mod extras;
pub mod funnels;
pub mod geo;
pub mod goals;
pub mod identify;
pub mod import;
pub mod ingest;
pub mod limits;
pub mod links;
pub mod live;
pub mod month_tier;
pub mod pages;
pub mod people;
pub mod range_parts;
pub mod reads;
pub mod redirect;
pub mod regroup;
pub mod retention;
pub mod rollup;
pub mod routes;
pub mod runtime;
pub mod search;
pub mod sessions;
pub mod site_map;
pub mod site_map_report;
pub mod span;
pub mod urls;
pub mod vitals;
pub mod vitals_report;
