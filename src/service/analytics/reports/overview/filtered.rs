//! `overview` with `filters` or a `breakdown` (REPORTING §3, rules REP-06,
//! REP-07, REP-09): the same answer, counted from the rows the filters keep.
//! Sessions count in the bucket of their start, events at their time, the
//! ledger's rows at theirs, as the rollups count them, so a filter that keeps
//! everything answers what the rollups answer.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use utoipa::ToSchema;

use super::answer::{Breakdown, BreakdownRow};
use super::figures::Figures;
use super::{Panels, Rows};
use crate::error::{Error, Result};
use crate::service::analytics::ingest::session_figures::{bounce, duration};
use crate::service::analytics::reports::filtered::dims::{Dim, PROP};
use crate::service::analytics::reports::filtered::kept::Kept;
use crate::service::analytics::reports::goals::TopGoal;
use crate::service::analytics::vocabulary::{Dimension, EventKind};
use crate::store::analytics::rollups as r;

/// `breakdown`: one dimension's rows, paged.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakdownArgs {
    /// Any dimension of `filters` (the session's, the event's, `prop:<key>`).
    pub dim: String,
    /// Rows per page, 1-100 (default 10).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[serde(default)]
    pub offset: Option<i64>,
}

impl BreakdownArgs {
    pub fn check(&self) -> Result<(Dim, i64, i64)> {
        let dim = Dim::parse("breakdown.dim", &self.dim)?;
        let limit = self.limit.unwrap_or(10);
        if !(1..=100).contains(&limit) {
            return Err(Error::invalid("breakdown.limit is 1-100"));
        }
        let offset = self.offset.unwrap_or(0);
        if !(0..=1_000_000).contains(&offset) {
            return Err(Error::invalid("breakdown.offset is 0-1000000"));
        }
        Ok((dim, limit, offset))
    }
}

/// Distinct (site, visitor) per key, counted per key (summed over sites, OVR-05).
type Visitors<'a> = HashMap<Option<String>, HashSet<(&'a str, &'a str)>>;

fn count_visitors(v: Visitors<'_>) -> HashMap<String, i64> {
    v.into_iter().filter_map(|(k, set)| k.map(|k| (k, set.len() as i64))).collect()
}

fn rows_of(counts: HashMap<Option<String>, i64>) -> Rows {
    counts.into_iter().collect()
}

/// The overview's figures and panels from the kept rows; `bucket_of` puts
/// an instant in its series bucket (None: outside the range).
pub(super) fn figures(
    kept: &Kept,
    (from, to): (i64, i64),
    mut fig: Figures,
    bucket_of: impl Fn(i64) -> Option<i64>,
) -> (Figures, Panels) {
    let mut bucket_sets: HashMap<(i64, &str), HashSet<&str>> = HashMap::new();
    let mut site_sets: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut add = |site: &str, t: i64, f: &dyn Fn(&mut r::Counters)| {
        if let Some(b) = bucket_of(t) {
            f(fig.series.entry(b).or_default());
            f(fig.by_site.entry(site.to_string()).or_default());
            f(&mut fig.totals);
        }
    };
    let mut counts: HashMap<Dimension, HashMap<Option<String>, i64>> = HashMap::new();
    let mut bump = |d: Dimension, key: Option<&str>, n: i64| {
        *counts.entry(d).or_default().entry(key.map(str::to_string)).or_default() += n;
    };
    for s in kept.started((from, to)) {
        let (b, d) = (bounce(s), duration(s));
        add(&s.site_id, s.started_at, &|c| {
            c.sessions += 1;
            c.bounces += b;
            c.duration_sum += d;
        });
        bump(Dimension::Entry, Some(&s.entry_route), 1);
        bump(Dimension::Source, Some(&s.source), 1);
        bump(Dimension::Referrer, s.referrer.as_deref(), 1);
        bump(Dimension::Medium, Some(&s.medium), 1);
        bump(Dimension::Campaign, s.campaign.as_deref(), 1);
        bump(Dimension::Country, s.country.as_deref(), 1);
        bump(Dimension::Device, s.device.as_deref(), 1);
        bump(Dimension::Browser, s.browser.as_deref(), 1);
    }
    let mut page_visitors: Visitors = HashMap::new();
    let mut source_visitors: Visitors = HashMap::new();
    for (e, counts_it) in &kept.events {
        let Some(kind) = EventKind::parse(&e.kind) else { continue };
        // Visitors: every event of a kept session (REPORTING §3).
        if let Some(b) = bucket_of(e.occurred_at) {
            bucket_sets.entry((b, &e.site_id)).or_default().insert(&e.visitor_id);
            site_sets.entry(&e.site_id).or_default().insert(&e.visitor_id);
        }
        if let Some(s) = kept.sessions.get(&e.session_id) {
            source_visitors.entry(Some(s.source.clone())).or_default().insert((&e.site_id, &e.visitor_id));
        }
        if !counts_it {
            continue;
        }
        match kind {
            EventKind::Pageview => {
                let engaged = e.engaged_ms;
                add(&e.site_id, e.occurred_at, &|c| {
                    c.pageviews += 1;
                    if let Some(ms) = engaged {
                        c.engaged_sum += ms;
                        c.engaged_count += 1;
                    }
                });
                bump(Dimension::Page, Some(&e.route), 1);
                page_visitors.entry(Some(e.route.clone())).or_default().insert((&e.site_id, &e.visitor_id));
            }
            EventKind::Event => {
                add(&e.site_id, e.occurred_at, &|c| c.custom_events += 1);
                bump(Dimension::Event, e.name.as_deref(), 1);
            }
        }
    }
    for sale in &kept.sales {
        let cents = sale.value_cents;
        add(&sale.site_id, sale.occurred_at, &|c| {
            c.conversions += 1;
            c.revenue_cents += cents;
        });
        let campaign =
            sale.session_id.as_ref().and_then(|id| kept.sessions.get(id)).and_then(|s| s.campaign.as_deref());
        if campaign.is_some() {
            bump(Dimension::CampaignConversions, campaign, 1);
            bump(Dimension::CampaignRevenue, campaign, cents);
        }
    }
    for ((b, _), set) in bucket_sets {
        *fig.bucket_visitors.entry(b).or_insert(0) += set.len() as i64;
    }
    fig.site_visitors = site_sets.into_iter().map(|(k, v)| (k.to_string(), v.len() as i64)).collect();
    let panels = Panels {
        rows: counts.into_iter().map(|(d, c)| (d.as_str().to_string(), rows_of(c))).collect(),
        page_visitors: count_visitors(page_visitors),
        source_visitors: count_visitors(source_visitors),
        top_goals: top_goals(kept, (from, to)),
    };
    (fig, panels)
}

