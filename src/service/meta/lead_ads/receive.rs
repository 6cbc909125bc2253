//! Meta's leadgen webhook (LEADADS.md §4): the subscription check and the
//! signed delivery. A delivery is authenticated over the exact bytes received
//! before anything is parsed (LA-06); each `leadgen` change of a linked Page
//! becomes one receipt committed before the answer (LA-07); a repeat of a
//! known leadgen id changes nothing. Receipts hold ids and times only.

use serde::Serialize;
use serde_json::Value;
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

use super::leadgen_ready;
use crate::error::{Code, Error, Result};
use crate::service::api::Capability;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::store::meta::lead_ads::{self as store, NewReceipt};

/// The largest `hub.challenge` echoed (Meta's are short numbers).
const MAX_CHALLENGE: usize = 128;

/// The permission a forwarding token (a control plane's JWT) carries.
pub const PERM_LEADGEN: &str = "meta:leadgen";

/// The route exists only while the capability is on (else 404, LA-01).
fn served(cx: &Context) -> Result<()> {
    if cx.capabilities().serves(Capability::MetaLeads) { Ok(()) } else { Err(Error::not_found("no such route")) }
}

fn forbidden(message: &str) -> Error {
    Error::new(Code::Forbidden, message)
}

/// `GET /rastro/meta/leadgen?hub.mode=subscribe&hub.verify_token=T&hub.challenge=C`:
/// the challenge when `T` is the configured token (compared in constant time), else 403 (LA-05).
pub fn verify(cx: &Context, mode: Option<&str>, token: Option<&str>, challenge: Option<&str>) -> Result<String> {
    served(cx)?;
    let expected = cx.config.meta_webhook_verify_token.as_ref();
    let token_ok = match (expected, token) {
        (Some(e), Some(t)) => bool::from(e.expose().as_bytes().ct_eq(t.as_bytes())),
        _ => false,
    };
    if mode != Some("subscribe") || !token_ok {
        return Err(forbidden("the verify token does not match"));
    }
    match challenge {
        Some(c) if !c.is_empty() && c.len() <= MAX_CHALLENGE && c.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Ok(c.to_string())
        }
        _ => Err(Error::invalid("hub.challenge must be 1-128 letters or digits")),
    }
}

/// Whether `header` is `sha256=<hex HMAC-SHA256(secret, body)>` (constant time).
pub fn signature_matches(secret: &str, body: &[u8], header: Option<&str>) -> bool {
    use hmac::{Hmac, KeyInit, Mac};
    let Some(hex) = header.and_then(|h| h.trim().strip_prefix("sha256=")) else { return false };
    if hex.len() != 64 {
        return false;
    }
    let bytes: Option<Vec<u8>> = (0..64).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect();
    let Some(bytes) = bytes else { return false };
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(body);
    mac.verify_slice(&bytes).is_ok()
}

/// What a delivery did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Received {
    /// New receipts, committed.
    pub received: u64,
    /// Leadgen ids already known: nothing changed.
    pub duplicates: u64,
    /// Changes of Pages linked to no site (counted in /metrics) or not leadgen ones.
    pub ignored: u64,
}

/// One `leadgen` change, ids only.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    leadgen_id: String,
    page_id: String,
    form_id: Option<String>,
    ad_id: Option<String>,
    /// Epoch milliseconds.
    created_time: Option<i64>,
}

/// A Graph id as Meta sends it (a string or a number): `[A-Za-z0-9_]{1,64}`.
fn id(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_u64()?.to_string(),
        _ => return None,
    };
    let ok = !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then_some(s)
}

/// The `leadgen` changes of a delivery, and how many other changes it held.
fn changes(body: &Value) -> Result<(Vec<Change>, u64)> {
    let entries = body
        .get("entry")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::invalid("the body is not Meta's webhook JSON ({object, entry: [...]})"))?;
    let (mut out, mut other) = (Vec::new(), 0u64);
    for entry in entries {
        for change in entry.get("changes").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let value = change.get("value");
            let parsed = (change.get("field").and_then(Value::as_str) == Some("leadgen"))
                .then(|| {
                    let v = value?;
                    Some(Change {
                        leadgen_id: id(v.get("leadgen_id"))?,
                        page_id: id(v.get("page_id")).or_else(|| id(entry.get("id")))?,
                        form_id: id(v.get("form_id")),
                        ad_id: id(v.get("ad_id")),
                        created_time: v.get("created_time").and_then(Value::as_i64).map(|s| s.saturating_mul(1000)),
                    })
                })
                .flatten();
            match parsed {
                Some(c) => out.push(c),
                None => other += 1,
            }
        }
    }
    Ok((out, other))
}

