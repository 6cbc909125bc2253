//! The site's own sales on the ad rows of `leadsReport` (docs/whatsapp.md §3):
//! ledger conversions of visits whose URL parameters named a Meta ad count
//! on that ad, its ad set and its campaign beside the leads' revenue, and
//! each such row answers the return of every sale its spend brought
//! ("Retorno total", rules WA-20, WA-21).

use std::collections::{BTreeMap, BTreeSet};

use super::tree::{CampaignRow, Counters, SiteFigures};
use crate::store::leads::rollups::GroupRow;
use crate::store::leads::visits::{AdIds, SiteSales};

type Sales = BTreeMap<(String, AdIds), SiteSales>;

/// Rows for the sales whose ad (or ad set, or campaign) has no lead and no
/// spend in the range, so the tree has a row to put them on.
pub(super) fn add_rows(rows: &mut Vec<GroupRow>, sales: &Sales) {
    // The ads the tree has, and its (campaign, ad set) pairs for sales that name no ad.
    let ads: BTreeSet<(&str, &str)> = rows.iter().map(|r| (r.site_id.as_str(), r.ad_id.as_str())).collect();
    let sets: BTreeSet<(&str, &str, &str)> =
        rows.iter().map(|r| (r.site_id.as_str(), r.campaign_id.as_str(), r.adset_id.as_str())).collect();
    let missing: Vec<GroupRow> = sales
        .keys()
        .filter(|(site, ad)| {
            if ad.ad_id.is_empty() {
                !sets
                    .iter()
                    .any(|(s, c, a)| s == site && *c == ad.campaign_id && (ad.adset_id.is_empty() || *a == ad.adset_id))
            } else {
                !ads.contains(&(site.as_str(), ad.ad_id.as_str()))
            }
        })
        .map(|(site_id, ad)| GroupRow {
            site_id: site_id.clone(),
            origin: String::new(),
            campaign_id: ad.campaign_id.clone(),
            adset_id: ad.adset_id.clone(),
            ad_id: ad.ad_id.clone(),
            day: 0,
            leads: 0,
            qualified: 0,
            won: 0,
            revenue_cents: 0,
        })
        .collect();
    rows.extend(missing);
}

fn add(c: &mut Counters, s: SiteSales) {
    let site = c.site.get_or_insert_with(SiteFigures::default);
    site.site_conversions += s.conversions;
    site.site_revenue_cents += s.revenue_cents;
}

/// Puts each sale on its ad's row and on its ad set's and campaign's, then
/// computes the total return of every row that holds any.
pub(super) fn place(campaigns: &mut [CampaignRow], sales: &Sales) {
    for ((site_id, ad), s) in sales {
        let Some(c) = campaigns.iter_mut().find(|c| c.campaign_id.as_deref().unwrap_or("") == ad.campaign_id) else {
            continue;
        };
        add(&mut c.counters, *s);
        let adset = c.adsets.iter_mut().find(|a| {
            if ad.ad_id.is_empty() {
                a.adset_id.as_deref().unwrap_or("") == ad.adset_id
            } else {
                a.ads.iter().any(|r| r.ad_id == ad.ad_id && &r.site_id == site_id)
            }
        });
        if let Some(a) = adset {
            if !ad.adset_id.is_empty() || !ad.ad_id.is_empty() {
                add(&mut a.counters, *s);
            }
            if let Some(r) =
                a.ads.iter_mut().find(|r| !ad.ad_id.is_empty() && r.ad_id == ad.ad_id && &r.site_id == site_id)
            {
                add(&mut r.counters, *s);
            }
        }
    }
    for c in campaigns.iter_mut() {
        total_return(&mut c.counters);
        for a in c.adsets.iter_mut() {
            total_return(&mut a.counters);
            for r in a.ads.iter_mut() {
                total_return(&mut r.counters);
            }
        }
    }
}

fn total_return(c: &mut Counters) {
    let revenue = c.revenue_cents;
    let spend = c.spend_cents.filter(|s| *s > 0);
    if let Some(site) = c.site.as_mut() {
        site.total_return = spend.map(|s| (revenue + site.site_revenue_cents) as f64 / s as f64);
    }
}
