//! The Meta context, against the fake Graph API the daemon starts itself or a
//! scripted Graph server: `connection` and `login` (the connection per owner,
//! links and pixels), `sync` (the account sync and its spend), `status`
//! (meta.status), `conversions` (the Conversions API), `click_ids` (Meta told
//! by click id: the WhatsApp bridge's WA-30 to WA-34), `graph_client` (the
//! Graph client alone) and `fake_graph` (the fake itself).

mod click_ids;
mod connection;
mod conversions;
mod fake_graph;
mod graph_client;
pub(crate) mod lead_ads;
mod lead_ads_crash;
mod login;
mod status;
mod sync;
