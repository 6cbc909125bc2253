//! Spend beside the leads: which synced ad accounts cover each site, in which
//! currency, and the spend they read, for the lead reports. `None` is unknown
//! (no synced account covers the row, or two currencies), never zero.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::utc_day_start;
use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::reporting::timezone::Zone;
use crate::store::leads::sites::SiteRow;
use crate::store::meta as meta_store;
use crate::store::meta::sync::{self as store, CatalogRow, SpendGroup, SpendGrouping};

/// Impressions, clicks and cents, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Amount {
    pub spend_cents: i64,
    pub impressions: i64,
    pub clicks: i64,
}

impl Amount {
    fn add(&mut self, g: &SpendGroup) {
        self.spend_cents += g.spend_cents;
        self.impressions += g.impressions;
        self.clicks += g.clicks;
    }
    pub fn plus(self, o: Amount) -> Amount {
        Amount {
            spend_cents: self.spend_cents + o.spend_cents,
            impressions: self.impressions + o.impressions,
            clicks: self.clicks + o.clicks,
        }
    }
}

/// What a site's synced accounts say.
#[derive(Debug, Clone, Default)]
pub struct SiteSpend {
    /// At least one synced account covers the site.
    pub covered: bool,
    pub currencies: BTreeSet<String>,
    pub amount: Amount,
    /// The site's spend is comparable with its revenue (one currency, the site's).
    pub mismatch: bool,
}

impl SiteSpend {
    pub fn currency(&self) -> Option<String> {
        (self.currencies.len() == 1).then(|| self.currencies.iter().next().cloned()).flatten()
    }
    /// The site's spend: null when uncovered or in two currencies.
    pub fn amount(&self) -> Option<Amount> {
        (self.covered && self.currencies.len() == 1).then_some(self.amount)
    }
}

/// The spend side of a report.
#[derive(Debug, Default)]
pub struct ReportSpend {
    pub sites: BTreeMap<String, SiteSpend>,
    /// Per (site, ad): the tree's spend. Ads listed here belong to synced accounts.
    pub ads: BTreeMap<(String, String), (Amount, String, String)>,
    /// Ads of synced accounts (spending or not), from the catalog.
    pub catalog: BTreeMap<String, CatalogRow>,
    /// Accounts that are synced, by site.
    pub synced_accounts: BTreeMap<String, BTreeSet<String>>,
    /// The currency of all spend, when it is one.
    pub currency: Option<String>,
    pub two_currencies: bool,
    /// The per-ad read passed its budget: the tree's spend is unknown.
    pub tree_incomplete: bool,
    /// The site-day read passed its budget: all spend is unknown.
    pub all_incomplete: bool,
}

impl ReportSpend {
    /// The total over the covered sites, when spend adds up (one currency, budgets kept).
    pub fn total(&self) -> Option<Amount> {
        if self.all_incomplete || self.two_currencies || !self.sites.values().any(|s| s.covered) {
            return None;
        }
        Some(self.sites.values().filter(|s| s.covered).fold(Amount::default(), |a, s| a.plus(s.amount)))
    }

    /// An ad's spend in the tree: 0 for an ad of a synced account that spent nothing.
    pub fn ad(&self, site_id: &str, ad_id: &str) -> Option<Amount> {
        if self.tree_incomplete || self.all_incomplete || self.two_currencies {
            return None;
        }
        if let Some((a, _, _)) = self.ads.get(&(site_id.to_string(), ad_id.to_string())) {
            return Some(*a);
        }
        let cat = self.catalog.get(ad_id)?;
        self.synced_accounts.get(site_id)?.contains(&cat.ad_account_id).then_some(Amount::default())
    }
}

/// Coverage of `sites`: their links whose first backfill ended.
fn coverage(conn: &mut AnyConnection, site_ids: &[String]) -> Result<BTreeMap<String, Vec<(String, String)>>> {
    let synced: BTreeSet<String> = store::of_sites(conn, site_ids)?
        .into_iter()
        .filter(|s| s.first_synced_at.is_some())
        .map(|s| s.ad_account_id)
        .collect();
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for link in meta_store::links_of_sites(conn, site_ids)? {
        if synced.contains(&link.ad_account_id) {
            out.entry(link.site_id).or_default().push((link.ad_account_id, link.currency));
        }
    }
    Ok(out)
}

/// The spend days a range covers (an ad account's dates, stored as their UTC
/// midnights): the UTC days it touches, or with a zone its local dates, so
/// with the ad account's own zone a day's spend is the same day's leads (REP-04).
pub fn spend_days(zone: Option<Zone>, from: i64, to: i64) -> (i64, i64) {
    match zone {
        Some(z) => (date_ms(z.date(from)), date_ms(z.date(to))),
        None => (utc_day_start(from), utc_day_start(to)),
    }
}

