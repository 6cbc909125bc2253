//! Ad account links and the site's pixel, with the ownership rules: one ad
//! account feeds one site; `onlyOwn` / `ownerKey` refuse to take or undo what
//! another owner made (CONFLICT); without them the host may.

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::codes::Fault;
use crate::crypto::Identity;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::meta::connection::{SecretString, check_owner_key};
use crate::service::meta::errors::from_graph;
use crate::service::sites;
use crate::service::validate;
use crate::store::leads::sites as site_store;
use crate::store::meta::{self as store, LinkRow, PixelRow, PixelSource};

pub const MAX_LINKS_PER_SITE: i64 = 20;
pub const MAX_LINKS_PER_CONNECTION: i64 = 500;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkAdAccount {
    pub owner_key: String,
    /// `act_…`, from the owner's listing.
    pub ad_account_id: String,
    /// Refuse (CONFLICT) instead of taking over a link another owner made.
    #[serde(default)]
    pub only_own: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub site_id: String,
    pub ad_account_id: String,
    pub owner_key: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub linked_at: i64,
    pub last_error: Option<String>,
}

impl From<LinkRow> for Link {
    fn from(r: LinkRow) -> Self {
        Link {
            site_id: r.site_id,
            ad_account_id: r.ad_account_id,
            owner_key: r.owner_key,
            name: r.name,
            currency: r.currency,
            timezone: r.timezone,
            linked_at: r.linked_at,
            last_error: r.last_error,
        }
    }
}

pub fn check_ad_account_id(id: &str) -> Result<()> {
    let digits = id.strip_prefix("act_").unwrap_or("");
    if digits.is_empty() || digits.len() > 30 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::invalid("adAccountId must look like act_1029384756"));
    }
    Ok(())
}

fn check_pixel_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 32 || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::invalid("pixelId must be Meta's numeric pixel (dataset) id"));
    }
    Ok(())
}

pub fn check_link(input: &LinkAdAccount) -> Result<()> {
    check_owner_key(&input.owner_key)?;
    check_ad_account_id(&input.ad_account_id)
}

/// `linkSiteAdAccount`; the sync supervisor starts the account's actor.
pub fn link(conn: &mut AnyConnection, now: i64, site_id: &str, input: LinkAdAccount) -> Result<Written<Link>> {
    Ok(Written::new(link_rows(conn, now, site_id, input)?, Effects::sync_changed()))
}

/// `linkSiteAdAccount`: the account must be in the owner's listing.
fn link_rows(conn: &mut AnyConnection, now: i64, site_id: &str, input: LinkAdAccount) -> Result<Link> {
    check_link(&input)?;
    sites::require(conn, site_id)?;
    let owner = &input.owner_key;
    let connection =
        store::connection(conn, owner)?.ok_or_else(|| Error::not_found("no Meta connection for this owner"))?;
    let listed = store::listed_accounts(conn, owner)?
        .into_iter()
        .find(|a| a.ad_account_id == input.ad_account_id)
        .ok_or_else(|| Error::not_found("the ad account is not in the owner's listing"))?;
    if let Some(existing) = store::link(conn, &input.ad_account_id)? {
        if existing.site_id != site_id {
            return Err(Error::conflict("the ad account already feeds another site: unlink it first"));
        }
        if existing.owner_key == *owner {
            return Ok(existing.into());
        }
        if input.only_own {
            return Err(Error::conflict("another owner linked this ad account"));
        }
        store::set_link_owner(conn, &input.ad_account_id, owner, now)?;
        // It now feeds with the taker's token: stopped only if that connection is refused.
        let stopped = connection.invalid_since.map(|_| Fault::MetaTokenInvalid);
        if existing.stopped_reason.as_deref() != stopped.map(Fault::as_str) {
            store::set_link_stopped(conn, &input.ad_account_id, stopped, now)?;
        }
        return Ok(store::link(conn, &input.ad_account_id)?.ok_or_else(|| Error::internal("link vanished"))?.into());
    }
    if store::count_links_of_site(conn, site_id)? >= MAX_LINKS_PER_SITE {
        return Err(Error::invalid(format!("a site links at most {MAX_LINKS_PER_SITE} ad accounts")));
    }
    if store::count_links_of_owner(conn, owner)? >= MAX_LINKS_PER_CONNECTION {
        return Err(Error::invalid(format!("a connection links at most {MAX_LINKS_PER_CONNECTION} ad accounts")));
    }
    let stopped = connection.invalid_since.map(|_| Fault::MetaTokenInvalid.as_str().to_string());
    let row = LinkRow {
        ad_account_id: listed.ad_account_id,
        site_id: site_id.to_string(),
        owner_key: owner.clone(),
        name: listed.name,
        currency: listed.currency,
        timezone: listed.timezone,
        stopped_reason: stopped.clone(),
        last_error: stopped,
        linked_at: now,
        updated_at: now,
    };
    store::insert_link(conn, &row)?;
    // The sync's state row, in the same transaction: the supervisor starts its actor from it.
    crate::store::meta::sync::delete(conn, &row.ad_account_id)?;
    crate::store::meta::sync::insert(conn, &crate::store::meta::sync::SyncRow::new(&row.ad_account_id, site_id, now))?;
    Ok(row.into())
}

