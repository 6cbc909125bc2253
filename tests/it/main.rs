//! One integration-test binary: every test drives a real server over HTTP, on
//! SQLite and (with RASTRO_TEST_DATABASE_URL) on PostgreSQL. A folder per
//! bounded context (`leads`, `meta`, `analytics`, `federation`) and per way in
//! (`dashboard`, `browser`, `ops`), so a test's path names where it belongs
//! (`analytics::crash::…`); at the top, the harness (`common`) and the checks
//! of the whole: the error matrix, the OpenAPI contract and its drifts, the
//! module map (`layers`) and the rules (`rules_doc`).

mod common;

mod analytics;
mod browser;
mod contract;
mod dashboard;
mod errors;
mod federation;
mod layers;
mod leads;
mod meta;
mod ops;
mod reporting;
mod rules_doc;
mod schema_agreement;
mod two_transactions;
