//! A cache of read answers (meta.status polled by many dashboards): an answer is
//! served again while no write committed since in this process and it is
//! younger than `RASTRO_READ_CACHE_TTL` (which bounds staleness from writes of
//! other processes on the same PostgreSQL). Keys carry every argument.
//!
//! Single flight: while one caller computes a key's answer, the callers that
//! miss the same key at the same write generation wait for that computation
//! instead of running their own. A failed computation is not cached; its
//! error goes to the callers waiting on it. If the computing caller goes away
//! (its future dropped), the waiters try again, one of them computing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

use crate::error::Result;

const MAX_ENTRIES: usize = 4096;

/// An answer with the write generation and the time it was computed at.
type Entry<T> = (u64, i64, Arc<T>);

/// What the waiters of a computation receive: None until it ends.
type Outcome<T> = Option<Result<Arc<T>>>;

/// A computation under way: its generation and where its outcome appears.
struct Flight<T> {
    id: u64,
    generation: u64,
    outcome: watch::Receiver<Outcome<T>>,
}

struct Inner<T> {
    entries: HashMap<String, Entry<T>>,
    flights: HashMap<String, Flight<T>>,
}

/// Answers of type `T` (a JSON value by default) by key.
pub struct ReadCache<T = Value> {
    inner: Mutex<Inner<T>>,
    next_flight: AtomicU64,
}

impl<T> Default for ReadCache<T> {
    fn default() -> Self {
        ReadCache {
            inner: Mutex::new(Inner { entries: HashMap::new(), flights: HashMap::new() }),
            next_flight: AtomicU64::new(0),
        }
    }
}

/// Removes a computation's flight when it ends or is dropped (its waiters then retry).
struct Computing<'a, T> {
    cache: &'a ReadCache<T>,
    key: &'a str,
    id: u64,
}

impl<T> Drop for Computing<'_, T> {
    fn drop(&mut self) {
        let mut inner = self.cache.lock();
        if inner.flights.get(self.key).is_some_and(|f| f.id == self.id) {
            inner.flights.remove(self.key);
        }
    }
}