/// `unlinkSiteAdAccount`; the sync supervisor stops the account's actor.
pub fn unlink(
    conn: &mut AnyConnection,
    site_id: &str,
    ad_account_id: &str,
    owner: Option<&str>,
) -> Result<Written<Removed>> {
    Ok(Written::new(unlink_rows(conn, site_id, ad_account_id, owner)?, Effects::sync_changed()))
}

/// `unlinkSiteAdAccount`: with `ownerKey`, another owner's link is CONFLICT.
fn unlink_rows(conn: &mut AnyConnection, site_id: &str, ad_account_id: &str, owner: Option<&str>) -> Result<Removed> {
    check_ad_account_id(ad_account_id)?;
    if let Some(o) = owner {
        check_owner_key(o)?;
    }
    sites::require(conn, site_id)?;
    let link = store::link(conn, ad_account_id)?
        .filter(|l| l.site_id == site_id)
        .ok_or_else(|| Error::not_found("the ad account is not linked to this site"))?;
    if owner.is_some_and(|o| o != link.owner_key) {
        return Err(Error::conflict("another owner linked this ad account"));
    }
    store::delete_link(conn, ad_account_id)?;
    // The spend it fed leaves the reports now (they join on the link) and the
    // rows themselves in scheduled batches (the supervisor's janitor).
    crate::store::meta::sync::delete(conn, ad_account_id)?;
    Ok(Removed { removed: true })
}

pub use crate::service::meta::connection::Removed;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetSitePixel {
    pub pixel_id: String,
    /// Who sets the pixel. Alone: a pixel from that owner's listing, sending
    /// with the connection's token.
    pub owner_key: Option<String>,
    /// The pixel's own Conversions API token (plan B); checked against the pixel and sealed.
    #[schema(value_type = Option<String>)]
    pub access_token: Option<SecretString>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Events then reach only Events Manager's Test Events.
    pub test_event_code: Option<String>,
    /// Send `Lead` for every new lead. Default false.
    pub send_lead_event: Option<bool>,
    /// Send the conversions of click-to-WhatsApp leads that carry a click id
    /// by that id (`business_messaging`, rule WA-31); needs
    /// `whatsappBusinessAccountId`. Absent: kept as stored (default false).
    pub send_click_ids: Option<bool>,
    /// The WhatsApp Business Account (5-20 digits) the click-id conversions
    /// go with; `null` clears it (and needs `sendClickIds` off). Absent: kept.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable)]
    pub whatsapp_business_account_id: Option<Option<String>>,
    /// Refuse (CONFLICT) to replace a pixel another owner set.
    #[serde(default)]
    pub only_own: bool,
}

/// A present key, `null` included (`whatsappBusinessAccountId: null` clears it).
pub fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pixel {
    pub site_id: String,
    pub pixel_id: String,
    pub name: Option<String>,
    pub source: PixelSource,
    pub owner_key: Option<String>,
    pub enabled: bool,
    pub test_mode: bool,
    pub send_lead_event: bool,
    pub last_error: Option<String>,
    /// Present (true) only while the click-to-WhatsApp conversions go by click id (rule WA-30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_click_ids: Option<bool>,
    /// Present only when set (rule WA-30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whatsapp_business_account_id: Option<String>,
}

pub fn check_pixel(input: &SetSitePixel) -> Result<()> {
    check_pixel_id(&input.pixel_id)?;
    if let Some(o) = &input.owner_key {
        check_owner_key(o)?;
    }
    if input.owner_key.is_none() && input.access_token.is_none() {
        return Err(Error::invalid(
            "give ownerKey (a pixel of that connection) or accessToken (the pixel's own token)",
        ));
    }
    if let Some(code) = &input.test_event_code {
        validate::text("testEventCode", code, 1, 64)?;
    }
    if let Some(Some(id)) = &input.whatsapp_business_account_id {
        check_whatsapp_business_account_id(id)?;
    }
    if let Some(t) = &input.access_token {
        let s = t.0.expose();
        if s.is_empty() || s.len() > 2048 || s.chars().any(char::is_whitespace) {
            return Err(Error::invalid("accessToken must be 1-2048 characters without spaces"));
        }
    }
    Ok(())
}

