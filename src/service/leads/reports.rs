//! leads.report and leads.daily: counters by cohort (a qualification or sale
//! lands on the UTC day its lead first arrived), read from the rollups.
//! Spend fields are part of every answer; they stay `null` (unknown) until an
//! ad account is linked and synced.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use super::tree::{AdRow, AdsetRow, CampaignRow, Counters};
use super::tree::{build_tree, set_amount};
use crate::clock::{DAY_MS, utc_day_start};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::leads::filters as lead_filters;
use crate::service::leads::names::Names;
use crate::service::meta::spend::{Amount, ReportSpend};
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::reporting::filters::Filter;
use crate::service::reporting::timezone::{self, Zone};
use crate::service::sites;
use crate::service::validate;
use crate::store::leads::rollups::{self, GroupRow, Grouping, Scope};

pub const PAID_ORIGIN: &str = "ctwa_ad";
/// The origins ads paid for: click-to-WhatsApp and Meta's instant forms (LA-18).
pub const PAID_ORIGINS: [&str; 2] = [PAID_ORIGIN, super::Channel::FORM_ORIGINS[0]];
/// `leadsDaily`'s `origin` that selects every paid origin at once.
pub const ANY_PAID: &str = "paid";

/// Whether the spend bought leads of this origin.
pub fn is_paid(origin: &str) -> bool {
    PAID_ORIGINS.contains(&origin)
}
pub const REPORT_MAX_DAYS: i64 = 366;
pub const DAILY_MAX_DAYS: i64 = 92;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeadsReportArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    /// The same report over an earlier range beside this one (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Only the leads that pass these (REPORTING §3; the leads' dimensions).
    /// With filters, spend is null: which spend a filter on leads selects is not said yet.
    #[serde(default)]
    pub filters: Vec<Filter>,
    /// Days of this IANA zone (or `"site"`): the limit counts its days and
    /// spend is read for its local dates (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeadsDailyArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    /// One ad's leads (not with `origin`).
    pub ad_id: Option<String>,
    /// One origin's leads (not with `adId`); `paid` for every origin the ads bought (`ctwa_ad` and `lead_form`).
    pub origin: Option<String>,
    /// Each day beside its day of an earlier range (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Only the leads that pass these (REPORTING §3); with filters, spend is null.
    #[serde(default)]
    pub filters: Vec<Filter>,
    /// Each row a day of this IANA zone (or `"site"`); leads count on their
    /// arrival's local day and spend on the same local date (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OriginRow {
    pub origin: String,
    #[serde(flatten)]
    pub counters: Counters,
}

#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PaidCounters {
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteReportRow {
    pub site_id: String,
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
    pub spend_cents: Option<i64>,
    pub spend_currency: Option<String>,
    pub currency_mismatch: bool,
    /// The same counters for the site's `ctwa_ad` leads alone: what the spend bought.
    pub paid: PaidCounters,
    /// With `timezone`: the zone of the site's ad accounts, whose dates the
    /// spend is counted in (null when none is linked or they differ).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend_timezone: Option<Option<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeadsReport {
    /// The sites' currency (revenue's); null when they differ.
    pub currency: Option<String>,
    pub spend_currency: Option<String>,
    pub currency_mismatch: bool,
    pub spend_incomplete: bool,
    /// The campaign tree passed its row cap and lists only part of the ads
    /// (REPORT_INCOMPLETE as a flag: a cap never fails a report, REPORT-12).
    pub report_incomplete: bool,
    pub totals: Counters,
    pub origins: Vec<OriginRow>,
    pub campaigns: Vec<CampaignRow>,
    pub by_site: Vec<SiteReportRow>,
    /// With `compare`: the earlier range's totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<LeadsComparison>,
    /// With `compare`: each total's change against the earlier range, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

#[derive(Debug, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DailyRow {
    #[serde(flatten)]
    pub figures: DailyFigures,
    /// With `compare`: the aligned day of the earlier range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<DailyFigures>,
    /// With `compare`: each figure's change against that day, as a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

/// One day's figures: a row of `leadsDaily`, and its aligned day when compared.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DailyFigures {
    pub day_start: i64,
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
    pub spend_cents: Option<i64>,
}

/// The earlier range of a compared `leadsReport`: its totals.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LeadsComparison {
    pub from: i64,
    pub to: i64,
    pub totals: Counters,
}

