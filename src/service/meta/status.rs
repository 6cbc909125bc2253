//! meta.status: where each site stands with Meta — its ad accounts and their
//! sync, its pixel, its conversions. Never a token.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::context::Context;
use crate::service::meta::conversions::{self, ConversionCounters};
use crate::service::read_cache::CachedJson;
use crate::service::sites;
use crate::service::validate;
use crate::store::meta::sync as sync_store;
use crate::store::meta::{self as meta_store, PixelSource};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetaStatusArgs {
    pub site_ids: Vec<String>,
    /// The reader's clock (ms), for the sent counts; without it they are null.
    pub now: Option<i64>,
    /// Marks each link and the pixel with `own`: whether this owner made them.
    pub owner_key: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Backfill {
    pub done: i32,
    pub total: i32,
}

crate::closed_set! {
    /// Where an ad account's sync stands, as `meta.status` answers it.
    pub enum SyncState {
        /// The first sync has not finished, or a backfill is under way.
        Backfill = "backfill",
        /// Synced and kept up to date.
        Live = "live",
        /// Stopped, or failing (the reason in `lastError`).
        Error = "error",
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountStatus {
    pub ad_account_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub sync_state: SyncState,
    pub last_sync_at: Option<i64>,
    /// Starts with a code: META_TOKEN_INVALID, RATE_LIMITED, META_UNAVAILABLE,
    /// META_TRUNCATED, RUN_TIMEOUT, SECRETS_KEY_MISSING, AD_ACCOUNT_NOT_GRANTED.
    pub last_error: Option<String>,
    /// The backfill's blocks read of the total; null once the account has synced.
    pub backfill: Option<Backfill>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PixelStatus {
    pub enabled: bool,
    pub pixel_id: Option<String>,
    pub source: Option<PixelSource>,
    pub name: Option<String>,
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<bool>,
    /// A test event code is set: events reach only Test Events.
    pub test_mode: bool,
    /// Present (true) only while the site's click-to-WhatsApp conversions go
    /// by click id (rule WA-30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_click_ids: Option<bool>,
    /// The WhatsApp Business Account they go with; present only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whatsapp_business_account_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteStatus {
    pub site_id: String,
    pub linked: bool,
    pub ad_accounts: Vec<AccountStatus>,
    pub pixel: PixelStatus,
    pub conversions: ConversionCounters,
    /// Meta Lead Ads (LA-20): only while the `metaLeads` capability is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_ads: Option<crate::service::meta::lead_ads::LeadAdsStatus>,
}

pub fn check(a: &MetaStatusArgs) -> Result<()> {
    validate::site_ids(&a.site_ids)?;
    if let Some(n) = a.now {
        validate::time("now", n)?;
    }
    if let Some(o) = &a.owner_key {
        validate::text("ownerKey", o, 1, 200)?;
    }
    Ok(())
}

/// One entry per site, in request order.
pub fn status(conn: &mut AnyConnection, a: MetaStatusArgs) -> Result<Vec<SiteStatus>> {
    check(&a)?;
    sites::require_many(conn, &a.site_ids)?;
    let owner = a.owner_key.as_deref();
    let syncs: BTreeMap<String, sync_store::SyncRow> =
        sync_store::of_sites(conn, &a.site_ids)?.into_iter().map(|s| (s.ad_account_id.clone(), s)).collect();
    let mut links: BTreeMap<String, Vec<AccountStatus>> = BTreeMap::new();
    for l in meta_store::links_of_sites(conn, &a.site_ids)? {
        let sync = syncs.get(&l.ad_account_id);
        let synced = sync.is_some_and(|s| s.first_synced_at.is_some());
        let backfilling = sync.is_some_and(|s| s.backfill_done < s.backfill_total);
        let last_error = l.stopped_reason.clone().or_else(|| sync.and_then(|s| s.last_error.clone()));
        let sync_state =
            if l.stopped_reason.is_some() || (last_error.is_some() && sync.is_some_and(|s| s.fail_count > 0)) {
                SyncState::Error
            } else if !synced || backfilling {
                SyncState::Backfill
            } else {
                SyncState::Live
            };
        links.entry(l.site_id.clone()).or_default().push(AccountStatus {
            own: owner.map(|o| o == l.owner_key),
            backfill: (!synced || backfilling).then(|| Backfill {
                done: sync.map_or(0, |s| s.backfill_done),
                total: sync.map_or(0, |s| s.backfill_total.max(if synced { 0 } else { 1 })),
            }),
            last_sync_at: sync.and_then(|s| s.last_sync_at),
            ad_account_id: l.ad_account_id,
            name: l.name,
            currency: l.currency,
            timezone: l.timezone,
            sync_state,
            last_error,
        });
    }
    let pixels: BTreeMap<String, meta_store::PixelRow> =
        meta_store::pixels_of_sites(conn, &a.site_ids)?.into_iter().map(|p| (p.site_id.clone(), p)).collect();
    let mut counters = conversions::counters(conn, &a.site_ids, a.now)?;
    let mut click_ids: BTreeMap<String, meta_store::ClickIdSettings> =
        meta_store::click_id_settings(conn, &a.site_ids)?.into_iter().map(|c| (c.site_id.clone(), c)).collect();
    Ok(a.site_ids
        .iter()
        .map(|site| {
            let ad_accounts = links.remove(site).unwrap_or_default();
            let clicks = click_ids.remove(site).unwrap_or_default();
            let mut pixel = match pixels.get(site) {
                Some(p) => PixelStatus {
                    enabled: p.enabled,
                    pixel_id: Some(p.pixel_id.clone()),
                    source: Some(p.source),
                    name: p.name.clone(),
                    last_error: p.last_error.clone(),
                    own: owner.map(|o| p.owner_key.as_deref() == Some(o)),
                    test_mode: p.test_event_code.is_some(),
                    send_click_ids: None,
                    whatsapp_business_account_id: None,
                },
                None => PixelStatus {
                    enabled: false,
                    pixel_id: None,
                    source: None,
                    name: None,
                    last_error: None,
                    own: owner.map(|_| false),
                    test_mode: false,
                    send_click_ids: None,
                    whatsapp_business_account_id: None,
                },
            };
            pixel.send_click_ids = clicks.send_click_ids.then_some(true);
            pixel.whatsapp_business_account_id = clicks.whatsapp_business_account_id;
            SiteStatus {
                site_id: site.clone(),
                linked: !ad_accounts.is_empty(),
                ad_accounts,
                pixel,
                conversions: counters.remove(site).unwrap_or_default(),
                lead_ads: None,
            }
        })
        .collect())
}

/// A cached metaStatus answer (see [`CachedJson`]).
pub type StatusAnswer = CachedJson;

/// `status`, served from the read cache while nothing was written: many
/// dashboards polling the same sites cost one query (concurrent misses of one
/// key share one computation). `now` only matters by its UTC day, so the key
/// rounds it.
pub async fn status_cached(st: &Context, a: MetaStatusArgs) -> Result<std::sync::Arc<StatusAnswer>> {
    check(&a)?;
    let key =
        format!("meta.status|{}|{:?}|{:?}", a.site_ids.join(","), a.now.map(crate::clock::utc_day_start), a.owner_key);
    let (generation, now) = (st.generation(), st.now());
    let ttl = st.config.read_cache_ttl.as_millis() as i64;
    let cx = st.clone();
    let lead_ads = st.capabilities().serves(crate::service::api::Capability::MetaLeads);
    st.reads
        .get_or(key, generation, now, ttl, async move {
            let answer = cx
                .read(move |c| {
                    let mut answer = status(c, a)?;
                    if lead_ads {
                        let ids: Vec<String> = answer.iter().map(|s| s.site_id.clone()).collect();
                        let mut of = crate::service::meta::lead_ads::status_of_sites(c, &ids)?;
                        for s in &mut answer {
                            s.lead_ads = of.remove(&s.site_id);
                        }
                    }
                    Ok(answer)
                })
                .await?;
            let value = serde_json::to_value(answer).map_err(crate::error::Error::internal)?;
            let json = serde_json::to_string(&value).map_err(crate::error::Error::internal)?;
            Ok(StatusAnswer { value, json })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sync_state_reads_back_from_its_string() {
        crate::assert_round_trip!(SyncState);
    }
}