/// `setSitePixel`: checks the token reaches the pixel (its own token) or that
/// the pixel is in the owner's listing, then stores it (sealed).
pub async fn set_pixel(st: &Context, site_id: &str, input: SetSitePixel) -> Result<Pixel> {
    check_pixel(&input)?;
    validate::site_id(site_id)?;
    let mut name = None;
    let mut sealed = None;
    if let Some(token) = &input.access_token {
        let key = st.secrets()?;
        let found = st.graph.pixel(&token.0, &input.pixel_id).await.map_err(|e| from_graph(&e))?;
        name = Some(found.value.name).filter(|n| !n.is_empty());
        sealed = Some(key.seal(&token.0, Identity::Pixel(site_id))?);
    }
    let (site, now) = (site_id.to_string(), st.now());
    st.write_plain(move |conn| store_pixel(conn, now, &site, input, name, sealed)).await
}

fn store_pixel(
    conn: &mut AnyConnection,
    now: i64,
    site_id: &str,
    input: SetSitePixel,
    name: Option<String>,
    sealed: Option<String>,
) -> Result<Pixel> {
    sites::require(conn, site_id)?;
    let existing = store::pixel(conn, site_id)?;
    if input.only_own
        && let Some(p) = &existing
        && p.owner_key != input.owner_key
    {
        return Err(Error::conflict("another owner set this site's pixel"));
    }
    let (source, name, stopped) = match (&sealed, &input.owner_key) {
        (Some(_), _) => (PixelSource::Token, name, None),
        (None, Some(owner)) => {
            let connection =
                store::connection(conn, owner)?.ok_or_else(|| Error::not_found("no Meta connection for this owner"))?;
            let listed = store::listed_pixels(conn, owner)?
                .into_iter()
                .find(|p| p.pixel_id == input.pixel_id)
                .ok_or_else(|| Error::not_found("the pixel is not in the owner's listing"))?;
            let stopped = connection.invalid_since.map(|_| Fault::MetaTokenInvalid.as_str().to_string());
            (PixelSource::Connection, Some(listed.name), stopped)
        }
        (None, None) => return Err(Error::invalid("give ownerKey or accessToken")),
    };
    let row = PixelRow {
        site_id: site_id.to_string(),
        pixel_id: input.pixel_id,
        name,
        source,
        owner_key: input.owner_key,
        sealed_token: sealed,
        token_version: existing.as_ref().map_or(1, |p| p.token_version + 1),
        enabled: input.enabled.unwrap_or(true),
        test_event_code: input.test_event_code,
        stopped_reason: stopped.clone(),
        last_error: stopped,
        created_at: existing.as_ref().map_or(now, |p| p.created_at),
        updated_at: now,
    };
    store::put_pixel(conn, &row)?;
    let send_lead_event = input.send_lead_event.unwrap_or(false);
    site_store::set_send_lead_event(conn, site_id, send_lead_event, now)?;
    let change = ClickIdsChange {
        send_click_ids: input.send_click_ids,
        whatsapp_business_account_id: input.whatsapp_business_account_id,
    };
    let click_ids = apply_click_ids(conn, now, site_id, change)?;
    Ok(pixel_view(row, send_lead_event, click_ids))
}

fn pixel_view(r: PixelRow, send_lead_event: bool, click_ids: ClickIds) -> Pixel {
    Pixel {
        send_click_ids: click_ids.send_click_ids.then_some(true),
        whatsapp_business_account_id: click_ids.whatsapp_business_account_id,
        site_id: r.site_id,
        pixel_id: r.pixel_id,
        name: r.name,
        source: r.source,
        owner_key: r.owner_key,
        enabled: r.enabled,
        test_mode: r.test_event_code.is_some(),
        send_lead_event,
        last_error: r.last_error,
    }
}

