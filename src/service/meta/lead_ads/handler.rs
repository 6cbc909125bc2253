//! The site's form-lead handler (LEADADS.md §3, §5.1, §5.4): the host's URL
//! that receives a form lead's answers, the only place they ever go.
//!
//! `setFormLeadHandler` stores the URL and its secret (sealed like every
//! token); while a site has none, its Pages fetch nothing and read
//! `HANDLER_MISSING` (LA-10). A delivery is one signed POST
//! (`X-Rastro-Signature: sha256=<HMAC(secret, body)>`, `X-Rastro-Delivery:
//! <receipt id>`); its outcome decides the receipt's fate (LA-12). The
//! handler must be idempotent on `leadgenId`: a crash between its 2xx and
//! the receipt's commit delivers the lead again.

use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::codes::Fault;
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::meta::graph::FormLead;
use crate::secret::Secret;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::store::meta::lead_ads::{self as store, FormRow, ReceiptRow};

/// The shortest secret a handler takes (LEADADS.md §3).
pub const MIN_SECRET: usize = 32;
const MAX_SECRET: usize = 512;
const MAX_URL: usize = 2048;

/// `PUT /v1/sites/{siteId}/meta/form-lead-handler`'s body.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetFormLeadHandler {
    /// https, or http on loopback only.
    pub url: String,
    /// At least 32 characters; signs every delivery; stored sealed, never answered.
    pub secret: String,
}

impl std::fmt::Debug for SetFormLeadHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetFormLeadHandler").field("url", &self.url).finish_non_exhaustive()
    }
}

/// The handler's state: whether deliveries can go.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandlerState {
    pub handler_ready: bool,
}

fn check(a: &SetFormLeadHandler) -> Result<url::Url> {
    let url = url::Url::parse(&a.url).map_err(|_| Error::invalid("url is not a URL"))?;
    if a.url.len() > MAX_URL || !crate::meta::graph::allowed_external_url(&url) || url.username() != "" {
        return Err(Error::invalid("url must be https (or http on loopback), without credentials"));
    }
    let n = a.secret.chars().count();
    if !(MIN_SECRET..=MAX_SECRET).contains(&n) {
        return Err(Error::invalid(format!("secret must be {MIN_SECRET} to {MAX_SECRET} characters")));
    }
    Ok(url)
}

/// `setFormLeadHandler`: stores the handler, ends the Pages' `HANDLER_MISSING`
/// and wakes them, so the waiting receipts are delivered (LA-10).
pub async fn set(cx: &Context, site_id: &str, a: SetFormLeadHandler) -> Result<HandlerState> {
    let url = check(&a)?;
    let sealed = cx.secrets()?.seal(&Secret::new(a.secret), Identity::FormHandler(site_id))?;
    let (site, now) = (site_id.to_string(), cx.now());
    cx.write(move |c| {
        crate::service::sites::require(c, &site)?;
        store::set_handler(c, &site, url.as_str(), &sealed, now)?;
        let pages = store::clear_page_errors(c, &site, Fault::HandlerMissing.as_str(), now)?;
        let mut effects = Effects::default();
        effects.leadgen_pages.extend(pages);
        Ok(Written::new(HandlerState { handler_ready: true }, effects))
    })
    .await
}

/// `DELETE …/form-lead-handler`: later receipts wait for a new handler.
pub async fn remove(cx: &Context, site_id: &str) -> Result<HandlerState> {
    let site = site_id.to_string();
    cx.write(move |c| {
        crate::service::sites::require(c, &site)?;
        store::delete_handler(c, &site)?;
        Ok(Written::new(HandlerState { handler_ready: false }, Effects::default()))
    })
    .await
}

/// A handler ready to take deliveries: its URL and opened secret.
pub struct Handler {
    pub url: String,
    secret: Secret,
}

