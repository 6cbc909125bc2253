//! The dashboard's writes, for operators allowed to configure, as their owner
//! key: the same service calls and the same post-commit wake-ups as the host
//! routes (`sync_changed` after links and tokens change), with `onlyOwn`
//! semantics so what another owner made stays theirs (LINK-08, BOARD-08).

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use super::session::may_write;
use crate::error::{Code, Result};
use crate::service::leads::board::{self as pipeline, SetEventMap};
use crate::service::meta::connection::{self as connection, ConnectWithCode, SecretString, SetMetaConnection};
use crate::service::meta::links::{self as links, LinkAdAccount, SetSitePixel};
use crate::service::meta::sync as meta_sync;
use crate::service::sites;
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PastedToken {
    access_token: SecretString,
}

pub async fn set_connection(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<PastedToken>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let input = SetMetaConnection { access_token: body.into_inner().access_token };
    let listing = connection::set_connection(&st.cx, &s.operator.owner_key, input).await?;
    Ok(HttpResponse::Ok().json(listing))
}

pub async fn connect_with_code(
    st: web::Data<AppState>,
    req: HttpRequest,
    body: crate::http::json::Json<ConnectWithCode>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let listing = connection::connect_with_code(&st.cx, &s.operator.owner_key, body.into_inner()).await?;
    Ok(HttpResponse::Ok().json(listing))
}

pub async fn refresh(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let listing = connection::refresh(&st.cx, &s.operator.owner_key).await;
    Ok(HttpResponse::Ok().json(listing?))
}

pub async fn disconnect(st: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let owner = s.operator.owner_key;
    let removed = st.cx.write(move |c| connection::remove(c, &owner)).await?;
    Ok(HttpResponse::Ok().json(removed))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkBody {
    ad_account_id: String,
}

pub async fn link(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: crate::http::json::Json<LinkBody>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let (site, now) = (path.into_inner(), st.now());
    let input = LinkAdAccount {
        owner_key: s.operator.owner_key,
        ad_account_id: body.into_inner().ad_account_id,
        only_own: true,
    };
    links::check_link(&input)?;
    let link = st.cx.write(move |c| links::link(c, now, &site, input)).await?;
    Ok(HttpResponse::Ok().json(link))
}

pub async fn unlink(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let ((site, account), owner) = (path.into_inner(), s.operator.owner_key);
    let removed = st.cx.write(move |c| links::unlink(c, &site, &account, Some(&owner))).await?;
    Ok(HttpResponse::Ok().json(removed))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PixelBody {
    pixel_id: String,
    send_lead_event: Option<bool>,
}

pub async fn set_pixel(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: crate::http::json::Json<PixelBody>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let b = body.into_inner();
    let input = SetSitePixel {
        pixel_id: b.pixel_id,
        owner_key: Some(s.operator.owner_key),
        access_token: None,
        enabled: Some(true),
        test_event_code: None,
        send_lead_event: b.send_lead_event,
        send_click_ids: None,
        whatsapp_business_account_id: None,
        only_own: true,
    };
    Ok(HttpResponse::Ok().json(links::set_pixel(&st.cx, &path.into_inner(), input).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClickIdsBody {
    send_click_ids: bool,
    whatsapp_business_account_id: Option<String>,
}

/// Integrações' click-id opt-ins (rule WA-30): both at once, as the
/// operator's owner (CONFLICT when another owner's pixel decides the site's
/// events); an account id not of 5-20 digits, or the opt-in without one, is
/// INVALID_ARGUMENT.
pub async fn set_click_ids(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: crate::http::json::Json<ClickIdsBody>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let (site, now, b, owner) = (path.into_inner(), st.now(), body.into_inner(), s.operator.owner_key);
    let to = links::ClickIds {
        send_click_ids: b.send_click_ids,
        // A blank field is no account.
        whatsapp_business_account_id: b
            .whatsapp_business_account_id
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty()),
    };
    let saved = st.cx.write_plain(move |c| links::set_click_ids(c, now, &site, &owner, to)).await?;
    Ok(HttpResponse::Ok().json(saved))
}

pub async fn remove_pixel(st: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let (site, owner) = (path.into_inner(), s.operator.owner_key);
    Ok(HttpResponse::Ok().json(st.cx.write_plain(move |c| links::remove_pixel(c, &site, Some(&owner))).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventMapBody {
    columns: std::collections::BTreeMap<String, Option<serde_json::Value>>,
    send_lead_event: Option<bool>,
    /// Agency mode's "Usar o mesmo mapa nos outros clientes".
    #[serde(default)]
    copy_to_others: bool,
}

/// Saves the site's event map as the operator's owner (CONFLICT when another
/// owner's pixel decides its events); with `copyToOthers`, the same map goes
/// to every other client whose board declares the same columns and whose
/// pixel is not another owner's (`eventMapCopyTargets`; BOARD-08).
pub async fn set_event_map(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: crate::http::json::Json<EventMapBody>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let (site, now, b) = (path.into_inner(), st.now(), body.into_inner());
    let owner = s.operator.owner_key;
    let input =
        SetEventMap { columns: b.columns.clone(), send_lead_event: b.send_lead_event, owner_key: Some(owner.clone()) };
    let this = site.clone();
    let map = st.cx.write_plain(move |c| pipeline::set_event_map(c, now, &this, input)).await?;
    let mut copied = Vec::new();
    if b.copy_to_others && st.cx.config.dashboard_audience == crate::config::Audience::Agency {
        let keys: Vec<String> = map.columns.iter().map(|c| c.key.clone()).collect();
        for other in st.cx.read(sites::list).await? {
            if other.site_id == site {
                continue;
            }
            let (id, k) = (other.site_id.clone(), keys.clone());
            let same = st
                .cx
                .read(move |c| Ok(pipeline::event_map(c, &id, None)?.columns.iter().map(|c| c.key.clone()).eq(k)))
                .await?;
            if !same {
                continue;
            }
            let input =
                SetEventMap { columns: b.columns.clone(), send_lead_event: None, owner_key: Some(owner.clone()) };
            let id = other.site_id.clone();
            match st.cx.write_plain(move |c| pipeline::set_event_map(c, now, &id, input)).await {
                Ok(_) => copied.push(other.site_id),
                // Another owner's pixel decides that client's events: not a target.
                Err(e) if e.code == Code::Conflict => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(HttpResponse::Ok().json(json!({"eventMap": map, "copiedTo": copied})))
}

pub async fn sync_now(st: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    may_write(&req)?;
    let (site, now) = (path.into_inner(), st.now());
    let answer = st.cx.write(move |c| meta_sync::sync_now(c, now, &site)).await?;
    Ok(HttpResponse::Ok().json(answer))
}
