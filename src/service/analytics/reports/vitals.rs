//! `vitalsReport` (ARPT-17, ARPT-18): p75, rating and good /
//! needs-improvement / poor counts per metric, for the site, its top pages and
//! its device classes, from the vitals digests over complete UTC days (no raw
//! event is read).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::analytics::reports::approximate;
use crate::service::analytics::reports::filtered::{dims, kept};
use crate::service::analytics::reports::numbers::Fixed;
use crate::service::analytics::reports::site_map::complete_days;
use crate::service::analytics::reports::zone;
use crate::service::analytics::rollup::vitals::METRICS;
use crate::service::analytics::vocabulary::EventKind;
use crate::service::reporting::filters::Filter;
use crate::service::reporting::timezone;
use crate::service::sites;
use crate::store::analytics::vitals as store;

/// Longest range (manifest `maxVitalsDays`).
pub const MAX_DAYS: i64 = 90;
const TOP_PAGES: usize = 50;
/// The stored scale of CLS (× 10⁴).
const CLS_SCALE: i64 = 10_000;

/// Per metric (in `METRICS` order) the web-vitals thresholds, as stored (CLS × 10⁴).
pub const THRESHOLDS: [(i64, i64); 5] = [(2500, 4000), (200, 500), (1000, 2500), (1800, 3000), (800, 1800)];

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VitalsArgs {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    /// Whole local days of this IANA zone, or `"site"` (REPORTING §1).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Only the pageviews the filters keep and count (REPORTING §3), as on `overview`.
    #[serde(default)]
    pub filters: Vec<Filter>,
}

/// Per metric, the merged value → count map: while rows are added, a list
/// of (value, count) (a push per row, where an ordered map paid a search
/// per row), then sorted and merged once by [`Digest::finish`].
#[derive(Debug, Clone, Default)]
pub struct Digest {
    maps: [Vec<(i64, i64)>; 5],
}

impl Digest {
    fn add(&mut self, metric: usize, value: i64, count: i64) {
        self.maps[metric].push((value, count));
    }

    /// Each metric's list by value, one entry per value.
    fn finish(&mut self) {
        for map in &mut self.maps {
            map.sort_unstable_by_key(|(v, _)| *v);
            map.dedup_by(|next, kept| {
                let same = next.0 == kept.0;
                if same {
                    kept.1 += next.1;
                }
                same
            });
        }
    }

    pub fn samples(&self) -> i64 {
        self.maps.iter().flat_map(|m| m.iter().map(|(_, c)| c)).sum()
    }
}

/// The 1-based nearest-rank p75 of a value → count list sorted by value: the
/// smallest value whose cumulative count reaches `ceil(0.75 n)` (§5.4).
pub fn p75(map: &[(i64, i64)]) -> Option<i64> {
    let n: i64 = map.iter().map(|(_, c)| c).sum();
    if n <= 0 {
        return None;
    }
    let rank = (3 * n + 3) / 4;
    let mut seen = 0;
    for (value, count) in map {
        seen += count;
        if seen >= rank {
            return Some(*value);
        }
    }
    None
}

/// Where a value falls against a metric's thresholds (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Rating {
    Good,
    NeedsImprovement,
    Poor,
}

fn rating(value: i64, (good, poor): (i64, i64)) -> Rating {
    if value <= good {
        Rating::Good
    } else if value <= poor {
        Rating::NeedsImprovement
    } else {
        Rating::Poor
    }
}

/// A stored value as answered: ms as is, CLS back to a decimal.
fn answered(metric: usize, v: i64) -> Fixed {
    Fixed::of(v, if METRICS[metric] == "cls" { CLS_SCALE } else { 1 })
}

/// One metric's figures (§5.4 VitalRow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VitalRow {
    pub metric: String,
    pub samples: i64,
    pub p75: Option<Fixed>,
    pub rating: Option<Rating>,
    pub good: i64,
    pub needs_improvement: i64,
    pub poor: i64,
}

/// The five VitalRows of a finished digest (rule ARPT-17).
pub fn rows(d: &Digest) -> Vec<VitalRow> {
    (0..METRICS.len())
        .map(|i| {
            let map = &d.maps[i];
            let (mut good, mut needs, mut poor) = (0, 0, 0);
            for (v, c) in map {
                match rating(*v, THRESHOLDS[i]) {
                    Rating::Good => good += c,
                    Rating::NeedsImprovement => needs += c,
                    Rating::Poor => poor += c,
                }
            }
            let p = p75(map);
            VitalRow {
                metric: METRICS[i].to_string(),
                samples: good + needs + poor,
                p75: p.map(|v| answered(i, v)),
                rating: p.map(|v| rating(v, THRESHOLDS[i])),
                good,
                needs_improvement: needs,
                poor,
            }
        })
        .collect()
}