pub fn check_report(a: &LeadsReportArgs) -> Result<()> {
    check_report_of(a, validate::MAX_SITES)
}

/// `check_report` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn check_report_of(a: &LeadsReportArgs, max_sites: usize) -> Result<()> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    check_range(a.from, a.to, a.timezone.is_some(), REPORT_MAX_DAYS)
}

/// A range's UTC days; with a zone, whose days are counted once it is known
/// (`zone_of`), a local day may touch one UTC day more.
fn check_range(from: i64, to: i64, zoned: bool, max_days: i64) -> Result<()> {
    validate::range(from, to, max_days + i64::from(zoned))
}

/// The zone a report asks for, its days within `max_days`.
fn zone_of(
    conn: &mut AnyConnection,
    site_ids: &[String],
    arg: Option<&str>,
    range: (i64, i64),
    max_days: i64,
) -> Result<Option<Zone>> {
    let rows = if arg == Some(timezone::SITE) { sites::require_many(conn, site_ids)? } else { Vec::new() };
    let zones: Vec<&str> = rows.iter().map(|s| s.timezone.as_str()).collect();
    timezone::checked_span(arg, &zones, range, max_days)
}

/// The read budgets of a report (default 12,000 each; REPORT-12).
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub lead_rows: usize,
    pub spend_ad_rows: usize,
    pub spend_day_rows: usize,
    /// Sites one report may read (10 for the API; the dashboard reads more).
    pub max_sites: usize,
}

impl Caps {
    pub fn from_config(c: &crate::config::Config) -> Caps {
        Caps {
            lead_rows: c.report_row_cap,
            spend_ad_rows: c.spend_ad_row_cap,
            spend_day_rows: c.spend_day_row_cap,
            max_sites: validate::MAX_SITES,
        }
    }
}

impl From<usize> for Caps {
    fn from(n: usize) -> Caps {
        Caps { lead_rows: n, spend_ad_rows: n, spend_day_rows: n, max_sites: validate::MAX_SITES }
    }
}

