//! The Meta context's use cases, one per function of the Meta capability.
//! What is the caller's own here (its sites, the owner it acts as) is
//! checked here: an account linked outside the caller's sites shows no
//! site (FED-13), and the whole-owner writes refuse while the owner's setup
//! still feeds sites outside them (FED-12).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::connection::{self, ConnectWithCode, ConnectionView, Listing, Removed, SecretString, SetMetaConnection};
use super::conversions::{self, ConversionRow};
use super::links::{self, Link, LinkAdAccount, Pixel, SetSitePixel};
use super::status::{self, StatusAnswer};
use super::sync::{self, SyncNowAnswer, UnlinkPreview};
use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::service::api::decode::SiteArgs;
use crate::service::api::{Caller, NoArgs};
use crate::service::context::Context;
use crate::service::leads::board::{self, EventMap, SetEventMap};
use crate::store::meta as meta_store;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetaStatusArgs {
    pub site_ids: Vec<String>,
    pub now: Option<i64>,
}

/// `metaStatus`: the read cache's answer itself, many dashboards polling the same sites.
pub async fn meta_status(cx: &Context, caller: &Caller, a: MetaStatusArgs) -> Result<Arc<StatusAnswer>> {
    caller.check_sites(&a.site_ids)?;
    // FED-14: `own` marks what this caller's owner made.
    let input = status::MetaStatusArgs { site_ids: a.site_ids, now: a.now, owner_key: Some(caller.owner.clone()) };
    status::status_cached(cx, input).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetaConversionsArgs {
    pub site_id: String,
    pub limit: Option<i64>,
    pub before: Option<i64>,
    pub before_event_id: Option<String>,
}

pub async fn meta_conversions(cx: &Context, caller: &Caller, a: MetaConversionsArgs) -> Result<Vec<ConversionRow>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| conversions::list(c, &a.site_id, a.limit, a.before, a.before_event_id.as_deref())).await
}

pub async fn meta_connection(cx: &Context, caller: &Caller, _: NoArgs) -> Result<Option<ConnectionView>> {
    let (owner, key, scope) = (caller.owner.clone(), cx.secrets.clone(), caller.sites.clone());
    let view = cx.read(move |c| connection::view(c, key.as_ref(), &owner)).await?;
    Ok(view.map(|mut v| {
        scope_accounts(&mut v.ad_accounts, &scope);
        v
    }))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventMapArgs {
    pub site_id: String,
    pub now: Option<i64>,
}

pub async fn meta_event_map(cx: &Context, caller: &Caller, a: EventMapArgs) -> Result<EventMap> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| board::event_map(c, &a.site_id, a.now)).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccountArgs {
    pub site_id: String,
    pub ad_account_id: String,
}

pub async fn meta_unlink_preview(cx: &Context, caller: &Caller, a: AccountArgs) -> Result<UnlinkPreview> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| sync::unlink_preview(c, &a.site_id, &a.ad_account_id)).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectArgs {
    pub code: Option<SecretString>,
    pub redirect_uri: Option<String>,
    pub access_token: Option<SecretString>,
}

pub async fn connect_meta(cx: &Context, caller: &Caller, a: ConnectArgs) -> Result<Listing> {
    check_owner_inside(cx, caller).await?;
    let listing = match (a.code, a.redirect_uri, a.access_token) {
        (Some(code), Some(redirect_uri), None) => {
            connection::connect_with_code(cx, &caller.owner, ConnectWithCode { code, redirect_uri }).await?
        }
        (None, None, Some(access_token)) => {
            connection::set_connection(cx, &caller.owner, SetMetaConnection { access_token }).await?
        }
        _ => return Err(Error::invalid("give code and redirectUri (Facebook Login), or accessToken")),
    };
    Ok(scoped_listing(listing, &caller.sites))
}