/// Per metric, its `[good, poor]` bounds as answered.
fn thresholds() -> BTreeMap<String, [Fixed; 2]> {
    METRICS
        .iter()
        .enumerate()
        .map(|(i, metric)| {
            let (a, b) = THRESHOLDS[i];
            ((*metric).to_string(), [answered(i, a), answered(i, b)])
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageVitals {
    pub route: String,
    pub samples: i64,
    pub metrics: Vec<VitalRow>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceVitals {
    /// `mobile`, `tablet`, `desktop`, or null for an unknown class.
    pub device: Option<String>,
    pub metrics: Vec<VitalRow>,
}

/// The `vitalsReport` answer (ARPT-17, ARPT-18).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VitalsReport {
    pub site_id: String,
    pub from: i64,
    pub to: i64,
    #[schema(value_type = BTreeMap<String, Vec<f64>>)]
    pub thresholds: BTreeMap<String, [Fixed; 2]>,
    pub metrics: Vec<VitalRow>,
    pub by_page: Vec<PageVitals>,
    pub by_device: Vec<DeviceVitals>,
    /// With `timezone`: the zone whose days the range is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The days whose figures read rows retention has deleted (REPORTING §1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate_days: Option<Vec<i64>>,
}

/// Digests by key (a route, a device), each at a place that does not move,
/// so a run of rows of one key is added without a lookup.
#[derive(Default)]
struct Keyed {
    digests: Vec<(String, Digest)>,
    places: HashMap<String, usize>,
}

impl Keyed {
    /// The place of `key`'s digest, made empty when new.
    fn place(&mut self, key: String) -> usize {
        if let Some(i) = self.places.get(&key) {
            return *i;
        }
        self.digests.push((key.clone(), Digest::default()));
        self.places.insert(key, self.digests.len() - 1);
        self.digests.len() - 1
    }

    /// Whether the digest at `place` is `key`'s.
    fn holds(&self, place: usize, key: &str) -> bool {
        self.digests[place].0 == key
    }

    fn add(&mut self, place: usize, metric: usize, value: i64, count: i64) {
        self.digests[place].1.add(metric, value, count);
    }
}

pub const DEVICES: [Option<&str>; 4] = [Some("mobile"), Some("tablet"), Some("desktop"), None];

/// The digest cells of the kept rows' counted pageviews: one sample per
/// metric a pageview has, on its session's device, as the report actor
/// files them.
fn kept_cells(kept: &kept::Kept) -> Vec<store::DigestRow> {
    let mut out = Vec::new();
    for (e, _) in kept.events.iter().filter(|(e, counted)| *counted && e.kind == EventKind::Pageview.as_str()) {
        let device = kept.sessions.get(&e.session_id).and_then(|s| s.device.clone()).unwrap_or_default();
        for (metric, value) in METRICS.iter().zip([e.lcp, e.inp, e.cls, e.fcp, e.ttfb]) {
            if let Some(value) = value {
                out.push(store::DigestRow::single(metric, e.route.clone(), device.clone(), value));
            }
        }
    }
    out
}

/// `vitalsReport` for a site already checked against the caller's scope.
pub fn vitals_report(conn: &mut AnyConnection, a: VitalsArgs) -> Result<VitalsReport> {
    let zone = zone::of_site(conn, &a.site_id, a.timezone.as_deref(), (a.from, a.to), MAX_DAYS, || {
        complete_days(a.from, a.to, MAX_DAYS)
    })?;
    let rules = dims::rules(&a.filters)?;
    let site = sites::require(conn, &a.site_id)?;
    let read = approximate::rows_read(zone, !rules.is_empty(), (a.from, a.to));
    let approximate_days = approximate::days(conn, std::slice::from_ref(&a.site_id), zone, (a.from, a.to), &read)?;
    // Filters: the counted pageviews' own values (REP-06, REP-07). Local
    // days: the digests of the whole UTC days inside, the pageviews' own
    // values around them (the digests keep UTC days).
    let cells = match zone {
        _ if !rules.is_empty() => {
            let kept = kept::read(conn, std::slice::from_ref(&site), (a.from, a.to), &rules, &[])?;
            kept_cells(&kept)
        }
        None => store::digests(conn, &a.site_id, a.from, a.to)?,
        Some(_) => {
            let (days, edges) = timezone::utc_days_inside(a.from, a.to);
            let mut cells = match days {
                Some((start, end)) => store::digests(conn, &a.site_id, start, end - 1)?,
                None => Vec::new(),
            };
            for (from, to) in edges {
                let pageview = EventKind::Pageview.as_str();
                cells.extend(store::digest_rows_between(conn, &a.site_id, pageview, from, to + 1)?);
            }
            cells
        }
    };
    let mut all = Digest::default();
    let mut by_route = Keyed::default();
    let mut by_device = Keyed::default();
    // One row per (day, cell), by (day, metric, route, device), holding
    // the cell's values: the days merge here. Consecutive rows mostly share
    // their route and device, so the places of the last ones are kept at
    // hand, and a row is looked up by key only when they change.
    let mut at_hand: Option<(usize, usize)> = None;
    for r in cells {
        let Some(i) = METRICS.iter().position(|m| *m == r.metric) else { continue };
        let (route, device) = match at_hand {
            Some((route, device)) if by_route.holds(route, &r.route) && by_device.holds(device, &r.device) => {
                (route, device)
            }
            _ => (by_route.place(r.route), by_device.place(r.device)),
        };
        at_hand = Some((route, device));
        for (value, count) in store::unpack(&r.pairs) {
            all.add(i, value, count);
            by_route.add(route, i, value, count);
            by_device.add(device, i, value, count);
        }
    }
    all.finish();
    by_route.digests.iter_mut().chain(by_device.digests.iter_mut()).for_each(|(_, d)| d.finish());
    let by_device: HashMap<String, Digest> = by_device.digests.into_iter().collect();
    // Top pages by samples desc, then route by bytes (rule ARPT-18).
    let mut pages: Vec<(String, Digest)> = by_route.digests;
    pages.sort_by(|(ra, da), (rb, db)| db.samples().cmp(&da.samples()).then_with(|| ra.as_bytes().cmp(rb.as_bytes())));
    pages.truncate(TOP_PAGES);
    let empty = Digest::default();
    Ok(VitalsReport {
        site_id: a.site_id,
        from: a.from,
        to: a.to,
        thresholds: thresholds(),
        metrics: rows(&all),
        by_page: pages
            .iter()
            .map(|(route, d)| PageVitals { route: route.clone(), samples: d.samples(), metrics: rows(d) })
            .collect(),
        by_device: DEVICES
            .iter()
            .map(|device| DeviceVitals {
                device: device.map(str::to_string),
                metrics: rows(by_device.get(device.unwrap_or("")).unwrap_or(&empty)),
            })
            .collect(),
        timezone: zone.map(|z| z.name().to_string()),
        approximate_days,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: ARPT-17
    #[test]
    fn p75_is_the_nearest_rank_and_ratings_are_inclusive() {
        assert_eq!(p75(&[(100, 1), (200, 1), (300, 1), (400, 1)]), Some(300), "ceil(0.75 * 4) = 3rd");
        assert_eq!(p75(&[(100, 1), (200, 1), (300, 1), (400, 1), (500, 1)]), Some(400), "ceil(0.75 * 5) = 4th");
        assert_eq!(p75(&[]), None);
        assert_eq!(p75(&[(7, 1)]), Some(7));
        assert_eq!(rating(2500, THRESHOLDS[0]), Rating::Good);
        assert_eq!(rating(2501, THRESHOLDS[0]), Rating::NeedsImprovement);
        assert_eq!(rating(4000, THRESHOLDS[0]), Rating::NeedsImprovement);
        assert_eq!(rating(4001, THRESHOLDS[0]), Rating::Poor);
        // Days merge: the same value added on two days is one entry.
        let mut d = Digest::default();
        d.add(2, 1235, 1);
        d.add(2, 1000, 1);
        d.add(2, 1000, 1);
        d.finish();
        assert_eq!(d.maps[2], vec![(1000, 2), (1235, 1)]);
        let r = serde_json::to_value(rows(&d)).unwrap();
        assert_eq!(r[0]["p75"], serde_json::Value::Null);
        assert_eq!(r[0]["rating"], serde_json::Value::Null);
        assert_eq!(
            r[2],
            serde_json::json!({"metric": "cls", "samples": 3, "p75": 0.1235, "rating": "needs-improvement",
            "good": 2, "needsImprovement": 1, "poor": 0})
        );
        assert_eq!(serde_json::to_value(thresholds()).unwrap()["cls"], serde_json::json!([0.1, 0.25]));
    }
}
