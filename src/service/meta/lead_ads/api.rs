//! The Lead Ads use cases of the Meta context (capability `metaLeads`):
//! `metaPages`, `linkMetaPage`, `unlinkMetaPage`, `metaLinkedPages`,
//! `returnMetaFormLead`. They act for the caller's
//! owner like the other Meta functions; what is outside the caller's sites
//! shows no site (FED-13).

use serde::Deserialize;

use super::{
    LinkedContext, PageLinked, PageUnlinked, Pages, SitePages, leadgen_ready, link_page, linked_pages, list_pages,
    unlink_page,
};
use crate::error::{Error, Result};
use crate::service::api::{Caller, NoArgs};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};

/// `metaPages`: the owner's Pages from Meta, with `canRetrieveLeads`; never a token (LA-02).
pub async fn meta_pages(cx: &Context, caller: &Caller, _: NoArgs) -> Result<Pages> {
    list_pages(cx, &caller.owner, &caller.sites).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkPageArgs {
    pub site_id: String,
    pub page_id: String,
}

/// `linkMetaPage`: subscribes the app to the Page's leads and links it to the site (LA-03).
pub async fn link_meta_page(cx: &Context, caller: &Caller, a: LinkPageArgs) -> Result<PageLinked> {
    caller.check_site(&a.site_id)?;
    crate::service::validate::text("pageId", &a.page_id, 1, 64)?;
    link_page(cx, &caller.owner, &a.site_id, &a.page_id).await
}

/// `unlinkMetaPage`: unsubscribes and unlinks the Page, keeping its leads (LA-04).
pub async fn unlink_meta_page(cx: &Context, caller: &Caller, a: LinkPageArgs) -> Result<PageUnlinked> {
    caller.check_site(&a.site_id)?;
    crate::service::validate::text("pageId", &a.page_id, 1, 64)?;
    unlink_page(cx, &caller.owner, &a.site_id, &a.page_id).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkedPagesArgs {
    pub site_ids: Vec<String>,
}

/// `metaLinkedPages`: per site its Pages, pending and failed receipts, and readiness.
pub async fn meta_linked_pages(cx: &Context, caller: &Caller, a: LinkedPagesArgs) -> Result<Vec<SitePages>> {
    caller.check_sites(&a.site_ids)?;
    let ready = leadgen_ready(cx);
    let settings =
        LinkedContext { issuer: cx.config.federation_issuer.clone(), audience: cx.config.federation_audience.clone() };
    cx.read(move |c| linked_pages(c, ready, &settings, &a.site_ids)).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReturnFormLeadArgs {
    pub site_id: String,
    pub leadgen_id: String,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Requeued {
    pub requeued: bool,
}

/// `returnMetaFormLead` (LA-13): the lead is fetched from Meta and delivered
/// to the handler again, whatever became of it (a refusal, a handler away,
/// a delivery the host lost); the lead itself is never made twice.
pub async fn return_meta_form_lead(cx: &Context, caller: &Caller, a: ReturnFormLeadArgs) -> Result<Requeued> {
    caller.check_site(&a.site_id)?;
    crate::service::validate::text("leadgenId", &a.leadgen_id, 1, 64)?;
    let now = cx.now();
    cx.write(move |c| {
        crate::service::sites::require(c, &a.site_id)?;
        let page = crate::store::meta::lead_ads::requeue(c, &a.site_id, &a.leadgen_id, now)?
            .ok_or_else(|| Error::not_found("no form lead with this leadgenId was received for this site"))?;
        let mut effects = Effects::default();
        effects.leadgen_pages.insert(page);
        Ok(Written::new(Requeued { requeued: true }, effects))
    })
    .await
}