/// `removeSitePixel`: with `ownerKey`, another owner's pixel is CONFLICT.
pub fn remove_pixel(conn: &mut AnyConnection, site_id: &str, owner: Option<&str>) -> Result<Removed> {
    if let Some(o) = owner {
        check_owner_key(o)?;
    }
    sites::require(conn, site_id)?;
    let pixel = store::pixel(conn, site_id)?.ok_or_else(|| Error::not_found("the site has no pixel"))?;
    if owner.is_some() && pixel.owner_key.as_deref() != owner {
        return Err(Error::conflict("another owner set this site's pixel"));
    }
    store::delete_pixel(conn, site_id)?;
    Ok(Removed { removed: true })
}

/// BOARD-08: acting for `owner`, a site whose pixel another owner (or the host,
/// without one) set is CONFLICT; a site without a pixel takes any owner's map.
pub fn check_event_map_owner(conn: &mut AnyConnection, site_id: &str, owner: &str) -> Result<()> {
    match store::pixel(conn, site_id)? {
        Some(p) if p.owner_key.as_deref() != Some(owner) => {
            Err(Error::conflict("the pixel's owner decides which columns reach it"))
        }
        _ => Ok(()),
    }
}

/// Whether the site has an enabled pixel (the event map's `purchase.enabled`).
pub fn pixel_enabled(conn: &mut AnyConnection, site_id: &str) -> Result<bool> {
    Ok(store::pixel(conn, site_id)?.is_some_and(|p| p.enabled))
}

/// Rule WA-30: a WhatsApp Business Account id is 5-20 digits.
pub fn check_whatsapp_business_account_id(id: &str) -> Result<()> {
    if !(5..=20).contains(&id.len()) || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid(
            "whatsappBusinessAccountId must be the WhatsApp Business Account's id (5-20 digits)",
        ));
    }
    Ok(())
}

/// A site's click-id settings (rule WA-30): whether the conversions of
/// click-to-WhatsApp leads that carry a click id go to Meta by that id, and
/// the WhatsApp Business Account they go with (not a secret, not a person's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClickIds {
    pub send_click_ids: bool,
    pub whatsapp_business_account_id: Option<String>,
}

/// A change of the click-id settings: an absent field keeps what is stored.
#[derive(Debug, Clone, Default)]
pub struct ClickIdsChange {
    pub send_click_ids: Option<bool>,
    /// `Some(None)` clears the account.
    pub whatsapp_business_account_id: Option<Option<String>>,
}

/// The site's click-id settings (off, no account, for a site never set).
pub fn click_ids(conn: &mut AnyConnection, site_id: &str) -> Result<ClickIds> {
    let stored = store::click_id_settings(conn, &[site_id.to_string()])?.into_iter().next().unwrap_or_default();
    Ok(ClickIds {
        send_click_ids: stored.send_click_ids,
        whatsapp_business_account_id: stored.whatsapp_business_account_id,
    })
}

/// Applies `change` in the caller's transaction: the account must be 5-20
/// digits, and turning the click ids on needs one (INVALID_ARGUMENT).
pub fn apply_click_ids(conn: &mut AnyConnection, now: i64, site_id: &str, change: ClickIdsChange) -> Result<ClickIds> {
    let stored = click_ids(conn, site_id)?;
    let next = ClickIds {
        send_click_ids: change.send_click_ids.unwrap_or(stored.send_click_ids),
        whatsapp_business_account_id: change
            .whatsapp_business_account_id
            .unwrap_or(stored.whatsapp_business_account_id.clone()),
    };
    if let Some(id) = &next.whatsapp_business_account_id {
        check_whatsapp_business_account_id(id)?;
    }
    if next.send_click_ids && next.whatsapp_business_account_id.is_none() {
        return Err(Error::invalid(
            "sendClickIds needs whatsappBusinessAccountId (the WhatsApp Business Account's id)",
        ));
    }
    if next != stored {
        store::set_click_id_settings(
            conn,
            site_id,
            next.send_click_ids,
            next.whatsapp_business_account_id.as_deref(),
            now,
        )?;
    }
    Ok(next)
}

/// The dashboard's click-id opt-ins (rule WA-30): both settings at once, as
/// `owner`; a site whose pixel another owner set is CONFLICT (that owner
/// decides what reaches it, as with the event map, BOARD-08).
pub fn set_click_ids(conn: &mut AnyConnection, now: i64, site_id: &str, owner: &str, to: ClickIds) -> Result<ClickIds> {
    sites::require(conn, site_id)?;
    check_event_map_owner(conn, site_id, owner)?;
    let change = ClickIdsChange {
        send_click_ids: Some(to.send_click_ids),
        whatsapp_business_account_id: Some(to.whatsapp_business_account_id),
    };
    apply_click_ids(conn, now, site_id, change)
}
