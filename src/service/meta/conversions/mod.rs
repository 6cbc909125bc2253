//! Conversions to the site's pixel through Meta's Conversions API, in three
//! parts: `queue` (inside the lead write's transaction), `sender` (what a
//! pixel's actor runs) and `reads`.
//!
//! * **Queueing** ([`enqueue`], [`enqueue_column_event`]) runs inside the lead
//!   write's own transaction: a `Purchase` for a recorded sale, a `Lead` for a
//!   new lead with `sendLeadEvent`, and the event a board column maps to. Each
//!   event goes once per lead (its `eventId` is [`event_id`]); a failed one is
//!   opened again, with fresh hashes and no attempt made, when `meta` comes
//!   for it again.
//! * **Sending** ([`send_due`]) is what a pixel's sender actor runs: it takes a
//!   lease on up to `capi_batch_max` due events, sends them in one request,
//!   splits a batch Meta rejects in halves until the bad event stands alone,
//!   and writes each outcome in one transaction with the per-day counters. An
//!   event ends `sent` or `failed`, and its hashes are erased in the same
//!   statement ([`scrub`] then clears SQLite's WAL of them).
//! * **Reads**: [`list`] (`meta.conversions`) and [`counters`] (the
//!   `conversions` part of `meta.status`). Neither returns a hash.

pub mod contact_hashes;
mod queue;
mod reads;
mod sender;

pub use queue::*;
pub use reads::*;
pub use sender::*;

pub const PURCHASE: &str = "Purchase";
pub const LEAD: &str = "Lead";
pub const QUALIFIED_LEAD: &str = "QualifiedLead";
pub const SCHEDULE: &str = "Schedule";

/// SHA-256 of `br`: every lead is in Brazil.
pub const COUNTRY_BR_SHA256: &str = "885036a0da3dff3c3e05bc79bf49382b12bc5098514ed57ce0875aba1aa2c40d";
/// Meta's `action_source` for a sale closed in a chat.
pub const ACTION_SOURCE: &str = "chat";
/// Conversion Leads (a Meta instant-form lead's board moves, LA-19): how the
/// event is marked as the CRM's, beside Meta's lead id in `user_data.lead_id`.
pub const CONVERSION_LEADS_ACTION_SOURCE: &str = "system_generated";
pub const CONVERSION_LEADS_EVENT_SOURCE: &str = "crm";
pub const CONVERSION_LEADS_CRM: &str = "rastrod";

/// Conversions of click-to-WhatsApp leads sent by their click id (WA-31):
/// Meta's Conversions API for Business Messaging, on WhatsApp.
pub const BUSINESS_MESSAGING_ACTION_SOURCE: &str = "business_messaging";
pub const WHATSAPP_CHANNEL: &str = "whatsapp";
/// `Lead` as Meta takes it on `business_messaging` (it refuses `Lead` there).
pub const LEAD_SUBMITTED: &str = "LeadSubmitted";
/// A site sale of a visit that landed with an fbclid (WA-33).
pub const WEBSITE_ACTION_SOURCE: &str = "website";

/// The name a board event goes by on `business_messaging`, or None when Meta
/// refuses it there (`Schedule`, any other): that one keeps the chat path.
pub fn business_messaging_name(event_name: &str) -> Option<&'static str> {
    match event_name {
        LEAD => Some(LEAD_SUBMITTED),
        PURCHASE => Some(PURCHASE),
        QUALIFIED_LEAD => Some(QUALIFIED_LEAD),
        _ => None,
    }
}