/// `POST /rastro/meta/leadgen`: authenticates the exact bytes, then stores a
/// receipt per new `leadgen` change of a linked Page, durably, before answering.
///
/// `forwarded` says the request carried a valid federation JWT with the
/// `meta:leadgen` permission (a control plane forwarding Meta's POST); the
/// HTTP layer checked it. Without it, only Meta's signature admits the bytes.
pub async fn receive(cx: &Context, body: &[u8], signature: Option<&str>, forwarded: bool) -> Result<Received> {
    served(cx)?;
    if !leadgen_ready(cx) {
        return Err(Error::unavailable(
            "Lead Ads is not configured: set RASTRO_META_APP_SECRET or RASTRO_FEDERATION_AUDIENCE",
        ));
    }
    let signed = cx.meta_app.as_ref().is_some_and(|app| signature_matches(app.secret.expose(), body, signature));
    if !signed && !forwarded {
        return Err(forbidden("the delivery carries neither a matching X-Hub-Signature-256 nor a forwarding token"));
    }
    let json: Value = serde_json::from_slice(body).map_err(|_| Error::invalid("the body is not JSON"))?;
    let (changes, other) = changes(&json)?;
    let now = cx.now();
    let ids: Vec<String> = changes.iter().map(|_| crate::ids::time_ordered("lr_", now)).collect::<Result<_>>()?;
    cx.write(move |c| {
        let pages: Vec<String> = changes.iter().map(|ch| ch.page_id.clone()).collect();
        let links = store::page_links_of(c, &pages)?;
        let mut answer = Received { ignored: other, ..Received::default() };
        let mut effects = Effects::default();
        for (change, id) in changes.into_iter().zip(ids) {
            let Some(link) = links.iter().find(|l| l.page_id == change.page_id) else {
                answer.ignored += 1;
                continue;
            };
            let receipt = NewReceipt {
                id,
                leadgen_id: change.leadgen_id,
                site_id: link.site_id.clone(),
                page_id: change.page_id,
                form_id: change.form_id,
                ad_id: change.ad_id,
                created_time: change.created_time,
                received_at: now,
                source: "webhook",
            };
            if store::insert_receipt(c, &receipt)? {
                answer.received += 1;
                effects.leadgen_pages.insert(receipt.page_id.clone());
            } else {
                answer.duplicates += 1;
            }
            store::touch_webhook(c, &receipt.page_id, now)?;
        }
        effects.changes_cached_reads = answer.received > 0;
        Ok(Written::new(answer, effects))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked_over_the_exact_bytes() {
        let body = br#"{"object":"page","entry":[]}"#;
        let good = crate::meta::fake::leads::signature("s3cret", body);
        assert!(signature_matches("s3cret", body, Some(&good)));
        assert!(!signature_matches("other", body, Some(&good)));
        assert!(!signature_matches("s3cret", br#"{"object":"page","entry":[] }"#, Some(&good)));
        assert!(!signature_matches("s3cret", body, Some("sha256=zz")));
        assert!(!signature_matches("s3cret", body, None));
        assert!(!signature_matches("s3cret", body, Some(&good.replace("sha256=", "sha1="))));
    }

    #[test]
    fn only_leadgen_changes_with_ids_count() {
        let body = serde_json::json!({"object": "page", "entry": [{"id": "1", "time": 1, "changes": [
            {"field": "leadgen", "value": {"leadgen_id": 44, "page_id": "1", "form_id": "2", "created_time": 5}},
            {"field": "feed", "value": {}},
            {"field": "leadgen", "value": {"leadgen_id": "x y"}}]}]});
        let (c, other) = changes(&body).unwrap();
        assert_eq!(other, 2);
        assert_eq!(c[0].leadgen_id, "44");
        assert_eq!(c[0].created_time, Some(5000));
        assert!(changes(&serde_json::json!({"object": "page"})).is_err());
    }
}
