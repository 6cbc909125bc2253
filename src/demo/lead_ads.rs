//! The demo's Meta Lead Ads (LEADADS.md §8): the sample agency's Loja X Page
//! linked to the site with its two forms, a dozen instant-form leads waiting
//! at the fake Meta (their webhooks "lost", so the first reconciliation finds
//! them as soon as the Page's actor starts), the fake's own form-lead handler
//! set for the site, and rules on "Orçamento" that place and qualify its
//! leads. Form leads then sit on the board and in the reports beside the
//! WhatsApp leads. Only while `metaLeads` is on.

use serde_json::json;

use crate::clock::HOUR_MS;
use crate::error::{Error, Result};
use crate::meta::fake::leads::{FORM_AGENDA, FORM_ORCAMENTO, PAGE_LOJA_X};
use crate::service::meta::lead_ads::{self, forms::FormRules, handler};
use crate::state::AppState;

const SITE: &str = "loja-x";
const NAMES: [&str; 6] = ["Ana Souza", "Bruno Lima", "Carla Dias", "Diego Rocha", "Elisa Melo", "Fábio Nunes"];
const INTERESTS: [&str; 4] = ["Sofá", "Mesa", "Cadeira", "Só olhando"];

/// Links the Page, sets the handler and the rules, and makes the fake's leads. Answers the leads made.
pub async fn seed(st: &AppState, owner: &str, now: i64) -> Result<usize> {
    let fake = st.fake.as_ref().ok_or_else(|| Error::internal("the demo's Lead Ads need the fake Graph API"))?;
    let cx = &st.cx;
    // The leads first: linking starts the Page's first reconciliation, which finds them.
    let ad = crate::meta::fake::sample_ads().iter().find(|a| a.account == "act_1029384756").map(|a| a.id);
    let http = reqwest::Client::new();
    let mut made = 0;
    for i in 0..12usize {
        let form = if i % 3 == 2 { FORM_AGENDA } else { FORM_ORCAMENTO };
        let created = (now - (i as i64 * 11 + 2) * HOUR_MS) / 1000;
        let mut fields = vec![
            json!({"name": "full_name", "values": [NAMES[i % NAMES.len()]]}),
            json!({"name": "phone_number", "values": [format!("+55 11 9{:04}-{:04}", 8100 + i, 2300 + i * 7)]}),
        ];
        if form == FORM_ORCAMENTO {
            fields.push(json!({"name": "interesse", "values": [INTERESTS[i % INTERESTS.len()]]}));
        }
        let mut body = json!({"pageId": PAGE_LOJA_X, "formId": form, "createdTime": created, "drop": true,
            "fieldData": fields});
        // One in four came without an ad (organic).
        if i % 4 != 3
            && let Some(ad) = ad
        {
            body["adId"] = json!(ad);
        }
        let ok = http
            .post(format!("{}/__fake/leadgen", fake.base_url))
            .json(&body)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        made += usize::from(ok);
    }
    lead_ads::list_pages(cx, owner, &[SITE.to_string()]).await?;
    lead_ads::link_page(cx, owner, SITE, PAGE_LOJA_X).await?;
    let rules = FormRules {
        label: Some("Orçamento: {interesse}".into()),
        qualify_when: vec![lead_ads::forms::Condition {
            key: "interesse".into(),
            any_of: vec!["Sofá".into(), "Mesa".into()],
        }],
        ..FormRules::default()
    };
    let stored = serde_json::to_string(&rules).map_err(Error::internal)?;
    cx.write(move |c| {
        crate::store::meta::lead_ads::set_form_rules(c, SITE, FORM_ORCAMENTO, Some(&stored))?;
        Ok(crate::service::effects::Written::new((), crate::service::effects::Effects::default()))
    })
    .await?;
    // The handler last: until it is set nothing is fetched, so every lead meets the rules.
    let secret = crate::ids::token()?;
    let set = handler::SetFormLeadHandler { url: format!("{}/__fake/handler", fake.base_url), secret };
    handler::set(cx, SITE, set).await?;
    Ok(made)
}
