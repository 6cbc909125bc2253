//! rastrod: puts ad spend next to leads. See README.md for the tour and the design.

pub mod actors;
pub mod clock;
pub mod closed_set;
pub mod codes;
pub mod config;
pub mod crypto;
pub mod db;
pub mod demo;
pub mod error;
pub mod federation;
pub mod geoip;
pub mod http;
pub mod ids;
pub mod meta;
pub mod net;
pub mod request_metrics;
pub mod secret;
pub mod server;
pub mod service;
pub mod state;
pub mod store;
pub mod telemetry;
