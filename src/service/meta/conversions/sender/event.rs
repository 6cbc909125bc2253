//! One queued conversion as the Conversions API event it is sent as: by
//! its own columns (hashed phone, external id, a form lead's id), or by the
//! way its batch found for it ([`Shape`]: a click-to-WhatsApp click id, a
//! site sale's landing).

use super::super::*;
use crate::config::Secret;
use crate::meta::graph::{CustomData, ServerEvent, UserData};
use crate::store::meta::conversions as store;

/// What [`server_event`] sends beyond the row's own columns.
#[derive(Debug)]
pub(super) enum Shape {
    /// `business_messaging` on WhatsApp, by the click id (WA-31).
    ClickId { ctwa_clid: Secret, account: String },
    /// `website`, with `fbc`, the browser's user agent and the landing page
    /// Meta requires there (WA-33).
    Website { fbc: Secret, user_agent: Option<Secret>, source_url: Option<String> },
}

pub(super) fn server_event(r: &store::ConversionRow, shape: Option<&Shape>) -> ServerEvent {
    let ph = r.ph.as_deref().map(|p| p.split(',').map(str::to_string).collect()).unwrap_or_default();
    let mut custom_data = (r.event_name == PURCHASE).then(|| CustomData {
        value: r.value_cents.map(|c| c as f64 / 100.0),
        currency: r.currency.clone(),
        ..CustomData::default()
    });
    match shape {
        // Meta's Conversions API for Business Messaging documents, for the
        // WhatsApp channel, exactly these two keys of user_data, both
        // required and sent as they are: the click id names the conversation
        // Meta attributes to the ad. The hashed phone, external id and
        // country are not among them, so they stay out: the click id is the
        // whole match, and the event shares no more of the person than it.
        Some(Shape::ClickId { ctwa_clid, account }) => {
            return ServerEvent {
                event_name: business_messaging_name(&r.event_name).unwrap_or(PURCHASE).to_string(),
                event_time: r.event_time.div_euclid(1000),
                event_id: r.event_id.clone(),
                action_source: BUSINESS_MESSAGING_ACTION_SOURCE.into(),
                messaging_channel: Some(WHATSAPP_CHANNEL.into()),
                event_source_url: None,
                user_data: UserData {
                    ctwa_clid: Some(ctwa_clid.expose().to_string()),
                    whatsapp_business_account_id: Some(account.clone()),
                    ..UserData::default()
                },
                custom_data,
            };
        }
        // A site sale: the visit's Facebook click as fbc, its value (WA-33).
        Some(Shape::Website { fbc, user_agent, source_url }) => {
            return ServerEvent {
                event_name: PURCHASE.into(),
                event_time: r.event_time.div_euclid(1000),
                event_id: r.sent_event_id.clone().unwrap_or_else(|| r.event_id.clone()),
                action_source: WEBSITE_ACTION_SOURCE.into(),
                messaging_channel: None,
                event_source_url: source_url.clone(),
                user_data: UserData {
                    fbc: Some(fbc.expose().to_string()),
                    client_user_agent: user_agent.as_ref().map(|ua| ua.expose().to_string()),
                    ..UserData::default()
                },
                custom_data,
            };
        }
        None => {}
    }
    // A form lead's event is a Conversion Leads one (LEADADS §7): Meta matches it by its lead id.
    let action_source = match &r.meta_lead_id {
        Some(_) => {
            let c = custom_data.get_or_insert_with(CustomData::default);
            c.event_source = Some(CONVERSION_LEADS_EVENT_SOURCE.into());
            c.lead_event_source = Some(CONVERSION_LEADS_CRM.into());
            CONVERSION_LEADS_ACTION_SOURCE
        }
        None => ACTION_SOURCE,
    };
    ServerEvent {
        event_name: r.crm_event_name.clone().unwrap_or_else(|| r.event_name.clone()),
        event_time: r.event_time.div_euclid(1000),
        event_id: r.event_id.clone(),
        action_source: action_source.into(),
        messaging_channel: None,
        event_source_url: None,
        user_data: UserData {
            ph,
            external_id: r.external_id.iter().cloned().collect(),
            country: vec![COUNTRY_BR_SHA256.into()],
            lead_id: r.meta_lead_id.clone(),
            ..UserData::default()
        },
        custom_data,
    }
}

/// `fb.1.<landing ms>.<fbclid>`: Meta's fbc of a click (WA-33).
pub fn fbc_of(landed_at: i64, fbclid: &str) -> String {
    format!("fb.1.{landed_at}.{fbclid}")
}
