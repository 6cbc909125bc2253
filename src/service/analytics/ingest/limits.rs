//! The tracker's rate limits (rule TRK-28): events a minute per client
//! address (IPv4, or IPv6 /64) and per site, and distinct visitor ids a minute
//! per client address. Fixed one-minute windows in this process; a key idle
//! past its window is dropped when the table grows, so memory stays bounded.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

const WINDOW_MS: i64 = 60_000;
/// Past this many keys, those of earlier windows are dropped.
const PRUNE_AT: usize = 50_000;

struct Window<V> {
    start: i64,
    value: V,
}

#[derive(Default)]
struct Tables {
    ip_events: HashMap<u128, Window<u64>>,
    site_events: HashMap<String, Window<u64>>,
    ip_visitors: HashMap<u128, Window<HashSet<u64>>>,
}

pub struct Limits {
    ip_rate: u64,
    site_rate: u64,
    visitor_rate: usize,
    tables: Mutex<Tables>,
}

fn window_of(now: i64) -> i64 {
    now - now.rem_euclid(WINDOW_MS)
}

fn prune<K, V>(map: &mut HashMap<K, Window<V>>, start: i64) {
    if map.len() > PRUNE_AT {
        map.retain(|_, w| w.start == start);
    }
}

fn fresh<K: std::hash::Hash + Eq, V: Default>(map: &mut HashMap<K, Window<V>>, key: K, start: i64) -> &mut V {
    let w = map.entry(key).or_insert_with(|| Window { start, value: V::default() });
    if w.start != start {
        *w = Window { start, value: V::default() };
    }
    &mut w.value
}

impl Limits {
    pub fn new(ip_rate: u32, site_rate: u32, visitor_rate: u32) -> Limits {
        Limits {
            ip_rate: u64::from(ip_rate),
            site_rate: u64::from(site_rate),
            visitor_rate: visitor_rate as usize,
            tables: Mutex::new(Tables::default()),
        }
    }

    /// Counts `events` for this address, site and visitor, or refuses the
    /// batch (counting nothing) with the seconds until the window ends.
    pub fn admit(&self, now: i64, ip_key: u128, site_id: &str, visitor: Option<u64>, events: u64) -> Result<(), u64> {
        let start = window_of(now);
        let retry = ((start + WINDOW_MS - now) as u64).div_ceil(1000).max(1);
        let mut t = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        prune(&mut t.ip_events, start);
        prune(&mut t.site_events, start);
        prune(&mut t.ip_visitors, start);
        if *fresh(&mut t.ip_events, ip_key, start) + events > self.ip_rate {
            return Err(retry);
        }
        if *fresh(&mut t.site_events, site_id.to_string(), start) + events > self.site_rate {
            return Err(retry);
        }
        if let Some(v) = visitor {
            let seen = fresh(&mut t.ip_visitors, ip_key, start);
            if !seen.contains(&v) && seen.len() >= self.visitor_rate {
                return Err(retry);
            }
            seen.insert(v);
        }
        *fresh(&mut t.ip_events, ip_key, start) += events;
        *fresh(&mut t.site_events, site_id.to_string(), start) += events;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: TRK-28
    #[test]
    fn each_limit_refuses_past_its_rate_and_resets_each_minute() {
        let l = Limits::new(10, 15, 2);
        let t = 1_000_000_040_000;
        assert!(l.admit(t, 1, "a", Some(1), 6).is_ok());
        assert_eq!(l.admit(t, 1, "a", Some(1), 5), Err(40), "the address's 10 events");
        assert!(l.admit(t, 2, "a", Some(7), 4).is_ok());
        assert!(l.admit(t, 3, "a", Some(8), 6).is_err(), "the site's 15 events");
        assert!(l.admit(t, 1, "b", Some(2), 1).is_ok());
        assert!(l.admit(t, 1, "b", Some(3), 1).is_err(), "a third new visitor from one address");
        assert!(l.admit(t + 60_000, 1, "a", Some(3), 10).is_ok(), "a new minute");
    }
}
