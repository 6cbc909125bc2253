//! `overview` (OVR-01 to OVR-11), from the rollups the report actors keep:
//! totals, a series, the top ten of each dimension and the per-site rows.

mod answer;
mod figures;
mod filtered;
mod visitors;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::{DAY_MS, HOUR_MS};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::approximate;
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::goals;
use crate::service::analytics::reports::numbers::{avg_ms, per_session, rate};
use crate::service::analytics::reports::range_parts::Part;
use crate::service::analytics::vocabulary::Dimension;
use crate::service::reporting::compare::Compare;
use crate::service::reporting::filters::Filter;
use crate::service::reporting::timezone::{LocalDays, Zone};
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::rollups as r;
pub use answer::*;

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
    /// Days (and hours) of this IANA zone instead of UTC days; `"site"` for
    /// the sites' own zone (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Only the sessions (and events) that pass these (REPORTING §3): the
    /// session's dimensions, the event's, `prop:<key>`.
    #[serde(default)]
    pub filters: Vec<Filter>,
    /// One dimension's rows beside the panels, paged (REPORTING §3).
    #[serde(default)]
    pub breakdown: Option<filtered::BreakdownArgs>,
}

/// The panels of an overview: each dimension's (key, count) rows, the
/// pages' and sources' distinct visitors, the top goals.
pub(super) struct Panels {
    pub rows: HashMap<String, Rows>,
    pub page_visitors: HashMap<String, i64>,
    pub source_visitors: HashMap<String, i64>,
    pub top_goals: Vec<goals::TopGoal>,
}

/// A range whose offset changes by part of an hour (Lord Howe's half-hour
/// DST) has local hours that are no steps of one hour from its start.
fn unsupported(zone: Zone) -> Error {
    Error::invalid(format!(
        "timezone {}: an hourly overview cannot cross a change of offset by part of an hour",
        zone.name()
    ))
}

/// Whether the zone's local hours split the UTC hours of the hour tier
/// (30- and 45-minute offsets): such an hourly overview counts the rows.
fn splits_hours(a: &OverviewArgs, zone: Option<Zone>) -> bool {
    a.interval == Interval::Hour && zone.is_some_and(|z| z.offset_ms(a.from).rem_euclid(HOUR_MS) != 0)
}