fn date_ms(d: chrono::NaiveDate) -> i64 {
    d.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp_millis())
}

/// Where a spend day goes in a daily series: its UTC day, or with a zone
/// the start of the same date there.
fn spend_bucket(zone: Option<Zone>, day: i64) -> i64 {
    match (zone, chrono::DateTime::from_timestamp_millis(day)) {
        (Some(z), Some(d)) => z.start_of(d.date_naive()),
        _ => day,
    }
}

/// Per site with a linked ad account, the accounts' zone (whose dates the
/// spend rows are), None when its accounts differ.
pub fn account_zones(conn: &mut AnyConnection, site_ids: &[String]) -> Result<BTreeMap<String, Option<String>>> {
    let mut zones: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for link in meta_store::links_of_sites(conn, site_ids)? {
        zones.entry(link.site_id).or_default().insert(link.timezone);
    }
    Ok(zones.into_iter().map(|(site, z)| (site, (z.len() == 1).then(|| z.into_iter().next()).flatten())).collect())
}

/// The spend of `sites` over the days `[from, to]` touch (UTC, or `zone`'s).
pub fn for_report(
    conn: &mut AnyConnection,
    sites: &[SiteRow],
    (from, to): (i64, i64),
    zone: Option<Zone>,
    ad_cap: usize,
    day_cap: usize,
) -> Result<ReportSpend> {
    let site_ids: Vec<String> = sites.iter().map(|s| s.id.clone()).collect();
    let cover = coverage(conn, &site_ids)?;
    let mut out = ReportSpend::default();
    for site in sites {
        let accounts = cover.get(&site.id).cloned().unwrap_or_default();
        let currencies: BTreeSet<String> = accounts.iter().map(|(_, c)| c.clone()).collect();
        let mismatch = currencies.len() > 1 || currencies.iter().any(|c| *c != site.currency);
        out.synced_accounts.insert(site.id.clone(), accounts.iter().map(|(a, _)| a.clone()).collect());
        out.sites.insert(
            site.id.clone(),
            SiteSpend { covered: !accounts.is_empty(), currencies, amount: Amount::default(), mismatch },
        );
    }
    let all: BTreeSet<String> = out.sites.values().flat_map(|s| s.currencies.iter().cloned()).collect();
    out.two_currencies = all.len() > 1;
    out.currency = (all.len() == 1).then(|| all.into_iter().next()).flatten();
    if cover.is_empty() {
        return Ok(out);
    }
    let (from_day, to_day) = spend_days(zone, from, to);
    let days = store::spend(conn, &site_ids, from_day, to_day, None, SpendGrouping::SiteDay, day_cap + 1)?;
    if days.len() > day_cap {
        out.all_incomplete = true;
        for s in out.sites.values_mut() {
            s.covered = false;
        }
        return Ok(out);
    }
    for g in &days {
        if let Some(s) = out.sites.get_mut(&g.site_id) {
            s.amount.add(g);
        }
    }
    let ads = store::spend(conn, &site_ids, from_day, to_day, None, SpendGrouping::Ad, ad_cap + 1)?;
    if ads.len() > ad_cap {
        out.tree_incomplete = true;
    } else {
        for g in &ads {
            let e = out.ads.entry((g.site_id.clone(), g.ad_id.clone())).or_insert((
                Amount::default(),
                g.campaign_id.clone(),
                g.adset_id.clone(),
            ));
            e.0.add(g);
        }
    }
    let accounts: Vec<String> = cover.values().flatten().map(|(a, _)| a.clone()).collect();
    out.catalog = store::catalog_of_accounts(conn, &accounts)?.into_iter().map(|c| (c.ad_id.clone(), c)).collect();
    Ok(out)
}

/// Spend per day (UTC, or `zone`'s) for the daily series: `None` when no synced account covers
/// the scope (or the accounts bill in two currencies).
pub fn daily(
    conn: &mut AnyConnection,
    site_ids: &[String],
    (from, to): (i64, i64),
    zone: Option<Zone>,
    ad_id: Option<&str>,
) -> Result<Option<BTreeMap<i64, i64>>> {
    let cover = coverage(conn, site_ids)?;
    let currencies: BTreeSet<&String> = cover.values().flatten().map(|(_, c)| c).collect();
    if cover.is_empty() || currencies.len() > 1 {
        return Ok(None);
    }
    let (from_day, to_day) = spend_days(zone, from, to);
    let rows = store::spend(conn, site_ids, from_day, to_day, ad_id, SpendGrouping::SiteDay, usize::MAX / 2)?;
    let mut by_day = BTreeMap::new();
    for g in rows {
        *by_day.entry(spend_bucket(zone, g.day)).or_insert(0) += g.spend_cents;
    }
    Ok(Some(by_day))
}
