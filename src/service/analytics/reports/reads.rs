//! The core reads (OVR-01 to OVR-14): `overview` from the rollups the report
//! actors keep, `liveVisitors` and `getSession` from the rows acceptance wrote.

use crate::service::analytics::reports::session_extras::Extras;
use std::collections::{BTreeMap, HashMap, HashSet};

use roaring::RoaringBitmap;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::numbers::{avg_ms, per_session, rate};
use crate::service::analytics::reports::range_parts::{self, Part};
use crate::service::analytics::rollup::buckets::{DAY_MS, HOUR_MS, bucket, dim};
use crate::service::sites;
use crate::service::validate;
use crate::store::analytics::rollups::{self as r, DAY, HOUR, MONTH};
use crate::store::analytics::{self as store, LiveRow, SessionRow};

pub const MAX_LIVE: i64 = 500;
const TOP: usize = 10;

/// A breakdown's `(key, count)` rows; a `None` key is the unknown value.
type Rows = Vec<(Option<String>, i64)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Interval {
    Hour,
    #[default]
    Day,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverviewArgs {
    pub site_ids: Vec<String>,
    pub from: i64,
    pub to: i64,
    #[serde(default)]
    pub interval: Interval,
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
            for row in r::breakdowns(conn, ids, tier, *from, *to)? {
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
    d: &str,
    keys: &[String],
) -> Result<HashMap<String, i64>> {
    let mut out = HashMap::new();
    if keys.is_empty() {
        return Ok(out);
    }
    let mut per: BTreeMap<(String, String), RoaringBitmap> = BTreeMap::new();
    for (group, parts) in groups {
        for (tier, from, to) in parts {
            for s in r::sets(conn, group, tier, *from, *to, d, Some(keys))? {
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
        if h.kind == "pageview" && wanted(page_keys, &h.route) {
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

/// `overview` (§5.3). `public` zeroes money and conversions and empties the
/// campaigns, mediums, events and goals panels (rule PUB-04).
pub fn overview(conn: &mut AnyConnection, a: OverviewArgs, public: bool) -> Result<Value> {
    overview_of(conn, a, public, validate::MAX_SITES)
}

/// `overview` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn overview_of(conn: &mut AnyConnection, a: OverviewArgs, public: bool, max_sites: usize) -> Result<Value> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    check_overview(&a)?;
    let site_rows = sites::require_many(conn, &a.site_ids)?;
    let currency_of: HashMap<String, String> = site_rows.iter().map(|s| (s.id.clone(), s.currency.clone())).collect();
    let mut currencies: Vec<&String> = currency_of.values().collect();
    currencies.sort();
    currencies.dedup();
    let mixed = currencies.len() > 1;
    let currency = if mixed { None } else { currencies.first().map(|c| (*c).clone()) };
    let (tier, step) = match a.interval {
        Interval::Hour => (HOUR, HOUR_MS),
        Interval::Day => (DAY, DAY_MS),
    };
    let ids = &a.site_ids;
    let counter_rows = r::counters(conn, ids, tier, a.from, a.to)?;
    let all_sets = r::sets(conn, ids, tier, a.from, a.to, dim::ALL, None)?;

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
        for (t, f, to) in parts.iter().filter(|(t, _, _)| *t == MONTH) {
            for s in r::sets(conn, group, t, *f, *to, dim::ALL, None)? {
                *site_sets.entry(s.site_id.clone()).or_default() |= read(&s.bits)?;
            }
        }
    }
    let site_visitors: HashMap<String, i64> = site_sets.iter().map(|(k, v)| (k.clone(), v.len() as i64)).collect();
    let total_visitors: i64 = site_visitors.values().sum();

    let money = |cents: i64| -> Value {
        if public {
            json!(0)
        } else if mixed {
            Value::Null
        } else {
            json!(cents)
        }
    };
    let conversions = |n: i64| if public { 0 } else { n };
    let series_json: Vec<Value> = series
        .iter()
        .map(|(b, c)| {
            json!({"bucketStart": b, "visitors": bucket_visitors.get(b).copied().unwrap_or(0), "sessions": c.sessions,
                "pageviews": c.pageviews, "bounces": c.bounces, "conversions": conversions(c.conversions),
                "revenueCents": money(c.revenue_cents)})
        })
        .collect();

    let bd = breakdowns(conn, &groups)?;
    let rows = |d: &str| top(bd.get(d).cloned().unwrap_or_default());
    let pages = rows(dim::PAGE);
    let sources = rows(dim::SOURCE);
    let page_keys: Vec<String> = pages.iter().filter_map(|(k, _)| k.clone()).collect();
    let source_keys: Vec<String> = sources.iter().filter_map(|(k, _)| k.clone()).collect();
    let (page_visitors, source_visitors) = match a.interval {
        Interval::Day => (
            visitors_by_key(conn, &groups, dim::PAGE, &page_keys)?,
            visitors_by_key(conn, &groups, dim::SOURCE, &source_keys)?,
        ),
        Interval::Hour => hour_visitors_by_key(conn, ids, &a, &page_keys, &source_keys)?,
    };
    let keyed = |rows: Vec<(Option<String>, i64)>, key: &str, count: &str| -> Vec<Value> {
        rows.into_iter().map(|(k, n)| json!({key: k, count: n})).collect()
    };
    let empty_if_public = |v: Vec<Value>| if public { Vec::new() } else { v };
    // Conversions and revenue by their session's campaign, from the ledger's breakdowns.
    let by_campaign = |d: &str| -> HashMap<String, i64> {
        bd.get(d).into_iter().flatten().filter_map(|(k, n)| k.clone().map(|k| (k, *n))).collect()
    };
    let (campaign_conversions, campaign_revenue) = (
        by_campaign(crate::service::analytics::conversions::CAMPAIGN_CONVERSIONS),
        by_campaign(crate::service::analytics::conversions::CAMPAIGN_REVENUE),
    );
    let campaigns: Vec<Value> = rows(dim::CAMPAIGN)
        .into_iter()
        .map(|(k, n)| {
            let of = |m: &HashMap<String, i64>| k.as_ref().and_then(|k| m.get(k)).copied().unwrap_or(0);
            json!({"campaign": k, "sessions": n, "conversions": conversions(of(&campaign_conversions)),
                "revenueCents": money(of(&campaign_revenue))})
        })
        .collect();
    let top_goals = if public {
        Vec::new()
    } else {
        crate::service::analytics::reports::goals::top_goals(conn, ids, tier, a.from, a.to)?
    };

    let by_site_json: Vec<Value> = ids
        .iter()
        .map(|id| {
            let c = by_site.get(id).copied().unwrap_or_default();
            json!({"siteId": id, "currency": currency_of.get(id), "visitors": site_visitors.get(id).copied().unwrap_or(0),
                "sessions": c.sessions, "pageviews": c.pageviews, "conversions": conversions(c.conversions),
                "revenueCents": if public { 0 } else { c.revenue_cents }})
        })
        .collect();

    Ok(json!({
        "currency": currency,
        "interval": match a.interval { Interval::Hour => "hour", Interval::Day => "day" },
        "totals": {
            "visitors": total_visitors,
            "sessions": totals.sessions,
            "pageviews": totals.pageviews,
            "bounces": totals.bounces,
            "bounceRate": rate(totals.bounces, totals.sessions),
            "avgDurationMs": avg_ms(totals.duration_sum, totals.sessions),
            "viewsPerSession": per_session(totals.pageviews, totals.sessions),
            "avgEngagedMs": avg_ms(totals.engaged_sum, totals.engaged_count),
            "conversions": conversions(totals.conversions),
            "revenueCents": money(totals.revenue_cents),
        },
        "series": series_json,
        "pages": pages.into_iter().map(|(k, n)| {
            let v = k.as_ref().and_then(|k| page_visitors.get(k)).copied().unwrap_or(0);
            json!({"route": k, "pageviews": n, "visitors": v})
        }).collect::<Vec<_>>(),
        "entryPages": keyed(rows(dim::ENTRY), "route", "sessions"),
        "sources": sources.into_iter().map(|(k, n)| {
            let v = k.as_ref().and_then(|k| source_visitors.get(k)).copied().unwrap_or(0);
            json!({"source": k, "sessions": n, "visitors": v})
        }).collect::<Vec<_>>(),
        "referrers": keyed(rows(dim::REFERRER), "referrer", "sessions"),
        "mediums": empty_if_public(keyed(rows(dim::MEDIUM), "medium", "sessions")),
        "campaigns": empty_if_public(campaigns),
        "countries": keyed(rows(dim::COUNTRY), "country", "sessions"),
        "devices": keyed(rows(dim::DEVICE), "device", "sessions"),
        "browsers": keyed(rows(dim::BROWSER), "browser", "sessions"),
        "events": empty_if_public(keyed(rows(dim::EVENT), "name", "count")),
        "topGoals": top_goals,
        "bySite": by_site_json,
    }))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveArgs {
    pub site_ids: Vec<String>,
    pub now: i64,
    pub limit: Option<i64>,
}

/// `liveVisitors` (rule OVR-12; a public token's rows redacted, PUB-05).
pub fn live_visitors(conn: &mut AnyConnection, a: LiveArgs, window_ms: i64, public: bool) -> Result<Value> {
    live_visitors_of(conn, a, window_ms, public, validate::MAX_SITES)
}

/// `liveVisitors` for a reader allowed `max_sites` sites at once (the dashboard).
pub fn live_visitors_of(
    conn: &mut AnyConnection,
    a: LiveArgs,
    window_ms: i64,
    public: bool,
    max_sites: usize,
) -> Result<Value> {
    validate::site_ids_up_to(&a.site_ids, max_sites)?;
    validate::time("now", a.now)?;
    let limit = a.limit.unwrap_or(100);
    if !(1..=MAX_LIVE).contains(&limit) {
        return Err(Error::invalid(format!("limit must be 1-{MAX_LIVE}")));
    }
    sites::require_many(conn, &a.site_ids)?;
    let (count, rows) = store::live(conn, &a.site_ids, a.now - window_ms, a.now, limit)?;
    let ids: Vec<String> = rows.iter().map(|r| r.session_id.clone()).collect();
    let sessions: HashMap<String, SessionRow> =
        store::sessions(conn, &ids)?.into_iter().map(|s| (s.id.clone(), s)).collect();
    let entries: Vec<(LiveRow, SessionRow)> =
        rows.into_iter().filter_map(|v| sessions.get(&v.session_id).cloned().map(|s| (v, s))).collect();
    let extras = if public { Extras::default() } else { Extras::load_live(conn, entries.iter().map(|(_, s)| s))? };
    Ok(live_answer(a.now, count, &entries, &extras, public))
}

/// The `liveVisitors` answer of ordered rows; a public token's rows redacted (rule PUB-05).
pub fn live_answer(now: i64, count: i64, entries: &[(LiveRow, SessionRow)], extras: &Extras, public: bool) -> Value {
    let visitors: Vec<Value> = entries
        .iter()
        .map(|(v, s)| {
            if public {
                json!({"siteId": v.site_id, "visitorId": s.id, "sessionId": s.id, "startedAt": s.started_at,
                    "lastSeenAt": v.last_at, "currentPath": v.current_route, "pageviews": s.pageviews, "events": s.events,
                    "source": s.source, "country": s.country, "device": s.device})
            } else {
                json!({"siteId": v.site_id, "visitorId": v.visitor_id, "sessionId": s.id, "startedAt": s.started_at,
                    "lastSeenAt": v.last_at, "currentPath": v.current_path, "entryPath": s.entry_path,
                    "pageviews": s.pageviews, "events": s.events, "source": s.source, "campaign": s.campaign,
                    "affiliate": extras.affiliate(s), "returning": s.is_returning, "conversions": s.conversions,
                    "revenueCents": s.revenue_cents, "goals": extras.goals(s), "funnel": extras.funnel(s), "country": s.country,
                    "device": s.device})
            }
        })
        .collect();
    json!({"now": now, "count": count, "truncated": count > visitors.len() as i64, "visitors": visitors})
}

/// A session as `getSession` answers it (§5.2 SessionSummary).
pub fn summary(s: &SessionRow, extras: &Extras) -> Value {
    json!({
        "siteId": s.site_id, "sessionId": s.id, "visitorId": s.visitor_id, "startedAt": s.started_at,
        "lastEventAt": s.last_at, "durationMs": crate::service::analytics::ingest::session_figures::duration(s), "pageviews": s.pageviews,
        "events": s.events, "bounce": s.pageviews == 1 && s.events == 0, "entryPath": s.entry_path,
        "exitPath": s.exit_path, "referrer": s.referrer, "source": s.source, "medium": s.medium,
        "campaign": s.campaign, "term": s.term, "content": s.content, "affiliate": extras.affiliate(s),
        "country": s.country, "region": s.region, "device": s.device, "browser": s.browser, "os": s.os,
        "language": s.language, "returning": s.is_returning, "conversions": s.conversions,
        "revenueCents": s.revenue_cents, "goals": extras.goals(s),
    })
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionArgs {
    pub site_id: String,
    pub session_id: String,
}

/// `getSession`: the summary, or null when unknown or of another site (rule ARPT-03).
pub fn get_session(conn: &mut AnyConnection, a: SessionArgs) -> Result<Value> {
    sites::require(conn, &a.site_id)?;
    Ok(match store::session(conn, &a.session_id)? {
        Some(s) if s.site_id == a.site_id => summary(&s, &Extras::load(conn, [&s])?),
        _ => Value::Null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: ARPT-08
    #[test]
    fn rounding_is_half_up_in_integers() {
        assert_eq!(rate(1, 3), json!(0.3333));
        assert_eq!(rate(2, 3), json!(0.6667));
        assert_eq!(rate(1, 8), json!(0.125));
        assert_eq!(rate(1, 0), Value::Null);
        assert_eq!(avg_ms(5, 2), json!(3));
        assert_eq!(avg_ms(4, 3), json!(1));
        assert_eq!(avg_ms(1, 0), Value::Null);
        assert_eq!(per_session(5, 3), json!(1.67));
        assert_eq!(per_session(1, 0), Value::Null);
        // The shortest JSON number: 1, not 1.0.
        assert_eq!(rate(3, 3).to_string(), "1");
        assert_eq!(per_session(4, 2).to_string(), "2");
        assert_eq!(rate(0, 3).to_string(), "0");
    }

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
        let day = |from: i64, to: i64| OverviewArgs { site_ids: vec![], from, to, interval: Interval::Day };
        let hour = |from: i64, to: i64| OverviewArgs { site_ids: vec![], from, to, interval: Interval::Hour };
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
