//! The WhatsApp bridge end to end in the demo (docs/whatsapp.md): on Loja X
//! a visitor lands from the "Vídeo oferta" ad (the URL parameters Ads
//! Manager would add, with Meta's `fbclid`), reads a product and taps
//! "Fale no WhatsApp"; the demo's host records the conversation as a lead
//! with the reference it read in the first message, and the sale the shop
//! recorded for that visit in its ledger. The lead lands on the ad's row
//! with its spend ("Site → WhatsApp"), the sale in the row's "Retorno
//! total", and its purchase goes to the pixel with the visit's click id.
//!
//! Everything goes through the real paths: the tracker's ingestion, then
//! `recordLead` and `recordConversion` as the host API calls them.

use std::net::{IpAddr, Ipv4Addr};

use serde_json::json;

use super::DEMO_ADS;
use super::analytics::UAS;
use crate::error::Result;
use crate::service::analytics::conversions::{self, RecordConversion};
use crate::service::analytics::ingest::{self, Request};
use crate::service::analytics::vocabulary::LineType;
use crate::service::context::Context;
use crate::service::leads::{self, RecordLead};

/// The reference the demo visitor's tap wrote into the message.
pub const DEMO_REF: &str = "W4ZAP2";
pub const DEMO_SITE: &str = "loja-x";
const DOMAIN: &str = "lojax.example.com";
pub const LEAD_KEY: &str = "demo-site-whatsapp-1";
/// The visitor's id, unique to this path so the traffic generator never meets it.
pub const VISITOR: &str = "v_demo_whatsapp_bridge";

/// What the path left: whether the lead found its visit, and the sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridged {
    pub lead_id: String,
    pub matched: bool,
    pub conversion_id: String,
}

/// Runs the path once (a second run finds the lead and the sale already
/// there and changes nothing).
pub async fn seed(cx: &Context, now: i64) -> Result<Bridged> {
    let (_, campaign_id, campaign, adset_id, _, ad_id, _) =
        DEMO_ADS.iter().find(|a| a.0 == DEMO_SITE).copied().expect("Loja X has ads");
    let landing = format!(
        "https://{DOMAIN}/?utm_source=facebook&utm_medium=paid_social&utm_campaign={}&utm_term={adset_id}&utm_content={ad_id}\
         &utm_id={campaign_id}&fbclid=IwAR0demoBridgeClick",
        campaign.replace(' ', "+")
    );
    let product = format!("https://{DOMAIN}/p/1");
    let body = json!({"siteId": DEMO_SITE, "visitorId": VISITOR, "language": "pt-BR", "events": [
        {"type": LineType::Pageview, "pageviewId": "p_demo_bridge_landing", "url": landing},
        {"type": LineType::Pageview, "pageviewId": "p_demo_bridge_product", "url": product},
        {"type": LineType::Event, "name": "whatsapp_click", "url": product,
            "properties": {"number": "5511987654321", "ref": DEMO_REF}},
    ]})
    .to_string();
    let origin = format!("https://{DOMAIN}");
    let request = Request {
        body: body.as_bytes(),
        // A documentation address (never a real client's).
        ip: IpAddr::V4(Ipv4Addr::new(203, 0, 113, 77)),
        user_agent: UAS[0],
        origin: Some(&origin),
        referer: Some(&product),
    };
    ingest::ingest(cx, request).await.map_err(|r| r.error)?;

    // The conversation, right after the tap, as the demo's host records it.
    let clock = now.max(cx.clock.now_ms());
    let at = clock + 1_000;
    let input = RecordLead {
        label: Some("Contato do site".into()),
        web_ref: Some(DEMO_REF.into()),
        column: Some("novo".into()),
        ..RecordLead::new(LEAD_KEY, format!("{LEAD_KEY}-created"), at, "whatsapp")
    };
    let lead = leads::record_lead(cx, at, DEMO_SITE.to_string(), input).await?;
    let session_id = cx
        .read({
            let lead_id = lead.lead_id.clone();
            move |c| Ok(crate::store::leads::visits::of_lead(c, &lead_id)?.map(|v| v.session_id))
        })
        .await?;

    let session_id_found = session_id.is_some();
    // The shop's own sale of that visit, in its ledger.
    let sale = RecordConversion {
        conversion_key: "demo-bridge-order-1".into(),
        occurred_at: at + 1_000,
        name: "Pedido".into(),
        value_cents: 18_990,
        visitor_id: None,
        session_id,
        properties: Some(json!({"eventId": "demo-bridge-order-1"})),
    };
    let recorded = cx.write(move |c| conversions::record_written(c, clock, DEMO_SITE, sale)).await?;
    Ok(Bridged { lead_id: lead.lead_id, matched: session_id_found, conversion_id: recorded.conversion_id })
}
