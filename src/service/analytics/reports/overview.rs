//! `overview` (OVR-01 to OVR-11), from the rollups the report actors keep:
//! totals, a series, the top ten of each dimension and the per-site rows.

use std::collections::{BTreeMap, HashMap, HashSet};

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::goals::TopGoal;
use crate::service::analytics::reports::numbers::{Fixed, avg_ms, per_session, rate};
use crate::service::analytics::reports::range_parts::{self, Part};
use crate::service::analytics::rollup::buckets::{DAY_MS, HOUR_MS, bucket};
use crate::service::analytics::vocabulary::{Dimension, EventKind, Tier};
use crate::service::reporting::compare::{self, Changes, Compare};
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics as store;
use crate::store::analytics::rollups as r;

const TOP: usize = 10;

/// A breakdown's `(key, count)` rows; a `None` key is the unknown value.
type Rows = Vec<(Option<String>, i64)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Interval {
    Hour,
    #[default]
    Day,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverviewArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    #[serde(default)]
    pub interval: Interval,
    /// The same report over an earlier range beside this one (REPORTING §2).
    #[serde(default)]
    pub compare: Option<Compare>,
}

/// Rules OVR-01 and OVR-02.
pub fn check_overview(a: &OverviewArgs) -> Result<()> {
    validate::time("from", a.from)?;
    validate::time("to", a.to)?;
    if a.from > a.to {
        return Err(Error::invalid("from must not be after to"));
    }
    match a.interval {
        Interval::Day => {
            if a.from.rem_euclid(DAY_MS) != 0 || (a.to + 1).rem_euclid(DAY_MS) != 0 {
                return Err(Error::invalid(
                    "a daily overview needs complete UTC days (from at 00:00, to at 23:59:59.999)",
                ));
            }
            if (a.to + 1 - a.from) / DAY_MS > 366 {
                return Err(Error::invalid("a daily overview covers at most 366 days"));
            }
        }
        Interval::Hour => {
            if a.from.rem_euclid(HOUR_MS) != 0 || (a.to + 1).rem_euclid(HOUR_MS) != 0 {
                return Err(Error::invalid(
                    "an hourly overview needs whole UTC hours (from at hh:00, to at hh:59:59.999)",
                ));
            }
            if (a.to + 1 - a.from) / HOUR_MS > 24 {
                return Err(Error::invalid("an hourly overview covers at most 24 hours"));
            }
        }
    }
    Ok(())
}

/// Sorts `(key, count)` rows: count desc, then key by bytes, a null key after
/// the named keys of its count (rule OVR-08); keeps the top ten.
fn top(mut rows: Rows) -> Rows {
    rows.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| match (&a.0, &b.0) {
            (Some(x), Some(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        })
    });
    rows.truncate(TOP);
    rows
}

/// Per dimension, the (key, count) rows of a range, from its parts.
fn breakdowns(conn: &mut AnyConnection, groups: &[(Vec<String>, Vec<Part>)]) -> Result<HashMap<String, Rows>> {
    let mut sums: HashMap<(String, String), i64> = HashMap::new();
    for (ids, parts) in groups {
        for (tier, from, to) in parts {
            for row in r::breakdowns(conn, ids, tier.as_str(), *from, *to)? {
                *sums.entry((row.dim, row.key)).or_insert(0) += row.count;
            }
        }
    }
    let mut out: HashMap<String, Rows> = HashMap::new();
    for ((d, key), count) in sums {
        out.entry(d).or_default().push(((!key.is_empty()).then_some(key), count));
    }
    Ok(out)
}

/// Distinct visitors per key of a dimension over the range, summed over
/// sites, from the per-day and month sets (`"day"`).
fn visitors_by_key(
    conn: &mut AnyConnection,
    groups: &[(Vec<String>, Vec<Part>)],
    d: Dimension,
    keys: &[String],
) -> Result<HashMap<String, i64>> {
    let mut out = HashMap::new();
    if keys.is_empty() {
        return Ok(out);
    }
    let mut per: BTreeMap<(String, String), RoaringBitmap> = BTreeMap::new();
    for (group, parts) in groups {
        for (tier, from, to) in parts {
            for s in r::sets(conn, group, tier.as_str(), *from, *to, d.as_str(), Some(keys))? {
                *per.entry((s.site_id, s.key)).or_default() |=
                    RoaringBitmap::deserialize_from(&s.bits[..]).map_err(Error::internal)?;
            }
        }
    }
    for ((_, key), set) in per {
        *out.entry(key).or_insert(0) += set.len() as i64;
    }
    Ok(out)
}

