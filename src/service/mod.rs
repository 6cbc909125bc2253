//! The seeds' rules as plain functions over a connection and the time the
//! caller read from the `Clock`. Both the host API and the federated API call
//! these; no rule is written twice.

pub mod contact_hashes;
pub mod conversions;
pub mod leads;
pub mod meta_connection;
pub mod meta_errors;
pub mod meta_links;
pub mod meta_status;
pub mod meta_sync;
pub mod metrics;
pub mod names;
pub mod pipeline;
pub mod read_cache;
pub mod reports;
pub mod sites;
pub mod spend;
pub mod sync_schedule;
pub mod validate;
