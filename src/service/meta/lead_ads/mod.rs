//! Meta Lead Ads (instant forms, LEADADS.md), behind the `metaLeads`
//! capability: an owner's Pages (`metaPages`), a Page linked to the site its
//! form leads feed (`linkMetaPage`, `metaLinkedPages`), the leadgen webhook's
//! receipts (`receive`) and what one Page's actor does with them (`fetch`).
//!
//! A person's answers are fetched from Meta when a receipt becomes a lead and
//! live in memory only: no row, log line, metric or error ever holds them
//! (LA-08). Tokens are sealed like every token and never answered.

pub mod api;
pub mod fetch;
pub mod forms;
pub mod handler;
pub mod receive;
pub mod reconcile;
pub mod report;

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::codes::Fault;
use crate::crypto::{CryptoError, Identity};
use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::meta::graph::{ErrorClass, GraphError, GraphPage};
use crate::secret::Secret;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::meta::{connection, errors};
use crate::service::sites;
use crate::store::meta as meta_store;
use crate::store::meta::lead_ads::{self as store, FormListing, PageLinkRow, PageRow};

/// Most Pages linked to one site (LA-03).
pub const MAX_PAGES_PER_SITE: usize = 20;

/// `leadgenReady`: the capability is on and a delivery can be authenticated
/// (the app secret signs Meta's; the federation audience admits forwarded ones).
pub fn leadgen_ready(cx: &Context) -> bool {
    cx.capabilities().serves(crate::service::api::Capability::MetaLeads)
        && (cx.meta_app.is_some() || cx.config.federation_audience.is_some())
}

/// One Page of `metaPages`. Never a token.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PageView {
    pub page_id: String,
    pub name: String,
    /// The site the Page feeds, when it is one of the caller's.
    pub linked_site_id: Option<String>,
    /// The token's tasks on the Page include ADVERTISE or MANAGE.
    pub can_retrieve_leads: bool,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pages {
    pub pages: Vec<PageView>,
}

pub(crate) fn open_page_token(cx: &Context, row: &PageRow) -> Result<Secret> {
    cx.secrets()?.open(&row.sealed_token, Identity::Page(&row.owner_key, &row.page_id)).map_err(|e| match e {
        CryptoError::KeyMismatch => Error::new(
            Code::SecretsKeyMissing,
            "the Page token was sealed under another RASTRO_SECRETS_KEY: list again",
        ),
        _ => Error::internal("a sealed Page token does not open"),
    })
}

/// The stored listing of `owner`'s Pages as `scope` sees it (FED-13: a Page
/// linked outside the caller's sites shows no site).
fn view(conn: &mut AnyConnection, owner: &str, scope: &[String]) -> Result<Pages> {
    let rows = store::pages_of_owner(conn, owner)?;
    let ids: Vec<String> = rows.iter().map(|r| r.page_id.clone()).collect();
    let links = store::page_links_of(conn, &ids)?;
    let pages = rows
        .into_iter()
        .map(|r| {
            let link = links.iter().find(|l| l.page_id == r.page_id);
            PageView {
                linked_site_id: link.map(|l| l.site_id.clone()).filter(|s| scope.contains(s)),
                last_error: link.and_then(|l| l.last_error.clone()),
                page_id: r.page_id,
                name: r.name,
                can_retrieve_leads: r.can_retrieve_leads,
            }
        })
        .collect();
    Ok(Pages { pages })
}

