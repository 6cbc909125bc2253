//! The Meta context: the connection (a sealed token per owner, Facebook Login
//! for Business), ad account links and the site's pixel, the account sync and
//! the spend it reads, `meta.status`, the Conversions API, and Lead Ads
//! (`lead_ads`: Pages, forms and the leadgen webhook's receipts).

pub mod api;
pub mod connection;
pub mod conversions;
pub mod errors;
pub mod formatted;
pub mod lead_ads;
pub mod links;
pub mod spend;
pub mod status;
pub mod sync;
