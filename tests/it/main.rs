//! One integration-test binary: every test drives a real server over HTTP, on
//! SQLite and (with RASTRO_TEST_DATABASE_URL) on PostgreSQL.

mod common;

mod analytics;
mod analytics_crash;
mod board;
mod browser;
mod contract;
mod conversions;
mod dashboard;
mod definitions;
mod errors;
mod fake_graph;
mod federation;
mod federation_convex;
mod federation_jwt;
mod funnels;
mod goals_browser;
mod graph_client;
mod hardening;
mod layers;
mod leads;
mod ledger;
mod meta_connection;
mod meta_login;
mod mmdb;
mod month_tier;
mod ops;
mod people;
mod regroup;
mod reports;
mod retention;
mod rules_doc;
mod scale_out;
mod schema_agreement;
mod shutdown;
mod signin_limits;
mod site_map;
mod site_map_browser;
mod status;
mod sync;
mod tracked_links;
mod tracker_browser;
mod webdriver;
