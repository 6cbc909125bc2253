//! The grant reads of every federated call, coalesced (see [`GrantReader`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::grants::{ActiveGrant, check_row, parse_active};
use crate::error::{Error, Result};
use crate::service::context::Context;
use crate::store::federation::{self as store, GrantRow};

/// Most connection ids one grant query names; a larger batch takes several.
const MAX_IDS_PER_QUERY: usize = 500;

type LoadFuture = Pin<Box<dyn Future<Output = Result<Vec<GrantRow>>> + Send>>;
/// Reads the grant rows of some connection ids (those without a grant are absent).
pub type GrantLoader = Arc<dyn Fn(Vec<String>) -> LoadFuture + Send + Sync>;

/// The grant reads of every federated call, coalesced: a call registers its
/// connection and waits; one leader task at a time takes every call waiting
/// and reads all their grants in one statement (`connection_id IN (...)`),
/// then answers each with [`check_active`]'s verdict. Under load N concurrent
/// calls cost a few queries instead of N.
///
/// A call only ever joins a query that starts after it registered (the leader
/// takes the waiting calls first, then starts the query), never one already in
/// flight: a revocation committed before a call arrived always denies it.
pub struct GrantReader {
    shared: Arc<Shared>,
}

struct Shared {
    load: GrantLoader,
    queue: Mutex<Queue>,
    queries: AtomicU64,
    /// The leader's parsed grants by connection, reused while the row's text is
    /// the same (the row itself is read by every call's query).
    parsed: Mutex<HashMap<String, Parsed>>,
}

/// A grant row's `site_ids` and `permissions` text and what they parse to.
struct Parsed {
    site_ids: String,
    permissions: String,
    grant: Arc<ActiveGrant>,
}

/// Most parsed grants kept; past it the map starts over.
const MAX_PARSED: usize = 10_000;

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    /// A leader task is running: it will take `waiting` before its next query.
    leading: bool,
}

struct Waiter {
    connection_id: String,
    organization_id: String,
    answer: oneshot::Sender<Result<Arc<ActiveGrant>>>,
}

impl GrantReader {
    /// Reads the grants on the context's read pool.
    pub fn new(cx: Context) -> GrantReader {
        GrantReader::with_loader(Arc::new(move |ids: Vec<String>| -> LoadFuture {
            let cx = cx.clone();
            Box::pin(async move { cx.read(move |c| store::find_many(c, &ids).map_err(Error::from)).await })
        }))
    }

    /// Reads the grants through `load` (tests).
    pub fn with_loader(load: GrantLoader) -> GrantReader {
        GrantReader {
            shared: Arc::new(Shared {
                load,
                queue: Mutex::default(),
                queries: AtomicU64::new(0),
                parsed: Mutex::default(),
            }),
        }
    }

    /// The active grant of `connection_id` for `organization_id`, read by a
    /// query that starts after this call; [`check_active`]'s verdict on it.
    pub async fn active(&self, connection_id: &str, organization_id: &str) -> Result<Arc<ActiveGrant>> {
        let (answer, wait) = oneshot::channel();
        let lead = {
            let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.waiting.push(Waiter {
                connection_id: connection_id.to_string(),
                organization_id: organization_id.to_string(),
                answer,
            });
            !std::mem::replace(&mut queue.leading, true)
        };
        if lead {
            tokio::spawn(self.shared.clone().lead());
        }
        wait.await.unwrap_or_else(|_| Err(Error::unavailable("the connection's grant could not be read; retry")))
    }

    /// Grant queries run so far (each names up to 500 connections).
    pub fn queries(&self) -> u64 {
        self.shared.queries.load(Ordering::Relaxed)
    }
}

/// Hands the leadership back if the leader task stops mid-way (a panic, the
/// runtime shutting down): the calls still waiting are answered UNAVAILABLE.
struct Leading<'a> {
    shared: &'a Shared,
    done: bool,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.leading = false;
            queue.waiting.clear();
        }
    }
}