pub fn leads_report(conn: &mut AnyConnection, a: LeadsReportArgs, caps: impl Into<Caps>) -> Result<LeadsReport> {
    let caps = caps.into();
    let row_cap = caps.lead_rows;
    check_report_of(&a, caps.max_sites)?;
    let zone = zone_of(conn, &a.site_ids, a.timezone.as_deref(), (a.from, a.to), REPORT_MAX_DAYS)?;
    if let Some(compare) = a.compare {
        let (from, to) = compare.range_in(zone, a.from, a.to)?;
        let earlier = LeadsReportArgs {
            site_ids: a.site_ids.clone(),
            from,
            to,
            compare: None,
            filters: a.filters.clone(),
            timezone: a.timezone.clone(),
        };
        let before = leads_report(conn, earlier, caps)?;
        let mut main = leads_report(conn, LeadsReportArgs { compare: None, ..a }, caps)?;
        main.change = Some(compare::changes_of(&main.totals, &before.totals));
        main.comparison = Some(LeadsComparison { from, to, totals: before.totals });
        return Ok(main);
    }
    let conditions = lead_filters::conditions(&a.filters)?;
    let sites = sites::require_many(conn, &a.site_ids)?;
    let spend = if conditions.is_empty() {
        crate::service::meta::spend::for_report(
            conn,
            &sites,
            (a.from, a.to),
            zone,
            caps.spend_ad_rows,
            caps.spend_day_rows,
        )?
    } else {
        ReportSpend::default()
    };
    let scope =
        Scope { site_ids: &a.site_ids, from: a.from, to: a.to, ad_id: None, origins: &[], conditions: &conditions };

    let mut totals = Counters::default();
    let mut origins: BTreeMap<String, Counters> = BTreeMap::new();
    let mut by_site: BTreeMap<String, (Counters, PaidCounters)> = BTreeMap::new();
    for r in rollups::grouped(conn, &scope, Grouping::SiteOrigin, None)? {
        totals.add(&r);
        origins.entry(r.origin.clone()).or_default().add(&r);
        let (site, paid) = by_site.entry(r.site_id.clone()).or_default();
        site.add(&r);
        if is_paid(&r.origin) {
            paid.leads += r.leads;
            paid.qualified += r.qualified;
            paid.won += r.won;
            paid.revenue_cents += r.revenue_cents;
        }
    }

    let mut tree_rows = rollups::grouped(conn, &scope, Grouping::Tree, Some(row_cap + 1))?;
    let report_incomplete = tree_rows.len() > row_cap;
    tree_rows.truncate(row_cap);
    let names = Names::load(conn, &a.site_ids)?;
    place_in_tree(&mut tree_rows, &spend);
    // The site's own sales of visits from the ads (WA-20); a filter on leads selects none.
    let sales = if conditions.is_empty() {
        crate::store::leads::visits::ad_conversions(conn, &a.site_ids, (a.from, a.to))?
    } else {
        BTreeMap::new()
    };
    super::site_sales::add_rows(&mut tree_rows, &sales);
    let mut campaigns = build_tree(tree_rows, &names, &a.site_ids, &spend);
    super::site_sales::place(&mut campaigns, &sales);
    let total_spend = spend.total();
    let spend_zones = match zone {
        Some(_) => crate::service::meta::spend::account_zones(conn, &a.site_ids)?,
        None => BTreeMap::new(),
    };
    set_amount(&mut totals, total_spend);
    if total_spend.is_some() && !origins.contains_key(PAID_ORIGIN) {
        origins.insert(PAID_ORIGIN.to_string(), Counters::default());
    }
    let by_origin = split_paid_spend(conn, &scope, &spend, total_spend, origins.contains_key(PAID_ORIGINS[1]))?;
    for (origin, counters) in origins.iter_mut() {
        set_amount(counters, by_origin.iter().find(|(o, _)| o == origin).and_then(|(_, a)| *a));
    }

    let first_currency = sites.first().map(|s| s.currency.clone());
    let currency = first_currency.filter(|c| sites.iter().all(|s| &s.currency == c));
    let mut origins: Vec<OriginRow> =
        origins.into_iter().map(|(origin, counters)| OriginRow { origin, counters }).collect();
    origins.sort_by(|x, y| y.counters.leads.cmp(&x.counters.leads).then_with(|| x.origin.cmp(&y.origin)));
    let currency_mismatch = spend.two_currencies || spend.sites.values().any(|s| s.covered && s.mismatch);
    Ok(LeadsReport {
        currency,
        spend_currency: if total_spend.is_some() { spend.currency.clone() } else { None },
        currency_mismatch,
        spend_incomplete: spend.tree_incomplete || spend.all_incomplete,
        report_incomplete,
        totals,
        origins,
        campaigns,
        comparison: None,
        change: None,
        by_site: sites
            .iter()
            .map(|s| {
                let (c, paid) = by_site.remove(&s.id).unwrap_or_default();
                let site_spend = spend.sites.get(&s.id).cloned().unwrap_or_default();
                SiteReportRow {
                    site_id: s.id.clone(),
                    leads: c.leads,
                    qualified: c.qualified,
                    won: c.won,
                    revenue_cents: c.revenue_cents,
                    spend_cents: site_spend.amount().map(|a| a.spend_cents),
                    spend_currency: site_spend.currency(),
                    currency_mismatch: site_spend.covered && site_spend.mismatch,
                    paid,
                    spend_timezone: zone.map(|_| spend_zones.get(&s.id).cloned().flatten()),
                }
            })
            .collect(),
    })
}

/// The spend per paid origin (LA-18): an ad whose leads came from its
/// instant form spent for `lead_form`, every other ad for `ctwa_ad` (as
/// before forms existed, so a site without form leads reads the same).
fn split_paid_spend(
    conn: &mut AnyConnection,
    scope: &Scope<'_>,
    spend: &ReportSpend,
    total: Option<Amount>,
    has_form_leads: bool,
) -> Result<Vec<(String, Option<Amount>)>> {
    let Some(total) = total else { return Ok(Vec::new()) };
    if !has_form_leads {
        return Ok(vec![(PAID_ORIGIN.to_string(), Some(total))]);
    }
    let form_scope = Scope { origins: &PAID_ORIGINS[1..], ..*scope };
    let mut form = Amount::default();
    for r in rollups::grouped(conn, &form_scope, Grouping::Tree, None)? {
        if let Some((a, _, _)) = spend.ads.get(&(r.site_id.clone(), r.ad_id.clone())) {
            form.spend_cents += a.spend_cents;
            form.impressions += a.impressions;
            form.clicks += a.clicks;
        }
    }
    let rest = Amount {
        spend_cents: total.spend_cents - form.spend_cents,
        impressions: total.impressions - form.impressions,
        clicks: total.clicks - form.clicks,
    };
    Ok(vec![(PAID_ORIGIN.to_string(), Some(rest)), (PAID_ORIGINS[1].to_string(), Some(form))])
}

