//! The operator's screens read money and ratios already written out (rule
//! METRIC-02: `R$ 1.234,56`, `9,3x`, an em dash for unknown, never `R$ 0`):
//! the same report as every reader, each row beside its `fmt`, computed here
//! by `metrics` so the page never derives a figure itself.

use serde::Serialize;
use utoipa::ToSchema;

use super::metrics::{
    Delivery, ReturnBand, RowCounts, delivery, format_money, format_return, return_band, row_metrics,
};
use super::reads::{HistoryEntry, LeadJourney};
use super::reports::{
    AdRow, AdsetRow, CampaignRow, Counters, LeadsComparison, LeadsReport, OriginRow, SiteReportRow, is_paid,
};
use crate::service::reporting::compare::Changes;
use crate::service::sites::Site;

/// A row's money and ratios as the screen shows them.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Formatted {
    pub revenue: String,
    pub spend: String,
    pub cost_per_lead: String,
    pub cost_per_qualified: String,
    pub cost_per_sale: String,
    pub return_on_spend: String,
    pub band: Option<ReturnBand>,
    /// Meta's delivery for the row's spend (campaigns, ad sets and ads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// ("Retorno total", campaigns, ad sets and ads) the return of the
    /// leads' revenue plus the site's own sales of the ads' visits (WA-21).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_return: Option<String>,
}

/// How one report's rows are written: its currencies and whether they mix.
struct Money<'a> {
    revenue: &'a str,
    spend: Option<&'a str>,
    mismatch: bool,
}

impl Money<'_> {
    /// Ratios only from a row the spend bought (`paid`), none with a
    /// currency mismatch (METRIC-03).
    fn row(
        &self,
        leads: i64,
        qualified: i64,
        won: i64,
        revenue_cents: i64,
        spend: Option<i64>,
        paid: bool,
    ) -> Formatted {
        let counts = RowCounts {
            leads,
            qualified,
            won,
            revenue_cents,
            spend_cents: if paid && !self.mismatch { spend } else { None },
        };
        let m = row_metrics(counts);
        let sc = self.spend.unwrap_or(self.revenue);
        Formatted {
            revenue: format_money(Some(revenue_cents), self.revenue),
            spend: format_money(spend, sc),
            cost_per_lead: format_money(m.cost_per_lead_cents, sc),
            cost_per_qualified: format_money(m.cost_per_qualified_cents, sc),
            cost_per_sale: format_money(m.cost_per_sale_cents, sc),
            return_on_spend: format_return(m.return_on_spend),
            band: return_band(m.return_on_spend),
            delivery: None,
            total_return: None,
        }
    }

    fn counters(&self, c: &Counters, paid: bool) -> Formatted {
        self.row(c.leads, c.qualified, c.won, c.revenue_cents, c.spend_cents, paid)
    }

    /// A row of the campaign tree: its money and what Meta delivered for it.
    fn delivered(&self, c: &Counters) -> Formatted {
        let sc = self.spend.unwrap_or(self.revenue);
        let f = self.counters(c, true);
        // Without site sales the total is the leads' own return.
        let total_return = match &c.site {
            Some(site) => format_return(site.total_return.filter(|_| !self.mismatch)),
            None => f.return_on_spend.clone(),
        };
        Formatted {
            delivery: Some(delivery(c.impressions, c.clicks, c.spend_cents, sc)),
            total_return: Some(total_return),
            ..f
        }
    }
}

