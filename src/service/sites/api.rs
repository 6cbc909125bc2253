//! The sites' use case: `listSites`, the caller's sites with only five fields.

use serde::Serialize;
use utoipa::ToSchema;

use crate::error::Result;
use crate::service::api::{Caller, NoArgs};
use crate::service::context::Context;

/// `listSites`: only these five fields.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteSummary {
    pub site_id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub cookieless: bool,
}

pub async fn list_sites(cx: &Context, caller: &Caller, _: NoArgs) -> Result<Vec<SiteSummary>> {
    let ids = caller.sites.clone();
    let rows = cx.read(move |c| super::require_many(c, &ids)).await?;
    Ok(rows
        .into_iter()
        .map(|r| SiteSummary {
            site_id: r.id,
            name: r.name,
            currency: r.currency,
            timezone: r.timezone,
            cookieless: r.cookieless,
        })
        .collect())
}