/// The goals completed by the counted events (completions) and the kept
/// sessions started in the range that completed them (sessions), top ten.
fn top_goals(kept: &Kept, range: (i64, i64)) -> Vec<TopGoal> {
    let mut rows: Vec<TopGoal> = kept
        .goal_counts(range)
        .into_iter()
        .filter_map(|((site, id), (completions, sessions))| {
            let g = kept.cx.goals.get(&site)?.iter().find(|g| g.id == id)?;
            Some(TopGoal {
                goal_id: id,
                key: g.key.clone(),
                name: g.name.clone(),
                completions,
                sessions,
                removed: false,
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.completions.cmp(&a.completions).then_with(|| a.key.cmp(&b.key)).then_with(|| a.goal_id.cmp(&b.goal_id))
    });
    rows.truncate(10);
    rows
}

/// `breakdown`: the kept rows by one dimension's value, most visitors first.
pub(super) fn breakdown(kept: &Kept, (from, to): (i64, i64), dim: &Dim, limit: i64, offset: i64) -> Breakdown {
    #[derive(Default)]
    struct Acc<'a> {
        visitors: HashSet<(&'a str, &'a str)>,
        sessions: HashSet<&'a str>,
        events: i64,
    }
    let mut per: HashMap<Option<String>, Acc> = HashMap::new();
    match dim {
        Dim::Session(d) => {
            for s in kept.started((from, to)) {
                let acc = per.entry(kept.cx.session_value(*d, s)).or_default();
                acc.sessions.insert(&s.id);
                acc.visitors.insert((&s.site_id, &s.visitor_id));
            }
            for (e, _) in kept.events.iter().filter(|(_, c)| *c) {
                if let Some(s) = kept.sessions.get(&e.session_id) {
                    per.entry(kept.cx.session_value(*d, s)).or_default().events += 1;
                }
            }
        }
        _ => {
            for (e, _) in kept.events.iter().filter(|(_, c)| *c) {
                for value in kept.cx.event_values(dim, e) {
                    let acc = per.entry(value).or_default();
                    acc.events += 1;
                    acc.sessions.insert(&e.session_id);
                    acc.visitors.insert((&e.site_id, &e.visitor_id));
                }
            }
        }
    }
    let mut rows: Vec<BreakdownRow> = per
        .into_iter()
        .map(|(value, a)| BreakdownRow {
            value,
            visitors: a.visitors.len() as i64,
            sessions: a.sessions.len() as i64,
            events: a.events,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.visitors.cmp(&a.visitors).then(b.events.cmp(&a.events)).then_with(|| match (&a.value, &b.value) {
            (Some(x), Some(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        })
    });
    let total = rows.len() as i64;
    let rows = rows.into_iter().skip(offset as usize).take(limit as usize).collect();
    Breakdown { dim: dim_name(dim), offset, limit, total, rows }
}

fn dim_name(d: &Dim) -> String {
    match d {
        Dim::Session(s) => s.as_str().to_string(),
        Dim::Event(e) => e.as_str().to_string(),
        Dim::Prop(k) => format!("{PROP}{k}"),
    }
}
