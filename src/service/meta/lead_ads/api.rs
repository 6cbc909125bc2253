//! The Lead Ads use cases of the Meta context (capability `metaLeads`):
//! `metaPages`, `linkMetaPage`, `unlinkMetaPage`, `metaLinkedPages`,
//! `returnMetaFormLead`, and the forms' `metaForms`, `refreshMetaForms`,
//! `setMetaFormRules`, `metaFormRules`, `simulateMetaFormRules`. They act for the caller's
//! owner like the other Meta functions; what is outside the caller's sites
//! shows no site (FED-13).

use serde::Deserialize;

use super::forms::{self, FormRules};
use super::{
    LinkedContext, PageLinked, PageUnlinked, Pages, SitePages, leadgen_ready, link_page, linked_pages, list_pages,
    unlink_page,
};
use crate::error::{Error, Result};
use crate::service::api::{Caller, NoArgs};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::store::meta::lead_ads as store;

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

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FormsArgs {
    pub site_id: String,
}

/// One form of `metaForms`: its questions (never an answer), its leads of the last 30 days, its rules.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormView {
    pub form_id: String,
    pub page_id: String,
    pub name: String,
    pub status: String,
    pub questions: Vec<crate::meta::graph::Question>,
    /// Form leads made with a creation time in the 30 days up to now.
    #[serde(rename = "leads30d")]
    pub leads_30d: i64,
    pub rules: Option<FormRules>,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Forms {
    pub forms: Vec<FormView>,
}

const DAYS_30: i64 = 30 * 86_400_000;

/// `metaForms`: the forms of the site's linked Pages as last listed (cached; `refreshMetaForms` reads again).
pub async fn meta_forms(cx: &Context, caller: &Caller, a: FormsArgs) -> Result<Forms> {
    caller.check_site(&a.site_id)?;
    let since = cx.now().saturating_sub(DAYS_30);
    cx.read(move |c| {
        crate::service::sites::require(c, &a.site_id)?;
        let rows = store::forms_of_site(c, &a.site_id)?;
        let counts = store::leads_per_form(c, &a.site_id, since)?;
        let forms = rows
            .iter()
            .map(|f| FormView {
                form_id: f.form_id.clone(),
                page_id: f.page_id.clone(),
                name: f.name.clone(),
                status: f.status.clone(),
                questions: forms::questions(f),
                leads_30d: counts.iter().find(|n| n.form_id == f.form_id).map_or(0, |n| n.leads),
                rules: forms::rules_of(f),
            })
            .collect();
        Ok(Forms { forms })
    })
    .await
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormsRefreshed {
    /// Forms now listed for the site.
    pub forms: usize,
}

/// `refreshMetaForms`: reads each linked Page's forms from Meta again (questions, names, statuses; rules kept).
pub async fn refresh_meta_forms(cx: &Context, caller: &Caller, a: FormsArgs) -> Result<FormsRefreshed> {
    caller.check_site(&a.site_id)?;
    let site = a.site_id.clone();
    let pages = cx
        .read(move |c| {
            crate::service::sites::require(c, &site)?;
            let links = store::page_links_of_sites(c, std::slice::from_ref(&site))?;
            let mut pages = Vec::with_capacity(links.len());
            for l in links {
                pages.push((l.page_id.clone(), store::page(c, &l.owner_key, &l.page_id)?));
            }
            Ok(pages)
        })
        .await?;
    let mut listed = Vec::new();
    for (page_id, row) in pages {
        let row = row.ok_or_else(|| Error::not_found("a linked Page is no longer in its owner's listing"))?;
        let token = super::open_page_token(cx, &row)?;
        let forms = cx.graph.forms(&token, &page_id).await.map_err(|e| crate::service::meta::errors::from_graph(&e))?;
        listed.push((page_id, forms.value));
    }
    let (site, now) = (a.site_id, cx.now());
    cx.write(move |c| {
        let mut n = 0;
        for (page_id, forms) in &listed {
            n += super::store_forms(c, page_id, &site, forms, now)?;
        }
        Ok(Written::new(FormsRefreshed { forms: n }, Effects::default()))
    })
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetRulesArgs {
    pub site_id: String,
    pub form_id: String,
    /// null clears them: the form's leads arrive `new`, in no column.
    pub rules: Option<FormRules>,
}

/// One form's rules.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FormRulesView {
    pub form_id: String,
    pub rules: Option<FormRules>,
}

fn site_form(c: &mut crate::db::AnyConnection, site: &str, form: &str) -> Result<store::FormRow> {
    crate::service::sites::require(c, site)?;
    store::forms_of_site(c, site)?
        .into_iter()
        .find(|f| f.form_id == form)
        .ok_or_else(|| Error::not_found("no such form on the site's linked Pages (refreshMetaForms lists them)"))
}

/// `setMetaFormRules` (LA-17): refuses an undeclared column or an unknown question; answers what is stored.
pub async fn set_meta_form_rules(cx: &Context, caller: &Caller, a: SetRulesArgs) -> Result<FormRulesView> {
    caller.check_site(&a.site_id)?;
    crate::service::validate::text("formId", &a.form_id, 1, 64)?;
    cx.write(move |c| {
        let form = site_form(c, &a.site_id, &a.form_id)?;
        if let Some(rules) = &a.rules {
            forms::check(c, &a.site_id, &form, rules)?;
        }
        let stored = a.rules.as_ref().map(serde_json::to_string).transpose().map_err(Error::internal)?;
        store::set_form_rules(c, &a.site_id, &a.form_id, stored.as_deref())?;
        Ok(Written::new(FormRulesView { form_id: a.form_id, rules: a.rules }, Effects::default()))
    })
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RulesArgs {
    pub site_id: String,
    pub form_id: Option<String>,
}

/// `metaFormRules`: the rules of one form, or of every form of the site.
pub async fn meta_form_rules(cx: &Context, caller: &Caller, a: RulesArgs) -> Result<Vec<FormRulesView>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| {
        crate::service::sites::require(c, &a.site_id)?;
        let rows = match &a.form_id {
            Some(form) => vec![site_form(c, &a.site_id, form)?],
            None => store::forms_of_site(c, &a.site_id)?,
        };
        Ok(rows.iter().map(|f| FormRulesView { form_id: f.form_id.clone(), rules: forms::rules_of(f) }).collect())
    })
    .await
}