/// One paid origin's daily spend is its own ads' (LA-18), as `leadsReport`
/// splits it: the ads whose leads in the range came through a form spent for
/// `lead_form`, the others for `ctwa_ad`. `total` holds the scope's spend.
fn split_daily_spend(
    conn: &mut AnyConnection,
    scope: &Scope<'_>,
    (a, zone): (&LeadsDailyArgs, Option<Zone>),
    origin: &str,
    total: &mut BTreeMap<i64, i64>,
) -> Result<()> {
    let form_scope = Scope { origins: &PAID_ORIGINS[1..], ad_id: None, ..*scope };
    let ads: std::collections::BTreeSet<String> = rollups::grouped(conn, &form_scope, Grouping::Tree, None)?
        .into_iter()
        .map(|r| r.ad_id)
        .filter(|ad| !ad.is_empty())
        .collect();
    let mut form: BTreeMap<i64, i64> = BTreeMap::new();
    for ad in &ads {
        for (day, cents) in
            crate::service::meta::spend::daily(conn, &a.site_ids, (a.from, a.to), zone, Some(ad))?.unwrap_or_default()
        {
            *form.entry(day).or_default() += cents;
        }
    }
    if origin == PAID_ORIGINS[1] {
        for (day, cents) in total.iter_mut() {
            *cents = form.get(day).copied().unwrap_or(0);
        }
    } else {
        for (day, cents) in total.iter_mut() {
            *cents -= form.get(day).copied().unwrap_or(0);
        }
    }
    Ok(())
}

/// Completes the tree's rows: an ad the host named without its campaign or ad
/// set takes them from the catalog, and an ad that spent in the range without
/// bringing a lead is listed with zero leads.
fn place_in_tree(rows: &mut Vec<GroupRow>, spend: &ReportSpend) {
    for r in rows.iter_mut() {
        if let Some(cat) = spend.catalog.get(&r.ad_id) {
            if r.campaign_id.is_empty() {
                r.campaign_id.clone_from(&cat.campaign_id);
            }
            if r.adset_id.is_empty() {
                r.adset_id.clone_from(&cat.adset_id);
            }
        }
    }
    let have: std::collections::BTreeSet<(String, String)> =
        rows.iter().map(|r| (r.site_id.clone(), r.ad_id.clone())).collect();
    for ((site_id, ad_id), (_, campaign_id, adset_id)) in &spend.ads {
        if !have.contains(&(site_id.clone(), ad_id.clone())) {
            rows.push(GroupRow {
                site_id: site_id.clone(),
                origin: PAID_ORIGIN.into(),
                campaign_id: campaign_id.clone(),
                adset_id: adset_id.clone(),
                ad_id: ad_id.clone(),
                day: 0,
                leads: 0,
                qualified: 0,
                won: 0,
                revenue_cents: 0,
            });
        }
    }
}

pub fn check_daily(a: &LeadsDailyArgs) -> Result<()> {
    check_daily_of(a, validate::MAX_SITES)
}

/// `check_daily` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn check_daily_of(a: &LeadsDailyArgs, max_sites: usize) -> Result<()> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    check_range(a.from, a.to, a.timezone.is_some(), DAILY_MAX_DAYS)?;
    if a.ad_id.is_some() && a.origin.is_some() {
        return Err(Error::invalid("give adId or origin, not both"));
    }
    if let Some(o) = &a.origin {
        validate::origin(o)?;
    }
    if let Some(ad) = &a.ad_id {
        validate::text("adId", ad, 1, 64)?;
    }
    Ok(())
}

pub fn leads_daily(conn: &mut AnyConnection, a: LeadsDailyArgs) -> Result<Vec<DailyRow>> {
    leads_daily_of(conn, a, validate::MAX_SITES)
}

