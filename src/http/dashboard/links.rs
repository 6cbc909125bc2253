//! The dashboard's "Links" screen: a site's tracked links with their clicks
//! and bot hits (any operator), and creating, disabling, enabling and deleting
//! them (operators allowed to configure), through the same service as the
//! federated `listTrackedLinks` and its three writes.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::session::{may_write, signed_in};
use crate::error::Result;
use crate::service::analytics::links::{self, CreateArgs, LinkArgs, ListArgs, UpdateArgs};
use crate::state::AppState;

pub async fn list(st: web::Data<AppState>, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    signed_in(&req)?;
    let args = ListArgs { site_id: path.into_inner(), now: st.now() };
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| links::list(c, args)).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateBody {
    slug: String,
    destination: String,
    platform: String,
    channel: String,
    campaign: Option<String>,
}

/// A new link, made by the signed-in operator (`createdBy` = the operator's name).
pub async fn create(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    body: crate::http::json::Json<CreateBody>,
) -> Result<HttpResponse> {
    let s = may_write(&req)?;
    let (b, now) = (body.into_inner(), st.now());
    let args = CreateArgs {
        site_id: path.into_inner(),
        slug: b.slug,
        destination: b.destination,
        platform: b.platform,
        channel: b.channel,
        campaign: b.campaign.filter(|c| !c.is_empty()),
        created_by: s.operator.name,
    };
    links::check_create(&args)?;
    let id = st.cx.write_plain(move |c| links::create(c, now, args)).await?;
    Ok(HttpResponse::Created().json(id))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateBody {
    disabled: bool,
}

/// Disables or enables a link.
pub async fn set_disabled(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: crate::http::json::Json<UpdateBody>,
) -> Result<HttpResponse> {
    may_write(&req)?;
    let ((site_id, link_id), now) = (path.into_inner(), st.now());
    let args = UpdateArgs { site_id, link_id, disabled: Some(body.into_inner().disabled), ..UpdateArgs::default() };
    Ok(HttpResponse::Ok().json(st.cx.write_plain(move |c| links::update(c, now, args)).await?))
}

pub async fn delete(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    may_write(&req)?;
    let (site_id, link_id) = path.into_inner();
    Ok(HttpResponse::Ok().json(st.cx.write_plain(move |c| links::delete(c, LinkArgs { site_id, link_id })).await?))
}