/// One answer of a simulation.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulatedAnswer {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulateArgs {
    pub site_id: String,
    pub form_id: String,
    /// Rules to try (checked like `setMetaFormRules`); without them, the stored ones.
    pub rules: Option<FormRules>,
    pub answers: Vec<SimulatedAnswer>,
}

/// `simulateMetaFormRules` (LA-17): what a lead with these answers would become; nothing is written.
pub async fn simulate_meta_form_rules(cx: &Context, caller: &Caller, a: SimulateArgs) -> Result<forms::Outcome> {
    caller.check_site(&a.site_id)?;
    if a.answers.len() > 100 {
        return Err(Error::invalid("answers: at most 100"));
    }
    cx.read(move |c| {
        let form = site_form(c, &a.site_id, &a.form_id)?;
        let rules = match a.rules {
            Some(r) => {
                forms::check(c, &a.site_id, &form, &r)?;
                Some(r)
            }
            None => forms::rules_of(&form),
        };
        let answers: Vec<(String, String)> = a.answers.into_iter().map(|x| (x.key, x.value)).collect();
        Ok(forms::apply(rules.as_ref(), &answers))
    })
    .await
}

/// `metaFormsReport` (LA-18): per form, its leads by cohort with the spend of its ads.
pub async fn meta_forms_report(
    cx: &Context,
    caller: &Caller,
    a: super::report::FormsReportArgs,
) -> Result<super::report::FormsReport> {
    caller.check_site(&a.site_id)?;
    super::report::check(&a)?;
    let caps = crate::service::leads::reports::Caps::from_config(&cx.config);
    cx.read(move |c| super::report::forms_report(c, &a, caps)).await
}