/// `leads_daily` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn leads_daily_of(conn: &mut AnyConnection, a: LeadsDailyArgs, max_sites: usize) -> Result<Vec<DailyRow>> {
    check_daily_of(&a, max_sites)?;
    let zone = zone_of(conn, &a.site_ids, a.timezone.as_deref(), (a.from, a.to), DAILY_MAX_DAYS)?;
    if let Some(compare) = a.compare {
        let (from, to) = compare.range_in(zone, a.from, a.to)?;
        let (main_from, main_to) = (a.from, a.to);
        let earlier = LeadsDailyArgs { from, to, compare: None, site_ids: a.site_ids.clone(), ..a.clone() };
        let before = leads_daily_of(conn, earlier, max_sites)?;
        let mut main = leads_daily_of(conn, LeadsDailyArgs { compare: None, ..a }, max_sites)?;
        for row in &mut main {
            let at = compare.align_in(zone, main_from, main_to, row.figures.day_start);
            let then =
                before.iter().find(|b| b.figures.day_start == at).map(|b| b.figures.clone()).unwrap_or(DailyFigures {
                    day_start: at,
                    leads: 0,
                    qualified: 0,
                    won: 0,
                    revenue_cents: 0,
                    spend_cents: row.figures.spend_cents.map(|_| 0),
                });
            row.change = Some(compare::changes_of(&row.figures, &then));
            row.comparison = Some(then);
        }
        return Ok(main);
    }
    let conditions = lead_filters::conditions(&a.filters)?;
    sites::require_many(conn, &a.site_ids)?;
    let origins: Vec<&str> = match a.origin.as_deref() {
        Some(ANY_PAID) => PAID_ORIGINS.to_vec(),
        Some(o) => vec![o],
        None => Vec::new(),
    };
    let scope = Scope {
        site_ids: &a.site_ids,
        from: a.from,
        to: a.to,
        ad_id: a.ad_id.as_deref(),
        origins: &origins,
        conditions: &conditions,
    };
    // With a zone each lead counts on its arrival's local day (REP-04): the
    // rollups keep UTC days, so the range's leads are read one by one.
    let mut by_day: BTreeMap<i64, GroupRow> = BTreeMap::new();
    match zone {
        None => by_day.extend(rollups::grouped(conn, &scope, Grouping::Day, None)?.into_iter().map(|r| (r.day, r))),
        Some(z) => {
            for r in rollups::grouped(conn, &scope, Grouping::Arrival, None)? {
                let day = z.day_start(r.day);
                let e = by_day.entry(day).or_insert_with(|| GroupRow {
                    day,
                    leads: 0,
                    qualified: 0,
                    won: 0,
                    revenue_cents: 0,
                    ..r.clone()
                });
                e.leads += r.leads;
                e.qualified += r.qualified;
                e.won += r.won;
                e.revenue_cents += r.revenue_cents;
            }
        }
    }
    // Spend for the same scope: the site's ads, one ad, or the ads again for
    // `ctwa_ad`; none for an organic origin.
    let mut spend = match a.origin.as_deref() {
        _ if !conditions.is_empty() => None,
        Some(o) if o != ANY_PAID && !is_paid(o) => None,
        _ => crate::service::meta::spend::daily(conn, &a.site_ids, (a.from, a.to), zone, a.ad_id.as_deref())?,
    };
    if let (Some(total), Some(origin)) = (spend.as_mut(), a.origin.as_deref())
        && is_paid(origin)
    {
        split_daily_spend(conn, &scope, (&a, zone), origin, total)?;
    }
    let mut out = Vec::new();
    let mut day = zone.map_or(utc_day_start(a.from), |z| z.day_start(a.from));
    while day <= a.to {
        let r = by_day.get(&day);
        out.push(DailyRow {
            figures: DailyFigures {
                day_start: day,
                leads: r.map_or(0, |r| r.leads),
                qualified: r.map_or(0, |r| r.qualified),
                won: r.map_or(0, |r| r.won),
                revenue_cents: r.map_or(0, |r| r.revenue_cents),
                spend_cents: spend.as_ref().map(|m| m.get(&day).copied().unwrap_or(0)),
            },
            comparison: None,
            change: None,
        });
        day = zone.map_or(day + DAY_MS, |z| z.next_day(day));
    }
    Ok(out)
}