/// `metaPages`: reads the owner's Pages from Meta (`GET /me/accounts`), seals
/// each Page token and stores the listing (LA-02).
pub async fn list_pages(cx: &Context, owner: &str, scope: &[String]) -> Result<Pages> {
    let key = cx.secrets()?.clone();
    let owner_s = owner.to_string();
    let row = cx
        .read(move |c| Ok(meta_store::connection(c, &owner_s)?))
        .await?
        .ok_or_else(|| Error::not_found("no Meta connection for this owner"))?;
    let token = connection::open_token(cx, &row)?;
    let fetched: Vec<GraphPage> = cx.graph.page_accounts(&token).await.map_err(|e| errors::from_graph(&e))?.value;
    let now = cx.now();
    let mut rows = Vec::with_capacity(fetched.len());
    for p in fetched.into_iter().take(100) {
        // A Page Meta lists without a token cannot give leads: listed, never usable.
        let Some(page_token) = &p.access_token else { continue };
        rows.push(PageRow {
            owner_key: owner.to_string(),
            sealed_token: key.seal(page_token, Identity::Page(owner, &p.id))?,
            can_retrieve_leads: p.can_retrieve_leads(),
            name: p.name.chars().take(256).collect(),
            page_id: p.id,
            listed_at: now,
        });
    }
    let (owner, scope) = (owner.to_string(), scope.to_vec());
    cx.write(move |c| {
        store::replace_pages(c, &owner, &rows)?;
        // Fresh Page tokens resume the owner's Pages their token or permission stopped.
        let mut effects = Effects::quiet();
        let ids: Vec<String> = rows.iter().map(|r| r.page_id.clone()).collect();
        for link in store::page_links_of(c, &ids)?.into_iter().filter(|l| l.owner_key == owner) {
            if link.last_error.as_deref().and_then(Fault::of).is_some_and(stops_page) {
                store::set_page_error(c, &link.page_id, None, now)?;
                effects.leadgen_pages.insert(link.page_id);
                effects.changes_cached_reads = true;
            }
        }
        Ok(Written::new(view(c, &owner, &scope)?, effects))
    })
    .await
}

/// `linkMetaPage`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageLinked {
    pub page_id: String,
    pub site_id: String,
    pub subscribed: bool,
    /// The forms Meta lists for the Page, stored at once.
    pub forms: usize,
}

/// Whether a Page's `lastError` code stops it until its Pages are listed again.
pub fn stops_page(code: Fault) -> bool {
    matches!(code, Fault::PageTokenInvalid | Fault::LeadsPermissionMissing)
}

/// Why a Graph failure on a Page's calls stops it: its code and text.
pub fn page_fault(e: &GraphError) -> Option<String> {
    match e.class {
        ErrorClass::TokenRefused => Some(Fault::PageTokenInvalid.with("Meta refused the Page's token")),
        ErrorClass::Permission => Some(Fault::LeadsPermissionMissing.with("the Page's token may not read its leads")),
        _ => None,
    }
}

/// The checks of a link in the transaction that writes it: one Page feeds
/// one site (CONFLICT for another), at most [`MAX_PAGES_PER_SITE`] a site.
fn check_link(conn: &mut AnyConnection, site_id: &str, page_id: &str) -> Result<Option<PageLinkRow>> {
    sites::require(conn, site_id)?;
    if let Some(l) = store::page_link(conn, page_id)? {
        if l.site_id != site_id {
            return Err(Error::conflict("this Page already feeds another site"));
        }
        return Ok(Some(l));
    }
    if store::page_links_of_sites(conn, &[site_id.to_string()])?.len() >= MAX_PAGES_PER_SITE {
        return Err(Error::conflict(format!("a site takes at most {MAX_PAGES_PER_SITE} Pages")));
    }
    Ok(None)
}