/// Rules OVR-01 and OVR-02; with a zone, REP-03: whole local days (their
/// days when they are not UTC days), or whole hours of a zone whose offset
/// is whole hours.
pub fn check_overview(a: &OverviewArgs, zone: Option<Zone>) -> Result<Option<LocalDays>> {
    validate::time("from", a.from)?;
    validate::time("to", a.to)?;
    if a.from > a.to {
        return Err(Error::invalid("from must not be after to"));
    }
    match (a.interval, zone) {
        (Interval::Day, Some(z)) => {
            let days = z.days(a.from, a.to, 366)?;
            if days.bounds.iter().all(|b| b.rem_euclid(DAY_MS) == 0) {
                return Ok(None);
            }
            return Ok(Some(days));
        }
        (Interval::Hour, Some(z)) => {
            if (z.offset_ms(a.from) - z.offset_ms(a.to)).rem_euclid(HOUR_MS) != 0 {
                return Err(unsupported(z));
            }
            let local_hour = |t: i64| (t + z.offset_ms(t)).rem_euclid(HOUR_MS) == 0;
            if !local_hour(a.from) || !local_hour(a.to + 1) {
                return Err(Error::invalid(format!(
                    "an hourly overview needs whole hours of {} (from at hh:00, to at hh:59:59.999)",
                    z.name()
                )));
            }
            // A local day of 25 hours (the end of DST) is one day's hours.
            if (a.to + 1 - a.from) / HOUR_MS > 25 {
                return Err(Error::invalid("an hourly overview in a timezone covers at most 25 hours"));
            }
            return Ok(None);
        }
        (Interval::Day, None) => {
            if a.from.rem_euclid(DAY_MS) != 0 || (a.to + 1).rem_euclid(DAY_MS) != 0 {
                return Err(Error::invalid(
                    "a daily overview needs complete UTC days (from at 00:00, to at 23:59:59.999)",
                ));
            }
            if (a.to + 1 - a.from) / DAY_MS > 366 {
                return Err(Error::invalid("a daily overview covers at most 366 days"));
            }
        }
        (Interval::Hour, None) => {
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
    Ok(None)
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

/// The panels from the rollups: the breakdowns of the figures' parts, the
/// visitors of the top pages and sources, the goals' rows.
fn rollup_panels(conn: &mut AnyConnection, fig: &figures::Figures, ids: &[String], a: &OverviewArgs) -> Result<Panels> {
    let rows = breakdowns(conn, &fig.groups)?;
    let keys = |d: Dimension| -> Vec<String> {
        top(rows.get(d.as_str()).cloned().unwrap_or_default()).into_iter().filter_map(|(k, _)| k).collect()
    };
    let (page_keys, source_keys) = (keys(Dimension::Page), keys(Dimension::Source));
    let (page_visitors, source_visitors) = fig.key_visitors(conn, ids, &page_keys, &source_keys)?;
    let top_goals = goals::top_goals(conn, ids, a.from, a.to)?;
    Ok(Panels { rows, page_visitors, source_visitors, top_goals })
}

/// The series buckets whose figures read rows retention has deleted: with
/// the range's rows (filters, breakdowns, split hours) every bucket before
/// the events' or sessions' cutoff; from the rollups, the buckets holding
/// the hours read from events (the local days' edges, an hourly range).
fn approximate_days(
    conn: &mut AnyConnection,
    ids: &[String],
    fig: &figures::Figures,
    raw: bool,
    (from, to): (i64, i64),
) -> Result<Option<Vec<i64>>> {
    let Some(cutoff) = approximate::cutoff(conn, ids)?.filter(|c| *c > from) else { return Ok(None) };
    let read: Vec<(i64, i64)> = if raw { vec![(from, to)] } else { fig.rows_read().to_vec() };
    let starts: Vec<i64> = fig.series.keys().copied().collect();
    let days = approximate::buckets(&starts, to, &read, cutoff);
    Ok((!days.is_empty()).then_some(days))
}

/// `overview` (§5.3). `public` zeroes money and conversions and empties the
/// campaigns, mediums, events and goals panels (rule PUB-04).
pub fn overview(conn: &mut AnyConnection, a: OverviewArgs, public: bool) -> Result<Overview> {
    overview_of(conn, a, public, validate::MAX_SITES)
}

/// `overview` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn overview_of(conn: &mut AnyConnection, a: OverviewArgs, public: bool, max_sites: usize) -> Result<Overview> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    let site_rows = sites::require_many(conn, &a.site_ids)?;
    let zones: Vec<&str> = site_rows.iter().map(|s| s.timezone.as_str()).collect();
    let zone = Zone::of(a.timezone.as_deref(), &zones)?;
    let local = check_overview(&a, zone)?;
    let rules = dims::rules(&a.filters)?;
    let breakdown = a.breakdown.as_ref().map(filtered::BreakdownArgs::check).transpose()?;
    if let Some(compare) = a.compare {
        let earlier = compare.range_in(zone, a.from, a.to)?;
        let main = overview_of(conn, OverviewArgs { compare: None, ..a.clone() }, public, max_sites)?;
        let before = overview_of(
            conn,
            OverviewArgs { compare: None, from: earlier.0, to: earlier.1, ..a.clone() },
            public,
            max_sites,
        )?;
        return Ok(main.compared(compare, zone, (a.from, a.to), earlier, before));
    }
    let currency_of: HashMap<String, String> = site_rows.iter().map(|s| (s.id.clone(), s.currency.clone())).collect();
    let mut currencies: Vec<&String> = currency_of.values().collect();
    currencies.sort();
    currencies.dedup();
    let mixed = currencies.len() > 1;
    let currency = if mixed { None } else { currencies.first().map(|c| (*c).clone()) };
    let ids = &a.site_ids;
    // Filters, breakdowns and local days or hours that split UTC hours (30-
    // and 45-minute offsets) count the range's rows; the rest the rollups.
    let raw = !rules.is_empty()
        || breakdown.is_some()
        || local.as_ref().is_some_and(|d| !d.on_whole_hours())
        || splits_hours(&a, zone);
    let mut fig = match &local {
        Some(days) => figures::local(conn, ids, days, raw)?,
        None => figures::utc(conn, ids, a.interval, (a.from, a.to), raw)?,
    };
    let (panels, breakdown) = if raw {
        // The panels' top goals read the goal dimension.
        let dims: Vec<_> =
            breakdown.iter().map(|(d, _, _)| d.clone()).chain([dims::Dim::Event(dims::EventDim::Goal)]).collect();
        let kept = kept::read(conn, &site_rows, (a.from, a.to), &rules, &dims)?;
        // Buckets are steps of the interval from `from` (a UTC day or hour,
        // or a local hour that starts at :30 or :45).
        let step = match a.interval {
            Interval::Hour => HOUR_MS,
            Interval::Day => DAY_MS,
        };
        let bucket_of = |t: i64| match &local {
            Some(days) => days.day_of(t),
            None => Some(a.from + (t - a.from).div_euclid(step) * step),
        };
        let panels;
        (fig, panels) = filtered::figures(&kept, (a.from, a.to), fig, bucket_of);
        let b = breakdown.map(|(d, limit, offset)| filtered::breakdown(&kept, (a.from, a.to), &d, limit, offset));
        (panels, b)
    } else {
        (rollup_panels(conn, &fig, ids, &a)?, None)
    };

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
    let series: Vec<SeriesPoint> = fig
        .series
        .iter()
        .map(|(b, c)| SeriesPoint {
            bucket_start: *b,
            visitors: fig.bucket_visitors.get(b).copied().unwrap_or(0),
            sessions: c.sessions,
            pageviews: c.pageviews,
            bounces: c.bounces,
            conversions: conversions(c.conversions),
            revenue_cents: money(c.revenue_cents),
        })
        .collect();
    let (totals, site_visitors) = (fig.totals, &fig.site_visitors);
    let total_visitors: i64 = site_visitors.values().sum();

    let bd = &panels.rows;
    let rows = |d: Dimension| top(bd.get(d.as_str()).cloned().unwrap_or_default());
    let pages = rows(Dimension::Page);
    let sources = rows(Dimension::Source);
    let (page_visitors, source_visitors) = (&panels.page_visitors, &panels.source_visitors);
    let hidden_if_public = |rows: Rows| if public { Vec::new() } else { rows };
    // Figures kept per key beside the panels: the ledger's by campaign, the leads by source and campaign.
    let keyed = |d: Dimension| -> HashMap<String, i64> {
        bd.get(d.as_str()).into_iter().flatten().filter_map(|(k, n)| k.clone().map(|k| (k, *n))).collect()
    };
    let (campaign_conversions, campaign_revenue) =
        (keyed(Dimension::CampaignConversions), keyed(Dimension::CampaignRevenue));
    // Leads matched to a visit, by its source and campaign (rule WA-16); none on public links.
    let (source_leads, campaign_leads) = (keyed(Dimension::SourceLeads), keyed(Dimension::CampaignLeads));
    let leads_of = |m: &HashMap<String, i64>, k: &Option<String>| {
        k.as_ref().and_then(|k| m.get(k)).copied().filter(|n| *n != 0 && !public)
    };
    let campaigns = hidden_if_public(rows(Dimension::Campaign))
        .into_iter()
        .map(|(k, n)| {
            let of = |m: &HashMap<String, i64>| k.as_ref().and_then(|k| m.get(k)).copied().unwrap_or(0);
            OverviewCampaign {
                sessions: n,
                conversions: conversions(of(&campaign_conversions)),
                revenue_cents: money(of(&campaign_revenue)),
                leads: leads_of(&campaign_leads, &k),
                campaign: k,
            }
        })
        .collect();
    let top_goals = if public { Vec::new() } else { panels.top_goals };
    let by_site = ids
        .iter()
        .map(|id| {
            let c = fig.by_site.get(id).copied().unwrap_or_default();
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
            .map(|(k, n)| PageRow { visitors: visitors_of(page_visitors, &k), route: k, pageviews: n })
            .collect(),
        entry_pages: rows(Dimension::Entry)
            .into_iter()
            .map(|(route, sessions)| EntryPageRow { route, sessions })
            .collect(),
        sources: sources
            .into_iter()
            .map(|(k, n)| SourceRow {
                visitors: visitors_of(source_visitors, &k),
                leads: leads_of(&source_leads, &k),
                source: k,
                sessions: n,
            })
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
        approximate_days: approximate_days(conn, ids, &fig, raw, (a.from, a.to))?,
        filtered: (!rules.is_empty()).then_some(true),
        breakdown,
        timezone: zone.map(|z| z.name().to_string()),
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
        let args = |from: i64, to: i64, interval: Interval| OverviewArgs {
            site_ids: vec![],
            from,
            to,
            interval,
            compare: None,
            timezone: None,
            filters: Vec::new(),
            breakdown: None,
        };
        let day = |from: i64, to: i64| args(from, to, Interval::Day);
        let hour = |from: i64, to: i64| args(from, to, Interval::Hour);
        let check_overview = |a: &OverviewArgs| check_overview(a, None);
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
