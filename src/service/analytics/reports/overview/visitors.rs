//! Distinct visitors per key of the pages and sources panels (rule OVR-05):
//! from the hour, day and month sets of the parts read (rule OVR-09), and
//! from the retained events of hours older than the site's hour sets
//! (`web_hour_sets_from`, migration 27), unioned with them.

use std::collections::{BTreeMap, HashMap, HashSet};

use roaring::RoaringBitmap;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::range_parts::Part;
use crate::service::analytics::vocabulary::{Dimension, EventKind};
use crate::store::analytics as store;
use crate::store::analytics::rollups as r;

/// Per (site, key), the distinct visitors' numbers.
type KeySets = BTreeMap<(String, String), RoaringBitmap>;
/// Per (site, key), the distinct visitors' ids.
type KeyIds = BTreeMap<(String, String), HashSet<String>>;

/// The visitors per key of a dimension in the parts of `groups`.
pub(super) fn key_sets(
    conn: &mut AnyConnection,
    groups: &[(Vec<String>, Vec<Part>)],
    d: Dimension,
    keys: &[String],
) -> Result<KeySets> {
    let mut per = KeySets::new();
    if keys.is_empty() {
        return Ok(per);
    }
    for (group, parts) in groups {
        for (tier, from, to) in parts {
            for s in r::sets(conn, group, tier.as_str(), *from, *to, d.as_str(), Some(keys))? {
                *per.entry((s.site_id, s.key)).or_default() |=
                    RoaringBitmap::deserialize_from(&s.bits[..]).map_err(Error::internal)?;
            }
        }
    }
    Ok(per)
}

/// Distinct per (site, key), summed over sites per key (rule OVR-05).
pub(super) fn counted<V>(per: BTreeMap<(String, String), V>, len: impl Fn(&V) -> u64) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for ((_, key), set) in per {
        *out.entry(key).or_insert(0) += len(&set) as i64;
    }
    out
}

/// The pages' and the sources' visitors, by id, from the retained pageviews
/// and custom events of `[from, to]` (rule OVR-09), read once, and the
/// sources of their sessions read by key (not joined per event).
pub(super) fn hit_ids(
    conn: &mut AnyConnection,
    ids: &[String],
    ranges: &[(i64, i64)],
    page_keys: &[String],
    source_keys: &[String],
) -> Result<(KeyIds, KeyIds)> {
    if page_keys.is_empty() && source_keys.is_empty() {
        return Ok(Default::default());
    }
    let mut hits = Vec::new();
    for (from, to) in ranges {
        hits.extend(store::visitor_hits(conn, ids, *from, *to)?);
    }
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
    let (mut pages, mut sources) = (KeyIds::new(), KeyIds::new());
    for h in hits {
        if h.kind == EventKind::Pageview.as_str() && wanted(page_keys, &h.route) {
            pages.entry((h.site_id.clone(), h.route.clone())).or_default().insert(h.visitor_id.clone());
        }
        if let Some(source) = source_of.get(&h.session_id).filter(|s| wanted(source_keys, s)) {
            sources.entry((h.site_id.clone(), source.clone())).or_default().insert(h.visitor_id);
        }
    }
    Ok((pages, sources))
}

/// `sets` with the visitors of `ids` added, by their dense numbers.
pub(super) fn with_ids(conn: &mut AnyConnection, mut sets: KeySets, ids: KeyIds) -> Result<KeySets> {
    for ((site, key), visitors) in ids {
        let visitors: Vec<String> = visitors.into_iter().collect();
        let set = sets.entry((site.clone(), key)).or_default();
        for chunk in visitors.chunks(400) {
            for n in r::visitor_numbers(conn, &site, chunk)? {
                set.insert(u32::try_from(n.number).map_err(|_| Error::internal("visitor numbers exhausted"))?);
            }
        }
    }
    Ok(sets)
}