/// The pages' and the sources' distinct visitors for `"hour"`: from the
/// retained pageviews and custom events of the range (rule OVR-09), read
/// once, and the sources of their sessions read by key (not joined per event).
fn hour_visitors_by_key(
    conn: &mut AnyConnection,
    ids: &[String],
    a: &OverviewArgs,
    page_keys: &[String],
    source_keys: &[String],
) -> Result<(HashMap<String, i64>, HashMap<String, i64>)> {
    if page_keys.is_empty() && source_keys.is_empty() {
        return Ok(Default::default());
    }
    let hits = store::visitor_hits(conn, ids, a.from, a.to)?;
    let mut session_ids: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
    session_ids.sort_unstable();
    session_ids.dedup();
    let mut source_of: HashMap<String, String> = HashMap::new();
    if !source_keys.is_empty() {
        for chunk in session_ids.chunks(400) {
            let chunk: Vec<String> = chunk.iter().map(|s| s.to_string()).collect();
            source_of.extend(store::session_sources(conn, &chunk)?);
        }
    }
    let wanted = |keys: &[String], k: &str| keys.iter().any(|x| x == k);
    // Distinct per (site, key), summed over sites (rule OVR-05).
    let mut pages: HashSet<(&str, &str, &str)> = HashSet::new();
    let mut sources: HashSet<(&str, &str, &str)> = HashSet::new();
    for h in &hits {
        if h.kind == EventKind::Pageview.as_str() && wanted(page_keys, &h.route) {
            pages.insert((&h.site_id, &h.route, &h.visitor_id));
        }
        if let Some(source) = source_of.get(&h.session_id).filter(|s| wanted(source_keys, s)) {
            sources.insert((&h.site_id, source, &h.visitor_id));
        }
    }
    let count = |set: HashSet<(&str, &str, &str)>| {
        let mut out: HashMap<String, i64> = HashMap::new();
        for (_, key, _) in set {
            *out.entry(key.to_string()).or_insert(0) += 1;
        }
        out
    };
    Ok((count(pages), count(sources)))
}

/// Money in a report: `0` for a public token, null when the sites mix currencies.
type Money = Option<i64>;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewTotals {
    pub visitors: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub bounces: i64,
    pub bounce_rate: Option<Fixed>,
    pub avg_duration_ms: Option<i64>,
    pub views_per_session: Option<Fixed>,
    pub avg_engaged_ms: Option<i64>,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
}