/// `linkMetaPage`: subscribes the app to the Page's `leadgen` field with its
/// token, lists its forms, and links it to the site (LA-03).
pub async fn link_page(cx: &Context, owner: &str, site_id: &str, page_id: &str) -> Result<PageLinked> {
    if !leadgen_ready(cx) {
        return Err(Error::new(
            Code::FederationNotConfigured,
            "Lead Ads needs RASTRO_META_APP_SECRET or RASTRO_FEDERATION_AUDIENCE to receive leads",
        ));
    }
    let (o, s, p) = (owner.to_string(), site_id.to_string(), page_id.to_string());
    let row = cx
        .read(move |c| {
            check_link(c, &s, &p)?;
            Ok(store::page(c, &o, &p)?)
        })
        .await?
        .ok_or_else(|| Error::not_found("no such Page in this owner's listing (metaPages lists them)"))?;
    if !row.can_retrieve_leads {
        return Err(Error::invalid(
            "the connection's tasks on this Page do not include its leads (ADVERTISE or MANAGE)",
        ));
    }
    let token = open_page_token(cx, &row)?;
    cx.graph.subscribe_leadgen(&token, page_id).await.map_err(|e| errors::from_graph(&e))?;
    let forms = cx.graph.forms(&token, page_id).await.map_err(|e| errors::from_graph(&e))?.value;
    let now = cx.now();
    let (owner, site, page) = (owner.to_string(), site_id.to_string(), page_id.to_string());
    cx.write(move |c| {
        if check_link(c, &site, &page)?.is_none() {
            let link = PageLinkRow {
                page_id: page.clone(),
                site_id: site.clone(),
                owner_key: owner.clone(),
                name: row.name.clone(),
                subscribed: true,
                last_error: None,
                last_webhook_at: None,
                last_reconciled_at: None,
                lease_owner: None,
                lease_until: None,
                linked_at: now,
                updated_at: now,
            };
            store::insert_page_link(c, &link)?;
        }
        store_forms(c, &page, &site, &forms, now)?;
        let mut effects = Effects::default();
        effects.leadgen_pages.insert(page.clone());
        let answer = PageLinked { page_id: page, site_id: site, subscribed: true, forms: forms.len() };
        Ok(Written::new(answer, effects))
    })
    .await
}

/// Stores a Page's forms as Meta listed them (their rules and watermarks kept).
pub(crate) fn store_forms(
    c: &mut AnyConnection,
    page: &str,
    site: &str,
    forms: &[crate::meta::graph::GraphForm],
    now: i64,
) -> Result<usize> {
    for f in forms {
        let questions = serde_json::to_string(&f.questions).map_err(Error::internal)?;
        let listing = FormListing {
            page_id: page,
            form_id: &f.id,
            site_id: site,
            name: &f.name,
            status: &f.status,
            questions: &questions,
            now,
        };
        store::upsert_form(c, &listing)?;
    }
    Ok(forms.len())
}

/// `unlinkMetaPage`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageUnlinked {
    /// The Page was linked to the site and is not any more.
    pub unlinked: bool,
    /// Meta confirmed the app no longer gets the Page's leadgen webhooks;
    /// false when that call failed (the unlink stands: later webhooks of the
    /// Page are counted and dropped like any unlinked Page's).
    pub unsubscribed: bool,
}

/// `unlinkMetaPage` (LA-04): unsubscribes the app from the Page's leads with
/// its token (a failure is logged with its code and answered, not fatal),
/// then removes the link, which stops its actor and reconciliation; receipts
/// still waiting end `PAGE_UNLINKED`; every lead already made stays.
pub async fn unlink_page(cx: &Context, owner: &str, site_id: &str, page_id: &str) -> Result<PageUnlinked> {
    let (s, p, o) = (site_id.to_string(), page_id.to_string(), owner.to_string());
    let (link, row) = cx
        .read(move |c| {
            sites::require(c, &s)?;
            let link = store::page_link(c, &p)?.filter(|l| l.site_id == s);
            let row = match &link {
                Some(l) => store::page(c, &l.owner_key, &p)?.or(store::page(c, &o, &p)?),
                None => None,
            };
            Ok((link, row))
        })
        .await?;
    if link.is_none() {
        return Ok(PageUnlinked { unlinked: false, unsubscribed: false });
    }
    let unsubscribed = match row.as_ref().map(|r| open_page_token(cx, r)) {
        Some(Ok(token)) => match cx.graph.unsubscribe_leadgen(&token, page_id).await {
            Ok(_) => true,
            Err(e) => {
                let code = errors::from_graph(&e).code;
                tracing::warn!(
                    page_id,
                    code = code.as_str(),
                    "unsubscribing the Page from leadgen failed; unlinked anyway"
                );
                false
            }
        },
        _ => {
            tracing::warn!(page_id, "no usable Page token to unsubscribe with; unlinked anyway");
            false
        }
    };
    let (page, now) = (page_id.to_string(), cx.now());
    cx.write(move |c| {
        let unlinked = store::delete_page_link(c, &page, &Fault::PageUnlinked.with("the Page was unlinked"), now)?;
        let mut effects = Effects::default();
        effects.leadgen_pages.insert(page);
        Ok(Written::new(PageUnlinked { unlinked, unsubscribed }, effects))
    })
    .await
}

