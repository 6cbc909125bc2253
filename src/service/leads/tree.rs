//! The campaign tree of `leadsReport`: campaigns, their ad sets and ads, each
//! with the counters of its leads and the spend of its ads (names from the
//! catalog first, then the names the leads gave).

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::service::leads::names::Names;
use crate::service::meta::spend::{Amount, ReportSpend};
use crate::store::leads::rollups::GroupRow;

/// The counters every report row carries. `null` spend means unknown, never zero.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
    pub spend_cents: Option<i64>,
    pub impressions: Option<i64>,
    pub clicks: Option<i64>,
    /// The site's own sales of visits from this row's ads (rules WA-20,
    /// WA-21); absent on rows without any.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub site: Option<SiteFigures>,
}

/// Ledger sales of site visits that came from a row's ads, and the return of
/// every sale the row's spend brought: its leads' and the site's.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SiteFigures {
    pub site_conversions: i64,
    pub site_revenue_cents: i64,
    /// ("Retorno total") the leads' revenue plus the site's, over the spend;
    /// null without spend.
    pub total_return: Option<f64>,
}

impl Counters {
    pub(super) fn add(&mut self, r: &GroupRow) {
        self.leads += r.leads;
        self.qualified += r.qualified;
        self.won += r.won;
        self.revenue_cents += r.revenue_cents;
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdRow {
    pub ad_id: String,
    pub name: Option<String>,
    /// The site the ad brought leads to.
    pub site_id: String,
    /// `video`, `image`, `carousel` or `other`; null until the catalog sync.
    pub creative_type: Option<String>,
    /// Meta's effective status; null until the catalog sync.
    pub ad_status: Option<String>,
    /// Served by rastrod itself; null until the catalog sync.
    pub thumbnail_url: Option<String>,
    #[serde(flatten)]
    pub counters: Counters,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdsetRow {
    /// null for leads whose ad set the host did not say.
    pub adset_id: Option<String>,
    pub name: Option<String>,
    #[serde(flatten)]
    pub counters: Counters,
    pub ads: Vec<AdRow>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRow {
    /// null for leads whose campaign the host did not say.
    pub campaign_id: Option<String>,
    pub name: Option<String>,
    #[serde(flatten)]
    pub counters: Counters,
    pub adsets: Vec<AdsetRow>,
}

pub(super) fn set_amount(c: &mut Counters, a: Option<Amount>) {
    c.spend_cents = a.map(|a| a.spend_cents);
    c.impressions = a.map(|a| a.impressions);
    c.clicks = a.map(|a| a.clicks);
}

fn add_amount(c: &mut Counters, a: Option<Amount>) {
    if let Some(a) = a {
        c.spend_cents = Some(c.spend_cents.unwrap_or(0) + a.spend_cents);
        c.impressions = Some(c.impressions.unwrap_or(0) + a.impressions);
        c.clicks = Some(c.clicks.unwrap_or(0) + a.clicks);
    }
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// Campaign → ad set → ad, each level summing its children, largest first;
/// rows without an id (the host did not say) come last under a null id.
pub(super) fn build_tree(
    rows: Vec<GroupRow>,
    names: &Names,
    site_ids: &[String],
    spend: &ReportSpend,
) -> Vec<CampaignRow> {
    let mut campaigns: BTreeMap<String, BTreeMap<String, Vec<GroupRow>>> = BTreeMap::new();
    for r in rows {
        campaigns.entry(r.campaign_id.clone()).or_default().entry(r.adset_id.clone()).or_default().push(r);
    }
    let mut out: Vec<CampaignRow> = campaigns
        .into_iter()
        .map(|(campaign_id, adsets)| {
            let mut c_counters = Counters::default();
            let mut adsets: Vec<AdsetRow> = adsets
                .into_iter()
                .map(|(adset_id, ads)| {
                    let mut s_counters = Counters::default();
                    let mut ad_rows: Vec<AdRow> = Vec::new();
                    for r in ads {
                        s_counters.add(&r);
                        if r.ad_id.is_empty() {
                            continue;
                        }
                        let mut counters = Counters::default();
                        counters.add(&r);
                        let amount = spend.ad(&r.site_id, &r.ad_id);
                        set_amount(&mut counters, amount);
                        add_amount(&mut s_counters, amount);
                        let cat = spend.catalog.get(&r.ad_id);
                        ad_rows.push(AdRow {
                            name: cat.and_then(|c| c.name.clone()).or_else(|| names.get(&r.site_id, "ad", &r.ad_id)),
                            ad_id: r.ad_id,
                            site_id: r.site_id,
                            creative_type: cat.and_then(|c| c.creative_type.clone()),
                            ad_status: cat.and_then(|c| c.ad_status.clone()),
                            thumbnail_url: cat
                                .and_then(|c| c.thumbnail.as_ref())
                                .map(|t| format!("/media/thumbnails/{t}")),
                            counters,
                        });
                    }
                    ad_rows.sort_by(|x, y| y.counters.leads.cmp(&x.counters.leads).then_with(|| x.ad_id.cmp(&y.ad_id)));
                    c_counters.leads += s_counters.leads;
                    c_counters.qualified += s_counters.qualified;
                    c_counters.won += s_counters.won;
                    c_counters.revenue_cents += s_counters.revenue_cents;
                    add_amount(
                        &mut c_counters,
                        s_counters.spend_cents.map(|spend_cents| Amount {
                            spend_cents,
                            impressions: s_counters.impressions.unwrap_or(0),
                            clicks: s_counters.clicks.unwrap_or(0),
                        }),
                    );
                    AdsetRow {
                        name: catalog_name(spend, "adset", &adset_id)
                            .or_else(|| names.any(site_ids, "adset", &adset_id)),
                        adset_id: opt(&adset_id),
                        counters: s_counters,
                        ads: ad_rows,
                    }
                })
                .collect();
            adsets.sort_by(|x, y| {
                x.adset_id.is_none().cmp(&y.adset_id.is_none()).then(y.counters.leads.cmp(&x.counters.leads))
            });
            CampaignRow {
                name: catalog_name(spend, "campaign", &campaign_id)
                    .or_else(|| names.any(site_ids, "campaign", &campaign_id)),
                campaign_id: opt(&campaign_id),
                counters: c_counters,
                adsets,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        x.campaign_id.is_none().cmp(&y.campaign_id.is_none()).then(y.counters.leads.cmp(&x.counters.leads))
    });
    out
}

/// A campaign's or ad set's name from the catalog (the sync's names win).
fn catalog_name(spend: &ReportSpend, level: &str, id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    spend.catalog.values().find_map(|c| match level {
        "campaign" if c.campaign_id == id => c.campaign_name.clone(),
        "adset" if c.adset_id == id => c.adset_name.clone(),
        _ => None,
    })
}
