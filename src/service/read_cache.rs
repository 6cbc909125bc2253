//! A cache of read answers (meta.status polled by many dashboards): an answer is
//! served again while no write committed since in this process and it is
//! younger than `RASTRO_READ_CACHE_TTL` (which bounds staleness from writes of
//! other processes on the same PostgreSQL). Keys carry every argument.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::error::Result;

const MAX_ENTRIES: usize = 4096;

/// An answer with the write generation and the time it was computed at.
type Entry = (u64, i64, Arc<Value>);

#[derive(Default)]
pub struct ReadCache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl ReadCache {
    /// The cached answer for `key`, or `compute`'s (then cached).
    pub async fn get_or<F>(&self, key: String, generation: u64, now: i64, ttl_ms: i64, compute: F) -> Result<Arc<Value>>
    where
        F: Future<Output = Result<Value>>,
    {
        if let Some((g, at, v)) = self.entries.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
            && *g == generation
            && now - at < ttl_ms
        {
            return Ok(v.clone());
        }
        let value = Arc::new(compute.await?);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, (generation, now, value.clone()));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn served_again_until_a_write_or_the_ttl() {
        let cache = ReadCache::default();
        let calls = std::cell::Cell::new(0);
        let compute = || {
            calls.set(calls.get() + 1);
            async { Ok(Value::from(calls.get())) }
        };
        assert_eq!(*cache.get_or("k".into(), 1, 0, 1000, compute()).await.unwrap(), Value::from(1));
        assert_eq!(*cache.get_or("k".into(), 1, 999, 1000, compute()).await.unwrap(), Value::from(1));
        assert_eq!(*cache.get_or("k".into(), 2, 999, 1000, compute()).await.unwrap(), Value::from(3), "a write");
        assert_eq!(*cache.get_or("k".into(), 2, 5000, 1000, compute()).await.unwrap(), Value::from(4), "the ttl");
    }
}