/// The site's handler, or None (its Pages fetch nothing). A secret sealed
/// under another key is no handler either: the Page says why.
pub async fn of_site(cx: &Context, site_id: &str) -> Result<std::result::Result<Handler, String>> {
    let site = site_id.to_string();
    let Some(row) = cx.read(move |c| Ok(store::handler(c, &site)?)).await? else {
        return Ok(Err(Fault::HandlerMissing.with("the site has no form-lead handler (setFormLeadHandler)")));
    };
    match cx.secrets()?.open(&row.sealed_secret, Identity::FormHandler(site_id)) {
        Ok(secret) => Ok(Ok(Handler { url: row.url, secret })),
        Err(_) => {
            Ok(Err(Fault::HandlerMissing.with("the handler's secret was sealed under another key: set it again")))
        }
    }
}

/// How one delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// 2xx: the handler has the lead.
    Delivered,
    /// A 4xx other than 408/429: it will not take it (visible, not retried).
    Refused(u16),
    /// 408, 429, 5xx, a timeout or no connection: retried on the schedule.
    Unavailable(String),
}

/// One HTTP client for every handler: no redirects (a handler's answer is
/// its own, never another host's), the timeout set per delivery.
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .build()
            .expect("the handler client builds")
    })
}

/// The delivered body (LEADADS.md §5.4). Answers in memory only.
pub fn body(r: &ReceiptRow, lead_id: &str, lead: &FormLead, form: Option<&FormRow>) -> Vec<u8> {
    let labels: Vec<(String, String)> = form
        .and_then(|f| serde_json::from_str::<Vec<serde_json::Value>>(&f.questions).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|q| Some((q["key"].as_str()?.to_string(), q["label"].as_str().unwrap_or_default().to_string())))
        .collect();
    let label = |key: &str| labels.iter().find(|(k, _)| k == key).map_or(key.to_string(), |(_, l)| l.clone());
    let answers: Vec<_> = lead.answers.iter().map(|(k, v)| json!({"key": k, "label": label(k), "value": v})).collect();
    let mut fields = serde_json::Map::new();
    for (name, keys) in
        [("fullName", &["full_name", "name"][..]), ("phone", &["phone_number", "phone"]), ("email", &["email"])]
    {
        if let Some(v) = keys.iter().find_map(|k| lead.answer(k)) {
            fields.insert(name.into(), json!(v));
        }
    }
    let created = lead.created_ms.or(r.created_time).unwrap_or(r.received_at);
    let created_time = chrono::DateTime::from_timestamp_millis(created).map(|t| t.to_rfc3339());
    let value = json!({
        "leadgenId": r.leadgen_id,
        "siteId": r.site_id,
        "leadId": lead_id,
        "formId": lead.form_id.clone().or_else(|| r.form_id.clone()),
        "pageId": r.page_id,
        "adId": lead.ad_id.clone().or_else(|| r.ad_id.clone()),
        "campaignId": lead.campaign_id,
        "createdTime": created_time,
        "isOrganic": lead.is_organic,
        "platform": lead.platform,
        "fields": fields,
        "answers": answers,
    });
    serde_json::to_vec(&value).unwrap_or_default()
}

/// POSTs `body` to the handler, signed; never logs the body or the secret.
pub async fn deliver(cx: &Context, h: &Handler, delivery_id: &str, body: Vec<u8>) -> Delivery {
    let signature = crate::crypto::signature_sha256(h.secret.expose().as_bytes(), &body);
    let sent = client()
        .post(&h.url)
        .timeout(cx.config.meta_leads_handler_timeout)
        .header("content-type", "application/json")
        .header("x-rastro-signature", signature)
        .header("x-rastro-delivery", delivery_id)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(res) => {
            let status = res.status().as_u16();
            match status {
                200..=299 => Delivery::Delivered,
                408 | 429 => Delivery::Unavailable(format!("the handler answered {status}")),
                400..=499 => Delivery::Refused(status),
                _ => Delivery::Unavailable(format!("the handler answered {status}")),
            }
        }
        Err(e) if e.is_timeout() => Delivery::Unavailable("the handler did not answer in time".into()),
        Err(_) => Delivery::Unavailable("the handler could not be reached".into()),
    }
}
