//! The figures an `overview` is made of, read from the rollups: per bucket
//! of its series, per site and in total, and the parts its breakdowns read.
//! UTC days and hours read their own tier; local days (REP-02) read the hour
//! tier for the series, whole UTC days for the breakdowns inside the range
//! and hours at its edges, so every figure is the local day's exactly.

use std::collections::{BTreeMap, HashMap};

use roaring::RoaringBitmap;

use super::Interval;
use super::visitors::{counted, hit_ids, key_sets, with_ids};
use crate::clock::{DAY_MS, HOUR_MS};
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::range_parts::{self, Part};
use crate::service::analytics::vocabulary::{Dimension, Tier};
use crate::service::reporting::timezone::{LocalDays, utc_days_inside};
use crate::store::analytics::rollups as r;

/// The parts of `ranges` (inclusive) before `from`: the hours whose page
/// and source sets may lack events applied by a version that kept none.
fn before(ranges: &[(i64, i64)], from: i64) -> Vec<(i64, i64)> {
    ranges.iter().filter(|(f, _)| *f < from).map(|(f, t)| (*f, (*t).min(from - 1))).collect()
}

pub(super) struct Figures {
    /// Counters per series bucket, every bucket present (rule OVR-03).
    pub series: BTreeMap<i64, r::Counters>,
    /// Distinct visitors per series bucket, summed over sites.
    pub bucket_visitors: BTreeMap<i64, i64>,
    pub by_site: HashMap<String, r::Counters>,
    pub totals: r::Counters,
    /// Distinct visitors of the whole range per site.
    pub site_visitors: HashMap<String, i64>,
    /// The tier parts the breakdowns and the key sets read, per group of sites.
    pub groups: Vec<(Vec<String>, Vec<Part>)>,
    /// The inclusive ranges whose retained events the pages' and sources'
    /// visitors also read: hours older than the sites' hour sets.
    hit_ranges: Vec<(i64, i64)>,
}

fn read(bits: &[u8]) -> Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(bits).map_err(Error::internal)
}

impl Figures {
    fn counted(&mut self, rows: &[r::CounterRow], bucket_of: impl Fn(i64) -> Option<i64>) {
        for row in rows {
            let Some(b) = bucket_of(row.bucket) else { continue };
            let c = row.counters;
            self.series.entry(b).or_default().add(&c);
            self.by_site.entry(row.site_id.clone()).or_default().add(&c);
            self.totals.add(&c);
        }
    }

    /// The inclusive ranges whose events the panels read (their visitors).
    pub fn rows_read(&self) -> &[(i64, i64)] {
        &self.hit_ranges
    }

    /// The pages' and the sources' distinct visitors for these keys: the
    /// sets of the parts, with the visitors of the events of `hit_ranges`
    /// added by number (a union, so an hour both hold counts once).
    pub fn key_visitors(
        &self,
        conn: &mut AnyConnection,
        ids: &[String],
        page_keys: &[String],
        source_keys: &[String],
    ) -> Result<(HashMap<String, i64>, HashMap<String, i64>)> {
        let mut pages = key_sets(conn, &self.groups, Dimension::Page, page_keys)?;
        let mut sources = key_sets(conn, &self.groups, Dimension::Source, source_keys)?;
        if !self.hit_ranges.is_empty() {
            let (page_ids, source_ids) = hit_ids(conn, ids, &self.hit_ranges, page_keys, source_keys)?;
            pages = with_ids(conn, pages, page_ids)?;
            sources = with_ids(conn, sources, source_ids)?;
        }
        let len = |s: &RoaringBitmap| s.len();
        Ok((counted(pages, len), counted(sources, len)))
    }
}

impl Figures {
    /// Every bucket of the series at zero, nothing read yet (what the kept
    /// rows of a filtered overview fill).
    fn empty(buckets: impl Iterator<Item = i64>, groups: Vec<(Vec<String>, Vec<Part>)>) -> Figures {
        Figures {
            series: buckets.map(|b| (b, r::Counters::default())).collect(),
            bucket_visitors: BTreeMap::new(),
            by_site: HashMap::new(),
            totals: r::Counters::default(),
            site_visitors: HashMap::new(),
            groups,
            hit_ranges: Vec::new(),
        }
    }
}

