//! The visitors' current sessions as this process's tracker last wrote them
//! (issue 25, rule STORE-12), so the next batch of a visitor does not read
//! its session again.
//!
//! A kept session names the version its write left stored. Acceptance reads
//! the stored version with the visitor's locked row (one statement it runs
//! anyway) and takes the kept row only while the two are equal; anything
//! else is read. Every update of a session moves its version (acceptance
//! itself, anything else by a trigger), so another process's batch, a
//! conversion, identify's hand-over, a regroup, retention or forget can only
//! make a kept row unused, never wrong. Rows are kept after their write's
//! commit only (the tracker's answer), so a rolled-back write leaves nothing.
//!
//! Memory only, bounded by `RASTRO_SESSION_CACHE` visitors: when full,
//! sessions idle longer than a session's idle time go first (their next
//! event opens a new session), and if that is not enough, all of them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::analytics::SessionRow;

/// A session as a committed write of this process left it, and its version then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptSession {
    pub row: SessionRow,
    pub version: i64,
}

/// Where acceptance took the visitor's current session from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionSource {
    /// The visitor had no stored current session.
    #[default]
    None,
    /// The kept row, its version confirmed.
    Kept,
    /// A read (nothing kept, or the stored version moved).
    Read,
}

/// The kept sessions, by (site, visitor).
pub struct SessionCache {
    capacity: usize,
    kept: Mutex<HashMap<String, Arc<KeptSession>>>,
    kept_used: AtomicU64,
    read: AtomicU64,
}

/// One key for a (site, visitor) pair: site ids never hold a newline.
fn key(site_id: &str, visitor_id: &str) -> String {
    let mut k = String::with_capacity(site_id.len() + visitor_id.len() + 1);
    k.push_str(site_id);
    k.push('\n');
    k.push_str(visitor_id);
    k
}

impl SessionCache {
    /// Keeps at most `capacity` visitors' sessions (0: none).
    pub fn new(capacity: usize) -> SessionCache {
        SessionCache { capacity, kept: Mutex::default(), kept_used: AtomicU64::new(0), read: AtomicU64::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<KeptSession>>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session kept for a visitor, to be confirmed by the write.
    pub fn get(&self, site_id: &str, visitor_id: &str) -> Option<Arc<KeptSession>> {
        if self.capacity == 0 {
            return None;
        }
        self.lock().get(&key(site_id, visitor_id)).cloned()
    }

    /// After a committed write: counts where its session came from and keeps
    /// what it left (`None`: the write did not say, so a kept row stays; it
    /// is still confirmed before use). `now` and `idle_ms` decide which
    /// sessions go first when full.
    pub fn settle(
        &self,
        site_id: &str,
        visitor_id: &str,
        source: SessionSource,
        left: Option<Arc<KeptSession>>,
        now: i64,
        idle_ms: i64,
    ) {
        match source {
            SessionSource::Kept => self.kept_used.fetch_add(1, Ordering::Relaxed),
            SessionSource::Read => self.read.fetch_add(1, Ordering::Relaxed),
            SessionSource::None => 0,
        };
        let Some(left) = left else { return };
        if self.capacity == 0 {
            return;
        }
        let mut kept = self.lock();
        let k = key(site_id, visitor_id);
        if kept.len() >= self.capacity && !kept.contains_key(&k) {
            kept.retain(|_, s| now - s.row.last_at.max(s.row.end_at) < idle_ms);
            if kept.len() >= self.capacity {
                kept.clear();
            }
        }
        kept.insert(k, left);
    }

    /// Batches whose current session came from memory, and from a read.
    pub fn figures(&self) -> (u64, u64) {
        (self.kept_used.load(Ordering::Relaxed), self.read.load(Ordering::Relaxed))
    }

    /// Visitors kept now.
    #[cfg(test)]
    fn kept_now(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(id: &str, last_at: i64) -> Arc<KeptSession> {
        Arc::new(KeptSession { row: SessionRow::example(id, "v", last_at, last_at), version: 0 })
    }

    // rule: STORE-12
    #[test]
    fn a_full_cache_drops_idle_sessions_first_then_everything() {
        let c = SessionCache::new(3);
        c.settle("loja", "a", SessionSource::None, Some(kept("s_a", 0)), 0, 100);
        c.settle("loja", "b", SessionSource::Read, Some(kept("s_b", 50)), 50, 100);
        c.settle("loja", "c", SessionSource::Kept, Some(kept("s_c", 120)), 120, 100);
        assert_eq!(c.figures(), (1, 1));
        assert_eq!(c.kept_now(), 3);
        // A fourth visitor at 130: a (idle since 0) goes, the others stay.
        c.settle("loja", "d", SessionSource::None, Some(kept("s_d", 130)), 130, 100);
        assert!(c.get("loja", "a").is_none());
        assert_eq!(c.get("loja", "b").unwrap().row.id, "s_b");
        assert_eq!(c.kept_now(), 3);
        // A visitor already kept is replaced without dropping anyone.
        c.settle("loja", "b", SessionSource::Kept, Some(kept("s_b2", 140)), 140, 100);
        assert_eq!(c.get("loja", "b").unwrap().row.id, "s_b2");
        assert_eq!(c.kept_now(), 3);
        // Full of open sessions: everything goes, the new one is kept.
        c.settle("loja", "e", SessionSource::None, Some(kept("s_e", 150)), 150, 100);
        assert_eq!(c.kept_now(), 1);
        assert_eq!(c.get("loja", "e").unwrap().row.id, "s_e");
        // The site is part of the key, and a write that left nothing keeps the old row.
        assert!(c.get("outra", "e").is_none());
        c.settle("loja", "e", SessionSource::Read, None, 160, 100);
        assert_eq!(c.get("loja", "e").unwrap().row.id, "s_e");
        assert_eq!(c.figures(), (2, 2));
    }

    #[test]
    fn a_cache_of_zero_keeps_nothing_but_still_counts() {
        let c = SessionCache::new(0);
        c.settle("loja", "a", SessionSource::Read, Some(kept("s_a", 0)), 0, 100);
        assert!(c.get("loja", "a").is_none());
        assert_eq!(c.kept_now(), 0);
        assert_eq!(c.figures(), (0, 1));
    }
}