/// A report row with its `fmt` beside its own fields.
#[derive(Debug, Serialize)]
pub struct WithFmt<T> {
    #[serde(flatten)]
    pub row: T,
    pub fmt: Formatted,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedAdset {
    pub adset_id: Option<String>,
    pub name: Option<String>,
    #[serde(flatten)]
    pub counters: Counters,
    pub fmt: Formatted,
    pub ads: Vec<WithFmt<AdRow>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedCampaign {
    pub campaign_id: Option<String>,
    pub name: Option<String>,
    #[serde(flatten)]
    pub counters: Counters,
    pub fmt: Formatted,
    pub adsets: Vec<FormattedAdset>,
}

/// A site's row: `fmt` over all its leads, `paidFmt` over the leads its spend bought.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedSite {
    #[serde(flatten)]
    pub row: SiteReportRow,
    pub fmt: Formatted,
    pub paid_fmt: Formatted,
}

/// `leadsReport` as the "Leads e gasto" screen reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedLeadsReport {
    pub currency: Option<String>,
    pub spend_currency: Option<String>,
    pub currency_mismatch: bool,
    pub spend_incomplete: bool,
    pub report_incomplete: bool,
    pub totals: WithFmt<Counters>,
    /// The ratios of what the spend bought: every paid origin (`ctwa_ad`,
    /// `lead_form`) over the report's spend (the summary's cards).
    pub paid_fmt: Formatted,
    pub origins: Vec<WithFmt<OriginRow>>,
    pub campaigns: Vec<FormattedCampaign>,
    pub by_site: Vec<FormattedSite>,
    /// With `compare`: the earlier range and its totals (REPORTING §2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<LeadsComparison>,
    /// With `compare`: each total's change, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

fn adset(money: &Money, a: AdsetRow) -> FormattedAdset {
    FormattedAdset {
        fmt: money.delivered(&a.counters),
        ads: a.ads.into_iter().map(|ad| WithFmt { fmt: money.delivered(&ad.counters), row: ad }).collect(),
        adset_id: a.adset_id,
        name: a.name,
        counters: a.counters,
    }
}

fn campaign(money: &Money, c: CampaignRow) -> FormattedCampaign {
    FormattedCampaign {
        fmt: money.delivered(&c.counters),
        adsets: c.adsets.into_iter().map(|a| adset(money, a)).collect(),
        campaign_id: c.campaign_id,
        name: c.name,
        counters: c.counters,
    }
}

/// The report with each row's `fmt`; a site's money in its own currency.
pub fn leads_report(report: LeadsReport, sites: &[Site]) -> FormattedLeadsReport {
    let revenue = report.currency.clone().unwrap_or_else(|| "BRL".into());
    let money =
        Money { revenue: &revenue, spend: report.spend_currency.as_deref(), mismatch: report.currency_mismatch };
    let by_site = report
        .by_site
        .into_iter()
        .map(|s| {
            let currency = sites.iter().find(|r| r.site_id == s.site_id).map_or(revenue.as_str(), |r| &r.currency);
            let own = Money { revenue: currency, spend: s.spend_currency.as_deref(), mismatch: s.currency_mismatch };
            let p = &s.paid;
            FormattedSite {
                fmt: own.row(s.leads, s.qualified, s.won, s.revenue_cents, s.spend_cents, false),
                paid_fmt: own.row(p.leads, p.qualified, p.won, p.revenue_cents, s.spend_cents, true),
                row: s,
            }
        })
        .collect();
    let mut paid = Counters { spend_cents: report.totals.spend_cents, ..Counters::default() };
    for o in report.origins.iter().filter(|o| is_paid(&o.origin)) {
        paid.leads += o.counters.leads;
        paid.qualified += o.counters.qualified;
        paid.won += o.counters.won;
        paid.revenue_cents += o.counters.revenue_cents;
    }
    FormattedLeadsReport {
        totals: WithFmt { fmt: money.counters(&report.totals, false), row: report.totals.clone() },
        paid_fmt: money.counters(&paid, true),
        origins: report
            .origins
            .into_iter()
            .map(|o| WithFmt { fmt: money.counters(&o.counters, is_paid(&o.origin)), row: o })
            .collect(),
        campaigns: report.campaigns.into_iter().map(|c| campaign(&money, c)).collect(),
        by_site,
        comparison: report.comparison,
        change: report.change,
        currency: report.currency,
        spend_currency: report.spend_currency,
        currency_mismatch: report.currency_mismatch,
        spend_incomplete: report.spend_incomplete,
        report_incomplete: report.report_incomplete,
    }
}

/// A stage change with its revenue written out.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedHistoryEntry {
    #[serde(flatten)]
    pub entry: HistoryEntry,
    /// The entry's revenue in the site's currency; an em dash when it has none.
    pub revenue: String,
}

/// `leadJourney` as the lead's panel reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedJourney {
    #[serde(flatten)]
    pub journey: LeadJourneyHead,
    pub history: Vec<FormattedHistoryEntry>,
}

/// The journey but its history.
#[derive(Debug, Serialize)]
pub struct LeadJourneyHead {
    pub lead: super::Lead,
    pub ad: Option<super::reads::JourneyAd>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visit: Option<super::reads::LeadVisit>,
}

pub fn journey(j: LeadJourney, currency: &str) -> FormattedJourney {
    FormattedJourney {
        history: j
            .history
            .into_iter()
            .map(|entry| FormattedHistoryEntry { revenue: format_money(entry.revenue_cents, currency), entry })
            .collect(),
        journey: LeadJourneyHead { lead: j.lead, ad: j.ad, visit: j.visit },
    }
}