/// UTC days or hours: each bucket of the series is a bucket of its tier.
/// `empty`: only the buckets (the caller counts the rows itself).
pub(super) fn utc(
    conn: &mut AnyConnection,
    ids: &[String],
    interval: Interval,
    (from, to): (i64, i64),
    empty: bool,
) -> Result<Figures> {
    let (tier, step) = match interval {
        Interval::Hour => (Tier::Hour, HOUR_MS),
        Interval::Day => (Tier::Day, DAY_MS),
    };
    // `from` starts a bucket: a UTC day or hour, or (counting rows) a local
    // hour of a zone whose offset is not whole hours.
    let buckets = std::iter::successors(Some(from), |b| Some(b + step)).take_while(|b| *b <= to);
    if empty {
        return Ok(Figures::empty(buckets, Vec::new()));
    }
    let counter_rows = r::counters(conn, ids, tier.as_str(), from, to)?;
    let all_sets = r::sets(conn, ids, tier.as_str(), from, to, Dimension::All.as_str(), None)?;
    let mut f = Figures::empty(buckets, range_parts::groups(conn, ids, tier, from, to)?);
    if interval == Interval::Hour {
        f.hit_ranges = before(&[(from, to)], r::hour_sets_from(conn, ids)?);
    }
    f.counted(&counter_rows, Some);
    // Visitors: distinct per bucket and per site, summed over sites (rule OVR-05).
    // A bucket's count is in its set's header; a site's union comes from the
    // month sets of whole months and the bucket sets around them.
    let mut site_sets: HashMap<String, RoaringBitmap> = HashMap::new();
    for (group, parts) in &f.groups {
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
            *f.bucket_visitors.entry(s.bucket).or_insert(0) += n as i64;
        }
        for (t, from, to) in parts.iter().filter(|(t, _, _)| *t == Tier::Month) {
            for s in r::sets(conn, group, t.as_str(), *from, *to, Dimension::All.as_str(), None)? {
                *site_sets.entry(s.site_id.clone()).or_default() |= read(&s.bits)?;
            }
        }
    }
    f.site_visitors = site_sets.iter().map(|(k, v)| (k.clone(), v.len() as i64)).collect();
    Ok(f)
}

/// Local days that start on UTC hours: the series from the hour tier, the
/// breakdowns from the whole UTC days inside and the hours at the edges.
pub(super) fn local(conn: &mut AnyConnection, ids: &[String], days: &LocalDays, empty: bool) -> Result<Figures> {
    let (from, to) = (days.bounds[0], days.bounds[days.bounds.len() - 1] - 1);
    if empty {
        return Ok(Figures::empty(days.starts().iter().copied(), Vec::new()));
    }
    let counter_rows = r::counters(conn, ids, Tier::Hour.as_str(), from, to)?;
    let hour_sets = r::sets(conn, ids, Tier::Hour.as_str(), from, to, Dimension::All.as_str(), None)?;
    // The whole UTC days inside, and the hours before and after them.
    let (groups, edges) = match utc_days_inside(from, to) {
        (Some((d1, d2)), edges) => {
            let mut groups = range_parts::groups(conn, ids, Tier::Day, d1, d2 - 1)?;
            for (_, parts) in &mut groups {
                parts.extend(edges.iter().map(|(f, t)| (Tier::Hour, *f, *t)));
            }
            (groups, edges)
        }
        (None, edges) => (vec![(ids.to_vec(), vec![(Tier::Hour, from, to)])], edges),
    };
    let mut f = Figures::empty(days.starts().iter().copied(), groups);
    f.hit_ranges = before(&edges, r::hour_sets_from(conn, ids)?);
    f.counted(&counter_rows, |b| days.day_of(b));
    // A local day's visitors are the union of its hours' sets; a site's, of
    // its days' (a union of about 90 sets per site, not of 2,160 hour sets).
    let mut day_sets: HashMap<(&str, i64), RoaringBitmap> = HashMap::new();
    for s in &hour_sets {
        let Some(day) = days.day_of(s.bucket) else { continue };
        *day_sets.entry((&s.site_id, day)).or_default() |= read(&s.bits)?;
    }
    let mut site_sets: HashMap<&str, RoaringBitmap> = HashMap::new();
    for ((site, day), set) in day_sets {
        *f.bucket_visitors.entry(day).or_insert(0) += set.len() as i64;
        *site_sets.entry(site).or_default() |= set;
    }
    f.site_visitors = site_sets.into_iter().map(|(k, v)| (k.to_string(), v.len() as i64)).collect();
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hours_before_the_hour_sets_are_read_from_events() {
        let h = HOUR_MS;
        let ranges = [(0, 3 * h - 1), (20 * h, 24 * h - 1)];
        assert_eq!(before(&ranges, 0), vec![], "sets from the start: no events read");
        assert_eq!(before(&ranges, 2 * h), vec![(0, 2 * h - 1)]);
        assert_eq!(before(&ranges, 21 * h), vec![(0, 3 * h - 1), (20 * h, 21 * h - 1)]);
        assert_eq!(before(&ranges, 30 * h), ranges.to_vec(), "sets not yet kept: every hour from events");
    }
}