impl<T> ReadCache<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached answer for `key`, the answer of the computation of `key`
    /// already under way at this `generation`, or `compute`'s (then cached).
    pub async fn get_or<F>(&self, key: String, generation: u64, now: i64, ttl_ms: i64, compute: F) -> Result<Arc<T>>
    where
        F: Future<Output = Result<T>>,
    {
        let (id, publish) = loop {
            let mut waiting = {
                let mut inner = self.lock();
                if let Some((g, at, v)) = inner.entries.get(&key)
                    && *g == generation
                    && now - at < ttl_ms
                {
                    return Ok(v.clone());
                }
                match inner.flights.get(&key) {
                    Some(f) if f.generation == generation => f.outcome.clone(),
                    _ => {
                        let id = self.next_flight.fetch_add(1, Ordering::Relaxed);
                        let (publish, outcome) = watch::channel(None);
                        inner.flights.insert(key.clone(), Flight { id, generation, outcome });
                        break (id, publish);
                    }
                }
            };
            // Ok: the computation ended (with its answer or its error). Err: it
            // was dropped before ending; look again (and maybe compute).
            if let Ok(outcome) = waiting.wait_for(Option::is_some).await
                && let Some(answer) = outcome.clone()
            {
                return answer;
            }
        };
        let flight = Computing { cache: self, key: &key, id };
        let answer = compute.await.map(Arc::new);
        if let Ok(value) = &answer {
            let mut inner = self.lock();
            if inner.entries.len() >= MAX_ENTRIES {
                inner.entries.clear();
            }
            // A computation of an older generation never replaces a newer answer.
            if inner.entries.get(&key).is_none_or(|(g, _, _)| *g <= generation) {
                inner.entries.insert(key.clone(), (generation, now, value.clone()));
            }
        }
        // Callers from now on read the entry (or, after an error, compute anew);
        // those already waiting get this outcome.
        drop(flight);
        publish.send_replace(Some(answer.clone()));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Code, Error};

    #[actix_web::test]
    async fn served_again_until_a_write_or_the_ttl() {
        let cache = ReadCache::<Value>::default();
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

    /// A computation that counts its runs and ends when the gate opens.
    fn gated(
        runs: &Arc<AtomicU64>,
        gate: &Arc<tokio::sync::Semaphore>,
        answer: Result<Value>,
    ) -> impl Future<Output = Result<Value>> + Send + 'static {
        let (runs, gate) = (runs.clone(), gate.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            gate.acquire().await.unwrap().forget();
            answer
        }
    }

    #[tokio::test]
    async fn concurrent_misses_of_a_key_wait_for_one_computation() {
        let cache = Arc::new(ReadCache::<Value>::default());
        let runs = Arc::new(AtomicU64::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let mut waiting = Vec::new();
        for i in 0..50 {
            let (cache, c) = (cache.clone(), gated(&runs, &gate, Ok(Value::from(i))));
            waiting.push(tokio::spawn(async move { cache.get_or("k".into(), 1, 0, 1000, c).await }));
        }
        // Another key and another generation compute on their own.
        let (c2, other_key) = (cache.clone(), gated(&runs, &gate, Ok(Value::from("other"))));
        let other = tokio::spawn(async move { c2.get_or("k2".into(), 1, 0, 1000, other_key).await });
        while runs.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2, "one computation per key");
        gate.add_permits(100);
        let first = waiting.remove(0).await.unwrap().unwrap();
        assert_eq!(*first, Value::from(0));
        for w in waiting {
            assert!(Arc::ptr_eq(&w.await.unwrap().unwrap(), &first), "every waiter got the one answer");
        }
        assert_eq!(*other.await.unwrap().unwrap(), Value::from("other"));
        // Cached now.
        let again = cache.get_or("k".into(), 1, 10, 1000, gated(&runs, &gate, Ok(Value::Null))).await.unwrap();
        assert!(Arc::ptr_eq(&again, &first));
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_computation_reaches_its_waiters_and_is_not_cached() {
        let cache = Arc::new(ReadCache::<Value>::default());
        let runs = Arc::new(AtomicU64::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let failing = gated(&runs, &gate, Err(Error::unavailable("down")));
        let c = cache.clone();
        let leader = tokio::spawn(async move { c.get_or("k".into(), 1, 0, 1000, failing).await });
        while runs.load(Ordering::SeqCst) < 1 {
            tokio::task::yield_now().await;
        }
        let (c, fine) = (cache.clone(), gated(&runs, &gate, Ok(Value::from(1))));
        let waiter = tokio::spawn(async move { c.get_or("k".into(), 1, 0, 1000, fine).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(10);
        assert_eq!(leader.await.unwrap().unwrap_err().code, Code::Unavailable);
        assert_eq!(waiter.await.unwrap().unwrap_err().code, Code::Unavailable, "the waiter got the error");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let next = cache.get_or("k".into(), 1, 0, 1000, gated(&runs, &gate, Ok(Value::from(2)))).await.unwrap();
        assert_eq!(*next, Value::from(2), "the error was not cached");
    }

    #[tokio::test]
    async fn waiters_of_a_dropped_computation_compute_it_themselves() {
        let cache = Arc::new(ReadCache::<Value>::default());
        let runs = Arc::new(AtomicU64::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let c = cache.clone();
        let never = gated(&runs, &gate, Ok(Value::from("never")));
        let leader = tokio::spawn(async move { c.get_or("k".into(), 1, 0, 1000, never).await });
        while runs.load(Ordering::SeqCst) < 1 {
            tokio::task::yield_now().await;
        }
        let (c, mine) = (cache.clone(), async { Ok::<_, Error>(Value::from("mine")) });
        let waiter = tokio::spawn(async move { c.get_or("k".into(), 1, 0, 1000, mine).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        leader.abort();
        assert_eq!(*waiter.await.unwrap().unwrap(), Value::from("mine"));
    }
}

/// A cached answer: its value and that value's JSON text,
/// serialized once when computed so a poll is answered without serializing.
#[derive(Debug)]
pub struct CachedJson {
    pub value: serde_json::Value,
    pub json: String,
}

impl serde::Serialize for CachedJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}