/// `parse_active` of `row`, or the grant parsed from the same text before.
fn parsed_grant(parsed: &mut HashMap<String, Parsed>, row: &GrantRow) -> Result<Arc<ActiveGrant>> {
    if let Some(p) = parsed.get(&row.connection_id)
        && p.site_ids == row.site_ids
        && p.permissions == row.permissions
    {
        return Ok(p.grant.clone());
    }
    let grant = Arc::new(parse_active(row)?);
    if parsed.len() >= MAX_PARSED {
        parsed.clear();
    }
    parsed.insert(
        row.connection_id.clone(),
        Parsed { site_ids: row.site_ids.clone(), permissions: row.permissions.clone(), grant: grant.clone() },
    );
    Ok(grant)
}

impl Shared {
    async fn lead(self: Arc<Self>) {
        let mut leading = Leading { shared: &self, done: false };
        loop {
            let batch = {
                let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                if queue.waiting.is_empty() {
                    queue.leading = false;
                    leading.done = true;
                    return;
                }
                std::mem::take(&mut queue.waiting)
            };
            // The batch is taken: every query below starts after each of its calls arrived.
            let mut ids: Vec<String> = batch.iter().map(|w| w.connection_id.clone()).collect();
            ids.sort_unstable();
            ids.dedup();
            let mut rows: HashMap<String, GrantRow> = HashMap::with_capacity(ids.len());
            let mut failed = None;
            for chunk in ids.chunks(MAX_IDS_PER_QUERY) {
                self.queries.fetch_add(1, Ordering::Relaxed);
                match (self.load)(chunk.to_vec()).await {
                    Ok(found) => rows.extend(found.into_iter().map(|r| (r.connection_id.clone(), r))),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
            for w in batch {
                let verdict = match &failed {
                    Some(e) => Err(e.clone()),
                    None => check_row(rows.get(&w.connection_id), &w.organization_id)
                        .and_then(|row| parsed_grant(&mut parsed, row)),
                };
                let _ = w.answer.send(verdict);
            }
            drop(parsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::db::schema::federation_grants;
    use crate::error::Code;
    use crate::service::federation::grants::PERM_CONFIGURE;
    use diesel::prelude::*;

    fn row(connection_id: &str, organization_id: &str, revoked_at: Option<i64>) -> GrantRow {
        GrantRow {
            connection_id: connection_id.into(),
            organization_id: organization_id.into(),
            owner_id: "owner".into(),
            site_ids: r#"["site-a","site-b"]"#.into(),
            permissions: r#"["analytics:configure"]"#.into(),
            revoked_at,
            created_at: 1,
            updated_at: 1,
        }
    }

    type Store = Arc<Mutex<HashMap<String, GrantRow>>>;

    /// A reader over an in-memory table: each load copies the rows when it starts.
    fn reader_over(store: &Store, gate: Option<Arc<tokio::sync::Semaphore>>) -> GrantReader {
        let store = store.clone();
        GrantReader::with_loader(Arc::new(move |ids: Vec<String>| -> LoadFuture {
            let snapshot: Vec<GrantRow> = {
                let table = store.lock().unwrap();
                ids.iter().filter_map(|id| table.get(id).cloned()).collect()
            };
            let gate = gate.clone();
            Box::pin(async move {
                if let Some(g) = gate {
                    g.acquire().await.unwrap().forget();
                }
                Ok(snapshot)
            })
        }))
    }

    fn message(r: Result<Arc<ActiveGrant>>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.code, Code::FederationConnectionDenied);
        e.message
    }

    #[tokio::test]
    async fn concurrent_calls_share_a_query_and_each_gets_its_own_answer() {
        let store: Store = Arc::default();
        for i in 0..40 {
            let revoked = (i % 10 == 3).then_some(5);
            store.lock().unwrap().insert(format!("c{i}"), row(&format!("c{i}"), "org", revoked));
        }
        let reader = Arc::new(reader_over(&store, None));
        let mut calls = Vec::new();
        for i in 0..200 {
            let reader = reader.clone();
            // c0..c49: c40..c49 have no grant; every 7th call names another organization.
            let (cid, org) = (format!("c{}", i % 50), if i % 7 == 0 { "other" } else { "org" });
            calls.push((i, tokio::spawn(async move { reader.active(&cid, org).await })));
        }
        for (i, call) in calls {
            let answer = call.await.unwrap();
            let n = i % 50;
            if n >= 40 {
                assert_eq!(message(answer), "this connection has no grant on this host");
            } else if i % 7 == 0 {
                assert_eq!(message(answer), "this connection's grant belongs to another organization");
            } else if n % 10 == 3 {
                assert_eq!(message(answer), "this connection's grant was revoked");
            } else {
                let g = answer.unwrap();
                assert_eq!(g.site_ids, vec!["site-a", "site-b"]);
                assert!(g.permissions.contains(PERM_CONFIGURE));
            }
        }
        assert!(reader.queries() <= 2, "200 waiting calls took {} queries", reader.queries());
        // Alone, a call still gets its own query.
        assert!(reader.active("c1", "org").await.is_ok());
        assert!(reader.queries() <= 3);
    }

    #[tokio::test]
    async fn a_call_never_joins_a_query_in_flight_so_a_revocation_denies_the_next_call() {
        let store: Store = Arc::default();
        store.lock().unwrap().insert("c1".into(), row("c1", "org", None));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let reader = Arc::new(reader_over(&store, Some(gate.clone())));
        let r = reader.clone();
        let first = tokio::spawn(async move { r.active("c1", "org").await });
        while reader.queries() < 1 {
            tokio::task::yield_now().await;
        }
        // The first query read the table and is in flight; the grant is revoked; a call arrives.
        store.lock().unwrap().get_mut("c1").unwrap().revoked_at = Some(9);
        let r = reader.clone();
        let second = tokio::spawn(async move { r.active("c1", "org").await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        gate.add_permits(2);
        assert!(first.await.unwrap().is_ok(), "the first call arrived before the revocation");
        assert_eq!(message(second.await.unwrap()), "this connection's grant was revoked");
        assert_eq!(reader.queries(), 2, "the second call waited for a query of its own");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_reader_queries_the_table_and_sees_a_revocation_at_once() {
        let dir = std::env::temp_dir().join(format!("rastrod-grants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = Db::open(&format!("sqlite://{}", dir.join("t.db").display()), 4, 64, 1000).unwrap();
        let rows: Vec<GrantRow> = (0..20).map(|i| row(&format!("c{i}"), "org", None)).collect();
        db.write(move |c| {
            for r in rows {
                diesel::insert_into(federation_grants::table).values(r).execute(c)?;
            }
            Ok(())
        })
        .await
        .unwrap();
        let config = Arc::new(crate::config::Config::load_from(None, &Default::default()).unwrap());
        let cx = Context::new(db.clone(), crate::clock::ManualClock::new(1), config, "http://127.0.0.1:9").unwrap();
        let reader = Arc::new(GrantReader::new(cx));
        let calls: Vec<_> = (0..100)
            .map(|i| {
                let reader = reader.clone();
                tokio::spawn(async move { reader.active(&format!("c{}", i % 25), "org").await })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            let answer = call.await.unwrap();
            if i % 25 >= 20 {
                assert_eq!(message(answer), "this connection has no grant on this host");
            } else {
                assert_eq!(answer.unwrap().site_ids.len(), 2);
            }
        }
        assert!(reader.queries() <= 100);
        db.write(|c| {
            diesel::update(federation_grants::table.find("c3"))
                .set(federation_grants::revoked_at.eq(Some(7_i64)))
                .execute(c)?;
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(message(reader.active("c3", "org").await), "this connection's grant was revoked");
        assert!(reader.active("c4", "org").await.is_ok());
        db.close();
        let _ = std::fs::remove_dir_all(dir);
    }
}