/// One bucket of the series (an hour or a UTC day).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesPoint {
    pub bucket_start: i64,
    pub visitors: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub bounces: i64,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageRow {
    pub route: Option<String>,
    pub pageviews: i64,
    pub visitors: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryPageRow {
    pub route: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceRow {
    pub source: Option<String>,
    pub sessions: i64,
    pub visitors: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferrerRow {
    pub referrer: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediumRow {
    pub medium: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewCampaign {
    pub campaign: Option<String>,
    pub sessions: i64,
    pub conversions: i64,
    pub revenue_cents: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountryRow {
    pub country: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRow {
    pub device: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserRow {
    pub browser: Option<String>,
    pub sessions: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventCountRow {
    pub name: Option<String>,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteOverviewRow {
    pub site_id: String,
    pub currency: Option<String>,
    pub visitors: i64,
    pub sessions: i64,
    pub pageviews: i64,
    pub conversions: i64,
    pub revenue_cents: i64,
}

/// The `overview` answer (§5.3).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// The sites' currency; null when they mix currencies.
    pub currency: Option<String>,
    pub interval: Interval,
    pub totals: OverviewTotals,
    pub series: Vec<SeriesPoint>,
    pub pages: Vec<PageRow>,
    pub entry_pages: Vec<EntryPageRow>,
    pub sources: Vec<SourceRow>,
    pub referrers: Vec<ReferrerRow>,
    pub mediums: Vec<MediumRow>,
    pub campaigns: Vec<OverviewCampaign>,
    pub countries: Vec<CountryRow>,
    pub devices: Vec<DeviceRow>,
    pub browsers: Vec<BrowserRow>,
    pub events: Vec<EventCountRow>,
    pub top_goals: Vec<TopGoal>,
    pub by_site: Vec<SiteOverviewRow>,
    /// With `compare`: the earlier range's totals and series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<OverviewComparison>,
    /// With `compare`: each total's change against the earlier range, as a
    /// fraction (null when the earlier figure is 0 or unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Changes>,
}

/// The earlier range of a compared `overview`: its series has one point per
/// point of the main series, aligned (the same position, or the same date a year before).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewComparison {
    pub from: i64,
    pub to: i64,
    pub totals: OverviewTotals,
    pub series: Vec<SeriesPoint>,
}

impl Overview {
    /// This answer with `before` (the same arguments over `compare`'s range) beside it.
    fn compared(
        mut self,
        compare: Compare,
        (from, to): (i64, i64),
        (pf, pt): (i64, i64),
        before: Overview,
    ) -> Overview {
        let series = self
            .series
            .iter()
            .map(|p| {
                let at = compare.align(from, to, p.bucket_start);
                before.series.iter().find(|q| q.bucket_start == at).cloned().unwrap_or(SeriesPoint {
                    bucket_start: at,
                    visitors: 0,
                    sessions: 0,
                    pageviews: 0,
                    bounces: 0,
                    conversions: 0,
                    revenue_cents: p.revenue_cents.map(|_| 0),
                })
            })
            .collect();
        self.change = Some(compare::changes_of(&self.totals, &before.totals));
        self.comparison = Some(OverviewComparison { from: pf, to: pt, totals: before.totals, series });
        self
    }
}

/// `overview` (§5.3). `public` zeroes money and conversions and empties the
/// campaigns, mediums, events and goals panels (rule PUB-04).
pub fn overview(conn: &mut AnyConnection, a: OverviewArgs, public: bool) -> Result<Overview> {
    overview_of(conn, a, public, validate::MAX_SITES)
}

/// `overview` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn overview_of(conn: &mut AnyConnection, a: OverviewArgs, public: bool, max_sites: usize) -> Result<Overview> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    check_overview(&a)?;
    if let Some(compare) = a.compare {
        let earlier = compare.range(a.from, a.to)?;
        let main = overview_of(conn, OverviewArgs { compare: None, ..a.clone() }, public, max_sites)?;
        let before = overview_of(
            conn,
            OverviewArgs { compare: None, from: earlier.0, to: earlier.1, ..a.clone() },
            public,
            max_sites,
        )?;
        return Ok(main.compared(compare, (a.from, a.to), earlier, before));
    }
    let site_rows = sites::require_many(conn, &a.site_ids)?;
    let currency_of: HashMap<String, String> = site_rows.iter().map(|s| (s.id.clone(), s.currency.clone())).collect();
    let mut currencies: Vec<&String> = currency_of.values().collect();
    currencies.sort();
    currencies.dedup();
    let mixed = currencies.len() > 1;
    let currency = if mixed { None } else { currencies.first().map(|c| (*c).clone()) };
    let (tier, step) = match a.interval {
        Interval::Hour => (Tier::Hour, HOUR_MS),
        Interval::Day => (Tier::Day, DAY_MS),
    };
    let ids = &a.site_ids;
    let counter_rows = r::counters(conn, ids, tier.as_str(), a.from, a.to)?;
    let all_sets = r::sets(conn, ids, tier.as_str(), a.from, a.to, Dimension::All.as_str(), None)?;

    // Series: one bucket per step, zeros where nothing was counted (rule OVR-03).
    let mut series: BTreeMap<i64, r::Counters> = BTreeMap::new();
    let mut b = bucket(tier, a.from);
    while b <= a.to {
        series.insert(b, r::Counters::default());
        b += step;
    }
    let mut by_site: HashMap<String, r::Counters> = HashMap::new();
    let mut totals = r::Counters::default();
    for row in &counter_rows {
        let c = r::Counters::from(row);
        series.entry(row.bucket).or_default().add(&c);
        by_site.entry(row.site_id.clone()).or_default().add(&c);
        totals.add(&c);
    }
    // Visitors: distinct per bucket and per site, summed over sites (rule OVR-05).
    // A bucket's count is in its set's header; a site's union comes from the
    // month sets of whole months and the bucket sets around them.
    let groups = range_parts::groups(conn, ids, tier, a.from, a.to)?;
    let mut bucket_visitors: BTreeMap<i64, i64> = BTreeMap::new();
    let mut site_sets: HashMap<String, RoaringBitmap> = HashMap::new();
    let read = |bits: &[u8]| RoaringBitmap::deserialize_from(bits).map_err(Error::internal);
    for (group, parts) in &groups {
        // Buckets outside the month parts feed the site's union themselves.
        let edge = |b: i64| parts.iter().any(|(t, f, to)| *t == tier && (*f..=*to).contains(&b));
        for s in all_sets.iter().filter(|s| group.contains(&s.site_id)) {
            let edge = edge(s.bucket);
            let n = match range_parts::cardinality(&s.bits) {
                Some(n) if !edge => n,
                _ => {
                    let set = read(&s.bits)?;
                    let n = set.len();
                    if edge {
                        *site_sets.entry(s.site_id.clone()).or_default() |= set;
                    }
                    n
                }
            };
            *bucket_visitors.entry(s.bucket).or_insert(0) += n as i64;
        }
        for (t, f, to) in parts.iter().filter(|(t, _, _)| *t == Tier::Month) {
            for s in r::sets(conn, group, t.as_str(), *f, *to, Dimension::All.as_str(), None)? {
                *site_sets.entry(s.site_id.clone()).or_default() |= read(&s.bits)?;
            }
        }
    }
    let site_visitors: HashMap<String, i64> = site_sets.iter().map(|(k, v)| (k.clone(), v.len() as i64)).collect();
    let total_visitors: i64 = site_visitors.values().sum();

    let money = |cents: i64| -> Money {
        if public {
            Some(0)
        } else if mixed {
            None
        } else {
            Some(cents)
        }
    };
    let conversions = |n: i64| if public { 0 } else { n };
    let series: Vec<SeriesPoint> = series
        .iter()
        .map(|(b, c)| SeriesPoint {
            bucket_start: *b,
            visitors: bucket_visitors.get(b).copied().unwrap_or(0),
            sessions: c.sessions,
            pageviews: c.pageviews,
            bounces: c.bounces,
            conversions: conversions(c.conversions),
            revenue_cents: money(c.revenue_cents),
        })
        .collect();

    let bd = breakdowns(conn, &groups)?;
    let rows = |d: Dimension| top(bd.get(d.as_str()).cloned().unwrap_or_default());
    let pages = rows(Dimension::Page);
    let sources = rows(Dimension::Source);
    let page_keys: Vec<String> = pages.iter().filter_map(|(k, _)| k.clone()).collect();
    let source_keys: Vec<String> = sources.iter().filter_map(|(k, _)| k.clone()).collect();
    let (page_visitors, source_visitors) = match a.interval {
        Interval::Day => (
            visitors_by_key(conn, &groups, Dimension::Page, &page_keys)?,
            visitors_by_key(conn, &groups, Dimension::Source, &source_keys)?,
        ),
        Interval::Hour => hour_visitors_by_key(conn, ids, &a, &page_keys, &source_keys)?,
    };
    let hidden_if_public = |rows: Rows| if public { Vec::new() } else { rows };
    // Conversions and revenue by their session's campaign, from the ledger's breakdowns.
    let by_campaign = |d: Dimension| -> HashMap<String, i64> {
        bd.get(d.as_str()).into_iter().flatten().filter_map(|(k, n)| k.clone().map(|k| (k, *n))).collect()
    };
    let (campaign_conversions, campaign_revenue) =
        (by_campaign(Dimension::CampaignConversions), by_campaign(Dimension::CampaignRevenue));
    let campaigns = hidden_if_public(rows(Dimension::Campaign))
        .into_iter()
        .map(|(k, n)| {
            let of = |m: &HashMap<String, i64>| k.as_ref().and_then(|k| m.get(k)).copied().unwrap_or(0);
            OverviewCampaign {
                sessions: n,
                conversions: conversions(of(&campaign_conversions)),
                revenue_cents: money(of(&campaign_revenue)),
                campaign: k,
            }
        })
        .collect();
    let top_goals = if public {
        Vec::new()
    } else {
        crate::service::analytics::reports::goals::top_goals(conn, ids, tier, a.from, a.to)?
    };
    let by_site = ids
        .iter()
        .map(|id| {
            let c = by_site.get(id).copied().unwrap_or_default();
            SiteOverviewRow {
                site_id: id.clone(),
                currency: currency_of.get(id).cloned(),
                visitors: site_visitors.get(id).copied().unwrap_or(0),
                sessions: c.sessions,
                pageviews: c.pageviews,
                conversions: conversions(c.conversions),
                revenue_cents: if public { 0 } else { c.revenue_cents },
            }
        })
        .collect();
    let visitors_of =
        |m: &HashMap<String, i64>, k: &Option<String>| k.as_ref().and_then(|k| m.get(k)).copied().unwrap_or(0);
    Ok(Overview {
        currency,
        interval: a.interval,
        totals: OverviewTotals {
            visitors: total_visitors,
            sessions: totals.sessions,
            pageviews: totals.pageviews,
            bounces: totals.bounces,
            bounce_rate: rate(totals.bounces, totals.sessions),
            avg_duration_ms: avg_ms(totals.duration_sum, totals.sessions),
            views_per_session: per_session(totals.pageviews, totals.sessions),
            avg_engaged_ms: avg_ms(totals.engaged_sum, totals.engaged_count),
            conversions: conversions(totals.conversions),
            revenue_cents: money(totals.revenue_cents),
        },
        series,
        pages: pages
            .into_iter()
            .map(|(k, n)| PageRow { visitors: visitors_of(&page_visitors, &k), route: k, pageviews: n })
            .collect(),
        entry_pages: rows(Dimension::Entry)
            .into_iter()
            .map(|(route, sessions)| EntryPageRow { route, sessions })
            .collect(),
        sources: sources
            .into_iter()
            .map(|(k, n)| SourceRow { visitors: visitors_of(&source_visitors, &k), source: k, sessions: n })
            .collect(),
        referrers: rows(Dimension::Referrer)
            .into_iter()
            .map(|(referrer, sessions)| ReferrerRow { referrer, sessions })
            .collect(),
        mediums: hidden_if_public(rows(Dimension::Medium))
            .into_iter()
            .map(|(medium, sessions)| MediumRow { medium, sessions })
            .collect(),
        campaigns,
        countries: rows(Dimension::Country)
            .into_iter()
            .map(|(country, sessions)| CountryRow { country, sessions })
            .collect(),
        devices: rows(Dimension::Device).into_iter().map(|(device, sessions)| DeviceRow { device, sessions }).collect(),
        browsers: rows(Dimension::Browser)
            .into_iter()
            .map(|(browser, sessions)| BrowserRow { browser, sessions })
            .collect(),
        events: hidden_if_public(rows(Dimension::Event))
            .into_iter()
            .map(|(name, count)| EventCountRow { name, count })
            .collect(),
        top_goals,
        by_site,
        comparison: None,
        change: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: OVR-08
    #[test]
    fn breakdowns_rank_by_count_then_bytes_with_null_last_among_equals() {
        let rows = vec![(Some("b".to_string()), 5), (None, 5), (Some("a".to_string()), 5), (Some("z".to_string()), 9)];
        let ranked = top(rows);
        let ranked: Vec<Option<&str>> = ranked.iter().map(|(k, _)| k.as_deref()).collect();
        assert_eq!(ranked, vec![Some("z"), Some("a"), Some("b"), None]);
        let many: Vec<(Option<String>, i64)> = (0..15).map(|i| (Some(format!("k{i:02}")), i)).collect();
        assert_eq!(top(many).len(), 10);
    }

    // rule: OVR-01
    // rule: OVR-02
    #[test]
    fn ranges_need_whole_buckets_within_the_ceilings() {
        let day =
            |from: i64, to: i64| OverviewArgs { site_ids: vec![], from, to, interval: Interval::Day, compare: None };
        let hour =
            |from: i64, to: i64| OverviewArgs { site_ids: vec![], from, to, interval: Interval::Hour, compare: None };
        let d0 = 20_000 * DAY_MS;
        assert!(check_overview(&day(d0, d0 + DAY_MS - 1)).is_ok());
        assert!(check_overview(&day(d0 + 1, d0 + DAY_MS - 1)).is_err());
        assert!(check_overview(&day(d0, d0 + 366 * DAY_MS - 1)).is_ok());
        assert!(check_overview(&day(d0, d0 + 367 * DAY_MS - 1)).is_err());
        assert!(check_overview(&hour(d0 - 2 * HOUR_MS, d0 + 22 * HOUR_MS - 1)).is_ok(), "across midnight");
        assert!(check_overview(&hour(d0, d0 + 25 * HOUR_MS - 1)).is_err());
        assert!(check_overview(&hour(d0, d0 + HOUR_MS)).is_err());
    }
}