pub async fn refresh_meta_accounts(cx: &Context, caller: &Caller, _: NoArgs) -> Result<Listing> {
    check_owner_inside(cx, caller).await?;
    let listing = connection::refresh(cx, &caller.owner).await?;
    Ok(scoped_listing(listing, &caller.sites))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPixelArgs {
    pub site_id: String,
    pub pixel_id: String,
    pub access_token: Option<SecretString>,
    pub enabled: Option<bool>,
    pub test_event_code: Option<String>,
    pub send_lead_event: Option<bool>,
    /// Rule WA-30 (see `setSitePixel`): absent keeps the stored value.
    pub send_click_ids: Option<bool>,
    /// Rule WA-30: 5-20 digits; `null` clears it; absent keeps it.
    #[serde(default, deserialize_with = "links::present")]
    #[schema(value_type = Option<String>, nullable)]
    pub whatsapp_business_account_id: Option<Option<String>>,
}

pub async fn set_meta_pixel(cx: &Context, caller: &Caller, a: SetPixelArgs) -> Result<Pixel> {
    caller.check_site(&a.site_id)?;
    // FED-14: the connection's listing unless an accessToken is given; enabled unless told otherwise.
    let input = SetSitePixel {
        pixel_id: a.pixel_id,
        owner_key: Some(caller.owner.clone()),
        access_token: a.access_token,
        enabled: a.enabled,
        test_event_code: a.test_event_code,
        send_lead_event: a.send_lead_event,
        send_click_ids: a.send_click_ids,
        whatsapp_business_account_id: a.whatsapp_business_account_id,
        only_own: true,
    };
    links::set_pixel(cx, &a.site_id, input).await
}

pub async fn disconnect_meta(cx: &Context, caller: &Caller, _: NoArgs) -> Result<Removed> {
    let (owner, scope) = (caller.owner.clone(), caller.sites.clone());
    cx.write(move |c| {
        ensure_owner_inside(c, &owner, &scope)?;
        connection::remove(c, &owner)
    })
    .await
}

pub async fn link_meta_ad_account(cx: &Context, caller: &Caller, a: AccountArgs) -> Result<Link> {
    caller.check_site(&a.site_id)?;
    let input = LinkAdAccount { owner_key: caller.owner.clone(), ad_account_id: a.ad_account_id, only_own: true };
    links::check_link(&input)?;
    let now = cx.now();
    cx.write(move |c| links::link(c, now, &a.site_id, input)).await
}

pub async fn unlink_meta_ad_account(cx: &Context, caller: &Caller, a: AccountArgs) -> Result<Removed> {
    caller.check_site(&a.site_id)?;
    let owner = caller.owner.clone();
    cx.write(move |c| links::unlink(c, &a.site_id, &a.ad_account_id, Some(&owner))).await
}

pub async fn remove_meta_pixel(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<Removed> {
    caller.check_site(&a.site_id)?;
    let owner = caller.owner.clone();
    cx.write_plain(move |c| links::remove_pixel(c, &a.site_id, Some(&owner))).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetEventMapArgs {
    pub site_id: String,
    pub columns: BTreeMap<String, Option<Value>>,
    pub send_lead_event: Option<bool>,
}

pub async fn set_meta_event_map(cx: &Context, caller: &Caller, a: SetEventMapArgs) -> Result<EventMap> {
    caller.check_site(&a.site_id)?;
    let input =
        SetEventMap { columns: a.columns, send_lead_event: a.send_lead_event, owner_key: Some(caller.owner.clone()) };
    let now = cx.now();
    cx.write_plain(move |c| board::set_event_map(c, now, &a.site_id, input)).await
}

pub async fn sync_meta_now(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<SyncNowAnswer> {
    caller.check_site(&a.site_id)?;
    let now = cx.now();
    cx.write(move |c| sync::sync_now(c, now, &a.site_id)).await
}

/// FED-12: the sites outside `scope` that `owner`'s links or pixels still feed.
fn sites_fed_outside(conn: &mut AnyConnection, owner: &str, scope: &[String]) -> Result<Vec<String>> {
    let mut outside: Vec<String> = meta_store::links_of_owner(conn, owner)?
        .into_iter()
        .map(|l| l.site_id)
        .chain(meta_store::pixels_of_owner(conn, owner)?.into_iter().map(|p| p.site_id))
        .filter(|s| !scope.contains(s))
        .collect();
    outside.sort();
    outside.dedup();
    Ok(outside)
}

fn ensure_owner_inside(conn: &mut AnyConnection, owner: &str, scope: &[String]) -> Result<()> {
    let outside = sites_fed_outside(conn, owner, scope)?;
    if outside.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Code::FederationSiteDenied,
        format!(
            "this connection's Meta setup still feeds sites outside its grant ({}): unlink them on the host first",
            outside.join(", ")
        ),
    ))
}

/// The whole-owner writes' gate, read before Meta is called (FED-12).
async fn check_owner_inside(cx: &Context, caller: &Caller) -> Result<()> {
    let (owner, scope) = (caller.owner.clone(), caller.sites.clone());
    cx.read(move |c| ensure_owner_inside(c, &owner, &scope)).await
}

/// A listing as the caller sees it: accounts linked outside its sites show no site (FED-13).
fn scoped_listing(mut listing: Listing, scope: &[String]) -> Listing {
    scope_accounts(&mut listing.ad_accounts, scope);
    listing
}

fn scope_accounts(accounts: &mut [connection::ListedAccount], scope: &[String]) {
    for account in accounts {
        let outside = account.linked_site_id.as_ref().is_some_and(|s| !scope.contains(s));
        if outside {
            account.linked_site_id = None;
        }
        account.linked_outside_scope = Some(outside);
    }
}