/// One linked Page of `metaLinkedPages`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkedPage {
    pub page_id: String,
    pub name: String,
    pub subscribed: bool,
    pub last_webhook_at: Option<i64>,
    pub last_reconciled_at: Option<i64>,
    /// Receipts waiting to become leads.
    pub pending: i64,
    /// Receipts that ended without a lead (their `lastError` says why).
    pub failed: i64,
    pub last_error: Option<String>,
}

/// `metaLinkedPages`, per site.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SitePages {
    pub site_id: String,
    pub pages: Vec<LinkedPage>,
    pub leadgen_ready: bool,
    /// Whether the site has a form-lead handler (without one nothing is fetched, LA-10).
    pub handler_ready: bool,
    pub issuer: String,
    pub audience: Option<String>,
}

pub fn linked_pages(
    conn: &mut AnyConnection,
    ready: bool,
    settings: &LinkedContext,
    sites: &[String],
) -> Result<Vec<SitePages>> {
    let links = store::page_links_of_sites(conn, sites)?;
    let counts = store::counts_of_sites(conn, sites)?;
    let handlers = store::sites_with_handler(conn, sites)?;
    Ok(sites
        .iter()
        .map(|site| SitePages {
            site_id: site.clone(),
            pages: links
                .iter()
                .filter(|l| &l.site_id == site)
                .map(|l| {
                    let n = counts.iter().find(|c| c.page_id == l.page_id);
                    LinkedPage {
                        page_id: l.page_id.clone(),
                        name: l.name.clone(),
                        subscribed: l.subscribed,
                        last_webhook_at: l.last_webhook_at,
                        last_reconciled_at: l.last_reconciled_at,
                        pending: n.map_or(0, |n| n.pending),
                        failed: n.map_or(0, |n| n.failed),
                        last_error: l.last_error.clone(),
                    }
                })
                .collect(),
            leadgen_ready: ready,
            handler_ready: handlers.contains(site),
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
        })
        .collect())
}

/// `metaStatus`' `leadAds` of one site (LA-20), while `metaLeads` is on.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LeadAdsStatus {
    /// Pages linked to the site.
    pub pages: i64,
    /// Receipts waiting to become leads.
    pub pending: i64,
    /// Receipts that ended without a lead.
    pub failed: i64,
    /// The latest webhook of any of its Pages.
    pub last_webhook_at: Option<i64>,
    /// The stalest of its Pages' last reconciliations (null while one has never run).
    pub last_reconciled_at: Option<i64>,
}

/// `leadAds` per site of `sites` (every site has one, zeros without a Page).
pub fn status_of_sites(conn: &mut AnyConnection, sites: &[String]) -> Result<BTreeMap<String, LeadAdsStatus>> {
    let links = store::page_links_of_sites(conn, sites)?;
    let counts = store::counts_of_sites(conn, sites)?;
    let mut out: BTreeMap<String, LeadAdsStatus> =
        sites.iter().map(|s| (s.clone(), LeadAdsStatus::default())).collect();
    for l in &links {
        let Some(st) = out.get_mut(&l.site_id) else { continue };
        let never = st.pages > 0 && st.last_reconciled_at.is_none();
        st.last_reconciled_at = match (st.pages, st.last_reconciled_at, l.last_reconciled_at) {
            (0, _, at) => at,
            _ if never => None,
            (_, Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
        st.pages += 1;
        st.last_webhook_at = st.last_webhook_at.max(l.last_webhook_at);
        if let Some(n) = counts.iter().find(|c| c.page_id == l.page_id) {
            st.pending += n.pending;
            st.failed += n.failed;
        }
    }
    Ok(out)
}

/// What `metaLinkedPages` reports of the settings.
#[derive(Debug, Clone)]
pub struct LinkedContext {
    pub issuer: String,
    pub audience: Option<String>,
}
